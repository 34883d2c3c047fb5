"""pylibmc's side of cli/tests/defaults_live.rs, at its default placement.

    /usr/bin/python3 pylibmc_defaults.py write|read HOST:PORT:WEIGHT...

`pylibmc.Client(["host:port:weight", ...])` with no behaviors (checked: distribution modula, no
ketama, hash default = one-at-a-time). stdin: one key per line, `KEYHEX VALUEHEX` (write) or
`KEYHEX` (read); stdout, one line per key in the same order: `KEYHEX ok`, `KEYHEX hit VALUEHEX`,
`KEYHEX miss` or `KEYHEX error MESSAGE`. Keys and values are bytes: stored raw, flags 0.
"""
import sys

import pylibmc

mode, specs = sys.argv[1], sys.argv[2:]
assert mode in ("write", "read") and specs, sys.argv
mc = pylibmc.Client(specs)
b = mc.get_behaviors()
assert b["distribution"] == "modula" and not b["ketama"] and not b["ketama_weighted"], b
assert b["hash"] == "default", b
out = sys.stdout
for line in sys.stdin:
    f = line.split()
    key = bytes.fromhex(f[0])
    try:
        if mode == "write":
            ok = mc.set(key, bytes.fromhex(f[1]))
            print(f[0], "ok" if ok else "error set returned %r" % (ok,), file=out)
            continue
        v = mc.get(key)
        if v is None:
            print(f[0], "miss", file=out)
        elif not isinstance(v, bytes):
            print(f[0], "error not bytes: %s" % type(v).__name__, file=out)
        else:
            print(f[0], "hit", v.hex(), file=out)
    except pylibmc.Error as e:
        print(f[0], "error", repr(e).replace("\n", " "), file=out)
