#!/usr/bin/python3
"""Turns the metric<TAB>value lines of one compare.sh run into the comparison table (markdown).

  table.py METRICS.tsv

ratio = memshard / peer. For times (ns) lower is better; for throughput (ops/s) higher is better,
and the target says which way it points.
"""
import sys

# A metric written by several processes (the alternating memshard / libmemcached rounds) is
# the median of its values.
vals = {}
for line in open(sys.argv[1]):
    k, _, v = line.rstrip("\n").partition("\t")
    if v:
        vals.setdefault(k, []).append(float(v))
m = {k: sorted(v)[len(v) // 2] for k, v in vals.items()}
checks_agree = all(len(set(v)) == 1 for k, v in vals.items() if k.startswith("check."))

rows = []


def row(what, ms_key, peer_name, peer_key, unit="ns", target=None, note="", cpu=False):
    """target: (op, bound) with op '<=' / '<' / '>=' on the ratio. cpu: an I/O row, whose
    metrics come with `<key>.cpu` (client CPU ns per op)."""
    a, b = m.get(ms_key), m.get(peer_key)
    ratio = a / b if a is not None and b else None
    met = "—"
    if target and ratio is not None:
        op, bound = target
        ok = {"<=": ratio <= bound, "<": ratio < bound, ">=": ratio >= bound}[op]
        met = "met" if ok else "NOT met"
    tgt = f"{target[0]} {target[1]:.2f}×" if target else "—"
    cols = None
    if cpu:
        ca, cb = m.get(ms_key + ".cpu"), m.get(peer_key + ".cpu")
        cols = (fmt_cpu(ca), fmt_cpu(cb), f"{ca / cb:.2f}" if ca is not None and cb else "n/a")
    rows.append((what, fmt(a, unit), f"{peer_name}: {fmt(b, unit)}",
                 f"{ratio:.2f}" if ratio is not None else "n/a", tgt, met, note, cols))


def fmt_cpu(v):
    """CPU ns per op, shown in µs."""
    return "n/a" if v is None else f"{v / 1e3:.1f}"


def fmt(v, unit):
    if v is None:
        return "n/a"
    if unit == "ns":
        if v >= 1e6:
            return f"{v / 1e6:.2f} ms"
        if v >= 1e4:
            return f"{v / 1e3:.1f} µs"
        return f"{v:.0f} ns"
    return f"{v:,.0f} ops/s"


# --- routing, no network --------------------------------------------------------------------
for n in (10, 100):
    ok = checks_agree and m.get(f"check.{n}.memshard") == m.get(f"check.{n}.libmemcached")
    row(f"route ns/key, {n} servers weighted", f"route.{n}.memshard", "libmemcached",
        f"route.{n}.libmemcached", target=("<=", 0.7),
        note="every key routed as libmemcached does" if ok else "PLACEMENT DIFFERS from libmemcached")
row("route ns/key, 1000 servers weighted", "route.1000.memshard", "libmemcached",
    "route.1000.libmemcached", note="libmemcached aborts above 100 servers")
for n in (10, 100, 1000):
    row(f"route ns/key, {n} servers equal weights", f"route_eq.{n}.memshard", "ketama crate",
        f"route_eq.{n}.ketama",
        note=f"ketama crate places {m.get(f'agree.{n}.ketama', float('nan')):.2f}% of keys as memshard/libmemcached")
for n in (10, 100):
    row(f"continuum build, {n} servers weighted", f"build.{n}.memshard", "libmemcached",
        f"build.{n}.libmemcached")
row("continuum build, 1000 servers (memshard) vs libmemcached's largest (100)",
    "build.1000.memshard", "libmemcached 100", "build.100.libmemcached", target=("<", 1.0))
for n in (10, 100, 1000):
    row(f"continuum build, {n} servers equal weights", f"build_eq.{n}.memshard", "ketama crate",
        f"build_eq.{n}.ketama")

if "ring_scale.route.10000" in m:
    row("route ns/key, 10,000 servers (1.6 M points) vs 1,000 (`ring-scale`)",
        "ring_scale.route.10000", "1,000 servers", "ring_scale.route.1000", target=("<=", 1.5),
        note="lookup: a bucket index sized to the points, one bucket searched")
    row("route ns/key, 1,000 servers vs 100 (`ring-scale`)",
        "ring_scale.route.1000", "100 servers", "ring_scale.route.100")
    for n in (100, 1000, 10000):
        pts, byts = m.get(f"ring_scale.points.{n}"), m.get(f"ring_scale.bytes.{n}")
        row(f"continuum build, {n:,} servers (`ring-scale`)", f"ring_scale.build.{n}", "—", "none",
            note=(f"{pts:,.0f} points, {byts:,.0f} bytes of continuum per server"
                  if pts is not None and byts is not None else ""))

# --- client I/O ------------------------------------------------------------------------------
found = m.get("pylibmc.found")


def io_row(*args, **kw):
    row(*args, cpu=True, **kw)


io_row("get, 4 servers 3/1/2/1", "get.memshard", "raw socket", "get.raw", target=("<=", 1.05),
       note="raw: owner precomputed, request bytes prebuilt")
io_row("get, 4 servers 3/1/2/1", "get.memshard", "pylibmc", "pylibmc.get",
       note=f"pylibmc found {found:.0f}/1000 keys memshard wrote" if found is not None else "")
io_row("get, 1 server", "get1.memshard", "memcache crate", "get1.memcache", note="memcache crate 0.21, ascii")
io_row("set, 4 servers 3/1/2/1", "set.memshard", "raw socket", "set.raw")
io_row("set, 4 servers 3/1/2/1", "set.memshard", "pylibmc", "pylibmc.set")
io_row("set, 1 server", "set1.memshard", "memcache crate", "set1.memcache")
io_row("get_multi 100 keys / 4 servers", "get_multi.memshard", "memshard single get", "get.memshard",
       target=("<=", 2.5))
io_row("get_multi 100 keys / 4 servers", "get_multi.memshard", "pylibmc", "pylibmc.get_multi",
       target=("<=", 0.6))
io_row("get_multi 100 keys / 4 servers", "get_multi.memshard", "raw socket", "get_multi.raw",
       target=("<=", 1.1), note="raw: one pipelined get per server, all sent then all read, one thread")
io_row("get_multi 100 keys / 4 servers", "get_multi.memshard", "memcache crate", "get_multi.memcache",
       note="memcache crate gets: its own hash, servers one after another")
io_row("get_multi 100 keys / 1 server", "get_multi1.memshard", "raw socket", "get_multi1.raw",
       target=("<=", 1.1), note="raw: one `get k1 .. k100` on one socket")
io_row("get_multi 100 keys / 1 server", "get_multi1.memshard", "memcache crate", "get_multi1.memcache")
io_row("2-thread throughput, 90% get / 10% set", "tput2.memshard", "pylibmc", "pylibmc.tput2",
       unit="ops", target=(">=", 1.1), note="pylibmc: one clone per thread")
io_row("2-thread throughput, 90% get / 10% set", "tput2.memshard", "memcache crate", "tput2.memcache",
       unit="ops", target=(">=", 1.0), note="memcache crate: its own hash over the 4 servers, pool 2")


def table(head, rows):
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" for _ in head) + "|")
    for r in rows:
        print("| " + " | ".join(r) + " |")


table(("measurement", "memshard", "peer", "ratio", "target", "met?", "note"),
      [r[:7] for r in rows if r[7] is None])
print()
print("Client I/O. CPU µs/op: the client's CPU time (user + system, from getrusage) per operation,")
print("of the measuring thread for one-thread rows, of the whole process for the 2-thread rows; for")
print("pylibmc it includes the Python interpreter's. It moves less than the wall-clock time when")
print("other work shares the cores. CPU ratio = memshard / peer.")
print()
table(("measurement", "memshard", "peer", "ratio", "CPU µs/op memshard", "CPU µs/op peer",
       "CPU ratio", "target", "met?", "note"),
      [r[:4] + r[7] + r[4:7] for r in rows if r[7] is not None])
print()
met = sum(r[5] == "met" for r in rows)
missed = [r[0] + " vs " + r[2].split(":")[0] for r in rows if r[5] == "NOT met"]
print()
print(f"targets met: {met} of {met + len(missed)}" + ("; not met: " + "; ".join(missed) if missed else ""))
print()
print("Notes on the peers (why some peer figures look the way they do):")
print("- libmemcached: `memcached_generate_hash` is its routing call (md5 key hash + continuum search);")
print("  its build is `memcached_server_push` onto a KETAMA_WEIGHTED handle. It asserts and aborts above")
print("  100 weighted servers (`memcached_server_count * MEMCACHED_POINTS_PER_SERVER <= MEMCACHED_CONTINUUM_SIZE`),")
print("  hence no 1000-server libmemcached figure. Both sides also print a weighted sum of the server index")
print("  of all 10,000 keys; the route rows say whether they agree.")
print("- ketama crate (0.0.2): equal weights only (its weights multiply points, unlike libmemcached's share),")
print("  always 160 points per server; libmemcached computes the share in float, so at 100 equal servers it")
print("  gives 39 digests (156 points) per server, hence the crate's < 100 % agreement there.")
print("- memcache crate (0.21, `?protocol=ascii`): its r2d2 pool validates every checkout with a `version`")
print("  round trip and writes a request in several `send` calls, so each get/set costs two round trips.")
print("  It shards with its own hash (`DefaultHasher % n`), so single get/set is compared on one server.")
print("- pylibmc: one `clone()` per thread for the throughput run (a pylibmc client is not thread-safe).")

# --- the goals of the performance pass, each row with its goal ------------------------------


def goal_row(what, parts, note=""):
    """parts: (label, ratio or None, op, bound) each; the row is met when every part is."""
    shown, met = [], True
    for label, ratio, op, bound in parts:
        if ratio is None:
            shown.append(f"{label} n/a")
            met = False
            continue
        ok = {"<=": ratio <= bound, ">=": ratio >= bound}[op]
        met = met and ok
        # counts (instructions, allocations) are shown as counts, ratios with two decimals
        if bound >= 2:
            shown.append(f"{label} {ratio:,.0f} ({op} {bound:,.0f})")
        else:
            shown.append(f"{label} {ratio:.2f} ({op} {bound:.2f})")
    return (what, "; ".join(shown), "met" if met else "NOT met", note)


def r(a, b):
    a, b = m.get(a), m.get(b)
    return a / b if a is not None and b else None


goals = [
    goal_row("get_multi 100 keys / 4 servers vs raw pipelined loop",
             [("wall", r("get_multi.memshard", "get_multi.raw"), "<=", 1.10),
              ("CPU", r("get_multi.memshard.cpu", "get_multi.raw.cpu"), "<=", 1.25)]),
    goal_row("get_multi 100 keys / 4 servers, user-space instructions per key",
             [("instructions", m.get("get_multi.instr.key"), "<=", 900)],
             note="callgrind, examples/multiget_profile" if "get_multi.instr.key" in m
             else "n/a without valgrind"),
    goal_row("get_multi 100 keys / 4 servers, allocations with a metrics recorder vs without",
             [("more allocations",
               m["allocs.metrics"] - m["allocs.plain"]
               if "allocs.metrics" in m and "allocs.plain" in m else None, "<=", 2)],
             note=f"{m.get('allocs.metrics', 0):.0f} with the Prometheus recorder, "
                  f"{m.get('allocs.plain', 0):.0f} without (tests/allocations_live.rs)"),
    goal_row("route ns/key, 10 servers weighted vs libmemcached",
             [("ns/key", r("route.10.memshard", "route.10.libmemcached"), "<=", 0.65)]),
    goal_row("get_multi 100 keys / 1 server vs raw `get k1..k100`",
             [("wall", r("get_multi1.memshard", "get_multi1.raw"), "<=", 1.05),
              ("CPU", r("get_multi1.memshard.cpu", "get_multi1.raw.cpu"), "<=", 1.25)]),
    goal_row("async get vs async-memcached, one server",
             [("instructions", r("aio.instr.memshard", "aio.instr.async_memcached"), "<=", 1.00),
              ("wall", r("aio.get.memshard", "aio.get.async_memcached"), "<=", 1.00)],
             note="instructions: callgrind, user space, tokio included"
             + (f" ({m['aio.instr.memshard']:,.0f} vs {m['aio.instr.async_memcached']:,.0f} a get)"
                if "aio.instr.memshard" in m and "aio.instr.async_memcached" in m else
                ", n/a without valgrind")),
    goal_row("single get vs raw socket loop (4 servers)",
             [("wall", r("get.memshard", "get.raw"), "<=", 1.05)]),
    goal_row("64 threads, default settings, vs raw loop",
             [("p99", r("scale.64.memshard.p99", "scale.64.raw.p99"), "<=", 1.20),
              ("ops/s", r("scale.64.memshard.tput", "scale.64.raw.tput"), ">=", 1.00)]),
    goal_row("1,000 async tasks, default settings, vs raw tokio loop",
             [("p99", r("tasks.1000.memshard.p99", "tasks.1000.raw.p99"), "<=", 1.20)],
             note=(f"p99 {fmt(m.get('tasks.1000.memshard.p99'), 'ns')} vs "
                   f"{fmt(m.get('tasks.1000.raw.p99'), 'ns')}; ops/s "
                   f"{m.get('tasks.1000.memshard.tput', 0):,.0f} vs {m.get('tasks.1000.raw.tput', 0):,.0f}")),
    goal_row("route at 10,000 servers vs 1,000",
             [("ns/key", r("ring_scale.route.10000", "ring_scale.route.1000"), "<=", 1.50)]),
]
print()
print("Goals of this pass (ratios memshard / the other; each row met when every part is):")
print()
table(("row", "ratios (goal)", "met?", "note"), goals)
print()
print(f"goals met: {sum(g[2] == 'met' for g in goals)} of {len(goals)}")

# --- thread scaling: one shared memshard client vs a raw loop and pylibmc ------------------
threads = sorted({int(k.split(".")[1]) for k in m if k.startswith("scale.")})
if threads:
    who = ("memshard", "raw", "pylibmc")
    print()
    print("Thread scaling: one shared memshard `Client` (blocking, its default pool of 64 connections per")
    print("server) driven by N threads, 90 % get / 10 % set over the 4 servers, each thread cycling through")
    print("the 1,000 keys; raw: a blocking socket loop with its own 4 sockets per thread (no pool: the")
    print("floor); pylibmc: one clone per thread (its own connections, under the GIL). ops/s and p99 of")
    print("one operation's latency over all threads; CPU µs/op: the process's CPU time (user + system)")
    print("per operation. Median of 5 runs of 300 ms, each after a 100 ms warm-up. The last row: memshard")
    print("with `pool_size(8)`, so threads wait for a connection (raw and pylibmc as in the row above).")
    print()
    head = (["threads"] + [f"{w} ops/s" for w in who] + [f"{w} p99" for w in who]
            + [f"{w} CPU µs/op" for w in who] + ["CPU memshard / raw", "CPU memshard / pylibmc"])
    out = []
    lines = [(str(n), n, "memshard") for n in threads]
    if any(k.startswith("scale.64.memshard_pool8.") for k in m):
        lines.append(("64, memshard pool 8", 64, "memshard_pool8"))
    for label, n, ms in lines:
        g = lambda w, f: m.get(f"scale.{n}.{ms if w == 'memshard' else w}.{f}")
        ratio = lambda a, b: f"{a / b:.2f}" if a is not None and b else "n/a"
        out.append([label]
                   + [f"{g(w, 'tput'):,.0f}" if g(w, "tput") is not None else "n/a" for w in who]
                   + [fmt(g(w, "p99"), "ns") for w in who]
                   + [fmt_cpu(g(w, "cpu")) for w in who]
                   + [ratio(g("memshard", "cpu"), g("raw", "cpu")),
                      ratio(g("memshard", "cpu"), g("pylibmc", "cpu"))])
    table(head, out)

# --- TLS: memshard against itself ------------------------------------------------------------
tls_rows = [
    ("get (hit, 100 B)", "tls.get.plain", "tls.get.tls"),
    ("set (100 B)", "tls.set.plain", "tls.set.tls"),
    ("get_multi, 100 keys of 100 B", "tls.get_multi.plain", "tls.get_multi.tls"),
    ("new client + first get, resumed handshake", "tls.connect_resumed.plain",
     "tls.connect_resumed.tls"),
    ("new client + first get, full handshake", "tls.connect_full.plain", "tls.connect_full.tls"),
    ("async client get (hit, 100 B)", "tls.aio_get.plain", "tls.aio_get.tls"),
]
if any(k.startswith("tls.") for k in m):
    print()
    cpu = m.get("tls.cpu")
    print("TLS: memshard over TLS / memshard over plaintext, one memcached each"
          + (f", servers and client pinned to CPU {cpu:.0f}" if cpu is not None else "")
          + ". The connect rows build a new client per call and time its first get; \"resumed\": its")
    print("TlsConfig is a clone of one whose session cache already holds tickets for the server.")
    print()
    print("| measurement | plaintext | TLS | TLS / plaintext |")
    print("|---|---|---|---|")
    for what, p, t in tls_rows:
        pa, tb = m.get(p), m.get(t)
        if pa is None or tb is None:
            continue
        print(f"| {what} | {fmt(pa, 'ns')} | {fmt(tb, 'ns')} | {tb / pa:.2f} |")
    r, f = m.get("tls.connect_resumed.tls"), m.get("tls.connect_full.tls")
    if r and f:
        print()
        print(f"connect over TLS, resumed / full handshake: {r / f:.2f} (below 1 only when a new client"
              " resumes a session that its TlsConfig's earlier clients got)")

# --- meta: memshard over meta against memshard over text ------------------------------------
meta_rows = [
    ("get (hit, 100 B)", "get"),
    ("set (100 B)", "set"),
    ("get_multi, 100 keys of 100 B over 4 servers", "get_multi"),
    ("async client get (hit, 100 B)", "aio_get"),
    ("async client set (100 B)", "aio_set"),
    ("async client get_multi, 100 keys over 4 servers", "aio_get_multi"),
]
if any(k.startswith("meta.") for k in m):
    print()
    print("Meta: memshard over the meta protocol / memshard over text, the same 4 memcached (weights")
    print("3/1/2/1), clients interleaved in one process.")
    print()
    print("| measurement | text | meta | meta / text |")
    print("|---|---|---|---|")
    for what, key in meta_rows:
        t, me = m.get(f"meta.{key}.text"), m.get(f"meta.{key}.meta")
        if t is None or me is None:
            continue
        print(f"| {what} | {fmt(t, 'ns')} | {fmt(me, 'ns')} | {me / t:.2f} |")
