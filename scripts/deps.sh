#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Install the Debian packages rlock needs to build, test and demo, when they
# are missing. Safe to run repeatedly; does nothing when all are present.
set -euo pipefail

# clang and libclang-rt-dev (libFuzzer, the sanitizers' runtimes):
# scripts/fuzz.sh; clang-format: scripts/format.sh; libssl-dev and
# openssl: TLS, and the test certificates; libuv1-dev and libevent-dev:
# the event-loop adapters (rlock_uv, rlock_event); g++ (also in
# build-essential, named since CI needs it): include/rlock.hpp's example
# and test; python3-*, mypy: the Python binding (python/,
# scripts/test_python.sh; python3-prometheus-client: its metrics'
# collector and tests); dh-python and python3-all-dev: python3-rlock's
# build (debian/control's Build-Depends; scripts/deb.sh also installs
# debhelper and dpkg-dev); tmux: test_cli runs `rlock top` in a real
# terminal.
PKGS=(build-essential g++ cmake pkg-config libhiredis-dev libssl-dev openssl libcmocka-dev
      libuv1-dev libevent-dev
      python3-dev python3-venv python3-setuptools python3-wheel python3-cffi python3-pytest
      python3-pytest-asyncio python3-prometheus-client mypy dh-python python3-all-dev
      redis-server redis-tools redis-sentinel valgrind python3
      clang libclang-rt-dev clang-format tmux)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "rlock: installing ${missing[*]}" >&2
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# Debian's packages start system-wide servers where an init system runs;
# rlock never uses them (tests and demo start their own on free ports).
