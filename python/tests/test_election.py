# SPDX-License-Identifier: BSD-3-Clause
"""Leader election (client.election): campaign, observe, resign, a standby
taking over once the leader's lease runs out, a deposed leader told; the
blocking client and rlock.aio."""
from __future__ import annotations

import asyncio
import threading
import time

import pytest

import rlock
import rlock.aio
from conftest import Server


def test_campaign_observe_resign(client: rlock.Client, server: Server,
                                 name: str) -> None:
    e = client.election(name)
    assert e.observe() is None
    term = e.campaign("host-a:1")
    assert term is not None and term >= 1
    seen = client.election(name).observe()
    assert seen is not None
    assert (seen.value, seen.term) == ("host-a:1", term)
    assert seen.owner == client.owner_field(None) and 0 < seen.ttl <= 30
    e.check()
    assert e.leading()
    with pytest.raises(rlock.AlreadyHeld):
        e.campaign("again")
    other = rlock.Owner()
    assert e.campaign("b", wait=0, owner=other) is None
    with pytest.raises(rlock.NotHeld):
        e.resign(owner=other)
    e.resign()
    assert e.observe() is None and not e.leading()
    assert server.cmd("EXISTS", f"rlock_leader:{{{name}}}") == 0
    assert e.campaign("b", owner=other) == term + 1
    e.resign(owner=other)


def test_bad_values(client: rlock.Client, server: Server, name: str) -> None:
    e = client.election(name)
    with pytest.raises(rlock.InvalidArgument):
        e.campaign("")
    with pytest.raises(rlock.InvalidArgument):
        e.campaign("x" * (64 * 1024 + 1))
    with pytest.raises(rlock.InvalidArgument):
        e.campaign("a\0b")
    with pytest.raises(TypeError):
        e.campaign(b"bytes")  # type: ignore[arg-type]
    assert server.cmd("EXISTS", name, f"redisson_lock_token:{{{name}}}") == 0


def test_standby_takes_over_and_leader_told(server: Server,
                                            name: str) -> None:
    a = rlock.Client(server.url, watchdog_timeout=0.6)
    b = rlock.Client(server.url)
    try:
        ea, eb = a.election(name), b.election(name)
        t1 = ea.campaign("A", lease=0.8)  # nobody renews it: a stall
        assert t1 is not None
        start = time.monotonic()
        t2 = eb.campaign("B", wait=5)
        took = time.monotonic() - start
        assert t2 is not None and t2 > t1 and took < 0.8 + 1.0
        with pytest.raises(rlock.LockLost):
            ea.check()
        seen = ea.observe()
        assert seen is not None and (seen.value, seen.term) == ("B", t2)
        with pytest.raises(rlock.LockLost):
            ea.resign()
        eb.resign()
        # A watchdog leader whose lock is deleted: told (check, callback).
        lost = threading.Event()
        c = rlock.Client(server.url, watchdog_timeout=0.6,
                         on_lost=lambda n, o: lost.set())
        try:
            ec = c.election(name)
            assert ec.campaign("C") is not None
            server.cmd("DEL", name)
            assert lost.wait(5)
            assert not ec.leading()
        finally:
            c.close()
    finally:
        a.close()
        b.close()


@pytest.mark.asyncio
async def test_aio_election(server: Server, name: str) -> None:
    async with rlock.aio.Client(server.url) as c:
        e = c.election(name)
        assert await e.observe() is None
        term = await e.campaign("aio")
        assert term is not None
        seen = await e.observe()
        assert seen is not None and (seen.value, seen.term) == ("aio", term)
        e.check()
        assert e.leading() and not e.leading(owner=rlock.Owner())
        with pytest.raises(rlock.AlreadyHeld):
            await e.campaign("again")
        sb = rlock.Owner()
        standby = asyncio.create_task(e.campaign("standby", owner=sb))
        channel = f"redisson_lock__channel:{{{name}}}"
        end = asyncio.get_running_loop().time() + 10
        while server.cmd("PUBSUB", "NUMSUB", channel)[1] < 1:
            assert asyncio.get_running_loop().time() < end, "no waiter"
            await asyncio.sleep(0.01)
        assert not standby.done()
        await e.resign()
        t2 = await asyncio.wait_for(standby, 5)
        assert t2 is not None and t2 > term
        seen = await e.observe()
        assert seen is not None and seen.value == "standby"
        with pytest.raises(rlock.NotHeld):
            await e.resign()
        # A campaign cancelled while waiting: nothing held by it.
        waiter = asyncio.create_task(e.campaign("w", owner=rlock.Owner()))
        await asyncio.sleep(0)  # started: cancelled wherever it is
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter
        seen = await e.observe()
        assert seen is not None and seen.value == "standby"
        await e.resign(owner=sb)


