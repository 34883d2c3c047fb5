#!/bin/sh
# Regenerates ./cases and node-keys.tsv from the AWS ElastiCache Cluster Client for Java (a spymemcached
# fork), compiled with javac from the fork's own sources at commit $COMMIT (v1.2.4) against Debian jars only
# (slf4j-api, dropwizard metrics-core; no Maven download).
# The source is not on any package registry, so it must be given:
#   AWS_JAVA_GIT=<git dir of a clone of awslabs/aws-elasticache-cluster-client-memcached-for-java>  (must hold $COMMIT)
# or
#   AWS_JAVA_SRC=<work tree of that repository at $COMMIT>
# Without either it stops (exit 2). Installs go through sudo when not run as root; the build goes to a mktemp dir.
set -eu
cd "$(dirname "$0")"
export PYTHONDONTWRITEBYTECODE=1
COMMIT=e6fe8e2fa4841fb0ddc1f55097d4e4081bfb8147
if [ "$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi   # installs as root, or through sudo
if [ -z "${AWS_JAVA_GIT:-}" ] && [ -z "${AWS_JAVA_SRC:-}" ]; then
  echo "aws-java-ketama: set AWS_JAVA_GIT (a git dir holding commit $COMMIT) or AWS_JAVA_SRC (a work tree at it)" >&2
  exit 2
fi
missing=
for p in libslf4j-java libdropwizard-metrics-java python3 git; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
command -v javac >/dev/null 2>&1 || missing="$missing default-jdk-headless"
if [ -n "$missing" ]; then
  $SUDO apt-get update
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y $missing
fi
BUILD=$(mktemp -d)
trap 'rm -rf "$BUILD"' EXIT
if [ -n "${AWS_JAVA_GIT:-}" ]; then
  mkdir "$BUILD/src"
  git --git-dir="$AWS_JAVA_GIT" archive "$COMMIT" src/main/java | tar -x -C "$BUILD/src"
  SRC=$BUILD/src
else
  SRC=$AWS_JAVA_SRC
fi
# Every main source file but the two that need log4j 2 / Spring (a logger picked by name at run time, and a
# Spring factory bean); nothing on the placement path refers to them.
find "$SRC/src/main/java" -name '*.java' | grep -v -e '/compat/log/Log4JLogger.java$' -e '/spring/MemcachedClientFactoryBean.java$' \
  | LC_ALL=C sort > "$BUILD/sources.txt"
mkdir "$BUILD/classes"
javac -J-XX:-UsePerfData -nowarn -encoding UTF-8 -cp /usr/share/java/slf4j-api.jar:/usr/share/java/metrics-core.jar \
  -d "$BUILD/classes" @"$BUILD/sources.txt" 2>&1 | grep -v '^Note: ' >&2 || true
[ -f "$BUILD/classes/net/spy/memcached/KetamaNodeLocator.class" ] || { echo "building the fork failed" >&2; exit 1; }
javac -J-XX:-UsePerfData -cp "$BUILD/classes" -d "$BUILD/classes" AwsKetamaRoute.java
# Java resolves host names only from this file (no DNS): localhost -> 127.0.0.1, anything else unresolved.
printf '127.0.0.1 localhost\n' > "$BUILD/hosts"
JAVA="java -XX:-UsePerfData -XX:TieredStopAtLevel=1 -Djdk.net.hosts.file=$BUILD/hosts -Djava.net.preferIPv6Addresses=false -cp $BUILD/classes"

rm -rf cases
python3 gen_cases.py
for d in cases/*/; do
  c=$(basename "$d")
  $JAVA AwsKetamaRoute "$d/servers.txt" < "$d/keys.txt" > "$d/expected.tsv"
  cut -f1 "$d/expected.tsv" | cmp -s - "$d/keys.txt" || { echo "keys changed on the way for $c" >&2; exit 1; }
  rm "$d/keys.txt"
  echo "$c: $(wc -l < "$d/expected.tsv") keys"
done
# Node keys as the fork's own formatter prints them (documentation; README quotes this file).
$JAVA AwsKetamaRoute node-keys-servers.txt --node-keys > node-keys.tsv
