#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# An event-loop client next to the server's pipelined ceiling, in one run
# against one throwaway redis-server (stopped by pid on exit):
#   - redis-benchmark EVALSHA of the library's acquire script, pipelined
#     (-P 32) over 1 connection and over 50, three rounds each;
#   - rlock-bench loop (one libuv loop thread, one loop client: its one
#     pipelined connection, N acquisitions in flight over 1000 locks, then
#     handoffs to an async waiter), three rounds at 16 and at 256 in
#     flight, alternating with the ceilings;
#   - the same loop run at 16 in flight on libevent (--driver event), for
#     the adapters side by side: pairs/s, handoffs (p50 and worst, the
#     waiter fresh and asleep 5-105 ms) and 2 ms bounded waits (the
#     client's timer);
#   - rlock-bench many (16 threads on a blocking client) for reference.
# Prints one table; 2 x pairs/s is the script rate the server sees.
#
#   scripts/bench_loop.sh [SECONDS]       (default 5 per throughput round)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$ROOT/build-bench
SECS=${1:-5}
. "$ROOT/scripts/bench_common.sh"
build_bench
WORK=$(mktemp -d)
start_server 0
PORT=${PORTS[0]}
URL="redis://127.0.0.1:$PORT"

ceiling() { # connections: pipelined, 32 deep
  evalsha_ceiling "$PORT" "$1" 400000 -P 32
}

field() { # json key
  python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' \
    "$1" "$2"
}

declare -a C1 C50 L16 L256 H16 M
declare -A AD # "<figure> <driver>": the rounds' values
adapter() { # driver json: keep the adapters' figures
  local k
  for k in pairs_per_s handoff_p50_us handoff_max_us handoff_asleep_p50_us \
    handoff_asleep_max_us bounded_2ms_p50_us bounded_2ms_max_us; do
    AD["$k $1"]+="$(field "$2" "$k") "
  done
}
for round in 1 2 3; do
  C1+=("$(ceiling 1)")
  j=$("$BENCH" -u "$URL" --json loop --threads 16 --seconds "$SECS" --ops 5000)
  L16+=("$(field "$j" pairs_per_s)")
  H16+=("$(field "$j" handoff_p50_us)")
  adapter uv "$j"
  j=$("$BENCH" -u "$URL" --json loop --driver event --threads 16 \
    --seconds "$SECS" --ops 5000)
  adapter event "$j"
  C50+=("$(ceiling 50)")
  j=$("$BENCH" -u "$URL" --json loop --threads 256 --seconds "$SECS" --ops 1000)
  L256+=("$(field "$j" pairs_per_s)")
  j=$("$BENCH" -u "$URL" --json many --threads 16 --seconds "$SECS")
  M+=("$(field "$j" ops_per_s)")
  echo "bench: round $round done" >&2
done

median() { printf '%s\n' "$@" | sort -g | sed -n 2p; }
ratio() { python3 -c "print(f'{2*float(\"$1\")/float(\"$2\"):.2f}')"; }
c1=$(median "${C1[@]}"); c50=$(median "${C50[@]}")
l16=$(median "${L16[@]}"); l256=$(median "${L256[@]}"); m=$(median "${M[@]}")
echo
echo "| Figure (3 rounds, median) | rounds | median |"
echo "|---|---|---|"
echo "| redis-benchmark EVALSHA, -P 32, 1 connection (req/s) | ${C1[*]} | $c1 |"
echo "| redis-benchmark EVALSHA, -P 32, 50 connections (req/s) | ${C50[*]} | $c50 |"
echo "| loop client, 16 in flight: pairs/s | ${L16[*]} | $l16 |"
echo "| loop client, 256 in flight: pairs/s | ${L256[*]} | $l256 |"
echo "| blocking client, 16 threads (many): pairs/s | ${M[*]} | $m |"
echo "| handoff to an async waiter, p50 (us) | ${H16[*]} | $(median "${H16[@]}") |"
echo "| 2 x loop pairs/s (256) / 1-connection ceiling | | $(ratio "$l256" "$c1") |"
echo "| 2 x loop pairs/s (256) / 50-connection ceiling | | $(ratio "$l256" "$c50") |"
echo "| loop (256) / blocking many (16 threads) | | $(python3 -c "print(f'{float(\"$l256\")/float(\"$m\"):.2f}')") |"
echo
echo "| Adapter, 16 in flight (3 rounds, median; worst: the rounds' max) | libuv | libevent |"
echo "|---|---|---|"
worst() { printf '%s\n' "$@" | sort -g | tail -1; }
for k in pairs_per_s handoff_p50_us handoff_max_us handoff_asleep_p50_us \
  handoff_asleep_max_us bounded_2ms_p50_us bounded_2ms_max_us; do
  pick=median
  case $k in *max_us) pick=worst ;; esac
  # shellcheck disable=SC2086 # the rounds' values, split on purpose
  echo "| $k | ${AD["$k uv"]}-> $($pick ${AD["$k uv"]}) | ${AD["$k event"]}-> $($pick ${AD["$k event"]}) |"
done
