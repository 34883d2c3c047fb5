#!/usr/bin/env bash
# Regenerates compat-vectors/<peer>/ from the real, installed peers (each folder's generate.sh),
# and value-vectors/ (the values php-memcached, pylibmc, dalli, spymemcached and node memcached
# store: value-vectors/generate.sh) and meta-vectors/ (memcached's meta replies:
# meta-vectors/generate.py), and fails if the result differs in any way from the committed files
# (modified, deleted or new files).
#
#   scripts/regen-vectors.sh            the default peers (DEFAULT_PEERS below)
#   scripts/regen-vectors.sh PEER...    only these (any folder of compat-vectors with a generate.sh,
#                                       or value-vectors, meta-vectors)
#   scripts/regen-vectors.sh --all      the default peers and twemproxy (slow: its corner search)
#
# Runs as root, or as a user with sudo: the packages a peer needs are installed first, in one
# apt-get call, through $SUDO (empty as root). The generate.sh scripts run as the calling user;
# those that start memcached/nutcracker do so on loopback only, in a private network namespace
# when one can be made (compat-vectors/shared-tools/netns-run.sh), and stop them at the end.
# A peer folder with uncommitted changes is refused (generate.sh would overwrite them). After a
# failure the regenerated files are left in place for inspection; to go back to the committed ones:
#   git checkout -- compat-vectors/PEER && git clean -fdq -- compat-vectors/PEER
set -euo pipefail
cd "$(dirname "$0")/.."

DEFAULT_PEERS=(dalli spymemcached libketama node-hashring uhashring libmemcached php-memcached pylibmc
  php-memcached-modula pylibmc-modula spymemcached-modula pymemcache gomemcache
  value-vectors meta-vectors)
# aws-java-ketama and aws-discovery are checked (cli/tests/compat_vectors.rs, cli/tests/managed_live.rs)
# but not regenerated: their peers are on no package registry, and those folders have no generate.sh.
SLOW_PEERS=(twemproxy)

if [ "${1:-}" = --all ]; then
  shift
  [ $# -eq 0 ] || { echo "usage: $0 [--all | PEER...]" >&2; exit 2; }
  PEERS=("${DEFAULT_PEERS[@]}" "${SLOW_PEERS[@]}")
elif [ $# -gt 0 ]; then
  PEERS=("$@")
else
  PEERS=("${DEFAULT_PEERS[@]}")
fi

if [ "$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi
export PYTHONDONTWRITEBYTECODE=1
export PATH="$PATH:/usr/sbin:/sbin"

now() { date +%s%N; }
secs() { local ms=$(( ($(now) - $1) / 1000000 )); printf '%d.%d' $((ms / 1000)) $((ms % 1000 / 100)); }

command -v git >/dev/null && git rev-parse --is-inside-work-tree >/dev/null 2>&1 ||
  { echo "regen-vectors: needs git and a git checkout" >&2; exit 2; }

# Debian packages each peer's generate.sh needs (it would install them itself; installing them all
# here first takes one apt-get run instead of several). iproute2: `ip`, for the private loopback.
apt_packages() {
  case "$1" in
    dalli)         echo ruby ruby-dalli memcached python3 iproute2 ;;
    spymemcached)  echo libspymemcached-java python3
                   command -v javac >/dev/null || echo default-jdk-headless ;;
    libketama)     echo gcc python3-dev python3-venv ;;   # + PyPI ketama==0.1.1 (pip, in a temp venv)
    node-hashring) echo python3                           # + npm hashring 3.2.0 (npm ci, package-lock.json)
                   { command -v node && command -v npm; } >/dev/null || echo nodejs npm ;;
    uhashring)     echo python3-uhashring ;;
    libmemcached)  echo libmemcached-dev gcc python3 ;;
    php-memcached) echo php-cli php-memcached python3 ;;
    pylibmc)       echo python3-pylibmc memcached libmemcached-dev iproute2 ;;
    php-memcached-modula) echo php-cli php-memcached python3 ;;
    pylibmc-modula) echo python3-pylibmc memcached libmemcached-dev iproute2 ;;
    spymemcached-modula) echo libspymemcached-java python3
                   command -v javac >/dev/null || echo default-jdk-headless ;;
    pymemcache)    echo python3-venv ;;                   # + PyPI pymemcache==4.0.0 (pip, in a temp venv)
    gomemcache)    echo golang-go golang-github-bradfitz-gomemcache-dev python3 ;;
    twemproxy)     echo nutcracker memcached gcc python3 libssl-dev iproute2 ;;
    value-vectors) echo memcached php-cli php-memcached php-igbinary php-msgpack python3-pylibmc \
                        ruby ruby-dalli faketime libspymemcached-java python3
                   command -v javac >/dev/null || echo default-jdk-headless
                   { command -v node && command -v npm; } >/dev/null || echo nodejs npm ;;
    meta-vectors)  echo memcached python3 ;;
    *)             ;;
  esac
}

