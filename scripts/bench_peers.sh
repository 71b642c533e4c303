#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# rlock next to the lock libraries a user would otherwise pick, on the same
# workloads against one throwaway redis-server, in one run:
#   rlock            rlock-bench --json (uncontended, many, contended,
#                    handoff)
#   redis-py         redis.lock.Lock (Debian's python3-redis):
#                    bench/peers/py/peer_redispy.py
#   node-redlock     redlock 5 beta over ioredis: bench/peers/node/peer.mjs
#   redis-semaphore  its Mutex over ioredis: bench/peers/node/peer.mjs
# Workloads (bench/peers/README.md says what each worker does):
#   1. uncontended: one worker, one lock name, lock+unlock pairs in a row
#   2. contended: 4 processes on one lock, a non-atomic GET + SET of a
#      counter inside, think 0 and 1 ms outside; lost updates and overlaps
#   3. handoff: 2 processes in a ping-pong, the holder holding 300 us while
#      the other already waits
#   4. many: 8 workers, random locks out of 1000
# and the same for semaphores, one permit at a time (rlock-bench semaphore,
# both of rlock's kinds, next to redis-semaphore's Semaphore):
#   1. uncontended: one worker, acquire+release pairs of one permit
#   2. contended: 8 processes on a semaphore of 3 permits, each holding
#      1000 us; acquisitions/s, acquire p50/p99, overlaps (more than 3
#      holders counted at once)
#   3. handoff: 2 processes in a ping-pong on 1 permit, holding 300 us
# plus the server's EVALSHA ceiling (redis-benchmark) and PING round trip.
# Each round runs every workload for every library back to back (the
# libraries' order rotating by round), and the table gives medians over
# the rounds, with ratios peer/rlock: one table for the locks, one for the
# semaphores.
#
# Usage: scripts/bench_peers.sh [--quick] [--rounds R] [--no-build]
#                               [--only locks|semaphores]
#   --quick     one short round (under 2 minutes), for smoke-testing
#   --rounds R  rounds (default 3, about 5 minutes on 2 CPUs)
#   --no-build  use build-bench/rlock-bench as it is (no cmake)
#   --only W    the locks' workloads only, or the semaphores' only
#
# It is a measurement: the exit status is 0 unless something failed to run
# (a worker exited non-zero or printed nothing). One redis-server listens
# on a free loopback port with persistence off and is stopped by its pid
# when this script exits for any reason.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD="$ROOT/build-bench"
PEERS="$ROOT/bench/peers"
PY=/usr/bin/python3 # Debian's python3-redis is installed for this one
QUICK=0
ROUNDS=""
NO_BUILD=0
ONLY=""

usage() {
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' \
      "${BASH_SOURCE[0]}"
}

