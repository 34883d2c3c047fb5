"""pymemcache's side of cli/tests/detect_live.rs: `HashClient([(host, port), ...])` at its
default (rendezvous, murmur3); WEIGHT ignored. stdin: one key per line, each set to its own
text (bytes, flags 0). Prints `ok N`; any failure exits 1.

    VENV/bin/python pymemcache_detect.py default HOST:PORT:WEIGHT...
"""
import sys

from pymemcache.client.hash import HashClient

servers = []
for s in sys.argv[2:]:
    host, port, _weight = s.split(":")
    servers.append((host, int(port)))
mc = HashClient(servers)
n = 0
for line in sys.stdin:
    key = line.rstrip("\r\n")
    if not mc.set(key, key.encode(), noreply=False):
        sys.exit("set %r failed" % key)
    n += 1
print("ok", n)
