#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Installs the Python package the way python/README.md says, several times
# into one venv from one source directory, against librlock in different
# places, and checks that each install links the librlock it was given
# (tests/consumer/check.sh runs it after its own checks):
#   1. from build tree A (RLOCK_BUILD_DIR), then from build tree B; A is
#      moved away: `import rlock` must load B's librlock (an install that
#      reused the extension built for A failed here: librlock.so.0 not
#      found);
#   2. from a prefix BUILD was installed into (`cmake --install`), found by
#      pkg-config; B is moved away: the extension loads the prefix's
#      librlock, and its RUNPATH names that directory alone;
#   3. into a venv made without --system-site-packages (no cffi, no
#      wheel): pip fails, and the build's message names the fix (a venv
#      of /usr/bin/python3 with --system-site-packages).
# Each import also takes and releases a lock on a throwaway redis-server
# (a unix socket of its own, stopped by pid on exit). The venv is made
# with Debian's /usr/bin/python3 (--system-site-packages: Debian's cffi,
# setuptools and wheel), whatever python3 comes first on PATH. The package
# is built in a copy of python/ and include/, whose python/build/ keeps
# what each install leaves, as a checkout does; the tree is not written.
# A and B are copies of BUILD's librlock.so* in two directories of their
# own: different places, the same library.
#
#   tests/consumer/python_install.sh BUILD [WORKDIR]
#     BUILD: a build directory of this tree holding librlock.so
#     WORKDIR: default a fresh mktemp -d, removed at exit
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
if [ $# -lt 1 ] || [ ! -e "$1/librlock.so" ]; then
  echo "usage: tests/consumer/python_install.sh BUILD [WORKDIR] (BUILD holds librlock.so)" >&2
  exit 64
fi
build=$(cd "$1" && pwd)
# shellcheck source=tests/consumer/common.sh
. "$src/tests/consumer/common.sh"
consumer_begin "${2:-}" "python install"

PY=/usr/bin/python3
"$PY" -c 'import cffi, setuptools, wheel, venv' 2>/dev/null ||
  fail "$PY lacks cffi, setuptools, wheel or venv (scripts/deps.sh installs python3-cffi," \
    "python3-setuptools, python3-wheel, python3-venv)"

start_server

step "a venv of $PY, the package's sources, build trees A and B"
q "$PY" -m venv --system-site-packages "$work/venv"
mkdir -p "$work/tree" "$work/a" "$work/b"
cp -r "$src/python" "$src/include" "$work/tree/"
rm -rf "$work/tree/python/build" "$work/tree/python/rlock.egg-info"
cp -a "$build"/librlock.so* "$work/a/"
cp -a "$build"/librlock.so* "$work/b/"

# install VAR=VALUE...: pip install the package with that environment.
install() {
  q env -u RLOCK_BUILD_DIR -u RLOCK_NO_RPATH "$@" "$work/venv/bin/pip" install \
    --no-build-isolation --no-deps "$work/tree/python"
}
# probe WANT: import rlock in the venv, take and release a lock, and check
# that the librlock loaded is WANT (compared resolved).
probe() {
  local got
  got=$(cd "$work" && env -u LD_LIBRARY_PATH "$work/venv/bin/python" -I - "$url" <<'EOF'
import sys
import rlock
with rlock.Client(sys.argv[1]) as client:
    lock = client.lock("python-install")
    with lock:
        assert lock.locked()
    assert not lock.locked()
maps = open("/proc/self/maps").read().split("\n")
print(next(line.split()[-1] for line in maps if "/librlock.so" in line))
EOF
  ) || fail "import rlock (wanted $1's librlock)"
  [ "$(realpath "$got")" = "$(realpath "$1")" ] ||
    fail "import rlock loaded $got, wanted $1"
}
ext() { ls "$work"/venv/lib/python3*/site-packages/rlock/_rlock_cffi*.so; }

step "from build tree A, then from build tree B; A moved away"
install RLOCK_BUILD_DIR="$work/a"
probe "$work/a/librlock.so.0"
install RLOCK_BUILD_DIR="$work/b"
mv "$work/a" "$work/a.moved"
probe "$work/b/librlock.so.0"

step "from an installed librlock (pkg-config); B moved away"
q cmake --install "$build" --prefix "$work/prefix"
libdir=$(dirname "$(find "$work/prefix" -name librlock.so)")
install PKG_CONFIG_PATH="$libdir/pkgconfig"
mv "$work/b" "$work/b.moved"
probe "$libdir/librlock.so.0"
runpath=$(readelf -d "$(ext)" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p')
[ "$(realpath "$runpath")" = "$(realpath "$libdir")" ] ||
  fail "the extension's RUNPATH is '$runpath', wanted $libdir"

step "a venv without Debian's packages: the build names the fix"
q "$PY" -m venv "$work/venv-bare"
if env -u RLOCK_NO_RPATH RLOCK_BUILD_DIR="$build" "$work/venv-bare/bin/pip" install \
  --no-build-isolation --no-deps "$work/tree/python" >"$work/bare.log" 2>&1; then
  fail "pip installed the package into a venv without cffi"
fi
for want in "cannot import cffi" "without --system-site-packages" \
  "/usr/bin/python3 -m venv --system-site-packages"; do
  grep -qF -- "$want" "$work/bare.log" || {
    cat "$work/bare.log" >&2
    fail "the failed build does not say '$want'"
  }
done

echo "--> python install check passed"
