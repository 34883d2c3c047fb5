#!/usr/bin/env bash
# Mutation testing with cargo-mutants on the modules that decide correctness, each with the
# tests that should catch its mutants: the unit tests (`--lib`) plus the integration tests that
# exercise the module (live ones start their own memcached on loopback, as in `cargo test`).
#
#   scripts/mutants.sh MODULE...        # one or more of the modules below
#   scripts/mutants.sh --diff [BASE] [--test NAME]...
#                                       # only code changed since BASE (default: HEAD~1), with
#                                       # the unit tests, the live tests of every module the
#                                       # diff touches, and any test target named
#   scripts/mutants.sh --list MODULE    # the mutants, without running them
#   MUTANTS_IN_PLACE=1 scripts/mutants.sh ...   # mutate this tree (don't edit it meanwhile)
#   MUTANTS_SHARD=1/4 scripts/mutants.sh ...    # every 4th mutant only (round-robin)
#   MUTANTS_ITERATE=1 scripts/mutants.sh ...    # again, skipping what the last run caught
#   MUTANTS_RE='regex' scripts/mutants.sh ...   # only the mutants whose names match
#
# Only the named test targets are built for each mutant (`-C --lib -C --test=NAME`: cargo-mutants
# passes `--cargo-arg` to the build and the run alike), and nextest runs them, stopping at the
# first failure. With `--in-place` the tree's own target/mutants/ is reused: no first build.
#
# Results: mutants.out/<module>/ (outcomes.json, caught.txt, missed.txt, unviable.txt, timeout.txt),
# and a summary line per module: caught / missed / unviable / timeout.
# Installs cargo-mutants (crates.io) when missing. Not part of CI: a module takes from minutes
# (core-failure, stampede) to hours (value) on a 2-core machine.
set -euo pipefail
cd "$(dirname "$0")/.."

# module: file globs | the tests that exercise them
declare -A FILES TESTS FILTER
FILES[proto]='src/proto/**'
TESTS[proto]='--lib --test fuzz_corpora'
FILES[ring]='src/ring/**'
TESTS[ring]='--lib --test hash_vectors --test ring_api --test published_vectors --test peer_vectors'
FILES[value]='src/value/**'
TESTS[value]='--lib --test value_vectors'
# only the codec unit tests of --lib: the other 200 start a process each under nextest
FILTER[value]='test(/^value::/) | binary_id(memshard::value_vectors)'
FILES[exchange]='src/core/exchange/** src/core/link.rs src/core/readbuf.rs src/core/multi.rs src/core/route.rs src/core/keys.rs'
TESTS[exchange]='--lib --test client_live --test async_live'
FILES[core-failure]='src/core/failure/**'
TESTS[core-failure]='--lib --test eject_live --test rejoin_live --test reeject_live --test fault_live'
FILES[stampede]='src/settings/stampede.rs src/core/exchange/lease.rs src/core/leased.rs'
TESTS[stampede]='--lib --test stampede_live'
FILES[routes]='src/routes/**'
TESTS[routes]='--lib --test routes_semantics_live'
FILES[policies]='src/routes/policy/** src/routes/node.rs'
TESTS[policies]='--lib --test composed_routes_live'
FILTER[policies]='test(/^routes::/) | binary_id(memshard::composed_routes_live)'
FILES[large]='src/core/large/** src/core/item_limit.rs'
TESTS[large]='--lib --test large_values_live --test typed_many_live'
# the 10-second race is for races, not mutants: the other live cases pin each branch
FILTER[large]='test(/^core::(large|item_limit)::/) | binary_id(memshard::typed_many_live) | (binary_id(memshard::large_values_live) & !test(/racing/))'
FILES[tls]='src/core/tls.rs src/settings/tls.rs src/core/auth.rs src/settings/credentials.rs'
# (cli/tests/tls_live.rs is the CLI package's: cargo-mutants runs this package's tests only)
TESTS[tls]='--lib --test tls_auth_live'
FILES[settings]='src/settings/**'
TESTS[settings]='--lib --test client_live'
FILES[peer]='src/peer.rs src/detect/** src/value/sniff.rs'
# no library integration test uses the profiles or detection (cli/tests/detect_live.rs is the
# CLI package's); the unit tests of those modules and of the codecs and settings they feed
TESTS[peer]='--lib'
FILTER[peer]='test(/^(peer|detect|value|settings)::/)'
FILES[managed]='src/discovery.rs src/proto/discovery.rs src/core/exchange/discover.rs src/core/resolve.rs src/blocking/pool.rs src/aio/pool.rs src/blocking/prober.rs src/aio/prober.rs'
TESTS[managed]='--lib --test managed_live --test client_live --test async_live'

