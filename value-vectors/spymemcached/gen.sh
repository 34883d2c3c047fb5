#!/bin/bash
# Regenerates ../spymemcached.json from the real spymemcached 2.12.3 (Debian libspymemcached-java):
# compiles SpyValues.java against the Debian jar into a mktemp dir, starts its own memcached on a
# free 127.0.0.1 port, runs it, stops memcached by PID. Installs through scripts/apt-install.sh.
# -XX:-UsePerfData: no hsperfdata file in the system temp dir. spymemcached's own log lines
# (warnings for undecodable reverse cases) go to stderr and are not part of the fixture.
set -euo pipefail
cd "$(dirname "$0")"
PATH=$PATH:/usr/sbin:/sbin
JAR=/usr/share/java/spymemcached.jar
# the project's one installer (root directly, or through sudo)
apt_install() { bash ../../scripts/apt-install.sh "$@"; }
[ -f "$JAR" ] || apt_install libspymemcached-java
command -v javac >/dev/null 2>&1 || apt_install default-jdk-headless
command -v memcached >/dev/null 2>&1 || apt_install memcached
command -v python3 >/dev/null 2>&1 || apt_install python3

. ../memcached-b.sh   # start_memcached / stop_memcached (PORT, MC_PID)
BUILD=$(mktemp -d)
cleanup() { stop_memcached; rm -rf "$BUILD"; }
trap cleanup EXIT
javac -J-XX:-UsePerfData -nowarn -d "$BUILD" -cp "$JAR" SpyValues.java
start_memcached
java -XX:-UsePerfData -cp "$JAR:$BUILD" SpyValues "$PORT" "$BUILD/out.json" 2> "$BUILD/log" ||
  { cat "$BUILD/log" >&2; exit 1; }
chmod 644 "$BUILD/out.json"
mv "$BUILD/out.json" ../spymemcached.json
echo "spymemcached: $(grep -c '"reads_back_same"' ../spymemcached.json) cases -> value-vectors/spymemcached.json"
