# SPDX-License-Identifier: BSD-3-Clause
"""Client.metrics(), metrics_text() and collector(): under contention the
metrics equal what the test counted, read by rlock's own reader and by
prometheus_client's parsers (the Prometheus text format and OpenMetrics),
on the blocking and the asyncio clients."""
from __future__ import annotations

import asyncio
import threading
from typing import Any, Dict, List

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.openmetrics.parser import \
    text_string_to_metric_families as openmetrics_families
from prometheus_client.parser import text_string_to_metric_families

import rlock
import rlock.aio
from conftest import Server, wait_for

WAITERS = 4


def samples(text: str) -> Dict[Any, float]:
    """Every sample prometheus_client's parser reads: (name, labels) ->
    value."""
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def kind(k: str = "reentrant", **more: str) -> Any:
    return tuple(sorted({"kind": k, **more}.items()))


def test_contention_counted(server: Server, name: str) -> None:
    client = rlock.Client(server.url)
    try:
        lock = client.lock(name)
        lock.acquire()
        done: List[bool] = []

        def waiter() -> None:
            done.append(lock.acquire(timeout=30))
            lock.release()
        threads = [threading.Thread(target=waiter) for _ in range(WAITERS)]
        for t in threads:
            t.start()
        wait_for(lambda: client.metrics().lock("reentrant").waiters
                 == WAITERS, what="every waiter waiting")
        # Two that give up: a wait that runs out, a single try. The wait
        # is long enough for a loaded machine's round trip (one cut by
        # its bound raises TimeoutError, not False).
        gave_up: List[bool] = []
        for kw in ({"timeout": 0.5}, {"blocking": False}):
            t = threading.Thread(
                target=lambda kw=kw: gave_up.append(lock.acquire(**kw)))
            t.start()
            t.join()
        lock.release()
        for t in threads:
            t.join()
        assert done == [True] * WAITERS and gave_up == [False, False]
        # A hold lost: its key deleted under it.
        lock.acquire()
        server.cmd("DEL", name)
        with pytest.raises(rlock.LockLost):
            lock.release()

        m = client.metrics().lock("reentrant")
        assert (m.acquisitions, m.timeouts, m.failures, m.lost) == \
            (2 + WAITERS, 2, 0, 1)
        assert (m.holds, m.waiters) == (0, 0)
        assert m.wait.count == 2 + WAITERS
        assert m.handoff.count == WAITERS
        assert m.hold.count == 2 + WAITERS  # the lost one was popped too
        assert m.wait.buckets[-1] == (float("inf"), 2 + WAITERS)
        assert m.wait.sum > 0

        text = client.metrics_text()
        s = samples(text)
        assert s[("rlock_acquisitions_total", kind())] == 2 + WAITERS
        assert s[("rlock_acquire_timeouts_total", kind())] == 2
        assert s[("rlock_lost_total", kind())] == 1
        assert s[("rlock_waiters", kind())] == 0
        assert s[("rlock_handoff_seconds_count", kind())] == WAITERS
        assert s[("rlock_wait_seconds_bucket", kind(le="+Inf"))] == \
            2 + WAITERS
        assert s[("rlock_waits_total", ())] == WAITERS + 1
        assert client.stats().redirections == 0
        # OpenMetrics, by its stricter parser.
        om = {f.name: f for f in openmetrics_families(
            client.metrics_text(openmetrics=True))}
        assert om["rlock_acquisitions"].type == "counter"
        assert om["rlock_wait_seconds"].type == "histogram"
    finally:
        client.close()


def test_collector(server: Server, name: str) -> None:
    with rlock.Client(server.url) as client:
        registry = CollectorRegistry()
        registry.register(client.collector())
        with client.fair_lock(name):
            pass
        assert registry.get_sample_value(
            "rlock_acquisitions_total", {"kind": "fair"}) == 1
        assert registry.get_sample_value(
            "rlock_hold_seconds_count", {"kind": "fair"}) == 1
        out = generate_latest(registry).decode()
        assert '# TYPE rlock_wait_seconds histogram' in out


def test_names_within_their_bound(server: Server, name: str) -> None:
    with rlock.Client(server.url, metrics_names=1) as client:
        for n in (name + ':"a"', name + ":b", name + ':"a"'):
            with client.lock(n):
                pass
        m = client.metrics()
        assert m.lock("reentrant", name + ':"a"').acquisitions == 2
        assert m.lock("reentrant").acquisitions == 1
        assert m.counters["metric_names_refused"] == 1
        s = samples(client.metrics_text())
        assert s[("rlock_acquisitions_total",
                  kind(name=name + ':"a"'))] == 2
    with pytest.raises(rlock.InvalidArgument):
        rlock.Client(server.url, metrics_names=-1)
    with pytest.raises(TypeError):
        rlock.Client(server.url, metrics_names="2")  # type: ignore[arg-type]


@pytest.mark.asyncio
async def test_aio_contention_counted(server: Server, name: str) -> None:
    async with rlock.aio.Client(server.url) as client:
        lock = client.lock(name)
        await lock.acquire()

        async def waiter() -> bool:
            got = await lock.acquire(timeout=30)
            await lock.release()
            return got
        tasks = [asyncio.ensure_future(waiter()) for _ in range(WAITERS)]
        loop = asyncio.get_running_loop()
        end = loop.time() + 10
        while client.metrics().lock("reentrant").waiters != WAITERS:
            assert loop.time() < end, "the waiters never all waited"
            await asyncio.sleep(0.01)
        # Another task gives up (the holding task would re-enter).
        assert not await asyncio.ensure_future(lock.acquire(timeout=0.05))
        await lock.release()
        assert await asyncio.gather(*tasks) == [True] * WAITERS
        m = client.metrics().lock("reentrant")
        assert (m.acquisitions, m.timeouts, m.holds, m.waiters) == \
            (1 + WAITERS, 1, 0, 0)
        assert m.handoff.count == WAITERS
        registry = CollectorRegistry()
        registry.register(client.collector())
        # Scraped from another thread, as an HTTP exporter does.
        got: List[Any] = []
        t = threading.Thread(target=lambda: got.append(
            registry.get_sample_value("rlock_acquisitions_total",
                                      {"kind": "reentrant"})))
        t.start()
        t.join()
        assert got == [1 + WAITERS]
    with pytest.raises(rlock.Closed):
        client.metrics()


@pytest.mark.asyncio
async def test_aio_multilock_redlock(servers3: List[Server],
                                     name: str) -> None:
    clients = [rlock.aio.Client(s.url) for s in servers3]
    try:
        c = clients[0]
        m = c.multi_lock(c.lock(name + "m1"), c.fair_lock(name + "m2"))
        async with m:
            pass
        r = c.red_lock(*[k.lock(name) for k in clients])
        async with r:
            pass
        got = c.metrics()
        assert got.lock("multilock").acquisitions == 1
        assert got.lock("multilock").wait.count == 1
        assert got.lock("redlock").acquisitions == 1
        # The MultiLock's members count under their own kinds; the
        # RedLock's member holds under theirs, in each member's client.
        assert got.lock("fair").acquisitions == 1
        assert got.lock("reentrant").acquisitions == 1
        assert got.lock("reentrant").hold.count == 2
        assert clients[1].metrics().lock("reentrant").hold.count == 1
        assert clients[1].metrics().lock("redlock").acquisitions == 0
    finally:
        for k in clients:
            k.close()
