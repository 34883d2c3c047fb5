#!/bin/sh
# Regenerates compat-vectors/pylibmc/cases from Debian's python3-pylibmc (uses /usr/bin/python3) and,
# for the real-* cases, real memcached servers started on 127.0.0.x (stopped afterwards).
set -eu
export PYTHONDONTWRITEBYTECODE=1
HERE=$(cd "$(dirname "$0")" && pwd)
need() { dpkg -s "$1" >/dev/null 2>&1 || { apt-get update && apt-get install -y "$1"; }; }
need python3-pylibmc; need memcached; need libmemcached-dev
rm -rf "$HERE/cases"
/usr/bin/python3 "$HERE/make_cases.py" "$HERE/cases"
