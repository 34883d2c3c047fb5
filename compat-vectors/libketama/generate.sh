#!/bin/sh
# Regenerate every case in this folder by running libketama (RJ/ketama C code as bundled in
# PyPI ketama==0.1.1) in a venv.
set -eu
cd "$(dirname "$0")"
VENV=${KETAMA_VENV:-/tmp/memshard-ketama-venv}
if ! "$VENV/bin/python" -c 'import ketama' 2>/dev/null; then
  if ! command -v gcc >/dev/null || [ ! -f /usr/include/python3.11/Python.h ] ||
     ! /usr/bin/python3 -c 'import ensurepip' 2>/dev/null; then
    apt-get update && apt-get install -y gcc python3-dev python3-venv
  fi
  /usr/bin/python3 -m venv "$VENV"
  "$VENV/bin/pip" install --no-cache-dir ketama==0.1.1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$VENV/bin/python" ../shared-tools/ketama_cases.py libketama "$tmp"
rm -rf cases && mkdir cases
for d in "$tmp"/*/; do
  c=$(basename "$d")
  mkdir -p "cases/$c"
  cp "$d/servers.txt" "$d/meta.txt" "cases/$c/"
  "$VENV/bin/python" driver.py "cases/$c/servers.txt" < "$d/keys" > "cases/$c/expected.tsv"
done
echo "libketama: $(ls cases | wc -l) cases"
