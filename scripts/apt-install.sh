#!/usr/bin/env bash
# Installs Debian/Ubuntu packages, as root directly or as a user through sudo. Used by .ci/run
# (every peer the tests run against) and scripts/demo.sh (memcached only), so both install the
# same way. Exit status 3: no way to install here (no apt-get, or neither root nor sudo).
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: $0 PACKAGE..." >&2; exit 2; }
if [ "$(id -u)" = 0 ]; then
    SUDO=()
elif command -v sudo >/dev/null 2>&1; then
    SUDO=(sudo)
else
    echo "cannot install $*: not root and no sudo" >&2
    exit 3
fi
command -v apt-get >/dev/null 2>&1 || { echo "cannot install $*: no apt-get" >&2; exit 3; }
missing=()
for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -gt 0 ] || exit 0
echo "installing ${missing[*]} (apt-get)" >&2
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
