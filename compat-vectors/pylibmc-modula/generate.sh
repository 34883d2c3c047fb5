#!/bin/sh
# Regenerates compat-vectors/pylibmc-modula/cases from Debian's python3-pylibmc at default behaviors
# (distribution modula; uses /usr/bin/python3) and, for the real-* cases, real memcached servers started on
# 127.0.1.x (stopped afterwards), in a private network namespace when one can be made. Installs go through
# sudo when not run as root.
set -eu
export PYTHONDONTWRITEBYTECODE=1
HERE=$(cd "$(dirname "$0")" && pwd)
if [ "$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi   # installs as root, or through sudo
need() { dpkg -s "$1" >/dev/null 2>&1 || { $SUDO apt-get update && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y "$1"; }; }
need python3-pylibmc; need memcached; need libmemcached-dev
# The real-* cases start memcached on fixed loopback addresses (they are the answers): run the rest in a
# private network namespace (only its own loopback); without one, make_cases.py refuses an address in use.
[ -n "${MEMSHARD_IN_NETNS:-}" ] || exec bash "$HERE/../shared-tools/netns-run.sh" sh "$HERE/$(basename "$0")" "$@"
rm -rf "$HERE/cases"
/usr/bin/python3 "$HERE/make_cases.py" "$HERE/cases"
