"""pymemcache's side of cli/tests/defaults_live.rs, at its default placement.

    VENV/bin/python pymemcache_defaults.py write|read HOST:PORT:WEIGHT...

pymemcache 4.0.0 (checked) `HashClient([(host, port), ...])` with every other argument at its
default (hasher RendezvousHash: murmur3_32 of "host:port-key"); WEIGHT is ignored (HashClient
takes none). Keys are str (ASCII: `allow_unicode_keys` is off by default). stdin: one key per
line, `KEYHEX VALUEHEX` (write) or `KEYHEX` (read); stdout, one line per key in the same order:
`KEYHEX ok`, `KEYHEX hit VALUEHEX`, `KEYHEX miss` or `KEYHEX error MESSAGE`. Values are bytes:
stored raw, flags 0. Sets pass noreply=False (a per-call option, not placement), so a set has
reached its server, and any error shows, before the next step of the test reads it.
"""
import sys

import pymemcache
from pymemcache.client.hash import HashClient
from pymemcache.client.rendezvous import RendezvousHash

assert pymemcache.__version__ == "4.0.0", pymemcache.__version__
mode, specs = sys.argv[1], sys.argv[2:]
assert mode in ("write", "read") and specs, sys.argv
servers = []
for s in specs:
    host, port, _weight = s.split(":")
    servers.append((host, int(port)))
mc = HashClient(servers)
assert isinstance(mc.hasher, RendezvousHash), mc.hasher
out = sys.stdout
for line in sys.stdin:
    f = line.split()
    key = bytes.fromhex(f[0]).decode("ascii")
    try:
        if mode == "write":
            ok = mc.set(key, bytes.fromhex(f[1]), noreply=False)
            print(f[0], "ok" if ok else "error set returned %r" % (ok,), file=out)
            continue
        v = mc.get(key)
        if v is None:
            print(f[0], "miss", file=out)
        elif not isinstance(v, bytes):
            print(f[0], "error not bytes: %s" % type(v).__name__, file=out)
        else:
            print(f[0], "hit", v.hex(), file=out)
    except Exception as e:  # any refusal or socket error is reported per key
        print(f[0], "error", repr(e).replace("\n", " "), file=out)
