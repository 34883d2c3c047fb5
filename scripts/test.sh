#!/usr/bin/env bash
# README's test command. Installs the real peers the tests run against (as root, or through
# sudo), then runs the whole suite: every test binary in `cargo test`'s own order, the short
# fault run, and the regeneration of the peer vectors from the installed peers.
# Tests start their own memcached / nutcracker processes on loopback addresses of their own.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/apt-install.sh \
    build-essential pkg-config memcached libmemcached-dev nutcracker \
    php-cli php-memcached python3 python3-pylibmc
# Debian puts nutcracker in /usr/sbin, outside a normal user's PATH.
export PATH="$PATH:/usr/sbin"
for tool in memcached nutcracker cc php /usr/bin/python3; do
    command -v "$tool" >/dev/null || { echo "missing $tool after installing" >&2; exit 1; }
done
# A peer the tests need that is missing is a failure, not a skip.
export CI=true

cargo test --release --all-features
# Fault run, short form: SIGSTOP one server, SIGKILL and restart another during a verified bench.
bash scripts/fault-run.sh --short
# The peer vectors, regenerated from the real peers (installs ruby-dalli, spymemcached, PyPI
# ketama, npm hashring, uhashring): any difference from the committed files fails.
bash scripts/regen-vectors.sh
