# SPDX-License-Identifier: BSD-3-Clause
"""Ctrl-C (SIGINT) during a wait of the main thread, and exceptions that
arrive once a hold was taken: nothing may stay held or queued.

The SIGINT tests run a child process (sigint_child.py) whose main thread
waits in ``with lock:`` for a lock this test holds; the test waits until
the child is observably in the wait (it counted a wait, and is subscribed
or queued), sends SIGINT, and checks that KeyboardInterrupt came within a
generous bound while the child's client, still alive, holds nothing and
queues nothing.
"""
from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from typing import Any, Callable, Iterator, List

import pytest

import rlock
from conftest import SCALE, Server, wait_for

HERE = os.path.dirname(os.path.abspath(__file__))
CHILD = os.path.join(HERE, "sigint_child.py")
BOUND = 1.5 * SCALE  # the target is ~0.1 s; generous for loaded machines


class Child:
    """sigint_child.py, its stdout read line by line on a thread."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, CHILD, *args], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines: "queue.Queue[str]" = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.strip())
        self.lines.put("EOF")

    def expect(self, prefix: str, timeout: float = 20.0) -> str:
        """The next line, which must start with `prefix` ("in-wait"
        lines, which the child may print at any time, are skipped when
        something else is expected)."""
        end = time.monotonic() + timeout * SCALE
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, end -
                                                  time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no {prefix!r} line from the child "
                                     f"within {timeout * SCALE} s") from None
            if line != "in-wait" or prefix == "in-wait":
                break
        if not line.startswith(prefix):
            err = ""
            if line == "EOF" and self.proc.stderr is not None:
                err = self.proc.stderr.read()
            raise AssertionError(f"child said {line!r}, not {prefix!r} "
                                 f"{err}")
        return line

    def interrupt(self) -> float:
        """SIGINT; the seconds until the child said "interrupted 0"."""
        t0 = time.monotonic()
        os.kill(self.proc.pid, signal.SIGINT)
        self.expect("interrupted 0", timeout=10)
        return time.monotonic() - t0

    def finish(self) -> None:
        """Let it exit (stdin closed); it must exit 0."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        assert self.proc.wait(10 * SCALE) == 0

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def children() -> Iterator[List[Child]]:
    made: List[Child] = []
    yield made
    for c in made:
        c.kill()


def numsub(server: Server, channel: str) -> int:
    return int(server.cmd("PUBSUB", "NUMSUB", channel)[1])


def channel(name: str) -> str:
    return f"redisson_lock__channel:{{{name}}}"


KINDS = ["reentrant", "fair", "fenced", "spin", "read", "write", "multi"]


def hold(client: rlock.Client, kind: str, name: str) -> Any:
    """Take what makes `kind`'s waiter wait; returns the lock to inspect."""
    lk: Any
    if kind in ("reentrant", "spin"):
        lk = client.lock(name)
    elif kind == "fair":
        lk = client.fair_lock(name)
    elif kind == "fenced":
        lk = client.fenced_lock(name)
    elif kind == "read":
        lk = client.read_write_lock(name).write_lock()
    elif kind == "write":
        lk = client.read_write_lock(name).read_lock()
    else:  # multi: the second member is held
        lk = client.lock(name + ":b")
    assert lk.acquire(blocking=False)
    return lk


def in_wait(server: Server, kind: str, name: str, lk: Any) -> Callable[[],
                                                                        bool]:
    """The condition that shows the child waiting, beyond its count."""
    if kind in ("reentrant", "fenced"):
        return lambda: numsub(server, channel(name)) >= 1
    if kind == "multi":
        return lambda: numsub(server, channel(name + ":b")) >= 1
    if kind in ("read", "write"):
        return lambda: numsub(server, f"redisson_rwlock:{{{name}}}") >= 1
    if kind == "fair":
        return lambda: bool(lk.inspect().queue_length == 1)
    return lambda: True  # spin: no subscription; its count says it waits


@pytest.mark.parametrize("kind", KINDS)
def test_sigint_interrupts_a_wait(kind: str, server: Server,
                                  client: rlock.Client, name: str,
                                  children: List[Child]) -> None:
    lk = hold(client, kind, name)
    child = Child(kind, name, server.url)
    children.append(child)
    child.expect("waiting")
    child.expect("in-wait")
    wait_for(in_wait(server, kind, name, lk), what=f"the {kind} waiter")
    took = child.interrupt()
    print(f"{kind}: KeyboardInterrupt {took * 1000:.1f} ms after SIGINT")
    assert took < BOUND
    info = lk.inspect()  # the child's client still lives: nothing of it
    assert [h.owner for h in info.holders] == \
        [client.owner + (":write" if kind == "read" else "")]
    assert info.queue_length == 0
    if kind == "multi":
        assert not client.lock(name + ":a").locked()
    lk.release()
    child.finish()


