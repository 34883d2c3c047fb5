#!/bin/sh
# Regenerates every vector set from the real peers. Each folder's generate.sh installs its peer
# (apt-get, pip, npm) when missing and starts/stops any memcached or nutcracker it needs on
# 127.0.0.0/8 (in a private network namespace where possible). Run on a Debian bookworm machine as
# root or as a user with sudo. scripts/regen-vectors.sh runs them and diffs against the committed files.
# aws-java-ketama and aws-discovery have no generate.sh: their peers are on no package registry, so
# they are checked against memshard but not regenerated (see their README.md).
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
for d in "$HERE"/*/; do
    [ -f "$d/generate.sh" ] || continue
    echo "== $(basename "$d")"
    bash "$d/generate.sh"
done
