#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""bench_rlock.py - the Python binding (rlock, python/) through the
workloads of bench/peers/py/peer_redispy.py, so scripts/bench_python.sh
puts it next to redis-py's Lock on the same server: the same processes,
shared file, counter (GET + SET through redis-py, pipelined with the
overlap counter) and percentiles; only the lock differs. One JSON object
per run on one line, the peer's keys, "lib": "rlock-py".

    bench_rlock.py --port P [--prefix S] WORKLOAD [options]

  uncontended --ops K        one process, one lock: K lock+unlock pairs
                             (after 100 warm-up)
  contended --procs N --ops K [--think-us T] [--max-seconds S]
  handoff --ops K [--hold-us H] [--max-seconds S]

The lock is client.lock(name) with its defaults (waits for ever, watchdog
lease); a waiter sleeps until the unlock message. Run with the venv's
python, which has rlock installed and sees Debian's python3-redis.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "peers", "py"))
import peer_redispy as peer  # noqa: E402  (its helpers and workloads)

import rlock  # noqa: E402

now = peer.now


class _Lock:
    """rlock's lock behind redis-py's Lock interface (acquire/release),
    so the peer's workload bodies run unchanged."""

    def __init__(self, client, name):
        self.lock = client.lock(name)

    def acquire(self):
        self.lock.acquire()

    def release(self):
        self.lock.release()


class _Redis:
    """redis-py's client for everything but the lock, whose lock() is
    rlock's: a process makes its rlock client after the fork."""

    def __init__(self, a):
        self.r = peer.redis.Redis(host="127.0.0.1", port=a.port)
        self.c = rlock.Client(f"redis://127.0.0.1:{a.port}")

    def lock(self, name):
        return _Lock(self.c, name)

    def __getattr__(self, k):
        return getattr(self.r, k)


def main():
    peer.client = _Redis  # every worker's client
    out = peer.emit

    def emit(obj):
        obj["lib"] = "rlock-py"
        out(obj)
    peer.emit = emit
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--prefix", default="bench:rlockpy:")
    ap.add_argument("workload", choices=["uncontended", "contended",
                                         "handoff"])
    ap.add_argument("--ops", type=int, default=2000)
    ap.add_argument("--procs", type=int, default=4)
    ap.add_argument("--think-us", type=int, default=0)
    ap.add_argument("--hold-us", type=int, default=300)
    ap.add_argument("--max-seconds", type=float, default=10.0)
    a = ap.parse_args()
    {"uncontended": peer.uncontended, "contended": peer.contended,
     "handoff": peer.handoff}[a.workload](a)


if __name__ == "__main__":
    main()