@pytest.mark.parametrize("kind", ["semaphore", "psemaphore", "latch"])
def test_sigint_interrupts_a_semaphore_or_latch_wait(
        kind: str, server: Server, client: rlock.Client, name: str,
        children: List[Child]) -> None:
    if kind == "semaphore":
        client.semaphore(name).try_set_permits(0)
        chan = f"redisson_sc:{{{name}}}"
    elif kind == "psemaphore":
        ps = client.permit_expirable_semaphore(name)
        ps.try_set_permits(1)
        mine = ps.acquire(blocking=False)
        assert mine is not None
        chan = f"redisson_sc:{{{name}}}"
    else:
        client.count_down_latch(name).try_set_count(1)
        chan = f"redisson_countdownlatch__channel__{{{name}}}"
    child = Child(kind, name, server.url)
    children.append(child)
    child.expect("waiting")
    wait_for(lambda: numsub(server, chan) >= 1, what=f"the {kind} waiter")
    took = child.interrupt()
    print(f"{kind}: KeyboardInterrupt {took * 1000:.1f} ms after SIGINT")
    assert took < BOUND
    if kind == "semaphore":  # nothing taken: a release is all there is
        sem = client.semaphore(name)
        sem.release()
        assert sem.available() == 1
    elif kind == "psemaphore":  # only this test's permit is leased
        assert ps.available() == 0 and ps.permits() == 1
        mine.release()
        assert ps.available() == 1
    else:
        assert client.count_down_latch(name).count() == 1
    child.finish()


def test_sigint_interrupts_a_campaign(server: Server, client: rlock.Client,
                                      name: str,
                                      children: List[Child]) -> None:
    """Election.campaign is a blocking call of the binding too: Ctrl-C
    ends its wait, the standby leading nothing and the leader untouched."""
    election = client.election(name)
    term = election.campaign("leader")
    assert term is not None
    child = Child("election", name, server.url)
    children.append(child)
    child.expect("waiting")
    wait_for(lambda: numsub(server, channel(name)) >= 1,
             what="the campaigning child")
    took = child.interrupt()
    print(f"election: KeyboardInterrupt {took * 1000:.1f} ms after SIGINT")
    assert took < BOUND
    leader = election.observe()
    assert leader is not None and leader.value == "leader"
    assert leader.term == term
    election.resign()
    child.finish()


def scripts_run(server: Server) -> int:
    """How many scripts the server has run (INFO commandstats)."""
    n = 0
    for line in server.cmd("INFO", "commandstats").splitlines():
        if line.startswith(("cmdstat_evalsha:", "cmdstat_eval:")):
            n += int(line.split("calls=")[1].split(",")[0])
    return n


def test_sigint_interrupts_a_redlock_wait(servers3: List[Server], name: str,
                                          children: List[Child]) -> None:
    clients = [rlock.Client(s.url) for s in servers3]
    try:
        held = [c.lock(name) for c in clients[:2]]  # a majority
        for lk in held:
            assert lk.acquire(blocking=False)
        before = scripts_run(servers3[2])
        child = Child("red", name, *(s.url for s in servers3))
        children.append(child)
        child.expect("waiting")
        # Rounds that miss the quorum are retried after a pause: two
        # rounds on the free server show the child in its wait.
        wait_for(lambda: scripts_run(servers3[2]) >= before + 2,
                 what="the RedLock waiter's rounds")
        took = child.interrupt()
        print(f"red: KeyboardInterrupt {took * 1000:.1f} ms after SIGINT")
        assert took < BOUND
        assert not clients[2].lock(name).locked()
        for lk in held:
            assert [h.owner for h in lk.inspect().holders] == \
                [lk.client.owner]
            lk.release()
        child.finish()
    finally:
        for c in clients:
            c.close()


def test_sigint_interrupts_a_wait_on_a_server_that_is_down(
        workdir: str, name: str, children: List[Child]) -> None:
    down = Server(workdir, [])
    down.stop()  # its port stays, refusing connections
    child = Child("reentrant", name, down.url)
    children.append(child)
    child.expect("waiting")
    child.expect("in-wait")  # a connect failed: it rides out the outage
    took = child.interrupt()
    print(f"down server: KeyboardInterrupt {took * 1000:.1f} ms after "
          f"SIGINT")
    assert took < BOUND
    child.finish()


