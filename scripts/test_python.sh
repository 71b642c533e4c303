#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The Python binding's suite (python/tests) against a build directory of
# this tree: builds the package against BUILD's librlock (the tree's
# include/), installs it into a virtual environment under BUILD (made with
# --system-site-packages: cffi, pytest and pytest-asyncio are Debian's),
# checks the types with mypy --strict, and runs pytest, whose fixtures
# start and stop their own redis-servers.
#
#   scripts/test_python.sh BUILD          e.g. build-test-release
#   scripts/test_python.sh --asan BUILD   BUILD made with
#                                         -DRLOCK_SANITIZE=address,undefined:
#                                         python runs with the sanitizers'
#                                         runtimes preloaded
#
# BUILD must hold librlock.so and the rlock CLI (the tests share locks
# with it). Run scripts/deps.sh first (scripts/test.sh does).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ASAN=0
if [ "${1:-}" = "--asan" ]; then ASAN=1; shift; fi
if [ $# -ne 1 ] || [ ! -e "$1/librlock.so" ]; then
  echo "usage: scripts/test_python.sh [--asan] BUILD (a build directory" \
       "holding librlock.so)" >&2
  exit 64
fi
BUILD=$(cd "$1" && pwd)
VENV="$BUILD/pyenv"
PY=/usr/bin/python3 # Debian's, whose packages the venv sees

echo "==> python ($BUILD)"
[ -x "$VENV/bin/python" ] || "$PY" -m venv --system-site-packages "$VENV"
# pip builds in the tree's python/build/. An extension left there by a
# build against another librlock would be rebuilt anyway (the generated
# source names the librlock linked: rlock/_build.py), but the suite starts
# from none and leaves none, so the tree stays as git has it.
export RLOCK_BUILD_DIR="$BUILD"
rm -rf "$ROOT/python/build"
"$VENV/bin/pip" install -q --no-build-isolation --no-deps --force-reinstall \
  "$ROOT/python" >"$BUILD/pyenv-install.log" 2>&1 ||
  { cat "$BUILD/pyenv-install.log" >&2; exit 1; }
rm -rf "$ROOT/python/build" "$ROOT/python/rlock.egg-info"
(cd "$ROOT/python" && mypy --strict --cache-dir "$BUILD/pyenv-mypy" \
   --python-executable "$VENV/bin/python" -p rlock)

if [ "$ASAN" -eq 1 ]; then
  # The library carries ASan and UBSan; python does not, so their runtimes
  # must be loaded first. Python's own allocations are never freed at
  # exit, so leak checking is off (the C suites check librlock's leaks).
  LD_PRELOAD="$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)"
  export LD_PRELOAD
  export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  export RLOCK_TEST_TIME_SCALE=3
fi
# -P: import rlock from the venv, never from python/rlock in the tree.
"$VENV/bin/python" -P -m pytest -q -p no:cacheprovider "$ROOT/python/tests"
