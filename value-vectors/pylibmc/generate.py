"""Captures what pylibmc really stores (flags + payload bytes, read back with a plain socket) and
what it makes of flags/payloads written by someone else. Usage (Debian's /usr/bin/python3):

    /usr/bin/python3 generate.py PORT OUT.json

PORT: a memcached on 127.0.0.1 that this script may fill (value-vectors/generate.sh starts one).
Every input is fixed (see the recipes in ../README.md), so two runs give the same file.
"""
import hashlib
import json
import math
import pickle
import socket
import subprocess
import sys
import zlib

import pylibmc

PORT = int(sys.argv[1])
OUT = sys.argv[2]


# ------------------------------------------------------------------ inputs (same recipes as php)
def text(n):
    """First n bytes of "line 000000: the quick brown fox jumps over the lazy dog\\n" ..."""
    out = []
    size = 0
    i = 0
    while size < n:
        line = "line %06d: the quick brown fox jumps over the lazy dog\n" % i
        out.append(line)
        size += len(line)
        i += 1
    return "".join(out)[:n]


def noise(n):
    """First n bytes of sha256(b"memshard-0") + sha256(b"memshard-1") + ... (raw digests)."""
    out = bytearray()
    i = 0
    while len(out) < n:
        out += hashlib.sha256(b"memshard-%d" % i).digest()
        i += 1
    return bytes(out[:n])


def mix(k, n):
    """text(k) + noise(n - k), as bytes."""
    return text(k).encode() + noise(n - k)


# ------------------------------------------------------------------ plain memcached text protocol
class Raw:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), 5)
        self.f = self.s.makefile("rb")

    def get(self, key):
        self.s.sendall(b"get %s\r\n" % key.encode())
        line = self.f.readline().rstrip(b"\r\n")
        if line == b"END":
            return None
        tag, k, flags, n = line.split(b" ")
        assert tag == b"VALUE" and k == key.encode(), line
        data = self.f.read(int(n) + 2)[:-2]
        assert self.f.readline() == b"END\r\n"
        return int(flags), data

    def set(self, key, flags, data):
        self.s.sendall(b"set %s %d 0 %d\r\n%s\r\n" % (key.encode(), flags, len(data), data))
        line = self.f.readline()
        assert line == b"STORED\r\n", (key, line)

    def version(self):
        self.s.sendall(b"version\r\n")
        return self.f.readline().rstrip(b"\r\n").decode()[8:]


RAW = Raw(PORT)
I64_MIN, I64_MAX = -(2**63), 2**63 - 1


# ------------------------------------------------------------------ rendering values as JSON
def json_of(v):
    """A JSON rendering of a Python value (floats that JSON lacks as strings)."""
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "Infinity" if v > 0 else "-Infinity"
        return v
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if isinstance(v, int):
        return v if I64_MIN <= v <= I64_MAX else str(v)
    if isinstance(v, bytes):
        return v.hex()
    if isinstance(v, (list, tuple)):
        return [json_of(x) for x in v]
    if isinstance(v, dict):
        return {str(k): json_of(x) for k, x in v.items()}
    raise TypeError(type(v))


def render(v, recipe=None):
    """The value as Python sees it: type name and a JSON rendering."""
    out = {"type": type(v).__name__}
    if recipe is not None:
        out["recipe"] = recipe
        if isinstance(v, (str, bytes)):
            b = v.encode() if isinstance(v, str) else v
            out["length"] = len(v)
            out["sha256"] = hashlib.sha256(b).hexdigest()
            return out
    if isinstance(v, bytes):
        out["hex"] = v.hex()
    elif isinstance(v, int) and not isinstance(v, bool) and not (I64_MIN <= v <= I64_MAX):
        out["decimal"] = str(v) if len(str(v)) <= 200 else None
        if out["decimal"] is None:
            del out["decimal"]
            out["digits"] = len(str(abs(v)))
            out["decimal_sha256"] = hashlib.sha256(str(v).encode()).hexdigest()
    else:
        out["json"] = json_of(v)
        if isinstance(v, float):
            out["repr"] = repr(v)
    return out


def same(a, b):
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        if math.isnan(a) and math.isnan(b):
            return True
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    return a == b


def client(pickle_protocol=None):
    c = pylibmc.Client(["127.0.0.1:%d" % PORT])
    if pickle_protocol is not None:
        c.behaviors = {"pickle_protocol": pickle_protocol}
    return c


WRITES = []
READS = []
keyno = [0]


