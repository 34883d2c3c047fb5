#!/usr/bin/env python3
"""Regenerate compat-vectors/twemproxy/cases/* by running nutcracker for real.

For every case: start one memcached per server on loopback, write nutcracker.yml
(distribution: ketama), start nutcracker, `set` every key through nutcracker, then
`get` every key from every memcached directly. The memcached that holds a key is
the expected ADDR. Nothing in expected.tsv is computed here.

A small Python model of twemproxy (MODEL below) is used for two things only:
choosing corner keys (keys that land next to a tied or exactly-hit continuum point)
and a self-check printed at the end (model vs nutcracker). It never writes vectors.

usage: gen.py CORNER_SEARCH_BINARY OUTDIR [case-name-substring ...]
"""
import hashlib
import math
import os
import random
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import zlib

# ----------------------------------------------------------------------------
# MODEL (used only to pick corner keys and for a self-check)
# ----------------------------------------------------------------------------
M32 = 0xFFFFFFFF


def sx(b):  # C `char` is signed on x86-64: (uint32_t)(char)b
    return (b - 256) & M32 if b >= 128 else b


def h_one_at_a_time(k):
    v = 0
    for b in k:
        v = (v + sx(b)) & M32
        v = (v + (v << 10)) & M32
        v ^= v >> 6
    v = (v + (v << 3)) & M32
    v ^= v >> 11
    v = (v + (v << 15)) & M32
    return v


def h_md5(k):
    return struct.unpack('<I', hashlib.md5(k).digest()[:4])[0]


def _crc16_table():  # CRC-16/XMODEM table (poly 0x1021), as in nutcracker 0.5.0
    t = []
    for i in range(256):
        c = i << 8
        for _ in range(8):
            c = ((c << 1) ^ 0x1021) & 0xffff if c & 0x8000 else (c << 1) & 0xffff
        t.append(c)
    return t


CRC16T = _crc16_table()


def h_crc16(k):
    # nutcracker 0.5.0: uint32_t crc; crc = (crc << 8) ^ tab[((crc >> 8) ^ *key++) & 0xff]
    # the accumulator is never cut to 16 bits, so the result uses all 32 bits
    c = 0
    for b in k:
        c = ((c << 8) & M32) ^ CRC16T[((c >> 8) ^ b) & 0xff]
    return c


def h_crc32(k):
    return (zlib.crc32(k) >> 16) & 0x7fff


def h_crc32a(k):
    return zlib.crc32(k)


