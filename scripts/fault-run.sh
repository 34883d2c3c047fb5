#!/usr/bin/env bash
# Fault run: ONE verified `memshard bench` process over 4 real memcached servers on 127.0.0.1
# while one server is stopped (SIGSTOP, then SIGCONT) and another is killed (SIGKILL, then
# restarted on the same port). The bench keeps running after the faults end, and its last
# seconds (--recover-window) are reported per server. Passes when, in that one process:
#   - no value read was wrong, over the whole run;
#   - the servers without a fault saw few errors: at --timeout-ms 200 a loaded machine (2 cores,
#     a bench of 4 threads and 4 memcacheds) can stall a healthy server's reply past the timeout
#     now and then, so their slow errors (Timeout, Io) are judged against the rate a baseline
#     bench of the same load, without faults, measured just before: at most 3 x (its slow
#     errors + 1), scaled by the fault run's operations over the baseline's. A server marked
#     down by such an error answers ServerDown until its retry timeout: at most one retry
#     timeout (+1 s) of the run's operation rate per slow error. A fault that spills over onto
#     the healthy servers (hundreds of timeouts, or ServerDown without a slow error) fails;
#   - the faulted servers' errors were only the kinds a fault gives (Timeout, ServerDown, Io,
#     and Pool for a connect refused while the killed server was gone), and the slow ones
#     (Timeout, Io, Pool: each waited for a timeout or hit a dead connection) stayed within
#     what marking the server down allows: failure_limit + threads per fault;
#   - in the recover window, after SIGCONT and the restart (and the retry timeout), the faulted
#     servers' keys were served again: operations, hits and checked values on each, 0 errors,
#     0 wrong values (the healthy servers' window errors count in their bound above).
#
#   scripts/fault-run.sh          # 5 s baseline, 30 s run
#   scripts/fault-run.sh --short  # 3 s baseline, 14 s run (CI)
set -euo pipefail
cd "$(dirname "$0")/.."

# seconds from the bench's start; the recover window is the last $window seconds
secs=30; stop_at=5; cont_at=12; kill_at=15; restart_at=20; window=6; base_secs=5
if [ "${1:-}" = "--short" ]; then secs=14; stop_at=2; cont_at=4; kill_at=5; restart_at=6; window=4; base_secs=3; fi
threads=4; failure_limit=1; retry_ms=1000

command -v memcached >/dev/null || { echo "fault-run: memcached is not installed" >&2; exit 1; }
# MEMSHARD_CARGO_PROFILE: the cargo profile to build with (scripts/test.sh: `ci`)
profile=${MEMSHARD_CARGO_PROFILE:-release}
cargo build --profile "$profile" --quiet --bin memshard
bin=target/$profile/memshard
work=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null || true; kill "$p" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

user=(); [ "$(id -u)" = 0 ] && user=(-u root)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# Sets $last to the new server's pid (no command substitution: it would wait on memcached).
start() { memcached "${user[@]}" -U 0 -m 32 -t 2 -l 127.0.0.1 -p "$1" >/dev/null 2>&1 & last=$!; pids+=("$last"); }
wait_up() { for _ in $(seq 200); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.05; done; echo "memcached on $1 did not start" >&2; exit 1; }
now() { date +%s.%N; }
# Sleep until $1 seconds after the bench started (the fault schedule, not a synchronisation).
at() { local d; d=$(awk -v t0="$t0" -v at="$1" -v now="$(now)" 'BEGIN { d = t0 + at - now; print (d > 0 ? d : 0) }'); sleep "$d"; }
since() { awk -v t0="$t0" -v now="$(now)" 'BEGIN { printf "%.2f", now - t0 }'; }

ports=(); mpid=()
for i in 0 1 2 3; do p=$(free_port); ports+=("$p"); start "$p"; mpid+=("$last"); done
for p in "${ports[@]}"; do wait_up "$p"; done
printf '127.0.0.1:%s 1\n' "${ports[@]}" > "$work/servers.txt"
stopped="127.0.0.1:${ports[1]}"; killed="127.0.0.1:${ports[2]}"

