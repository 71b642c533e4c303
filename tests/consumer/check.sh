#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Builds and runs tests/consumer/app.c against rlock the four ways a C
# programmer adopts it, from a throwaway install prefix (scripts/test.sh
# runs it once, after the release suite; no server is needed):
#   (a) a CMake project with add_subdirectory (and one with FetchContent)
#   (b) a CMake project with find_package(rlock CONFIG)
#   (c) a plain cc build with pkg-config
#   (d) static links (rlock::rlock_static, from (a) and (b)): no librlock.so
#   (e) the event-loop adapters with pkg-config (rlock-uv, rlock-event),
#       where the build had libuv and libevent
# Also checks what `cmake --install` puts in the prefix.
#
#   tests/consumer/check.sh [WORKDIR]   (default: a fresh mktemp -d, removed)
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
here=$src/tests/consumer
if [ $# -gt 0 ]; then
  work=$1
  rm -rf "$work" && mkdir -p "$work"
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
work=$(cd "$work" && pwd)
prefix=$work/prefix
JOBS=$(nproc 2>/dev/null || echo 2)
CC=${CC:-cc}

step() { echo "--> $*"; }
fail() { echo "consumer check FAILED: $*" >&2; exit 1; }
q() { "$@" >"$work/last.log" 2>&1 || { cat "$work/last.log" >&2; fail "$*"; }; }

# needs FILE LIB: FILE is dynamically linked against LIB (or not, with !).
needs() { readelf -d "$1" | grep -q "NEEDED.*\[$2"; }

# run APP: runs one consumer program, which must print the version.
run() {
  local out
  out=$("$@") || fail "$* exited $?"
  [ "$out" = "rlock $version" ] || fail "$*: printed '$out', wanted 'rlock $version'"
}

version=$(sed -n 's/^#define RLOCK_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\)$/\2/p' \
  "$src/include/rlock/version.h" | paste -sd.)

step "install rlock $version into a throwaway prefix"
q cmake -S "$src" -B "$work/build" -DCMAKE_INSTALL_PREFIX="$prefix" \
  -DRLOCK_BUILD_TESTS=OFF -DRLOCK_BUILD_BENCH=OFF -DRLOCK_BUILD_EXAMPLES=OFF
q cmake --build "$work/build" -j"$JOBS"
q cmake --install "$work/build"
libdir=$(dirname "$(find "$prefix" -name librlock.a)")
for f in include/rlock.h include/rlock/version.h bin/rlock share/man/man1/rlock.1; do
  [ -e "$prefix/$f" ] || fail "not installed: $f"
done
for f in librlock.so librlock.so.0 "librlock.so.$version" librlock.a pkgconfig/rlock.pc \
  cmake/rlock/rlockConfig.cmake cmake/rlock/rlockConfigVersion.cmake \
  cmake/rlock/rlockTargets.cmake cmake/rlock/rlockStaticTargets.cmake; do
  [ -e "$libdir/$f" ] || fail "not installed: $libdir/$f"
done
soname=$(readelf -d "$libdir/librlock.so" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
[ "$soname" = librlock.so.0 ] || fail "SONAME is '$soname'"
LD_LIBRARY_PATH=$libdir "$prefix/bin/rlock" --help \
  >/dev/null 2>&1 || fail "the installed rlock does not run"

# cmake_consumer NAME ARGS...: configure, build and run tests/consumer/cmake.
cmake_consumer() {
  local name=$1 dir=$work/$1
  shift
  step "CMake consumer: $name"
  q cmake -S "$here/cmake" -B "$dir" "$@"
  q cmake --build "$dir" -j"$JOBS"
  needs "$dir/app_shared" librlock.so.0 || fail "$name: app_shared does not need librlock.so.0"
  ! needs "$dir/app_static" librlock || fail "$name: app_static needs librlock"
  run "$dir/app_shared"
  run "$dir/app_static"
}

# (a) add_subdirectory, then FetchContent from a tarball of the same tree.
cmake_consumer subdir -DRLOCK_VIA=subdir -DRLOCK_DIR="$src"
tar -C "$src" -czf "$work/rlock.tar.gz" --transform 's,^\.,rlock,' \
  ./CMakeLists.txt ./cmake ./include ./src ./docs
cmake_consumer fetch -DRLOCK_VIA=fetch -DRLOCK_URL="$work/rlock.tar.gz"
# (b) + (d) find_package against the prefix.
cmake_consumer package -DRLOCK_VIA=package -DCMAKE_PREFIX_PATH="$prefix"
# ... and rlock::rlock alone where no hiredis.pc can be found.
step "CMake consumer: package, shared only, no hiredis.pc"
PKG_CONFIG_LIBDIR=/nonexistent PKG_CONFIG_PATH='' q cmake -S "$here/cmake" \
  -B "$work/shared_only" -DRLOCK_VIA=package -DRLOCK_SHARED_ONLY=ON \
  -DCMAKE_PREFIX_PATH="$prefix"
q cmake --build "$work/shared_only"
run "$work/shared_only/app_shared"

# (c) cc + pkg-config: the installed librlock.so, found at run time by path.
step "cc + pkg-config"
export PKG_CONFIG_PATH=$libdir/pkgconfig
[ "$(pkg-config --modversion rlock)" = "$version" ] || fail "pkg-config --modversion rlock"
# shellcheck disable=SC2046
q "$CC" -std=c99 -Wall -Werror -o "$work/app_pc" "$here/app.c" $(pkg-config --cflags --libs rlock)
needs "$work/app_pc" librlock.so.0 || fail "app_pc does not need librlock.so.0"
LD_LIBRARY_PATH=$libdir run "$work/app_pc"
# ... and statically, with the .pc file's private fields (hiredis, pthread).
# shellcheck disable=SC2046
q "$CC" -std=c99 -Wall -Werror -o "$work/app_pc_static" "$here/app.c" \
  $(pkg-config --cflags rlock) "$libdir/librlock.a" \
  $(pkg-config --static --libs rlock | sed 's/ -lrlock / /')
! needs "$work/app_pc_static" librlock || fail "app_pc_static needs librlock"
run "$work/app_pc_static"

# (e) the adapters: their libraries, .pc files and CMake targets.
if pkg-config --exists libuv libevent; then
  step "cc + pkg-config: the event-loop adapters"
  for ad in uv event; do
    for f in "librlock_$ad.so" "librlock_$ad.so.0" "pkgconfig/rlock-$ad.pc"; do
      [ -e "$libdir/$f" ] || fail "not installed: $libdir/$f"
    done
    [ -e "$prefix/include/rlock/$ad.h" ] || fail "not installed: rlock/$ad.h"
    grep -q "rlock::rlock_$ad" "$libdir"/cmake/rlock/rlock*Targets*.cmake ||
      fail "no CMake target rlock::rlock_$ad"
  done
  # shellcheck disable=SC2046
  q "$CC" -std=c99 -Wall -Werror -o "$work/app_loop" "$here/app_loop.c" \
    $(pkg-config --cflags --libs rlock-uv rlock-event)
  needs "$work/app_loop" librlock_uv.so.0 || fail "app_loop does not need librlock_uv"
  LD_LIBRARY_PATH=$libdir run "$work/app_loop"
fi

echo "--> consumer check passed"
