#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""peer_redispy.py - redis-py's redis.lock.Lock through the workloads of
scripts/bench_peers.sh, printing one JSON object per run on one line (the
same keys as bench/peers/node/peer.mjs; see bench/peers/README.md).

    peer_redispy.py --port P [--prefix S] WORKLOAD [options]

  uncontended --ops K                one process, one lock name: K
                                     lock+unlock pairs (after 100 warm-up)
  contended --procs N --ops K [--think-us T] [--max-seconds S]
                                     N processes on one lock, K each, GET +
                                     SET of a counter inside
  handoff --ops K [--hold-us H] [--max-seconds S]
                                     2 processes in a strict ping-pong,
                                     each holding H us, the other waiting
  many --procs T --locks L --seconds S
                                     T processes, random locks out of L

The lock is r.lock(name) with redis-py's defaults (timeout=None: no
expiry; sleep=0.1: a waiter polls every 100 ms; blocking_timeout=None:
waits forever). Run with /usr/bin/python3 (Debian's python3-redis).
"""
import argparse
import json
import os
import random
import struct
import sys
import tempfile
import time

import redis

now = time.monotonic_ns  # CLOCK_MONOTONIC on Linux, like rlock-bench's


def pct(v, p):
    """Percentile by linear interpolation, as rlock-bench's stats.c."""
    if not v:
        return None
    v = sorted(v)
    pos = p / 100.0 * (len(v) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (pos - lo) * (v[hi] - v[lo])


def us(ns_value):
    return None if ns_value is None else round(ns_value / 1000.0, 1)


def client(a):
    return redis.Redis(host="127.0.0.1", port=a.port)


def emit(obj):
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def sleep_us(t):
    if t > 0:
        time.sleep(t / 1e6)


# ---- shared file: release time (offset 0) and acquisition count (8) ------
def shared_file():
    fd, path = tempfile.mkstemp(prefix="peer-redispy.")
    os.unlink(path)
    os.pwrite(fd, b"\0" * 16, 0)
    return fd


def put(fd, off, val):
    os.pwrite(fd, struct.pack("<q", val), off)


def get(fd, off):
    return struct.unpack("<q", os.pread(fd, 8, off))[0]


# ---- processes: fork before any client exists, start together ------------
def run_procs(n, body, a, *args):
    """Fork n children running body(i, a, *args) -> dict; each connects,
    reports ready, waits for the go, and writes its dict as JSON to a
    pipe. Returns (results, start_ns)."""
    kids = []
    go_r, go_w = os.pipe()
    for i in range(n):
        rd_r, rd_w = os.pipe()
        out_r, out_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(go_w)
            os.close(rd_r)
            os.close(out_r)
            code = 0
            try:
                res = body(i, a, rd_w, go_r, *args)
            except Exception as e:  # reported, counted by the parent
                res = {"error": repr(e)}
                code = 1
            with os.fdopen(out_w, "w") as f:
                f.write(json.dumps(res))
            os._exit(code)
        os.close(rd_w)
        os.close(out_w)
        kids.append((pid, rd_r, out_r))
    os.close(go_r)
    for _, rd_r, _ in kids:
        os.read(rd_r, 1)  # ready (or EOF if it died)
        os.close(rd_r)
    start = now()
    os.close(go_w)  # go
    results = []
    for pid, _, out_r in kids:
        with os.fdopen(out_r) as f:
            text = f.read()
        os.waitpid(pid, 0)
        results.append(json.loads(text) if text else {"error": "no output"})
    return results, start


def ready_then_wait(rd_w, go_r):
    os.write(rd_w, b"r")
    os.close(rd_w)
    os.read(go_r, 1)  # EOF when the parent closes it
    os.close(go_r)


# ---- workloads -------------------------------------------------------------
def uncontended(a):
    r = client(a)
    pings = []
    for _ in range(1000):
        t0 = now()
        r.ping()
        pings.append(now() - t0)
    lock = r.lock(a.prefix + "unc")
    for _ in range(100):
        lock.acquire()
        lock.release()
    lat = []
    t_start = now()
    for _ in range(a.ops):
        t0 = now()
        lock.acquire()
        lock.release()
        lat.append(now() - t0)
    elapsed = now() - t_start
    emit({"workload": "uncontended", "lib": "redis-py", "ops": a.ops,
          "ping_rtt_us": us(pct(pings, 50)),
          "lock_unlock_p50_us": us(pct(lat, 50)),
          "lock_unlock_p99_us": us(pct(lat, 99)),
          "pairs_per_s": round(a.ops / (elapsed / 1e9))})


def contended_child(i, a, rd_w, go_r, fd, counter, holders):
    r = client(a)
    lock = r.lock(a.prefix + "con")
    r.ping()
    ready_then_wait(rd_w, go_r)
    deadline = now() + int(a.max_seconds * 1e9)
    hand, done, overlaps = [], 0, 0
    first = last = None
    while done < a.ops and now() < deadline:
        waited = now()
        lock.acquire()
        got = now()
        rel = get(fd, 0)
        if rel > waited:  # released while we waited: a handoff
            hand.append(got - rel)
        # Non-atomic GET + SET: only the lock keeps increments from being
        # lost. INCR/DECR of a holder count ride in the same round trips.
        p = r.pipeline(transaction=False)
        p.get(counter)
        p.incr(holders)
        v, h = p.execute()
        if h > 1:
            overlaps += 1
        p = r.pipeline(transaction=False)
        p.set(counter, int(v or 0) + 1)
        p.decr(holders)
        p.execute()
        t = now()
        put(fd, 0, t)
        lock.release()
        done += 1
        first = got if first is None else first
        last = t
        sleep_us(a.think_us)
    return {"done": done, "handoffs": hand, "overlaps": overlaps,
            "first": first, "last": last}


def contended(a):
    counter, holders = a.prefix + "counter", a.prefix + "holders"
    r = client(a)
    r.delete(counter, holders, a.prefix + "con")
    fd = shared_file()
    res, start = run_procs(a.procs, contended_child, a, fd, counter, holders)
    summarize_turns(a, r, res, start, counter, "contended")


def summarize_turns(a, r, res, start, counter, workload):
    errors = [x["error"] for x in res if "error" in x]
    ok = [x for x in res if "error" not in x]
    done = sum(x["done"] for x in ok)
    hand = [h for x in ok for h in x["handoffs"]]
    ends = [x["last"] for x in ok if x["last"] is not None]
    elapsed = (max(ends) - start) / 1e9 if ends else None
    final = int(r.get(counter) or 0) if counter else None
    out = {"workload": workload, "lib": "redis-py", "procs": a.procs,
           "ops": a.ops, "think_us": a.think_us, "acquisitions": done,
           "complete": done == a.procs * a.ops,
           "seconds": None if elapsed is None else round(elapsed, 3),
           "acquisitions_per_s": round(done / elapsed) if elapsed else None,
           "handoffs": len(hand), "handoff_p50_us": us(pct(hand, 50)),
           "handoff_p99_us": us(pct(hand, 99)),
           "overlaps": sum(x["overlaps"] for x in ok),
           "lost_updates": None if final is None else done - final,
           "errors": len(errors)}
    if workload == "handoff":
        out["hold_us"] = a.hold_us
        for k in ("think_us", "overlaps", "lost_updates"):
            out.pop(k)
    if errors:
        out["error"] = errors[0]
    emit(out)


def wait_turn(fd, me, deadline):
    """Until the acquisition count says it is process `me`'s turn (count
    % 2 == me): False past the deadline."""
    while get(fd, 8) % 2 != me:
        if now() > deadline:
            return False
        time.sleep(0.00002)
    return True


def handoff_child(i, a, rd_w, go_r, fd):
    r = client(a)
    lock = r.lock(a.prefix + "hand")
    r.ping()
    ready_then_wait(rd_w, go_r)
    deadline = now() + int(a.max_seconds * 1e9)
    hand, done = [], 0
    first = last = None
    # Acquisition j is process j % 2's: process 0 takes the lock first.
    while done < a.ops and now() < deadline:
        if not wait_turn(fd, i, deadline + int(1e9)):
            break
        waited = now()
        lock.acquire()
        got = now()
        rel = get(fd, 0)
        if rel > waited:
            hand.append(got - rel)
        put(fd, 8, get(fd, 8) + 1)  # the other one starts waiting now
        sleep_us(a.hold_us)
        t = now()
        put(fd, 0, t)
        lock.release()
        done += 1
        first = got if first is None else first
        last = t
    return {"done": done, "handoffs": hand, "overlaps": 0,
            "first": first, "last": last}


def handoff(a):
    a.procs = 2
    r = client(a)
    r.delete(a.prefix + "hand")
    fd = shared_file()
    res, start = run_procs(2, handoff_child, a, fd)
    summarize_turns(a, r, res, start, None, "handoff")


def many_child(i, a, rd_w, go_r):
    r = client(a)
    locks = [r.lock(f"{a.prefix}many:{k}") for k in range(a.locks)]
    r.ping()
    ready_then_wait(rd_w, go_r)
    rnd = random.Random(os.getpid())
    t0 = now()
    until = t0 + int(a.seconds * 1e9)
    pairs = 0
    while now() < until:
        lock = locks[rnd.randrange(a.locks)]
        lock.acquire()
        lock.release()
        pairs += 1
    return {"pairs": pairs, "elapsed": now() - t0}


def many(a):
    res, _ = run_procs(a.procs, many_child, a)
    errors = [x["error"] for x in res if "error" in x]
    ok = [x for x in res if "error" not in x]
    pairs = sum(x["pairs"] for x in ok)
    elapsed = max((x["elapsed"] for x in ok), default=0) / 1e9
    out = {"workload": "many", "lib": "redis-py", "procs": a.procs,
           "locks": a.locks, "seconds": round(elapsed, 2), "pairs": pairs,
           "ops_per_s": round(pairs / elapsed) if elapsed else None,
           "errors": len(errors)}
    if errors:
        out["error"] = errors[0]
    emit(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--prefix", default="peer:redispy:")
    ap.add_argument("workload",
                    choices=["uncontended", "contended", "handoff", "many"])
    ap.add_argument("--ops", type=int, default=2000)
    ap.add_argument("--procs", type=int, default=4)
    ap.add_argument("--think-us", type=int, default=0)
    ap.add_argument("--hold-us", type=int, default=300)
    ap.add_argument("--max-seconds", type=float, default=10.0)
    ap.add_argument("--locks", type=int, default=1000)
    ap.add_argument("--seconds", type=float, default=3.0)
    a = ap.parse_args()
    {"uncontended": uncontended, "contended": contended,
     "handoff": handoff, "many": many}[a.workload](a)


if __name__ == "__main__":
    main()
