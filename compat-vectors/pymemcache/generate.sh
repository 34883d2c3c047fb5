#!/bin/sh
# Regenerates ./cases, ./bytes-keys and ./ranking from pymemcache 4.0.0's HashClient (PyPI, installed into a venv).
# The venv goes to a mktemp dir removed at exit, unless PYMEMCACHE_VENV names one to keep and reuse.
# Installs go through sudo when not run as root. No socket is opened (pymemcache_route.py forbids it).
set -eu
cd "$(dirname "$0")"
export PYTHONDONTWRITEBYTECODE=1
if [ "$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi   # installs as root, or through sudo
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export TMPDIR="$tmp"
VENV=${PYMEMCACHE_VENV:-$tmp/venv}
if ! "$VENV/bin/python" -c 'import pymemcache, sys; sys.exit(pymemcache.__version__ != "4.0.0")' 2>/dev/null; then
  if ! /usr/bin/python3 -c 'import ensurepip' 2>/dev/null; then
    $SUDO apt-get update
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y python3-venv
  fi
  /usr/bin/python3 -m venv "$VENV"
  PIP_DISABLE_PIP_VERSION_CHECK=1 "$VENV/bin/pip" install -q --no-cache-dir pymemcache==4.0.0
fi
rm -rf cases bytes-keys ranking
"$VENV/bin/python" make_cases.py .
