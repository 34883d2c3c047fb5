# Sourced by value-vectors/{dalli,spymemcached,node}/gen.sh: one memcached for the run on
# a free port of 127.0.0.1 (loopback only), stopped by its PID.
#   start_memcached   sets PORT and MC_PID, returns when it accepts connections
#   stop_memcached    SIGKILL to MC_PID (memcached 1.6 takes up to 1 s on SIGTERM), then wait
MEMCACHED=$(command -v memcached || echo /usr/bin/memcached)
start_memcached() {
  local try
  for try in 1 2 3 4 5; do
    PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
    if [ "$(id -u)" = 0 ]; then
      "$MEMCACHED" -u nobody -l 127.0.0.1 -p "$PORT" -U 0 -m 64 -t 1 -c 64 &
    else
      "$MEMCACHED" -l 127.0.0.1 -p "$PORT" -U 0 -m 64 -t 1 -c 64 &
    fi
    MC_PID=$!
    for _ in $(seq 50); do
      (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && return 0
      kill -0 "$MC_PID" 2>/dev/null || break
      sleep 0.1
    done
    stop_memcached
  done
  echo "could not start memcached on 127.0.0.1" >&2
  return 1
}
stop_memcached() {
  [ -n "${MC_PID:-}" ] || return 0
  kill -KILL "$MC_PID" 2>/dev/null || true
  wait "$MC_PID" 2>/dev/null || true
  MC_PID=
}
