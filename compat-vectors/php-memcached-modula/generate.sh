#!/bin/sh
# Regenerates compat-vectors/php-memcached-modula/cases from php-memcached at its default distribution
# (MODULA): Memcached::getServerByKey. Installs go through sudo when not run as root.
set -eu
export PYTHONDONTWRITEBYTECODE=1
HERE=$(cd "$(dirname "$0")" && pwd)
if [ "$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi   # installs as root, or through sudo
need() { dpkg -s "$1" >/dev/null 2>&1 || { $SUDO apt-get update && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y "$1"; }; }
need php-cli; need php-memcached; need python3
rm -rf "$HERE/cases"
/usr/bin/python3 "$HERE/make_cases.py" "$HERE/cases"
