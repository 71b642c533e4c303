#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Builds rlock's Debian packages (debian/: librlock0, librlock-dev,
# rlock-tools, the adapters' librlock-uv0, librlock-uv-dev,
# librlock-event0, librlock-event-dev, and the Python binding's
# python3-rlock) from a clean copy of the tree,
# installs them, checks them the way a user would, and purges them again
# (about a minute):
#   - the packages hold what they should (SONAME librlock.so.0 in librlock0,
#     headers, librlock.so, librlock.a, rlock.pc and the CMake package in
#     librlock-dev, rlock and its man page in rlock-tools, no rlock-bench);
#   - tests/consumer/app.c builds and runs against the installed packages
#     with cc + pkg-config (shared and static) and with find_package(rlock);
#   - `rlock --help` runs, `rlock --version` prints the version (no commit:
#     the copy has no .git), the man page is installed, and rlock has no
#     RPATH (built with RLOCK_RELOCATABLE=OFF);
#   - tests/consumer/app_loop.c builds and runs against the adapters'
#     packages with cc + pkg-config, and find_package(rlock COMPONENTS uv
#     event) finds their CMake targets; librlock-dev holds none of their
#     files;
#   - python3-rlock holds the module in /usr/lib/python3/dist-packages,
#     its extension has no RPATH and depends on librlock0, and Debian's
#     /usr/bin/python3 imports it (the version is the library's), loads
#     /usr/lib/MULTIARCH/librlock.so.0, and takes and releases a lock on a
#     throwaway redis-server (a unix socket of its own, stopped by pid);
#     pip installs python/ into a venv against librlock-dev (pkg-config):
#     no RUNPATH, the same library loaded, a lock taken and released.
# The copy holds the files git knows of as they are in the working tree
# (uncommitted edits included, ignored ones such as build*/ left out); the
# tree itself is never written to except OUTDIR, which receives the .debs.
# Missing build tools (debhelper, dpkg-dev, build-essential, cmake,
# pkg-config, the libraries' -dev packages, dh-python and the Python build
# packages: debian/control's Build-Depends) and redis-server are installed
# with apt-get, as scripts/deps.sh does; installing and purging the packages needs root or sudo.
#
#   scripts/deb.sh [--build-only] [OUTDIR]   (OUTDIR default: build-deb)
#
# --build-only builds and inspects the packages but installs nothing. The
# install check refuses to run while any of its packages is installed
# already, so it never purges a copy it did not install itself.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
start=$SECONDS

build_only=0
if [ "${1:-}" = --build-only ]; then
  build_only=1
  shift
fi
out=${1:-build-deb}
mkdir -p "$out"
out=$(cd "$out" && pwd)

step() { echo "--> $*"; }
fail() { echo "deb check FAILED: $*" >&2; exit 1; }
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
PKGS=(debhelper dpkg-dev build-essential cmake pkg-config libhiredis-dev libssl-dev
      libuv1-dev libevent-dev dh-python python3-all-dev python3-setuptools python3-cffi
      redis-server redis-tools)
missing=()
for p in "${PKGS[@]}"; do installed "$p" || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  echo "rlock: installing ${missing[*]}" >&2
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

RLOCK_PKGS=(librlock0 librlock-dev rlock-tools librlock-uv0 librlock-uv-dev
            librlock-event0 librlock-event-dev python3-rlock)
if [ $build_only -eq 0 ]; then
  for p in "${RLOCK_PKGS[@]}"; do
    installed "$p" && fail "$p is installed already; remove it first or use --build-only"
  done
fi

version=$(sed -n 's/^#define RLOCK_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\)$/\2/p' \
  include/rlock/version.h | paste -sd.)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
copy=$work/rlock-$version

step "copy the tree to $copy"
mkdir -p "$copy"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  git ls-files -z --cached --others --exclude-standard |
    while IFS= read -r -d '' f; do
      if [ -e "$f" ] || [ -L "$f" ]; then printf '%s\0' "$f"; fi
    done |
    tar --null -T - -cf - | tar -xf - -C "$copy"
else
  tar --exclude='./build' --exclude='./build-*' --exclude='./obj-*' --exclude=./.git \
    -cf - . | tar -xf - -C "$copy"
fi

step "dpkg-buildpackage -us -uc -b"
if ! (cd "$copy" && dpkg-buildpackage -us -uc -b -jauto) >"$work/build.log" 2>&1; then
  tail -40 "$work/build.log" >&2
  fail "dpkg-buildpackage"
