#!/bin/bash
# Regenerates php-extra.json: our own memcached on a free 127.0.0.1 port, php-extra.php stores
# its cases through php-memcached 3.2.0 (Debian php8.2-memcached), the server is stopped at the end.
#   bash src/value/testdata/gen-php-extra.sh
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
PATH=$PATH:/usr/sbin:/sbin
PORT=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
user=()
[ "$(id -u)" = 0 ] && user=(-u nobody)
memcached -l 127.0.0.1 -p "$PORT" -U 0 -m 64 "${user[@]}" &
MC_PID=$!
trap 'kill "$MC_PID" 2>/dev/null || true; wait "$MC_PID" 2>/dev/null || true' EXIT
for _ in $(seq 100); do
    /usr/bin/python3 -c "import socket; socket.create_connection(('127.0.0.1', $PORT), 0.2).close()" 2>/dev/null && break
    sleep 0.1
done
php -d serialize_precision=-1 "$HERE/php-extra.php" "$PORT" "$HERE/php-extra.json"
