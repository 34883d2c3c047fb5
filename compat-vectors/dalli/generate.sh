#!/bin/bash
# Regenerates every case in ./cases from the real Dalli 3.0.6 (Debian ruby-dalli).
# Dalli's Ring#server_for_key connects to the chosen server (alive?), so for each case this script
# starts one memcached per server on loopback (127.0.66.x / ::1), runs the driver, and stops them
# by PID. Installs go through sudo when not run as root.
set -euo pipefail
cd "$(dirname "$0")"
export PYTHONDONTWRITEBYTECODE=1
if [ "$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi   # installs as root, or through sudo
updated=
apt_install() {
  [ -n "$updated" ] || { $SUDO apt-get update; updated=1; }
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y "$@"
}
command -v ruby >/dev/null 2>&1 || apt_install ruby
ruby -e 'require "dalli"' 2>/dev/null || apt_install ruby-dalli
command -v memcached >/dev/null 2>&1 || apt_install memcached
command -v python3 >/dev/null 2>&1 || apt_install python3

# The memcached below listen on the addresses the cases name (fixed: they are hashed into the
# ring). Run the rest in a private network namespace (only its own loopback) so they cannot
# clash with anything on the host; without one, any address already in use is an error.
[ -n "${MEMSHARD_IN_NETNS:-}" ] || exec bash ../shared-tools/netns-run.sh bash "$PWD/$(basename "$0")" "$@"

PIDS=()   # memcached are stopped with SIGKILL: on SIGTERM memcached 1.6 takes up to 1 s to exit
stop_all() { for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill -KILL "$p" 2>/dev/null || true; done
             for p in "${PIDS[@]:-}"; do [ -n "$p" ] && wait "$p" 2>/dev/null || true; done; PIDS=(); }
trap stop_all EXIT

host_port() { # $1 = servers.txt address -> "HOST PORT" (localhost -> 127.0.0.1, no brackets)
  local port=${1##*:} host=${1%:*}
  host=${host#[}; host=${host%]}
  [ "$host" = localhost ] && host=127.0.0.1
  echo "$host $port"
}
start_servers() { # $1 = servers.txt
  local addr host port p
  while read -r addr _; do
    case "$addr" in ''|'#'*) continue;; esac
    read -r host port < <(host_port "$addr")
    case "$host" in 127.*|::1) ;; *) echo "not a loopback address: $addr" >&2; exit 1;; esac
    if (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null; then
      echo "$addr is already in use (something else listens there); not starting memcached" >&2; exit 1
    fi
    memcached -u nobody -l "$host" -p "$port" -U 0 -m 8 -t 1 -c 64 &
    PIDS+=($!)
  done < "$1"
  # wait until every listener accepts
  while read -r addr _; do
    case "$addr" in ''|'#'*) continue;; esac
    read -r host port < <(host_port "$addr")
    for _ in $(seq 50); do (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null && break; sleep 0.1; done
  done < "$1"
  for p in "${PIDS[@]}"; do kill -0 "$p" 2>/dev/null || { echo "a memcached for $1 did not start" >&2; exit 1; }; done
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
