#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Builds and runs tests/consumer/app.c against rlock the ways a C
# programmer adopts it (scripts/test.sh runs it once, after the release
# suite):
#   (a) a CMake project with add_subdirectory (and one with FetchContent)
#   (b) a CMake project with find_package(rlock CONFIG), and one using
#       rlock::rlock alone where pkg-config cannot see hiredis.pc
#   (c) a plain cc build with pkg-config
#   (d) static links (rlock::rlock_static, from (a) and (b), and with
#       pkg-config --static): no librlock.so
#   (c') C++ over the installed rlock.hpp with pkg-config, where $CXX
#       (default g++) is found; without one it says so and skips this step
#   (e) the event-loop adapters with pkg-config (rlock-uv, rlock-event),
#       where the build had libuv and libevent; without them it says what
#       is missing and skips this step
#   (f) the Python package (python/), installed into a venv from two build
#       trees in turn and from an install prefix: tests/consumer/python_install.sh
# rlock is installed into one prefix, which is then moved (mv) elsewhere:
# (b) to (e) build against the moved prefix (pkg-config through the .pc
# files' ${pcfiledir}, find_package through CMAKE_PREFIX_PATH), and the
# moved `rlock --version` and `rlock exec` run without LD_LIBRARY_PATH
# (their RPATH, $ORIGIN/../lib, finds librlock). Every app.c runs against a
# throwaway redis-server (a unix socket of its own, stopped by pid on
# exit): it takes a lock there, sees it held and releases it.
# Also checks what `cmake --install` puts in the prefix.
#
#   tests/consumer/check.sh [WORKDIR]   (default: a fresh mktemp -d, removed)
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
here=$src/tests/consumer
# shellcheck source=tests/consumer/common.sh
. "$here/common.sh"
consumer_begin "${1:-}" ""
JOBS=$(nproc 2>/dev/null || echo 2)
CC=${CC:-cc}

# needs FILE LIB: FILE is dynamically linked against LIB (or not, with !).
needs() { readelf -d "$1" | grep -q "NEEDED.*\[$2"; }

# run APP: runs one consumer program against the server; it must print
# the version (and take and release its lock).
run() {
  local out
  out=$("$@" "$url") || fail "$* $url exited $?"
  [ "$out" = "rlock $version" ] || fail "$*: printed '$out', wanted 'rlock $version'"
}

version=$(sed -n 's/^#define RLOCK_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\)$/\2/p' \
  "$src/include/rlock/version.h" | paste -sd.)
# What `rlock --version` says: the commit too where $src is the top of a
# git checkout (cmake/git_commit.cmake's rule).
want_version="rlock $version"
if top=$(git -C "$src" rev-parse --show-toplevel 2>/dev/null) &&
  [ "$(cd "$top" && pwd -P)" = "$(cd "$src" && pwd -P)" ]; then
  want_version="$want_version (git $(git -C "$src" rev-parse --short HEAD))"
fi

start_server

step "install rlock $version into a throwaway prefix"
prefix=$work/prefix
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

