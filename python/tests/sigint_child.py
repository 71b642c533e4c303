# SPDX-License-Identifier: BSD-3-Clause
"""A child process for test_interrupt.py: its main thread waits in
``with lock:`` for a lock the test holds, until the test sends SIGINT.

    sigint_child.py KIND NAME URL [URL...] [--KEYWORD=SECONDS ...]

KIND: reentrant, fair, fenced, spin, read, write, multi (two reentrant
locks NAME:a and NAME:b), red (a RedLock over the URLs, one client each),
semaphore and psemaphore (``with sem:``), latch (``latch.wait()``),
election (``campaign("child")``).
--KEYWORD=SECONDS: a keyword of rlock.Client (command_timeout=30, ...).
Prints, one line each, flushed:
  "waiting"                    just before ``with``
  "in-wait"                    once the client counts a wait (stats.waits)
                               or a failed connect (connect_failures)
  "interrupted <holds>"        KeyboardInterrupt came; <holds>: the hold
                               count the library has for this thread
                               (check(): 1 while it holds, else 0)
  "entered" / "error <repr>"   the wait ended otherwise
then waits for its stdin to close (so the test can look at the server
while this process and its client still live) and exits 0.
"""
import sys
import threading
from typing import Any, Dict, List

import rlock


def make(kind: str, name: str, clients: List[rlock.Client]) -> Any:
    c = clients[0]
    if kind == "reentrant":
        return c.lock(name)
    if kind == "fair":
        return c.fair_lock(name)
    if kind == "fenced":
        return c.fenced_lock(name)
    if kind == "spin":
        return c.spin_lock(name)
    if kind == "read":
        return c.read_write_lock(name).read_lock()
    if kind == "write":
        return c.read_write_lock(name).write_lock()
    if kind == "multi":
        return c.multi_lock(c.lock(name + ":a"), c.lock(name + ":b"))
    if kind == "red":
        return rlock.RedLock(*(x.lock(name) for x in clients))
    if kind == "semaphore":
        return c.semaphore(name)
    if kind == "psemaphore":
        return c.permit_expirable_semaphore(name)
    if kind == "latch":
        return c.count_down_latch(name)
    if kind == "election":
        return c.election(name)
    raise SystemExit(f"unknown kind {kind}")


def watch(clients: List[rlock.Client], done: threading.Event) -> None:
    """Say "in-wait" once a client counts a wait or a failed connect."""
    while not done.wait(0.005):
        for c in clients:
            s = c.stats()
            if s.waits or s.connect_failures:
                print("in-wait", flush=True)
                return


def main() -> None:
    kind, name = sys.argv[1], sys.argv[2]
    urls: List[str] = []
    opts: Dict[str, Any] = {}
    for a in sys.argv[3:]:
        if a.startswith("--"):
            k, v = a[2:].split("=", 1)
            opts[k] = float(v)
        else:
            urls.append(a)
    clients = [rlock.Client(u, **opts) for u in urls]
    lock = make(kind, name, clients)
    done = threading.Event()
    threading.Thread(target=watch, args=(clients, done), daemon=True).start()
    print("waiting", flush=True)
    try:
        if kind == "latch":
            lock.wait()
        elif kind == "election":
            lock.campaign("child")
        else:
            with lock:
                print("entered", flush=True)
        if kind in ("latch", "election"):
            print("entered", flush=True)
    except KeyboardInterrupt:
        members = lock.locks if hasattr(lock, "locks") else [lock]
        # A semaphore's holds are on the server (the test looks there).
        holds = sum(1 for m in members if hasattr(m, "locked") and m.check())
        if kind == "election":
            holds = int(lock.leading())
        print(f"interrupted {holds}", flush=True)
    except BaseException as e:  # reported to the test
        print(f"error {e!r}", flush=True)
    done.set()
    sys.stdin.read()


if __name__ == "__main__":
    main()
