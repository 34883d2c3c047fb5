#!/usr/bin/python3
"""pylibmc side of perf/compare.sh (Debian python3-pylibmc, run with /usr/bin/python3).

  pylibmc_bench.py HOST:PORT:WEIGHT,... [REPS] [io|scale]

Same servers, keys (user:<i>, 32-byte values, already written by the Rust side) and operations
as perf/src/main.rs (io, the default) and perf/src/scale.rs (scale). Prints "metric<TAB>value"
lines: ns per op (median of REPS repetitions, default 5, after a warm-up repetition), 2-thread
ops/s, and with each the client CPU time (user + system) per op in ns as "<metric>.cpu": the
measuring thread's (RUSAGE_THREAD) for one-thread loops, the process's for threaded runs. The
CPU time includes the interpreter's: it is what a Python service pays per call. compare.sh runs
it with REPS 1, alternating with `memshard-perf io` / `scale`, 5 times, and takes the medians.
"""
import resource
import sys
import threading
import time

import pylibmc

REPS = int(sys.argv[2]) if len(sys.argv) > 2 else 5
MODE = sys.argv[3] if len(sys.argv) > 3 else "io"
IO_KEYS = 1000
VALUE = b"0123456789abcdef0123456789abcdef"

servers = sys.argv[1].split(",")
mc = pylibmc.Client(servers, behaviors={"ketama_weighted": True, "tcp_nodelay": True})
assert mc.behaviors["ketama_weighted"] == 1, mc.behaviors

keys = [f"user:{i}" for i in range(IO_KEYS)]
batches = [keys[b * 100:b * 100 + 100] for b in range(10)]


# The measuring thread's CPU time for one-thread loops; Linux has RUSAGE_THREAD, elsewhere the
# process's (the loops below run with no other thread alive, so it is the same figure).
RUSAGE_ONE = getattr(resource, "RUSAGE_THREAD", resource.RUSAGE_SELF)


def cpu_ns(who):
    r = resource.getrusage(who)
    return (r.ru_utime + r.ru_stime) * 1e9


def median(v):
    return sorted(v)[len(v) // 2]


def reps(run):
    """One warm-up, REPS repetitions; the median of each figure a repetition returns."""
    run()
    runs = [run() for _ in range(REPS)]
    return [median([r[i] for r in runs]) for i in range(len(runs[0]))]


def per_op(ops, loop):
    """loop() runs `ops` operations: (wall ns, thread CPU ns) per op."""
    c = cpu_ns(RUSAGE_ONE)
    t = time.perf_counter_ns()
    loop()
    wall = time.perf_counter_ns() - t
    return wall / ops, (cpu_ns(RUSAGE_ONE) - c) / ops


def get_rep(ops=3000):
    get = mc.get
    ks = [keys[i % IO_KEYS] for i in range(ops)]

    def loop():
        for k in ks:
            get(k)
    return per_op(ops, loop)


def set_rep(ops=3000):
    set_ = mc.set
    ks = [keys[i % IO_KEYS] for i in range(ops)]

    def loop():
        for k in ks:
            set_(k, VALUE)
    return per_op(ops, loop)


def multi_rep(ops=300):
    gm = mc.get_multi
    bs = [batches[i % 10] for i in range(ops)]

    def loop():
        for b in bs:
            gm(b)
    return per_op(ops, loop)


def threads_rep(threads, dur, offset):
    """`threads` threads, one clone each (a pylibmc client is not thread-safe), 9 gets to 1 set
    for `dur` s; thread t's i-th key is keys[(i * 7 + t * offset) % 1000]. The process CPU time
    and the wall clock are read once all clones are made and again when every thread stopped,
    as run_threads in perf/src/cpu.rs. Returns (ops/s, p99 latency ns, process CPU ns per op)."""
    counts = [0] * threads
    lats = [None] * threads
    ready = threading.Barrier(threads + 1)
    done = threading.Barrier(threads + 1)

    def work(t):
        c = mc.clone()
        get, set_ = c.get, c.set
        ks = [keys[(i * 7 + t * offset) % IO_KEYS] for i in range(IO_KEYS)]
        lat = []
        push = lat.append
        now = time.perf_counter_ns
        ready.wait()
        end = now() + int(dur * 1e9)
        i = 0
        while now() < end:
            for _ in range(16):
                k = ks[i % IO_KEYS]
                t0 = now()
                if i % 10 == 9:
                    set_(k, VALUE)
                else:
                    get(k)
                push(now() - t0)
                i += 1
        done.wait()
        counts[t], lats[t] = i, lat

    ts = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for t in ts:
        t.start()
    ready.wait()
    c, w = cpu_ns(resource.RUSAGE_SELF), time.perf_counter_ns()
    done.wait()
    wall, cpu = time.perf_counter_ns() - w, cpu_ns(resource.RUSAGE_SELF) - c
    for t in ts:
        t.join()
    ops = sum(counts)
    lat = sorted(x for l in lats for x in l)
    return ops / (wall / 1e9), lat[min(len(lat) * 99 // 100, len(lat) - 1)], cpu / ops


def emit(metric, wall, cpu):
    print(f"{metric}\t{wall:.2f}")
    print(f"{metric}.cpu\t{cpu:.2f}")


if MODE == "io":
    # Placement check: the Rust side wrote every key with memshard; pylibmc must find each one.
    found = 0
    for b in batches:
        found += len(mc.get_multi(b))
    print(f"pylibmc.found\t{found}")
    emit("pylibmc.get", *reps(get_rep))
    emit("pylibmc.set", *reps(set_rep))
    emit("pylibmc.get_multi", *reps(multi_rep))
    # the 2-thread row of the I/O table: keys as main.rs's tput2 (offset 500)
    tput, _, cpu = reps(lambda: threads_rep(2, 0.4, 500))
    emit("pylibmc.tput2", tput, cpu)
elif MODE == "scale":
    # as perf/src/scale.rs: THREADS, 300 ms runs after a 100 ms warm-up, key offset 137
    for threads in (1, 2, 8, 64):
        threads_rep(threads, 0.1, 137)
        runs = [threads_rep(threads, 0.3, 137) for _ in range(REPS)]
        for name, i in (("tput", 0), ("p99", 1), ("cpu", 2)):
            print(f"scale.{threads}.pylibmc.{name}\t{median([r[i] for r in runs]):.2f}")
else:
    sys.exit(f"pylibmc_bench.py: unknown mode {MODE!r} (io or scale)")