def next_key(kind):
    keyno[0] += 1
    return "py-%s%03d" % (kind, keyno[0])


def write_case(name, v, recipe=None, note="", pickle_protocol=None, **set_args):
    """pylibmc stores v with these set() arguments; record flags and payload as the server holds them."""
    key = next_key("w")
    c = client(pickle_protocol)
    if not c.set(key, v, **set_args):
        raise RuntimeError(name + ": set failed")
    flags, payload = RAW.get(key)
    back = c.get(key)
    settings = {
        "pickle_protocol": c.behaviors["pickle_protocol"],
        "min_compress_len": set_args.get("min_compress_len", 0),
        "compress_level": set_args.get("compress_level", -1),
    }
    case = {
        "name": name,
        "settings": settings,
        "value": render(v, recipe),
        "flags": flags,
        "flags_hex": "0x%x" % flags,
        "payload_length": len(payload),
        "payload": payload.hex(),
    }
    if flags & 8:
        plain = zlib.decompress(payload)
        level = set_args.get("compress_level", -1)
        case["compression"] = {
            "method": "zlib",
            "zlib_header_hex": payload[:2].hex(),
            "uncompressed_length": len(plain),
            "uncompressed_sha256": hashlib.sha256(plain).hexdigest(),
            "payload_equals_zlib_compress": payload == zlib.compress(plain, level),
        }
        if len(plain) <= 512:
            case["compression"]["uncompressed_hex"] = plain.hex()
    if flags & 1 and not flags & 8:
        # PROTO opcode (0x80 N) that protocols 2+ start with; protocols 0 and 1 have none.
        case["pickle_proto_opcode"] = payload[1] if payload[:1] == b"\x80" else None
    case["reads_back_same"] = same(back, v)
    if not case["reads_back_same"]:
        case["read_back"] = render(back, recipe if isinstance(back, (str, bytes)) else None)
    if note:
        case["note"] = note
    WRITES.append(case)
    return case


# ------------------------------------------------------------------ write cases
write_case("str-ascii", "hello world")
write_case("str-utf8", "h\u00e9llo w\u00f6rld \u2713 \u65e5\u672c\u8a9e")
write_case("str-empty", "")
write_case("str-numeric", "42", note="a numeric str stays a str (flags 16)")
write_case("bytes-ascii", b"hello world")
write_case("bytes-binary", b"\x00\x01\xfe\xff\r\n")
write_case("bytes-empty", b"")
for name, v in [
    ("int-zero", 0), ("int-42", 42), ("int-negative", -42), ("int-i64-max", I64_MAX),
    ("int-i64-min", I64_MIN), ("int-2^64", 2**64), ("int-negative-2^100", -(2**100)),
    ("int-10^30", 10**30),
]:
    write_case(name, v)
write_case("bool-true", True, note="stored as int-ish flags 2; reads back as int 1")
write_case("bool-false", False, note="stored as int-ish flags 2; reads back as int 0")
for name, v in [
    ("float-3.14", 3.14), ("float-1e100", 1e100), ("float-2.0", 2.0), ("float-negative-zero", -0.0),
    ("float-inf", math.inf), ("float-negative-inf", -math.inf), ("float-nan", math.nan),
]:
    write_case(name, v, note="floats are pickled")
write_case("none", None)
write_case("list", [1, "two", 3.5, True, None])
write_case("dict", {"a": 1, "b": "two", "c": [1, 2], "d": None})
write_case("tuple", (1, "two"))
write_case("empty-list", [])
# pickle protocols (behaviour pickle_protocol; default -1 = pickle.HIGHEST_PROTOCOL)
for proto in [0, 1, 2, 3, 4, 5]:
    write_case("dict-pickle-%d" % proto, {"a": 1, "b": "two"}, pickle_protocol=proto)
    write_case("float-pickle-%d" % proto, 3.14, pickle_protocol=proto)
write_case("str-pickle-0", "hello", pickle_protocol=0, note="str never reaches pickle whatever the protocol")

# min_compress_len: zlib when len(serialized) >= min_compress_len and the deflated stream is
# strictly shorter; default 0 = never.
for n in [1999, 2000, 2001]:
    write_case("str-text-%d-min2000" % n, text(n), "text(%d)" % n, min_compress_len=2000)
