#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Heap allocations per uncontended lock+unlock pair (and semaphore and
# permit-expirable semaphore acquire+release of one permit) after a warm-up, all
# threads, at the libc level (bench/allocs: a counting malloc shim linked
# ahead of libc, and a program doing the pairs), against a throwaway
# redis-server on a free loopback port, stopped by pid on exit.
#
#   scripts/bench_allocs.sh [WARMUP [PAIRS]]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
ROOT=$PWD
BUILD=$ROOT/build-allocs
. scripts/bench_common.sh
WORK=$(mktemp -d)
dir=build-allocs
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DRLOCK_BUILD_TESTS=OFF >/dev/null
cmake --build "$dir" -j"$(nproc)" --target rlock >/dev/null
cc -O2 -shared -fPIC bench/allocs/shim.c -o "$dir/libshim.so" -ldl
cc -O2 -Iinclude bench/allocs/pairs.c -o "$dir/pairs" -L"$dir" -lrlock \
  -L"$dir" -lshim -Wl,-rpath,"$PWD/$dir"
start_server 0
for kind in lock semaphore psemaphore; do
  "$dir/pairs" "redis://127.0.0.1:${PORTS[0]}" "${1:-200}" "${2:-1000}" "$kind"
done
