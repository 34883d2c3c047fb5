#!/usr/bin/python3
"""pylibmc side of perf/compare.sh (Debian python3-pylibmc, run with /usr/bin/python3).

  pylibmc_bench.py HOST:PORT:WEIGHT,... [REPS]

Same servers, keys (user:<i>, 32-byte values, already written by the Rust side) and operations
as perf/src/main.rs. Prints "metric<TAB>value" lines: ns per op (median of REPS repetitions,
default 5, after a warm-up repetition) and 2-thread ops/s. compare.sh runs it with REPS 1,
alternating with `memshard-perf io`, 5 times, and takes the medians.
"""
import sys
import threading
import time

import pylibmc

REPS = int(sys.argv[2]) if len(sys.argv) > 2 else 5
IO_KEYS = 1000
VALUE = b"0123456789abcdef0123456789abcdef"

servers = sys.argv[1].split(",")
mc = pylibmc.Client(servers, behaviors={"ketama_weighted": True, "tcp_nodelay": True})
assert mc.behaviors["ketama_weighted"] == 1, mc.behaviors

keys = [f"user:{i}" for i in range(IO_KEYS)]
batches = [keys[b * 100:b * 100 + 100] for b in range(10)]

# Placement check: the Rust side wrote every key with memshard; pylibmc must find each one.
found = 0
for b in batches:
    found += len(mc.get_multi(b))
print(f"pylibmc.found\t{found}")


def median(v):
    return sorted(v)[len(v) // 2]


def reps(run):
    run()  # warm-up
    return median([run() for _ in range(REPS)])


def get_rep(ops=3000):
    get = mc.get
    ks = [keys[i % IO_KEYS] for i in range(ops)]
    t = time.perf_counter_ns()
    for k in ks:
        get(k)
    return (time.perf_counter_ns() - t) / ops


def set_rep(ops=3000):
    set_ = mc.set
    ks = [keys[i % IO_KEYS] for i in range(ops)]
    t = time.perf_counter_ns()
    for k in ks:
        set_(k, VALUE)
    return (time.perf_counter_ns() - t) / ops


def multi_rep(ops=300):
    gm = mc.get_multi
    bs = [batches[i % 10] for i in range(ops)]
    t = time.perf_counter_ns()
    for b in bs:
        gm(b)
    return (time.perf_counter_ns() - t) / ops


def tput_rep(threads=2, dur=0.4):
    counts = [0] * threads
    barrier = threading.Barrier(threads)

    def work(t):
        c = mc.clone()  # a pylibmc client is not thread-safe: one per thread
        get, set_ = c.get, c.set
        ks = [keys[(i * 7 + t * 500) % IO_KEYS] for i in range(IO_KEYS * 10)]
        barrier.wait()
        start = time.perf_counter()
        i = 0
        n = len(ks)
        while time.perf_counter() - start < dur:
            for _ in range(16):
                k = ks[i % n]
                if i % 10 == 9:
                    set_(k, VALUE)
                else:
                    get(k)
                i += 1
        counts[t] = i * dur / (time.perf_counter() - start)

    ts = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return sum(counts) / dur


print(f"pylibmc.get\t{reps(get_rep):.2f}")
print(f"pylibmc.set\t{reps(set_rep):.2f}")
print(f"pylibmc.get_multi\t{reps(multi_rep):.2f}")
print(f"pylibmc.tput2\t{reps(tput_rep):.2f}")