write_case("str-text-100000", text(100000), "text(100000)", note="the 100 KB compressible string, default: not compressed")
write_case("str-text-100000-min1", text(100000), "text(100000)", min_compress_len=1)
write_case("bytes-text-3000-min1", text(3000).encode(), "text(3000)", min_compress_len=1)
write_case("bytes-noise-3000-min1", noise(3000), "noise(3000)", min_compress_len=1, note="deflate is not shorter: stored plain")
write_case("str-text-3000-level0", text(3000), "text(3000)", min_compress_len=1, compress_level=0, note="compress_level 0 turns compression off")
write_case("str-text-3000-level1", text(3000), "text(3000)", min_compress_len=1, compress_level=1)
write_case("str-text-3000-level9", text(3000), "text(3000)", min_compress_len=1, compress_level=9)
write_case("int-ones-3000-min1", int("1" * 3000), "int('1' * 3000)", min_compress_len=1, note="a long int is compressed too: flags 4|8")
write_case("int-42-min1", 42, min_compress_len=1, note="deflate of 2 bytes is longer: plain")
write_case("bool-true-min1", True, min_compress_len=1)
big = {"key%d" % i: "value %d" % i for i in range(200)}
write_case("dict-200-min1", big, '{"key0": "value 0", ... "key199": "value 199"}', min_compress_len=1)
write_case("str-text-2000-min0", text(2000), "text(2000)", min_compress_len=0)

# The exact boundary: deflate output length == input length is stored plain, one byte shorter
# is stored compressed. Found with Python's zlib (the same deflateInit defaults); the peer decides.
def exact_boundary(n=3000):
    found = {}
    for k in range(0, n + 1):
        cl = len(zlib.compress(mix(k, n)))
        if cl in (n, n - 1) and cl not in found:
            found[cl] = k
        if len(found) == 2:
            break
    k = found[n]
    write_case("bytes-deflate-equal-min1", mix(k, n), "mix(%d, %d)" % (k, n), min_compress_len=1,
               note="deflate output is exactly %d bytes: not shorter, stored plain" % n)
    k = found[n - 1]
    write_case("bytes-deflate-one-shorter-min1", mix(k, n), "mix(%d, %d)" % (k, n), min_compress_len=1,
               note="deflate output is %d bytes: stored compressed" % (n - 1))


exact_boundary()


# ------------------------------------------------------------------ read cases: raw flags/payload -> pylibmc
def read_case(name, flags, payload, note="", recipe=None):
    key = next_key("r")
    RAW.set(key, flags, payload)
    c = client()
    r = {"name": name, "flags": flags, "flags_hex": "0x%x" % flags, "payload": payload.hex()}
    try:
        v = c.get(key)
        r["result"] = render(v, recipe if isinstance(v, (str, bytes)) else None)
    except Exception as e:  # the exception pylibmc raises, by class and message
        r["result"] = {"error": type(e).__module__ + "." + type(e).__qualname__, "message": str(e)}
    if note:
        r["note"] = note
    READS.append(r)


keyno[0] = 0
read_case("bytes", 0, b"hello")
read_case("bytes-42", 0, b"42")
for name, p in [("42", b"42"), ("-42", b"-42"), ("0", b"0"), ("spaces", b" 42 "), ("plus", b"+7"),
                ("underscore", b"4_2"), ("empty", b""), ("abc", b"abc"), ("3.14", b"3.14"),
                ("1e3", b"1e3"), ("0x1A", b"0x1A"), ("10^23-1", b"99999999999999999999999"),
                ("newline", b"42\n")]:
    read_case("long-" + name, 4, p, note="int(bytes, 10) rules (PyLong_FromString)")
for name, p in [("1", b"1"), ("0", b"0"), ("42", b"42"), ("true", b"true"), ("empty", b"")]:
    read_case("integer-" + name, 2, p, note="flags 2 (a bool on write) reads back as int")
read_case("text-utf8", 16, "h\u00e9llo".encode())
read_case("text-empty", 16, b"")
read_case("text-invalid-utf8", 16, b"\xff\xfe")
for proto in [0, 2, 5]:
    read_case("pickle-%d-dict" % proto, 1, pickle.dumps({"a": 1}, proto))
