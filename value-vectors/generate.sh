#!/bin/bash
# Regenerates value-vectors/php-memcached.json and value-vectors/pylibmc.json from the real peers
# (Debian php8.2-memcached, python3-pylibmc): starts its own memcached on a free 127.0.0.1 port,
# has each peer store its cases there, reads flags and bytes back with a plain socket, and stops
# the server at the end. Installs the peers with apt-get when missing (as root, or through sudo).
# Then dalli.json, spymemcached.json and node.json, each through its own <peer>/gen.sh (the same
# way, its own memcached; see README-dalli.md, README-spymemcached.md, README-node.md).
#   bash value-vectors/generate.sh
set -euo pipefail
export PYTHONDONTWRITEBYTECODE=1
HERE=$(cd "$(dirname "$0")" && pwd)
PATH=$PATH:/usr/sbin:/sbin

bash "$HERE/../scripts/apt-install.sh" memcached php-cli php-memcached php-igbinary php-msgpack python3-pylibmc

# A free port on 127.0.0.1 (the kernel's choice), then our own memcached on it.
PORT=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
user=()
[ "$(id -u)" = 0 ] && user=(-u nobody)   # memcached refuses to run as root without -u
memcached -l 127.0.0.1 -p "$PORT" -U 0 -m 256 -c 64 "${user[@]}" &
MC_PID=$!
trap 'kill "$MC_PID" 2>/dev/null || true; wait "$MC_PID" 2>/dev/null || true' EXIT
for _ in $(seq 100); do
    if /usr/bin/python3 -c "import socket; socket.create_connection(('127.0.0.1', $PORT), 0.2).close()" 2>/dev/null; then
        break
    fi
    kill -0 "$MC_PID" 2>/dev/null || { echo "memcached did not start" >&2; exit 1; }
    sleep 0.1
done

php "$HERE/php-memcached/generate.php" "$PORT" "$HERE/php-memcached.json"
/usr/bin/python3 "$HERE/pylibmc/generate.py" "$PORT" "$HERE/pylibmc.json"

# dalli (ruby-dalli), spymemcached (libspymemcached-java) and node memcached (npm, locked): each
# gen.sh installs what it needs and starts (and stops) its own memcached on a free 127.0.0.1 port.
for p in dalli spymemcached node; do
    bash "$HERE/$p/gen.sh"
done
