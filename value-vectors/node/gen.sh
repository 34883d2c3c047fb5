#!/bin/bash
# Regenerates ../node.json from the real npm `memcached` 2.2.2 (pinned in package-lock.json,
# installed into ./node_modules, git-ignored; npm's cache goes to a mktemp dir): starts its own
# memcached on a free 127.0.0.1 port, runs gen.js, stops memcached by PID.
# Installs through scripts/apt-install.sh (root directly, or through sudo).
set -euo pipefail
cd "$(dirname "$0")"
PATH=$PATH:/usr/sbin:/sbin
# the project's one installer (root directly, or through sudo)
apt_install() { bash ../../scripts/apt-install.sh "$@"; }
{ command -v node && command -v npm; } >/dev/null 2>&1 || apt_install nodejs npm
command -v memcached >/dev/null 2>&1 || apt_install memcached
command -v python3 >/dev/null 2>&1 || apt_install python3

. ../memcached-b.sh   # start_memcached / stop_memcached (PORT, MC_PID)
tmp=$(mktemp -d)
cleanup() { stop_memcached; rm -rf "$tmp"; }
trap cleanup EXIT
if [ ! -f node_modules/memcached/package.json ] ||
   [ "$(node -p 'require("./node_modules/memcached/package.json").version')" != 2.2.2 ]; then
  npm_config_cache="$tmp/npm-cache" npm_config_update_notifier=false npm ci --no-audit --no-fund
fi
start_memcached
node gen.js "$PORT" "$tmp/out.json"
chmod 644 "$tmp/out.json"
mv "$tmp/out.json" ../node.json
echo "node: $(grep -c '"reads_back_same"' ../node.json) cases -> value-vectors/node.json"
