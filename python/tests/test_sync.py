# SPDX-License-Identifier: BSD-3-Clause
"""Semaphores and the count-down latch through the blocking client:
threading.Semaphore / threading.Event shapes, permits by id with leases
and the watchdog, bad input, and the CLI on the other side."""
from __future__ import annotations

import subprocess
import threading
import time
from typing import List

import pytest

import rlock
from conftest import SCALE, Server, wait_for


def sc_channel(name: str) -> str:
    return f"redisson_sc:{{{name}}}"


def numsub(server: Server, channel: str) -> int:
    return int(server.cmd("PUBSUB", "NUMSUB", channel)[1])


def test_semaphore_threading_shape(client: rlock.Client, server: Server,
                                   name: str) -> None:
    sem = client.semaphore(name)
    assert sem.available() == 0
    assert sem.try_set_permits(2) is True
    assert sem.try_set_permits(5) is False  # set already: left alone
    assert server.cmd("GET", name) == "2"
    assert sem.acquire() and sem.acquire(timeout=1)
    assert sem.available() == 0
    assert sem.acquire(blocking=False) is False
    t0 = time.monotonic()
    assert sem.acquire(timeout=0.2) is False
    assert time.monotonic() - t0 >= 0.19
    sem.release(2)
    assert sem.available() == 2
    with sem:
        assert sem.available() == 1
    assert sem.available() == 2
    assert sem.acquire(permits=2) and sem.available() == 0
    sem.release(2)
    sem.add_permits(3)
    assert sem.available() == 5
    sem.add_permits(-1)
    assert sem.available() == 4
    sem.set_permits(7)
    assert sem.drain() == 7 and sem.available() == 0
    assert repr(sem) == f"<rlock.Semaphore {name!r}>"


def test_semaphore_waiter_wakes_on_release(client: rlock.Client,
                                           server: Server, name: str) -> None:
    sem = client.semaphore(name)
    sem.try_set_permits(0)
    got: List[bool] = []
    t = threading.Thread(target=lambda: got.append(sem.acquire(timeout=20)))
    t.start()
    wait_for(lambda: numsub(server, sc_channel(name)) >= 1, 10,
             "the waiter to subscribe")
    t0 = time.monotonic()
    other = rlock.Client(server.url)
    try:
        other.semaphore(name).release()
        t.join(10 * SCALE)
    finally:
        other.close()
    assert got == [True]
    assert time.monotonic() - t0 < 2 * SCALE
    assert sem.available() == 0


