#!/bin/bash
# Usage: netns-run.sh CMD [ARG...]
#
# Runs CMD in a private network namespace whose only interface is its own loopback (127.0.0.0/8
# and ::1, brought up here), as the calling user, with the calling environment plus
# MEMSHARD_IN_NETNS=1. The generate.sh scripts that start memcached or nutcracker use it: their
# servers must listen on the fixed loopback addresses the cases name (the addresses are part of
# the answers, so they cannot be chosen at random), and in a namespace of their own those cannot
# clash with anything listening on the host's loopback, and nothing run there reaches past it.
#
# Needs unshare and setpriv (util-linux), ip (iproute2) and root, directly or through `sudo -n`.
# If no namespace can be made, CMD runs on the host's loopback after a warning, with
# MEMSHARD_IN_NETNS=host; the callers then refuse any address that is already in use.
# MEMSHARD_NETNS=require makes that an error instead; MEMSHARD_NETNS=off skips the namespace.
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: $0 CMD [ARG...]" >&2; exit 2; }
PATH=$PATH:/usr/sbin:/sbin
mode=${MEMSHARD_NETNS:-auto}

if [ "$mode" != off ] && command -v unshare >/dev/null && command -v ip >/dev/null; then
  if [ "$(id -u)" = 0 ]; then
    if unshare -n true 2>/dev/null; then
      exec unshare -n -- /bin/sh -c 'ip link set lo up && export MEMSHARD_IN_NETNS=1 && exec "$@"' sh "$@"
    fi
  elif command -v sudo >/dev/null && command -v setpriv >/dev/null && sudo -n unshare -n true 2>/dev/null; then
    # root only to make the namespace and bring lo up; then back to this user (setpriv), with this
    # environment passed as arguments (sudo would reset it).
    mapfile -d '' envs < <(env -0)
    exec sudo -n unshare -n -- /bin/sh -c 'ip link set lo up && exec "$@"' sh \
      setpriv --reuid="$(id -u)" --regid="$(id -g)" --init-groups -- \
      env -i "${envs[@]}" MEMSHARD_IN_NETNS=1 "$@"
  fi
fi
if [ "$mode" = require ]; then
  echo "netns-run.sh: cannot make a private network namespace (MEMSHARD_NETNS=require)" >&2
  exit 1
fi
[ "$mode" = off ] || echo "netns-run.sh: no private network namespace here; servers go on the host's loopback" >&2
export MEMSHARD_IN_NETNS=host
exec "$@"
