#!/usr/bin/env bash
# shellcheck disable=SC2016 # single-quoted $pkg and $meta below are jq variables
# Compiles the builds that .ci/run's all-features clippy and test never compile, and runs the
# fuzz targets over their corpora. Exits non-zero on the first failure.
#
#   scripts/check-builds.sh            # both steps
#   scripts/check-builds.sh features   # feature matrix only
#   scripts/check-builds.sh fuzz       # fuzz targets only
#   scripts/check-builds.sh perf       # perf/ compiles (not run)
#
# features: for the library (the root package `memshard`, `-p memshard`): no features, each
#   feature of its Cargo.toml alone (read from `cargo metadata`, so a new feature is covered
#   without editing this file), and the default set unless it is empty (`default = []`) or one
#   feature already built alone. Not all features: .ci/run's clippy lints them (workspace, all
#   targets) and README's test command runs their doctests (38 s and 24 s more here):
#   * `cargo clippy -p memshard --all-targets ... -- -D warnings`: lib, unit and integration
#     tests, benches and examples; a target with `required-features` is compiled in every
#     configuration that enables them (and must compile there), warnings included;
#   * `cargo test -p memshard --doc ...`: the doctests, which check and clippy never compile.
#     They run without servers (16 to 19 of them, well under a second).
#   Then the CLI (the workspace's package `memshard-cli`, which has no features of its own and
#   sets the library's it needs): `cargo clippy -p memshard-cli --all-targets -- -D warnings`,
#   its binary and tests alone, so that it compiles with only the library features it asks for.
# fuzz: `cargo build` of fuzz/ (its own workspace) on the stable toolchain, without
#   instrumentation (debug build: overflow checks and debug assertions on), then each libFuzzer
#   binary with `-runs=0` over fuzz/corpus/<target>/ (every input executed once), and over every
#   reproducer in fuzz/crashes-found/. A missing or empty corpus folder fails.
#   tests/fuzz_corpora.rs replays the same files in `cargo test`; this checks the real binaries.
# Cost on the 2-core machine: about 4.5 CPU-minutes from a target/ that only .ci/run's clippy has
# filled (most of it the dev-profile dependencies the doctests and fuzz/ need), under 30 s warm.
set -euo pipefail
shopt -s inherit_errexit
cd "$(dirname "$0")/.."

steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(features fuzz perf)
for s in "${steps[@]}"; do
    case "$s" in
        features | fuzz | perf) ;;
        *) echo "usage: $0 [features] [fuzz] [perf]" >&2; exit 2 ;;
    esac
done

# What the steps need beyond cargo, installed the way .ci/run installs (a no-op when present):
# python3 (or jq) to read `cargo metadata`; a C++ compiler for libFuzzer (libfuzzer-sys).
if ! command -v python3 >/dev/null && ! command -v jq >/dev/null; then
    bash scripts/apt-install.sh python3
fi
if [[ " ${steps[*]} " == *" fuzz "* ]] && ! command -v c++ >/dev/null; then
    bash scripts/apt-install.sh build-essential
fi

timings=()
started=$EPOCHREALTIME
# run LABEL CMD...: runs CMD, prints and records its wall time.
run() {
    local label=$1
    shift
    echo "==> $label: $*"
    local t0=$EPOCHREALTIME
    "$@"
    local secs
    secs=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
    echo "<== $label: ${secs}s"
    timings+=("$(printf '%8ss  %s' "$secs" "$label")")
}

# json_query MANIFEST PYTHON_EXPR JQ_EXPR: evaluates one query over `cargo metadata --no-deps` of
# MANIFEST's package, with python3 (installed by .ci/run) or else jq.
json_query() {
    local manifest=$1 py=$2 jqexpr=$3 meta
    meta=$(cargo metadata --no-deps --format-version 1 --manifest-path "$manifest")
    if command -v python3 >/dev/null; then
        MANIFEST=$(realpath "$manifest") python3 -c '
import json, os, sys
meta = json.load(sys.stdin)
pkg = next(p for p in meta["packages"] if os.path.realpath(p["manifest_path"]) == os.environ["MANIFEST"])
'"$py" <<<"$meta"
    elif command -v jq >/dev/null; then
        jq -r --arg m "$(realpath "$manifest")" \
            '. as $meta | (.packages[] | select(.manifest_path == $m)) as $pkg | '"$jqexpr" <<<"$meta"
    else
        echo "python3 or jq is needed to read cargo metadata" >&2
        return 1
    fi
}

