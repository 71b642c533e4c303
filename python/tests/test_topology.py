# SPDX-License-Identifier: BSD-3-Clause
"""Cluster and Sentinel URLs, and RedLock over independent servers."""
from __future__ import annotations

import threading
from typing import List

import rlock
from conftest import Server, cluster_url


def test_cluster(cluster: List[Server]) -> None:
    url = cluster_url(cluster)
    a, b = rlock.Client(url), rlock.Client(url)
    try:
        assert a.topology == "cluster"
        names = [f"pyc:{i}" for i in range(12)]  # spread over the slots
        nodes = set()
        for n in names:
            la, lb = a.lock(n), b.lock(n)
            assert la.acquire(timeout=5)
            assert lb.acquire(blocking=False) is False
            nodes.add(la.inspect().node)
            la.release()
            assert lb.acquire(blocking=False)
            lb.release()
        assert len(nodes) == 3  # every master served some
        fair = a.fair_lock("pyc:{tag}fair")
        rw = b.read_write_lock("pyc:{tag}rw")
        with a.multi_lock(fair, a.fenced_lock("pyc:{tag}f")):
            with rw.read_lock():
                listed = {i.name for i in a.list_locks("pyc:*")}
                assert {"pyc:{tag}fair", "pyc:{tag}rw",
                        "pyc:{tag}f"} <= listed
        got = threading.Event()
        la = a.lock("pyc:wake")
        la.acquire()

        def waiter() -> None:
            assert b.lock("pyc:wake").acquire(timeout=10)
            got.set()
            b.lock("pyc:wake").release()
        t = threading.Thread(target=waiter)
        t.start()
        la.release()
        t.join()
        assert got.is_set()
    finally:
        a.close()
        b.close()


def test_sentinel(sentinel: dict) -> None:
    c = rlock.Client(sentinel["url"])
    try:
        assert c.topology == "sentinel"
        lock = c.lock("pys:lock")
        with lock:
            info = lock.inspect()
            assert info.node == f"127.0.0.1:{sentinel['master'].port}"
            assert sentinel["master"].cmd("EXISTS", "pys:lock") == 1
        with c.fair_lock("pys:fair"), c.fenced_lock("pys:fenced") as f:
            assert f.token == 1
    finally:
        c.close()


def test_red_lock(servers3: List[Server], name: str) -> None:
    clients = [rlock.Client(s.url) for s in servers3]
    rivals = [rlock.Client(s.url) for s in servers3]
    try:
        red = clients[0].red_lock(*[c.lock(name) for c in clients])
        assert red.acquire(timeout=5, lease=10)
        assert red.last_result is not None
        assert 9 < red.last_result.validity <= 10
        assert [m.taken for m in red.last_result.members] == [True] * 3
        other = rlock.RedLock([c.lock(name) for c in rivals])
        assert other.acquire(blocking=False) is False
        assert other.last_result is not None
        assert not any(m.taken for m in other.last_result.members)
        red.release()
        # one member held elsewhere: the quorum (2 of 3) still wins
        hold, rival = rivals[2].lock(name), rlock.Owner()
        assert hold.acquire(owner=rival)
        with red:
            assert red.last_result is not None
            assert [m.taken for m in red.last_result.members] == [
                True, True, False]
            assert red.last_result.members[2].code == rlock.Status.ELOCKED
        hold.release(owner=rival)
    finally:
        for c in clients + rivals:
            c.close()