def established_to(port: int) -> int:
    """Connections to 127.0.0.1:`port` in /proc/net/tcp (ESTABLISHED)."""
    n = 0
    with open("/proc/net/tcp") as f:
        next(f)
        for line in f:
            fields = line.split()
            rem, state = fields[2], fields[3]
            if state == "01" and int(rem.split(":")[1], 16) == port:
                n += 1
    return n


def test_sigint_interrupts_a_wait_on_a_hung_server(
        workdir: str, name: str, children: List[Child]) -> None:
    hung = Server(workdir, [])
    os.kill(hung.proc.pid, signal.SIGSTOP)
    try:
        # Long timeouts: only the interruption can end the wait early.
        child = Child("reentrant", name, hung.url, "--command_timeout=60",
                      "--connect_timeout=60")
        children.append(child)
        child.expect("waiting")
        wait_for(lambda: established_to(hung.port) >= 1,
                 what="the child's connection to the stopped server")
        took = child.interrupt()
        print(f"hung server: KeyboardInterrupt {took * 1000:.1f} ms after "
              f"SIGINT")
        assert took < BOUND
        child.finish()
    finally:
        os.kill(hung.proc.pid, signal.SIGCONT)
        hung.stop()


def test_wait_bounds_the_call_on_a_hung_server(workdir: str,
                                               name: str) -> None:
    """A server that takes connections and never answers: acquire's wait
    bounds the whole call, and a single try takes one command timeout,
    not one per command it needs (issue 29: 6.2 s for timeout=2)."""
    hung = Server(workdir, [])
    os.kill(hung.proc.pid, signal.SIGSTOP)
    c = rlock.Client(hung.url, command_timeout=0.8, connect_timeout=0.8)
    try:
        lock = c.lock(name)
        for blocking, wait, bound in ((True, 0.5, 0.5), (False, None, 0.8)):
            t0 = time.monotonic()
            with pytest.raises(rlock.TimeoutError):
                lock.acquire(blocking, wait=wait)
            took = time.monotonic() - t0
            print(f"hung server, acquire(blocking={blocking}, wait={wait}): "
                  f"TimeoutError after {took:.2f} s")
            assert bound - 0.05 < took < bound + 0.2 + 0.5 * SCALE
    finally:
        c.close()
        os.kill(hung.proc.pid, signal.SIGCONT)
        hung.stop()


def test_unreachable_retry_bounds_a_wait_on_a_server_that_is_down(
        workdir: str, name: str) -> None:
    down = Server(workdir, [])
    down.stop()
    c = rlock.Client(down.url, unreachable_retry=0.3, connect_timeout=0.5)
    try:
        t0 = time.monotonic()
        with pytest.raises(rlock.ConnectionError):
            with c.lock(name):
                pass
        took = time.monotonic() - t0
        print(f"unreachable_retry=0.3: ConnectionError after {took:.2f} s")
        assert 0.25 < took < 5 * SCALE
    finally:
        c.close()


# ---- in this process (pytest runs tests on the main thread) -------------
def on_thread(fn: Callable[[], Any]) -> threading.Thread:
    t = threading.Thread(target=fn, daemon=True)
    t.start()
    return t


def test_sigint_in_this_process(server: Server, client: rlock.Client,
                                name: str) -> None:
    holder = rlock.Owner()
    assert client.lock(name).acquire(blocking=False, owner=holder)
    main = threading.get_ident()
    assert threading.main_thread().ident == main

    def interrupt() -> None:
        wait_for(lambda: numsub(server, channel(name)) >= 1,
                 what="the main thread's subscription")
        signal.pthread_kill(main, signal.SIGINT)
    with rlock.Client(server.url) as other:
        lock = other.lock(name, wait=30)
        t = on_thread(interrupt)
        t0 = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            with lock:
                pytest.fail("the body ran")
        took = time.monotonic() - t0
        t.join()
        assert not lock.check() and lock.hold_count == 0
        assert took < 30  # not the end of the wait
        # The thread's token was reset: the next wait works.
        client.lock(name).release(owner=holder)
        assert lock.acquire(timeout=5)
        lock.release()


