"""pymemcache's side of cli/tests/detect_live.rs: `HashClient([(host, port), ...])` at its
default (rendezvous, murmur3); WEIGHT ignored. stdin: one key per line. Writing (the default):
each key is set to its own text (bytes, flags 0). DETECT_ACTION=read: each key must hold its
own text as bytes (memshard wrote it); the first miss or wrong value is printed on stderr.
Prints `ok N`; any failure exits 1.

    [DETECT_ACTION=read] VENV/bin/python pymemcache_detect.py default HOST:PORT:WEIGHT...
"""
import os
import sys

from pymemcache.client.hash import HashClient

read = os.environ.get("DETECT_ACTION") == "read"
servers = []
for s in sys.argv[2:]:
    host, port, _weight = s.split(":")
    servers.append((host, int(port)))
mc = HashClient(servers)
n = 0
for line in sys.stdin:
    key = line.rstrip("\r\n")
    if read:
        got = mc.get(key)
        if got != key.encode():
            sys.exit("get %r: %r, want %r" % (key, got, key.encode()))
    elif not mc.set(key, key.encode(), noreply=False):
        sys.exit("set %r failed" % key)
    n += 1
print("ok", n)
