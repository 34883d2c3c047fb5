#!/usr/bin/python3
"""Record byte-exact meta-protocol transcripts from a real memcached.

Usage: /usr/bin/python3 meta-vectors/generate.py [OUT.json]
       (default OUT: meta-vectors/memcached-1.6.18.json next to this file)

Starts its own memcached (/usr/bin/memcached, -u nobody when run as root) on a
free 127.0.0.1 port, runs every case on a fresh connection, stops the server by
PID. stdlib only, plain sockets. See README.md for the layout and masking.
"""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time

MEMCACHED = "/usr/bin/memcached"
HOST = "127.0.0.1"
QUIET = 0.05      # a reply is complete once the socket stayed quiet this long
FIRST = 0.5       # longest wait for the first byte of a reply
SERVER_ARGS = ["-l", HOST, "-U", "0", "-m", "64", "-c", "64", "-t", "1", "-I", "2k", "-o", "slab_chunk_max=1024"]

K250 = "k" * 250
K251 = "k" * 251


def free_port():
    s = socket.socket()
    s.bind((HOST, 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start_server():
    port = free_port()
    args = [MEMCACHED, "-p", str(port)] + SERVER_ARGS
    if os.geteuid() == 0:
        args += ["-u", "nobody"]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    for _ in range(200):
        try:
            socket.create_connection((HOST, port), timeout=0.2).close()
            return proc, port
        except OSError:
            if proc.poll() is not None:
                raise SystemExit("memcached exited: %r" % proc.stderr.read())
            time.sleep(0.02)
    raise SystemExit("memcached did not listen on port %d" % port)


def read_reply(sock):
    """Everything the server sends until it is quiet; (bytes, closed)."""
    buf = b""
    sock.settimeout(FIRST)
    while True:
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            return buf, False
        if not chunk:
            return buf, True
        buf += chunk
        sock.settimeout(QUIET)


def server_time(ctl):
    ctl.sendall(b"stats\r\n")
    buf = b""
    while not buf.endswith(b"END\r\n"):
        buf += ctl.recv(65536)
    return int(re.search(rb"STAT time (\d+)", buf).group(1))


def wait_for_tick(ctl):
    """Return right after memcached's clock advanced, so a case runs in one tick."""
    t0 = server_time(ctl)
    while server_time(ctl) == t0:
        time.sleep(0.003)


# --- masking -----------------------------------------------------------------

CAS_META = re.compile(rb"(?<= )c(\d+)(?= |\r\n)")
CAS_ME = re.compile(rb"(?<= )cas=(\d+)")
CAS_GETS = re.compile(rb"^(VALUE \S+ \d+ \d+ )(\d+)\r\n", re.M)
META_LINE = re.compile(rb"^(HD|VA|EN|NS|EX|NF|MN)\b[^\r\n]*\r\n", re.M)


def mask_reply(data, seen):
    """Replace CAS numbers by <CAS>; remember the raw numbers in `seen`."""
    def meta_line(m):
        line = m.group(0)

        def one(c):
            if c.group(1) == b"0":
                return c.group(0)
            seen.append(int(c.group(1)))
            return b"c<CAS>"
        return CAS_META.sub(one, line)

    def me(c):
        seen.append(int(c.group(1)))
        return b"cas=<CAS>"

    def gets(c):
        seen.append(int(c.group(2)))
        return c.group(1) + b"<CAS>\r\n"

    data = META_LINE.sub(meta_line, data)
    data = CAS_ME.sub(me, data)
    data = CAS_GETS.sub(gets, data)
    return data


def render(data):
    """Text with \\r \\n \\\\ escaped; hex when not printable ASCII."""
    if all(32 <= b < 127 or b in (10, 13) for b in data):
        text = data.decode("ascii").replace("\\", "\\\\").replace("\r", "\\r").replace("\n", "\\n")
        return {"text": text}
    return {"hex": data.hex()}


# --- cases -------------------------------------------------------------------
# A step is bytes, or a str with {CAS} / {CAS-1} / {CAS+1} (last CAS seen in this
# case; {CAS@0} = the first one seen, shown as <CAS@0>).

def C(name, purpose, *steps):
    return {"name": name, "purpose": purpose, "steps": list(steps)}


CASES = [
    # ---- mn / basics -----------------------------------------------------------
    C("mn", "meta no-op returns MN",
      "mn\r\n"),
    C("mn-with-junk", "mn ignores trailing tokens?",
      "mn foo\r\n"),
    C("mg-miss", "plain miss is EN",
      "mg mgmiss v\r\n", "mg mgmiss\r\n"),
    C("mg-hit-no-flags", "hit without flags is HD and nothing else",
      "set mghit 5 0 3\r\nabc\r\n", "mg mghit\r\n"),
    C("mg-flags-all-return", "every returning mg flag on a hit: v s f t c k h l O",
      "ms mgall 3 F77 T100\r\nabc\r\n",
      "mg mgall v s f t c k h l Oop1\r\n",
      "mg mgall h l\r\n",
      "mg mgall k v f s t h l Oxy c\r\n"),
    C("mg-t-unlimited", "t on an item without TTL is -1",
      "ms mgtinf 1\r\nx\r\n", "mg mgtinf t v\r\n"),
    C("mg-u-no-bump", "u: h stays 0 after a u fetch",
      "ms mgu 1\r\nx\r\n", "mg mgu u v\r\n", "mg mgu h\r\n", "mg mgu h\r\n"),
    C("mg-T-touch", "T updates TTL on hit (gat)",
      "ms mgT 1 T100\r\nx\r\n", "mg mgT T500 t\r\n", "mg mgT t\r\n", "mg mgTmiss T500 t\r\n"),
    C("mg-E-flag", "E (explicit CAS, newer servers) on ms and mg: refused by 1.6.18",
      "ms mgE 1 E999\r\nx\r\n", "mn\r\n", "ms mgE 1\r\nx\r\n", "mg mgE c E5\r\n", "mg mgE c\r\n"),
    C("mg-q-hit-and-miss", "q: a miss gives nothing, a hit still answers; mn fences",
      "ms mgq1 2\r\nv1\r\n",
      "mg mgq0 v q\r\nmg mgq1 v q k\r\nmg mgq2 v q\r\nmg mgq3 q\r\nmn\r\n"),
    C("mg-q-hd-hit", "q on a hit without v: HD is suppressed?",
      "ms mgqhd 2\r\nv1\r\n", "mg mgqhd q\r\nmg mgqhd q k\r\nmn\r\n"),
    C("mg-opaque", "O tokens echoed on hit and miss, long/odd opaques",
      "ms mgo 1\r\nx\r\n",
      "mg mgo O123\r\n", "mg mgo-miss O123\r\n", "mg mgo-miss O123 q\r\nmn\r\n",
      "mg mgo v O" + "a" * 31 + "\r\n", "mg mgo v O" + "a" * 32 + "\r\n",
      "mg mgo v O" + "a" * 33 + "\r\n",
      "mg mgo O\r\n",
      "mg mgo O1 O2\r\n"),
    C("mg-base64", "b: key base64-decoded; k returns base64 plus b flag",
      "ms Zm9v 3 b\r\nbar\r\n",
      "mg Zm9v b k v\r\n", "get foo\r\n", "mg foo k v\r\n",
      "mg AAEC/w== b k v\r\n", "ms AAEC/w== 2 b\r\nhi\r\n", "mg AAEC/w== b k v\r\n",
      "mg !!!! b v\r\n", "mg Zm9 b v\r\n"),
    C("mg-base64-key-tokens", "k on a non-base64 request echoes the key without b",
      "ms plainkey 1\r\nx\r\n", "mg plainkey k\r\n", "mg plainkey k b\r\n"),
    C("mg-key-length", "250-byte key fine, 251 is an error",
      "ms " + K250 + " 1\r\nx\r\n", "mg " + K250 + " s\r\n", "mg " + K251 + " s\r\n",
      "mn\r\n"),
    C("mg-bad-flags", "unknown / malformed flags, missing key",
      "mg badflag v !\r\n", "mg badflag Y\r\n", "mg badflag Nabc\r\n",
      "mg badflag Tabc\r\n", "mg badflag Rxyz\r\n", "mg\r\n", "mg \r\n", "mn\r\n"),
    C("mg-duplicate-flags", "flags repeated",
      "ms mgdup 1\r\nx\r\n", "mg mgdup v v\r\n", "mg mgdup s s k k\r\n"),
    C("mg-P-L-ignored", "P and L tokens are ignored by the daemon",
      "ms mgpl 1\r\nx\r\n", "mg mgpl v P/foo Lbar\r\n"),
    C("mg-flag-token-limit", "many flags in one request",
      "ms mgmany 1\r\nx\r\n",
      "mg mgmany " + " ".join(["O%d" % i for i in range(30)]) + "\r\n",
      "mg mgmany " + " ".join(["P%d" % i for i in range(19)]) + "\r\n",
      "mg mgmany " + " ".join(["P%d" % i for i in range(20)]) + "\r\n",
      "mg mgmany " + " ".join(["P%d" % i for i in range(21)]) + "\r\n",
      "mg mgmany " + " ".join(["P%d" % i for i in range(22)]) + "\r\n",
      "mg mgmany " + " ".join(["P%d" % i for i in range(23)]) + "\r\n",
      "mg mgmany " + " ".join(["P%d" % i for i in range(24)]) + "\r\n",
      "mg mgmany v s f t c k h l Oa u\r\n"),

    # ---- ms ------------------------------------------------------------------
    C("ms-basic", "ms stores; HD; F flags; T ttl; c returns new CAS; k, O echoed",
      "ms msb 5\r\nhello\r\n", "mg msb v f t\r\n",
      "ms msb 3 F4294967295 T60 c k O9\r\nabc\r\n", "mg msb v f t s\r\n",
      "ms msb 0\r\n\r\n", "mg msb v s\r\n"),
    C("ms-F-overflow", "F outside 32 bits",
      "ms msf 1 F4294967296\r\nx\r\n", "mg msf f v\r\n", "ms msf 1 F4294967297\r\nx\r\n", "mg msf f v\r\n", "ms msf 1 F-1\r\nx\r\n", "mn\r\n"),
    C("ms-invalid-flags", "unknown flag / ms S flag / s flag",
      "ms msi 1 Y\r\nx\r\n", "mn\r\n", "ms msi 1 S1\r\nx\r\n", "mn\r\n",
      "ms msi 1 s\r\nx\r\n", "mn\r\n", "ms msi 1 v\r\nx\r\n", "mn\r\n"),
    C("ms-no-length", "ms without datalen",
      "ms msnolen\r\n", "mn\r\n", "ms msnolen T5\r\n", "mn\r\n"),
    C("ms-wrong-length-long", "payload longer than datalen",
      "ms mswl 3\r\nabcdef\r\n", "mn\r\n", "mg mswl v\r\n"),
    C("ms-wrong-length-short", "payload shorter than datalen (server waits for more)",
      "ms msws 5\r\nab\r\n", "mn\r\n", "mg msws v\r\n"),
    C("ms-bad-terminator", "data not followed by \\r\\n",
      "ms msbt 3\r\nabcXY", "mn\r\n", "mg msbt v\r\n"),
    C("ms-too-large", "value larger than -I 2k item size",
      "ms mstl 3000 T0\r\n" + "x" * 3000 + "\r\n", "mn\r\n", "mg mstl s\r\n"),
    C("ms-negative-length", "negative / non-numeric datalen",
      "ms msneg -1\r\n", "mn\r\n", "ms msneg abc\r\n", "mn\r\n"),
    C("ms-q", "q: HD suppressed, NS/EX/NF still sent",
      "ms msq 1 q\r\nx\r\n", "mn\r\n",
      "ms msq 1 q ME\r\ny\r\nmn\r\n",
      "ms msq-missing 1 q MR\r\ny\r\nmn\r\n",
      "ms msq 1 q C1\r\nz\r\nmn\r\n",
      "ms msq-none 1 q C1\r\nz\r\nmn\r\n"),
    C("ms-modes", "M modes E(add) A(append) P(prepend) R(replace) S(set), lowercase, invalid",
      "ms msm 1 ME\r\na\r\n", "ms msm 1 ME\r\nb\r\n",
      "ms msm 1 MA\r\nc\r\n", "ms msm 1 MP\r\nd\r\n", "mg msm v\r\n",
      "ms msm 1 MR\r\ne\r\n", "mg msm v\r\n",
      "ms msm-none 1 MR\r\nf\r\n", "ms msm-none 1 MA\r\ng\r\n", "ms msm-none 1 MP\r\nh\r\n",
      "ms msm 1 MS\r\ni\r\n", "mg msm v\r\n",
      "ms msm 1 Ms\r\nj\r\n", "ms msm 1 Ma\r\nk\r\n", "mg msm v\r\n",
      "ms msm 1 MX\r\nl\r\n", "mn\r\n", "ms msm 1 M\r\nm\r\n", "mn\r\n", "mg msm v\r\n"),
    C("ms-cas", "C compare: match HD, mismatch EX, missing NF; c returns CAS",
      "ms mscas 1 c\r\na\r\n", "ms mscas 1 C{CAS} c\r\nb\r\n", "ms mscas 1 C{CAS-1}\r\nc\r\n",
      "mg mscas v\r\n", "ms mscas-none 1 C5\r\nd\r\n"),
    C("ms-c-on-failure", "c on NS/EX: what CAS is returned",
      "ms mscf 1\r\na\r\n", "ms mscf 1 ME c\r\nb\r\n", "ms mscf 1 C1 c\r\nb\r\n"),
    C("ms-error-swallow", "after a refused ms, is the data block swallowed or run as a command? (payload is `mn`)",
      "ms mse 2 Y\r\nmn\r\n", "ms mse 2 F-1\r\nmn\r\n", "ms mse 2 MX\r\nmn\r\n",
      "ms mse 2 O" + "a" * 32 + "\r\nmn\r\n", "ms !!!! 2 b\r\nmn\r\n",
      "ms " + K251 + " 2\r\nmn\r\n", "ms mse 2 T5 T6\r\nmn\r\n", "ms mse 2 Cabc\r\nmn\r\n",
      "mn\r\n"),
    C("ms-I-invalidate", "ms I C<older CAS>: accepted but the item is stale (X W); I with current CAS",
      "ms msI 2 c\r\nv1\r\n", "ms msI 2 c\r\nv2\r\n",
      "ms msI 2 I C{CAS@0}\r\nv0\r\n", "mg msI v c\r\n", "mg msI v\r\n",
      "ms msI 2 C{CAS-1}\r\nvx\r\n",
      "ms msI 2 I C{CAS} c\r\nv3\r\n", "mg msI v\r\n"),
    C("ms-base64", "b flag on ms with k",
      "ms Zm9vMg== 1 b k\r\nx\r\n", "get foo2\r\n"),
    C("ms-key-too-long", "251-byte key on ms: error, data line?",
      "ms " + K251 + " 1\r\nx\r\n", "mn\r\n"),
    C("ms-append-keeps-flags", "A mode keeps the original client flags and TTL",
      "ms msak 1 F5 T100\r\na\r\n", "ms msak 1 MA F9 T5\r\nb\r\n", "mg msak v f t\r\n"),
    C("ms-binary-value", "8-bit payload with embedded \\r\\n and NUL",
      b"ms msbin 6\r\n\x00\r\n\xff\xfe\n\r\n", b"mg msbin v s\r\n"),

    # ---- md ------------------------------------------------------------------
    C("md-basic", "delete: HD then NF; k and O echoed; q",
      "ms mdb 1\r\nx\r\n", "md mdb k O7\r\n", "md mdb k O7\r\n",
      "ms mdb 1\r\nx\r\n", "md mdb q\r\nmd mdb q\r\nmn\r\n"),
    C("md-cas", "C compare on delete",
      "ms mdc 1 c\r\nx\r\n", "md mdc C{CAS-1}\r\n", "md mdc C{CAS}\r\n", "md mdc C{CAS}\r\n"),
    C("md-invalidate", "I marks stale and keeps data, bumps CAS; T with I sets TTL; I again while stale",
      "ms mdi 3 T0 c\r\nold\r\n", "md mdi I T30\r\n",
      "mg mdi v c t\r\n", "mg mdi v c t\r\n", "md mdi I q\r\nmn\r\n", "mg mdi v c\r\n",
      "md mdi\r\n", "mg mdi v\r\n"),
    C("md-invalidate-cas", "md I C: wrong CAS EX, right CAS HD; miss NF",
      "ms mdic 1 c\r\nx\r\n", "md mdic I C{CAS-1}\r\n", "md mdic I C{CAS}\r\n",
      "mg mdic v\r\n", "md mdic-none I\r\n"),
    C("md-T-without-I", "T without I",
      "ms mdt 1 T0\r\nx\r\n", "md mdt T30\r\n", "mg mdt v t\r\n"),
    C("md-x-flag", "x: removes the value but keeps the item (1.6.18: accepted?)",
      "ms mdx 3 F7\r\nabc\r\n", "md mdx x\r\n", "mg mdx v f s\r\n"),
    C("md-base64", "b on md",
      "ms Zm9vMw== 1 b\r\nx\r\n", "md Zm9vMw== b k\r\n", "mg Zm9vMw== b v\r\n"),
    C("md-bad-flags", "unknown flag, key too long, no key",
      "md mdbad Y\r\n", "md " + K251 + "\r\n", "md\r\n", "mn\r\n"),

    # ---- ma ------------------------------------------------------------------
    C("ma-basic", "incr default delta 1; v returns value; miss NF; non-numeric",
      "ms man 2\r\n10\r\n", "ma man\r\n", "ma man v\r\n", "mg man v\r\n",
      "ma ma-miss\r\n", "ma ma-miss v\r\n",
      "ms manan 3\r\nabc\r\n", "ma manan v\r\n"),
    C("ma-modes", "MI M+ MD M- modes, D delta, decr floors at 0, incr wraps at 2^64",
      "ms mam 2\r\n10\r\n", "ma mam MI D5 v\r\n", "ma mam M+ v\r\n", "ma mam MD D3 v\r\n",
      "ma mam M- v\r\n", "ma mam MD D100 v\r\n",
      "ms mam 20\r\n18446744073709551615\r\n", "ma mam v\r\n", "ma mam MX v\r\n", "mn\r\n",
      "ma mam Ma v\r\n", "mn\r\n"),
    C("ma-N-J", "N auto-create with J initial value; J without N",
      "ma manj N0 J42 v\r\n", "ma manj N0 J42 v\r\n", "mg manj v t\r\n",
      "ma manj2 J5 v\r\n", "ma manj3 N100 v t\r\n", "ma manj4 N0 J7 MD v\r\n"),
    C("ma-t-T-c-k-O-q", "t, T, c, k, O, q on ma",
      "ms mat 1 T100\r\n5\r\n", "ma mat t v\r\n", "ma mat T50 t v\r\n",
      "ma mat c k O1 v\r\n", "ma mat q\r\nma mat q v\r\nma mat-miss q\r\nmn\r\n", "mg mat v\r\n"),
    C("ma-cas", "C compare on ma; E new CAS",
      "ms mac 1 c\r\n1\r\n", "ma mac C{CAS-1} v\r\n", "ma mac C{CAS} v c\r\n",
      "ma mac C{CAS@0} v\r\n", "mg mac c v\r\n", "ma mac C1 E5 v\r\n"),
    C("ma-bad-delta", "D non-numeric / negative / overflow, J invalid",
      "ms mad 1\r\n1\r\n", "ma mad Dabc\r\n", "ma mad D-1\r\n",
      "ma mad D18446744073709551616\r\n", "ma madj N0 Jx\r\n", "mn\r\n"),
    C("ma-long-value", "incr on a value with leading spaces/length change",
      "ms mal 2\r\n99\r\n", "ma mal v\r\n", "mg mal v s\r\n"),
    C("ma-base64", "b on ma",
      "ma Zm9vNA== b N0 J1 v k\r\n", "get foo4\r\n"),

    # ---- stampede protection -------------------------------------------------
    C("vivify-miss", "mg N on a miss creates an empty stub: first caller EN + W, later callers Z",
      "mg viv v N30 c t s\r\n", "mg viv v N30 c t s\r\n", "mg viv v N30 t\r\n",
      "mg viv v\r\n", "mg viv s t f\r\n"),
    C("vivify-winner-sets", "the winner's ms replaces the stub: no more W/Z",
      "mg viw v N30\r\n", "mg viw v N30\r\n", "ms viw 5 T60\r\nfresh\r\n",
      "mg viw v N30 t\r\n"),
    C("vivify-winner-sets-with-cas", "winner stores with C of the stub (gated update); a late C fails",
      "mg vic v N30 c\r\n", "ms vic 5 C{CAS} T60\r\nfresh\r\n", "mg vic v N30\r\n",
      "ms vic 5 C{CAS}\r\nlater\r\n"),
    C("vivify-q", "mg N q on a miss: is EN W sent?",
      "mg viq v N30 q\r\nmn\r\n", "mg viq v N30 q\r\nmn\r\n", "mg viq v q\r\nmn\r\n"),
    C("vivify-no-v", "mg N without v on miss and on the stub",
      "mg vinv N30\r\n", "mg vinv N30\r\n", "mg vinv N30 k O5\r\n"),
    C("vivify-text-get", "what text get/gets return for a vivified stub",
      "mg vitg N30 v\r\n", "get vitg\r\n", "gets vitg\r\n", "mg vitg v\r\n"),
    C("vivify-md-removes", "md of the stub: next N caller wins again",
      "mg vimd N30 v\r\n", "md vimd\r\n", "mg vimd N30 v\r\n"),
    C("vivify-add-on-stub", "ms ME (add) on a stub: the stub counts as existing",
      "mg viadd N30 v\r\n", "ms viadd 1 ME\r\nx\r\n", "mg viadd v\r\n"),
    C("stale-invalidate", "md I: item stale; first mg gets X W with old data, others X Z; ms replaces",
      "ms st 3 T0\r\nold\r\n", "md st I T30\r\n",
      "mg st v c t\r\n", "mg st v c t\r\n", "mg st v\r\n", "get st\r\n",
      "ms st 3 T60\r\nnew\r\n", "mg st v t\r\n"),
    C("stale-cas-replace", "winner stores with C = the CAS its stale mg returned: clean item again",
      "ms stc 3 c\r\nold\r\n", "md stc I\r\n", "mg stc v c\r\n", "mg stc v c\r\n",
      "ms stc 3 C{CAS}\r\nnew\r\n", "mg stc v c\r\n"),
    C("stale-ms-older-cas", "ms with the pre-invalidation CAS on a stale item: without I, with I",
      "ms sto 3 c\r\nold\r\n", "md sto I\r\n", "ms sto 3 C{CAS@0}\r\nxxx\r\n", "mg sto v\r\n",
      "ms sto 3 I C{CAS@0}\r\nyyy\r\n", "mg sto v\r\n", "mg sto v\r\n"),
    C("early-recache", "mg R30 on an item with TTL below 30: W once, then Z; above: nothing",
      "ms er 3 T10\r\nabc\r\n", "mg er v R30 t\r\n", "mg er v R30 t\r\n", "mg er v t\r\n",
      "ms er2 3 T100\r\nabc\r\n", "mg er2 v R30 t\r\n",
      "ms er3 3 T0\r\nabc\r\n", "mg er3 v R30 t\r\n"),
    C("early-recache-boundary", "R equal to remaining TTL",
      "ms erb 3 T30\r\nabc\r\n", "mg erb v R30 t\r\n", "mg erb v R31 t\r\n"),
    C("early-recache-reset-by-ms", "after the winner's ms the win token resets",
      "ms err 1 T10\r\na\r\n", "mg err v R30\r\n", "ms err 1 T10\r\nb\r\n", "mg err v R30\r\n"),
    C("early-recache-T", "R combined with T (touch): order of effects",
      "ms ert 1 T10\r\na\r\n", "mg ert v R30 T100 t\r\n", "mg ert v R30 t\r\n"),
    C("win-with-q", "W/Z on a hit with q: hit lines still sent",
      "ms wq 1 T10\r\na\r\n", "mg wq v R30 q\r\nmg wq v R30 q\r\nmn\r\n"),

    # ---- quiet pipelines and interleaving ----------------------------------------
    C("quiet-pipeline", "several mg q misses + hits then mn: only hits and MN come back, in order",
      "ms qp2 2\r\nv2\r\n", "ms qp4 2\r\nv4\r\n",
      "mg qp1 v q k O1\r\nmg qp2 v q k O2\r\nmg qp3 v q k O3\r\nmg qp4 v q k O4\r\nmg qp5 v q k O5\r\nmn\r\n"),
    C("quiet-mixed-pipeline", "q across ms/md/ma/mg in one write",
      "ms qm1 1 q\r\na\r\nms qm2 1 q\r\nb\r\nmd qm1 q\r\nmd qm-none q\r\nma qm-none q\r\n"
      "mg qm1 v q\r\nmg qm2 v q\r\nmn\r\n"),
    C("pipeline-no-q", "pipelined mg without q, answers in order",
      "mg pn1 v O1\r\nms pn2 1\r\nx\r\nmg pn2 v O2\r\nmn\r\n"),
    C("interleave-text-meta", "text and meta commands on one connection",
      "set il 3 0 1\r\nx\r\n", "mg il v f\r\n", "ms il 1 F4\r\ny\r\n", "get il\r\n",
      "gets il\r\n", "incr il2 1\r\n", "ma il v\r\n",
      "get il il-miss\r\nmg il v\r\nmn\r\ndelete il\r\nmg il v\r\n"),
    C("interleave-error-recovery", "after an ERROR the connection still works",
      "bogus\r\n", "mg x y z\r\n", "mn\r\n", "MG ier v\r\n", "mn\r\n"),

    # ---- ME ------------------------------------------------------------------
    C("me-debug", "ME on hit / miss / base64 / stale / fetched",
      "me me-miss\r\n", "ms meh 3 T0 F3\r\nabc\r\n", "me meh\r\n", "mg meh v\r\n", "me meh\r\n",
      "ms Zm9vNQ== 1 b\r\nx\r\n", "me Zm9vNQ== b\r\n", "md meh I\r\n", "me meh\r\n",
      "me\r\n", "mn\r\n"),
    C("me-ttl", "ME exp for an item with TTL",
      "ms met 1 T100\r\nx\r\n", "me met\r\n"),

    # ---- misc errors -------------------------------------------------------------
    C("unknown-meta", "unknown two-letter meta command",
      "mz foo\r\n", "mn\r\n", "m\r\n", "mn\r\n"),
    C("key-with-control", "key containing a control byte",
      b"mg ke\x01y v\r\n", b"mn\r\n"),
]


# --- run ---------------------------------------------------------------------

def expand(step, cas_seen):
    if isinstance(step, bytes):
        return step, step
    if "{CAS" in step:
        last = cas_seen[-1]
        raw = step.replace("{CAS}", str(last)).replace("{CAS-1}", str(last - 1))
        raw = raw.replace("{CAS@0}", str(cas_seen[0]))
        shown = step.replace("{CAS}", "<CAS>").replace("{CAS-1}", "<CAS-1>").replace("{CAS@0}", "<CAS@0>")
        return raw.encode(), shown.encode()
    return step.encode(), step.encode()


def run_case(port, ctl, case):
    wait_for_tick(ctl)
    sock = socket.create_connection((HOST, port))
    cas_seen = []
    steps = []
    closed = False
    for step in case["steps"]:
        raw, shown = expand(step, cas_seen)
        if closed:
            steps.append({"request": render(shown), "reply": None, "note": "not sent: connection closed"})
            continue
        try:
            sock.sendall(raw)
            reply, closed = read_reply(sock)
        except (BrokenPipeError, ConnectionResetError):
            reply, closed = b"", True
        rec = {"request": render(shown), "reply": render(mask_reply(reply, cas_seen))}
        if closed:
            rec["closed"] = True
        steps.append(rec)
    sock.close()
    return {"name": case["name"], "purpose": case["purpose"], "steps": steps}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "memcached-1.6.18.json")
    proc, port = start_server()
    try:
        ctl = socket.create_connection((HOST, port))
        ctl.sendall(b"version\r\n")
        version = ctl.recv(100).decode().strip()
        ctl.sendall(b"flush_all\r\n")
        assert ctl.recv(100) == b"OK\r\n"
        cases = [run_case(port, ctl, c) for c in CASES]
        ctl.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=10)
    doc = {
        "server": version,
        "binary": MEMCACHED,
        "server_args": SERVER_ARGS + ["-p", "<PORT>"] + (["-u", "nobody"] if os.geteuid() == 0 else []),
        "notes": [
            "Each case runs on a fresh connection, started right after memcached's clock ticked "
            "(polled with `stats`), so TTL/last-access numbers come from one clock second.",
            "A step's request is sent in one write; its reply is every byte received until the "
            "socket stayed quiet for %.2f s (first byte awaited up to %.1f s). An empty reply "
            "means nothing came back." % (QUIET, FIRST),
            "CAS numbers in replies (meta `c` tokens, `ME` cas=, `gets` 5th field) are replaced "
            "by <CAS>; requests that reused a CAS show <CAS> (the last one seen in the case) or "
            "<CAS-1> (that number minus one) or <CAS@0> (the first CAS seen in the case). "
            "A CAS of 0 is not masked.",
            "text = bytes with \\r, \\n, \\\\ escaped; hex = lowercase hex when a byte is not printable ASCII.",
            "closed: true = the server closed the connection after this reply.",
        ],
        "cases": cases,
    }
    with open(out, "w") as f:
        json.dump(doc, f, indent=1, ensure_ascii=True)
        f.write("\n")
    print("%s: %d cases" % (out, len(cases)))


if __name__ == "__main__":
    main()
