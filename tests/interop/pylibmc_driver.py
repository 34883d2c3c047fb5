#!/usr/bin/python3
"""pylibmc side of tests/interop_live.rs.

  pylibmc_driver.py set SERVERS IN OUT   IN: HEXKEY<TAB>HEXVALUE lines; every pair is set with
                                         Client.set; OUT: the hex keys whose set failed.
  pylibmc_driver.py get SERVERS IN OUT   IN: HEXKEY lines (anything after a TAB is ignored);
                                         one Client.get_multi; OUT: HEXKEY<TAB>HEXVALUE per hit.

SERVERS: "HOST PORT WEIGHT" lines, handed to pylibmc as "host:port:weight" strings with
behaviors {"ketama_weighted": True} (see compat-vectors/pylibmc/README.md).
"""
import sys
import pylibmc

mode, servers_path, in_path, out_path = sys.argv[1:5]
servers = []
for line in open(servers_path):
    t = line.split()
    if t:
        servers.append(f"{t[0]}:{t[1]}:{t[2]}")
mc = pylibmc.Client(servers, behaviors={"ketama_weighted": True})
assert mc.behaviors["ketama_weighted"] == 1, mc.behaviors

pairs = []
for line in open(in_path, "rb"):
    t = line.rstrip(b"\n").split(b"\t")
    if t and t[0]:
        pairs.append((bytes.fromhex(t[0].decode()), bytes.fromhex(t[1].decode()) if len(t) > 1 else b""))

with open(out_path, "w") as out:
    if mode == "set":
        for k, v in pairs:
            if not mc.set(k, v):
                out.write(k.hex() + "\n")
    elif mode == "get":
        got = mc.get_multi([k for k, _ in pairs])
        for k, v in got.items():
            if not isinstance(v, bytes):
                raise SystemExit(f"value of {k!r} came back as {type(v).__name__}, not bytes")
            out.write(k.hex() + "\t" + v.hex() + "\n")
    else:
        raise SystemExit(f"unknown mode {mode}")
