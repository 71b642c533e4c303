#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The whole test suite, as CI runs it (.ci/run calls exactly this):
# installs missing Debian packages, then builds and runs every suite
# (unit, integration against real redis-server processes, fault) in four
# configurations: a -Werror build, ASan+UBSan, TSan, and valgrind memcheck.
# The release suite first checks that every C and C++ file follows .clang-format
# (scripts/format.sh --check), and also runs tests/consumer/check.sh: programs built
# against rlock via add_subdirectory, FetchContent, find_package, pkg-config
# and a static link, from a throwaway install prefix moved after the
# install, run against a throwaway redis-server (about 30 s).
# The deb suite runs scripts/deb.sh: builds the Debian packages (debian/)
# from a clean copy, installs them, builds app.c against them, purges them
# (under a minute; needs root or sudo, like the package installs).
# The fuzz suite runs scripts/fuzz.sh: builds the libFuzzer targets of
# fuzz/ with clang (ASan+UBSan) in build-fuzz and runs each over its seed
# corpus for FUZZ_SECONDS, 20 here, one a core at a time (about a minute
# in all on 2 cores).
# The release and asan suites also run the Python binding's suite
# (scripts/test_python.sh: python/ built against that build, in a venv
# under it, mypy --strict, then pytest; under ASan with the sanitizers'
# runtimes preloaded), about a minute, in the background while their
# ctest runs, as the consumer check does in the release suite.
# Each test binary starts and stops its own servers on free loopback ports.
# ctest runs eight tests at once, six under valgrind (RLOCK_TEST_JOBS sets
# another number), the longest first, and each run ends with its ten
# slowest tests (scripts/ctest_slowest.py); the builds after the first are
# made in the background at the lowest priority while the suites before
# them run; the script ends with each suite's wall time (about 14 minutes
# in all on 2 cores). The fault scenarios run in their short form here
# (RLOCK_FAULT_SECONDS, 3 s each); scripts/soak.sh runs the long one.
#
#   scripts/test.sh            all four configurations, deb and fuzz
#   scripts/test.sh release    just one: release | asan | tsan | valgrind
#   scripts/test.sh consumer   only the consumer check
#   scripts/test.sh python     only the Python suite, on build-test-release
#   scripts/test.sh format     only the checks that every C (and C++) file follows
#                              .clang-format and every source file carries
#                              its SPDX licence line (scripts/spdx.sh; the
#                              release suite runs both)
#   scripts/test.sh deb        only the Debian package check
#   scripts/test.sh fuzz       only the fuzz targets
#   scripts/test.sh asan tsan  several, in that order
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh

JOBS=$(nproc 2>/dev/null || echo 2)
VALGRIND="valgrind;--quiet;--leak-check=full;--show-leak-kinds=definite,indirect"
VALGRIND+=";--errors-for-leak-kinds=definite,indirect;--error-exitcode=99"
VALGRIND+=";--suppressions=$PWD/tests/valgrind.supp"

# config NAME: the configure arguments of configuration NAME (release,
# asan, tsan, valgrind) in ARGS, and how many tests its ctest runs at once
# in CTEST_JOBS. The tests mostly wait (on leases, failovers, servers
# starting), even instrumented: measured on 2 cores, the tests of each
# configuration used 0.25 (release), 0.3 (ASan), 0.4 (TSan) and 0.4
# (valgrind) of one core on average with four (three) at once, so eight
# run at once, the longest binaries cut into shards (tests/CMakeLists.txt).
# valgrind's computing is what slows a test's own threads, and a few tests
# give a renewal tens of milliseconds that no time scale stretches, so it
# runs six. RLOCK_TEST_JOBS, when set, is every configuration's.
config() {
  case $1 in
  release) ARGS=(-DCMAKE_BUILD_TYPE=RelWithDebInfo) CTEST_JOBS=8 ;;
  asan) ARGS=(-DCMAKE_BUILD_TYPE=Debug "-DRLOCK_SANITIZE=address,undefined"
              -DRLOCK_TEST_TIME_SCALE=2) CTEST_JOBS=8 ;;
  tsan) ARGS=(-DCMAKE_BUILD_TYPE=Debug -DRLOCK_SANITIZE=thread
              -DRLOCK_TEST_TIME_SCALE=3) CTEST_JOBS=8 ;;
  valgrind) ARGS=(-DCMAKE_BUILD_TYPE=Debug "-DRLOCK_TEST_LAUNCHER=$VALGRIND"
                  -DRLOCK_TEST_TIME_SCALE=8) CTEST_JOBS=6 ;;
  esac
  CTEST_JOBS=${RLOCK_TEST_JOBS:-$CTEST_JOBS}
}

# build NAME: configure and build build-test-NAME (fuzz: build-fuzz).
build() {
  if [ "$1" = fuzz ]; then
    FUZZ_BUILD_ONLY=1 scripts/fuzz.sh >/dev/null
    return
  fi
  config "$1"
  cmake -S . -B "build-test-$1" -DRLOCK_WERROR=ON "${ARGS[@]}" >/dev/null
  cmake --build "build-test-$1" -j"$JOBS" >/dev/null
}

