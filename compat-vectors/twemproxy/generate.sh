#!/usr/bin/env bash
# Regenerate every case in compat-vectors/twemproxy/cases by running nutcracker for real
# in front of memcached servers on loopback (127.0.0.0/8). See README.md.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"

need=()
command -v nutcracker >/dev/null 2>&1 || [ -x /usr/sbin/nutcracker ] || need+=(nutcracker)
command -v memcached >/dev/null 2>&1 || need+=(memcached)
command -v gcc >/dev/null 2>&1 || need+=(gcc)
command -v python3 >/dev/null 2>&1 || need+=(python3)
[ -f /usr/include/openssl/md5.h ] || need+=(libssl-dev)
if [ "$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi   # installs as root, or through sudo
if [ ${#need[@]} -gt 0 ]; then
    echo "installing: ${need[*]}"
    $SUDO apt-get update -qq
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
fi
export PATH="$PATH:/usr/sbin"
# the Debian package starts a system nutcracker/memcached; they are not used here
# (this script only starts its own processes on 127.x.y.z and stops them on exit).
# The memcached backends listen on the fixed addresses the cases name (they are the answers): run
# the rest in a private network namespace (only its own loopback) so they cannot clash with
# anything on the host; without one, gen.py refuses any backend address already in use.
[ -n "${MEMSHARD_IN_NETNS:-}" ] || exec bash "$HERE/../shared-tools/netns-run.sh" bash "$HERE/$(basename "$0")" "$@"

WORK="$(mktemp -d /tmp/twemproxy-gen.XXXXXX)"
PY_PID=""
cleanup() {
    if [ -n "$PY_PID" ] && kill -0 "$PY_PID" 2>/dev/null; then
        kill -TERM "$PY_PID" 2>/dev/null || true
        wait "$PY_PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

gcc -O2 -Wno-deprecated-declarations -o "$WORK/corner_search" "$HERE/corner_search.c" -lcrypto

echo "nutcracker: $(nutcracker --version 2>&1 | head -1)"
echo "memcached:  $(memcached -V 2>&1)"
dpkg-query -W -f='dpkg: ${Package} ${Version}\n' nutcracker memcached 2>/dev/null || true

# with no arguments every case is rebuilt; arguments select cases by name substring
[ $# -eq 0 ] && rm -rf "$HERE/cases"
mkdir -p "$HERE/cases"
CORNER_CACHE="$WORK/corners" python3 "$HERE/gen.py" "$WORK/corner_search" "$HERE" "$@" &
PY_PID=$!
wait "$PY_PID"
PY_PID=""
