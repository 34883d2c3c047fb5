#!/usr/bin/env python3
"""Writes cases/<case>/servers.txt, meta.txt and keys.txt for the spymemcached-modula vectors. It only
chooses server lists and keys; every answer comes from spymemcached's ArrayModNodeLocator (SpyModRoute.java)."""
import os, random, sys
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "spymemcached"))
sys.path.insert(0, os.path.join(HERE, "..", "libmemcached", "tools"))
from gen_cases import make_keys  # noqa: E402  (UTF-8 keys incl. non-BMP, printable ASCII, up to 250 bytes)
from make_cases import servers  # noqa: E402

CASES = os.path.join(HERE, "cases")
# String.hashCode and spymemcached's FNV hashes run over UTF-16 code units: characters around the BMP edge,
# surrogate pairs, and keys whose hashCode is negative as an int (most keys of >= 7 chars).
EDGE = ["\u00e9", "\u00ff", "\u0100", "\u07ff", "\u0800", "\ud7ff", "\ue000", "\ufffd", "\uffff", "\U00010000",
        "\U0001f600", "\U0010ffff", "\U0001d518\U0001d52b", "a\U0001f680b", "\U0001f511" * 3, "é" * 60,
        "\u4e2d\u6587" * 40, "\U0001f600" * 62, "x\uffffy", "key:\U0001f680:" + "9" * 20]

def keys_for(seed, edge=True):
    ks = (EDGE if edge else []) + make_keys(seed, 1000)
    seen, out = set(), []
    for k in ks:
        if k not in seen and len(k.encode("utf-8")) <= 250:
            seen.add(k); out.append(k)
    return out

def write_case(name, srv, hash_java, hash_name, note, seed):
    d = os.path.join(CASES, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "servers.txt"), "w", encoding="utf-8") as f:
        f.write("# spymemcached DefaultConnectionFactory%s: %s\n" % ("" if not hash_java else " with " + hash_java, name))
        f.writelines("%s\n" % a for a in srv)
    with open(os.path.join(d, "meta.txt"), "w", encoding="utf-8") as f:
        f.write("flavor=spymemcached-modula\n" + ("hash=%s\n" % hash_name if hash_name else "") + ("note=%s\n" % note if note else ""))
    with open(os.path.join(d, "keys.txt"), "w", encoding="utf-8", newline="\n") as f:
        f.writelines(k + "\n" for k in keys_for(seed))
    with open(os.path.join(d, "hash.txt"), "w") as f:
        f.write(hash_java or "")

def ips(n, seed):
    return [a for a, _ in servers(n, seed, ports="mixed")]

def main():
    os.makedirs(CASES, exist_ok=True)
    for n in (1, 2, 3, 7, 25, 100):
        write_case("n%d" % n, ips(n, 3000 + n), None, None, "%d IPv4 literals, NATIVE_HASH (String.hashCode)" % n, "m%d" % n)
    n10 = ips(10, 3010)
    p10 = list(n10); random.Random(5).shuffle(p10)
    write_case("n10", n10, None, None, "same servers and keys as n10-permuted", "m10")
    write_case("n10-permuted", p10, None, None, "the n10 servers in another order: the list index decides", "m10")
    write_case("names-ipv6", ["localhost:11211", "cache-a.example:11211", "[::1]:11212", "[2001:db8::1]:11211", "10.0.3.3:11211"],
               None, None, "host names and IPv6: only the list index matters for ArrayModNodeLocator", "mnames")
    for h, name in (("CRC_HASH", "crc32"), ("FNV1_64_HASH", "fnv1_64"), ("FNV1A_64_HASH", "fnv1a_64"),
                    ("FNV1_32_HASH", "fnv1_32"), ("FNV1A_32_HASH", "fnv1a_32"), ("KETAMA_HASH", "md5"),
                    ("NATIVE_HASH", None)):
        tag = h.lower().replace("_hash", "")
        write_case("hash-%s-n10" % tag, n10, h, name, "DefaultConnectionFactory(..., DefaultHashAlgorithm.%s)" % h, "h" + tag)
        write_case("hash-%s-n7" % tag, ips(7, 3107), h, name, "DefaultHashAlgorithm.%s, 7 servers" % h, "h7" + tag)

if __name__ == "__main__":
    main()