def test_sigint_handler_that_returns_lets_the_wait_go_on(
        server: Server, client: rlock.Client, name: str) -> None:
    """A SIGINT handler that does not raise: the wait goes on (PEP 475),
    a fair waiter queues again, and takes the lock when it comes free."""
    holder = rlock.Owner()
    fair = client.fair_lock(name)
    assert fair.acquire(blocking=False, owner=holder)
    calls: List[int] = []
    main = threading.get_ident()  # pytest runs tests on the main thread

    def run() -> None:
        wait_for(lambda: fair.inspect().queue_length == 1,
                 what="the main thread in the queue")
        signal.pthread_kill(main, signal.SIGINT)
        wait_for(lambda: calls, what="the handler")
        wait_for(lambda: fair.inspect().queue_length == 1,
                 what="the main thread queued again")
        fair.release(owner=holder)
    old = signal.signal(signal.SIGINT, lambda s, f: calls.append(s))
    try:
        with rlock.Client(server.url) as other:
            lock = other.fair_lock(name)
            t = on_thread(run)
            assert lock.acquire(wait=30) is True
            t.join()
            assert calls == [signal.SIGINT]
            assert lock.hold_count == 1
            lock.release()
    finally:
        signal.signal(signal.SIGINT, old)


class Boom(Exception):
    pass


def test_exception_once_the_lock_is_taken_gives_it_back(
        server: Server, client: rlock.Client, name: str) -> None:
    """Another signal's handler raises while the wait goes on: CPython
    raises it as soon as the call returns, after it took the lock; the
    hold is given back and the ``with`` body never runs."""
    holder = rlock.Owner()
    assert client.lock(name).acquire(blocking=False, owner=holder)
    main = threading.get_ident()  # pytest runs tests on the main thread

    def boom(signum: int, frame: Any) -> None:
        raise Boom()

    def run() -> None:
        wait_for(lambda: numsub(server, channel(name)) >= 1,
                 what="the main thread's subscription")
        signal.pthread_kill(main, signal.SIGUSR1)  # the wait goes on
        client.lock(name).release(owner=holder)  # and takes the lock
    old = signal.signal(signal.SIGUSR1, boom)
    ran: List[int] = []
    try:
        with rlock.Client(server.url) as other:
            lock = other.lock(name, wait=30)
            t = on_thread(run)
            with pytest.raises(Boom):
                with lock:
                    ran.append(1)
            t.join()
            assert not ran
            assert not lock.check()
            assert not lock.locked()  # given back, not left renewed
    finally:
        signal.signal(signal.SIGUSR1, old)


def test_fork_during_a_wait_gives_sigint_back_to_python(
        server: Server, client: rlock.Client, name: str) -> None:
    """A thread forks while the main thread waits (SIGINT armed): in the
    child, which has no wait, Ctrl-C must raise KeyboardInterrupt again."""
    holder = rlock.Owner()
    assert client.lock(name).acquire(blocking=False, owner=holder)
    status: List[int] = []

    def fork() -> None:
        wait_for(lambda: numsub(server, channel(name)) >= 1,
                 what="the main thread's subscription")
        pid = os.fork()
        if pid == 0:  # the child: only this thread
            code = 1
            try:
                signal.pthread_kill(threading.get_ident(), signal.SIGINT)
                time.sleep(0)  # where Python runs its handler
            except KeyboardInterrupt:
                code = 0
            os._exit(code)
        status.append(os.waitpid(pid, 0)[1])
        client.lock(name).release(owner=holder)
    with rlock.Client(server.url) as other:
        lock = other.lock(name, wait=30)
        t = on_thread(fork)
        with lock:
            pass
        t.join()
    assert status and os.waitstatus_to_exitcode(status[0]) == 0


def test_sigint_as_the_lock_is_granted_gives_it_back(
        client: rlock.Client, name: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C the instant the library returned the lock (the C handler
    armed, the status OK): KeyboardInterrupt, and the hold released."""
    from rlock import _wait
    real = _wait.wait

    def wait(attempt: Any, *args: Any) -> int:
        def granted_then_sigint(w: int, box: Any) -> None:
            attempt(w, box)
            assert box[0] == 0  # the lock is free: taken
            signal.raise_signal(signal.SIGINT)
        return real(granted_then_sigint, *args)
    monkeypatch.setattr(_wait, "wait", wait)
    lock = client.lock(name)
    for enter in (lock.__enter__, lock.acquire,
                  client.multi_lock(lock, client.lock(name + "b")).acquire):
        with pytest.raises(KeyboardInterrupt):
            enter()
        assert not lock.locked() and not lock.check()
    assert not client.lock(name + "b").locked()
