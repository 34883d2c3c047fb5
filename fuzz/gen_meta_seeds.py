#!/usr/bin/env python3
"""Writes the seeds of the meta targets (run once from the repository root; stdlib only):

* fuzz/corpus/meta_reply/seed-vec-*: every distinct reply memcached 1.6.18 sent to a meta
  request in meta-vectors/memcached-1.6.18.json (CAS placeholders as meta/vectors.rs fills
  them), each alone and each case's replies concatenated, byte 0 = 4 (max_value 1 MiB);
  seed-hostile-*: lengths near the limits, tokens without letters, bare CR, truncations.
* fuzz/corpus/meta_request/seed-*: requests in the target's layout (fuzz/README.md).
"""
import json
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPLY = os.path.join(ROOT, "fuzz", "corpus", "meta_reply")
REQUEST = os.path.join(ROOT, "fuzz", "corpus", "meta_request")


def decode(v):
    if "hex" in v:
        return bytes.fromhex(v["hex"])
    t = v["text"].replace("<CAS-1>", "41").replace("<CAS@0>", "40").replace("<CAS>", "42")
    return re.sub(r"\\(.)", lambda m: {"r": "\r", "n": "\n", "\\": "\\"}[m.group(1)], t).encode("latin-1")


def write(folder, name, data):
    with open(os.path.join(folder, "seed-" + name), "wb") as f:
        f.write(data)


def reply_seeds():
    doc = json.load(open(os.path.join(ROOT, "meta-vectors", "memcached-1.6.18.json")))
    seen = set()
    for case in doc["cases"]:
        replies = []
        for step in case["steps"]:
            req, rep = decode(step["request"]), decode(step["reply"])
            if rep and re.match(rb"m[gsdan]( |\r)", req):
                replies.append(rep)
        for i, rep in enumerate(replies):
            if rep not in seen:
                seen.add(rep)
                write(REPLY, "vec-%s-%d" % (case["name"], i), b"\x04" + rep)
        if len(replies) > 1 and b"".join(replies) not in seen:
            seen.add(b"".join(replies))
            write(REPLY, "vec-%s-all" % case["name"], b"\x04" + b"".join(replies))
    hostile = {
        # byte 0: 0..7 = max_value 0, 1, 5, 100, 1 MiB, u32::MAX, usize::MAX-1, usize::MAX
        "va-u64max-7": b"\x07VA 18446744073709551615\r\n",
        "va-u64max-m1-6": b"\x06VA 18446744073709551614 O1\r\n",
        "va-u64-overflow-7": b"\x07VA 18446744073709551616\r\n",
        "va-u32max-5": b"\x05VA 4294967295 f0\r\nab",
        "va-over-limit-4": b"\x04VA 1048577\r\n",
        "va-at-limit-2": b"\x02VA 5\r\nhello\r\n",
        "va-over-limit-2": b"\x02VA 6\r\nhello!\r\n",
        "va-zero-0": b"\x00VA 0 kk\r\n\r\n",
        "va-short-data": b"\x04VA 5 O9\r\nab",
        "va-bad-term": b"\x04VA 2\r\nabcd\r\n",
        "va-no-len": b"\x04VA\r\n",
        "va-neg-len": b"\x04VA -1\r\n",
        "token-no-letter": b"\x04HD 5 O1\r\n",
        "token-digit-first": b"\x04EN 1k\r\n",
        "token-empty": b"\x04HD  c1\r\n",
        "token-trailing-space": b"\x04HD c1 \r\n",
        "token-opaque-empty": b"\x04NF O\r\n",
        "token-key-empty": b"\x04HD k\r\n",
        "token-ttl-neg2": b"\x04HD t-2\r\n",
        "token-cas-overflow": b"\x04HD c18446744073709551616\r\n",
        "bare-cr-line": b"\x04HD\rO1\r\n",
        "bare-cr-token": b"\x04HD O\r1 k\rk\r\n",
        "bare-cr-only": b"\x04HD\r",
        "bare-lf": b"\x04HD\nMN\r\n",
        "nul-token": b"\x04EN O\x00\r\n",
        "mn-token": b"\x04MN O1\r\n",
        "error-then-mn": b"\x04SERVER_ERROR out of memory\r\nCLIENT_ERROR bad\r\nERROR\r\nMN\r\n",
        "pipeline": b"\x04HD O1\r\nEN O2\r\nVA 2 O3 k\xff\xfe\r\nhi\r\nNS O4\r\nEX O5\r\nMN\r\n",
        "long-line": b"\x04HD " + b"O" * 4200 + b"\r\n",
        "no-crlf-long": b"\x04" + b"H" * 3000,
        "utf8-lossy": b"\x04\xff\xfe\xfd\r\n",
        "text-reply": b"\x04VALUE k 0 1\r\na\r\nEND\r\n",
    }
    for name, data in hostile.items():
        write(REPLY, "hostile-" + name, data)