check_features() {
    local features default_set
    features=$(json_query Cargo.toml \
        'print("\n".join(sorted(f for f in pkg["features"] if f != "default")))' \
        '$pkg.features | keys[] | select(. != "default")')
    default_set=$(json_query Cargo.toml \
        'print(" ".join(pkg["features"].get("default", [])))' \
        '($pkg.features.default // []) | join(" ")')
    echo "features: ${features//$'\n'/ } (default: [${default_set}])"

    local configs=("--no-default-features")
    local f
    for f in $features; do configs+=("--no-default-features --features $f"); done
    # The default build when it differs from those: with `default = []` it is the no-feature
    # build, with one default feature that feature's build; neither is compiled twice.
    if [[ "$default_set" == *" "* ]]; then configs+=(""); fi

    local c
    for c in "${configs[@]}"; do
        # shellcheck disable=SC2086 # $c is a list of flags
        run "clippy ${c:-(default features)}" cargo clippy -p memshard --all-targets $c -- -D warnings
    done
    for c in "${configs[@]}"; do
        # shellcheck disable=SC2086
        run "doctests ${c:-(default features)}" cargo test -p memshard --doc $c
    done
    run "clippy memshard-cli" cargo clippy -p memshard-cli --all-targets -- -D warnings
}

# replay BIN LABEL EXPECT ARGS...: runs a libFuzzer binary over ARGS (one folder with -runs=0,
# or files); fails if it fails or executed fewer than EXPECT inputs. Prints its log on failure.
replay() {
    local bin=$1 label=$2 expect=$3
    shift 3
    local log executed
    log=$(mktemp)
    if ! "$bin" -timeout=60 "$@" >"$log" 2>&1; then
        tail -n 40 "$log" >&2
        rm -f "$log"
        echo "FAILED: $label" >&2
        return 1
    fi
    # A folder: "Done N runs" (its files and the empty input); files: one "Executed" line each.
    executed=$(sed -n -E 's/^Done ([0-9]+) runs.*/\1/p' "$log" | tail -n 1)
    [ -n "$executed" ] || executed=$(grep -a -c '^Executed ' "$log" || true)
    rm -f "$log"
    if [ "$executed" -lt "$expect" ]; then
        echo "FAILED: $label: libFuzzer executed $executed inputs, expected at least $expect" >&2
        return 1
    fi
    echo "    $label: $executed inputs executed"
}

check_fuzz() {
    local manifest=fuzz/Cargo.toml targets target_dir
    run "fuzz build" cargo build --manifest-path "$manifest" --bins
    if git rev-parse --is-inside-work-tree >/dev/null 2>&1 && ! git diff --quiet -- fuzz/Cargo.lock; then
        echo "note: fuzz/Cargo.lock was out of date and cargo updated it; commit the new one"
    fi
    targets=$(json_query "$manifest" \
        'print("\n".join(t["name"] for t in pkg["targets"] if "bin" in t["kind"]))' \
        '$pkg.targets[] | select(.kind | index("bin")) | .name')
    target_dir=$(json_query "$manifest" 'print(meta["target_directory"])' '$meta.target_directory')
    [ -n "$targets" ] || { echo "no fuzz targets in $manifest" >&2; return 1; }

    local crashes=()
    local f
    for f in fuzz/crashes-found/*; do
        case "$f" in *.md) continue ;; esac
        if [ -f "$f" ]; then crashes+=("$f"); fi
    done
    [ ${#crashes[@]} -gt 0 ] || { echo "fuzz/crashes-found holds no reproducers" >&2; return 1; }

    replay_all() {
        local t bin corpus n
        for t in $targets; do
            bin=$target_dir/debug/$t
            corpus=fuzz/corpus/$t
            [ -x "$bin" ] || { echo "missing fuzz binary $bin" >&2; return 1; }
            [ -d "$corpus" ] || { echo "missing corpus folder $corpus" >&2; return 1; }
            n=$(find "$corpus" -maxdepth 1 -type f | wc -l)
            [ "$n" -gt 0 ] || { echo "empty corpus folder $corpus" >&2; return 1; }
            replay "$bin" "$t over $corpus ($n files)" "$n" -runs=0 "$corpus"
            # Files, not a folder: libFuzzer runs each once and stops at the first crash.
            replay "$bin" "$t over fuzz/crashes-found (${#crashes[@]} files)" "${#crashes[@]}" \
                "${crashes[@]}"
        done
    }
    run "fuzz replay" replay_all
}

# perf/ (the comparison harness, its own workspace): compiled, not run; a run needs an idle
# machine and the peers, and its figures go to perf/RESULTS.md by hand.
check_perf() {
    run "perf compiles" cargo check --manifest-path perf/Cargo.toml --all-targets
}

for s in "${steps[@]}"; do
    case "$s" in
        features) check_features ;;
        fuzz) check_fuzz ;;
        perf) check_perf ;;
    esac
done

echo "wall times:"
printf '%s\n' "${timings[@]}"
awk -v a="$started" -v b="$EPOCHREALTIME" 'BEGIN { printf "%8.1fs  total\n", b - a }'