bench_args=(bench --servers "$work/servers.txt" --threads "$threads" --keys 4000 --value-size 64
    --get-ratio 0.8 --verify --timeout-ms 200 --failure-limit "$failure_limit"
    --retry-timeout-ms "$retry_ms")
# Baseline: the same load without a fault, for the healthy servers' error bound.
"$bin" "${bench_args[@]}" --seconds "$base_secs" > "$work/base.txt" 2>"$work/base.err" ||
    { echo "FAIL: the baseline bench failed"; cat "$work/base.txt"; tail -5 "$work/base.err"; exit 1; }
grep -q '^wrong values: 0$' "$work/base.txt" || { echo "FAIL: wrong values without a fault"; cat "$work/base.txt"; exit 1; }
base_ops=$(sed -n 's/^ops: \([0-9]*\) .*/\1/p' "$work/base.txt")
base_slow=$({ grep -E '^  127\.0\.0\.1:[0-9]+ (Timeout|Io): ' "$work/base.txt" || true; } | awk '{ n += $3 } END { print n + 0 }')
base_other=$({ grep -E '^  127\.0\.0\.1:[0-9]+ [A-Za-z]+: ' "$work/base.txt" || true; } | grep -v -E ' (Timeout|Io|ServerDown): ' || true)
[ -z "$base_other" ] || { echo "FAIL: errors without a fault of a kind a slow reply does not give:"; echo "$base_other"; exit 1; }
[ "${base_ops:-0}" -gt 0 ] || { echo "FAIL: the baseline bench did no operation"; exit 1; }
echo "baseline: $base_ops ops in ${base_secs} s, $base_slow slow errors (Timeout/Io) without a fault"

t0=$(now)
"$bin" "${bench_args[@]}" --seconds "$secs" --recover-window "$window" \
    > "$work/run.txt" 2>"$work/run.err" &
bench=$!
at "$stop_at"; kill -STOP "${mpid[1]}"; echo "t=$(since)s SIGSTOP $stopped"
at "$cont_at"; kill -CONT "${mpid[1]}"; echo "t=$(since)s SIGCONT $stopped"
at "$kill_at"; kill -KILL "${mpid[2]}"; wait "${mpid[2]}" 2>/dev/null || true; echo "t=$(since)s SIGKILL $killed"
at "$restart_at"; start "${ports[2]}"; mpid[2]=$last; wait_up "${ports[2]}"
faults_over=$(since); echo "t=${faults_over}s restarted $killed"
set +e; wait "$bench"; rc=$?; set -e
cat "$work/run.txt"

fail=0
# The window must begin after the faults ended and a retry timeout passed (the down servers
# are probed once per retry timeout); otherwise this run proves nothing about recovery.
late=$(awk -v over="$faults_over" -v secs="$secs" -v w="$window" -v r="$retry_ms" \
    'BEGIN { print (over + r / 1000 > secs - w) ? 1 : 0 }')
[ "$late" = 0 ] || { echo "FAIL: the faults ended at t=${faults_over}s, too late for a recover window from t=$((secs - window))s (machine overloaded?)"; fail=1; }
# exit 1 also when the recover window saw errors (judged below, per server); anything else fails
if [ "$rc" != 0 ] && ! { [ "$rc" = 1 ] && grep -q 'errors in the recover window' "$work/run.err"; }; then
    echo "FAIL: bench exited $rc"; tail -5 "$work/run.err"; fail=1
fi
grep -q '^wrong values: 0$' "$work/run.txt" || { echo "FAIL: wrong values"; fail=1; }