def _values(seen: "list[rlock.Leader | None]") -> "list[str | None]":
    return [None if x is None else x.value for x in seen]


def test_watch_tells_each_leader(client: rlock.Client, server: Server,
                                 name: str) -> None:
    """Election.watch: the leader now, then a handover a resignation
    announces leader after leader (the interval is a minute: messages
    only), then nobody; close() stops it."""
    e = client.election(name)
    seen: "list[rlock.Leader | None]" = []
    cv = threading.Condition()

    def told(leader: "rlock.Leader | None") -> None:
        with cv:
            seen.append(leader)
            cv.notify_all()

    def wait_for(pred: "object") -> None:
        with cv:
            assert cv.wait_for(pred, 10), f"told {_values(seen)}"  # type: ignore[arg-type]

    channel = f"redisson_lock__channel:{{{name}}}"
    with e.watch(told, interval=60) as w:
        wait_for(lambda: len(seen) >= 1)
        assert seen[0] is None
        end = time.monotonic() + 10
        while server.cmd("PUBSUB", "NUMSUB", channel)[1] < 1:
            assert time.monotonic() < end, "the watch did not subscribe"
            time.sleep(0.01)
        a, b = rlock.Owner(), rlock.Owner()
        other = rlock.Client(server.url)  # its own subscription: counted
        try:
            eo = other.election(name)
            ta = eo.campaign("A", owner=a)
            standby = threading.Thread(
                target=lambda: eo.campaign("B", owner=b, wait=10))
            standby.start()
            while server.cmd("PUBSUB", "NUMSUB", channel)[1] < 2:
                assert time.monotonic() < end, "the standby did not subscribe"
                time.sleep(0.01)
            eo.resign(owner=a)
            standby.join(10)
            wait_for(lambda: "B" in _values(seen))
            eo.resign(owner=b)
        finally:
            other.close()
        wait_for(lambda: _values(seen)[-1] is None and "B" in _values(seen))
        vals = _values(seen)
        assert vals[-2:] == ["B", None] and vals[0] is None
        assert all(v in (None, "A", "B") for v in vals)
        tb = seen[-2]
        assert tb is not None and ta is not None and tb.term > ta
    assert w.closed
    with pytest.raises(rlock.InvalidArgument):
        e.watch(told, interval=0.001)


@pytest.mark.asyncio
async def test_aio_watch(server: Server, name: str) -> None:
    async with rlock.aio.Client(server.url) as c:
        e = c.election(name)
        q: "asyncio.Queue[rlock.Leader | None]" = asyncio.Queue()
        w = e.watch(q.put_nowait, interval=60)
        assert await asyncio.wait_for(q.get(), 10) is None
        channel = f"redisson_lock__channel:{{{name}}}"
        end = asyncio.get_running_loop().time() + 10
        while server.cmd("PUBSUB", "NUMSUB", channel)[1] < 1:
            assert asyncio.get_running_loop().time() < end
            await asyncio.sleep(0.01)
        a, b = rlock.Owner(), rlock.Owner()
        async with rlock.aio.Client(server.url) as other:
            eo = other.election(name)  # its own subscription: counted
            await eo.campaign("A", owner=a)
            standby = asyncio.create_task(eo.campaign("B", owner=b))
            while server.cmd("PUBSUB", "NUMSUB", channel)[1] < 2:
                assert asyncio.get_running_loop().time() < end
                await asyncio.sleep(0.01)
            await eo.resign(owner=a)
            tb = await asyncio.wait_for(standby, 10)
            got: "list[rlock.Leader | None]" = []
            while not got or got[-1] is None or got[-1].value != "B":
                got.append(await asyncio.wait_for(q.get(), 10))
            assert got[-1] is not None and got[-1].term == tb
            await eo.resign(owner=b)
            assert await asyncio.wait_for(q.get(), 10) is None
        w.close()
        assert w.closed
