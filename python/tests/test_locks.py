# SPDX-License-Identifier: BSD-3-Clause
"""Every lock kind of the blocking client against a real server."""
from __future__ import annotations

import threading

import pytest

import rlock
from conftest import Server, wait_for


def other_thread(fn):  # type: ignore[no-untyped-def]
    """fn() on another thread (another owner); its result."""
    out = []
    t = threading.Thread(target=lambda: out.append(fn()))
    t.start()
    t.join()
    return out[0]


def test_version_is_the_library_s() -> None:
    assert rlock.__version__ == rlock.library_version
    assert rlock.__version__.count(".") == 2


def test_reentrant_lock_like_threading_lock(client: rlock.Client,
                                            name: str) -> None:
    lock = client.lock(name)
    assert lock.name == name and not lock.locked()
    assert lock.acquire() is True
    assert lock.acquire(timeout=1) is True  # re-entry
    assert lock.hold_count == 2 and lock.held() and lock.check()
    assert 25 < lock.ttl <= 30  # watchdog lease
    assert other_thread(lambda: lock.acquire(blocking=False)) is False
    assert other_thread(lambda: lock.acquire(timeout=0.1)) is False
    info = lock.inspect()
    assert info.locked and info.holders[0].holds == 2
    assert info.holders[0].owner == client.owner
    lock.release()
    lock.release()
    assert not lock.locked() and lock.ttl is None and lock.hold_count == 0
    with lock:
        assert lock.locked()
    assert not lock.locked()
    assert lock.acquire(lease=5)
    assert 4 < lock.ttl <= 5
    assert lock.force_release() is True and not lock.locked()
    assert lock.force_release() is False
    with pytest.raises(rlock.LockLost):  # held by this thread, deleted
        lock.release()
    with pytest.raises(rlock.NotHeld) as e:
        lock.release()
    assert isinstance(e.value, RuntimeError) and e.value.code == -10


def test_waiter_gets_the_lock_at_release(client: rlock.Client,
                                         name: str) -> None:
    lock = client.lock(name)
    lock.acquire()
    got = threading.Event()

    def waiter() -> None:
        assert lock.acquire(timeout=10)
        got.set()
        lock.release()
    t = threading.Thread(target=waiter)
    t.start()
    wait_for(lambda: client.stats().waits >= 1, what="the waiter to wait")
    assert not got.is_set()
    lock.release()
    t.join()
    assert got.is_set()


def test_fair_lock_serves_in_arrival_order(client: rlock.Client,
                                           name: str) -> None:
    lock = client.fair_lock(name)
    lock.acquire()
    order = []
    threads = []
    for i in range(4):
        t = threading.Thread(target=lambda i=i: (lock.acquire(timeout=20),
                                                 order.append(i),
                                                 lock.release()))
        t.start()
        threads.append(t)
        wait_for(lambda i=i: lock.inspect().queue_length == i + 1,
                 what=f"waiter {i} to queue")
    info = lock.inspect()
    assert len(info.queue) == 4 and all(w.deadline > 0 for w in info.queue)
    lock.release()
    for t in threads:
        t.join()
    assert order == [0, 1, 2, 3]


def test_fair_waiter_canceled_leaves_the_queue(client: rlock.Client,
                                               name: str) -> None:
    lock = client.fair_lock(name)
    lock.acquire()
    cancel = rlock.Cancel()
    errors = []

    def waiter() -> None:
        try:
            lock.acquire(cancel=cancel)
        except rlock.Canceled as e:
            errors.append(e)
    t = threading.Thread(target=waiter)
    t.start()
    wait_for(lambda: lock.inspect().queue_length == 1, what="the queue")
    cancel.fire()
    t.join(10)
    assert errors and errors[0].code == rlock.Status.ECANCELED
    assert cancel.fired
    assert lock.inspect().queue_length == 0
    lock.release()


def test_read_write_lock(client: rlock.Client, name: str) -> None:
    rw = client.read_write_lock(name)
    r, w = rw.read_lock(), rw.write_lock()
    assert r is rw.read_lock()
    with r:
        assert other_thread(lambda: r.acquire(timeout=1) and
                            (r.release() or True))  # readers share
        assert other_thread(lambda: w.acquire(blocking=False)) is False
        assert r.inspect().mode == "read"
        with pytest.raises(rlock.Deadlock):
            w.acquire()
    with w:
        assert w.inspect().mode == "write"
        assert other_thread(lambda: r.acquire(blocking=False)) is False
        with r:  # the writer may read
            pass
    assert not w.locked()
    # the other family on the same name is refused, untouched
    with r:
        with pytest.raises(rlock.WrongType):
            client.lock(name).acquire(blocking=False)