fi
rm -f "$out"/*.deb "$out"/*.changes "$out"/*.buildinfo
cp "$work"/*.deb "$work"/*.changes "$work"/*.buildinfo "$out"/
cp "$work/build.log" "$out/"
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
pkgver=$(cd "$copy" && dpkg-parsechangelog -SVersion)
deb() { echo "$out/${1}_${pkgver}_$arch.deb"; }

step "inspect the packages"
# has PKG PATH...: PKG's data holds every PATH (./usr/...).
has() {
  local p=$1 list
  shift
  list=$(dpkg-deb -c "$(deb "$p")" | awk '{print $6}')
  for f in "$@"; do
    grep -qxF "./$f" <<<"$list" || fail "$p does not hold /$f"
  done
}
lib=usr/lib/$multiarch
has librlock0 "$lib/librlock.so.0" "$lib/librlock.so.$version"
has librlock-dev usr/include/rlock.h usr/include/rlock.hpp usr/include/rlock/version.h "$lib/librlock.so" \
  "$lib/librlock.a" "$lib/pkgconfig/rlock.pc" "$lib/cmake/rlock/rlockConfig.cmake" \
  "$lib/cmake/rlock/rlockConfigVersion.cmake" "$lib/cmake/rlock/rlockTargets.cmake"
has rlock-tools usr/bin/rlock usr/share/man/man1/rlock.1.gz
for ad in uv event; do
  Set=$(tr '[:lower:]' '[:upper:]' <<<"${ad:0:1}")${ad:1}
  has "librlock-${ad}0" "$lib/librlock_$ad.so.0" "$lib/librlock_$ad.so.$version"
  has "librlock-$ad-dev" "usr/include/rlock/$ad.h" "$lib/librlock_$ad.so" \
    "$lib/pkgconfig/rlock-$ad.pc" "$lib/cmake/rlock/rlock${Set}Targets.cmake"
  ! dpkg-deb -c "$(deb librlock-dev)" | grep -e "rlock/$ad.h" -e "rlock_$ad" >/dev/null ||
    fail "librlock-dev holds a file of the $ad adapter"
done
for p in "${RLOCK_PKGS[@]}"; do
  ! dpkg-deb -c "$(deb "$p")" | grep rlock-bench >/dev/null || fail "$p holds rlock-bench"
done
# Debian's library package naming: the package is named after the SONAME.
dpkg-deb -x "$(deb librlock0)" "$work/librlock0"
soname=$(readelf -d "$work/librlock0/$lib/librlock.so.$version" |
  sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
[ "$soname" = librlock.so.0 ] || fail "SONAME is '$soname', the package is named librlock0"
# Built with RLOCK_RELOCATABLE=OFF (debian/rules): no RPATH to a
# non-system directory (lintian), .pc files naming /usr.
dpkg-deb -x "$(deb rlock-tools)" "$work/rlock-tools"
! readelf -d "$work/rlock-tools/usr/bin/rlock" | grep -E 'RPATH|RUNPATH' >/dev/null ||
  fail "rlock-tools' /usr/bin/rlock has an RPATH or RUNPATH"
dpkg-deb -x "$(deb librlock-dev)" "$work/librlock-dev"
grep -qx 'prefix=/usr' "$work/librlock-dev/$lib/pkgconfig/rlock.pc" ||
  fail "librlock-dev's rlock.pc does not say prefix=/usr"
dpkg-deb -f "$(deb librlock-dev)" Depends | grep -F "librlock0 (= $pkgver)" >/dev/null ||
  fail "librlock-dev does not depend on librlock0 (= $pkgver)"
dpkg-deb -f "$(deb rlock-tools)" Depends | grep "librlock0 (>= " >/dev/null ||
  fail "rlock-tools does not depend on librlock0"
# python3-rlock: the module in Debian's directory for every Python 3, its
# extension found by the loader (no RPATH), dependencies from dh_shlibdeps
# (librlock0) and dh_python3.
pydir=usr/lib/python3/dist-packages
has python3-rlock "$pydir/rlock/__init__.py" "$pydir/rlock/aio.py" "$pydir/rlock/py.typed"
dpkg-deb -x "$(deb python3-rlock)" "$work/python3-rlock"
pyext=$(find "$work/python3-rlock/$pydir/rlock" -name '_rlock_cffi*.so')
[ -n "$pyext" ] || fail "python3-rlock holds no rlock/_rlock_cffi*.so"
readelf -d "$pyext" | grep -q 'NEEDED.*\[librlock\.so\.0\]' ||
  fail "python3-rlock's $(basename "$pyext") does not need librlock.so.0"
! readelf -d "$pyext" | grep -E 'RPATH|RUNPATH' >/dev/null ||
  fail "python3-rlock's $(basename "$pyext") has an RPATH or RUNPATH"
for dep in "librlock0 (>= " python3-cffi-backend; do
  dpkg-deb -f "$(deb python3-rlock)" Depends | grep -F "$dep" >/dev/null ||
    fail "python3-rlock does not depend on $dep..."
done
for p in "${RLOCK_PKGS[@]}"; do
  echo "    $(basename "$(deb "$p")"): $(dpkg-deb -c "$(deb "$p")" | grep -vc '/$') files"
done

if [ $build_only -eq 1 ]; then
  echo "--> packages built in $out ($((SECONDS - start)) s)"
  exit 0
fi

step "install ${RLOCK_PKGS[*]}"
purge() {
  $SUDO apt-get purge -y -qq "${RLOCK_PKGS[@]}" >/dev/null 2>&1 || true
}
trap 'purge; rm -rf "$work"' EXIT
q() { "$@" >"$work/last.log" 2>&1 || { cat "$work/last.log" >&2; fail "$*"; }; }
debs=()
for p in "${RLOCK_PKGS[@]}"; do debs+=("$(deb "$p")"); done
q $SUDO apt-get install -y -qq --no-install-recommends "${debs[@]}"

# run APP: a consumer program, which must print the version.
run() {
  local got
  got=$("$@") || fail "$* exited $?"
  [ "$got" = "rlock $version" ] || fail "$*: printed '$got', wanted 'rlock $version'"
}
needs() { readelf -d "$1" | grep "NEEDED.*\[$2" >/dev/null; }
app=$src/tests/consumer/app.c
CC=${CC:-cc}

step "cc + pkg-config against the installed packages"
[ "$(pkg-config --modversion rlock)" = "$version" ] || fail "pkg-config --modversion rlock"
# shellcheck disable=SC2046
q "$CC" -std=c99 -Wall -Werror -o "$work/app_pc" "$app" $(pkg-config --cflags --libs rlock)
needs "$work/app_pc" librlock.so.0 || fail "app_pc does not need librlock.so.0"
run "$work/app_pc"
# shellcheck disable=SC2046
q "$CC" -std=c99 -Wall -Werror -o "$work/app_pc_static" "$app" $(pkg-config --cflags rlock) \
  "/$lib/librlock.a" $(pkg-config --static --libs rlock | sed 's/-lrlock //')
! needs "$work/app_pc_static" librlock || fail "app_pc_static needs librlock"
run "$work/app_pc_static"
CXX=${CXX:-g++}
if command -v "$CXX" >/dev/null; then
  # shellcheck disable=SC2046
  q "$CXX" -std=c++17 -Wall -Wextra -Werror -o "$work/app_cpp" \
    "$src/tests/consumer/app.cpp" $(pkg-config --cflags --libs rlock)
  run "$work/app_cpp"
else
  echo "--> SKIPPED the C++ consumer: no $CXX (Debian: g++)"
fi

step "CMake find_package(rlock) against the installed packages"
q cmake -S "$src/tests/consumer/cmake" -B "$work/cmake" -DRLOCK_VIA=package
grep -q "found rlock $version in /$lib/cmake/rlock" "$work/last.log" ||
  fail "find_package did not find /$lib/cmake/rlock"
q cmake --build "$work/cmake"
run "$work/cmake/app_shared"
run "$work/cmake/app_static"

step "the event-loop adapters' packages: cc + pkg-config, find_package"
# shellcheck disable=SC2046
q "$CC" -std=c99 -Wall -Werror -o "$work/app_loop" "$src/tests/consumer/app_loop.c" \
  $(pkg-config --cflags --libs rlock-uv rlock-event)
needs "$work/app_loop" librlock_uv.so.0 || fail "app_loop does not need librlock_uv.so.0"
needs "$work/app_loop" librlock_event.so.0 || fail "app_loop does not need librlock_event.so.0"
run "$work/app_loop"
mkdir -p "$work/fp"
cat >"$work/fp/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.18)
project(fp C)
find_package(rlock CONFIG REQUIRED COMPONENTS uv event)
foreach(_t rlock::rlock_uv rlock::rlock_event)
  if(NOT TARGET ${_t})
    message(FATAL_ERROR "no ${_t}")
  endif()
endforeach()
EOF
q cmake -S "$work/fp" -B "$work/fp/build"

step "rlock --help, --version and the man page"
q /usr/bin/rlock --help
# Built from a copy without .git, like a release tarball: no commit.
[ "$(/usr/bin/rlock --version)" = "rlock $version" ] ||
  fail "rlock --version says '$(/usr/bin/rlock --version)', wanted 'rlock $version'"
dpkg -L rlock-tools | grep -x /usr/share/man/man1/rlock.1.gz >/dev/null || fail "no man page"
if command -v man >/dev/null; then
  [ "$(man -w rlock)" = /usr/share/man/man1/rlock.1.gz ] || fail "man -w rlock"
fi

step "python3-rlock: /usr/bin/python3 takes and releases a lock"
sockdir=$(mktemp -d)
server_pid=""
stop_server() {
  if [ -n "$server_pid" ]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    server_pid=""
  fi
  rm -rf "$sockdir"
}
trap 'stop_server; purge; rm -rf "$work"' EXIT
sock=$sockdir/redis.sock
redis-server --port 0 --unixsocket "$sock" --save "" --appendonly no \
  --dir "$sockdir" --logfile "$sockdir/redis.log" &
server_pid=$!
for _ in $(seq 200); do
  kill -0 "$server_pid" 2>/dev/null || break
  [ "$(redis-cli -s "$sock" ping 2>/dev/null)" = PONG ] && break
  sleep 0.05
done
[ "$(redis-cli -s "$sock" ping 2>/dev/null)" = PONG ] || fail "redis-server did not answer on $sock"
# -I: nothing from the working directory, PYTHONPATH or the user's site.
got=$(cd "$work" && /usr/bin/python3 -I - "unix://$sock" <<'EOF'
import sys
import rlock
with rlock.Client(sys.argv[1]) as client:
    lock = client.lock("deb-check")
    with lock:
        assert lock.locked()
    assert not lock.locked()
maps = open("/proc/self/maps").read().split("\n")
lib = next(line.split()[-1] for line in maps if "/librlock.so" in line)
print(rlock.__version__, rlock.__file__, lib)
EOF
) || fail "/usr/bin/python3: import rlock, take and release a lock"
want="$version /$pydir/rlock/__init__.py /$lib/librlock.so.$version"
[ "$got" = "$want" ] || fail "/usr/bin/python3 -c 'import rlock': '$got', wanted '$want'"

step "pip install ./python against librlock-dev (pkg-config), in a venv"
# python/README.md's "against an installed librlock": pkg-config names no
# -L for Debian's library directory, so the extension has no RUNPATH and
# loads librlock0's library. Built in a copy (pip builds in python/build/).
mkdir -p "$work/pysrc"
cp -r "$src/python" "$work/pysrc/"
rm -rf "$work/pysrc/python/build" "$work/pysrc/python/rlock.egg-info"
q /usr/bin/python3 -m venv --system-site-packages "$work/venv"
q env -u RLOCK_BUILD_DIR -u RLOCK_NO_RPATH -u PKG_CONFIG_PATH "$work/venv/bin/pip" install \
  --no-build-isolation --no-deps "$work/pysrc/python"
venv_ext=$(find "$work/venv" -name '_rlock_cffi*.so')
! readelf -d "$venv_ext" | grep -E 'RPATH|RUNPATH' >/dev/null ||
  fail "the venv's $(basename "$venv_ext") has an RPATH or RUNPATH"
got=$(cd "$work" && "$work/venv/bin/python" -I - "unix://$sock" <<'EOF'
import sys
import rlock
with rlock.Client(sys.argv[1]) as client:
    with client.lock("deb-check-venv"):
        pass
maps = open("/proc/self/maps").read().split("\n")
lib = next(line.split()[-1] for line in maps if "/librlock.so" in line)
print(rlock.__file__.startswith(sys.prefix + "/"), lib)
EOF
) || fail "the venv's python: import rlock, take and release a lock"
[ "$got" = "True /$lib/librlock.so.$version" ] ||
  fail "the venv's import rlock: '$got', wanted 'True /$lib/librlock.so.$version'"
stop_server

step "purge ${RLOCK_PKGS[*]}"
purge
for p in "${RLOCK_PKGS[@]}"; do
  ! installed "$p" || fail "$p is still installed"
done
echo "--> Debian packages built, installed, checked and purged ($((SECONDS - start)) s); .debs in $out"
