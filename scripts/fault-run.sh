#!/usr/bin/env bash
# Fault run: a verified `memshard bench` over 4 real memcached servers on 127.0.0.1 while one
# server is stopped (SIGSTOP, then SIGCONT) and another is killed (SIGKILL, then restarted on
# the same port). Passes when the other servers' keys saw 0 errors, no value was wrong, and a
# bench after the faults sees 0 errors (full recovery after the retry timeout).
#
#   scripts/fault-run.sh          # 30 s run
#   scripts/fault-run.sh --short  # 12 s run (CI)
set -euo pipefail
cd "$(dirname "$0")/.."

secs=30; stop_at=5; cont_at=12; kill_at=15; restart_at=20
if [ "${1:-}" = "--short" ]; then secs=12; stop_at=2; cont_at=5; kill_at=6; restart_at=8; fi

command -v memcached >/dev/null || { echo "fault-run: memcached is not installed" >&2; exit 1; }
cargo build --release --quiet --bin memshard
bin=target/release/memshard
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
wait_up() { for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.05; done; echo "memcached on $1 did not start" >&2; exit 1; }

ports=(); mpid=()
for i in 0 1 2 3; do p=$(free_port); ports+=("$p"); start "$p"; mpid+=("$last"); done
for p in "${ports[@]}"; do wait_up "$p"; done
printf '127.0.0.1:%s 1\n' "${ports[@]}" > "$work/servers.txt"
stopped="127.0.0.1:${ports[1]}"; killed="127.0.0.1:${ports[2]}"

common=(--servers "$work/servers.txt" --threads 2 --keys 4000 --value-size 64 --get-ratio 0.8
        --verify --timeout-ms 200 --failure-limit 2 --retry-timeout-ms 1000)
"$bin" bench "${common[@]}" --seconds "$secs" > "$work/run.txt" 2>"$work/run.err" &
bench=$!
sleep "$stop_at"; kill -STOP "${mpid[1]}"; echo "t=${stop_at}s SIGSTOP $stopped"
sleep $((cont_at - stop_at)); kill -CONT "${mpid[1]}"; echo "t=${cont_at}s SIGCONT $stopped"
sleep $((kill_at - cont_at)); kill -KILL "${mpid[2]}"; echo "t=${kill_at}s SIGKILL $killed"
sleep $((restart_at - kill_at)); start "${ports[2]}"; mpid[2]=$last; wait_up "${ports[2]}"; echo "t=${restart_at}s restarted $killed"
set +e; wait "$bench"; rc=$?; set -e
cat "$work/run.txt"

fail=0
[ "$rc" = 0 ] || { echo "FAIL: bench exited $rc"; tail -5 "$work/run.err"; fail=1; }
grep -q '^wrong values: 0$' "$work/run.txt" || { echo "FAIL: wrong values"; fail=1; }
others=$(grep -E '^  127\.0\.0\.1:' "$work/run.txt" | grep -v -e "^  $stopped " -e "^  $killed " || true)
[ -z "$others" ] || { echo "FAIL: errors on servers that had no fault:"; echo "$others"; fail=1; }
grep -qE "^  ($stopped|$killed) " "$work/run.txt" || { echo "FAIL: the faults produced no errors at all"; fail=1; }

# Recovery: after the retry timeout every server answers again.
sleep 1.5
"$bin" bench "${common[@]}" --seconds 2 > "$work/after.txt" 2>&1 || true
echo "--- after the faults:"; cat "$work/after.txt"
grep -q '^errors: 0$' "$work/after.txt" || { echo "FAIL: errors after recovery"; fail=1; }
grep -q '^wrong values: 0$' "$work/after.txt" || { echo "FAIL: wrong values after recovery"; fail=1; }
[ "$fail" = 0 ] && echo "fault-run: PASS (other servers 0 errors, 0 wrong values, full recovery)"
exit "$fail"
