#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Measure rlock against a throwaway redis-server, in one run:
#   1. the server's EVALSHA ceiling (redis-benchmark, 50 connections, the
#      library's acquire script) alternating with rlock-bench many, three
#      rounds of each;
#   2. rlock-bench uncontended, sync (the semaphores next to the lock) and
#      contended (4 processes, with and without
#      200 us of think time);
#   3. rlock-bench fair with 2, 11 and 101 processes (1, 10 and 100 waiters
#      queued at each handoff), each with the server's EVALSHA time
#      (INFO commandstats, reset before the run);
#   4. rlock-bench rw with 4 readers + 1 writer and 1 reader + 4 writers,
#      each with and without 200 us of think time, and the server's
#      EVALSHA count during each;
#   5. rlock-bench redlock over the first 3 and over all 5 servers, three
#      rounds alternating the two (a RedLock's lock+unlock next to a plain
#      lock's on one server);
#   6. a summary checking the performance targets as ratios of figures
#      measured in this same run (so a noisy, shared machine affects both
#      sides of each ratio alike); rw has no targets, its figures are
#      printed.
#
# Usage: scripts/bench.sh [--quick]
#   --quick  a short run (seconds instead of a minute) for smoke-testing
#
# It is a measurement, not a test: a missed target prints MISS but the exit
# status is 0; it is non-zero only when something failed to run.
#
# Five servers listen on free loopback ports with persistence off; the
# first serves every workload, the others only redlock. Each is stopped by
# its pid when this script exits for any reason.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD="$ROOT/build-bench"
QUICK=0

# The comment block at the top of this file, without its '#'.
usage() {
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' \
      "${BASH_SOURCE[0]}"
}

for arg in "$@"; do
  case "$arg" in
    --quick) QUICK=1 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "bench.sh: unknown argument '$arg' (try --help)" >&2; exit 64 ;;
  esac
done

# FAIR_RUNS: "processes:ops" per fair run. N processes queue about N-1
# waiters; ops keep each run at about 3000 acquisitions (600 with --quick).
# RW_RUNS: "readers:writers:ops:think_us" per rw run; ops keep each run at
# about 2-3 s on a 2-vCPU machine (a tenth with --quick).
# REDLOCK_OPS: steps per redlock run (about 2 s with 5 servers).
if [ "$QUICK" -eq 1 ]; then
  ROUNDS=1 CEIL_N=20000 MANY_S=1 UNC_OPS=2000 CON_OPS=300 REDLOCK_OPS=500
  FAIR_RUNS="2:300 11:60 101:6"
  RW_RUNS="4:1:600:0 1:4:150:0 4:1:200:200 1:4:150:200"
else
  ROUNDS=3 CEIL_N=200000 MANY_S=5 UNC_OPS=20000 CON_OPS=2000
  REDLOCK_OPS=5000
  FAIR_RUNS="2:1500 11:300 101:30"
  RW_RUNS="4:1:6000:0 1:4:1500:0 4:1:2000:200 1:4:1500:200"
fi

# ---- build ------------------------------------------------------------------
# shellcheck source=scripts/bench_common.sh
. "$ROOT/scripts/bench_common.sh"
build_bench

# ---- throwaway servers ------------------------------------------------------
WORK=$(mktemp -d "${TMPDIR:-/tmp}/rlock-bench.XXXXXX")
NSERVERS=5

for n in $(seq "$NSERVERS"); do
  start_server "$n"
done
PORT=${PORTS[0]}
URL="redis://127.0.0.1:$PORT"

# ---- measurements -----------------------------------------------------------
RESULTS="$WORK/results.jsonl"
: >"$RESULTS"

# The acquire script exactly as the library embeds it (load_script expands
# its "-- @include" lines and checks the SHA1 is the library's: the file
# alone is not the script, and every call would fail).
ceiling() {
  local rps fmt
  echo "bench: redis-benchmark EVALSHA, 50 connections, $CEIL_N requests" >&2
  rps=$(evalsha_ceiling "$PORT" 50 "$CEIL_N") || return 1
  fmt='{"workload":"evalsha_ceiling","connections":50,'
  fmt+='"requests":%s,"requests_per_s":%s}\n'
  printf "$fmt" "$CEIL_N" "$rps" >>"$RESULTS"
}

run_bench() {
  echo "bench: rlock-bench $*" >&2
  "$BENCH" -u "$URL" --json "$@" >>"$RESULTS"
}