def h_fnv1_64(k):
    h = 0xcbf29ce484222325
    for b in k:
        h = (h * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
        h ^= ((b - 256) & 0xFFFFFFFFFFFFFFFF) if b >= 128 else b
    return h & M32


def h_fnv1a_64(k):
    h = 0x84222325
    for b in k:
        h ^= sx(b)
        h = (h * 0x1b3) & M32
    return h


def h_fnv1_32(k):
    h = 2166136261
    for b in k:
        h = (h * 16777619) & M32
        h ^= sx(b)
    return h


def h_fnv1a_32(k):
    h = 2166136261
    for b in k:
        h ^= sx(b)
        h = (h * 16777619) & M32
    return h


def h_hsieh(k):
    n = len(k)
    if n == 0:
        return 0
    h = 0
    rem = n & 3
    p = 0

    def g16(i):
        return k[i] | (k[i + 1] << 8)
    for _ in range(n >> 2):
        h = (h + g16(p)) & M32
        tmp = ((g16(p + 2) << 11) ^ h) & M32
        h = ((h << 16) ^ tmp) & M32
        p += 4
        h = (h + (h >> 11)) & M32
    if rem == 3:
        h = (h + g16(p)) & M32
        h ^= (h << 16) & M32
        h ^= (sx(k[p + 2]) << 18) & M32
        h = (h + (h >> 11)) & M32
    elif rem == 2:
        h = (h + g16(p)) & M32
        h ^= (h << 11) & M32
        h = (h + (h >> 17)) & M32
    elif rem == 1:
        h = (h + k[p]) & M32
        h ^= (h << 10) & M32
        h = (h + (h >> 1)) & M32
    h ^= (h << 3) & M32
    h = (h + (h >> 5)) & M32
    h ^= (h << 4) & M32
    h = (h + (h >> 17)) & M32
    h ^= (h << 25) & M32
    h = (h + (h >> 6)) & M32
    return h


def h_murmur(k):
    m = 0x5bd1e995
    n = len(k)
    h = ((0xdeadbeef * n) & M32) ^ n
    p = 0
    while n - p >= 4:
        w = struct.unpack('<I', k[p:p + 4])[0]
        w = (w * m) & M32
        w ^= w >> 24
        w = (w * m) & M32
        h = (h * m) & M32
        h ^= w
        p += 4
    r = n - p
    if r == 3:
        h ^= k[p + 2] << 16
    if r >= 2:
        h ^= k[p + 1] << 8
    if r >= 1:
        h ^= k[p]
        h = (h * m) & M32
    h ^= h >> 13
    h = (h * m) & M32
    h ^= h >> 15
    return h


def _rot(x, k):
    return ((x << k) | (x >> (32 - k))) & M32


def h_jenkins(k):
    n = len(k)
    a = b = c = (0xdeadbeef + n + 13) & M32
    p = 0
    while n - p > 12:
        a = (a + struct.unpack('<I', k[p:p + 4])[0]) & M32
        b = (b + struct.unpack('<I', k[p + 4:p + 8])[0]) & M32
        c = (c + struct.unpack('<I', k[p + 8:p + 12])[0]) & M32
        a = (a - c) & M32; a ^= _rot(c, 4); c = (c + b) & M32
        b = (b - a) & M32; b ^= _rot(a, 6); a = (a + c) & M32
        c = (c - b) & M32; c ^= _rot(b, 8); b = (b + a) & M32
        a = (a - c) & M32; a ^= _rot(c, 16); c = (c + b) & M32
        b = (b - a) & M32; b ^= _rot(a, 19); a = (a + c) & M32
        c = (c - b) & M32; c ^= _rot(b, 4); b = (b + a) & M32
        p += 12
    r = n - p
    if r == 0:
        return c
    t = k[p:] + b'\0' * (12 - r)
    a = (a + struct.unpack('<I', t[0:4])[0]) & M32
    b = (b + struct.unpack('<I', t[4:8])[0]) & M32
    c = (c + struct.unpack('<I', t[8:12])[0]) & M32
    c ^= b; c = (c - _rot(b, 14)) & M32
    a ^= c; a = (a - _rot(c, 11)) & M32
    b ^= a; b = (b - _rot(a, 25)) & M32
    c ^= b; c = (c - _rot(b, 16)) & M32
    a ^= c; a = (a - _rot(c, 4)) & M32
    b ^= a; b = (b - _rot(a, 14)) & M32
    c ^= b; c = (c - _rot(b, 24)) & M32
    return c


HASHES = {
    'one_at_a_time': h_one_at_a_time, 'md5': h_md5, 'crc16': h_crc16, 'crc32': h_crc32,
    'crc32a': h_crc32a, 'fnv1_64': h_fnv1_64, 'fnv1a_64': h_fnv1a_64, 'fnv1_32': h_fnv1_32,
    'fnv1a_32': h_fnv1a_32, 'hsieh': h_hsieh, 'murmur': h_murmur, 'jenkins': h_jenkins,
}
# twemproxy yml name -> memshard --hash name (FORMAT.md)
CLI_HASH = {'one_at_a_time': 'one-at-a-time'}


def f32(x):
    return struct.unpack('f', struct.pack('f', x))[0]


def points_per_server(w, total, n):
    pct = f32(f32(w) / f32(total))
    return int(math.floor(f32(f32(f32(pct * 160.0) / 4.0) * f32(n)))) * 4


def point_name(s):
    if s['name'] is not None:
        return s['name']
    if s['port'] == 11211:
        return s['host']
    return '%s:%d' % (s['host'], s['port'])


def name_key(nm):  # twemproxy string_compare: length first, then bytes
    b = nm.encode()
    return (len(b), b)


def continuum(servers):
    """[(value, server)] as nutcracker builds it: servers sorted by name
    (conf_validate_server), points appended per server, stable sort by value."""
    order = sorted(servers, key=lambda s: name_key(point_name(s)))
    total = sum(s['weight'] for s in servers)
    n = len(servers)
    pts = []
    for s in order:
        pps = points_per_server(s['weight'], total, n)
        nm = point_name(s).encode()
        for i in range(pps // 4):
            d = hashlib.md5(nm + b'-%d' % i).digest()
            for x in range(4):
                pts.append((struct.unpack('<I', d[4 * x:4 * x + 4])[0], s))
    pts.sort(key=lambda p: p[0])
    return pts


def tag_span(key, tag):
    if not tag:
        return key
    a, b = tag.encode()[0], tag.encode()[1]
    i = key.find(bytes([a]))
    if i < 0:
        return key
    j = key.find(bytes([b]), i + 1)
    if j < 0 or j - i <= 1:
        return key
    return key[i + 1:j]


def model_route(servers, pts, hashname, tag, key):
    if len(servers) == 1:
        return servers[0]
    h = HASHES[hashname](tag_span(key, tag))
    vals = [p[0] for p in pts]
    import bisect
    i = bisect.bisect_left(vals, h)
    if i == len(pts):
        i = 0
    return pts[i][1]


# ----------------------------------------------------------------------------
# processes
# ----------------------------------------------------------------------------
CHILDREN = []


def cleanup(*_):
    for p in CHILDREN:
        if p.poll() is None:
            p.kill()
    for p in CHILDREN:
        try:
            p.wait(timeout=5)
        except Exception:
            pass
    CHILDREN.clear()


def wait_port(host, port, proc, what, timeout=10.0):
    t0 = time.time()
    while time.time() - t0 < timeout:
        if proc.poll() is not None:
            raise RuntimeError('%s exited early (rc %s)' % (what, proc.returncode))
        try:
            socket.create_connection((host, port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.02)
    raise RuntimeError('%s did not start listening on %s:%d' % (what, host, port))


def free_addr():
    """A random 127.X.Y.Z (X >= 200: no backend lives there) and a port the kernel says is free on it,
    for nutcracker's listen and stats sockets (neither is part of any answer)."""
    r = random.SystemRandom()  # not the module's generator: case choices must not depend on this
    h = '127.%d.%d.%d' % (r.randrange(200, 255), r.randrange(0, 256), r.randrange(1, 255))
    s = socket.socket()
    s.bind((h, 0))
    p = s.getsockname()[1]
    s.close()
    return h, p


def in_use(host, port):
    try:
        socket.create_connection((host, port), timeout=0.5).close()
        return True
    except OSError:
        return False


def start_memcached(host, port):
    # the backends' addresses are fixed (they are the answers): one already in use is an error,
    # since keys would be read back from someone else's server
    if in_use(host, port):
        raise RuntimeError('%s:%d is already in use (something else listens there)' % (host, port))
    p = subprocess.Popen(['memcached', '-l', host, '-p', str(port), '-m', '8', '-t', '1',
                          '-U', '0', '-c', '64', '-u', 'root'],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    CHILDREN.append(p)
    return p


def yq(s):
    return '"' + s.replace('\\', '\\\\').replace('"', '\\"') + '"'


def write_conf(path, listen, servers, hashname, tag):
    lines = ['memshard:', '  listen: %s' % listen, '  distribution: ketama']
    if hashname is not None:
        lines.append('  hash: %s' % hashname)
    if tag:
        lines.append('  hash_tag: %s' % yq(tag))
    lines += ['  timeout: 5000', '  auto_eject_hosts: false', '  server_connections: 1',
              '  servers:']
    for s in servers:
        v = '%s:%d:%d' % (s['host'], s['port'], s['weight'])
        if s['name'] is not None:
            v += ' ' + s['name']
        lines.append('    - ' + yq(v))
    with open(path, 'w', encoding='utf-8') as f:
        f.write('\n'.join(lines) + '\n')


class Conn:
    def __init__(self, host, port):
        self.s = socket.create_connection((host, port), timeout=20)
        self.buf = b''

    def line(self):
        while b'\r\n' not in self.buf:
            d = self.s.recv(65536)
            if not d:
                raise RuntimeError('connection closed')
            self.buf += d
        i = self.buf.index(b'\r\n')
        l, self.buf = self.buf[:i], self.buf[i + 2:]
        return l

    def exact(self, n):
        while len(self.buf) < n:
            d = self.s.recv(65536)
            if not d:
                raise RuntimeError('connection closed')
            self.buf += d
        r, self.buf = self.buf[:n], self.buf[n:]
        return r

    def close(self):
        self.s.close()


def set_all(host, port, keys):
    c = Conn(host, port)
    for i in range(0, len(keys), 50):
        batch = keys[i:i + 50]
        c.s.sendall(b''.join(b'set %s 0 0 1\r\nv\r\n' % k for k in batch))
        for k in batch:
            r = c.line()
            if r != b'STORED':
                raise RuntimeError('set %r via nutcracker: %r' % (k, r))
    c.close()


def held_keys(host, port, keys):
    c = Conn(host, port)
    got = set()
    i = 0
    while i < len(keys):
        batch, ln = [], 4
        while i < len(keys) and ln + len(keys[i]) + 1 < 1900:
            batch.append(keys[i]); ln += len(keys[i]) + 1; i += 1
        c.s.sendall(b'get ' + b' '.join(batch) + b'\r\n')
        while True:
            l = c.line()
            if l == b'END':
                break
            parts = l.split(b' ')
            if parts[0] != b'VALUE':
                raise RuntimeError('bad reply %r' % l)
            c.exact(int(parts[3]) + 2)
            got.add(parts[1])
    c.close()
    return got


def run_case(case, workdir):
    servers, keys = case['servers'], case['keys']
    procs = []
    for s in servers:
        procs.append(start_memcached(s['host'], s['port']))
    for s, p in zip(servers, procs):
        wait_port(s['host'], s['port'], p, 'memcached %s:%d' % (s['host'], s['port']))
    nc = None
    try:
        for attempt in range(5):  # a new random address if nutcracker could not bind
            lhost, lport = free_addr()
            shost, sport = free_addr()
            conf = os.path.join(workdir, 'nutcracker.yml')
            write_conf(conf, '%s:%d' % (lhost, lport), servers, case['hash'], case['tag'])
            t = subprocess.run(['nutcracker', '-t', '-c', conf], capture_output=True)
            if t.returncode != 0:
                raise RuntimeError('nutcracker -t failed: %s %s' % (t.stdout, t.stderr))
            nc = subprocess.Popen(['nutcracker', '-c', conf, '-o', os.path.join(workdir, 'nc.log'),
                                   '-s', str(sport), '-a', shost, '-p',
                                   os.path.join(workdir, 'nc.pid'), '-v', '4'],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            CHILDREN.append(nc)
            try:
                wait_port(lhost, lport, nc, 'nutcracker')
                break
            except RuntimeError:
                if nc.poll() is None or attempt == 4:
                    raise
                nc.wait()
                CHILDREN.remove(nc)
                nc = None
        set_all(lhost, lport, keys)
        owner = {}
        for s in servers:
            for k in held_keys(s['host'], s['port'], keys):
                if k in owner:
                    raise RuntimeError('key %r on two servers' % k)
                owner[k] = s
        missing = [k for k in keys if k not in owner]
        if missing:
            raise RuntimeError('%d keys on no server, e.g. %r' % (len(missing), missing[:3]))
        return owner
    finally:
        for p in procs + ([nc] if nc else []):
            p.kill()
        for p in procs + ([nc] if nc else []):
            p.wait()
            CHILDREN.remove(p)


# ----------------------------------------------------------------------------
# servers and keys
# ----------------------------------------------------------------------------
WORDS = ['alpha', 'bravo', 'cache', 'delta', 'echo', 'mc', 'shard', 'node', 'east', 'west',
         'rack', 'zone', 'db', 'x', 'Kilo', 'lima', 'nöde', 'ñandú', '缓存', 'κόμβος', 'srv']


def srv(host, port, weight=1, name=None):
    return {'host': host, 'port': port, 'weight': weight, 'name': name}


def addr(s):
    return '%s:%d' % (s['host'], s['port'])


def make_servers(rng, n, n11211=0, names=None, weights=None, base_port=21000, net='127.0.0'):
    """n servers; the first n11211 at port 11211 on distinct 127.0.1.x / 127.0.2.x, the
    rest on 127.0.0.x distinct ports. names: None | 'all' | 'mixed'. Shuffled order."""
    out = []
    for i in range(n):
        if i < n11211:
            host = '127.0.%d.%d' % (1 + i // 250, 1 + i % 250)
            port = 11211
        else:
            j = i - n11211
            host = '%s.%d' % (net, 1 + j % 250)
            port = base_port + j
        w = 1 if weights is None else weights(i)
        out.append(srv(host, port, w))
    if names:
        used = set()
        for i, s in enumerate(out):
            if names == 'mixed' and rng.random() < 0.5:
                continue
            while True:
                nm = '%s-%s-%d' % (rng.choice(WORDS), rng.choice(WORDS), rng.randrange(1000))
                if rng.random() < 0.15:
                    nm = nm.replace('-', ':', 1)
                if nm not in used:
                    break
            used.add(nm)
            s['name'] = nm
    rng.shuffle(out)
    return out


ASCII = [chr(c) for c in range(0x21, 0x7f)]


def rand_uchar(rng):
    r = rng.random()
    if r < 0.4:
        c = rng.randrange(0xA1, 0x800)
    elif r < 0.85:
        c = rng.randrange(0x800, 0xD800)
    else:
        c = rng.randrange(0x10000, 0x20000)
    return chr(c)


def rand_key(rng, maxbytes=250, ascii_only=False, exclude=''):
    utf = (not ascii_only) and rng.random() < 0.4
    r = rng.random()
    target = rng.randrange(1, 12) if r < 0.5 else rng.randrange(12, 60) if r < 0.9 else rng.randrange(60, 251)
    target = min(target, rng.randrange(1, maxbytes + 1)) if target > maxbytes else target
    s = ''
    while True:
        ch = rand_uchar(rng) if (utf and rng.random() < 0.5) else rng.choice(ASCII)
        if ch in exclude:
            continue
        if len((s + ch).encode()) > target:
            break
        s += ch
    if not s:
        s = rng.choice([c for c in ASCII if c not in exclude])
    return s.encode()


def tag_key(rng, tag, contents):
    o, c = tag[0], tag[1]
    ex = o + c
    def part():
        return rand_key(rng, 40, exclude=ex).decode()
    t = rng.choice(contents)
    forms = [
        lambda: part() + o + t + c + part(),                 # tag in the middle
        lambda: o + t + c + part(),                          # tag first
        lambda: part() + o + t + c,                          # tag last
        lambda: o + t + c,                                   # only the tag
        lambda: part(),                                      # no tag char
        lambda: part() + o + c + part(),                     # empty tag -> whole key
        lambda: part() + o + part(),                         # only the opening char
        lambda: part() + c + part(),                         # only the closing char
        lambda: part() + o + t + c + part() + o + rng.choice(contents) + c,   # several tags
        lambda: o + c + part() + o + t + c,                  # empty first tag, then a real one
        lambda: part() + c + part() + o + t + c,             # closing before opening
        lambda: o + o + t + c + c,                           # doubled opening
        lambda: part() + o,                                  # opening char last
        lambda: o + part(),                                  # opening char first, no close
    ]
    if o == c:
        forms.append(lambda: o + t + o + t + o)
    return rng.choice(forms)().encode()


def gen_keys(rng, count, tag=None, extra=()):
    keys, seen = [], set()
    for k in extra:
        if k not in seen:
            seen.add(k); keys.append(k)
    contents = None
    if tag:
        contents = [rand_key(rng, 20, exclude=tag).decode() for _ in range(25)]
    while len(keys) < count:
        if tag and rng.random() < 0.85:
            k = tag_key(rng, tag, contents)
        else:
            k = rand_key(rng)
        if len(k) > 250 or not k or k in seen:
            continue
        seen.add(k); keys.append(k)
    return keys


def keys_in_gap(rng, lo, hi, want, prefix):
    """keys with lo < md5h(key) <= hi (lo may be > hi: gap wraps past 2^32)."""
    out = []
    tries = 0
    while len(out) < want and tries < 3_000_000:
        tries += 1
        k = ('%s%d-%s' % (prefix, tries, rng.choice(['a', 'é', 'z', '中']))).encode()
        h = h_md5(k)
        ok = (lo < h <= hi) if lo < hi else (h > lo or h <= hi)
        if ok:
            out.append(k)
    return out


# ----------------------------------------------------------------------------
# corner search results
# ----------------------------------------------------------------------------
CORNER_KINDS = ['named', 'h11211', 'hostport']


def search_corners(binary, kinds, cache_dir):
    """Runs the corner search for every kind not yet in cache_dir, all at once (one process each:
    the searches are independent and single-threaded, and each writes its own file)."""
    todo = [k for k in kinds if not os.path.exists(os.path.join(cache_dir, 'corners-%s.txt' % k))]
    running = []
    try:
        for kind in todo:
            print('corner search %s ...' % kind, flush=True)
            path = os.path.join(cache_dir, 'corners-%s.txt' % kind)
            with open(path + '.tmp', 'w') as f:
                p = subprocess.Popen([binary, kind, '110000', '16777216', '39'], stdout=f)
            CHILDREN.append(p)
            running.append((kind, path, p))
        for kind, path, p in running:
            if p.wait() != 0:
                raise RuntimeError('corner search %s failed (rc %s)' % (kind, p.returncode))
            CHILDREN.remove(p)
            os.rename(path + '.tmp', path)
    finally:
        for _, _, p in running:
            if p.poll() is None:
                p.kill()
                p.wait()


def load_corners(binary, kind, cache_dir):
    path = os.path.join(cache_dir, 'corners-%s.txt' % kind)
    if not os.path.exists(path):
        search_corners(binary, [kind], cache_dir)
    ties, hits, triples = [], [], []
    for l in open(path):
        p = l.split()
        if p[0] == 'TIE':
            ties.append((int(p[1]), p[2], int(p[3]), p[5], int(p[6])))
        elif p[0] == 'HIT':
            hits.append((int(p[1]), p[2], int(p[3]), p[5]))
        elif p[0] == 'TRIPLE':
            triples.append((int(p[1]), p[2], int(p[3]), p[5], int(p[6]), p[8]))
    return ties, hits, triples


def server_for_name(kind, nm, i):
    if kind == 'named':
        return srv('127.0.3.%d' % (1 + i % 250), 23000 + i, 1, nm)
    if kind == 'h11211':
        return srv(nm, 11211)
    host, port = nm.rsplit(':', 1)
    return srv(host, int(port))


def filler(kind, rng, count, used):
    out = []
    while len(out) < count:
        if kind == 'named':
            nm = 'f%d' % rng.randrange(10 ** 6)
        elif kind == 'h11211':
            nm = '127.9.%d.%d' % (rng.randrange(1, 255), rng.randrange(1, 255))
        else:
            nm = '127.0.250.%d:%d' % (rng.randrange(1, 255), rng.randrange(30000, 40000))
        if nm in used:
            continue
        used.add(nm)
        out.append(server_for_name(kind, nm, 200 + len(used)))
    return out


def tie_case(rng, kind, ties, winner_first, nfill=3, extra_keys=()):
    """4 tied pairs (+ fillers). Each pair: twemproxy orders servers by name (length,
    then bytes); winner_first puts the smaller name first in the config or last."""
    used, servers, pairs = set(), [], []
    # prefer pairs whose length order and byte order disagree, then equal lengths
    def disagree(t):
        a, b = t[1].encode(), t[3].encode()
        return (len(a) < len(b)) != (a < b) and len(a) != len(b)
    cand = [t for t in ties if t[2] < 38 and t[4] < 38]
    rng.shuffle(cand)
    chosen = [t for t in cand if disagree(t)][:2] + [t for t in cand if len(t[1]) == len(t[3])][:2]
    for n, t in enumerate(chosen):
        a, b = t[1], t[3]
        if a in used or b in used:
            continue
        used.update([a, b])
        sa, sb = server_for_name(kind, a, 2 * n), server_for_name(kind, b, 2 * n + 1)
        small, big = (sa, sb) if name_key(a) < name_key(b) else (sb, sa)
        wf = winner_first if n % 2 == 0 else not winner_first
        servers += [small, big] if wf else [big, small]
        pairs.append(t[0])
    servers += filler(kind, rng, nfill, used)
    pts = continuum(servers)
    vals = sorted(set(p[0] for p in pts))
    extra = list(extra_keys)
    for v in pairs:
        i = vals.index(v)
        extra += keys_in_gap(rng, vals[i - 1], v, 12, 'tie%d-' % v)
    return servers, extra


def hit_case(rng, kind, hits, nhit=6, nfill=3):
    used, servers, hitkeys = set(), [], []
    for v, nm, i, key in hits:
        if len(servers) >= nhit:
            break
        if i >= 38 or nm in used:
            continue
        used.add(nm)
        servers.append(server_for_name(kind, nm, len(servers)))
        hitkeys.append((v, nm, key))
    servers += filler(kind, rng, nfill, used)
    pts = continuum(servers)
    vals = [p[0] for p in pts]
    good = []
    import bisect
    for v, nm, key in hitkeys:
        j = bisect.bisect_left(vals, v)
        nxt = pts[(j + 1) % len(pts)]
        if pts[j][0] == v and point_name(pts[j][1]) == nm and point_name(nxt[1]) != nm:
            good.append(key.encode())
    # wrap-around: keys above the last point and below the first point
    extra = good + keys_in_gap(rng, vals[-1], vals[0], 20, 'wrap-')
    # keys just around each exactly-hit point (one below, one above)
    return servers, extra, len(good)


# ----------------------------------------------------------------------------
# cases
# ----------------------------------------------------------------------------
def build_cases(binary, cache_dir):
    C = []

    def add(name, servers, hashname, tag, note, keys=None, nkeys=1000, extra=(), rng=None):
        rng = rng or random.Random(name)
        if keys is None:
            keys = gen_keys(rng, nkeys, tag, extra)
        C.append({'name': name, 'servers': servers, 'hash': hashname, 'tag': tag,
                  'note': note, 'keys': keys})

    R = lambda n: random.Random('servers-' + n)
    s7 = make_servers(R('7'), 7, n11211=3)
    add('default-n7', s7, None, None, 'default hash (fnv1a_64, no hash: line), 7 equal weights, 3 at port 11211 (name = host)')
    add('md5-n7', [dict(s) for s in s7], 'md5', None, 'hash md5, same 7 servers as default-n7')
    for hn in ['one_at_a_time', 'crc16', 'crc32', 'crc32a', 'fnv1_64', 'fnv1a_64', 'fnv1_32',
               'fnv1a_32', 'hsieh', 'murmur', 'jenkins']:
        rr = R(hn)
        srvs = make_servers(rr, 12, n11211=4, names='mixed' if hn in ('crc32a', 'hsieh', 'jenkins') else None,
                            weights=(lambda i: 1) if hn in ('one_at_a_time', 'fnv1_64', 'fnv1_32', 'murmur') else (lambda i, r=rr: r.randrange(1, 20)))
        note = 'hash %s (explicit hash: line), 12 servers, 4 at 11211; UTF-8 keys exercise bytes >= 0x80' % hn
        if hn == 'crc32':
            note += '; crc32 (libmemcached style) yields only 15-bit values, so nearly every key lands on the server owning the lowest point(s)'
        add('hash-' + hn, srvs, hn, None, note)
    add('md5-n25-named', make_servers(R('25'), 25, n11211=5, names='all'), 'md5', None,
        'md5, 25 equal weights, every server named (name replaces host:port in point strings)')
    add('default-n50-mixednames', make_servers(R('50'), 50, n11211=10, names='mixed'), None, None,
        'default hash, 50 equal weights, about half named, 10 unnamed-or-named at 11211')
    add('md5-n61', make_servers(R('61'), 61, n11211=11), 'md5', None, 'md5, 61 equal weights (float point-count arithmetic), 11 at 11211')
    add('default-n61-named', make_servers(R('61n'), 61, n11211=0, names='all'), None, None, 'default hash, 61 equal weights, named')
    add('md5-n100', make_servers(R('100'), 100, n11211=20), 'md5', None, 'md5, 100 equal weights, 20 at 11211')
    add('default-n100-named', make_servers(R('100n'), 100, n11211=20, names='all'), None, None, 'default hash, 100 equal weights, named')
    add('md5-n200', make_servers(R('200'), 200, n11211=40), 'md5', None, 'md5, 200 equal weights, 40 at 11211', nkeys=2000)
    add('md5-weights-random', make_servers(R('wr'), 30, n11211=6, weights=lambda i, r=R('wrw'): r.randrange(1, 101)), 'md5', None,
        'md5, 30 servers, random weights 1..100')
    add('default-weights-random-named', make_servers(R('wrn'), 30, n11211=6, names='all', weights=lambda i, r=R('wrnw'): r.randrange(1, 1001)), None, None,
        'default hash, 30 named servers, random weights 1..1000')
    add('md5-weights-extreme', [srv('127.0.0.1', 21001, 1), srv('127.0.0.2', 21002, 1000000)], 'md5', None,
        'md5, weights 1 vs 1000000: the weight-1 server gets floor(f32 arithmetic)=0 points and no key')
    add('md5-weights-extreme4', [srv('127.0.0.1', 21001, 1), srv('127.0.1.1', 11211, 1000000), srv('127.0.0.3', 21003, 1), srv('127.0.0.4', 21004, 37)], 'md5', None,
        'md5, weights 1, 1000000, 1, 37')
    add('md5-weights-21-10-9', [srv('127.0.0.1', 21001, 21), srv('127.0.0.2', 21002, 10), srv('127.0.0.3', 21003, 9)], 'md5', None,
        'md5, weights 21/10/9 (float vs exact arithmetic differ)')
    add('md5-weights-29-16-15', [srv('127.0.0.1', 21001, 29), srv('127.0.0.2', 21002, 16), srv('127.0.0.3', 21003, 15)], 'md5', None,
        'md5, weights 29/16/15 (float vs exact arithmetic differ)')
    add('default-weights-21-10-9-11211', [srv('127.0.1.1', 11211, 21), srv('127.0.1.2', 11211, 10), srv('127.0.1.3', 11211, 9)], None, None,
        'default hash, weights 21/10/9, all at port 11211 on distinct hosts')
    add('default-weights-29-16-15-named', [srv('127.0.0.1', 21001, 29, 'alpha'), srv('127.0.0.2', 21002, 16, 'beta'), srv('127.0.0.3', 21003, 15, 'gamma')], None, None,
        'default hash, named, weights 29/16/15')
    add('hashtag-curly-md5', make_servers(R('tc'), 10, n11211=3), 'md5', '{}',
        'md5, hash_tag "{}": tag, no tag, empty tag {}, only opening, several tags, closing before opening')
    add('hashtag-curly-default-named', make_servers(R('tcn'), 10, n11211=2, names='all'), None, '{}',
        'default hash, hash_tag "{}", named servers')
    add('hashtag-dollar-default', make_servers(R('td'), 10, n11211=3), None, '$$',
        'default hash, hash_tag "$$" (same char opens and closes)')
    add('hashtag-colon-md5-named', make_servers(R('tco'), 10, n11211=0, names='all'), 'md5', '::',
        'md5, hash_tag "::", named servers')
    add('single-server-default', [srv('127.0.0.1', 21001, 5)], None, None, 'one server: every key goes to it (nutcracker skips hashing)', nkeys=200)
    add('single-server-11211-md5', [srv('127.0.1.1', 11211, 1, 'only')], 'md5', '{}', 'one named server at 11211, md5, hash_tag', nkeys=200)
    add('names-like-addresses', [srv('127.0.1.1', 11211, 1, '127.0.1.1:11211'), srv('127.0.1.2', 11211, 1),
                                 srv('127.0.0.3', 21003, 1, '127.0.0.3'), srv('127.0.0.4', 21004, 1),
                                 srv('127.0.0.5', 21005, 1, '127.0.0.99:21005'), srv('127.0.1.6', 11211, 2, 'x')], 'md5', None,
        'md5; names that look like addresses are used verbatim (a name ending in :11211 keeps its port), mixed with unnamed servers')
    add('utf8-names', [srv('127.0.0.%d' % (i + 1), 21001 + i, 1 + i % 3, nm) for i, nm in
                       enumerate(['缓存-1', 'nöde', 'κόμβος:2', 'ñandú', '😀', 'plain', 'A', 'a'])], None, None,
        'default hash; UTF-8 and one-character server names (name order is by byte length, then bytes)')

    # crc32 returns 15-bit values: give it servers that own points below 32768
    low, k = [], 0
    while len(low) < 6:
        nm = 'lo%d' % k
        k += 1
        for i in range(40):
            d = hashlib.md5(b'%s-%d' % (nm.encode(), i)).digest()
            if min(struct.unpack('<4I', d)) < 32768:
                low.append(nm)
                break
    add('hash-crc32-lowpoints', [srv('127.0.4.%d' % (j + 1), 24001 + j, 1, nm) for j, nm in enumerate(low + ['plain-a', 'plain-b'])], 'crc32', None,
        'hash crc32 (15-bit values); six named servers chosen to own points below 32768 so keys spread over them')
    add('long-names', [srv('127.0.5.%d' % (j + 1), 25001 + j, 1, nm) for j, nm in enumerate([
        'n' * 82, 'é' * 41, 'x' * 81, ('long-name-' * 8)[:80], 'short'])], 'md5', None,
        'md5; names of 80-82 bytes: "NAME-39" still fits nutcracker\'s 86-byte point buffer (KETAMA_MAX_HOSTLEN); longer names are undefined behaviour there')
    # corners from the md5 birthday search
    search_corners(binary, CORNER_KINDS, cache_dir)
    for kind in CORNER_KINDS:
        ties, hits, triples = load_corners(binary, kind, cache_dir)
        rng = random.Random('tie-' + kind)
        label = {'named': 'named servers', 'h11211': 'unnamed servers at port 11211 (point name = host)',
                 'hostport': 'unnamed servers (point name = host:port)'}[kind]
        for wf in (True, False):
            servers, extra = tie_case(rng, kind, ties, wf)
            add('tie-%s-%s' % (kind, 'a' if wf else 'b'), servers, 'md5', None,
                'md5; %s; four pairs of servers share one continuum point (md5 point collision), '
                'keys hashing just below/at each shared point; config order of each pair %s' % (
                    label, 'alternates smaller-name-first / larger-name-first' if wf else 'is the reverse of tie-%s-a' % kind),
                extra=extra, rng=rng)
        servers, extra, ngood = hit_case(rng, kind, hits)
        add('exact-point-%s' % kind, servers, 'md5', None,
            'md5; %s; %d keys whose md5 hash equals a continuum point exactly (the next point belongs to '
            'another server), plus keys past the last point (wrap to the first point)' % (label, ngood),
            extra=extra, rng=rng)
        good = [t for t in triples if t[2] < 38 and t[4] < 38]
        if good:
            v, a, ia, b, ib, key = good[0]
            servers = [server_for_name(kind, b, 0), server_for_name(kind, a, 1)]
            if name_key(a) > name_key(b):
                servers.reverse()
            servers += filler(kind, rng, 4, {a, b})
            pts = continuum(servers)
            vals = sorted(set(p[0] for p in pts))
            extra = [key.encode()] + keys_in_gap(rng, vals[vals.index(v) - 1], v, 12, 'tri-')
            add('tie-exact-%s' % kind, servers, 'md5', None,
                'md5; %s; two servers share one point AND key %s hashes exactly onto it; the pair is '
                'listed larger-name-first in the config' % (label, key), extra=extra, rng=rng)
    return C


def main():
    binary, outdir = sys.argv[1], sys.argv[2]
    only = sys.argv[3:]
    cache = os.environ.get('CORNER_CACHE') or tempfile.mkdtemp(prefix='twemproxy-corners-')
    os.makedirs(cache, exist_ok=True)
    signal.signal(signal.SIGTERM, lambda *a: (cleanup(), sys.exit(1)))
    cases = build_cases(binary, cache)
    work = tempfile.mkdtemp(prefix='twemproxy-vectors-')
    summary = []
    try:
        for case in cases:
            if only and not any(o in case['name'] for o in only):
                continue
            t0 = time.time()
            owner = run_case(case, work)
            d = os.path.join(outdir, 'cases', case['name'])
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, 'servers.txt'), 'w', encoding='utf-8') as f:
                f.write('# twemproxy (nutcracker) pool, config order; HOST:PORT WEIGHT [NAME]\n')
                for s in case['servers']:
                    f.write('%s %d%s\n' % (addr(s), s['weight'], '' if s['name'] is None else ' ' + s['name']))
            with open(os.path.join(d, 'meta.txt'), 'w', encoding='utf-8') as f:
                f.write('flavor=twemproxy\n')
                if case['hash'] is not None and case['hash'] != 'fnv1a_64':
                    f.write('hash=%s\n' % CLI_HASH.get(case['hash'], case['hash']))
                if case['tag']:
                    f.write('hash_tag=%s\n' % case['tag'])
                f.write('note=%s\n' % case['note'])
            with open(os.path.join(d, 'expected.tsv'), 'wb') as f:
                for k in case['keys']:
                    f.write(k + b'\t' + addr(owner[k]).encode() + b'\n')
            # self-check of the model (informational only)
            pts = continuum(case['servers'])
            hn = case['hash'] or 'fnv1a_64'
            bad = [k for k in case['keys'] if model_route(case['servers'], pts, hn, case['tag'], k) is not owner[k]]
            used = len(set(addr(owner[k]) for k in case['keys']))
            line = '%-36s servers=%3d keys=%4d used=%3d model_mismatch=%d (%.1fs)' % (
                case['name'], len(case['servers']), len(case['keys']), used, len(bad), time.time() - t0)
            if bad:
                line += ' e.g. %r' % bad[:3]
            print(line, flush=True)
            summary.append(line)
    finally:
        cleanup()
        shutil.rmtree(work, ignore_errors=True)
    print('done: %d cases' % len(summary))


if __name__ == '__main__':
    main()
