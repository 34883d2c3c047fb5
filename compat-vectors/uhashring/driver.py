#!/usr/bin/python3
"""uhashring driver: driver.py SERVERS.TXT [--plain-list] < keys > expected.tsv

servers.txt lines: ADDR [WEIGHT] [NAME]. Node name = NAME if given, else ADDR.
Ring: uhashring.HashRing(nodes={name: {'weight': w}}, hash_fn='ketama') in file order
(or, with --plain-list, HashRing(nodes=[name, ...], hash_fn='ketama'), weights must be 1).
Prints KEY<TAB>ADDR where ADDR is the first token of the server line whose node the
ring returned (ring.get_node(key))."""
import sys
import uhashring
from uhashring import HashRing

path = sys.argv[1]
plain = '--plain-list' in sys.argv[2:]
nodes = {}
addr_of = {}
for line in open(path, encoding='utf-8'):
    line = line.strip()
    if not line or line.startswith('#'):
        continue
    t = line.split()
    addr = t[0]
    w = int(t[1]) if len(t) > 1 else 1
    name = t[2] if len(t) > 2 else addr
    assert name not in nodes, 'duplicate node name %r' % name
    nodes[name] = {'weight': w}
    addr_of[name] = addr
if plain:
    assert all(c['weight'] == 1 for c in nodes.values())
    ring = HashRing(nodes=list(nodes), hash_fn='ketama')
else:
    ring = HashRing(nodes=nodes, hash_fn='ketama')
out = sys.stdout
for key in sys.stdin.buffer.read().decode('utf-8').split('\n'):
    if key == '':
        continue
    out.write('%s\t%s\n' % (key, addr_of[ring.get_node(key)]))