# A RedLock over the first $1 servers (one -u each).
run_redlock() {
  local urls=() i
  for ((i = 0; i < $1; i++)); do
    urls+=(-u "redis://127.0.0.1:${PORTS[i]}")
  done
  echo "bench: rlock-bench ${urls[*]} redlock --ops $REDLOCK_OPS" >&2
  "$BENCH" "${urls[@]}" --json redlock --ops "$REDLOCK_OPS" >>"$RESULTS"
}

# Run rlock-bench with the server's statistics reset first, then append
# the server's EVALSHA count and time during the run as a JSON line whose
# other fields are TAG (every script the library sends is an EVALSHA, and
# nothing else talks to this server meanwhile).
run_counted() {
  local tag=$1 stats calls usec
  shift
  redis-cli -p "$PORT" config resetstat >/dev/null
  run_bench "$@"
  stats=$(redis-cli -p "$PORT" info commandstats | tr -d '\r' |
          sed -n 's/^cmdstat_evalsha:calls=\([0-9]*\),usec=\([0-9]*\),.*/\1 \2/p')
  read -r calls usec <<<"${stats:-0 0}"
  printf '{%s,"evalsha_calls":%s,"evalsha_usec":%s}\n' \
         "$tag" "$calls" "$usec" >>"$RESULTS"
}

run_fair() {
  local procs=$1 ops=$2 tag
  printf -v tag '"workload":"fair_server","procs":%s,"ops":%s' "$procs" "$ops"
  run_counted "$tag" fair --procs "$procs" --ops "$ops"
}

# RUN is "readers:writers:ops:think_us".
run_rw() {
  local readers writers ops think tag fmt
  IFS=: read -r readers writers ops think <<<"$1"
  fmt='"workload":"rw_server","readers":%s,"writers":%s,"think_us":%s'
  printf -v tag "$fmt" "$readers" "$writers" "$think"
  run_counted "$tag" rw --readers "$readers" --writers "$writers" \
              --ops "$ops" --think-us "$think"
}

# The ceiling and `many` come from two different programs and are
# compared with each other, so they alternate, ROUNDS times: a noisy
# neighbour then hits both sides of each round's ratio alike.
for round in $(seq "$ROUNDS"); do
  ceiling
  run_bench many --threads 16 --seconds "$MANY_S"
done
run_bench uncontended --ops "$UNC_OPS"
run_bench sync --ops "$UNC_OPS"
run_bench contended --procs 4 --ops "$CON_OPS"
run_bench contended --procs 4 --ops "$CON_OPS" --think-us 200
for run in $FAIR_RUNS; do
  run_fair "${run%%:*}" "${run##*:}"
done
for run in $RW_RUNS; do
  run_rw "$run"
done
# Alternating, like the ceiling and many: each round's two runs meet the
# same neighbours.
for round in $(seq "$ROUNDS"); do
  run_redlock 3
  run_redlock 5
done

# ---- summary ----------------------------------------------------------------
echo
echo "== raw results (JSON, one per measurement) =="
cat "$RESULTS"
mkdir -p "$BUILD"
cp "$RESULTS" "$BUILD/bench-last.jsonl"

