#!/bin/bash
# Regenerates every case in ./cases from the real Dalli 3.0.6 (Debian ruby-dalli).
# Dalli's Ring#server_for_key connects to the chosen server (alive?), so for each case this script
# starts one memcached per server on loopback (127.0.66.x / ::1), runs the driver, and stops them
# by PID.
set -euo pipefail
cd "$(dirname "$0")"
command -v ruby >/dev/null 2>&1 || { apt-get update && apt-get install -y ruby; }
ruby -e 'require "dalli"' 2>/dev/null || apt-get install -y ruby-dalli
command -v memcached >/dev/null 2>&1 || apt-get install -y memcached
command -v python3 >/dev/null 2>&1 || apt-get install -y python3

PIDS=()
stop_all() { for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
             for p in "${PIDS[@]:-}"; do [ -n "$p" ] && wait "$p" 2>/dev/null || true; done; PIDS=(); }
trap stop_all EXIT

start_servers() { # $1 = servers.txt
  local addr host port
  while read -r addr _; do
    case "$addr" in ''|'#'*) continue;; esac
    port=${addr##*:}; host=${addr%:*}; host=${host#[}; host=${host%]}
    [ "$host" = localhost ] && host=127.0.0.1
    memcached -u nobody -l "$host" -p "$port" -U 0 -m 8 -t 1 -c 64 &
    PIDS+=($!)
  done < "$1"
  # wait until every listener accepts
  while read -r addr _; do
    case "$addr" in ''|'#'*) continue;; esac
    port=${addr##*:}; host=${addr%:*}; host=${host#[}; host=${host%]}
    [ "$host" = localhost ] && host=127.0.0.1
    for _ in $(seq 50); do (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null && break; sleep 0.1; done
  done < "$1"
}

rm -rf cases
python3 gen_cases.py
for d in cases/*/; do
  c=$(basename "$d")
  start_servers "$d/servers.txt"
  ruby dalli_route.rb "$d/servers.txt" < "$d/keys.txt" > "$d/expected.tsv"
  [ "$c" = localhost-ipv6 ] && ruby dalli_route.rb "$d/servers.txt" --names > names.tsv
  stop_all
  [ "$(wc -l < "$d/keys.txt")" -eq "$(wc -l < "$d/expected.tsv")" ] || { echo "short output for $c" >&2; exit 1; }
  rm "$d/keys.txt"
  echo "$c: $(wc -l < "$d/expected.tsv") keys"
done
