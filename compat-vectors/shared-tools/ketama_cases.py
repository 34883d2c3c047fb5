#!/usr/bin/env python3
"""Write cases/<case>/servers.txt, meta.txt and keys (one per line, UTF-8) for one peer.

Usage: make_cases.py PEER OUTDIR      PEER = uhashring | node-hashring | libketama

Shared by compat-vectors/{uhashring,node-hashring,libketama}/generate.sh.
It only chooses server lists and keys; every answer in expected.tsv comes from
running the peer itself (see the driver in each peer folder). Keys are chosen
deterministically (seeded PRNG plus fixed corner keys), so re-running gives the
same files.

Corner material (found once by brute force, kept as constants here):
  * COLL_*: two server strings whose ketama point strings "ADDR-i" give the same
    md5 LE u32 point (birthday search over "10.0.{a}.{b}:11211", i < 40, 4 points
    per digest). Both indices are < 40, so every peer places both points when
    the servers have equal weight.
      10.0.1.124:11211-1  (point 3) == 10.0.3.95:11211-17 (point 3) == 1741064620
      10.0.3.170:11211-15 (point 2) == 10.0.4.142:11211-0 (point 2) == 52668126
      172.31.1.125-35 (point 2) == 172.31.1.202-38 (point 0) == 1009926488
        (uhashring issue #6 collision; node names without port)
  * EXACT_*: key strings whose md5 LE u32 equals a continuum point of one of the
    servers in the case (3M keys "exact-<i>" hashed into a set, then searched
    against the points of "10.9.0.<a>:11211").
  * HIT_*: keys "hit-XXXXXXX" found by a C brute force (md5 of 2^32-ish keys)
    whose hash equals a collision point exactly, or 0.
  * WRAP_*: keys whose hash is < 0x4000 or > 0xFFFFC000 (wrap-around at both ends).
"""
import hashlib
import os
import random
import struct
import sys

PEER = sys.argv[1]
OUT = sys.argv[2]


def h(s):
    return struct.unpack_from('<I', hashlib.md5(s.encode('utf-8')).digest())[0]


WRAP_KEYS = ['wrap-264055', 'wrap-501558', 'wrap-1017366', 'wrap-1207376', 'wrap-2230681',
             'wrap-2556480', 'wrap-3783493', 'wrap-152188', 'wrap-600390', 'wrap-610566',
             'wrap-1257404', 'wrap-2294038', 'wrap-3252036', 'wrap-3808863']

EXACT = [  # (server, key) : md5h(key) == one point of server
    ('10.9.0.8:11211', 'exact-2513349'),
    ('10.9.0.12:11211', 'exact-873663'),
    ('10.9.0.23:11211', 'exact-1882061'),
    ('10.9.0.46:11211', 'exact-632884'),
    ('10.9.0.59:11211', 'exact-632797'),
    ('10.9.0.89:11211', 'exact-71919'),
    ('10.9.0.104:11211', 'exact-2780657'),
    ('10.9.0.113:11211', 'exact-1340761'),
    ('10.9.0.114:11211', 'exact-754314'),
]

# keys whose md5h equals the given value exactly (brute force, see docstring)
HIT_KEYS = {}
_hits = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'hit_keys.txt')
if os.path.exists(_hits):
    for line in open(_hits, encoding='utf-8'):
        line = line.strip()
        if line and not line.startswith('#'):
            v, k = line.split()
            assert h(k) == int(v), line
            HIT_KEYS.setdefault(int(v), []).append(k)

ASCII = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_:.-/|#@'
UNI = ('é', 'ß', 'ø', 'ł', 'ж', 'ключ', 'Ω', 'λ', 'ש', 'ع', 'क', '中', '文', 'キー', '한', '😀',
       '🚀', '𝄞', 'ﬁ', '€')


def keys_for(seed, n=1000, extra=()):
    rnd = random.Random(seed)
    out = []
    seen = set()

    def add(k):
        if k not in seen and len(k.encode('utf-8')) <= 250:
            seen.add(k)
            out.append(k)
    for k in extra:
        add(k)
    for k in WRAP_KEYS:
        add(k)
    for v in sorted(HIT_KEYS):
        if v == 0:
            for k in HIT_KEYS[v]:
                add(k)
    while len(out) < n:
        r = rnd.random()
        if r < 0.55:
            add(''.join(rnd.choice(ASCII) for _ in range(rnd.randint(1, 40))))
        elif r < 0.7:
            add('user:%d:%s' % (rnd.randint(0, 10**9), rnd.choice(['profile', 'session', 'cart'])))
        elif r < 0.93:
            parts = [rnd.choice(UNI) if rnd.random() < 0.6 else rnd.choice(ASCII)
                     for _ in range(rnd.randint(1, 12))]
            add(''.join(parts))
        else:
            base = ''.join(rnd.choice(ASCII + 'é中😀') for _ in range(rnd.randint(150, 250)))
            while len(base.encode('utf-8')) > 250:
                base = base[:-1]
            add(base)
    return out