read_case("pickle-float", 1, pickle.dumps(3.14, 5))
read_case("pickle-broken", 1, b"42", note="PHP's int 42 (flags 1) is not a pickle")
read_case("pickle-empty", 1, b"")
t = text(3000).encode()
read_case("zlib-bytes", 8, zlib.compress(t), recipe="text(3000)")
read_case("zlib-text", 24, zlib.compress(t), recipe="text(3000)")
read_case("zlib-long", 12, zlib.compress(b"123456789012345678901234567890"))
read_case("zlib-integer", 10, zlib.compress(b"1"))
read_case("zlib-pickle", 9, zlib.compress(pickle.dumps({"a": 1}, 5)))
read_case("zlib-level-9", 8, zlib.compress(t, 9), recipe="text(3000)")
read_case("zlib-php-prefixed", 8, len(t).to_bytes(4, "little") + zlib.compress(t), note="php-memcached's 4-byte length prefix is not understood")
gz = zlib.compressobj(6, zlib.DEFLATED, 31)
read_case("gzip", 8, gz.compress(t) + gz.flush(), note="inflateInit: zlib framing only, no gzip")
rd = zlib.compressobj(6, zlib.DEFLATED, -15)
read_case("raw-deflate", 8, rd.compress(t) + rd.flush())
read_case("zlib-broken", 8, b"\x78\x9c\x00")
# flags of other peers / combinations
for f, p, note in [
    (3, b"1", "php bool true"), (5, b"\x00\x00\x00\x02\x06\x2a", "php igbinary 42"),
    (6, b"42", "php JSON 42"), (7, b"\x2a", "php msgpack 42"), (17, b"hi", "pickle|text"),
    (20, b"42", "long|text"), (32, b"hi", "bit 5: not a pylibmc bit"), (64, b"hi", "bit 6"),
    (0x10000, b"hi", "php user flag 1"), (0x10004, b"42", "long with a high bit"),
    (0x50, b"hi", "php fastlz bits (0x40|0x10): 0x10 is pylibmc TEXT"),
    (0x51, b"\x02\x00\x00\x00\x01\x34\x32", "php fastlz long 42 (prefix 2, FastLZ literal run): 0x50 & types = 16|1, refused"),
    (0x50, b"\x02\x00\x00\x00\x01\x34\x32", "php fastlz string \"42\": valid UTF-8, so pylibmc returns the compressed bytes as a str, silently"),
    (0x30, len(t).to_bytes(4, "little") + zlib.compress(t), "php zlib string (0x30): read as TEXT, no inflate"),
]:
    read_case("flags-0x%x-%s" % (f, p[:8].hex()), f, p, note=note)

# ------------------------------------------------------------------ output
def dpkg_version(pkg):
    try:
        return subprocess.run(["dpkg-query", "-W", "-f", "${Version}", pkg], capture_output=True,
                              text=True).stdout.strip()
    except OSError:
        return ""


header = {
    "peer": "pylibmc",
    "versions": {
        "python": "%d.%d.%d" % sys.version_info[:3],
        "pylibmc": pylibmc.__version__,
        "pylibmc (dpkg python3-pylibmc)": dpkg_version("python3-pylibmc"),
        "libmemcached (pylibmc.libmemcached_version)": pylibmc.libmemcached_version,
        "zlib": zlib.ZLIB_RUNTIME_VERSION,
        "memcached server": RAW.version(),
    },
    "defaults": {
        "pickle_protocol behaviour": client().behaviors["pickle_protocol"],
        "pickle.HIGHEST_PROTOCOL": pickle.HIGHEST_PROTOCOL,
        "support_compression": pylibmc.support_compression,
        "set() min_compress_len": 0,
        "set() compress_level": "-1 (Z_DEFAULT_COMPRESSION, i.e. 6)",
    },
    "recipes": {
        "text(n)": 'first n bytes of "line 000000: the quick brown fox jumps over the lazy dog\\n", "line 000001: ...", ... ("line %06d: ...\\n" % i)',
        "noise(n)": 'first n bytes of sha256(b"memshard-0") + sha256(b"memshard-1") + ... (raw 32-byte digests)',
        "mix(k, n)": "text(k) + noise(n - k) (bytes)",
    },
}
dump = lambda o, **kw: json.dumps(o, ensure_ascii=False, allow_nan=False, **kw)
parts = ["%s: %s" % (dump(k), dump(v, indent=4)) for k, v in header.items()]
body = "{\n" + ",\n".join(parts) + ",\n"
body += '"writes": [\n' + ",\n".join(dump(c, separators=(",", ":")) for c in WRITES) + "\n],\n"
body += '"reads": [\n' + ",\n".join(dump(c, separators=(",", ":")) for c in READS) + "\n]\n}\n"
with open(OUT, "w", encoding="utf-8") as f:
    f.write(body)
print("pylibmc: %d writes, %d reads -> %s" % (len(WRITES), len(READS), OUT), file=sys.stderr)
