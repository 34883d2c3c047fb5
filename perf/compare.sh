#!/usr/bin/env bash
# Comparison run: memshard against its peers, in one run, on the same keys and servers.
#
#   perf/compare.sh            # build, measure, print the table
#   perf/compare.sh --write    # ... and write it to perf/RESULTS.md
#
# Routing and continuum build (no network): memshard vs libmemcached's own lookup
# (c/lmc_route.c, memcached_generate_hash / memcached_server_push, KETAMA_WEIGHTED) and the
# ketama crate. Client I/O: 4 memcached servers on free 127.0.0.1 ports, weights 3/1/2/1,
# memshard vs a raw blocking socket, the memcache crate and pylibmc. TLS: memshard over TLS vs
# memshard over plaintext (get, set, get_multi of 100 keys, a new client's first get with a
# resumed and with a full handshake, the async client's get), one memcached each, the TLS one
# (-Z) with a certificate made for the run; its own table of ratios (src/tls.rs). Meta: memshard
# over the meta protocol vs over text (get, set, get_multi of 100 keys, blocking and async
# clients) on the same 4 servers; its own table of meta/text ratios (src/meta.rs). Every I/O
# row also gives each contender's client CPU time per operation (user + system, getrusage of
# the measuring thread, or of the process for threaded rows; src/cpu.rs). Thread scaling: one
# shared memshard client at 1, 2, 8, 64 threads (90 % get / 10 % set) against a raw socket loop
# and pylibmc: ops/s, p99 latency, CPU per op (src/scale.rs). Async (src/aio.rs): a get
# against async-memcached's, by wall time and by instructions (callgrind, when valgrind is
# installed), and 1,000 tasks on one default client against a raw tokio loop. The goals table
# prints each goal of the performance pass with its ratio. Each figure is the median of 5
# repetitions after a warm-up. Needs: cargo, cc, memcached (with TLS),
# libmemcached-dev, taskset, /usr/bin/python3 with python3-pylibmc (Debian); valgrind for the
# instruction counts, strace for the system call counts. Takes about 3 minutes once built (the TLS part about 20 s).
set -euo pipefail
cd "$(dirname "$0")"
export PATH="$PATH:/usr/sbin"

write=0
case "${1:-}" in
    --write) write=1 ;;
    "") ;;
    *) echo "usage: perf/compare.sh [--write]" >&2; exit 2 ;;
esac

for tool in cargo cc memcached taskset /usr/bin/python3; do
    command -v "$tool" >/dev/null || { echo "compare.sh: missing $tool" >&2; exit 1; }
done
/usr/bin/python3 -c 'import pylibmc' 2>/dev/null \
    || { echo "compare.sh: /usr/bin/python3 lacks pylibmc (apt-get install python3-pylibmc)" >&2; exit 1; }

started=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
t0=$SECONDS

echo "building ..." >&2
cargo build --release --quiet
mkdir -p target/c
cc -O2 -Wall -o target/c/lmc_route c/lmc_route.c -lmemcached
bin=target/release/memshard-perf

work=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_up() {
    for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.05; done
    echo "compare.sh: memcached on $1 did not start" >&2; exit 1
}
user=(); [ "$(id -u)" = 0 ] && user=(-u root)

metrics=$work/metrics.tsv
# Weighted routing and build: memshard and libmemcached in separate processes, alternated over
# 5 rounds (one repetition each per round, after a warm-up), so both see the same machine load.
echo "routing: memshard vs libmemcached, 5 alternating rounds ..." >&2
for round in 1 2 3 4 5; do
    if [ $((round % 2)) = 1 ]; then
        target/c/lmc_route 10 100 >> "$metrics"; "$bin" weighted 10 100 1000 >> "$metrics"
    else
        "$bin" weighted 10 100 1000 >> "$metrics"; target/c/lmc_route 10 100 >> "$metrics"
    fi
done
echo "routing: memshard vs ketama crate ..." >&2
"$bin" ketama >> "$metrics"
echo "routing: 100 / 1,000 / 10,000 servers ..." >&2
"$bin" ring-scale >> "$metrics"

ports=()
spec=""
for w in 3 1 2 1; do
    p=$(free_port)
    # -c 4096: the 1,000-task raw loop holds a socket per task to each server
    memcached "${user[@]}" -U 0 -m 64 -t 1 -c 4096 -l 127.0.0.1 -p "$p" >/dev/null 2>&1 &
    pids+=("$!"); ports+=("$p"); spec+="${spec:+,}127.0.0.1:$p:$w"
