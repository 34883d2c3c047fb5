#!/usr/bin/env bash
# Where the time goes: `perf record` of memshard's single get and of get_multi (100 keys over
# 4 memcached, weights 3/1/2/1, 32-byte values), summarised as the share of the client's CPU
# samples in the kernel, in memshard and in libc, the kernel's share by system call, and the
# hottest user-space functions. Prints Markdown (perf/compare.sh --write appends it to
# RESULTS.md). Needs perf (linux-perf) and permission to record (root, or
# kernel.perf_event_paranoid <= 1).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/sbin"
command -v perf >/dev/null || { echo "profile.sh: perf is not installed" >&2; exit 1; }

echo "profile: building the profile target ..." >&2
CARGO_PROFILE_RELEASE_DEBUG=line-tables-only cargo build --release --quiet --example multiget_profile
bin=target/release/examples/multiget_profile

work=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
user=(); [ "$(id -u)" = 0 ] && user=(-u root)
servers=()
for w in 3 1 2 1; do
    p=$(free_port)
    memcached "${user[@]}" -U 0 -m 64 -t 1 -l 127.0.0.1 -p "$p" >/dev/null 2>&1 &
    pids+=("$!")
    servers+=("127.0.0.1:$p $w")
    for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && break; sleep 0.05; done
done

profile() { # mode rounds
    local data=$work/$1.data
    MODE=$1 ROUNDS=$2 perf record -q -F 5000 -g -o "$data" "$bin" "${servers[@]}" >/dev/null 2>&1
    local report="perf report -i $data --stdio --no-children"
    echo
    echo "**$1** ($2 calls): share of the client process's CPU samples"
    echo
    echo "| where | share |"
    echo "|---|---|"
    $report --sort dso 2>/dev/null | awk '/^ +[0-9.]+%/ {
        name = $2; if (name ~ /kernel/) name = "kernel (system calls, loopback TCP, scheduling)";
        else if (name ~ /multiget_profile/) name = "memshard (user space)";
        printf "| %s | %s |\n", name, $1 }' | head -4
    echo
    echo "Kernel time by system call (samples under each, children included):"
    echo
    perf report -i "$data" --stdio --children --sort symbol -g none 2>/dev/null \
        | awk '/^ +[0-9.]+% +[0-9.]+% +\[k\] __x64_sys_/ && $1 + 0 >= 0.5 { printf "- `%s`: %s of the samples\n", $4, $1 }' \
        | head -6
    echo
    echo "Hottest user-space functions (self):"
    echo
    $report --sort symbol --percent-limit 0.5 2>/dev/null \
        | awk '/^ +[0-9.]+% +\[\.\]/ { pct = $1; $1 = ""; $2 = ""; sub(/^ +/, ""); sub(/ +- +- *$/, ""); printf "- %s `%s`\n", pct, $0 }' \
        | head -10
}

echo "## Where the time goes"
echo
echo "\`perf/profile.sh\`: \`perf record -g\` of \`examples/multiget_profile.rs\` against 4 local memcached,"
echo "on $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at the start."
profile get 50000
profile get_multi 20000
