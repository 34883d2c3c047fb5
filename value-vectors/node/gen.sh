#!/bin/bash
# Regenerates ../node.json from the real npm `memcached` 2.2.2 (pinned in package-lock.json,
# installed into ./node_modules, git-ignored; npm's cache goes to a mktemp dir): starts its own
# memcached on a free 127.0.0.1 port, runs gen.js, stops memcached by PID.
# Installs (apt-get) go through sudo when not run as root.
set -euo pipefail
cd "$(dirname "$0")"
PATH=$PATH:/usr/sbin:/sbin
if [ "$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi
updated=
apt_install() {
  [ -n "$updated" ] || { $SUDO apt-get update -qq; updated=1; }
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
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
