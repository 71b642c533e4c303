#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The fault runs of tests/integration/test_faults*.c for a long time: every
# scenario of every test_faults* binary (holders killed and stopped, the
# server paused, restarted with and without persistence, connections
# killed, maxmemory reached, Sentinel and Cluster failovers, a shaped link,
# and the files beside test_faults.c), with blocking and loop workers,
# runs SOAK_SECONDS / 10 seconds (SOAK_SECONDS default 600; the test
# suite, as CI runs it, gives each 3 s), against real redis-server
# processes the test starts and stops by pid. Then the direct partition
# scenarios of test_faults_partition (a client cut off, a one-way cut, a
# silent subscriber, the Sentinel split brain with and without
# min-replicas-to-write, a Cluster master in the minority: a holder and
# its waiters, each run asserting on what they saw), which the test suite
# runs once each, run SOAK_REPEATS more times (default 5, about a minute
# each time). Prints each scenario's history verdict, the direct
# scenarios' timings, and the totals; exits non-zero on any violation
# (overlapping holds, token inversions, lost updates, calls past their
# wait, undocumented statuses) or failed assertion.
#
#   scripts/soak.sh                 about 40 minutes on 2 cores
#   SOAK_SECONDS=3600 SOAK_REPEATS=20 scripts/soak.sh
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh

SECS=${SOAK_SECONDS:-600}
DIR=${SOAK_BUILD_DIR:-build-soak}
JOBS=$(nproc 2>/dev/null || echo 2)
PER=$(python3 -c "print(max(1.0, $SECS / 10))")

echo "==> soak: building in $DIR"
cmake -S . -B "$DIR" -DCMAKE_BUILD_TYPE=Release >/dev/null
bins=$(for f in tests/integration/test_faults*.c; do basename "$f" .c; done)
# shellcheck disable=SC2086
cmake --build "$DIR" -j"$JOBS" --target $bins >/dev/null

log=$DIR/soak.log
: >"$log"
echo "==> soak: $(echo $bins | wc -w) binaries, ${PER}s per scenario (log: $log)"
rc=0
for b in $bins; do
  echo "==> soak: $b" | tee -a "$log"
  RLOCK_TEST_BINDIR=$PWD/$DIR RLOCK_FAULT_SECONDS=$PER \
    "$DIR/tests/$b" >>"$log" 2>&1 || {
    st=$? # 77: this machine cannot make its faults (the log says why)
    if [ "$st" -eq 77 ]; then echo "==> soak: $b skipped"; else rc=$st; fi
  }
done

# The direct partition scenarios again, SOAK_REPEATS times: each run is
# one sample of timings that vary (failover, promotion, when a holder is
# told), so repetitions are what find the rare one.
REPEATS=${SOAK_REPEATS:-5}
direct=(test_client_cut test_one_way test_silent_sub test_split_brain
        test_split_brain_guarded test_cluster_minority)
echo "==> soak: the direct partition scenarios again (SOAK_REPEATS=$REPEATS)" | tee -a "$log"
for ((r = 1; r <= REPEATS; r++)); do
  for t in "${direct[@]}"; do
    echo "==> soak: test_faults_partition $t, run $r" >>"$log"
    RLOCK_TEST_BINDIR=$PWD/$DIR RLOCK_TEST_FILTER=$t \
      "$DIR/tests/test_faults_partition" >>"$log" 2>&1 || {
      st=$?
      if [ "$st" -eq 77 ]; then
        echo "==> soak: $t skipped"
      else
        echo "==> soak: $t FAILED in run $r" | tee -a "$log"
        rc=$st
      fi
    }
  done
done
grep -E '^\[ PARTITION' "$log" || true
grep -E '^\[ HISTORY' "$log" || true
python3 - "$log" <<'PY'
import re, sys
tot = {}
keys = ["acquisitions checked", "calls failed", "faults", "kills", "overlaps",
        "token inversions", "lost updates", "starved", "undocumented",
        "overlaps of refused stale holders", "writes refused", "lost"]
for line in open(sys.argv[1]):
    if not line.startswith("[ HISTORY"):
        continue
    body = line.split(":", 1)[1]
    for m in re.finditer(r"(\d+) ([a-z ]+?)(?=[,;)(]|$)", body):
        k = m.group(2).strip()
        if k in keys:
            tot[k] = tot.get(k, 0) + int(m.group(1))
print("==> soak totals: " + ", ".join(f"{tot.get(k, 0)} {k}" for k in keys))
violations = sum(tot.get(k, 0) for k in ["overlaps", "token inversions",
                 "lost updates", "starved", "undocumented"])
print(f"==> violations: {violations}")
PY
if [ "$rc" -ne 0 ]; then
  grep -E 'ERROR|FAILED' "$log" | head -n 20 >&2
  echo "soak: FAILED (exit $rc)" >&2
  exit 1
fi
echo "==> soak: passed"
