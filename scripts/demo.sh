#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The README's first command: install what is missing, build, start a
# throwaway redis-server on a free loopback port, show `rlock exec` making
# several processes take turns on one lock and `rlock status` during a
# hold, then stop the server (by its pid) whatever happens.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh

echo "==> building"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc 2>/dev/null || echo 2)" >/dev/null
RLOCK=$PWD/build/rlock

WORK=$(mktemp -d)
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
redis-server --port "$PORT" --bind 127.0.0.1 --save "" --appendonly no \
  --dir "$WORK" --logfile "$WORK/redis.log" --daemonize no &
SERVER=$!
cleanup() {
  kill "$SERVER" 2>/dev/null && wait "$SERVER" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
for _ in $(seq 100); do
  redis-cli -p "$PORT" ping >/dev/null 2>&1 && break
  sleep 0.05
done
export RLOCK_URL="redis://127.0.0.1:$PORT"
echo "==> redis-server pid $SERVER on $RLOCK_URL"

echo
echo "==> three processes take turns on lock 'demo' with 'rlock exec'"
for i in 1 2 3; do
  "$RLOCK" exec demo -- sh -c "echo \"  worker $i: holding 'demo'\"; sleep 1; echo \"  worker $i: done\"" &
  PIDS[$i]=$!
  sleep 0.1
done

sleep 0.4
echo
echo "==> meanwhile, 'rlock status demo':"
"$RLOCK" status demo | sed 's/^/  /'
echo "==> and 'rlock status --json demo':"
echo "  $("$RLOCK" status --json demo)"
echo
for i in 1 2 3; do wait "${PIDS[$i]}"; done

echo
echo "==> a fixed lease (-l) and a bounded wait (-w): a second exec gives up"
"$RLOCK" exec -l 5s demo -- sleep 1 &
HOLDER=$!
sleep 0.2
set +e
"$RLOCK" exec -w 250ms demo -- echo "never printed"
echo "  rlock exec -w 250ms exited with $? (75: not acquired in time)"
set -e
wait "$HOLDER"

echo
echo "==> 'rlock status demo' after everyone left:"
"$RLOCK" status demo | sed 's/^/  /'
echo
echo "==> done; stopping redis-server pid $SERVER"
