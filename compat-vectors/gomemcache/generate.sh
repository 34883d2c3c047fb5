#!/bin/sh
# Regenerates compat-vectors/gomemcache/cases from Debian's gomemcache (golang-github-bradfitz-gomemcache-dev)
# with Debian's Go: a tiny program (gmroute.go) built offline in GOPATH mode against /usr/share/gocode (no module
# download). Installs go through sudo when not run as root; the build goes to a mktemp dir removed at exit.
set -eu
export PYTHONDONTWRITEBYTECODE=1
HERE=$(cd "$(dirname "$0")" && pwd)
if [ "$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi   # installs as root, or through sudo
need() { dpkg -s "$1" >/dev/null 2>&1 || { $SUDO apt-get update && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y "$1"; }; }
need golang-go; need golang-github-bradfitz-gomemcache-dev; need python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$HERE" && env GO111MODULE=off GOPATH=/usr/share/gocode GOFLAGS= GOPROXY=off GOCACHE="$tmp/cache" \
  go build -o "$tmp/gmroute" gmroute.go)
rm -rf "$HERE/cases"
/usr/bin/python3 "$HERE/make_cases.py" "$tmp/gmroute" "$HERE/cases"
