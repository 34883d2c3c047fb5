#!/bin/sh
# Regenerates every case in ./cases from the real spymemcached 2.12.3 (Debian libspymemcached-java),
# DefaultConnectionFactory's ArrayModNodeLocator. No memcached server is needed: nodes are built over
# unconnected SocketChannels (see SpyModRoute.java). Installs go through sudo when not run as root; nothing is
# written outside the repo but a mktemp dir (-XX:-UsePerfData: no hsperfdata file in the system temp dir).
set -eu
cd "$(dirname "$0")"
export PYTHONDONTWRITEBYTECODE=1
if [ "$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi   # installs as root, or through sudo
JAR=/usr/share/java/spymemcached.jar
if [ ! -f "$JAR" ] || ! command -v javac >/dev/null 2>&1; then
  $SUDO apt-get update
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y libspymemcached-java default-jdk-headless
fi
command -v python3 >/dev/null 2>&1 || $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y python3
BUILD=$(mktemp -d)
trap 'rm -rf "$BUILD"' EXIT
javac -J-XX:-UsePerfData -d "$BUILD" -cp "$JAR" SpyModRoute.java
# Java resolves host names only from this file (no DNS): localhost -> 127.0.0.1, anything else unresolved.
printf '127.0.0.1 localhost\n' > "$BUILD/hosts"
JAVA="java -XX:-UsePerfData -XX:TieredStopAtLevel=1 -Djdk.net.hosts.file=$BUILD/hosts -Djava.net.preferIPv6Addresses=false -cp $JAR:$BUILD"

rm -rf cases
python3 gen_cases.py
for d in cases/*/; do
  c=$(basename "$d")
  $JAVA SpyModRoute "$d/servers.txt" $(cat "$d/hash.txt") < "$d/keys.txt" > "$d/expected.tsv"
  cut -f1 "$d/expected.tsv" | cmp -s - "$d/keys.txt" || { echo "keys changed on the way for $c" >&2; exit 1; }
  rm "$d/keys.txt" "$d/hash.txt"
  echo "$c: $(wc -l < "$d/expected.tsv") keys"
done
