#!/bin/sh
# Regenerate every case in this folder by running npm's hashring (pinned in package-lock.json).
set -eu
cd "$(dirname "$0")"
command -v node >/dev/null || { apt-get update && apt-get install -y nodejs npm; }
if [ ! -f node_modules/hashring/package.json ] ||
   [ "$(node -p 'require("./node_modules/hashring/package.json").version')" != 3.2.0 ]; then
  npm ci --no-audit --no-fund
fi
PY=python3
command -v "$PY" >/dev/null || PY=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$PY" ../shared-tools/ketama_cases.py node-hashring "$tmp"
rm -rf cases && mkdir cases
for d in "$tmp"/*/; do
  c=$(basename "$d")
  mkdir -p "cases/$c"
  cp "$d/servers.txt" "$d/meta.txt" "cases/$c/"
  node driver.js "cases/$c/servers.txt" < "$d/keys" > "cases/$c/expected.tsv"
done
echo "node-hashring: $(ls cases | wc -l) cases"
