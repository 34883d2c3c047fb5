#!/bin/sh
# Regenerate every case in this folder by running uhashring itself.
# Installs go through sudo when not run as root.
set -eu
cd "$(dirname "$0")"
export PYTHONDONTWRITEBYTECODE=1
if [ "$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi   # installs as root, or through sudo
PY=/usr/bin/python3   # Debian python3 with the python3-uhashring package (not a pyenv python)
if ! "$PY" -c 'import uhashring' 2>/dev/null; then
  $SUDO apt-get update && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y python3-uhashring
fi
ver=$(dpkg-query -W -f='${Version}' python3-uhashring)
[ "$ver" = "2.1-3" ] || echo "warning: python3-uhashring $ver, vectors were made with 2.1-3" >&2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/cases"
"$PY" ../shared-tools/ketama_cases.py uhashring "$tmp/cases"
rm -rf cases && mkdir cases
for d in "$tmp"/cases/*/; do
  c=$(basename "$d")
  mkdir -p "cases/$c"
  cp "$d/servers.txt" "$d/meta.txt" "cases/$c/"
  opt=""
  [ "$c" = plain_list ] && opt=--plain-list
  "$PY" driver.py "cases/$c/servers.txt" $opt < "$d/keys" > "cases/$c/expected.tsv"
done
echo "uhashring: $(ls cases | wc -l) cases"