done
for p in "${ports[@]}"; do wait_up "$p"; done

# memshard, raw socket and the memcache crate interleave inside one process; pylibmc runs in its
# own; the two alternate over 5 rounds, one repetition each per round (after a warm-up).
echo "client I/O: memshard, raw socket, memcache crate | pylibmc, 5 alternating rounds ..." >&2
for round in 1 2 3 4 5; do
    if [ $((round % 2)) = 1 ]; then
        "$bin" io "$spec" 1 >> "$metrics"; /usr/bin/python3 py/pylibmc_bench.py "$spec" 1 >> "$metrics"
    else
        /usr/bin/python3 py/pylibmc_bench.py "$spec" 1 >> "$metrics"; "$bin" io "$spec" 1 >> "$metrics"
    fi
done

# Thread scaling: one shared memshard client (and a raw socket loop, sockets per thread) in one
# process, pylibmc (a clone per thread) in its own, 1/2/8/64 threads, alternating as above.
echo "thread scaling: memshard, raw socket | pylibmc at 1, 2, 8, 64 threads, 5 alternating rounds ..." >&2
for round in 1 2 3 4 5; do
    if [ $((round % 2)) = 1 ]; then
        "$bin" scale "$spec" 1 >> "$metrics"; /usr/bin/python3 py/pylibmc_bench.py "$spec" 1 scale >> "$metrics"
    else
        /usr/bin/python3 py/pylibmc_bench.py "$spec" 1 scale >> "$metrics"; "$bin" scale "$spec" 1 >> "$metrics"
    fi
done

# The async client: a get against async-memcached's (wall, interleaved in one process), and
# 1,000 tasks on one default client against a raw tokio loop (src/aio.rs).
echo "async: memshard vs async-memcached, 1,000 tasks vs a raw tokio loop, 5 repetitions ..." >&2
"$bin" aio "$spec" >> "$metrics"
# Instructions per async get, tokio included: callgrind's total at 2,500 gets minus at 500.
if command -v valgrind >/dev/null; then
    echo "async: instructions per get under callgrind ..." >&2
    for who in memshard async-memcached; do
        for n in 500 2500; do
            valgrind --tool=callgrind --callgrind-out-file="$work/cg.$who.$n" \
                "$bin" aio-calls "127.0.0.1:${ports[0]}" "$who" "$n" >/dev/null 2>&1
        done
        total() { sed -n 's/^summary: //p' "$work/cg.$who.$1"; }
        echo "aio.instr.${who//-/_}	$(( ($(total 2500) - $(total 500)) / 2000 ))" >> "$metrics"
    done
else
    echo "compare.sh: no valgrind, so no instruction counts (apt-get install valgrind)" >&2
fi

# User-space instructions per key of a get_multi of 100 keys over the 4 servers (memshard's
# examples/multiget_profile): callgrind's total at 500 calls minus at 100, per call, per key.
# Counted, not timed: the same on a busy machine as on an idle one.
(cd .. && cargo build --release --quiet --example multiget_profile)
profile_args=()
for i in 0 1 2 3; do profile_args+=("127.0.0.1:${ports[$i]} $(echo 3 1 2 1 | cut -d' ' -f$((i + 1)))"); done
if command -v valgrind >/dev/null; then
    echo "get_multi: instructions per key under callgrind ..." >&2
    for n in 100 500; do
        ROUNDS=$n valgrind --tool=callgrind --callgrind-out-file="$work/cg.multi.$n" \
            ../target/release/examples/multiget_profile "${profile_args[@]}" >/dev/null 2>&1
    done
    multi() { sed -n 's/^summary: //p' "$work/cg.multi.$1"; }
    echo "get_multi.instr.key	$(( ($(multi 500) - $(multi 100)) / 400 / 100 ))" >> "$metrics"
    # Where those instructions go, function by function, and the same for one server's
    # multi-get and a single get over the 4 (the goals not met are reported with these).
    for n in 100 500; do
        ROUNDS=$n valgrind --tool=callgrind --callgrind-out-file="$work/cg.multi1.$n" \
            ../target/release/examples/multiget_profile "127.0.0.1:${ports[0]}" >/dev/null 2>&1
    done
    for n in 1000 5000; do
        MODE=get ROUNDS=$n valgrind --tool=callgrind --callgrind-out-file="$work/cg.get.$n" \
            ../target/release/examples/multiget_profile "${profile_args[@]}" >/dev/null 2>&1
    done
    /usr/bin/python3 py/cg_functions.py "$work/cg.multi.100" "$work/cg.multi.500" 40000 > "$work/where.multi4.md"
    /usr/bin/python3 py/cg_functions.py "$work/cg.multi1.100" "$work/cg.multi1.500" 40000 > "$work/where.multi1.md"
    /usr/bin/python3 py/cg_functions.py "$work/cg.get.1000" "$work/cg.get.5000" 4000 > "$work/where.get.md"
    /usr/bin/python3 py/cg_functions.py "$work/cg.memshard.500" "$work/cg.memshard.2500" 2000 > "$work/where.aio.md"
    /usr/bin/python3 py/cg_functions.py "$work/cg.async-memcached.500" "$work/cg.async-memcached.2500" 2000 > "$work/where.aio_peer.md"
