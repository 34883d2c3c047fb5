#!/bin/bash
# Regenerates ../dalli.json from the real Dalli 3.0.6 (Debian ruby-dalli): starts its own memcached
# on a free 127.0.0.1 port, runs gen.rb against it under a fixed clock (faketime: Dalli's gzip
# compressor stamps the current time into the gzip header), stops memcached by PID.
# Installs through scripts/apt-install.sh (root directly, or through sudo).
set -euo pipefail
cd "$(dirname "$0")"
PATH=$PATH:/usr/sbin:/sbin
# the project's one installer (root directly, or through sudo)
apt_install() { bash ../../scripts/apt-install.sh "$@"; }
command -v ruby >/dev/null 2>&1 || apt_install ruby
ruby -e 'require "dalli"' 2>/dev/null || apt_install ruby-dalli
command -v memcached >/dev/null 2>&1 || apt_install memcached
command -v faketime >/dev/null 2>&1 || apt_install faketime
command -v python3 >/dev/null 2>&1 || apt_install python3
ver=$(ruby -e 'require "dalli"; print Dalli::VERSION')
[ "$ver" = 3.0.6 ] || echo "warning: dalli $ver installed; the fixtures were made with 3.0.6" >&2

. ../memcached-b.sh   # start_memcached / stop_memcached (PORT, MC_PID)
start_memcached
trap stop_memcached EXIT
tmp=$(mktemp)
FAKETIME_DONT_FAKE_MONOTONIC=1 faketime -f '2020-01-01 00:00:00' ruby gen.rb "$PORT" > "$tmp"
chmod 644 "$tmp"; mv "$tmp" ../dalli.json
echo "dalli: $(grep -c "\"reads_back_same\""  ../dalli.json) cases -> value-vectors/dalli.json"
