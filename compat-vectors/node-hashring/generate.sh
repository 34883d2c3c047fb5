#!/bin/sh
# Regenerate every case in this folder by running npm's hashring (pinned in package-lock.json).
# node_modules/ (git-ignored) is the only thing written besides cases/; npm's cache and logs go to
# a mktemp dir removed at exit. Installs go through sudo when not run as root.
set -eu
cd "$(dirname "$0")"
export PYTHONDONTWRITEBYTECODE=1
if [ "$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi   # installs as root, or through sudo
command -v node >/dev/null || { $SUDO apt-get update && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y nodejs npm; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ ! -f node_modules/hashring/package.json ] ||
   [ "$(node -p 'require("./node_modules/hashring/package.json").version')" != 3.2.0 ]; then
  npm_config_cache="$tmp/npm-cache" npm_config_update_notifier=false npm ci --no-audit --no-fund
fi
mkdir "$tmp/cases"
PY=python3
command -v "$PY" >/dev/null || PY=/usr/bin/python3
"$PY" ../shared-tools/ketama_cases.py node-hashring "$tmp/cases"
rm -rf cases && mkdir cases
for d in "$tmp"/cases/*/; do
  c=$(basename "$d")
  mkdir -p "cases/$c"
  cp "$d/servers.txt" "$d/meta.txt" "cases/$c/"
  node driver.js "cases/$c/servers.txt" < "$d/keys" > "cases/$c/expected.tsv"
done
echo "node-hashring: $(ls cases | wc -l) cases"
