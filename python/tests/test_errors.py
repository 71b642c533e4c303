# SPDX-License-Identifier: BSD-3-Clause
"""Bad arguments raise exceptions saying what was wrong; a lost lock is
reported to its callback and by release()."""
from __future__ import annotations

import threading
from typing import List, Tuple

import pytest

import rlock
import rlock.aio
from conftest import Server


@pytest.mark.parametrize("kwargs,exc,words", [
    ({"url": "http://localhost"}, rlock.InvalidArgument, "redis://"),
    ({"url": 5}, TypeError, "url must be a str"),
    ({"connect_timeout": 0}, rlock.InvalidArgument, "connect_timeout=0"),
    ({"command_timeout": "3"}, TypeError, "number of seconds"),
    ({"watchdog_timeout": 0.001}, rlock.InvalidArgument, "watchdog"),
    ({"pool_size": 0}, rlock.InvalidArgument, "pool_size=0"),
    ({"pubsub_mode": "loud"}, rlock.InvalidArgument, "pubsub_mode"),
    ({"tls_cert": "/nonexistent"}, rlock.InvalidArgument, "tls_cert"),
    ({"user": "bob"}, rlock.InvalidArgument, "password"),
    ({"on_lost": 3}, TypeError, "on_lost must be callable"),
    ({"log_level": 9, "log": print}, rlock.InvalidArgument, "log_level"),
    ({"unreachable_retry": float("nan")}, rlock.InvalidArgument, "finite"),
    ({"nonsense": 1}, TypeError, "nonsense"),
])
def test_bad_client_arguments(kwargs: dict, exc: type, words: str) -> None:
    with pytest.raises(exc) as e:
        rlock.Client(**kwargs)
    assert words in str(e.value)
    if isinstance(e.value, rlock.Error):
        assert e.value.code == rlock.Status.EINVAL
        assert e.value.message == str(e.value)


def test_bad_lock_arguments(client: rlock.Client, name: str) -> None:
    with pytest.raises(rlock.InvalidArgument, match="name"):
        client.lock("")
    with pytest.raises(rlock.InvalidArgument, match="1024"):
        client.lock("x" * 2000)
    with pytest.raises(TypeError, match="name must be a str"):
        client.lock(None)  # type: ignore[arg-type]
    lock = client.lock(name)
    with pytest.raises(rlock.InvalidArgument, match="non-blocking"):
        lock.acquire(False, 1)
    with pytest.raises(rlock.InvalidArgument, match="timeout must be None or -1"):
        lock.acquire(timeout=-2)
    with pytest.raises(rlock.InvalidArgument, match="lease must be"):
        lock.acquire(lease=0)
    with pytest.raises(rlock.InvalidArgument, match="lease must be"):
        lock.acquire(lease=10 ** 9)
    with pytest.raises(TypeError, match="blocking must be a bool"):
        lock.acquire(1)  # type: ignore[arg-type]
    with pytest.raises(rlock.InvalidArgument, match="Owner number"):
        lock.acquire(owner=-1)
    with pytest.raises(rlock.InvalidArgument, match="multiplier"):
        client.spin_lock(name, multiplier=0)
    with pytest.raises(rlock.InvalidArgument, match="max"):
        client.spin_lock(name, initial_delay=1, max_delay=0.5)
    with pytest.raises(rlock.InvalidArgument, match="backoff"):
        client.spin_lock(name, backoff="linear")
    with pytest.raises(TypeError, match="member 1"):
        client.multi_lock(lock, "x")  # type: ignore[arg-type]
    with pytest.raises(rlock.InvalidArgument):
        client.multi_lock(lock, lock)  # the same lock twice
    with pytest.raises(rlock.InvalidArgument):
        client.multi_lock()
    assert not lock.locked()  # nothing above touched it


def test_wrong_type_key(client: rlock.Client, server: Server,
                        name: str) -> None:
    server.cmd("SET", name, "not a lock")
    with pytest.raises(rlock.WrongType) as e:
        client.lock(name).acquire(blocking=False)
    assert name in str(e.value) and e.value.code == rlock.Status.EWRONGTYPE
    assert server.cmd("GET", name) == "not a lock"


def test_unreachable_server() -> None:
    from conftest import free_port
    c = rlock.Client(f"redis://127.0.0.1:{free_port()}",
                     connect_timeout=0.5)
    try:
        with pytest.raises(rlock.ConnectionError) as e:
            c.lock("x").acquire(blocking=False)
        assert isinstance(e.value, ConnectionError)  # the built-in too
        assert "127.0.0.1" in str(e.value)
    finally:
        c.close()


def test_lost_lock_reported_to_callback_and_release(server: Server,
                                                    name: str) -> None:
    lost: List[Tuple[str, str]] = []
    seen = threading.Event()

    def on_lost(lock_name: str, owner: str) -> None:
        lost.append((lock_name, owner))
        # the callback runs on a thread of its own: it may call the
        # client (here a round trip), which the library's thread may not
        client.ping()
        seen.set()
    client = rlock.Client(server.url, watchdog_timeout=0.3, on_lost=on_lost)
    try:
        lock = client.lock(name)
        lock.acquire()
        owner = client.owner
        server.cmd("DEL", name)  # gone behind the holder's back
        assert seen.wait(10), "the lost-lock callback was not called"
        assert lost == [(name, owner)]
        with pytest.raises(rlock.LockLost) as e:
            lock.check()
        with pytest.raises(rlock.LockLost) as e:
            lock.release()
        assert e.value.code == rlock.Status.ELOST and name in str(e.value)
        assert client.stats().lost == 1
    finally:
        client.close()


def test_callback_exception_does_not_stop_reports(server: Server,
                                                  name: str) -> None:
    calls: List[str] = []
    seen = threading.Event()
    hook_calls: List[BaseException] = []
    old = threading.excepthook
    threading.excepthook = lambda a: hook_calls.append(a.exc_value)

    def on_lost(lock_name: str, owner: str) -> None:
        calls.append(lock_name)
        if len(calls) == 2:
            seen.set()
        raise ValueError("callback failed")
    client = rlock.Client(server.url, watchdog_timeout=0.3, on_lost=on_lost)
    try:
        a, b = client.lock(name + "a"), client.lock(name + "b")
        a.acquire()
        b.acquire()
        server.cmd("DEL", name + "a", name + "b")
        assert seen.wait(10)
        assert sorted(calls) == [name + "a", name + "b"]
        assert len(hook_calls) == 2
    finally:
        client.close()
        threading.excepthook = old


def test_log_callback(server: Server) -> None:
    from conftest import free_port
    messages: List[Tuple[rlock.LogLevel, str]] = []
    got = threading.Event()

    def log(level: rlock.LogLevel, msg: str) -> None:
        messages.append((level, msg))
        got.set()
    c = rlock.Client(f"redis://127.0.0.1:{free_port()}", log=log,
                     log_level=rlock.LogLevel.DEBUG, connect_timeout=0.3)
    try:
        with pytest.raises(rlock.ConnectionError):
            c.ping()
        assert got.wait(10)
        assert any("127.0.0.1" in m for _, m in messages)
    finally:
        c.close()


def test_client_needs_a_running_loop(server: Server) -> None:
    with pytest.raises(RuntimeError, match="coroutine"):
        rlock.aio.Client(server.url)
