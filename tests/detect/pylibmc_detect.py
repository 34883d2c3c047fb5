"""pylibmc's side of cli/tests/detect_live.rs: write keys as the peer places them.

    python3 pylibmc_detect.py default|ketama|ketama-unweighted HOST:PORT:WEIGHT...

default: no behaviors (libmemcached's modula, one-at-a-time); ketama: {"ketama_weighted":
True}; ketama-unweighted: {"ketama": True}. stdin: one key per line; each is set to a str, an
int or a dict in turn. Prints `ok N`; any failure exits 1.
"""
import sys

import pylibmc

mode, specs = sys.argv[1], sys.argv[2:]
behaviors = {
    "default": {},
    "ketama": {"ketama_weighted": True},
    "ketama-unweighted": {"ketama": True},
}[mode]
mc = pylibmc.Client(specs, behaviors=behaviors)
n = 0
for line in sys.stdin:
    key = line.rstrip("\r\n")
    value = [key, n, {"n": n}][n % 3]
    if not mc.set(key, value):
        sys.exit("set %r failed" % key)
    n += 1
print("ok", n)