def test_semaphore_bad_input(client: rlock.Client, server: Server,
                             name: str) -> None:
    sem = client.semaphore(name)
    for bad in (0, -1, 2**31, 2**70):
        with pytest.raises(rlock.InvalidArgument):
            sem.acquire(permits=bad)
    with pytest.raises(TypeError):
        sem.acquire(permits=1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        sem.release(True)
    with pytest.raises(rlock.InvalidArgument):
        sem.try_set_permits(-1)
    with pytest.raises(rlock.InvalidArgument):
        sem.release(0)
    with pytest.raises(rlock.InvalidArgument):
        sem.acquire(blocking=False, timeout=1)
    assert server.cmd("EXISTS", name) == 0  # nothing written
    server.cmd("HSET", name, "f", "1")  # someone's hash
    with pytest.raises(rlock.WrongType):
        sem.acquire(blocking=False)
    with pytest.raises(rlock.WrongType):
        sem.release()
    assert server.cmd("HGETALL", name) == ["f", "1"]
    lock = client.lock(name + "l")
    assert lock.acquire(blocking=False)
    try:
        with pytest.raises(rlock.WrongType):  # a lock name as a semaphore
            client.semaphore(name + "l").available()
    finally:
        lock.release()


def test_permit_expirable_semaphore(client: rlock.Client, server: Server,
                                    name: str) -> None:
    sem = client.permit_expirable_semaphore(name)
    assert sem.try_set_permits(2)
    p1 = sem.acquire()
    assert isinstance(p1, rlock.Permit) and len(p1.id) == 32
    int(p1.id, 16)
    p2 = sem.acquire(lease=0.3)
    assert p2 is not None and p2.id != p1.id
    assert sem.available() == 0 and sem.permits() == 2
    assert sem.acquire(blocking=False) is None
    assert p1.check() and sem.check(p2.id)
    left = sem.lease_left(p1)
    assert left is not None and 25 < left <= 30  # the watchdog's
    # p2's fixed lease runs out: its permit comes back by itself
    wait_for(lambda: sem.available() == 1, 10, "p2's lease to run out")
    with pytest.raises(rlock.LockLost):
        sem.check(p2)
    with pytest.raises(rlock.LockLost):
        p2.release()
    p1.update_lease(60)
    left = p1.lease_left()
    assert left is not None and 55 < left <= 60
    p1.release()
    assert sem.available() == 2
    assert not sem.check(p1)
    with pytest.raises(rlock.NotHeld):
        sem.release("0" * 32)
    assert sem.try_release("0" * 32) is False
    with pytest.raises(rlock.InvalidArgument):
        sem.release("not a permit id")
    with sem as permit:
        assert sem.available() == 1 and permit.check()
    assert sem.available() == 2
    with sem.acquire(lease=30) as p:  # type: ignore[union-attr]
        assert sem.lease_left(p) is not None
    assert sem.available() == 2
    sem.set_permits(1)
    assert sem.permits() == 1
    sem.add_permits(2)
    assert sem.available() == 3


def test_permit_semaphore_watchdog_renews(server: Server, name: str) -> None:
    lost: List[str] = []
    c = rlock.Client(server.url, watchdog_timeout=0.6,
                     on_lost=lambda n, o: lost.append(n))
    try:
        sem = c.permit_expirable_semaphore(name)
        sem.try_set_permits(1)
        p = sem.acquire()
        assert p is not None
        # renewals every 0.2 s: after 4 the permit has outlived 1.3 leases
        wait_for(lambda: c.stats().renewals >= 4, 10, "four renewals")
        assert p.check() and sem.available() == 0
        server.cmd("DEL", name, f"{{{name}}}:timeout")  # lost
        wait_for(lambda: bool(lost), 10, "the loss to be told")
        with pytest.raises(rlock.LockLost):
            p.check()
    finally:
        c.close()


def test_latch_event_shape(client: rlock.Client, server: Server,
                           name: str) -> None:
    latch = client.count_down_latch(name)
    assert latch.count() == 0 and latch.is_set()
    assert latch.wait(0) is True  # never set: open
    assert latch.try_set_count(2) is True
    assert latch.try_set_count(5) is False
    assert latch.count() == 2 and not latch.is_set()
    t0 = time.monotonic()
    assert latch.wait(0.2) is False
    assert time.monotonic() - t0 >= 0.19
    done: List[bool] = []
    t = threading.Thread(target=lambda: done.append(latch.wait(20)))
    t.start()
    channel = f"redisson_countdownlatch__channel__{{{name}}}"
    wait_for(lambda: numsub(server, channel) >= 1, 10,
             "the waiter to subscribe")
    latch.count_down()
    assert latch.count() == 1 and not done
    latch.count_down()
    t.join(10 * SCALE)
    assert done == [True]
    assert server.cmd("EXISTS", name) == 0
    assert latch.try_set_count(1) is True  # set again once at zero
    assert latch.delete() is True and latch.count() == 0
    for bad in (0, -5):
        with pytest.raises(rlock.InvalidArgument):
            latch.try_set_count(bad)
    with pytest.raises(rlock.InvalidArgument):
        latch.wait(-2)


def test_cancel_ends_semaphore_and_latch_waits(client: rlock.Client,
                                               name: str) -> None:
    sem = client.semaphore(name)
    latch = client.count_down_latch(name + "l")
    latch.try_set_count(1)
    tok = rlock.Cancel()
    threading.Timer(0.2, tok.fire).start()
    with pytest.raises(rlock.Canceled):
        sem.acquire(cancel=tok)
    tok.reset()
    threading.Timer(0.2, tok.fire).start()
    with pytest.raises(rlock.Canceled):
        latch.wait(cancel=tok)
    assert sem.available() == 0


def test_close_ends_waits(server: Server, name: str) -> None:
    c = rlock.Client(server.url)
    sem = c.permit_expirable_semaphore(name)
    errors: List[BaseException] = []

    def waiter() -> None:
        try:
            sem.acquire()
        except BaseException as e:
            errors.append(e)
    t = threading.Thread(target=waiter)
    t.start()
    wait_for(lambda: c.stats().waits >= 1, 10, "the wait")
    c.close()
    t.join(10 * SCALE)
    assert len(errors) == 1 and isinstance(errors[0], rlock.Closed)
    assert f"a permit of semaphore '{name}'" in str(errors[0])


def test_cli_interop(client: rlock.Client, server: Server, name: str,
                     rlock_cli: str) -> None:
    """A permit held by `rlock exec --permits` is seen here; a latch set
    here is counted down by `rlock latch down`."""
    sem = client.permit_expirable_semaphore(name)
    proc = subprocess.Popen(
        [rlock_cli, "-u", server.url, "exec", "--permits", "2", name, "--",
         "sh", "-c", 'echo "$RLOCK_PERMIT_ID"; cat >/dev/null'],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        pid = proc.stdout.readline().strip()
        assert len(pid) == 32
        assert sem.permits() == 2 and sem.available() == 1
        left = sem.lease_left(pid)
        assert left is not None and left > 20
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        assert proc.wait(10 * SCALE) == 0
    assert sem.available() == 2
    latch = client.count_down_latch(name + "l")
    latch.try_set_count(1)
    subprocess.run([rlock_cli, "-u", server.url, "latch", "down",
                    name + "l"], check=True)
    assert latch.wait(5)


def test_on_a_cluster(cluster: List[Server], name: str) -> None:
    """Each kind on a Cluster of three masters: a waiter woken across
    clients (the channel in the name's slot)."""
    from conftest import cluster_url
    a = rlock.Client(cluster_url(cluster))
    b = rlock.Client(cluster_url(cluster))
    try:
        sem = a.permit_expirable_semaphore(name)
        sem.try_set_permits(1)
        p = sem.acquire()
        assert p is not None
        got: List[object] = []
        t = threading.Thread(target=lambda: got.append(
            b.permit_expirable_semaphore(name).acquire(timeout=20)))
        t.start()
        wait_for(lambda: b.stats().waits >= 1, 10, "the waiter")
        p.release()
        t.join(10 * SCALE)
        assert len(got) == 1 and isinstance(got[0], rlock.Permit)
        got[0].release()  # type: ignore[attr-defined]
        latch = a.count_down_latch(name + "l")
        latch.try_set_count(1)
        done: List[bool] = []
        t = threading.Thread(target=lambda: done.append(
            b.count_down_latch(name + "l").wait(20)))
        t.start()
        wait_for(lambda: b.stats().waits >= 2, 10, "the latch waiter")
        latch.count_down()
        t.join(10 * SCALE)
        assert done == [True]
        s = a.semaphore(name + "s")
        s.set_permits(2)
        assert b.semaphore(name + "s").acquire(permits=2, timeout=5)
        assert s.available() == 0
    finally:
        a.close()
        b.close()


def test_list_syncs_and_counts(client: rlock.Client, server: Server,
                               name: str) -> None:
    sem = client.semaphore(name + ":sem")
    sem.try_set_permits(0)
    psem = client.permit_expirable_semaphore(name + ":psem")
    psem.try_set_permits(3)
    client.count_down_latch(name + ":latch").try_set_count(2)
    got: List[bool] = []
    waiter = threading.Thread(
        target=lambda: got.append(sem.acquire(timeout=20)))
    waiter.start()
    permit = None
    try:
        wait_for(lambda: numsub(server, sc_channel(name + ":sem")) >= 1, 10,
                 "the waiter to subscribe")
        permit = psem.acquire(lease=30)
        syncs = {s.name: s for s in client.list_syncs(name + ":*")}
        # the latch nobody awaits is a plain count: list_syncs leaves it
        assert set(syncs) == {name + ":sem", name + ":psem"}
        assert syncs[name + ":sem"].kind == "semaphore"
        assert syncs[name + ":sem"].value == 0
        assert syncs[name + ":sem"].subscribers == 1
        p = syncs[name + ":psem"]
        assert (p.kind, p.value, p.leased) == \
            ("permit-expirable-semaphore", 2, 1)
        assert p.node.endswith(f":{server.port}")
        counts = {c.name: c for c in client.list_counts(name + ":*")}
        assert set(counts) == {name + ":sem", name + ":psem", name + ":latch"}
        assert counts[name + ":latch"].kind == "count"
        assert counts[name + ":latch"].value == 2
        assert counts[name + ":latch"].subscribers is None
        assert counts[name + ":psem"].leased == 1
        assert client.list_syncs("nothing-here:*") == []
        for bad in ("", "x" * 70000):
            with pytest.raises(rlock.InvalidArgument):
                client.list_syncs(bad)
            with pytest.raises(rlock.InvalidArgument):
                client.list_counts(bad)
    finally:
        if permit is not None:
            permit.release()
        sem.release()
        waiter.join(10 * SCALE)
    assert got == [True]
