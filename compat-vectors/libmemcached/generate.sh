#!/bin/sh
# Regenerates every case in compat-vectors/libmemcached/cases from the real libmemcached.
set -eu
export PYTHONDONTWRITEBYTECODE=1
HERE=$(cd "$(dirname "$0")" && pwd)
if [ "$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi   # installs as root, or through sudo
need() { dpkg -s "$1" >/dev/null 2>&1 || { $SUDO apt-get update && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y "$1"; }; }
need libmemcached-dev; need gcc; need python3
WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT
cc -O2 -o "$WORK/libmemcached_route" "$HERE/harness/libmemcached_route.c" -lmemcached
/usr/bin/python3 "$HERE/tools/find_corners.py" > "$WORK/corners.json"
rm -rf "$HERE/cases"
CORNERS_JSON="$WORK/corners.json" /usr/bin/python3 "$HERE/tools/make_cases.py" "$WORK/libmemcached_route" "$HERE/cases"