def test_fenced_lock_tokens_grow(client: rlock.Client, name: str) -> None:
    lock = client.fenced_lock(name)
    assert lock.token is None
    with lock:
        first = lock.token
        assert first is not None and first >= 1
        assert lock.latest_token() == first
    tokens = other_thread(lambda: (lock.acquire(), lock.token,
                                   lock.release()))
    assert tokens[1] > first
    assert lock.token == first  # this thread's own
    # it excludes a reentrant lock of the same name
    with lock:
        assert other_thread(
            lambda: client.lock(name).acquire(blocking=False)) is False


def test_spin_lock_with_back_off_options(client: rlock.Client,
                                         name: str) -> None:
    lock = client.spin_lock(name, backoff="constant", delay=0.005)
    lock.acquire()
    done = threading.Event()

    def waiter() -> None:
        assert lock.acquire(timeout=10)
        done.set()
        lock.release()
    t = threading.Thread(target=waiter)
    t.start()
    wait_for(lambda: client.stats().waits >= 1, what="the spinner")
    lock.release()
    t.join()
    assert done.is_set()
    exp = client.spin_lock(name, initial_delay=0.002, max_delay=0.05,
                           multiplier=3, jitter=False)
    with exp:
        assert exp.hold_count == 1


def test_multi_lock_all_or_none(client: rlock.Client, server: Server,
                                name: str) -> None:
    other = rlock.Client(server.url)
    try:
        a, b = client.lock(name + "a"), other.fair_lock(name + "b")
        m = client.multi_lock(a, b)
        assert m.locks == (a, b)
        with m:
            assert m.held() and a.held() and b.held()
        assert not a.locked() and not b.locked()
        b.acquire()  # a member held by this thread through b's client...
        assert other_thread(lambda: m.acquire(timeout=0.2)) is False
        assert not a.locked()  # ...so none is left held
        b.release()
        assert m.acquire(lease=10)
        assert 9 < a.ttl <= 10
        m.release()
    finally:
        other.close()


def test_explicit_owner_across_threads(client: rlock.Client,
                                       name: str) -> None:
    lock = client.lock(name)
    job = rlock.Owner()
    assert job != rlock.Owner() and job.number > 0
    assert lock.acquire(owner=job)
    assert lock.holds(job) == 1 and lock.hold_count == 0
    assert lock.acquire(blocking=False) is False  # this thread is another
    other_thread(lambda: lock.release(owner=job))
    assert not lock.locked()
    me = rlock.Owner.current_thread()
    with lock:
        assert lock.holds(me) == 1


def test_list_locks_and_stats(client: rlock.Client, name: str) -> None:
    with client.lock(name + ":1"), client.fair_lock(name + ":2"):
        found = {i.name: i for i in client.list_locks(name + ":*")}
        assert set(found) == {name + ":1", name + ":2"}
        assert found[name + ":1"].kind == "reentrant"
    s = client.stats()
    assert s.acquisitions >= 2 and s.releases >= 2
    assert client.ping() > 0 and client.topology == "single"
    assert len(client.id) == 36 and client.owner.startswith(client.id)


def test_close_ends_waits_and_objects(server: Server, name: str) -> None:
    c = rlock.Client(server.url)
    holder = rlock.Client(server.url)
    held = holder.lock(name)
    held.acquire()
    lock = c.lock(name)
    errors = []

    def waiter() -> None:
        try:
            lock.acquire()
        except rlock.Closed as e:
            errors.append(e)
    t = threading.Thread(target=waiter)
    t.start()
    wait_for(lambda: c.stats().waits >= 1, what="the waiter")
    c.close()
    t.join(10)
    assert not t.is_alive() and errors
    with pytest.raises(rlock.Closed):
        lock.locked()
    c.close()  # again: nothing
    held.release()
    holder.close()