while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1 ;;
    --rounds)
      if [ $# -lt 2 ] || ! [[ "$2" =~ ^[1-9][0-9]*$ ]]; then
        echo "bench_peers.sh: --rounds takes a positive integer" >&2
        exit 64
      fi
      ROUNDS=$2
      shift ;;
    --no-build) NO_BUILD=1 ;;
    --only)
      if [ $# -lt 2 ] || { [ "$2" != locks ] && [ "$2" != semaphores ]; }; then
        echo "bench_peers.sh: --only takes locks or semaphores" >&2
        exit 64
      fi
      ONLY=$2
      shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "bench_peers.sh: unknown argument '$1' (try --help)" >&2
       exit 64 ;;
  esac
  shift
done

# UNC_OPS: uncontended pairs per run, UNC_BLOCKS runs per library and
# round (alternating); UNC_S: seconds of rlock's pairs/s run;
# CON_OPS: acquisitions per process in contended, which a peer stops
# after CON_MAX_S seconds (polling waiters are slow); HAND_*: handoff,
# rlock's phases and rounds, the peers' ping-pong bounded by HAND_MAX_S;
# MANY_S: seconds of many; CEIL_N: redis-benchmark EVALSHA requests;
# PING_N: PINGs timing the round trip before each uncontended run;
# SEM_OPS: acquisitions per process in the semaphores' contended run,
# which redis-semaphore's stops after SEM_MAX_S seconds.
if [ "$QUICK" -eq 1 ]; then
  : "${ROUNDS:=1}"
  UNC_OPS=1000 UNC_BLOCKS=2 UNC_S=0.3 CON_OPS=200 CON_MAX_S=2 HAND_OPS=50 HAND_ROUNDS=2
  HAND_MAX_S=1.5 MANY_S=1 CEIL_N=20000 PING_N=2000 SEM_OPS=100 SEM_MAX_S=2
else
  : "${ROUNDS:=3}"
  UNC_OPS=2000 UNC_BLOCKS=5 UNC_S=0.5 CON_OPS=1000 CON_MAX_S=5 HAND_OPS=100 HAND_ROUNDS=4
  HAND_MAX_S=4 MANY_S=3 CEIL_N=100000 PING_N=5000 SEM_OPS=500 SEM_MAX_S=5
fi
PROCS=4 THINK_US=1000 HOLD_US=300 MANY_WORKERS=8 MANY_LOCKS=1000
SEM_PROCS=8 SEM_PERMITS=3 SEM_HOLD_US=1000

# ---- dependencies and build -------------------------------------------------
# shellcheck source=scripts/bench_common.sh
. "$ROOT/scripts/bench_common.sh"

# Install the Debian packages in "$@" that are missing (as deps.sh does).
need_pkgs() {
  local p missing=() sudo=""
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
      grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "bench: installing ${missing[*]}" >&2
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" \
    >/dev/null
}

if [ "$NO_BUILD" -eq 1 ]; then
  BENCH="$BUILD/rlock-bench"
  if [ ! -x "$BENCH" ]; then
    echo "bench: --no-build, but $BENCH is missing" >&2
    exit 1
  fi
else
  build_bench # runs scripts/deps.sh (redis-server, redis-tools, cmake...)
fi
need_pkgs python3-redis redis-server redis-tools
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  need_pkgs nodejs npm
fi
if [ ! -d "$PEERS/node/node_modules" ]; then
  echo "bench: npm ci in $PEERS/node" >&2
  (cd "$PEERS/node" && npm ci --no-audit --no-fund --loglevel=error) >&2
fi

# ---- the server ---------------------------------------------------------------
WORK=$(mktemp -d "${TMPDIR:-/tmp}/rlock-peers.XXXXXX")
start_server 1
PORT=${PORTS[0]}
URL="redis://127.0.0.1:$PORT"

RESULTS="$WORK/results.jsonl"
: >"$RESULTS"
FAILED=()
EXTRA="" # more JSON fields for record() to add

# Run "$@" (a worker printing one JSON line) and append that line to the
# results with "col" (the table's column), "run" (its row group) and
# "round" in front. A worker that fails or prints no JSON is reported and
# counted; the run goes on.
record() {
  local col=$1 run=$2 out
  shift 2
  echo "bench: [round $round] $col $run: ${*##*/}" >&2
  if ! out=$("$@") || [ "${out:0:1}" != "{" ]; then
    echo "bench: FAILED: $col $run: $*" >&2
    FAILED+=("$col $run")
    return 0
  fi
  printf '%s\n' "$out" | tail -n 1 |
    sed "s/^{/{\"col\":\"$col\",\"run\":\"$run\",\"round\":$round,$EXTRA/" \
    >>"$RESULTS"
}

# The server's PING round trip now, in us, from one connection
# (redis-benchmark PING_INLINE -c 1), or "null".
ping_us() {
  local out rps
  out=$(redis-benchmark -p "$PORT" -c 1 -n "$1" -q -t ping_inline |
        tr '\r' '\n')
  rps=$(printf '%s\n' "$out" |
        sed -n 's/.*: \([0-9.]*\) requests per second.*/\1/p' | tail -n 1)
  if [ -n "$rps" ]; then
    awk -v r="$rps" 'BEGIN { printf "%.1f", 1e6 / r }'
  else
    echo null
  fi
}

# Clean slate for every run: no keys left by the one before.
flush() {
  redis-cli -p "$PORT" flushall >/dev/null
}

# One workload ("$1") for library "$2", with the workload's options.
run_one() {
  local run=$1 lib=$2 args=()
  case "$run" in
    unc) args=(uncontended --ops "$UNC_OPS") ;;
    con0) args=(contended --procs "$PROCS" --ops "$CON_OPS" --think-us 0) ;;
    con1) args=(contended --procs "$PROCS" --ops "$CON_OPS"
                --think-us "$THINK_US") ;;
    hand) args=(handoff) ;;
    many) args=(many) ;;
  esac
  flush
  EXTRA=""
  # The machine is shared: PING the server just before each uncontended
  # run, to express its latency in round trips of that moment too.
  if [ "$run" = unc ]; then
    EXTRA="\"ping_ref_us\":$(ping_us "$PING_N"),"
  fi
  case "$lib" in
    rlock)
      case "$run" in
        unc)
          record rlock unc "$BENCH" -u "$URL" --json "${args[@]}"
          # Its pairs/s: the same loop (one thread, one lock name) by time.
          record rlock unc_rate "$BENCH" -u "$URL" --json many \
                 --threads 1 --locks 1 --seconds "$UNC_S" ;;
        hand)
          record rlock hand "$BENCH" -u "$URL" --json handoff --procs 2 \
                 --ops "$HAND_OPS" --rounds "$HAND_ROUNDS" \
                 --hold-us "$HOLD_US" ;;
        many)
          record rlock many "$BENCH" -u "$URL" --json many \
                 --threads "$MANY_WORKERS" --locks "$MANY_LOCKS" \
                 --seconds "$MANY_S" ;;
        *) record rlock "$run" "$BENCH" -u "$URL" --json "${args[@]}" ;;
      esac
      return ;;
    redis-py) set -- "$PY" "$PEERS/py/peer_redispy.py" --port "$PORT" ;;
    node-redlock) set -- node "$PEERS/node/peer.mjs" --lib redlock \
                         --port "$PORT" ;;
    redis-semaphore) set -- node "$PEERS/node/peer.mjs" --lib semaphore \
                            --port "$PORT" ;;
  esac
  case "$run" in
    con0|con1) args+=(--max-seconds "$CON_MAX_S") ;;
    hand) args+=(--ops "$HAND_OPS" --hold-us "$HOLD_US"
                 --max-seconds "$HAND_MAX_S") ;;
    many) args+=(--procs "$MANY_WORKERS" --locks "$MANY_LOCKS"
                 --seconds "$MANY_S") ;;
  esac
  record "$lib" "$run" "$@" "${args[@]}"
}

