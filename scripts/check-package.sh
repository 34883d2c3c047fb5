#!/usr/bin/env bash
# The published crate tests itself: `cargo package` of the library (package `memshard`), the
# .crate unpacked into a temporary directory with nothing of the repository beside it, then
# `cargo test --offline --all-features` there: its unit tests (including those that read the
# shipped fixtures: value-vectors/*.json, meta-vectors/memcached-1.6.18.json,
# src/value/testdata/) and doctests. The integration tests in tests/ are not shipped.
#
#   scripts/check-package.sh                 # the committed tree (what `cargo publish` sends)
#   scripts/check-package.sh --allow-dirty   # uncommitted changes too (local runs)
#
# The test build shares the repository's target/ directory, so the dependencies the workspace's
# own test builds made are reused (about 4 minutes on 2 cores when nothing is there yet); the
# crate itself is built every time (about 1 minute). Prints the .crate's size and each step's
# wall time.
set -euo pipefail
shopt -s inherit_errexit
cd "$(dirname "$0")/.."

package_args=(-p memshard --no-verify) # the test build below is the verification
case "${1:-}" in
    "") ;;
    --allow-dirty) package_args+=(--allow-dirty) ;;
    *) echo "usage: $0 [--allow-dirty]" >&2; exit 2 ;;
esac

started=$EPOCHREALTIME
# run LABEL CMD...: runs CMD, prints its wall time (as scripts/check-builds.sh does).
run() {
    local label=$1
    shift
    echo "==> $label: $*"
    local t0=$EPOCHREALTIME
    "$@"
    echo "<== $label: $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')s"
}

root=$PWD
target_dir=$root/target
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

run "package" cargo package "${package_args[@]}"
version=$(cargo pkgid -p memshard | sed 's/.*[@#]//')
crate=$root/target/package/memshard-$version.crate
[ -f "$crate" ] || { echo "no $crate after cargo package" >&2; exit 1; }
echo "    $(basename "$crate"): $(stat -c %s "$crate") bytes, $(tar -tzf "$crate" | wc -l) files"

tar -xzf "$crate" -C "$work"
dir=$work/memshard-$version
# Nothing of the repository may be reachable: no workspace above the unpacked crate, no
# fixture beside it.
[ ! -e "$work/Cargo.toml" ] || { echo "unexpected $work/Cargo.toml" >&2; exit 1; }
# From inside it, so that no .cargo/config.toml of the repository applies either. Its files
# keep the archive's times, older than any earlier build of the crate, so cargo could take that
# build (with its CARGO_MANIFEST_DIR) as fresh: they are touched to now first. The
# dependencies' builds stay.
test_unpacked() {
    (
        cd "$dir"
        find . -type f -exec touch {} +
        export CARGO_TARGET_DIR=$target_dir
        cargo test --offline --all-features
    )
}
run "test the unpacked crate" test_unpacked

awk -v a="$started" -v b="$EPOCHREALTIME" 'BEGIN { printf "package check: %.1fs\n", b - a }'
