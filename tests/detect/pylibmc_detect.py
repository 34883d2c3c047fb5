"""pylibmc's side of cli/tests/detect_live.rs: write keys as the peer places them, or read back
the keys memshard wrote.

    [DETECT_ACTION=read] python3 pylibmc_detect.py default|ketama|ketama-unweighted HOST:PORT:WEIGHT...

default: no behaviors (libmemcached's modula, one-at-a-time); ketama: {"ketama_weighted":
True}; ketama-unweighted: {"ketama": True}. stdin: one key per line. Writing (the default):
each key is set to a str, an int or a dict in turn. DETECT_ACTION=read: the Nth key (from 0)
must hold the key itself as a str, the int N or the int 2**32+N in turn, each of exactly that
type; the first miss or wrong value is printed on stderr. Prints `ok N`; any failure exits 1.
"""
import os
import sys

import pylibmc

mode, specs = sys.argv[1], sys.argv[2:]
read = os.environ.get("DETECT_ACTION") == "read"
behaviors = {
    "default": {},
    "ketama": {"ketama_weighted": True},
    "ketama-unweighted": {"ketama": True},
}[mode]
mc = pylibmc.Client(specs, behaviors=behaviors)
n = 0
for line in sys.stdin:
    key = line.rstrip("\r\n")
    if read:
        want = [key, n, 2**32 + n][n % 3]
        got = mc.get(key)
        if type(got) is not type(want) or got != want:
            sys.exit("get %r: %r, want %r" % (key, got, want))
    else:
        value = [key, n, {"n": n}][n % 3]
        if not mc.set(key, value):
            sys.exit("set %r failed" % key)
    n += 1
print("ok", n)
