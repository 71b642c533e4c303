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
