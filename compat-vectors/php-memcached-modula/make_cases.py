#!/usr/bin/env python3
"""php-memcached cases at the default distribution (MODULA): server lists and keys are chosen here (same
generators as ../libmemcached); every answer comes from php-memcached's Memcached::getServerByKey() via
php_route.php.  usage: make_cases.py OUT_CASES_DIR"""
import os, random, subprocess, sys
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "libmemcached", "tools"))
from make_cases import keyset, servers  # noqa: E402

# bytes >= 0x80 alone, before and after ASCII, and UTF-8: one-at-a-time / fnv read them as (signed) char
HIGH = [bytes([b]) for b in range(0x80, 0x100)] + [bytes([b, 0x41]) for b in range(0x80, 0x100)] + \
       [b"k" + bytes([b]) for b in range(0x80, 0x100, 3)] + ["é", "ключ", "键", "😀", "naïve-ü"]

def valid_keys(seed, extra=()):
    """memcached-valid keys: <= 250 bytes, no control characters or spaces (0x21..0x7e or >= 0x80)"""
    ks = [k for k in keyset(seed, n=1500, extra=extra) if len(k) <= 250 and all(b >= 0x21 and b != 0x7f for b in k)]
    return ks[:max(1000, len(extra) + 600)]

N10 = servers(10, 1010, ports="mixed")
N10W = [(a, w) for (a, _), w in zip(N10, [1, 2, 3, 5, 8, 13, 21, 34, 55, 100])]
N10P = list(N10); random.Random(7).shuffle(N10P)
# hash name (FORMAT.md) -> php-memcached option value (constant name, or hashkit_hash_algorithm_t number
# where php-memcached defines no constant: 9 = HASHKIT_HASH_JENKINS, 10 = HASHKIT_HASH_MURMUR3)
HASHES = [("md5", "HASH_MD5"), ("crc32", "HASH_CRC"), ("fnv1_64", "HASH_FNV1_64"), ("fnv1a_64", "HASH_FNV1A_64"),
          ("fnv1_32", "HASH_FNV1_32"), ("fnv1a_32", "HASH_FNV1A_32"), ("murmur", "HASH_MURMUR"),
          ("jenkins", "9"), ("murmur3", "10")]

CASES = [  # name, servers, hash name, php option, key seed, extra keys, note
    ("n1-single", [("127.0.0.1:11211", 1)], None, None, 1, (), "one server: libmemcached returns index 0 without hashing"),
    ("n2", servers(2, 2), None, None, 2, (), ""),
    ("n3-ports-mixed", [("10.0.1.1:11211", 1), ("10.0.1.1:11212", 1), ("10.0.1.2:22122", 1)], None, None, 3, (), ""),
    ("n7", servers(7, 7), None, None, 7, (), ""),
    ("n25", servers(25, 25), None, None, 25, (), ""),
    ("n100", servers(100, 100), None, None, 100, (), "100 servers"),
    ("n10-equal", N10, None, None, 10, (), "same servers and keys as n10-weights and n10-permuted"),
    ("n10-weights", N10W, None, None, 10, (), "weights 1..100 given to addServers: MODULA ignores them (same answers as n10-equal)"),
    ("n10-permuted", N10P, None, None, 10, (), "the n10-equal servers in another order: the index in the list decides"),
    ("hostnames", servers(12, 12, hosts="name", ports="mixed", weights="random"), None, None, 12, (), "host names (never resolved)"),
    ("ipv6", servers(8, 8, hosts="ipv6", ports="mixed", weights="random") + [("[::1]:11211", 1), ("[::1]:11212", 1)],
     None, None, 8, (), "IPv6 hosts handed over without brackets"),
    ("mixed-everything", servers(30, 30, hosts="mixed", ports="mixed", weights="wide"), None, None, 30, (), ""),
    ("highbytes-n5", servers(5, 605, ports="mixed"), None, None, 605, HIGH,
     "keys with bytes >= 0x80: one-at-a-time adds (uint32_t)(char)b, i.e. sign-extended"),
    ("highbytes-n2", servers(2, 606), None, None, 606, HIGH, "as highbytes-n5 with 2 servers"),
] + [
    (f"hash-{h}", N10W, h, opt, 700 + i, HIGH, f"OPT_HASH={opt}; same servers (weights ignored) as n10-weights")
    for i, (h, opt) in enumerate(HASHES)
] + [
    ("hash-crc32-n3", servers(3, 903), "crc32", "HASH_CRC", 903, HIGH, "HASH_CRC yields 15-bit values"),
    ("hash-md5-n1", [("10.0.0.9:11211", 1)], "md5", "HASH_MD5", 904, (), "one server with a hash set"),
]

def main(out):
    total = 0
    for name, srv, h, opt, seed, extra, note in CASES:
        d = os.path.join(out, name); os.makedirs(d, exist_ok=True)
        sp = os.path.join(d, "servers.txt")
        with open(sp, "w") as f:
            f.write(f"# php-memcached, no options{'' if not opt else ' but OPT_HASH=' + opt}: {name}\n"
                    + "".join(f"{a} {w}\n" for a, w in srv))
        with open(os.path.join(d, "meta.txt"), "w") as f:
            f.write("flavor=libmemcached-modula\n" + (f"hash={h}\n" if h else "") + (f"note={note}\n" if note else ""))
        keys = valid_keys(3000 + seed, extra)
        args = ["php", os.path.join(HERE, "php_route.php"), "--servers", sp] + (["--hash", opt] if opt else [])
        res = subprocess.run(args, input=b"".join(k + b"\n" for k in keys), capture_output=True, check=True).stdout
        assert len(res.splitlines()) == len(keys), name
        open(os.path.join(d, "expected.tsv"), "wb").write(res)
        total += len(keys); print(f"{name}\t{len(keys)}")
    print(f"cases={len(CASES)} keys={total}", file=sys.stderr)

if __name__ == "__main__":
    main(sys.argv[1])