def request(cmd, flags=(), key=b"", value=b"", value_any=False):
    """cmd: 0 mg, 1 ms, 2 md, 3 ma, 4 mn; flags: (kind, number) per fuzz/entries/meta_request.rs."""
    out = bytearray([cmd | (0x80 if value_any else 0), len(flags)])
    for kind, n in flags:
        w = (n.bit_length() + 7) // 8
        out.append(kind + 22 * w)
        out += n.to_bytes(w, "little")
    out.append(len(key))
    out += key
    out += value
    return bytes(out)


# Flag kinds (MetaFlag declaration order).
(B64, RC, RF, RH, RK, RL, OPQ, Q, RS, RT, U, V, N, R, T, CC, CF, I, MS, MA, D, J) = range(22)


def request_seeds():
    seeds = {
        "mg-plain": request(0, [], b"user:1"),
        "mg-all": request(0, [(V, 0), (RC, 0), (RF, 0), (RH, 0), (RK, 0), (RL, 0), (OPQ, 7), (RS, 0), (RT, 0), (U, 0)], b"k"),
        "mg-vivify": request(0, [(V, 0), (N, 30), (R, 5), (T, 60), (Q, 0)], b"lease"),
        "mg-base64": request(0, [(B64, 0), (RK, 0), (V, 0)], bytes([0, 1, 2, 255])),
        "mg-base64-186": request(0, [(B64, 0)], b"x" * 186),
        "mg-base64-187": request(0, [(B64, 0)], b"x" * 187),
        "mg-base64-empty": request(0, [(B64, 0)], b""),
        "mg-key-250": request(0, [(V, 0)], b"k" * 250),
        "mg-key-251": request(0, [(V, 0)], b"k" * 251),
        "mg-key-space": request(0, [], b"a b"),
        "mg-key-crlf": request(0, [(V, 0)], b"a\r\nmn"),
        "mg-key-nul": request(0, [], b"a\0b"),
        "mg-key-del": request(0, [], b"a\x7fb"),
        "mg-key-utf8": request(0, [], "clé".encode()),
        "mg-key-empty": request(0, [(V, 0)], b""),
        "mg-dup": request(0, [(V, 0), (V, 0)], b"k"),
        "mg-opaque-max": request(0, [(OPQ, 0xFFFFFFFF)], b"k"),
        "mg-refused-flag": request(0, [(CC, 5)], b"k"),
        "mg-with-value": request(0, [], b"k", b"oops", True),
        "ms-plain": request(1, [(CF, 5), (T, 60)], b"k", b"hi"),
        "ms-empty-value": request(1, [], b"k", b""),
        "ms-modes": request(1, [(MS, 0), (CC, 9), (I, 0)], b"k", b"v"),
        "ms-append": request(1, [(MS, 1), (Q, 0), (OPQ, 1)], b"k", b"tail"),
        "ms-replace-cas": request(1, [(MS, 3), (CC, 2**64 - 1), (RC, 0), (RK, 0)], b"k", b"x"),
        "ms-crlf-value": request(1, [], b"k", b"a\r\nb\r\n"),
        "ms-base64": request(1, [(B64, 0), (MS, 4)], b"\xff bin key", b"data"),
        "ms-arith-mode": request(1, [(MA, 1)], b"k", b"v"),
        "ms-vivify": request(1, [(N, 3)], b"k", b"v"),
        "ms-ret-value": request(1, [(V, 0), (RS, 0)], b"k", b"v"),
        "md-plain": request(2, [], b"k"),
        "md-invalidate": request(2, [(I, 0), (T, 30), (OPQ, 1)], b"k"),
        "md-cas-quiet": request(2, [(CC, 77), (Q, 0), (RK, 0)], b"k"),
        "md-value": request(2, [], b"k", b"x", True),
        "ma-incr": request(3, [(MA, 0), (D, 1)], b"n"),
        "ma-decr-vivify": request(3, [(MA, 1), (D, 3), (N, 0), (J, 7), (V, 0)], b"n"),
        "ma-all": request(3, [(B64, 0), (CC, 1), (N, 1), (J, 2**64 - 1), (D, 2**64 - 1), (T, 9), (RT, 0), (MA, 1), (Q, 0), (OPQ, 3)], b"n"),
        "ma-set-mode": request(3, [(MS, 0)], b"n"),
        "ma-dup-mode": request(3, [(MA, 0), (MA, 1)], b"n"),
        "mn": request(4),
        "mn-key": request(4, [], b"k"),
        "mn-value": request(4, [], b"", b"x", True),
        "empty": b"",
        "one-byte": b"\x01",
    }
    for name, data in seeds.items():
        write(REQUEST, name, data)


if __name__ == "__main__":
    os.makedirs(REPLY, exist_ok=True)
    os.makedirs(REQUEST, exist_ok=True)
    reply_seeds()
    request_seeds()
    print("%d meta_reply seeds, %d meta_request seeds" % (len(os.listdir(REPLY)), len(os.listdir(REQUEST))))
