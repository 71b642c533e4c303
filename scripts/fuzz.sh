#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Fuzz rlock with libFuzzer: configures build-fuzz with clang and
# -DRLOCK_FUZZ=ON, builds every fuzz_<name> (fuzz/<name>.c), and runs each
# for a bounded time over a copy of its seed corpus, fuzz/corpus/<name>/.
# Fails, naming the input that did it, when a target crashes (a sanitizer
# report or a failed check), leaks, takes over FUZZ_TIMEOUT seconds on one
# input, or grows past FUZZ_RSS_MB. FUZZ_JOBS targets (default: one a
# core) run at once, each a single process, so each still has a core of
# its own for its FUZZ_SECONDS; the verdicts print in the targets' order.
#
#   scripts/fuzz.sh                  every target, FUZZ_SECONDS (30) each
#   scripts/fuzz.sh url reader       only these
#   FUZZ_SECONDS=600 scripts/fuzz.sh
#   FUZZ_MERGE=1 scripts/fuzz.sh     afterwards, add to fuzz/corpus/<name>/
#                                    the inputs that reach new coverage
#   FUZZ_BUILD_ONLY=1 scripts/fuzz.sh   build the targets, run none
#
# Found inputs stay in build-fuzz/corpus/<name>/ (kept between runs: the
# repository's seeds are copied in first); crashes go to
# build-fuzz/artifacts/<name>/, logs to build-fuzz/logs/<name>.log. Rerun
# one input: build-fuzz/fuzz_<name> FILE. A crash found becomes a seed in
# fuzz/corpus/<name>/ and a regression test in tests/unit/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh

SECS=${FUZZ_SECONDS:-30}
TIMEOUT=${FUZZ_TIMEOUT:-10}
RSS_MB=${FUZZ_RSS_MB:-2048}
DIR=${FUZZ_BUILD_DIR:-build-fuzz}
JOBS=$(nproc 2>/dev/null || echo 2)

echo "==> fuzz: building in $DIR"
CC=clang cmake -S . -B "$DIR" -DRLOCK_FUZZ=ON -DRLOCK_WERROR=ON \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRLOCK_BUILD_TESTS=OFF \
  -DRLOCK_BUILD_CLI=OFF -DRLOCK_BUILD_BENCH=OFF -DRLOCK_BUILD_EXAMPLES=OFF \
  >/dev/null
cmake --build "$DIR" -j"$JOBS" --target rlock_fuzz >/dev/null
[ "${FUZZ_BUILD_ONLY:-0}" != 1 ] || exit 0

if [ $# -gt 0 ]; then
  targets=("$@")
else
  targets=()
  for f in fuzz/*.c; do targets+=("$(basename "$f" .c)"); done
fi

# ASan's and UBSan's reports should name lines; leaks are failures.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

for t in "${targets[@]}"; do
  if [ ! -x "$DIR/fuzz_$t" ] || [ ! -d "fuzz/corpus/$t" ]; then
    echo "fuzz: no target '$t' (fuzz/$t.c and fuzz/corpus/$t/)" >&2
    exit 64
  fi
done

# fuzz_one TARGET: fuzz it for SECS; its verdict (the lines to print) goes
# to $DIR/logs/TARGET.result, or to TARGET.failed when it failed.
fuzz_one() {
  local t=$1 bin=$DIR/fuzz_$1 rc=0 last runs rate cov input
  local work=$DIR/corpus/$t art=$DIR/artifacts/$t/ log=$DIR/logs/$t.log
  local res=$DIR/logs/$t.result fail=$DIR/logs/$t.failed
  mkdir -p "$work" "$art" "$DIR/logs"
  cp fuzz/corpus/"$t"/* "$work"/
  "$bin" -max_total_time="$SECS" -timeout="$TIMEOUT" -rss_limit_mb="$RSS_MB" \
    -artifact_prefix="$art" -print_final_stats=1 "$work" >"$log" 2>&1 || rc=$?
  # The last status line: "#N DONE cov: C ft: F corp: K/Bb ... exec/s: E".
  last=$(grep -E '^#[0-9]+.*cov:' "$log" | tail -n 1 || true)
  runs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+)/\1/p' "$log")
  rate=$(sed -nE 's/^stat::average_exec_per_sec: *([0-9]+)/\1/p' "$log")
  cov=$(sed -nE 's/.* cov: ([0-9]+) ft: ([0-9]+) corp: ([0-9]+)\/.*/cov \1, ft \2, corpus \3/p' \
        <<<"$last")
  if [ "$rc" -ne 0 ]; then
    input=$(sed -nE 's/.*Test unit written to (.*)$/\1/p' "$log" | tail -n 1)
    {
      echo "fuzz_$t: FAILED (exit $rc) after ${runs:-?} runs; input: ${input:-none saved}"
      grep -E 'ERROR: |SUMMARY: |check failed|runtime error' "$log" | head -n 5 || true
      echo "  log: $log; rerun: $bin ${input:-}"
    } >"$fail"
    return
  fi
  echo "fuzz_$t: ${SECS}s, ${runs:-?} runs (${rate:-?}/s), ${cov:-no coverage line}" >"$res"
  if [ "${FUZZ_MERGE:-0}" = 1 ]; then
    "$bin" -merge=1 -timeout="$TIMEOUT" -rss_limit_mb="$RSS_MB" \
      "fuzz/corpus/$t" "$work" >>"$log" 2>&1
    echo "fuzz_$t: merged into fuzz/corpus/$t ($(ls "fuzz/corpus/$t" | wc -l) inputs)" >>"$res"
  fi
}

# FUZZ_JOBS targets at once (default: one a core): each libFuzzer process
# is one thread, so each target still gets a core for its FUZZ_SECONDS.
FJOBS=${FUZZ_JOBS:-$JOBS}
for t in "${targets[@]}"; do
  rm -f "$DIR/logs/$t.result" "$DIR/logs/$t.failed"
  while [ "$(jobs -rp | wc -l)" -ge "$FJOBS" ]; do wait -n || true; done
  fuzz_one "$t" &
done
wait

failed=()
for t in "${targets[@]}"; do
  if [ -f "$DIR/logs/$t.result" ]; then
    cat "$DIR/logs/$t.result"
  else
    cat "$DIR/logs/$t.failed" >&2 2>/dev/null ||
      echo "fuzz_$t: FAILED: no verdict (log: $DIR/logs/$t.log)" >&2
    failed+=("$t")
  fi
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: failed: ${failed[*]}" >&2
  exit 1
fi
echo "==> fuzz: ${#targets[@]} targets, ${SECS}s each (${FJOBS} at once), no crash, leak or timeout"
