#!/usr/bin/python3
"""What is left between memshard and the raw loops: Markdown for RESULTS.md.

  left.py WORK

WORK is compare.sh's work directory: metrics.tsv, the function tables cg_functions.py wrote
(where.*.md) and the system call counts syscalls.py wrote (sys.*). A part whose files are
missing (no valgrind, no strace) says so.
"""
import os
import sys

work = sys.argv[1]
vals = {}
for line in open(os.path.join(work, "metrics.tsv")):
    k, _, v = line.rstrip("\n").partition("\t")
    if v:
        vals.setdefault(k, []).append(float(v))
m = {k: sorted(v)[len(v) // 2] for k, v in vals.items()}


def text(name):
    """A file of the work directory, or None."""
    path = os.path.join(work, name)
    return open(path).read().strip() if os.path.exists(path) else None


def calls(name):
    """`sendto 4.00, recvfrom 4.00, poll 1.00: 9.00 a call` from a syscalls.py output."""
    t = text(name)
    if not t:
        return "not counted (no strace)"
    pairs = [line.split() for line in t.splitlines()]
    named = ", ".join(f"`{n}` {float(c):.2f}" for n, c in pairs if n != "total")
    total = next((float(c) for n, c in pairs if n == "total"), 0.0)
    return f"{named}: **{total:.2f}**"


def table(name, unit):
    t = text(name)
    return t.replace("per unit", unit) if t else "(not counted: no valgrind)"


def us(key):
    v = m.get(key)
    return f"{v / 1000:.1f} µs" if v is not None else "n/a"


def budget(mine, raw, ratio):
    """What a CPU goal of `ratio` leaves for the client's own work, beside the raw loop's."""
    if mine not in m or raw not in m:
        return "n/a"
    return (f"{ratio:.2f} × {m[raw] / 1000:.1f} µs leaves {(ratio - 1) * m[raw] / 1000:.1f} µs a "
            f"call for all of the client's own work; it spends {(m[mine] - m[raw]) / 1000:.1f} µs")


def rows(name):
    """(function, instructions) of a cg_functions.py table, and its total."""
    t = text(name) or ""
    found, total = [], None
    for line in t.splitlines():
        cells = [c.strip().strip("`*") for c in line.strip("|").split("|")]
        if len(cells) < 2 or not cells[1].replace(",", "").replace(".", "").isdigit():
            continue
        v = float(cells[1].replace(",", ""))
        if cells[0] == "total":
            total = v
        else:
            found.append((cells[0], v))
    return found, total


def floor(name, mine, raw, ratio, what="md5 and the parse alone are"):
    """What md5 and the parse alone would take of a CPU budget, at the rate the whole ran."""
    found, total = rows(name)
    if not total or mine not in m or raw not in m:
        return ""
    core = sum(v for f, v in found if "md5" in f or "route_each" in f or "Retrieve" in f)
    rate = (m[mine] - m[raw]) / total  # ns of the client's own CPU per instruction a key
    return (f" {what} {core:,.0f} of the {total:,.0f} instructions a key; at"
            f" the rate of the whole, ~{core * rate / 1000:.1f} µs a call, against the"
            f" {(ratio - 1) * m[raw] / 1000:.1f} µs the goal leaves.")


print("## What is left, goal by goal")
print()
print("Counted, not timed, so the same on a busy machine: each function's own user-space")
print("instructions (callgrind: a run of many calls minus a shorter run, per call or per key) and")
print("the system calls of one call (strace, the same difference). The raw loops make one send")
print("and one read per server, with their owners precomputed, their requests prebuilt and their")
print("values not parsed; async-memcached makes no idle check.")
print()
print("### get_multi, 100 keys over 4 servers (wall, CPU)")
print()
print(f"System calls a call: {calls('sys.multi4')}; the raw loop's: 8. The one more is the idle")
print("check: one `poll()` over the call's four connections, which keeps a connection the server")
print("closed, or with stray bytes, out of use.")
print()
print(f"CPU: {budget('get_multi.memshard.cpu', 'get_multi.raw.cpu', 1.25)}.")
print()
print(table("where.multi4.md", "instructions a key"))
print()
print("What they are: md5 of every key (`md5x8`'s two rows and part of `route_each`, eight keys")
print("at a time with AVX2), the one thing placement cannot skip; each reply's `VALUE` lines parsed")
print("and matched to the keys asked (`Retrieve::step`); each value made a slice of the read buffer")
print("(`Chain::fold` is `Retrieve::settle`; `shared_v_clone` and `shared_v_drop` are the atomic")
print("count of the buffer each value shares); values moved to input order (`Batch::land`, 88 bytes")
print("a result); keys checked and counted by server (`Core::group`); the requests written")
print("(`encode_retrieval`); the allocator (25 allocations a call, the Prometheus row above).")
print()
print("What would remove the rest, and what it costs: hashing, the key check, the parse and the")
print("idle check stay (the goals forbid skipping them). Values handed out as offsets into one")
print("buffer per server instead of a `Bytes` each would save the atomic pair and most of")
print("`settle` (~70 a key), at the price of changing the public `Item`; a result smaller than 88")
print("bytes (a boxed `Error`, also public) would shorten `land`'s moves. Neither reaches the CPU")
print("goal:" + floor("where.multi4.md", "get_multi.memshard.cpu", "get_multi.raw.cpu", 1.25))
print()
print("### get_multi, 100 keys over 1 server (wall, CPU)")
print()
print(f"System calls a call: {calls('sys.multi1')}; the raw loop's: 2 (the one more: the idle")
print("check's `poll()`).")
print()
print(f"CPU: {budget('get_multi1.memshard.cpu', 'get_multi1.raw.cpu', 1.25)}.")
print()
print(table("where.multi1.md", "instructions a key"))
print()
print("No key is hashed here (one server), so this is the parse, the key check and the values'")
print("bookkeeping: the same remedies as above, with the same limits; the idle check's system")
print("call is a third more than the raw loop's two."
      + floor("where.multi1.md", "get_multi1.memshard.cpu", "get_multi1.raw.cpu", 1.25,
              "The parse alone (which puts each value in its slot) is"))
print()
print("### Single get, 64 threads of single gets, and the async get (wall)")
print()
print(f"A single get's wall ratio (get.memshard / get.raw: "
      f"{m['get.memshard'] / m['get.raw']:.2f} in this run) sits within a few percent of 1 and moves"
      if m.get("get.memshard") and m.get("get.raw") else "A single get's wall ratio sits within a few percent of 1 and moves")
print("across its 1.05 goal from run to run; what it pays beyond the raw loop is what follows.")
print()
print(f"System calls a blocking get: {calls('sys.get')}; the raw loop's: 2. The one more is the")
print("idle check's non-blocking peek (`recvfrom` with `MSG_PEEK`). The async get makes the same")
print(f"one more than async-memcached (`memshard-perf aio-calls`): {calls('sys.aio.memshard')} a get,")
print(f"against {calls('sys.aio.async-memcached')}; which is why its wall time stays near")
print("async-memcached's while its instructions are fewer.")
print()
print("A blocking get's own instructions (4 servers):")
print()
print(table("where.get.md", "instructions a get"))
print()
print("The async get's, tokio included (memshard, then async-memcached):")
print()
print(table("where.aio.md", "instructions a get"))
print()
print(table("where.aio_peer.md", "instructions a get"))
print()
def cpu_ratio(threads):
    a, b = m.get(f"scale.{threads}.memshard.cpu"), m.get(f"scale.{threads}.raw.cpu")
    return f"{a / b:.2f}" if a and b else "n/a"


_, get_total = rows("where.get.md")
print(f"At 64 threads on 2 cores the loop is CPU-bound: ops/s follow CPU per operation (memshard "
      f"{us('scale.64.memshard.cpu')}, raw {us('scale.64.raw.cpu')}). The raw loop has a socket per")
print("thread and server, no pool, no idle check, its owners precomputed and its replies not")
print(f"parsed. memshard's CPU per operation is {cpu_ratio(1)}× the raw loop's at 1 thread and "
      f"{cpu_ratio(64)}× at 64:")
print(f"the first is the idle check's system call and its {get_total or 0:,.0f} user-space instructions a get")
print("(the key's md5 the largest part), the rest most likely the pool's lock shared by 64 threads")
print("(not measured apart). What would")
print("remove it: a pool without a lock (one per CPU, or a lock-free queue) for the second part; the")
print("first is work the goals keep (the hash, the parse, the idle check).")