CPU=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
REDIS_VER=$(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p')
echo
echo "== summary ($(nproc) CPUs, ${CPU:-unknown CPU}," \
     "redis-server $REDIS_VER) =="
python3 - "$RESULTS" <<'PY'
import json
import statistics
import sys

rows = [json.loads(line) for line in open(sys.argv[1])]
def pick(kind):
    return [r for r in rows if r["workload"] == kind]
ceils, manys = pick("evalsha_ceiling"), pick("many")
unc, cons = pick("uncontended")[0], pick("contended")
syncs = pick("sync")
fairs = pick("fair")
servers = {s["procs"]: s for s in pick("fair_server")}
rws = pick("rw")
rw_servers = {(s["readers"], s["writers"], s["think_us"]): s
              for s in pick("rw_server")}
redlocks = {}  # servers -> its runs, in round order
for r in pick("redlock"):
    redlocks.setdefault(r["servers"], []).append(r)

def num(v, fmt="{:.1f}"):
    return "n/a" if v is None else fmt.format(v)

def check(ok, text):
    print(("PASS " if ok else "MISS ") + text)

def turns(c):
    """The figures a contended or fair run shares, on one line."""
    return (f"{c['acquisitions_per_s']:.0f} acq/s, {c['handoffs']} handoffs, "
            f"p50 {num(c['handoff_p50_us'])} us, "
            f"p99 {num(c['handoff_p99_us'])} us, "
            f"ping {num(c['ping_rtt_us'])} us, "
            f"lost updates {c['lost_updates']}")

def server_us(f):
    """Server EVALSHA time per acquisition and per call in a fair run."""
    s = servers.get(f["procs"])
    if s is None or s["evalsha_calls"] == 0:
        return None, None
    return (s["evalsha_usec"] / (f["procs"] * f["ops"]),
            s["evalsha_usec"] / s["evalsha_calls"])

def plural(n, word):
    return f"{n} {word}" + ("" if n == 1 else "s")

def rw_side(w, kind, procs):
    """One kind's (read or write) handoffs and waits in an rw run."""
    k = lambda name: w[f"{kind}_{name}"]
    return (f"   {kind + ':':6} handoff p50 {num(k('handoff_p50_us'))} us, "
            f"p99 {num(k('handoff_p99_us'))} us "
            f"({k('handoffs')} of {procs * w['ops']}); "
            f"wait mean {num(k('wait_mean_us'))} us, "
            f"max {num(k('wait_max_ms'))} ms")

def rw_lines(w):
    """An rw run's figures, on three lines."""
    s = rw_servers.get((w["readers"], w["writers"], w["think_us"]))
    acq = (w["readers"] + w["writers"]) * w["ops"]
    scripts = f"{s['evalsha_calls'] / acq:.2f}" if s else "n/a"
    return (f"rw {plural(w['readers'], 'reader')} + "
            f"{plural(w['writers'], 'writer')}, think {w['think_us']} us: "
            f"reads {w['read_acquisitions_per_s']:.0f}/s "
            f"(done at {w['read_seconds']:.2f} s), "
            f"writes {w['write_acquisitions_per_s']:.0f}/s "
            f"(done at {w['write_seconds']:.2f} s), "
            f"{scripts} scripts/acquisition, ping {num(w['ping_rtt_us'])} us, "
            f"lost updates {w['lost_updates']}\n"
            f"{rw_side(w, 'read', w['readers'])}\n"
            f"{rw_side(w, 'write', w['writers'])}")

def redlock_line(i, r):
    """One redlock run's figures, on one line."""
    return (f"redlock {r['servers']} servers, round {i + 1}: single p50 "
            f"{num(r['single_p50_us'])} us (p99 {num(r['single_p99_us'])}), "
            f"RedLock p50 {num(r['redlock_p50_us'])} us "
            f"(p99 {num(r['redlock_p99_us'])}), ratio "
            f"{num(r['ratio'], '{:.2f}')}, sequential estimate "
            f"{num(r['sequential_estimate_us'])} us, PING fan-out "
            f"{num(r['ping_fanout_ratio'], '{:.2f}')} x PING "
            f"({num(r['ping_fanout_p50_us'])} / {num(r['ping_p50_us'])} us), "
            f"validity {r['validity_min_ms']}..{r['validity_max_ms']} ms")

def redlock_checks(n, runs):
    """Median ratio <= 1.5 (next to the machine's PING fan-out), and
    validity within the lease in every run."""
    ratios = [r["ratio"] for r in runs if r["ratio"] is not None]
    floors = [r["ping_fanout_ratio"] for r in runs
              if r["ping_fanout_ratio"] is not None]
    ratio = statistics.median(ratios) if ratios else None
    floor = statistics.median(floors) if floors else None
    check(ratio is not None and ratio <= 1.5,
          f"redlock {n} servers: RedLock p50 <= 1.5 x single-server p50: "
          f"median ratio {num(ratio, '{:.2f}')} over {plural(len(runs), 'round')} "
          f"({', '.join(num(x, '{:.2f}') for x in ratios)}); "
          f"sequential would be {n}; bare PING fan-out "
          f"{num(floor, '{:.2f}')} x PING")
    lo = min(r["validity_min_ms"] for r in runs)
    hi = max(r["validity_max_ms"] for r in runs)
    lease = runs[0]["lease_ms"]
    check(0 < lo and hi <= lease,
          f"redlock {n} servers: validity within the lease: {lo}..{hi} ms "
          f"of {lease} ms ({sum(r['validity_samples'] for r in runs)} "
          f"acquisitions)")

def turn_checks(tag, c, absolute):
    """Handoff in RTTs, (with absolute) under 1 ms, and no lost update."""
    rtts, p50 = c["handoff_rtts"], c["handoff_p50_us"]
    check(rtts is not None and rtts <= 3.0,
          f"{tag} handoff p50 <= 3 x ping RTT: {num(rtts, '{:.2f}')} RTT "
          f"({num(p50)} us / {num(c['ping_rtt_us'])} us)")
    if absolute:
        check(p50 is not None and p50 < 1000,
              f"{tag} handoff p50 < 1000 us: {num(p50)} us")
    check(c["lost_updates"] == 0,
          f"{tag} no lost updates: {c['lost_updates']}")

# Round i's ceiling and many ran back to back.
ratios = [2 * m["ops_per_s"] / c["requests_per_s"]
          for c, m in zip(ceils, manys)]
for i, (c, m) in enumerate(zip(ceils, manys)):
    print(f"round {i + 1}: EVALSHA ceiling {c['requests_per_s']:.0f} req/s, "
          f"many {m['ops_per_s']:.0f} pairs/s, ratio {ratios[i]:.2f}")
print(f"uncontended: ping {num(unc['ping_rtt_us'])} us, lock+unlock p50 "
      f"{num(unc['lock_unlock_p50_us'])} us "
      f"(p99 {num(unc['lock_unlock_p99_us'])}), "
      f"floor p50 {num(unc['floor_p50_us'])} us")
for c in cons:
    print(f"contended {c['procs']} procs, think {c['think_us']} us: "
          f"{turns(c)}")
for f in fairs:
    per_acq, per_call = server_us(f)
    print(f"fair {f['procs']} procs ({num(f['queued'], '{:.0f}')} queued): "
          f"{turns(f)}, server EVALSHA {num(per_acq)} us/acquisition "
          f"({num(per_call, '{:.2f}')} us/call)")
for w in rws:
    print(rw_lines(w))
for n in sorted(redlocks):
    for i, r in enumerate(redlocks[n]):
        print(redlock_line(i, r))
print()

r = unc["lock_unlock_vs_floor"]
check(r is not None and r <= 1.15,
      f"uncontended lock+unlock p50 <= 1.15 x floor p50: "
      f"ratio {num(r, '{:.3f}')}")
for y in syncs:
    r = y["semaphore_vs_lock"]
    check(r is not None and r <= 1.05,
          f"semaphore acquire+release of 1 permit p50 <= 1.05 x the lock's "
          f"pair: ratio {num(r, '{:.3f}')}")
    r = y["psemaphore_vs_lock"]
    check(r is not None and r <= 1.05,
          f"permit-expirable semaphore acquire+release of 1 permit p50 <= "
          f"1.05 x the lock's pair: ratio {num(r, '{:.3f}')}")
    r = y["semaphore_handoff_vs_lock"]
    check(r is not None and r <= 1.1,
          f"semaphore handoff p50 <= 1.1 x the lock's: ratio "
          f"{num(r, '{:.3f}')} ({num(y['semaphore_handoff_p50_us'])} / "
          f"{num(y['lock_handoff_p50_us'])} us)")
for c in cons:
    turn_checks(f"contended think {c['think_us']} us:", c, True)
for f in fairs:
    turn_checks(f"fair {num(f['queued'], '{:.0f}')} queued:", f, False)
if len(fairs) >= 2:
    # Fewest and most processes: 1 and 100 queued waiters.
    lo, hi = fairs[0], fairs[-1]
    a, b = lo["handoff_p50_us"], hi["handoff_p50_us"]
    r = b / a if a and b else None
    sa, sb = server_us(lo)[0], server_us(hi)[0]
    check(r is not None and r <= 2.0,
          f"fair handoff p50 with {num(hi['queued'], '{:.0f}')} queued <= "
          f"2 x with {num(lo['queued'], '{:.0f}')}: ratio {num(r, '{:.2f}')} "
          f"({num(b)} / {num(a)} us; server EVALSHA {num(sb)} / {num(sa)} "
          f"us per acquisition)")
ratio = statistics.median(ratios)
check(ratio >= 0.7,
      f"many: 2 x pairs/s >= 0.7 x EVALSHA ceiling: median ratio {ratio:.2f} "
      f"over {len(ratios)} round(s) "
      f"({', '.join(f'{x:.2f}' for x in ratios)})")
for n in sorted(redlocks):
    redlock_checks(n, redlocks[n])
PY