# Whole run: errors of servers that had no fault, against the baseline's rate.
run_ops=$(sed -n 's/^ops: \([0-9]*\) .*/\1/p' "$work/run.txt")
others=$(grep -E '^  127\.0\.0\.1:[0-9]+ [A-Za-z]+: ' "$work/run.txt" | grep -v -e "^  $stopped " -e "^  $killed " || true)
h_slow=$(echo "$others" | awk '$2 ~ /^(Timeout|Io):$/ { n += $3 } END { print n + 0 }')
h_down=$(echo "$others" | awk '$2 == "ServerDown:" { n += $3 } END { print n + 0 }')
h_bad=$(echo "$others" | grep -v -E ' (Timeout|Io|ServerDown): ' | grep . || true)
slow_bound=$(awk -v b="$base_slow" -v r="${run_ops:-0}" -v o="$base_ops" 'BEGIN { x = 3 * (b + 1) * r / o; print (x == int(x)) ? x : int(x) + 1 }')
down_bound=$(awk -v s="$h_slow" -v r="${run_ops:-0}" -v t="$secs" -v ms="$retry_ms" 'BEGIN { print int(s * (ms / 1000 + 1) * r / t) }')
echo "servers without a fault: $h_slow slow errors (at most $slow_bound: baseline $base_slow in $base_ops ops, this run $run_ops ops), $h_down ServerDown (at most $down_bound)"
[ -z "$h_bad" ] || { echo "FAIL: errors on servers that had no fault, of a kind no slow reply gives:"; echo "$h_bad"; fail=1; }
[ "$h_slow" -le "$slow_bound" ] || { echo "FAIL: $h_slow slow errors on servers that had no fault, more than $slow_bound:"; echo "$others"; fail=1; }
[ "$h_down" -le "$down_bound" ] || { echo "FAIL: $h_down ServerDown on servers that had no fault, more than $down_bound after $h_slow slow errors:"; echo "$others"; fail=1; }

# Whole run: the faulted servers' errors, by kind.
bound=$((failure_limit + threads))
for s in "$stopped" "$killed"; do
    lines=$(grep -E "^  $s [A-Za-z]+: " "$work/run.txt" || true)
    [ -n "$lines" ] || { echo "FAIL: the fault on $s produced no error at all"; fail=1; continue; }
    allowed='Timeout|ServerDown|Io'; [ "$s" = "$killed" ] && allowed="$allowed|Pool"
    bad=$(echo "$lines" | grep -v -E "^  $s ($allowed): " || true)
    [ -z "$bad" ] || { echo "FAIL: errors on $s of a kind its fault does not give:"; echo "$bad"; fail=1; }
    slow=$(echo "$lines" | awk '$2 ~ /^(Timeout|Io|Pool):$/ { n += $3 } END { print n + 0 }')
    fast=$(echo "$lines" | awk '$2 == "ServerDown:" { n += $3 } END { print n + 0 }')
    echo "faulted $s: $slow slow errors (Timeout/Io/Pool, at most $bound), $fast ServerDown"
    [ "$slow" -le "$bound" ] || { echo "FAIL: $s: $slow slow errors, more than failure_limit + threads = $bound: the server was not marked down"; fail=1; }
done

# Recover window: 0 wrong values anywhere; the faulted servers served with 0 errors (the
# healthy servers' window errors are part of their whole-run count, judged above).
grep -q '^recover window wrong values: 0$' "$work/run.txt" || { echo "FAIL: wrong values in the recover window"; fail=1; }
for s in "$stopped" "$killed"; do
    line=$(grep -E "^  window $s: " "$work/run.txt" || true)
    field() { echo "$line" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
    ops=$(field ops); hits=$(field hits); checked=$(field checked); wrong=$(field wrong); errors=$(field errors)
    if [ -z "$line" ] || [ "${ops:-0}" = 0 ] || [ "${hits:-0}" = 0 ] || [ "${checked:-0}" = 0 ] \
        || [ "$wrong" != 0 ] || [ "$errors" != 0 ]; then
        echo "FAIL: $s not served again in the recover window: ${line:-no line}"; fail=1
    fi
done

[ "$fail" = 0 ] && echo "fault-run: PASS (one process: other servers' errors within the baseline's rate, faulted servers' errors classified and bounded, 0 wrong values; recovered in the last ${window}s: faulted servers served with 0 errors)"
exit "$fail"