# prebuild NAME...: build these configurations one after another in the
# background at the lowest priority (nice 19), while the suites before
# them run: their tests leave most of the CPU idle, and keep what they
# ask for. Each suite waits for it before building (then a no-op; a
# build that failed here fails again there, saying why). It runs in a
# process group of its own, which the exit stops if it still runs.
PREBUILD="" PREBUILDING=""
prebuild() {
  [ $# -gt 0 ] || return 0
  PREBUILDING=" $* "
  set -m
  (
    renice -n 19 -p "$BASHPID" >/dev/null
    for n in "$@"; do build "$n" >/dev/null 2>&1 || true; done
  ) &
  PREBUILD=$!
  set +m
}
# prebuilt NAME: wait for the background builds if NAME is one of them.
prebuilt() {
  [[ "$PREBUILDING" == *" $1 "* ]] || return 0
  [ -z "$PREBUILD" ] || wait "$PREBUILD" || true
  PREBUILD=""
}

# run NAME [SIDE...]: build build-test-NAME, run its ctest, then print
# its ten slowest tests (from ctest's JUnit file) whether or not they
# passed. Each SIDE (a suite name: python, consumer, python-asan) runs
# meanwhile in the background, its output kept in a file and printed
# after ctest's: both mostly wait on servers, leaving the CPU idle.
run() {
  local name=$1 dir=build-test-$1 rc=0 side pids=() logs=()
  shift
  echo "==> $name"
  prebuilt "$name"
  build "$name"
  for side in "$@"; do
    logs+=("$dir/side-$side.log")
    (suite "$side") >"$dir/side-$side.log" 2>&1 &
    pids+=($!)
  done
  rm -f "$dir/ctest-junit.xml"
  (cd "$dir" && ctest --output-on-failure -j"$CTEST_JOBS" \
     --output-junit ctest-junit.xml) || rc=$?
  [ ! -f "$dir/ctest-junit.xml" ] ||
    scripts/ctest_slowest.py "$dir/ctest-junit.xml" 10 "$name: ctest -j$CTEST_JOBS"
  for side in "${!pids[@]}"; do
    wait "${pids[$side]}" || rc=$((rc ? rc : 1))
    cat "${logs[$side]}"
  done
  return "$rc"
}

suite() {
  case $1 in
  release) suite format
           run release python consumer ;;
  format) echo "==> format"
          scripts/format.sh --check
          scripts/spdx.sh ;;
  consumer) echo "==> consumer"
            tests/consumer/check.sh ;;
  python) scripts/test_python.sh build-test-release ;;
  python-asan) scripts/test_python.sh --asan build-test-asan ;;
  deb) echo "==> deb"
       scripts/deb.sh ;;
  fuzz) echo "==> fuzz"
        prebuilt fuzz
        FUZZ_SECONDS=${FUZZ_SECONDS:-20} scripts/fuzz.sh ;;
  asan) ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
          run asan python-asan ;;
  # die_after_fork=0: tests fork child processes that create clients (and
  # so threads); the children only run rlock code.
  tsan) TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 die_after_fork=0" \
          run tsan ;;
  valgrind) run valgrind ;;
  *) echo "unknown suite '$1' (release, asan, tsan, valgrind, consumer, python, format, deb, fuzz)" >&2; exit 64 ;;
  esac
}

# Each suite's wall time, printed at the end (also when one fails: the
# suites run until then, and the one that failed).
TIMES=()
CURRENT="" CURRENT_START=$SECONDS ALL_START=$SECONDS
print_times() {
  local rc=$? t name secs note
  [ -z "$PREBUILD" ] || kill -- "-$PREBUILD" 2>/dev/null || true
  [ -z "$CURRENT" ] || TIMES+=("$CURRENT $((SECONDS - CURRENT_START)) (failed)")
  [ ${#TIMES[@]} -gt 0 ] || return "$rc"
  echo "==> wall time per suite:"
  for t in "${TIMES[@]}"; do
    read -r name secs note <<<"$t"
    printf '    %-9s %3dm%02ds%s\n' "$name" $((secs / 60)) $((secs % 60)) \
      "${note:+ $note}"
  done
  printf '    %-9s %3dm%02ds\n' all $(((SECONDS - ALL_START) / 60)) \
    $(((SECONDS - ALL_START) % 60))
  return "$rc"
}
trap print_times EXIT
timed() {
  CURRENT=$1 CURRENT_START=$SECONDS
  suite "$1"
  TIMES+=("$1 $((SECONDS - CURRENT_START))")
  CURRENT=""
}

[ $# -gt 0 ] || set -- release deb asan tsan valgrind fuzz
# The builds after the first are made ahead, in the background.
later=() first=""
for s in "$@"; do
  case $s in
  release | asan | tsan | valgrind | fuzz)
    if [ -z "$first" ]; then
      first=$s
    elif [ "$s" != "$first" ] && [[ " ${later[*]} " != *" $s "* ]]; then
      later+=("$s")
    fi ;;
  esac
done
prebuild "${later[@]}"
for s in "$@"; do timed "$s"; done
echo "==> all suites passed"
