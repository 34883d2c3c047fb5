#!/usr/bin/env bash
# README's test command. Installs the real peers the tests run against (as root, or through
# sudo), then runs the whole suite: every test binary in `cargo test`'s own order, the short
# fault run, and the regeneration of the peer vectors from the installed peers.
# Tests start their own memcached / nutcracker processes on loopback addresses of their own.
set -euo pipefail
cd "$(dirname "$0")/.."

# chromium: cli/tests/plan_report.rs renders `plan --html` headless and reads its DOM and a
# screenshot, as a person sees the report.
# openssl: tests/tls_auth_live.rs makes a client certificate as memcached's TLS guides do
# (`openssl x509 -req`, X.509 version 1).
# The value peers of cli/tests/values_live.rs besides php-memcached and pylibmc: dalli, spymemcached
# (and a JDK to compile its driver), node `memcached` (npm, below). As in regen-vectors.sh, a JDK
# and a node/npm already on PATH are used as they are: a node from another source bundles npm, and
# Debian's npm package conflicts with it.
# The default-placement peers of cli/tests/defaults_live.rs besides php-memcached, pylibmc and
# spymemcached: gomemcache (Debian's Go and its source package, built offline), pymemcache (PyPI,
# into a venv: python3-venv, below).
value_peers=(ruby ruby-dalli libspymemcached-java)
command -v javac >/dev/null || value_peers+=(default-jdk-headless)
{ command -v node && command -v npm; } >/dev/null || value_peers+=(nodejs npm)
bash scripts/apt-install.sh \
    build-essential pkg-config memcached libmemcached-dev nutcracker openssl \
    php-cli php-memcached python3 python3-pylibmc "${value_peers[@]}" \
    golang-go golang-github-bradfitz-gomemcache-dev python3-venv chromium
# Debian puts nutcracker in /usr/sbin, outside a normal user's PATH.
export PATH="$PATH:/usr/sbin"
for tool in memcached nutcracker openssl cc php /usr/bin/python3 ruby javac java node npm go chromium; do
    command -v "$tool" >/dev/null || { echo "missing $tool after installing" >&2; exit 1; }
done
# npm `memcached` 2.2.2 for tests/values/node_values.js: pinned by tests/values/package-lock.json
# (value-vectors/node's, linked), installed into tests/values/node_modules (git-ignored) unless
# that version is there already; npm's cache goes to a temp dir (value-vectors/node/gen.sh does
# the same).
if [ "$(node -p 'try { require("./tests/values/node_modules/memcached/package.json").version } catch (e) { "" }')" != 2.2.2 ]; then
    npm_cache=$(mktemp -d)
    trap 'rm -rf "$npm_cache"' EXIT
    (cd tests/values &&
        npm_config_cache="$npm_cache" npm_config_update_notifier=false npm ci --no-audit --no-fund)
    rm -rf "$npm_cache"
fi
# pymemcache 4.0.0 for tests/defaults/pymemcache_defaults.py: a venv in target/pymemcache-venv (kept,
# reused while it holds that version).
bash scripts/pymemcache-venv.sh
# A peer the tests need that is missing is a failure, not a skip.
export CI=true

# --no-fail-fast: every failing test binary is reported, not just the first.
# Both packages of the workspace (its default members): the library's tests/ and the CLI's
# cli/tests/, which run the memshard binary. Profile `ci` (Cargo.toml): the release build with
# overflow checks on, so an arithmetic overflow the suite reaches panics instead of wrapping;
# `release` itself, what users build, stays as Rust ships it. `cargo test --release
# --all-features` runs the same suite without the checks. MEMSHARD_OVERFLOW_CHECKS tells
# tests/slips.rs to check that they are on.
export MEMSHARD_CARGO_PROFILE=ci MEMSHARD_OVERFLOW_CHECKS=1
cargo test --no-fail-fast --profile "$MEMSHARD_CARGO_PROFILE" --all-features
# Fault run, short form: SIGSTOP one server, SIGKILL and restart another during a verified bench
# (the binary of the same profile).
bash scripts/fault-run.sh --short
# The peer vectors, regenerated from the real peers (installs ruby-dalli, spymemcached, PyPI
# ketama, npm hashring, uhashring), and value-vectors/ and meta-vectors/ from the value peers and
# memcached: any difference from the committed files fails.
bash scripts/regen-vectors.sh
