# SPDX-License-Identifier: BSD-3-Clause
"""rlock.aio: the loop API on asyncio: every kind, 1,000 pending
acquisitions on one loop, cancellation."""
from __future__ import annotations

import asyncio
from typing import List

import pytest

import rlock
import rlock.aio
from conftest import Server, cluster_url

pytestmark = pytest.mark.asyncio


async def until(cond, what: str, timeout: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    """Await until cond() (a coroutine function) is truthy."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not await cond():
        if loop.time() > end:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


async def test_every_kind(server: Server, name: str) -> None:
    async with rlock.aio.Client(server.url) as c:
        lock = c.lock(name)
        assert await lock.acquire() and await lock.acquire(timeout=1)
        assert await lock.ahold_count() == 2 and lock.check()
        assert 25 < (await lock.attl() or 0) <= 30
        other = asyncio.create_task(lock.acquire(blocking=False))
        assert await other is False  # another task is another owner
        info = await lock.ainspect()
        assert info.holders[0].holds == 2
        await lock.release()
        await lock.release()
        assert not await lock.alocked()
        with pytest.raises(rlock.NotHeld):
            await lock.release()
        async with c.fair_lock(name + "f") as f:
            assert await f.aheld()
        fe = c.fenced_lock(name + "t")
        async with fe:
            first = fe.token
            assert first is not None and first >= 1
        async with fe:
            assert (fe.token or 0) > first
        rw = c.read_write_lock(name + "rw")
        async with rw.read_lock():
            assert (await rw.read_lock().ainspect()).mode == "read"
            with pytest.raises(rlock.Deadlock):
                await rw.write_lock().acquire()
        async with rw.write_lock():
            assert not await asyncio.create_task(
                rw.read_lock().acquire(blocking=False))
        spin = c.spin_lock(name + "s", backoff="constant", delay=0.002)
        async with spin:
            assert await spin.aheld()
        m = c.multi_lock(c.lock(name + "m1"), c.fair_lock(name + "m2"))
        async with m:
            assert await m.locks[1].aheld()
        assert not await m.locks[0].alocked()
        assert await lock.acquire(lease=3)
        assert await lock.aforce_release() is True


async def test_thousand_pending_on_one_loop(server: Server,
                                            name: str) -> None:
    async with rlock.aio.Client(server.url) as c:
        lock = c.lock(name)
        holder = rlock.Owner()
        await lock.acquire(owner=holder)
        inside = 0
        done = 0

        async def worker() -> None:
            nonlocal inside, done
            async with lock:
                inside += 1
                assert inside == 1
                await asyncio.sleep(0)
                inside -= 1
                done += 1
        tasks = [asyncio.create_task(worker()) for _ in range(1000)]

        async def all_waiting() -> bool:
            return c.pending == 1000 and c.stats().waits == 1000
        await until(all_waiting, "1000 acquisitions waiting")
        await lock.release(owner=holder)
        await asyncio.wait_for(asyncio.gather(*tasks), 60)
        assert done == 1000 and not await lock.alocked()


async def test_cancel_pending_acquisitions(server: Server,
                                           name: str) -> None:
    async with rlock.aio.Client(server.url) as c:
        plain, fair = c.lock(name), c.fair_lock(name + "f")
        holder = rlock.Owner()
        await plain.acquire(owner=holder)
        await fair.acquire(owner=holder)
        waits = [asyncio.create_task(plain.acquire()) for _ in range(3)]
        fairs = [asyncio.create_task(fair.acquire()) for _ in range(3)]

        async def queued() -> bool:
            return (await fair.ainspect()).queue_length == 3
        await until(queued, "3 fair waiters")
        for t in waits + fairs:
            t.cancel()
        res = await asyncio.gather(*waits, *fairs, return_exceptions=True)
        assert all(isinstance(r, asyncio.CancelledError) for r in res)
        assert c.pending == 0
        assert (await fair.ainspect()).queue_length == 0  # they left
        # timeouts end a wait with False, and the next waiter still wins
        assert await plain.acquire(timeout=0.05) is False
        nxt = asyncio.create_task(plain.acquire(timeout=10))
        await plain.release(owner=holder)
        assert await nxt
        await fair.release(owner=holder)


async def test_cancel_after_grant_gives_it_back(server: Server,
                                                name: str) -> None:
    async with rlock.aio.Client(server.url) as c:
        lock = c.lock(name)
        for _ in range(20):  # cancel at various points of the attempt
            t = asyncio.create_task(lock.acquire())
            await asyncio.sleep(0)
            t.cancel()
            try:
                await t
                await lock.release(owner=rlock.aio.task_owner(t))
            except asyncio.CancelledError:
                pass
            assert not await lock.alocked()


async def test_lost_lock_and_close(server: Server, name: str) -> None:
    lost: List[str] = []
    seen = asyncio.Event()

    async def on_lost(lock_name: str, owner: str) -> None:
        lost.append(lock_name)
        seen.set()
    c = rlock.aio.Client(server.url, watchdog_timeout=0.3, on_lost=on_lost)
    lock = c.lock(name)
    await lock.acquire()
    server.cmd("DEL", name)
    await asyncio.wait_for(seen.wait(), 10)
    assert lost == [name]
    with pytest.raises(rlock.LockLost):
        await lock.release()
    # closing completes pending operations with Closed
    holder = rlock.Owner()
    await lock.acquire(owner=holder)
    pending = asyncio.create_task(lock.acquire())
    while c.pending == 0:
        await asyncio.sleep(0.01)
    c.close()
    with pytest.raises(rlock.Closed):
        await pending
    with pytest.raises(rlock.Closed):
        await lock.alocked()


async def test_red_lock_and_cluster(servers3: List[Server],
                                    cluster: List[Server],
                                    name: str) -> None:
    clients = [rlock.aio.Client(s.url) for s in servers3]
    try:
        red = clients[0].red_lock(*[c.lock(name) for c in clients])
        assert await red.acquire(timeout=5, lease=10)
        assert red.last_result is not None
        assert [m.taken for m in red.last_result.members] == [True] * 3
        await red.release()
        with pytest.raises(rlock.NotHeld):
            await red.release()
    finally:
        for c in clients:
            c.close()
    async with rlock.aio.Client(cluster_url(cluster)) as cc:
        for i in range(6):
            async with cc.lock(f"pyac:{i}") as lk:
                assert await lk.aheld()


async def test_bad_arguments(server: Server) -> None:
    with pytest.raises(rlock.InvalidArgument, match="url"):
        rlock.aio.Client("nope://x")
    async with rlock.aio.Client(server.url) as c:
        with pytest.raises(rlock.InvalidArgument, match="lease"):
            await c.lock("x").acquire(lease=-1)
        with pytest.raises(rlock.InvalidArgument, match="name"):
            c.lock("")



async def test_queries_say_they_are_awaited(server: Server,
                                            name: str) -> None:
    """The queries are named with an ``a``; their old names still work
    awaited (DeprecationWarning) and refuse a boolean context instead of
    being always true."""
    async with rlock.aio.Client(server.url) as c:
        lock = c.lock(name)
        assert await lock.alocked() is False
        with pytest.warns(DeprecationWarning, match="alocked"):
            assert await lock.locked() is False
        with pytest.warns(DeprecationWarning):
            q = lock.held()
        with pytest.raises(TypeError, match="await lock.aheld()"):
            if q:  # the mistake of issue 29: always true unawaited
                pytest.fail("a coroutine taken for True")
        async with lock:
            with pytest.warns(DeprecationWarning):
                assert await lock.hold_count() == 1
            with pytest.warns(DeprecationWarning):
                assert (await lock.ttl() or 0) > 0
            with pytest.warns(DeprecationWarning):
                assert (await lock.inspect()).locked
        with pytest.warns(DeprecationWarning):
            assert await lock.force_release() is False


async def test_own_wait_and_lease_and_timeout_none(server: Server,
                                                   name: str) -> None:
    async with rlock.aio.Client(server.url) as c:
        # Waits long enough for a loaded machine's round trip: an attempt
        # cut by the wait's end raises TimeoutError, not False.
        lock = c.lock(name, wait=0.3, lease=8)
        assert await lock.acquire(timeout=None)  # for ever, as at run time
        assert 7 < (await lock.attl() or 0) <= 8
        other = asyncio.create_task(lock.acquire())  # the lock's 0.3 s
        assert await other is False

        async def enter() -> None:
            async with lock:
                pytest.fail("the body ran")
        with pytest.raises(rlock.Locked, match="0.3 s"):
            await asyncio.create_task(enter())
        assert await asyncio.create_task(lock.acquire(wait=0.2)) is False
        with pytest.raises(TypeError, match="not both"):
            await lock.acquire(timeout=1, wait=1)
        await lock.release()


async def test_aextend(server: Server, name: str) -> None:
    async with rlock.aio.Client(server.url) as c:
        lock = c.lock(name)
        with pytest.raises(rlock.NotHeld):
            await lock.aextend(5)
        await lock.acquire(lease=0.3)
        await lock.aextend(20)
        assert 15000 < int(server.cmd("PTTL", name)) <= 20000
        server.cmd("DEL", name)
        with pytest.raises(rlock.LockLost):
            await lock.aextend(20)
        assert int(server.cmd("EXISTS", name)) == 0
        own = c.lock(name, lease=20)
        await own.acquire(lease=0.3)
        await own.areacquire()
        assert 15000 < int(server.cmd("PTTL", name)) <= 20000
        await own.release()
        with pytest.raises(rlock.InvalidArgument, match="own lease"):
            await lock.areacquire()


async def test_semaphores_and_latch(server: Server, name: str) -> None:
    async with rlock.aio.Client(server.url) as c:
        sem = c.semaphore(name)
        assert await sem.atry_set_permits(1) is True
        assert await sem.acquire() is True
        waiter = asyncio.create_task(sem.acquire(timeout=20))
        await until(lambda: asyncio.sleep(0, c.stats().waits >= 1),
                    "the semaphore waiter")
        await sem.release()
        assert await waiter is True
        assert await sem.aavailable() == 0
        assert await sem.acquire(blocking=False) is False
        await sem.release()
        async with sem:
            assert await sem.aavailable() == 0
        await sem.aadd_permits(2)
        assert await sem.adrain() == 3
        await sem.aset_permits(1)
        # a cancelled wait takes nothing
        held = await sem.acquire()
        t = asyncio.create_task(sem.acquire())
        await asyncio.sleep(0.05)
        t.cancel()
        with pytest.raises(asyncio.CancelledError):
            await t
        await sem.release()
        assert await sem.aavailable() == 1 and held

        ps = c.permit_expirable_semaphore(name + "p")
        assert await ps.atry_set_permits(1)
        p = await ps.acquire(lease=30)
        assert isinstance(p, rlock.aio.Permit) and len(p.id) == 32
        assert ps.check(p) and await ps.aavailable() == 0
        assert await ps.acquire(blocking=False) is None
        left = await ps.alease_left(p)
        assert left is not None and 25 < left <= 30
        await p.aupdate_lease(60)
        await p.release()
        with pytest.raises(rlock.NotHeld):
            await ps.release("0" * 32)
        async with ps as permit:
            assert ps.check(permit) and await ps.apermits() == 1
        assert await ps.aavailable() == 1

        latch = c.count_down_latch(name + "l")
        assert await latch.wait(0) is True
        assert await latch.atry_set_count(2)
        w = asyncio.create_task(latch.wait(20))
        await latch.acount_down()
        assert await latch.acount() == 1 and not w.done()
        await latch.acount_down()
        assert await w is True
        assert await latch.wait(timeout=0.05) is True
        assert await latch.atry_set_count(1)
        assert await latch.wait(0.1) is False
        assert await latch.adelete() is True


async def test_lost_permit_told(server: Server, name: str) -> None:
    lost: List[str] = []
    async with rlock.aio.Client(server.url, watchdog_timeout=0.6,
                                on_lost=lambda n, o: lost.append(o)) as c:
        ps = c.permit_expirable_semaphore(name)
        await ps.atry_set_permits(1)
        p = await ps.acquire()  # renewed by the watchdog on the loop
        assert p is not None
        await until(lambda: asyncio.sleep(0, c.stats().renewals >= 4),
                    "four renewals")
        assert ps.check(p) and await ps.aavailable() == 0
        server.cmd("DEL", name, f"{{{name}}}:timeout")
        await until(lambda: asyncio.sleep(0, bool(lost)), "the loss")
        assert lost == [p.id]
        with pytest.raises(rlock.LockLost):
            ps.check(p)
        with pytest.raises(rlock.LockLost):
            await p.release()