# One semaphore workload ("$1": sunc, scon, shand) for column "$2":
# rlock-sem (rlock_semaphore), rlock-psem (rlock_psemaphore, watchdog) or
# rs-sem (redis-semaphore's Semaphore).
run_sem() {
  local run=$1 col=$2 args=()
  flush
  EXTRA=""
  if [ "$run" = sunc ]; then
    EXTRA="\"ping_ref_us\":$(ping_us "$PING_N"),"
  fi
  if [ "$col" = rs-sem ]; then
    set -- node "$PEERS/node/peer.mjs" --lib sem --port "$PORT"
    case "$run" in
      sunc) args=(uncontended --ops "$UNC_OPS") ;;
      scon) args=(--permits "$SEM_PERMITS" contended --procs "$SEM_PROCS"
                  --ops "$SEM_OPS" --hold-us "$SEM_HOLD_US"
                  --max-seconds "$SEM_MAX_S") ;;
      shand) args=(handoff --ops "$HAND_OPS" --hold-us "$HOLD_US"
                   --max-seconds "$HAND_MAX_S") ;;
    esac
  else
    set -- "$BENCH" -u "$URL" --json semaphore --kind \
           "$([ "$col" = rlock-psem ] && echo expirable || echo plain)"
    case "$run" in
      sunc) args=(--ops "$UNC_OPS") ;;
      scon) args=(--procs "$SEM_PROCS" --permits "$SEM_PERMITS"
                  --ops "$SEM_OPS" --hold-us "$SEM_HOLD_US") ;;
      shand) args=(--procs 2 --ops "$HAND_OPS" --hold-us "$HOLD_US"
                   --ping-pong) ;;
    esac
  fi
  record "$col" "$run" "$@" "${args[@]}"
}

