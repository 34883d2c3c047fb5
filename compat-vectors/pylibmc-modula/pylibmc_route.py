#!/usr/bin/python3
"""pylibmc placement driver, default distribution (modula).
  pylibmc_route.py hash SERVERS BEHAVIORS_JSON < keys -> KEY<TAB>ADDR via Client.hash(key) (= memcached_generate_hash,
        the server index)
  pylibmc_route.py real SERVERS BEHAVIORS_JSON < keys -> stores every key through pylibmc on the real memcached
        servers (must be running), then asks each server alone which keys it holds
BEHAVIORS_JSON "null" = pylibmc.Client(servers) with no behaviors argument at all; otherwise behaviors=that dict.
Servers are given to pylibmc as "host:port:weight" strings ("[v6]:port:weight" for IPv6)."""
import json, sys
import pylibmc

def load(path):
    out = []
    for line in open(path):
        t = line.split()
        if not t or t[0].startswith("#"):
            continue
        out.append((t[0], int(t[1]) if len(t) > 1 else 1))
    return out

mode, spath, beh = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
srv = load(spath)
keys = [l.rstrip(b"\n") for l in sys.stdin.buffer]
specs = [f"{a}:{w}" for a, w in srv]
mc = pylibmc.Client(specs) if beh is None else pylibmc.Client(specs, behaviors=beh)
got = mc.get_behaviors()
assert got["distribution"] == "modula" and not got["ketama"] and not got["ketama_weighted"], got
if beh and "hash" in beh:
    assert got["hash"] == beh["hash"], got
res = {}
if mode == "hash":
    for k in keys:
        res[k] = srv[mc.hash(k)][0]
else:
    mc.flush_all()
    for k in keys:
        mc.set(k, b"1")
    for a, _ in srv:
        one = pylibmc.Client([a])
        for k in one.get_multi(keys):
            assert k not in res, k
            res[k] = a
out = sys.stdout.buffer
for k in keys:
    out.write(k + b"\t" + res[k].encode() + b"\n")
