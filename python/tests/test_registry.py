# SPDX-License-Identifier: BSD-3-Clause
"""The client registry from Python: every client (blocking and asyncio)
writes its record, and Client.whois() (rlock.aio: awhois()) reads who is
behind a holder's or a queued waiter's owner field (LockInfo.holders,
LockInfo.queue), on one server and on a cluster; keyword checks;
registry_period=0 writes none."""
from __future__ import annotations

import asyncio
import os
import socket
import threading
import time
from typing import List

import pytest

import rlock
import rlock.aio
from conftest import Server, cluster_url, resp, wait_for

UNKNOWN = "00000000-0000-4000-8000-000000000000:1"


def record_of(c: rlock.Client, owner: str) -> rlock.ClientRecord:
    rec: rlock.ClientRecord = wait_for(lambda: c.whois(owner),
                                       what=f"the record of {owner}")
    return rec


def test_holder_and_waiter(server: Server, name: str) -> None:
    t0 = time.time()
    with rlock.Client(server.url, program="pytest holder") as holder, \
            rlock.Client(server.url, program="pytest waiter") as waiter:
        lk = holder.fair_lock(name)
        lk.acquire()
        got = threading.Event()

        def wait() -> None:
            with waiter.fair_lock(name):
                got.set()
        th = threading.Thread(target=wait)
        th.start()
        info = wait_for(lambda: (i := lk.inspect()).queue and i,
                        what="a queued waiter")
        h = record_of(holder, info.holders[0].owner)
        w = record_of(holder, info.queue[0].owner)
        assert h.client_id == info.holders[0].owner.split(":")[0]
        assert (h.pid, h.program, w.pid, w.program) == (
            os.getpid(), "pytest holder", os.getpid(), "pytest waiter")
        assert h.host == socket.gethostname()
        assert h.version == rlock.library_version
        assert t0 - 1 <= h.started <= time.time() + 1
        lk.release()
        assert got.wait(10)
        th.join()


def test_unknown_off_and_arguments(server: Server) -> None:
    with rlock.Client(server.url, registry_period=0) as off, \
            rlock.Client(server.url, registry_period=0.5) as on:
        off.ping()
        record_of(on, _owner(on))
        # written after anything `off` could have written: it wrote none
        assert resp(server.port, "EXISTS",
                    f"rlock:client:{_owner(off).split(':')[0]}") == 0
        assert on.whois(_owner(off)) is None
        assert on.whois(UNKNOWN) is None
        ttl = resp(server.port, "PTTL",
                   f"rlock:client:{_owner(on).split(':')[0]}")
        assert 0 < ttl <= 1500
        with pytest.raises(rlock.InvalidArgument):
            on.whois("not-a-client:1")
        with pytest.raises(TypeError):
            on.whois(42)  # type: ignore[arg-type]
    for kw in ({"registry_period": -1}, {"registry_period": 0.05},
               {"program": ""}, {"program": "x" * 257}):
        with pytest.raises(rlock.InvalidArgument):
            rlock.Client(server.url, **kw)  # type: ignore[arg-type]


def _owner(c: rlock.Client) -> str:
    """An owner field of client `c` (its id and owner 1)."""
    lk = c.lock(f"registry:owner:{id(c)}")
    with lk:
        return lk.inspect().holders[0].owner


def test_cluster(cluster: List[Server], name: str) -> None:
    url = cluster_url(cluster)
    with rlock.Client(url, program="pytest cluster") as c:
        lk = c.lock(name)
        with lk:
            rec = record_of(c, lk.inspect().holders[0].owner)
            assert (rec.pid, rec.program) == (os.getpid(), "pytest cluster")


def test_asyncio_client_writes_its_record(server: Server, name: str) -> None:
    async def main() -> str:
        async with rlock.aio.Client(server.url, program="pytest aio") as c:
            lk = c.lock(name)
            await lk.acquire()
            owner = (await lk.ainspect()).holders[0].owner
            with rlock.Client(server.url) as b:
                rec = await asyncio.get_running_loop().run_in_executor(
                    None, record_of, b, owner)
            await lk.release()
            return rec.program
    assert asyncio.run(main()) == "pytest aio"


