# SPDX-License-Identifier: BSD-3-Clause
"""Threads and processes contending for one lock lose no update; the GIL
is released while a thread waits."""
from __future__ import annotations

import multiprocessing
import threading
import time
from typing import List

import pytest

import rlock
from conftest import Conn, Server, wait_for

ROUNDS = 25


def bump(conn: Conn, key: str) -> None:
    """A non-atomic increment: two holders at once would lose one."""
    v = int(conn.cmd("GET", key) or 0)
    conn.cmd("SET", key, v + 1)


def test_eight_threads_no_lost_update(client: rlock.Client, server: Server,
                                      name: str) -> None:
    lock = client.lock(name)
    counter = name + ":counter"
    errors: List[BaseException] = []
    inside = [0]

    def worker() -> None:
        conn = Conn(server.port)
        try:
            for _ in range(ROUNDS):
                with lock:
                    inside[0] += 1
                    assert inside[0] == 1
                    bump(conn, counter)
                    inside[0] -= 1
        except BaseException as e:  # reported below
            errors.append(e)
        finally:
            conn.close()
    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert int(server.cmd("GET", counter)) == 8 * ROUNDS
    assert client.stats().waits > 0  # they did contend


def _process(url: str, port: int, name: str, inherited: rlock.Client,
             q: "multiprocessing.Queue[str]") -> None:
    try:
        inherited.ping()
        q.put("the parent's client worked in the child")
        return
    except rlock.Closed:
        pass
    c = rlock.Client(url)
    conn = Conn(port)
    lock = c.fair_lock(name)
    for _ in range(ROUNDS):
        with lock:
            bump(conn, name + ":counter")
    c.close()
    q.put("ok")


def test_four_processes_no_lost_update(client: rlock.Client, server: Server,
                                       name: str) -> None:
    ctx = multiprocessing.get_context("fork")
    q: "multiprocessing.Queue[str]" = ctx.Queue()
    procs = [ctx.Process(target=_process,
                         args=(server.url, server.port, name, client, q))
             for _ in range(4)]
    for p in procs:
        p.start()
    results = [q.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(30)
        assert p.exitcode == 0
    assert results == ["ok"] * 4
    assert int(server.cmd("GET", name + ":counter")) == 4 * ROUNDS
    assert client.ping() > 0  # the parent's client still works


def test_gil_released_while_waiting(client: rlock.Client,
                                    name: str) -> None:
    lock = client.lock(name)
    lock.acquire()
    started = threading.Event()
    result: List[bool] = []

    def waiter() -> None:
        started.set()
        result.append(lock.acquire(timeout=0.5))
    t = threading.Thread(target=waiter)
    t.start()
    started.wait()
    # While the other thread waits inside the library, this one runs.
    spins = 0
    t0 = time.monotonic()
    while t.is_alive():
        spins += 1
    elapsed = time.monotonic() - t0
    t.join()
    assert result == [False] and elapsed >= 0.3
    assert spins > 10000, f"only {spins} loops ran in {elapsed:.2f} s"
    lock.release()
