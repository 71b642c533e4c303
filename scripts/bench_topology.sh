#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Measure what topologies cost, in one run, against throwaway servers:
#   1. many (16 threads, random locks out of 1000) on one server and on a
#      three-master Redis Cluster, three rounds alternating the two (on a
#      machine with more cores than servers the cluster should scale with
#      its masters; on 2 cores it cannot);
#   2. uncontended lock+unlock on a master without replicas and on a
#      master with one replica attached, where every lock write is
#      confirmed with WAIT (rlock_config_set_replica_sync, on by default),
#      three rounds alternating; each next to the bare-hiredis floor of the
#      same server (which sends no WAIT);
#   3. one libuv loop thread with one loop client (rlock-bench loop: 256
#      acquisitions in flight over 1000 locks, then handoffs to an async
#      waiter) on one server and on the three-master cluster, three rounds
#      alternating: pairs/s and the async handoff's p50.
#
# Usage: scripts/bench_topology.sh [--quick]
# A measurement, not a test: exit status 0 unless something failed to run.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD="$ROOT/build-bench"
ROUNDS=3 MANY_S=5 UNC_OPS=20000 HANDOFF_OPS=5000
case "${1:-}" in
  --quick) ROUNDS=1 MANY_S=1 UNC_OPS=2000 HANDOFF_OPS=500 ;;
  "") ;;
  *) echo "bench_topology.sh: unknown argument '$1'" >&2; exit 64 ;;
esac

# shellcheck source=scripts/bench_common.sh
. "$ROOT/scripts/bench_common.sh"
build_bench

WORK=$(mktemp -d "${TMPDIR:-/tmp}/rlock-bench-topo.XXXXXX")

# Servers 1-3: cluster masters; 4: a lone server; 5: a master; 6: its
# replica.
for n in 1 2 3; do # the bus port is its own: port + 10000 may not exist
  start_server "$n" --cluster-enabled yes --cluster-config-file "nodes-$n.conf" \
               --cluster-node-timeout 2000 --cluster-port "$(free_port)"
done
start_server 4
start_server 5
start_server 6 --replicaof 127.0.0.1 "${PORTS[4]}"
redis-cli --cluster create "127.0.0.1:${PORTS[0]}" "127.0.0.1:${PORTS[1]}" \
          "127.0.0.1:${PORTS[2]}" --cluster-yes >/dev/null
ready() { # $1 port; $2 command (INFO replication, CLUSTER INFO); $3 line
  local i
  for i in $(seq 200); do
    redis-cli -p "$1" $2 | tr -d '\r' | grep -qx "$3" && return 0
    sleep 0.05
  done
  echo "bench: 127.0.0.1:$1 never showed '$3'" >&2
  return 1
}
for n in 0 1 2; do ready "${PORTS[$n]}" "cluster info" cluster_state:ok; done
ready "${PORTS[5]}" "info replication" master_link_status:up

CLUSTER="redis-cluster://127.0.0.1:${PORTS[0]},127.0.0.1:${PORTS[1]}"
LONE="redis://127.0.0.1:${PORTS[3]}"
MASTER="redis://127.0.0.1:${PORTS[4]}"
echo "bench: cluster $CLUSTER, lone $LONE, master with replica $MASTER" >&2

field() { # $1 JSON line, $2 field
  python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"
}

for r in $(seq "$ROUNDS"); do
  one=$("$BENCH" -u "$LONE" --json many --threads 16 --seconds "$MANY_S")
  clu=$("$BENCH" -u "$CLUSTER" --json many --threads 16 --seconds "$MANY_S")
  echo "$one"; echo "$clu"
  echo "round $r many pairs/s: one server $(field "$one" ops_per_s)," \
       "cluster of 3 $(field "$clu" ops_per_s)"
done
for r in $(seq "$ROUNDS"); do
  lone=$("$BENCH" -u "$LONE" --json uncontended --ops "$UNC_OPS")
  sync=$("$BENCH" -u "$MASTER" --json uncontended --ops "$UNC_OPS")
  echo "$lone"; echo "$sync"
  echo "round $r uncontended p50 us (vs floor): no replica" \
       "$(field "$lone" lock_unlock_p50_us) ($(field "$lone" lock_unlock_vs_floor))," \
       "replica+WAIT $(field "$sync" lock_unlock_p50_us) ($(field "$sync" lock_unlock_vs_floor))"
done
for r in $(seq "$ROUNDS"); do
  lone=$("$BENCH" -u "$LONE" --json loop --threads 256 --seconds "$MANY_S" \
         --ops "$HANDOFF_OPS")
  clu=$("$BENCH" -u "$CLUSTER" --json loop --threads 256 --seconds "$MANY_S" \
        --ops "$HANDOFF_OPS")
  echo "$lone"; echo "$clu"
  echo "round $r loop pairs/s: one server $(field "$lone" pairs_per_s)," \
       "cluster of 3 $(field "$clu" pairs_per_s); async handoff p50 us:" \
       "one server $(field "$lone" handoff_p50_us)," \
       "cluster $(field "$clu" handoff_p50_us)"
done
