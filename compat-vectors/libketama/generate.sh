#!/bin/sh
# Regenerate every case in this folder by running libketama (RJ/ketama C code as bundled in
# PyPI ketama==0.1.1) in a venv.
# The venv goes to a mktemp dir removed at exit, unless KETAMA_VENV names one to keep and reuse.
# Installs go through sudo when not run as root.
set -eu
cd "$(dirname "$0")"
export PYTHONDONTWRITEBYTECODE=1
if [ "$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi   # installs as root, or through sudo
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export TMPDIR="$tmp"   # pip's build dirs and the driver's server files land in it too
VENV=${KETAMA_VENV:-$tmp/venv}
if ! "$VENV/bin/python" -c 'import ketama' 2>/dev/null; then
  if ! command -v gcc >/dev/null || [ ! -f /usr/include/python3.11/Python.h ] ||
     ! /usr/bin/python3 -c 'import ensurepip' 2>/dev/null; then
    $SUDO apt-get update
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y gcc python3-dev python3-venv
  fi
  /usr/bin/python3 -m venv "$VENV"
  PIP_DISABLE_PIP_VERSION_CHECK=1 "$VENV/bin/pip" install --no-cache-dir ketama==0.1.1
fi
mkdir "$tmp/cases"
"$VENV/bin/python" ../shared-tools/ketama_cases.py libketama "$tmp/cases"
rm -rf cases && mkdir cases
for d in "$tmp"/cases/*/; do
  c=$(basename "$d")
  mkdir -p "cases/$c"
  cp "$d/servers.txt" "$d/meta.txt" "cases/$c/"
  "$VENV/bin/python" driver.py "cases/$c/servers.txt" < "$d/keys" > "cases/$c/expected.tsv"
done
echo "libketama: $(ls cases | wc -l) cases"