step "move the prefix elsewhere"
old_prefix=$prefix
prefix=$work/moved/elsewhere
mkdir -p "$work/moved"
mv "$old_prefix" "$prefix"
libdir=$prefix/${libdir#"$old_prefix"/}
# Nothing installed may name the old place, or it would not be movable.
stale=$(grep -rlF "$old_prefix" "$prefix" || true)
[ -z "$stale" ] || fail "installed files name the prefix they were installed in: $stale"

step "the moved rlock runs without LD_LIBRARY_PATH (RPATH)"
rlock=$prefix/bin/rlock
found=$(env -u LD_LIBRARY_PATH ldd "$rlock" | sed -n 's/^[[:space:]]*librlock\.so\.0 => \(.*\) (0x.*/\1/p')
if [ -z "$found" ] || [ "$(realpath "$found")" != "$(realpath "$libdir/librlock.so.0")" ]; then
  fail "the moved rlock finds '$found', not $libdir/librlock.so.0"
fi
got=$(env -u LD_LIBRARY_PATH "$rlock" --version) || fail "the moved rlock --version exited $?"
[ "$got" = "$want_version" ] || fail "rlock --version printed '$got', wanted '$want_version'"
# exec holds the lock while COMMAND runs: COMMAND sees it held.
got=$(env -u LD_LIBRARY_PATH "$rlock" -u "$url" exec consumer:exec -- \
  "$rlock" -u "$url" status consumer:exec) || fail "the moved rlock exec exited $?"
grep -q "^consumer:exec: locked" <<<"$got" || fail "rlock exec: COMMAND saw '$got'"
got=$(env -u LD_LIBRARY_PATH "$rlock" -u "$url" status consumer:exec)
[ "$got" = "consumer:exec: free" ] || fail "after rlock exec: '$got'"

# cmake_consumer NAME ARGS...: configure, build and run tests/consumer/cmake.
cmake_consumer() {
  local name=$1 dir=$work/$1
  shift
  step "CMake consumer: $name"
  q cmake -S "$here/cmake" -B "$dir" "$@"
  cp "$work/last.log" "$dir.configure.log"
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
# (b) + (d) find_package against the moved prefix.
cmake_consumer package -DRLOCK_VIA=package -DCMAKE_PREFIX_PATH="$prefix"
grep -qxF -- "-- found rlock $version in $libdir/cmake/rlock" "$work/package.configure.log" ||
  fail "find_package did not find rlock in the moved $libdir/cmake/rlock"
# ... and rlock::rlock alone where pkg-config sees rlock's .pc files but no
# hiredis.pc (as on a machine without libhiredis-dev).
step "CMake consumer: package, shared only, no hiredis.pc"
mkdir -p "$work/empty"
nohiredis=(env PKG_CONFIG_LIBDIR="$work/empty:$libdir/pkgconfig" PKG_CONFIG_PATH=)
! "${nohiredis[@]}" pkg-config --exists hiredis ||
  fail "pkg-config still finds hiredis.pc with PKG_CONFIG_LIBDIR=$work/empty:..."
q "${nohiredis[@]}" cmake -S "$here/cmake" -B "$work/shared_only" -DRLOCK_VIA=package \
  -DRLOCK_SHARED_ONLY=ON -DCMAKE_PREFIX_PATH="$prefix"
q cmake --build "$work/shared_only"
run "$work/shared_only/app_shared"

# (c) cc + pkg-config: the moved librlock.so, found at run time by path.
step "cc + pkg-config"
export PKG_CONFIG_PATH=$libdir/pkgconfig
[ "$(pkg-config --modversion rlock)" = "$version" ] || fail "pkg-config --modversion rlock"
pc_prefix=$(cd "$(pkg-config --variable=prefix rlock)" && pwd -P)
[ "$pc_prefix" = "$(cd "$prefix" && pwd -P)" ] ||
  fail "rlock.pc's prefix is $pc_prefix, not the moved $prefix"
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
# ... and C++ over the installed rlock.hpp, where a C++ compiler is.
CXX=${CXX:-g++}
if command -v "$CXX" >/dev/null; then
  step "c++ + pkg-config: rlock.hpp"
  [ -e "$prefix/include/rlock.hpp" ] || fail "not installed: include/rlock.hpp"
  # shellcheck disable=SC2046
  q "$CXX" -std=c++17 -Wall -Wextra -Werror -o "$work/app_cpp" "$here/app.cpp" \
    $(pkg-config --cflags --libs rlock)
  needs "$work/app_cpp" librlock.so.0 || fail "app_cpp does not need librlock.so.0"
  LD_LIBRARY_PATH=$libdir run "$work/app_cpp"
else
  echo "--> SKIPPED the C++ consumer: no $CXX (Debian: g++; scripts/deps.sh installs it)"
fi

# (e) the adapters: their libraries, .pc files and CMake targets.
missing=()
pkg-config --exists libuv || missing+=("libuv (Debian: libuv1-dev)")
pkg-config --exists libevent || missing+=("libevent (Debian: libevent-dev)")
if [ ${#missing[@]} -gt 0 ]; then
  skip=$(printf '%s; ' "${missing[@]}")
  echo "--> SKIPPED the event-loop adapters: pkg-config finds no ${skip%; }," \
    "so the build made no adapter (scripts/deps.sh installs them)"
else
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
  LD_LIBRARY_PATH=$libdir run "$work/app_loop" # (it needs no server)
fi

# (f) the Python package, installed from build trees and from a prefix.
"$here/python_install.sh" "$work/build" "$work/python"

echo "--> consumer check passed"