# The server's EVALSHA ceiling with rlock's acquire script, as bench.sh
# measures it (50 connections, 1000 random keys), and its PING round trip
# from one connection (redis-benchmark PING_INLINE, -c 1).
server_refs() {
  local rps
  echo "bench: [round $round] redis-benchmark EVALSHA -c 50 -n $CEIL_N" >&2
  if ! rps=$(evalsha_ceiling "$PORT" 50 "$CEIL_N"); then
    FAILED+=("server evalsha")
    return 0
  fi
  printf '{"col":"server","run":"ceiling","round":%s,"requests_per_s":%s}\n' \
         "$round" "$rps" >>"$RESULTS"
  printf '{"col":"server","run":"ping","round":%s,"rtt_us":%s}\n' \
         "$round" "$(ping_us $((CEIL_N / 10)))" >>"$RESULTS"
}

# ---- the rounds -------------------------------------------------------------
# shellcheck disable=SC2034 # both read through rotate's nameref
LIBS=(rlock redis-py node-redlock redis-semaphore)
# shellcheck disable=SC2034
SEMS=(rlock-sem rlock-psem rs-sem)

# Rotate the array named $1 by the round into `order`, so no one always
# runs first.
rotate() {
  local -n all=$1
  order=()
  for ((i = 0; i < ${#all[@]}; i++)); do
    order+=("${all[(i + round - 1) % ${#all[@]}]}")
  done
}

lock_round() {
  rotate LIBS
  # Uncontended figures are close to one another and to the round trip,
  # which a shared machine moves by phases: UNC_BLOCKS short runs per
  # library, alternating, and the median over all of them.
  for _ in $(seq "$UNC_BLOCKS"); do
    for lib in "${order[@]}"; do
      run_one unc "$lib"
    done
  done
  for run in con0 con1 hand many; do
    for lib in "${order[@]}"; do
      run_one "$run" "$lib"
    done
  done
}

sem_round() {
  rotate SEMS
  for _ in $(seq "$UNC_BLOCKS"); do
    for col in "${order[@]}"; do
      run_sem sunc "$col"
    done
  done
  for run in scon shand; do
    for col in "${order[@]}"; do
      run_sem "$run" "$col"
    done
  done
}

T0=$(date +%s)
for round in $(seq "$ROUNDS"); do
  server_refs
  [ "$ONLY" = semaphores ] || lock_round
  [ "$ONLY" = locks ] || sem_round
done
ELAPSED=$(($(date +%s) - T0))

# ---- the table --------------------------------------------------------------
mkdir -p "$BUILD"
cp "$RESULTS" "$BUILD/bench-peers-last.jsonl"
CPU=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
REDIS_VER=$(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p')
echo
echo "== raw results: $BUILD/bench-peers-last.jsonl ($(wc -l <"$RESULTS") runs) =="
echo
echo "== rlock and its peers: medians over $ROUNDS round(s), ${ELAPSED} s;" \
     "$(nproc) CPUs, ${CPU:-unknown CPU}, redis-server $REDIS_VER," \
     "node $(node --version)," \
     "redis-py $("$PY" -c 'import redis; print(redis.__version__)') =="
[ "$ONLY" = semaphores ] ||
"$PY" - "$RESULTS" "$PROCS" "$CON_OPS" "$THINK_US" "$HOLD_US" \
      "$MANY_WORKERS" "$MANY_LOCKS" <<'PY'
import json
import statistics
import sys

rows = [json.loads(line) for line in open(sys.argv[1])]
procs, con_ops, think, hold, workers, locks = map(int, sys.argv[2:8])
LIBS = ["rlock", "redis-py", "node-redlock", "redis-semaphore"]
PEERS = LIBS[1:]


def runs(col, run):
    return [r for r in rows if r["col"] == col and r["run"] == run]


def med(col, run, key):
    v = [r[key] for r in runs(col, run) if r.get(key) is not None]
    return statistics.median(v) if v else None


def total(col, run, key):
    v = [r[key] for r in runs(col, run) if r.get(key) is not None]
    return sum(v) if v else None


def fmt(v):
    if v is None:
        return "n/a"
    if isinstance(v, str):
        return v
    if abs(v) >= 100 or float(v).is_integer():
        return f"{v:,.0f}"
    return f"{v:.1f}"


table = []  # (label, {lib: value}, ratio?)


def row(label, values, ratio=True):
    table.append((label, values, ratio))


def rate_lat(run, label, rate_key="acquisitions_per_s"):
    row(f"{label}: acquisitions/s",
        {c: med(c, run, rate_key) for c in LIBS})
    row(f"{label}: handoff p50 us",
        {c: med(c, run, "handoff_p50_us") for c in LIBS})
    row(f"{label}: handoff p99 us",
        {c: med(c, run, "handoff_p99_us") for c in LIBS})
    row(f"{label}: handoffs (holder changes)",
        {c: med(c, run, "handoffs") for c in LIBS}, False)
    done = {}
    for c in LIBS:
        rs = runs(c, run)
        if c == "rlock":  # rlock-bench runs every acquisition
            got = sum(r["procs"] * r["ops"] for r in rs)
        else:
            got = sum(r["acquisitions"] for r in rs)
        want = sum(r["procs"] * r["ops"] for r in rs)
        done[c] = f"{got}/{want}" if rs else "n/a"
    row(f"{label}: acquisitions done/asked (all rounds)", done, False)
    row(f"{label}: LOST UPDATES (all rounds)",
        {c: total(c, run, "lost_updates") for c in LIBS}, False)
    row(f"{label}: overlaps seen (all rounds)",
        {c: total(c, run, "overlaps") for c in LIBS}, False)


unc_rate = {c: med(c, "unc", "pairs_per_s") for c in PEERS}
unc_rate["rlock"] = med("rlock", "unc_rate", "ops_per_s")
row("uncontended: pairs/s", unc_rate)
row("uncontended: pair p50 us",
    {c: med(c, "unc", "lock_unlock_p50_us") for c in LIBS})
row("uncontended: pair p99 us",
    {c: med(c, "unc", "lock_unlock_p99_us") for c in LIBS})


def in_rtts(col):
    """Median over rounds of a pair's p50 over the server PING RTT taken
    just before that run."""
    v = [r["lock_unlock_p50_us"] / r["ping_ref_us"] for r in runs(col, "unc")
         if r.get("ping_ref_us") and r.get("lock_unlock_p50_us")]
    return statistics.median(v) if v else None


row("uncontended: pair p50 in PING RTTs (RTT just before)",
    {c: in_rtts(c) for c in LIBS})
rate_lat("con0", f"contended {procs}p think 0")
rate_lat("con1", f"contended {procs}p think {think} us")
hand = {c: med(c, "hand", "handoff_p50_us") for c in PEERS}
hand["rlock"] = med("rlock", "hand", "rlock_handoff_p50_us")
row(f"handoff to a waiter (hold {hold} us): p50 us", hand)
hcount = {c: med(c, "hand", "handoffs") for c in PEERS}
hcount["rlock"] = med("rlock", "hand", "rlock_handoffs")
row("handoff: handoffs measured", hcount, False)
row(f"many ({workers} workers, {locks} locks): pairs/s",
    {c: med(c, "many", "ops_per_s") for c in LIBS})
errors = {c: sum(r.get("errors", 0) for r in rows if r["col"] == c)
          for c in LIBS}
row("errors reported by the workers (all runs)", errors, False)
row("client PING p50 us (each library's client)",
    {c: med(c, "unc", "ping_rtt_us") for c in LIBS})
ceil = med("server", "ceiling", "requests_per_s")
ping = med("server", "ping", "rtt_us")
row("server: EVALSHA ceiling req/s (redis-benchmark -c 50)",
    {"rlock": ceil}, False)
row("server: PING RTT us (redis-benchmark -c 1)",
    {"rlock": ping}, False)
row("reference: bare hiredis waiter handoff p50 us (rlock-bench)",
    {"rlock": med("rlock", "hand", "bare_handoff_p50_us")}, False)

heads = ["workload / metric"] + LIBS + [f"{p}/rlock" for p in PEERS]
lines = []
for label, vals, ratio in table:
    cells = [label] + [fmt(vals.get(c)) for c in LIBS]
    for p in PEERS:
        a, b = vals.get("rlock"), vals.get(p)
        ok = ratio and isinstance(a, (int, float)) and \
            isinstance(b, (int, float)) and a
        cells.append(f"{b / a:.2f}" if ok else "")
    lines.append(cells)
print("| " + " | ".join(heads) + " |")
print("|" + "|".join(["---"] + ["---:"] * (len(heads) - 1)) + "|")
for cells in lines:
    print("| " + " | ".join(cells) + " |")
print()
print("Ratios are peer/rlock: above 1 in a /s row, the peer is faster; "
      "above 1 in a us row, the peer is slower. rlock: its many and "
      "uncontended pairs/s are threads of one process on one client "
      "(rlock-bench many); the peers' workers are processes.")
PY

[ "$ONLY" = locks ] || {
echo
echo "== semaphores, one permit at a time: medians over $ROUNDS round(s) =="
"$PY" - "$RESULTS" "$SEM_PROCS" "$SEM_PERMITS" "$SEM_HOLD_US" "$SEM_OPS" \
      "$HOLD_US" <<'PY'
import json
import statistics
import sys

rows = [json.loads(line) for line in open(sys.argv[1])]
procs, permits, hold, ops, hand_hold = map(int, sys.argv[2:7])
COLS = ["rlock-sem", "rlock-psem", "rs-sem"]
HEADS = {"rlock-sem": "rlock semaphore",
         "rlock-psem": "rlock psemaphore (watchdog)",
         "rs-sem": "redis-semaphore Semaphore"}
RLOCKS = COLS[:2]


def runs(col, run):
    return [r for r in rows if r["col"] == col and r["run"] == run]


def med(col, run, key):
    v = [r[key] for r in runs(col, run) if r.get(key) is not None]
    return statistics.median(v) if v else None


def total(col, run, key):
    v = [r[key] for r in runs(col, run) if r.get(key) is not None]
    return sum(v) if v else None


def fmt(v):
    if v is None:
        return "n/a"
    if isinstance(v, str):
        return v
    if abs(v) >= 100 or float(v).is_integer():
        return f"{v:,.0f}"
    return f"{v:.1f}"


def pair_key(col):
    return "lock_unlock_p50_us" if col == "rs-sem" else "pair_p50_us"


def in_rtts(col):
    key = pair_key(col)
    v = [r[key] / r["ping_ref_us"] for r in runs(col, "sunc")
         if r.get("ping_ref_us") and r.get(key)]
    return statistics.median(v) if v else None


def done(col, run):
    rs = runs(col, run)
    if not rs:
        return "n/a"
    want = sum(r["procs"] * r["ops"] for r in rs)
    got = sum(r.get("acquisitions", r["procs"] * r["ops"]) for r in rs)
    return f"{got}/{want}"


# Rows: (label, values, ratio?); a ratio is printed with its worst round
# for rlock (the rounds' own medians): WORST names the row's run and key.
WORST = {}


def per_round(col, run, key):
    out = {}
    for r in runs(col, run):
        if isinstance(r.get(key), (int, float)):
            out.setdefault(r["round"], []).append(r[key])
    return {k: statistics.median(v) for k, v in out.items()}


def worst(label, rl):
    """The least favourable round for rlock column rl: the highest
    peer/rlock in a /s row, the lowest in a us row."""
    if label not in WORST:
        return None
    run, key, up = WORST[label]
    a = per_round(rl, run, key)
    b = per_round("rs-sem", run, "lock_unlock_p50_us"
                  if key == "pair_p50_us" else
                  "lock_unlock_p99_us" if key == "pair_p99_us" else key)
    v = [b[k] / a[k] for k in a if k in b and a[k]]
    return (max(v) if up else min(v)) if v else None


table = [
    ("uncontended: pairs/s", {c: med(c, "sunc", "pairs_per_s") for c in COLS},
     True),
    ("uncontended: pair p50 us",
     {c: med(c, "sunc", pair_key(c)) for c in COLS}, True),
    ("uncontended: pair p99 us",
     {c: med(c, "sunc", pair_key(c).replace("p50", "p99")) for c in COLS},
     True),
    ("uncontended: pair p50 in PING RTTs (RTT just before)",
     {c: in_rtts(c) for c in COLS}, True),
]
con = f"contended {procs}p on {permits} permits, hold {hold} us"
for label, key, ratio in [("acquisitions/s", "acquisitions_per_s", True),
                          ("acquire p50 us", "acquire_p50_us", True),
                          ("acquire p99 us", "acquire_p99_us", True),
                          ("handoff p50 us", "handoff_p50_us", True),
                          ("handoff p99 us", "handoff_p99_us", True)]:
    table.append((f"{con}: {label}", {c: med(c, "scon", key) for c in COLS},
                  ratio))
    WORST[f"{con}: {label}"] = ("scon", key, key.endswith("_per_s"))
WORST["uncontended: pairs/s"] = ("sunc", "pairs_per_s", True)
WORST["uncontended: pair p50 us"] = ("sunc", "pair_p50_us", False)
WORST["uncontended: pair p99 us"] = ("sunc", "pair_p99_us", False)
table.append((f"{con}: acquisitions done/asked (all rounds)",
              {c: done(c, "scon") for c in COLS}, False))
table.append((f"{con}: overlaps seen (all rounds)",
              {c: total(c, "scon", "overlaps") for c in COLS}, False))
hand = f"handoff to a waiter, 1 permit (hold {hand_hold} us)"
table.append((f"{hand}: p50 us", {c: med(c, "shand", "handoff_p50_us")
                                  for c in COLS}, True))
WORST[f"{hand}: p50 us"] = ("shand", "handoff_p50_us", False)
table.append((f"{hand}: p99 us", {c: med(c, "shand", "handoff_p99_us")
                                  for c in COLS}, True))
table.append((f"{hand}: handoffs measured",
              {c: med(c, "shand", "handoffs") for c in COLS}, False))
table.append(("errors reported by the workers (all runs)",
              {c: sum(r.get("errors", 0) for r in rows if r["col"] == c
                      and r["run"] in ("sunc", "scon", "shand"))
               for c in COLS}, False))

heads = ["workload / metric"] + [HEADS[c] for c in COLS] + \
    [f"rs/{'semaphore' if c == 'rlock-sem' else 'psemaphore'}"
     for c in RLOCKS]
print("| " + " | ".join(heads) + " |")
print("|" + "|".join(["---"] + ["---:"] * (len(heads) - 1)) + "|")
for label, vals, ratio in table:
    cells = [label] + [fmt(vals.get(c)) for c in COLS]
    for c in RLOCKS:
        a, b = vals.get(c), vals.get("rs-sem")
        ok = ratio and isinstance(a, (int, float)) and \
            isinstance(b, (int, float)) and a
        w = worst(label, c) if ok else None
        cells.append((f"{b / a:.2f}" + (f" ({w:.2f})" if w else ""))
                     if ok else "")
    print("| " + " | ".join(cells) + " |")
print()
print("Ratios are redis-semaphore/rlock: above 1 in a /s row, "
      "redis-semaphore is faster; above 1 in a us row, it is slower. In "
      "brackets: the round least favourable to rlock (its own medians). "
      "Every worker is a process with its own client.")
PY
}

if [ ${#FAILED[@]} -gt 0 ]; then
  echo "bench: ${#FAILED[@]} run(s) failed: ${FAILED[*]}" >&2
  exit 1
fi
