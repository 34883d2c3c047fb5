#!/usr/bin/env bash
# README's main command: `memshard demo` on real memcached servers it starts on 127.0.0.1.
# Installs memcached first when it is missing, the way .ci/run does (scripts/apt-install.sh);
# where that is impossible, `memshard demo` runs its offline part and prints how to add the
# live part. Extra arguments go to `memshard demo` (e.g. --keys 50000 --servers 6).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v memcached >/dev/null 2>&1; then
    bash scripts/apt-install.sh memcached || echo "memcached could not be installed; the demo runs its offline part" >&2
fi
exec cargo run --release --quiet --bin memshard -- demo "$@"