def gap_keys(point, count=12, width=1 << 21, tag='tie'):
    """keys whose md5h lies in (point - width, point]: they land on `point`
    (or on a point just below it) in every peer."""
    out = []
    i = 0
    while len(out) < count:
        k = '%s-%d-%d' % (tag, point, i)
        v = h(k)
        if point - width < v <= point:
            out.append(k)
        i += 1
    return out


def ips(n, base='10.1', port=11211, mixports=False):
    res = []
    for i in range(n):
        p = port if not mixports else (11211 if i % 3 == 0 else 11212 + i)
        res.append('%s.%d.%d:%d' % (base, i // 250, i % 250 + 1, p))
    return res


CASES = []  # (name, [(addr, weight|None, name|None)], note, keyseed, extra keys, peers or None)


def case(name, servers, note, extra=(), peers=None):
    CASES.append((name, servers, note, extra, peers))


def eq(addrs, w=None):
    return [(a, w, None) for a in addrs]


case('n1', eq(['127.0.0.1:11211']), 'single server')
case('n2', eq(['127.0.0.1:11211', '127.0.0.1:11212']), 'two servers, same host, ports 11211/11212')
case('n3_hostnames', eq(['cache-a.example:11211', 'cache-b.example:11211', 'cache-c.example:11311']),
     'host names, default and non-default port')
case('n7_equal', eq(ips(7, '192.168', mixports=True), 1), 'n=7 equal weights (written explicitly)')
case('n10', eq(ips(10, '10.2', mixports=True)), '10 servers, weight omitted (1)')
case('n25_equal', eq(ips(25, '10.3'), 1), 'n=25 equal weights')
case('n50_equal', eq(ips(50, '10.4', port=11212), 1), 'n=50 equal weights')
case('n61_equal', eq(ips(61, '10.5', mixports=True), 1), 'n=61 equal weights')
case('n100_equal', eq(ips(100, '10.6'), 1), 'n=100 equal weights')
case('n200_equal', eq(ips(200, '10.7'), 1), 'n=200 equal weights',
     peers=('uhashring', 'node-hashring'))
_r = random.Random(7)
case('n7_random_weights', [(a, _r.randint(1, 100), None) for a in ips(7, '10.8', mixports=True)],
     'random weights 1..100')
_r = random.Random(25)
case('n25_random_weights', [(a, _r.randint(1, 5000), None) for a in ips(25, '10.10')],
     'random weights 1..5000')
_r = random.Random(61)
case('n61_random_weights', [(a, _r.choice([64, 128, 256, 512, 1024, 2048]), None)
                            for a in ips(61, '10.11', mixports=True)],
     'random memory-like weights (64..2048)')
case('extreme_1_vs_1000000', [('10.12.0.1:11211', 1, None), ('10.12.0.2:11211', 1000000, None)],
     'extreme weights 1 vs 1000000 (the light server gets no point)')
case('extreme_3', [('10.12.1.1:11211', 1, None), ('10.12.1.2:11211', 1000, None),
                   ('10.12.1.3:11211', 1000000, None)], 'weights 1 / 1000 / 1000000')
case('w21_10_9', [('10.13.0.1:11211', 21, None), ('10.13.0.2:11211', 10, None),
                  ('10.13.0.3:11211', 9, None)],
     'weights 21/10/9: float vs double vs exact point counts differ')
case('w29_16_15', [('10.13.1.1:11211', 29, None), ('10.13.1.2:11211', 16, None),
                   ('10.13.1.3:11211', 15, None)],
     'weights 29/16/15: float vs double vs exact point counts differ')
case('w_double_rounding', [('10.14.0.%d:11211' % (i + 1), w, None)
                            for i, w in enumerate([10, 62, 8, 6, 2, 20, 32])],
     'weights 10/62/8/6/2/20/32: Math.floor(w/W*40*n) in double gives 19 and 39 digests where exact gives 20 and 40')
case('ports_and_hosts', [('127.0.0.1:11211', None, None), ('127.0.0.1:1', None, None),
                         ('127.0.0.1:65535', None, None), ('localhost:11212', None, None),
                         ('mc1.cache.int:22122', None, None), ('10.0.0.1:11211', None, None),
                         ('db-01:11211', None, None)],
     'mixed ports (1, 11211, 11212, 22122, 65535), IPs and host names')
case('noport', eq(['0.0.0.1', '0.0.0.2', '0.0.0.3', '0.0.0.4', '0.0.0.5']),
     'addresses without a port (as in the published node-hashring ketama fixture)')
case('max_len_addr', eq(['255.255.255.255:65535', 'cache-0001.internal:1', 'abcdefghijklmno:11211']),
     '21-character addresses (the longest libketama stores safely)')

# --- collisions: two servers share one continuum point ---
for (a, b, p, tag) in [('10.0.1.124:11211', '10.0.3.95:11211', 1741064620, 'c1'),
                       ('10.0.3.170:11211', '10.0.4.142:11211', 52668126, 'c2')]:
    extra = gap_keys(p, tag='tie') + HIT_KEYS.get(p, [])
    case('collision_%s_ab' % tag, eq([a, b]),
         'servers share point %d (%s and %s); keys just below/at it; first-listed = %s'
         % (p, a, b, a), extra)
    case('collision_%s_ba' % tag, eq([b, a]),
         'same collision, servers listed in reverse order (first-listed = %s)' % b, extra)
    case('collision_%s_n5' % tag, eq([a, '10.0.9.1:11211', b, '10.0.9.2:11211', '10.0.9.3:11211']),
         'same collision inside a 5-server ring', extra)
_p = 1009926488
_extra = gap_keys(_p, tag='tie') + HIT_KEYS.get(_p, [])
case('collision_uhashring_issue6', eq(['172.31.1.0', '172.31.1.125', '172.31.1.202']),
     '172.31.1.125-35 and 172.31.1.202-38 share point 1009926488 (uhashring issue #6)', _extra)
case('collision_uhashring_issue6_rev', eq(['172.31.1.202', '172.31.1.125', '172.31.1.0']),
     'same, reverse order', _extra)
# --- keys whose hash equals a point exactly ---
case('exact_point', eq([s for s, _ in EXACT]),
     'each exact-* key hashes exactly onto a point of one server (boundary rule)',
     [k for _, k in EXACT])

if PEER == 'uhashring':
    case('named_nodes', [('10.20.0.1:11211', None, 'cache-a'), ('10.20.0.2:11211', None, 'cache-b'),
                         ('10.20.0.3:11211', 3, 'cache-c'), ('10.20.0.4:11212', 2, 'db')],
         'uhashring node names differ from addresses: point strings are NAME-i')
    case('named_collision', [('10.21.0.1:11211', None, '10.0.1.124:11211'),
                             ('10.21.0.2:11211', None, '10.0.3.95:11211')],
         'names carry the c1 collision; ADDRs are different', gap_keys(1741064620, tag='tie')
         + HIT_KEYS.get(1741064620, []))
    case('plain_list', eq(['10.22.0.1:11211', '10.22.0.2:11211', 'cache-x:11211']),
         'driven with a plain list HashRing([addr, ...]) instead of the dict form')


def main():
    os.makedirs(OUT, exist_ok=True)
    for idx, (name, servers, note, extra, peers) in enumerate(CASES):
        if peers is not None and PEER not in peers:
            continue
        d = os.path.join(OUT, name)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, 'servers.txt'), 'w', encoding='utf-8') as f:
            f.write('# %s\n' % note)
            for addr, w, nm in servers:
                if PEER == 'libketama' and w is None:
                    w = 1  # libketama's server file always carries a weight
                toks = [addr]
                if w is not None or nm is not None:
                    toks.append(str(w if w is not None else 1))
                if nm is not None:
                    toks.append(nm)
                f.write(' '.join(toks) + '\n')
        with open(os.path.join(d, 'meta.txt'), 'w', encoding='utf-8') as f:
            f.write('flavor=%s\nnote=%s\n' % (PEER, note))
        with open(os.path.join(d, 'keys'), 'w', encoding='utf-8') as f:
            for k in keys_for(1000 + idx * 7919 + len(name), 1000, extra):
                f.write(k + '\n')


main()