# The folder a target regenerates, and its generator.
dir_of() {
  case "$1" in
    value-vectors|meta-vectors) echo "$1" ;;
    *)                          echo "compat-vectors/$1" ;;
  esac
}
generate() {
  case "$1" in
    value-vectors) bash value-vectors/generate.sh ;;
    meta-vectors)  /usr/bin/python3 meta-vectors/generate.py ;;
    *)             bash "compat-vectors/$1/generate.sh" ;;
  esac
}

for p in "${PEERS[@]}"; do
  d=$(dir_of "$p")
  case "$p" in
    value-vectors|meta-vectors) ;;
    *) [ -f "$d/generate.sh" ] || { echo "regen-vectors: no $d/generate.sh" >&2; exit 2; } ;;
  esac
  if [ -n "$(git status --porcelain --untracked-files=all -- "$d")" ]; then
    echo "regen-vectors: $d has uncommitted changes; commit or stash them first:" >&2
    { git status --short --untracked-files=all -- "$d" | head -n 20 >&2; } || true
    exit 2
  fi
done

missing=()
for pkg in $(for p in "${PEERS[@]}"; do apt_packages "$p"; done | tr ' ' '\n' | sort -u); do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q '^install ok installed$' || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ -n "$SUDO" ] && ! command -v sudo >/dev/null; then
    echo "regen-vectors: not root and no sudo; cannot install: ${missing[*]}" >&2
    exit 2
  fi
  echo "regen-vectors: installing ${missing[*]}"
  t0=$(now)
  $SUDO apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  echo "regen-vectors: installed in $(secs "$t0") s"
fi

LOGS=$(mktemp -d)
trap 'rm -rf "$LOGS"' EXIT

bad=()
T0=$(now)
for p in "${PEERS[@]}"; do
  dir=$(dir_of "$p")
  t0=$(now)
  rc=0
  generate "$p" > "$LOGS/$p.log" 2>&1 </dev/null || rc=$?
  if [ "$rc" -ne 0 ]; then
    echo "$p: generate.sh FAILED (exit $rc) after $(secs "$t0") s; last lines of its output:"
    tail -n 30 "$LOGS/$p.log" | sed 's/^/    /'
    bad+=("$p")
    continue
  fi
  took=$(secs "$t0")
  case "$p" in
    value-vectors) cases=$(cat value-vectors/*.json | grep -c '"name": ' || true) ;;
    meta-vectors)  cases=$(/usr/bin/python3 -c 'import json; print(len(json.load(open("meta-vectors/memcached-1.6.18.json"))["cases"]))') ;;
    *)             cases=$(find "$dir/cases" -mindepth 1 -maxdepth 1 -type d 2>/dev/null | wc -l) ;;
  esac
  changed=$(git status --porcelain --untracked-files=all -- "$dir")
  ndiff=$(printf '%s' "$changed" | grep -c . || true)
  if git diff --quiet --exit-code -- "$dir" && [ "$ndiff" -eq 0 ]; then
    echo "$p: $cases cases regenerated, 0 differences ($took s)"
  else
    echo "$p: $cases cases regenerated, $ndiff differences (files modified/removed/added; $took s):"
    { printf '%s\n' "$changed" | head -n 40 | sed 's/^/    /'; } || true
    [ "$ndiff" -le 40 ] || echo "    ... ($ndiff files in all)"
    if ! git diff --quiet -- "$dir"; then
      git diff --stat=100 -- "$dir" | tail -n 1 | sed 's/^/   /'
      echo "    first changed lines:"
      { git diff -U0 -- "$dir" | grep -E '^[-+]' | grep -vE '^(\+\+\+|---) ' | head -n 10 | sed 's/^/      /'; } || true
    fi
    bad+=("$p")
  fi
done

echo "regen-vectors: ${#PEERS[@]} peers in $(secs "$T0") s; $(( ${#PEERS[@]} - ${#bad[@]} )) reproduce the committed vectors"
if [ ${#bad[@]} -gt 0 ]; then
  echo "regen-vectors: FAILED for ${bad[*]}" >&2
  echo "  (back to the committed files: git checkout -- DIR && git clean -fdq -- DIR, DIR = compat-vectors/PEER, value-vectors or meta-vectors)" >&2
  exit 1
fi
