# SPDX-License-Identifier: BSD-3-Clause
# shellcheck shell=bash
# Sourced by check.sh and python_install.sh (after `set -euo pipefail` and
# $src set to the tree's top): what both need around their checks.
#   consumer_begin WORKDIR NAME: $work, WORKDIR emptied, or a fresh
#       mktemp -d removed at exit when WORKDIR is ""; an exit trap that
#       stops the server below and removes what is temporary; step,
#       fail and q, whose lines say NAME.
#   start_server: a throwaway redis-server on a unix socket of its own,
#       $sock ($url: unix://$sock), stopped by pid at exit.
#   step TEXT: says what comes next. fail TEXT: says so, exits 1.
#   q CMD...: runs CMD quietly; its output is shown when it fails.

consumer_begin() {
  consumer_name=$2
  own_work=0
  if [ -n "$1" ]; then
    work=$1
    rm -rf "$work" && mkdir -p "$work"
  else
    work=$(mktemp -d)
    own_work=1
  fi
  work=$(cd "$work" && pwd)
  # The server's socket lives in a short directory of its own (a unix
  # socket path has at most 107 bytes; WORKDIR may be long).
  sockdir=$(mktemp -d)
  server_pid=""
  trap consumer_cleanup EXIT
  trap 'exit 129' HUP
  trap 'exit 130' INT
  trap 'exit 143' TERM
}

consumer_cleanup() {
  if [ -n "$server_pid" ]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$sockdir"
  if [ "$own_work" -eq 1 ]; then rm -rf "$work"; fi
}

step() { echo "--> ${consumer_name:+$consumer_name: }$*"; }
fail() { echo "${consumer_name:-consumer} check FAILED: $*" >&2; exit 1; }
q() { "$@" >"$work/last.log" 2>&1 || { cat "$work/last.log" >&2; fail "$*"; }; }

start_server() {
  step "a throwaway redis-server"
  for tool in redis-server redis-cli; do
    command -v $tool >/dev/null || fail "$tool is needed (scripts/deps.sh installs it)"
  done
  sock=$sockdir/redis.sock
  # shellcheck disable=SC2034 # the caller's
  url=unix://$sock
  redis-server --port 0 --unixsocket "$sock" --save "" --appendonly no \
    --dir "$sockdir" --logfile "$sockdir/redis.log" &
  server_pid=$!
  for _ in $(seq 200); do
    kill -0 "$server_pid" 2>/dev/null || break
    [ "$(redis-cli -s "$sock" ping 2>/dev/null)" = PONG ] && break
    sleep 0.05
  done
  [ "$(redis-cli -s "$sock" ping 2>/dev/null)" = PONG ] || {
    tail -20 "$sockdir/redis.log" >&2 || true
    fail "redis-server did not answer on $sock"
  }
}