async def arecord_of(c: rlock.aio.Client, owner: str) -> rlock.ClientRecord:
    """awhois() until the record is there (a client writes it at once, on
    its loop)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + 10
    while (rec := await c.awhois(owner)) is None:
        assert loop.time() < end, f"no record of {owner}"
        await asyncio.sleep(0.01)
    return rec


@pytest.mark.asyncio
async def test_asyncio_whois(server: Server, name: str) -> None:
    """rlock.aio's awhois(): the ClientRecord the sync whois() returns for
    the same owner; None for an unknown, a Redisson or a registry-less
    client; the sync whois's refusals."""
    async with rlock.aio.Client(server.url, program="pytest awhois") as c, \
            rlock.aio.Client(server.url, registry_period=0) as off:
        lk = c.fair_lock(name)
        await lk.acquire()
        owner = (await lk.ainspect()).holders[0].owner
        rec = await arecord_of(c, owner)
        assert (rec.client_id, rec.pid, rec.program, rec.host) == (
            owner.split(":")[0], os.getpid(), "pytest awhois",
            socket.gethostname())
        assert rec.version == rlock.library_version
        with rlock.Client(server.url) as b:
            assert b.whois(owner) == rec
        assert await c.awhois(rec.client_id) == rec  # a bare client id
        assert await c.awhois(UNKNOWN) is None
        redisson = "8f14e45f-ceea-467f-a0e6-6b4f1e2b6c11:1"
        resp(server.port, "HSET", f"{name}:redisson", redisson, "1")
        resp(server.port, "PEXPIRE", f"{name}:redisson", "30000")
        held = await c.lock(f"{name}:redisson").ainspect()
        assert held.holders[0].owner == redisson
        assert await c.awhois(redisson) is None
        await off.lock(f"{name}:off").acquire()
        off_owner = (await off.lock(f"{name}:off").ainspect()).holders[0].owner
        assert await c.awhois(off_owner) is None
        await off.lock(f"{name}:off").release()
        with pytest.raises(rlock.InvalidArgument):
            await c.awhois("not-a-client:1")
        with pytest.raises(TypeError):
            await c.awhois(42)  # type: ignore[arg-type]
        resp(server.port, "SET", f"rlock:client:{UNKNOWN.split(':')[0]}",
             "garbage")
        with pytest.raises(rlock.WrongType):
            await c.awhois(UNKNOWN)
        resp(server.port, "DEL", f"rlock:client:{UNKNOWN.split(':')[0]}",
             f"{name}:redisson")
        await lk.release()
    with pytest.raises(rlock.Closed):
        await c.awhois(owner)


@pytest.mark.asyncio
async def test_asyncio_whois_cluster(cluster: List[Server],
                                     name: str) -> None:
    async with rlock.aio.Client(cluster_url(cluster),
                                program="pytest aio cluster") as c:
        lk = c.lock(name)
        await lk.acquire()
        owner = (await lk.ainspect()).holders[0].owner
        rec = await arecord_of(c, owner)
        assert (rec.pid, rec.program) == (os.getpid(), "pytest aio cluster")
        await lk.release()


def test_default_program_is_argv0_only(server: Server, name: str) -> None:
    """Without program=, the record names the process's argv[0], never its
    arguments (pytest runs with several: they could be secrets)."""
    with open("/proc/self/cmdline", "rb") as f:
        argv = f.read().split(b"\0")
    with rlock.Client(server.url) as c:
        lock = c.lock(name)
        with lock:
            owner = lock.inspect().holders[0].owner
            rec = record_of(c, owner)
    assert rec.program == argv[0].decode()
    assert len([a for a in argv if a]) > 1  # there were arguments to leave out
