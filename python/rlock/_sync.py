# SPDX-License-Identifier: BSD-3-Clause
"""Semaphores and the count-down latch of the blocking client
(rlock.Client.semaphore, .permit_expirable_semaphore, .count_down_latch).

They wait as the locks do: one library call, which Ctrl-C on the main
thread interrupts (rlock/_wait.py), and which a hold taken just before an
exception is given back from (permits released, a permit released by
its id).
"""
from __future__ import annotations

import threading
from types import TracebackType
from typing import Any, List, Optional, Type, Union

from . import _wait
from ._base import DEFAULT, answer, pick_lease, pick_wait
from ._client import Client
from ._errors import Error
from ._native import ffi, lib
from ._objects import (Named, PermitSemaphoreBase, SemaphoreBase,
                       fixed_lease, permit_id)
from ._wait import give_back

_ENOTHELD = lib.RLOCK_ENOTHELD
_ELOST = lib.RLOCK_ELOST
_BIG = 1 << 62  # past every range the library accepts, within int64_t


def count_arg(value: Any, what: str) -> int:
    """A count (permits, a latch's count) for C: an int, clamped within
    int64_t so that the library, not cffi, refuses what is out of range
    (with its message)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an int, not {type(value).__name__}")
    return max(min(value, _BIG), -_BIG)


class _Object(Named[Client]):
    """A semaphore's or latch's C object on a blocking client."""

    _client_type = Client
    _what = ""  # for messages

    def _waited(self, call: _wait.Call, wait_v: int, cancel: Any,
                took: List[bool]) -> bool:
        """One wait through _wait.blocking (`call(wait_ms, token, box)`
        makes the library call): True when it succeeded, False when the
        wait ended first (RLOCK_ELOCKED)."""
        rc = _wait.blocking(self._client, call, wait_v, cancel, took)
        return answer(rc, closed=None if cancel is not None
                      else f"{self._what} '{self._name}'")


class _Permits(_Object):
    """The permit counts of both semaphores (their C calls are named alike,
    after `_ctype`: rlock_semaphore_available, rlock_psemaphore_...)."""

    def _fn(self, call: str) -> Any:
        return getattr(lib, f"{self._ctype}_{call}")

    def available(self) -> int:
        """The permits available now (0 when never set; negative after
        add_permits took more than there were; a permit-expirable
        semaphore gives expired permits back first)."""
        return int(self._out(self._fn("available"), "int64_t *"))

    def try_set_permits(self, permits: int) -> bool:
        """Set the available permits if none were ever set; True when set,
        False when the semaphore exists (left as it is)."""
        return bool(self._out(self._fn("try_set_permits"), "int *",
                              count_arg(permits, "permits")))

    def set_permits(self, permits: int) -> None:
        """Set the permits, whatever they were: a Semaphore's available
        ones, a PermitExpirableSemaphore's total (available plus
        leased)."""
        self._do(self._fn("set_permits"), count_arg(permits, "permits"))

    def add_permits(self, delta: int) -> None:
        """Add `delta` available permits (negative takes away, also below
        zero)."""
        self._do(self._fn("add_permits"), count_arg(delta, "delta"))


class Semaphore(_Permits, SemaphoreBase[Client]):
    """A semaphore (Redisson's RSemaphore), from ``client.semaphore(name)``,
    shaped like threading.Semaphore: acquire() and release(n), and
    ``with sem:`` holds one permit.

    Its permits belong to nobody and never expire: anyone may release, and
    a process that dies holding permits takes them with it until someone
    adds them back (add_permits, set_permits). Where a holder may crash,
    use client.permit_expirable_semaphore(), whose permits come back by
    themselves.

    On the main thread Ctrl-C (SIGINT) ends a wait and raises
    KeyboardInterrupt with nothing taken; permits taken just before an
    exception are given back.
    """

    _what = "semaphore"

    def acquire(self, blocking: bool = True,
                timeout: Optional[float] = DEFAULT, *, permits: int = 1,
                wait: Optional[float] = DEFAULT,
                cancel: Optional[Any] = None) -> bool:
        """Take `permits` permits at once, waiting as threading.Semaphore
        does.

        Args:
            blocking: False tries once.
            timeout / wait: the longest wait in seconds (the same thing
                under threading's and rlock's names); None or -1 for ever.
                Default: the semaphore's own wait.
            permits: how many (1 to 2**31-1).
            cancel: an rlock.Cancel whose fire() ends the wait (Canceled).

        Returns:
            True when taken, False when not that many were available
            within the wait (nothing taken).

        Raises:
            KeyboardInterrupt (Ctrl-C on the main thread: nothing taken),
            InvalidArgument, WrongType (the key is not a semaphore),
            ConnectionError/TimeoutError, ReplicaError, Canceled, Closed.
        """
        n = count_arg(permits, "permits")
        wait_v = pick_wait(blocking, timeout, wait, self._wait)
        ptr = self._h.ptr
        took: List[bool] = []

        def call(w: int, tok: Any, box: Any) -> None:
            lib.rlock_py_semaphore_acquire(ptr, n, w, tok, box)
        try:
            return self._waited(call, wait_v, cancel, took)
        except BaseException:
            if took:
                give_back(lambda: self.release(n))
            raise

    def release(self, n: int = 1) -> None:
        """Give `n` permits back (anyone may) and wake waiters."""
        self._do(lib.rlock_semaphore_release, count_arg(n, "n"))

    def __enter__(self) -> "Semaphore":
        """Take one permit with the semaphore's own wait; Locked when that
        wait ends without one."""
        if not self.acquire():
            raise self._no_permit()
        return self

    def __exit__(self, et: Optional[Type[BaseException]],
                 ev: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self.release()

    def drain(self) -> int:
        """Take every available permit at once; returns how many there
        were."""
        return int(self._out(lib.rlock_semaphore_drain, "int64_t *"))


PermitLike = Union["Permit", str]


def _permit_id(permit: Any) -> bytes:
    return permit_id(permit, Permit, "rlock")


class Permit:
    """One permit of a permit-expirable semaphore: its id (32 hex digits,
    Redisson's form) and the semaphore it came from. A context manager:
    ``with sem.acquire() as permit:`` releases it at the end."""

    __slots__ = ("id", "semaphore")

    def __init__(self, semaphore: "PermitExpirableSemaphore",
                 id: str) -> None:
        self.semaphore = semaphore
        self.id = id

    def __repr__(self) -> str:
        return f"<rlock.Permit {self.id} of {self.semaphore.name!r}>"

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Permit) and other.id == self.id
                and other.semaphore.name == self.semaphore.name)

    def __hash__(self) -> int:
        return hash((self.semaphore.name, self.id))

    def release(self) -> None:
        """semaphore.release(this permit)."""
        self.semaphore.release(self)

    def update_lease(self, lease: float) -> None:
        """semaphore.update_lease(this permit, lease)."""
        self.semaphore.update_lease(self, lease)

    def check(self) -> bool:
        """semaphore.check(this permit)."""
        return self.semaphore.check(self)

    def lease_left(self) -> Optional[float]:
        """semaphore.lease_left(this permit)."""
        return self.semaphore.lease_left(self)

    def __enter__(self) -> "Permit":
        return self

    def __exit__(self, et: Optional[Type[BaseException]],
                 ev: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self.release()


class PermitExpirableSemaphore(_Permits, PermitSemaphoreBase[Client]):
    """A permit-expirable semaphore (Redisson's RPermitExpirableSemaphore),
    from ``client.permit_expirable_semaphore(name)``: each permit taken has
    an id and a lease, and comes back by itself when its lease runs out.

    acquire() returns a Permit (None when none came within the wait),
    taken with a fixed ``lease=`` (seconds) or, by default, renewed by the
    client's watchdog until released, so that a crashed holder's permit
    comes back one watchdog timeout later. Release it by the Permit (or
    its id, from any client). ``with sem as permit:`` takes one with the
    semaphore's own wait and lease and releases it at the end.

    A permit lost meanwhile (expired, released by someone else, the key
    deleted) is told as a lost lock is: the client's on_lost callback,
    check() raising LockLost, release() raising LockLost.

    Deadlines are stamped with the wall clock, as Redisson does: clients
    sharing a semaphore need clocks that agree to well within a lease.
    """

    _what = "a permit of semaphore"

    def __init__(self, client: Client, name: str, *,
                 wait: Optional[float] = None,
                 lease: Optional[float] = None) -> None:
        self._entered = threading.local()
        super().__init__(client, name, wait=wait, lease=lease)

    def acquire(self, blocking: bool = True,
                timeout: Optional[float] = DEFAULT,
                lease: Optional[float] = DEFAULT, *,
                wait: Optional[float] = DEFAULT,
                cancel: Optional[Any] = None) -> Optional[Permit]:
        """Take one permit.

        Args:
            blocking, timeout, wait, cancel: as Semaphore.acquire.
            lease: seconds after which the permit comes back by itself;
                None: the watchdog renews it until released. Default: the
                semaphore's own lease.

        Returns:
            The Permit, or None when none came within the wait.

        Raises:
            As Semaphore.acquire.
        """
        wait_v = pick_wait(blocking, timeout, wait, self._wait)
        lease_v = pick_lease(lease, self._lease)
        buf = ffi.new("char[]", lib.RLOCK_PERMIT_ID_LEN + 1)
        ptr = self._h.ptr
        took: List[bool] = []

        def call(w: int, tok: Any, box: Any) -> None:
            lib.rlock_py_psemaphore_acquire(buf, ptr, w, lease_v, tok, box)
        try:
            if not self._waited(call, wait_v, cancel, took):
                return None
        except BaseException:
            if took:
                give_back(lambda: self.release(ffi.string(buf).decode()))
            raise
        return Permit(self, ffi.string(buf).decode())

    def release(self, permit: PermitLike) -> None:
        """Give the permit back (by its Permit or id) and wake waiters.

        Raises:
            LockLost: this client took it, and it expired, was released by
                someone else or the key was deleted.
            NotHeld: no such permit is leased (and this client never took
                it).
            ConnectionError/TimeoutError: the client stops renewing it; it
                comes back after its lease.
        """
        self._do(lib.rlock_psemaphore_release, _permit_id(permit))

    def try_release(self, permit: PermitLike) -> bool:
        """release(), answering False instead of raising NotHeld or
        LockLost (Redisson's tryRelease)."""
        try:
            self.release(permit)
            return True
        except Error as e:
            if e.code in (_ENOTHELD, _ELOST):
                return False
            raise

    def update_lease(self, permit: PermitLike, lease: float) -> None:
        """Give the permit a fixed lease of `lease` seconds from now (a
        watchdog permit is then renewed no more). LockLost, NotHeld as
        release()."""
        ms = fixed_lease(lease, "update_lease")
        self._do(lib.rlock_psemaphore_update_lease, _permit_id(permit), ms)

    def check(self, permit: PermitLike) -> bool:
        """Whether a permit this client took is still good, answered
        locally without a round trip: True while held, False when this
        client does not hold it.

        Raises:
            LockLost: the watchdog found it gone, its lease ran out, or
                renewals failed for a whole watchdog timeout.
        """
        return self._held(lib.rlock_psemaphore_check, _permit_id(permit))

    def lease_left(self, permit: PermitLike) -> Optional[float]:
        """Seconds left on the permit's lease (one round trip); None when
        no such permit is leased."""
        try:
            return int(self._out(lib.rlock_psemaphore_lease_ms, "int64_t *",
                                 _permit_id(permit))) / 1000
        except Error as e:
            if e.code == _ENOTHELD:
                return None
            raise

    def permits(self) -> int:
        """The total: available plus leased."""
        return int(self._out(lib.rlock_psemaphore_permits, "int64_t *"))

    def __enter__(self) -> Permit:
        """Take a permit with the semaphore's own wait and lease; Locked
        when that wait ends without one. Returns the Permit."""
        permit = self.acquire()
        if permit is None:
            raise self._no_permit()
        stack = self._entered.__dict__.setdefault("stack", [])
        stack.append(permit)
        return permit

    def __exit__(self, et: Optional[Type[BaseException]],
                 ev: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        """Release the permit this thread's ``with`` took."""
        self._entered.stack.pop().release()


class CountDownLatch(_Object):
    """A count-down latch (Redisson's RCountDownLatch), from
    ``client.count_down_latch(name)``, waited on as threading.Event is:
    wait() returns True once the count is zero.

    try_set_count(n) sets it (only when it has no count), anyone may
    count_down(), and every waiter wakes when it reaches zero. Once at
    zero it can be set again. A latch never set counts 0: wait() returns
    True at once. Ctrl-C on the main thread ends wait() with
    KeyboardInterrupt.
    """

    _new = staticmethod(lib.rlock_latch_new)
    _free = staticmethod(lib.rlock_latch_free)
    _ctype = "rlock_latch"
    _what = "latch"

    def try_set_count(self, count: int) -> bool:
        """Set the count (1 to 2**63-1) if the latch has none; True when
        set, False when it had one (left as it is)."""
        return bool(self._out(lib.rlock_latch_try_set_count, "int *",
                              count_arg(count, "count")))

    def count_down(self) -> None:
        """Count down by one; at zero every waiter wakes. Nothing happens
        on a latch without a count."""
        self._do(lib.rlock_latch_count_down)

    def count(self) -> int:
        """The count now (0 when none is set)."""
        return int(self._out(lib.rlock_latch_count, "int64_t *"))

    def is_set(self) -> bool:
        """Whether the count is zero (threading.Event's name)."""
        return self.count() == 0

    def wait(self, timeout: Optional[float] = DEFAULT, *,
             wait: Optional[float] = DEFAULT,
             cancel: Optional[Any] = None) -> bool:
        """Wait until the count is zero, at most `timeout` (or `wait`)
        seconds (None or -1, the default: for ever; 0: look once).

        Returns:
            True when the count is zero, False when the wait ended first.

        Raises:
            KeyboardInterrupt (Ctrl-C on the main thread), InvalidArgument,
            WrongType, ConnectionError/TimeoutError, Canceled, Closed.
        """
        wait_v = pick_wait(True, timeout, wait, None)
        ptr = self._h.ptr

        def call(w: int, tok: Any, box: Any) -> None:
            lib.rlock_py_latch_await(ptr, w, tok, box)
        return self._waited(call, wait_v, cancel, [])

    def delete(self) -> bool:
        """Delete the latch whatever its count (its waiters return True);
        True when there was one."""
        return bool(self._out(lib.rlock_latch_delete, "int *"))


__all__ = ["Semaphore", "PermitExpirableSemaphore", "Permit",
           "CountDownLatch"]