usage() {
    echo "usage: $0 MODULE... | --diff [BASE] | --list MODULE   (modules: ${!FILES[*]})" >&2
    exit 2
}

command -v cargo-mutants >/dev/null || cargo install --locked cargo-mutants
command -v cargo-nextest >/dev/null || cargo install --locked cargo-nextest

common=(--package memshard --all-features --test-tool nextest)
[ "${MUTANTS_IN_PLACE:-0}" = 1 ] && common+=(--in-place --baseline skip --timeout "${MUTANTS_TIMEOUT:-120}")
[ -n "${MUTANTS_SHARD:-}" ] && common+=(--shard "$MUTANTS_SHARD" --sharding round-robin)
[ "${MUTANTS_ITERATE:-0}" = 1 ] && common+=(--iterate)
[ -n "${MUTANTS_RE:-}" ] && common+=(--re "$MUTANTS_RE")
[ $# -gt 0 ] || usage

# run NAME ARGS...: one cargo-mutants run into mutants.out/NAME, then its summary line.
run() {
    local name=$1
    shift
    local out=mutants.out/$name t0=$EPOCHREALTIME
    mkdir -p "$out"
    # cargo-mutants exits 2 when mutants were missed and 3 on timeouts: a finding, not a failure
    # of this script; the summary says what was found.
    cargo mutants "${common[@]}" --output "$out" "$@" || true
    local d=$out/mutants.out
    printf '%-14s caught %4s  missed %4s  unviable %4s  timeout %4s  (%.0f s)\n' "$name" \
        "$(wc -l <"$d/caught.txt" 2>/dev/null || echo 0)" \
        "$(wc -l <"$d/missed.txt" 2>/dev/null || echo 0)" \
        "$(wc -l <"$d/unviable.txt" 2>/dev/null || echo 0)" \
        "$(wc -l <"$d/timeout.txt" 2>/dev/null || echo 0)" \
        "$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { print b - a }')" | tee -a mutants.out/summary.txt
}

# args MODULE: the --file flags of MODULE, and its test targets as --cargo-arg flags.
args() {
    local m=$1 g t
    [ -n "${FILES[$m]:-}" ] || usage
    # the globs go to cargo-mutants as written (the shell would expand `**` to one level)
    local IFS=" "
    set -f
    for g in ${FILES[$m]}; do printf -- '--file\n%s\n' "$g"; done
    set -- ${TESTS[$m]}
    while [ $# -gt 0 ]; do
        case $1 in
            --test) printf -- '--cargo-arg=--test=%s\n' "$2"; shift 2 ;;
            *) printf -- '--cargo-arg=%s\n' "$1"; shift ;;
        esac
    done
    if [ -n "${FILTER[$m]:-}" ]; then
        printf -- '--cargo-test-arg=-E\n--cargo-test-arg=%s\n' "${FILTER[$m]}"
    fi
}

case "$1" in
    --list)
        [ $# -eq 2 ] || usage
        mapfile -t a < <(args "$2")
        cargo mutants "${common[@]}" --list "${a[@]}"
        ;;
    --diff)
        shift
        base=HEAD~1
        if [ $# -gt 0 ] && [ "$1" != --test ]; then
            base=$1
            shift
        fi
        # The test targets: --lib, those named, and those of each module a changed file is in
        # (a mutant only a live test can catch is otherwise reported missed).
        declare -A targets=([--lib]=1)
        while [ $# -gt 0 ]; do
            [ "$1" = --test ] && [ $# -ge 2 ] || usage
            targets["--test=$2"]=1
            shift 2
        done
        mapfile -t changed < <(git diff --name-only "$base" -- src)
        set -f
        for m in "${!FILES[@]}"; do
            for g in ${FILES[$m]}; do
                for f in "${changed[@]}"; do
                    # shellcheck disable=SC2053 # $g is a glob on purpose; `*` matches `/` here
                    [[ $f == $g ]] || continue
                    set -- ${TESTS[$m]}
                    while [ $# -gt 0 ]; do
                        case $1 in
                            --test) targets["--test=$2"]=1; shift 2 ;;
                            *) targets["$1"]=1; shift ;;
                        esac
                    done
                done
            done
        done
        set +f
        cargo_args=()
        for t in "${!targets[@]}"; do cargo_args+=("--cargo-arg=$t"); done
        echo "test targets: ${!targets[*]}" >&2
        diff=$(mktemp)
        git diff "$base" -- src >"$diff"
        run diff --in-diff "$diff" "${cargo_args[@]}"
        rm -f "$diff"
        ;;
    *)
        for m in "$@"; do
            mapfile -t a < <(args "$m")
            run "$m" "${a[@]}"
        done
        ;;
esac