fi
# System calls per call, by name (strace): what the client asks of the kernel besides the
# raw loops' one send and one read per server.
if command -v strace >/dev/null; then
    echo "system calls per call under strace ..." >&2
    /usr/bin/python3 py/syscalls.py 200 1200 ../target/release/examples/multiget_profile "${profile_args[@]}" > "$work/sys.multi4"
    /usr/bin/python3 py/syscalls.py 200 1200 ../target/release/examples/multiget_profile "127.0.0.1:${ports[0]}" > "$work/sys.multi1"
    MODE=get /usr/bin/python3 py/syscalls.py 1000 6000 ../target/release/examples/multiget_profile "${profile_args[@]}" > "$work/sys.get"
    for who in memshard async-memcached; do
        /usr/bin/python3 py/syscalls.py 500 2500 "$bin" aio-calls "127.0.0.1:${ports[0]}" "$who" '{rounds}' > "$work/sys.aio.$who"
    done
else
    echo "compare.sh: no strace, so no system call counts (apt-get install strace)" >&2
fi

# Allocations of a 4-server multi-get of 100 keys with the Prometheus recorder installed and
# without (tests/allocations_live.rs counts them with a counting global allocator).
echo "get_multi: allocations with and without a metrics recorder ..." >&2
# The whole output first, then the first match (`sed -n 1p` reads to the end): `head -1`
# closed the pipe while the test still printed, which failed the test's print and the run.
allocs_out=$(cd .. && CI=1 cargo test --release --quiet --all-features --test allocations_live -- --nocapture 2>&1)
allocs=$(printf '%s\n' "$allocs_out" \
    | sed -n 's/^4 servers, 100 keys: \([0-9]*\) with a recorder, \([0-9]*\) without$/\1 \2/p' | sed -n 1p)
if [ -n "$allocs" ]; then
    echo "allocs.metrics	${allocs% *}" >> "$metrics"
    echo "allocs.plain	${allocs#* }" >> "$metrics"
fi

# Meta vs text: both clients in one process, interleaved, on the same servers.
echo "meta: memshard over meta vs over text, interleaved, 5 repetitions ..." >&2
"$bin" meta "$spec" >> "$metrics"

for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
pids=()

# TLS: both servers and the measuring process on one CPU, taking turns: spread over two
# vCPUs, each round trip also paid for waking the other side's vCPU, which varied by tens of
# µs between runs and swamped what TLS costs.
echo "TLS: memshard over TLS vs over plaintext, interleaved, 5 repetitions ..." >&2
cpu=$(taskset -pc $$ | sed 's/.*: //' | tr ',' '\n' | tail -1 | sed 's/.*-//')
"$bin" tls-certs "$work/tls"
plain_port=$(free_port)
taskset -c "$cpu" memcached "${user[@]}" -U 0 -m 64 -t 1 -l 127.0.0.1 -p "$plain_port" >/dev/null 2>&1 &
pids+=("$!")
tls_port=$(free_port)
taskset -c "$cpu" memcached "${user[@]}" -U 0 -m 64 -t 1 -l 127.0.0.1 -p "$tls_port" -Z \
    -o "ssl_chain_cert=$work/tls/server.pem,ssl_key=$work/tls/server.key" >/dev/null 2>&1 &