def test_a_lock_s_own_wait_and_lease(client: rlock.Client, name: str) -> None:
    """client.lock(name, wait=, lease=): used by ``with`` and acquire();
    ``timeout`` is the wait (threading's name), ``wait=`` the same."""
    lock = client.lock(name, wait=0.2, lease=7)
    assert lock.wait == 0.2 and lock.lease == 7
    with lock:
        assert 6 < lock.ttl <= 7  # the lock's lease, not the watchdog's
    other = rlock.Owner()
    assert lock.acquire(owner=other)
    with pytest.raises(rlock.Locked, match="within its wait of 0.2 s"):
        with lock:  # another owner holds it: the wait of 0.2 s ends
            pytest.fail("the body ran")
    assert lock.acquire() is False  # the lock's wait again
    assert lock.acquire(wait=0.05) is False
    assert lock.acquire(timeout=0.05) is False
    with pytest.raises(TypeError, match="not both"):
        lock.acquire(timeout=1, wait=1)
    lock.release(owner=other)
    assert lock.acquire(lease=None)  # None: the watchdog, not the lock's
    assert 25 < lock.ttl <= 30
    assert lock.owned() and lock.held()
    lock.release()
    assert not lock.owned()
    with pytest.raises(rlock.InvalidArgument, match="wait must be"):
        client.lock(name, wait=-3)
    with pytest.raises(rlock.InvalidArgument, match="lease must be"):
        client.fair_lock(name, lease=0)
    assert client.lock(name, wait=None).acquire(timeout=None)  # for ever
    client.lock(name).release()


def test_groups_own_wait_and_lease(client: rlock.Client, name: str) -> None:
    a, b = client.lock(name + "a"), client.lock(name + "b")
    m = client.multi_lock(a, b, wait=0.1, lease=9)
    with m:
        assert m.held() and m.owned() and 8 < a.ttl <= 9
    holder = rlock.Owner()
    assert b.acquire(owner=holder)
    with pytest.raises(rlock.Locked, match="MultiLock"):
        with m:
            pass
    assert not a.locked()  # all or none
    b.release(owner=holder)


def test_extend_gives_a_fixed_lease_a_fresh_one(client: rlock.Client,
                                                server: Server,
                                                name: str) -> None:
    lock = client.lock(name)
    with pytest.raises(rlock.NotHeld):
        lock.extend(5)
    assert lock.acquire(lease=0.3)
    lock.extend(20)
    assert 15000 < int(server.cmd("PTTL", name)) <= 20000
    with pytest.raises(rlock.InvalidArgument):
        lock.extend(0)
    server.cmd("DEL", name)
    with pytest.raises(rlock.LockLost):
        lock.extend(20)
    assert int(server.cmd("EXISTS", name)) == 0
    with pytest.raises(rlock.Error):
        lock.release()
    assert lock.acquire()  # the watchdog's lease: nothing to extend
    with pytest.raises(rlock.InvalidArgument, match="watchdog"):
        lock.extend(20)
    lock.release()


def test_reacquire_renews_the_locks_own_lease(client: rlock.Client,
                                              server: Server,
                                              name: str) -> None:
    lock = client.lock(name, lease=20)
    with pytest.raises(rlock.NotHeld):
        lock.reacquire()
    assert lock.acquire(lease=0.3)  # this call's lease, not the lock's
    assert int(server.cmd("PTTL", name)) <= 300
    lock.reacquire()  # redis-py's: the lock's own lease, from now
    assert 15000 < int(server.cmd("PTTL", name)) <= 20000
    lock.release()
    bare = client.lock(name)  # no lease of its own: nothing to reset to
    assert bare.acquire(lease=5)
    with pytest.raises(rlock.InvalidArgument, match="own lease"):
        bare.reacquire()
    bare.release()


def test_nonreentrant_lock_refuses_its_holder(client: rlock.Client,
                                              server: Server,
                                              name: str) -> None:
    for lock in (client.nonreentrant_lock(name, wait=5),
                 client.nonreentrant_fair_lock(name + ":fair", wait=5)):
        with lock:
            with pytest.raises(rlock.AlreadyHeld, match="already held"):
                lock.acquire()  # at once, not after the 5 s wait
            with pytest.raises(rlock.AlreadyHeld):
                with lock:
                    pass
            assert lock.holds() == 1
        assert not lock.locked()
