#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The Python binding (python/) next to the C library and redis-py's Lock
# (Debian's python3-redis), on the same workloads against one throwaway
# redis-server:
#   1. uncontended: one process, one lock, lock+unlock pairs: p50
#      (C: rlock-bench uncontended; Python: bench/py/bench_rlock.py;
#      redis-py: bench/peers/py/peer_redispy.py)
#   2. handoff: 2 processes in a ping-pong, the holder holding 300 us
#      while the other already waits: p50 of release -> acquired
#   3. contended: 4 processes on one lock, a non-atomic GET + SET of a
#      counter inside: acquisitions/s, lost updates
# Each round runs every workload for the three, back to back; the table
# gives medians over the rounds and the ratios the binding is held to
# (uncontended <= 1.3x C; handoff >= 50x faster than redis-py).
#
# Usage: scripts/bench_python.sh [--quick] [--rounds R]
#   --quick     one short round, for smoke-testing
#   --rounds R  rounds (default 3, about 3 minutes on 2 CPUs)
#
# Builds Release into build-bench (librlock, rlock-bench) and installs the
# package into the venv build-bench/pyenv. Exit status 0 unless a run
# failed. The server listens on a free loopback port, persistence off, and
# is stopped by its pid when this script exits for any reason.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD="$ROOT/build-bench"
ROUNDS=3
QUICK=0
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1; ROUNDS=1 ;;
    --rounds)
      if [ $# -lt 2 ] || ! [[ "$2" =~ ^[1-9][0-9]*$ ]]; then
        echo "bench_python.sh: --rounds takes a positive integer" >&2
        exit 64
      fi
      ROUNDS=$2; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next }
                    NR > 1 { exit }' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "bench_python.sh: unknown argument '$1' (try --help)" >&2
       exit 64 ;;
  esac
  shift
done
if [ "$QUICK" -eq 1 ]; then
  UNC_OPS=1000 HAND_OPS=50 CON_OPS=100 MAX_S=2
else
  UNC_OPS=2000 HAND_OPS=100 CON_OPS=300 MAX_S=5
fi

# shellcheck source=scripts/bench_common.sh
. "$ROOT/scripts/bench_common.sh"
build_bench
cmake --build "$BUILD" -j"$(nproc)" --target rlock >/dev/null
dpkg-query -W -f='${Status}' python3-redis 2>/dev/null |
  grep -q "install ok installed" ||
  { apt-get update -qq && apt-get install -y -qq python3-redis >/dev/null; }
VENV="$BUILD/pyenv"
[ -x "$VENV/bin/python" ] || /usr/bin/python3 -m venv --system-site-packages "$VENV"
rm -rf "$ROOT/python/build"
RLOCK_BUILD_DIR="$BUILD" "$VENV/bin/pip" install -q --no-build-isolation \
  --no-deps --force-reinstall "$ROOT/python" >"$BUILD/pyenv-install.log" 2>&1
rm -rf "$ROOT/python/build" "$ROOT/python/rlock.egg-info"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/rlock-benchpy.XXXXXX")
start_server 1
PORT=${PORTS[0]}
URL="redis://127.0.0.1:$PORT"
RESULTS="$WORK/results.jsonl"
: >"$RESULTS"
FAILED=0

# record COL RUN CMD...: the command's JSON line, tagged, to the results.
record() {
  local col=$1 run=$2 out
  shift 2
  echo "bench: [round $round] $col $run" >&2
  if ! out=$("$@") || [ "${out:0:1}" != "{" ]; then
    echo "bench: FAILED: $col $run: $*" >&2
    FAILED=$((FAILED + 1))
    return 0
  fi
  printf '%s\n' "$out" | tail -n 1 |
    sed "s/^{/{\"col\":\"$col\",\"run\":\"$run\",/" >>"$RESULTS"
}

PYW=("$VENV/bin/python" -P "$ROOT/bench/py/bench_rlock.py" --port "$PORT")
PEER=("$VENV/bin/python" -P "$ROOT/bench/peers/py/peer_redispy.py" --port "$PORT")
for round in $(seq "$ROUNDS"); do
  redis-cli -p "$PORT" flushall >/dev/null
  record c unc "$BENCH" -u "$URL" --json uncontended --ops "$UNC_OPS"
  record py unc "${PYW[@]}" uncontended --ops "$UNC_OPS"
  record redispy unc "${PEER[@]}" uncontended --ops "$UNC_OPS"
  record c hand "$BENCH" -u "$URL" --json handoff --procs 2 \
    --ops "$HAND_OPS" --rounds 1 --hold-us 300
  record py hand "${PYW[@]}" handoff --ops "$HAND_OPS" --hold-us 300 \
    --max-seconds "$MAX_S"
  record redispy hand "${PEER[@]}" handoff --ops "$HAND_OPS" --hold-us 300 \
    --max-seconds "$MAX_S"
  record c con "$BENCH" -u "$URL" --json contended --procs 4 --ops "$CON_OPS"
  record py con "${PYW[@]}" contended --procs 4 --ops "$CON_OPS" \
    --max-seconds "$MAX_S"
  record redispy con "${PEER[@]}" contended --procs 4 --ops "$CON_OPS" \
    --max-seconds "$MAX_S"
done
cp "$RESULTS" "$BUILD/bench-python-last.jsonl"

/usr/bin/python3 - "$RESULTS" <<'PYEOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
def med(col, run, key):
    v = [r[key] for r in rows if r["col"] == col and r["run"] == run
         and r.get(key) is not None]
    return statistics.median(v) if v else None
def f(v, d=1):
    return "-" if v is None else f"{v:.{d}f}"
unc = {c: med(c, "unc", "lock_unlock_p50_us") for c in ("c", "py", "redispy")}
hand = {"c": med("c", "hand", "rlock_handoff_p50_us"),
        "py": med("py", "hand", "handoff_p50_us"),
        "redispy": med("redispy", "hand", "handoff_p50_us")}
rate = {c: med(c, "con", "acquisitions_per_s") for c in ("c", "py", "redispy")}
lost = {c: sum(r.get("lost_updates") or 0 for r in rows
               if r["col"] == c and r["run"] == "con")
        for c in ("c", "py", "redispy")}
print("| workload | C (rlock-bench) | Python binding | redis-py Lock |")
print("|---|---|---|---|")
print(f"| uncontended lock+unlock p50 (us) | {f(unc['c'])} | {f(unc['py'])} | {f(unc['redispy'])} |")
print(f"| handoff to a waiting process p50 (us) | {f(hand['c'])} | {f(hand['py'])} | {f(hand['redispy'])} |")
print(f"| 4 processes contending (acquisitions/s) | {f(rate['c'], 0)} | {f(rate['py'], 0)} | {f(rate['redispy'], 0)} |")
print(f"| lost updates (all rounds) | {lost['c']} | {lost['py']} | {lost['redispy']} |")
if unc["c"] and unc["py"]:
    print(f"\nuncontended: Python / C = {unc['py'] / unc['c']:.2f}x (target <= 1.3x)")
if hand["py"] and hand["redispy"]:
    print(f"handoff: redis-py / Python = {hand['redispy'] / hand['py']:.0f}x faster (target >= 50x)")
PYEOF
exit $((FAILED > 0))
