#!/usr/bin/env bash
# pymemcache 4.0.0 (PyPI, the wheel pinned by its sha256 in tests/defaults/pymemcache-requirements.txt)
# in a venv of Debian's python3, for cli/tests/defaults_live.rs. The venv is DIR (first argument), else
# $PYMEMCACHE_VENV, else ${CARGO_TARGET_DIR:-target}/pymemcache-venv (where the test looks for it). Nothing
# is done when it already holds that version. Needs python3-venv (scripts/test.sh installs it); pip's
# cache goes to a temp dir.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${1:-${PYMEMCACHE_VENV:-${CARGO_TARGET_DIR:-target}/pymemcache-venv}}
check='import pymemcache, sys; sys.exit(pymemcache.__version__ != "4.0.0")'
if "$venv/bin/python" -c "$check" 2>/dev/null; then
    exit 0
fi
rm -rf "$venv"
/usr/bin/python3 -m venv "$venv"
PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 "$venv/bin/pip" install -q --no-deps \
    --only-binary :all: --require-hashes -r tests/defaults/pymemcache-requirements.txt
"$venv/bin/python" -c "$check"
