# SPDX-License-Identifier: BSD-3-Clause
# What the bench scripts share (sourced, not run): building rlock-bench,
# and throwaway redis-server processes. The caller sets ROOT (the source
# tree) and BUILD, then WORK (a temporary directory, removed on exit)
# before starting servers. Servers listen on free loopback ports with
# persistence off and are stopped by their pids, never by name, when the
# calling script exits for any reason.
#
#   build_bench               install what is missing, build Release into
#                             $BUILD; sets BENCH to the rlock-bench binary
#   start_server N [ARG...]   start server number N with extra ARGs;
#                             appends to SERVER_PIDS and PORTS
#   load_script NAME PORT     SCRIPT LOAD script NAME as the library embeds
#                             it (`rlock-bench --script NAME`), check that
#                             the SHA1 is the library's (generated/scripts.c)
#                             and print it

build_bench() {
  "$ROOT/scripts/deps.sh"
  echo "bench: building Release into $BUILD" >&2
  cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release \
        -DRLOCK_BUILD_TESTS=OFF >/dev/null
  cmake --build "$BUILD" -j"$(nproc)" --target rlock-bench >/dev/null
  BENCH="$BUILD/rlock-bench"
}

load_script() {
  local sha want
  want=$(sed -n "s/.*\"$1\", \"\([0-9a-f]\{40\}\)\".*/\1/p" \
           "$BUILD/generated/scripts.c")
  sha=$("$BENCH" --script "$1" | redis-cli -p "$2" -x script load)
  if [ -z "$want" ] || [ "$sha" != "$want" ]; then
    echo "bench: SCRIPT LOAD of $1 returned '$sha', the library's SHA1 is" \
         "'$want' ($BUILD/generated/scripts.c)" >&2
    return 1
  fi
  echo "$sha"
}

# evalsha_ceiling PORT CONNECTIONS REQUESTS [redis-benchmark options...]:
# the server's EVALSHA ceiling with rlock's acquire script (redis-benchmark
# over 1000 random keys, each then holding a 30 s lease: flushed after, so
# they cost nothing later). Prints requests per second; fails, with
# redis-benchmark's output on stderr, when it printed none.
evalsha_ceiling() {
  local port=$1 conns=$2 n=$3 sha out rps
  shift 3
  sha=$(load_script lock_acquire "$port")
  out=$(redis-benchmark -p "$port" -c "$conns" -n "$n" -r 1000 -q "$@" \
          evalsha "$sha" 1 key:__rand_int__ 30000 \
          9f1c2b7e-4d3a-4e5f-8a6b-0c1d2e3f4a5b:1 | tr '\r' '\n')
  rps=$(printf '%s\n' "$out" |
        sed -n 's/.*: \([0-9.]*\) requests per second.*/\1/p' | tail -n 1)
  redis-cli -p "$port" flushall >/dev/null
  if [ -z "$rps" ]; then
    printf 'bench: cannot read redis-benchmark output:\n%s\n' "$out" >&2
    return 1
  fi
  echo "$rps"
}

SERVER_PIDS=() # the servers started, by pid; PORTS[i] is SERVER_PIDS[i]'s
PORTS=()

stop_pid() {
  kill "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}

cleanup() {
  local pid
  for pid in "${SERVER_PIDS[@]}"; do
    stop_pid "$pid"
  done
  if [ -n "${WORK:-}" ]; then rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM

free_port() {
  python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()'
}

# Start redis-server number $1 (extra arguments after it) on a free port;
# another process may grab the port between picking and binding it, so
# try a few.
start_server() {
  local n=$1 log="$WORK/redis-$1.log" attempt i port pid
  shift
  for attempt in 1 2 3 4 5; do
    port=$(free_port)
    redis-server --bind 127.0.0.1 --port "$port" --save "" --appendonly no \
                 --dir "$WORK" --logfile "$log" "$@" &
    pid=$!
    SERVER_PIDS+=("$pid")
    for i in $(seq 100); do
      if ! kill -0 "$pid" 2>/dev/null; then break; fi
      if [ "$(redis-cli -p "$port" ping 2>/dev/null)" = "PONG" ]; then
        PORTS+=("$port")
        echo "bench: redis-server $n pid $pid on 127.0.0.1:$port" >&2
        return 0
      fi
      sleep 0.05
    done
    stop_pid "$pid"
    unset 'SERVER_PIDS[-1]'
    echo "bench: redis-server $n did not come up on port $port" \
         "(attempt $attempt)" >&2
  done
  tail -n 20 "$log" >&2 || true
  return 1
}
