"""pylibmc's side of cli/tests/values_live.rs.

    /usr/bin/python3 pylibmc_values.py write HOST:PORT        store the matrix (keys pylibmc:<case>)
    /usr/bin/python3 pylibmc_values.py read HOST:PORT KEY...  get each key, print what pylibmc got

One JSON object per line, in memshard's `get --json` convention: {"key","type","value"} with type
string (str) / bytes (bytes, lowercase hex) / int (a JSON number within 64 bits, else its
decimal string) / float (a JSON number, or "Infinity", "-Infinity", "NaN") / bool / null / json,
plus "class" (type().__name__). `write` adds "peer_reads_back" when pylibmc's own get returns
something else than it stored. Settings: pylibmc's defaults (no compression, pickle protocol -1)
unless a case says otherwise (min_compress_len=2000).
"""
import json
import math
import sys

import pylibmc

I64 = range(-(2**63), 2**63)


def text(n):
    """The first n bytes of "line 000000: the quick brown fox jumps over the lazy dog\\n" ..."""
    out, size, i = [], 0, 0
    while size < n:
        line = "line %06d: the quick brown fox jumps over the lazy dog\n" % i
        out.append(line)
        size += len(line)
        i += 1
    return "".join(out)[:n]


def render(v):
    r = {"class": type(v).__name__}
    if isinstance(v, str):
        r.update(type="string", value=v)
    elif isinstance(v, (bytes, bytearray)):
        r.update(type="bytes", value=bytes(v).hex())
    elif isinstance(v, bool):  # before int: bool is an int subclass
        r.update(type="bool", value=v)
    elif isinstance(v, int):
        r.update(type="int", value=v if v in I64 else str(v))
    elif isinstance(v, float):
        if math.isnan(v):
            r.update(type="float", value="NaN")
        elif math.isinf(v):
            r.update(type="float", value="Infinity" if v > 0 else "-Infinity")
        else:
            r.update(type="float", value=v)
    elif v is None:
        r.update(type="null", value=None)
    else:
        r.update(type="json", value=v)
    return r


def out(line):
    # json.dumps writes floats with repr(): the shortest text that reads back as the same double
    print(json.dumps(line, ensure_ascii=False, allow_nan=False), flush=True)


def same(a, b):
    return json.dumps([a["type"], a["value"]]) == json.dumps([b["type"], b["value"]])


def client(addr):
    return pylibmc.Client([addr])


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in ("write", "read"):
        sys.exit("usage: pylibmc_values.py write|read HOST:PORT [KEY...]")
    mode, addr = sys.argv[1], sys.argv[2]
    mc = client(addr)
    if mode == "write":
        lst = [1, "two", True, None]
        mp = {"a": 1, "b": "two", "c": [1, 2]}
        # (case, value, min_compress_len); 2000: zlib from 2000 bytes on when deflate is shorter
        # (_pylibmcmodule.c:1286-1298)
        cases = [
            ("str_ascii", "hello world", 0),
            ("str_utf8", "h\u00e9llo w\u00f6rld \u2713 \u65e5\u672c\u8a9e \U0001f680", 0),
            ("str_empty", "", 0),
            ("bytes", b"\x00\xff\x80\xfe\x7f", 0),
            ("bytes_empty", b"", 0),
            ("str_1999", text(1999), 2000),
            ("str_2000", text(2000), 2000),
            ("str_2001", text(2001), 2000),
            ("str_100k", text(100000), 2000),
            ("str_100k_plain", text(100000), 0),
            ("int_neg", -42, 0),
            ("int_zero", 0, 0),
            ("int_max", 2**63 - 1, 0),
            ("int_min", -(2**63), 0),
            ("int_2p64", 2**64, 0),
            ("int_neg_2p100", -(2**100), 0),
            ("float_pi", 3.14, 0),
            ("float_neg_zero", -0.0, 0),
            ("float_1e100", 1e100, 0),
            ("float_inf", math.inf, 0),
            ("float_neg_inf", -math.inf, 0),
            ("float_nan", math.nan, 0),
            ("bool_true", True, 0),
            ("bool_false", False, 0),
            ("null", None, 0),
            ("list", lst, 0),
            ("map", mp, 0),
        ]
        for case, value, min_compress_len in cases:
            key = "pylibmc:" + case
            line = {"key": key}
            line.update(render(value))
            if not mc.set(key, value, min_compress_len=min_compress_len):
                line["error"] = "set returned False"
                out(line)
                continue
            got = mc.get_multi([key])
            if key not in got:
                line["peer_reads_back"] = {"error": "miss"}
            else:
                back = render(got[key])
                if not same(back, line):
                    line["peer_reads_back"] = back
            out(line)
    else:
        keys = sys.argv[3:]
        for key in keys:
            try:
                got = mc.get_multi([key])
            except Exception as e:  # pylibmc raises for flags/payloads it cannot read
                out({"key": key, "error": "%s: %s" % (type(e).__name__, e)})
                continue
            if key not in got:
                out({"key": key, "miss": True})
            else:
                line = {"key": key}
                line.update(render(got[key]))
                out(line)


main()