pids+=("$!")
wait_up "$plain_port"; wait_up "$tls_port"
taskset -c "$cpu" "$bin" tls "127.0.0.1:$plain_port" "127.0.0.1:$tls_port" "$work/tls/ca.pem" >> "$metrics"
echo "tls.cpu	$cpu" >> "$metrics"
for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
pids=()

table=$(/usr/bin/python3 py/table.py "$metrics")
elapsed=$((SECONDS - t0))
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
echo "$table"
echo
echo "run: ${elapsed}s including build; load average before ${load_before}, after ${load_after} ($(nproc) cores)"

if [ "$write" = 1 ]; then
    cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')
    {
        echo "# memshard vs its peers: comparison run"
        echo
        echo "- date: $started"
        echo "- machine: nproc $(nproc), ${cpu:-unknown CPU}, $(uname -sr)"
        echo "- command: \`perf/compare.sh --write\` (from the repository root)"
        echo "- peers: libmemcached $(dpkg-query -W -f '${Version}' libmemcached-dev 2>/dev/null || echo '?')" \
             "(C harness \`perf/c/lmc_route.c\`), pylibmc $(/usr/bin/python3 -c 'import pylibmc; print(pylibmc.__version__)')" \
             "(Debian python3-pylibmc), memcache crate $(grep -A1 '^name = "memcache"' Cargo.lock | sed -n 's/version = "\(.*\)"/\1/p'), ketama crate $(grep -A1 '^name = "ketama"' Cargo.lock | sed -n 's/version = "\(.*\)"/\1/p'), memcached $(memcached -V | cut -d' ' -f2)"
        echo "- run time: ${elapsed}s including an incremental build"
        echo "- load average before the run ${load_before}, after ${load_after}: the machine has 2 cores and"
        echo "  other work was running on it during the run (load above 2 means the cores were shared), so"
        echo "  absolute figures are noisy: over trial runs routing ratios stayed within ~10 %, but I/O ratios"
        echo "  (set, get_multi, 2-thread throughput) moved by up to 2x. To keep each comparison"
        echo "  fair under that load, contenders in one process run interleaved (repetition 1 of each, then"
        echo "  2, ...), and the libmemcached (C) and pylibmc (Python) processes alternate with the memshard"
        echo "  process over 5 rounds, one repetition per round."
        echo
        echo "Each figure is the median of 5 repetitions, each after a warm-up; inputs (keys, server"
        echo "lists, request bytes) are made outside the timed loops. ratio = memshard / peer: for times"
        echo "lower is better, for throughput (ops/s) higher is better; the target column says which."
        echo "Keys are \`user:<i>\`. Routing servers: \`127.0.<i/250>.<1+i%250>:11211\`, weight \`1+(i*7)%5\`"
        echo "(no connection is made); I/O: 4 memcached (\`-t 1\`) on 127.0.0.1 with weights 3/1/2/1, 32-byte"
        echo "values, text protocol for every client. TLS (last table): memshard against itself, one plaintext"
        echo "and one \`-Z\` memcached (\`-t 1\`, memcached's TLS defaults), a certificate for 127.0.0.1 made for"
        echo "the run (rcgen, ECDSA P-256), rustls $(grep -A1 '^name = "rustls"' Cargo.lock | sed -n 's/version = "\(.*\)"/\1/p') with ring, both"
        echo "servers and the measuring process pinned to one CPU."
        echo
        echo "$table"
        echo
        /usr/bin/python3 py/left.py "$work"
        if command -v perf >/dev/null; then
            echo
            bash profile.sh
            echo
            echo "Reading it: nearly all of a single get's CPU is the kernel's (a loopback send runs the"
            echo "server side's TCP receive in the sender's system call, then the reply is waited for), so"
            echo "a client can only save its own system calls: memshard makes one more than the raw loop"
            echo "per checkout (the idle check's non-blocking peek, which keeps a connection with stray"
            echo "bytes or closed by the server out of use). A 100-key get_multi spends part of its"
            echo "CPU (the share above) in user space: hashing the keys (md5, 8 at a time with AVX2, else 4) and parsing the replies (values"
            echo "are slices of the read buffer, not copies); the raw loop does neither (its owners and"
            echo "requests are precomputed and it does not parse values). The rest of the CPU gap is"
            echo "the idle check's system call (\"What is left\" above counts them)."
        fi
    } > RESULTS.md
    echo "wrote perf/RESULTS.md" >&2
fi
