# SPDX-License-Identifier: BSD-3-Clause
"""rlock for asyncio: the same locks, awaited, on librlock's loop API.

    import rlock.aio

    async def main():
        async with rlock.aio.Client("redis://127.0.0.1:6379") as client:
            async with client.lock("orders"):
                ...  # held by this task

A client runs on the asyncio loop it was created in, with no thread of its
own: it watches its sockets with the loop's add_reader/add_writer, arms its
timer with call_later, and is woken from other threads with
call_soon_threadsafe (the adapter table of rlock/loop.h). Every operation
is a coroutine; thousands of acquisitions may be pending on one loop.

Names: every method that must be awaited is either one asyncio.Lock
awaits too (``acquire``) or the release that pairs with it, or its name
starts with ``a``, as ``aclose`` does: the queries are ``alocked()``,
``aheld()``, ``ahold_count()``, ``attl()``, ``ainspect()`` and
``aforce_release()`` (and the client's ``awhois()``), so that ``if lock.alocked():`` reads as the mistake
it is (a coroutine object, always true). The names they had before
(``locked()``, ...) still work when awaited, with a DeprecationWarning,
and raise TypeError in a boolean context instead of being always true.
The semaphores and the latch follow the same rule: ``acquire``,
``release`` and the latch's ``wait`` (asyncio.Event's) are awaited under
those names, the rest with an ``a`` (``aavailable()``, ``acount_down()``,
...).

Owners: by default each asyncio Task is an owner (a task that holds a lock
may acquire it again; two tasks exclude each other). Pass ``owner=`` (an
rlock.Owner) to hold across tasks. Cancelling the task that awaits an
acquisition cancels it (rlock_op_cancel): a fair waiter leaves the queue,
and a hold granted meanwhile is given back, before CancelledError
propagates.
"""
from __future__ import annotations

import asyncio
import inspect as _inspect
import threading
import warnings
import weakref
from types import TracebackType
from typing import (Any, Awaitable, Callable, ClassVar, Coroutine, Dict,
                    Generator, Generic, List, NoReturn, Optional, Tuple, Type,
                    TypeVar, Union)

from . import _base, _metrics, _sync
from ._base import (DEFAULT, OK, ClientRecord, ErrorCallback, Handle,
                    Leader, LeaderCallback, LeaderWatch, LockInfo, Owner,
                    OwnerLike, RedLockResult, _LeaderFollow, _bytes, _text,
                    acquire_options, answer, leader_of, leader_value,
                    leader_watch, lock_info, owner_number, pick_lease,
                    pick_wait, redlock_result, spin_options, swallow)
from ._clientbase import ClientBase, LogCallback, LostCallback
from ._errors import Closed, Error, InvalidArgument, error_for
from ._native import ffi, lib
from ._objects import (ElectionBase, GroupBase, LockBase, Named,
                       PermitSemaphoreBase, SemaphoreBase, SpinBase,
                       fixed_lease, members, permit_id)

__all__ = ["Client", "Lock", "FairLock", "FencedLock", "SpinLock",
           "ReadLock", "WriteLock", "ReadWriteLock", "MultiLock", "RedLock",
           "Semaphore", "PermitExpirableSemaphore", "Permit",
           "CountDownLatch", "Election"]

_READ = lib.RLOCK_LOOP_READ
_WRITE = lib.RLOCK_LOOP_WRITE
_T = TypeVar("_T")


# ---- the adapter table on asyncio ----------------------------------------
class _Adapter:
    """rlock_loop over an asyncio loop. Every entry but wake() is called by
    the library on the loop's thread."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.client: Any = None  # the rlock_client *, once made
        self.fds: Dict[int, int] = {}
        self.timer: Optional[asyncio.TimerHandle] = None
        # The table's data: kept by the adapter itself (and _live) until
        # detach(), since the library calls it as long as the C client
        # lives, whatever happens to the Python objects.
        self.handle: Any = ffi.new_handle(self)
        _live.add(self)

    def watch(self, fd: int, events: int) -> int:
        old = self.fds.get(fd, 0)
        if (old ^ events) & _READ:
            if events & _READ:
                self.loop.add_reader(fd, self._io, fd, _READ)
            else:
                self.loop.remove_reader(fd)
        if (old ^ events) & _WRITE:
            if events & _WRITE:
                self.loop.add_writer(fd, self._io, fd, _WRITE)
            else:
                self.loop.remove_writer(fd)
        if events:
            self.fds[fd] = events
        else:
            self.fds.pop(fd, None)
        return 0

    def _io(self, fd: int, events: int) -> None:
        if self.client is not None:
            lib.rlock_loop_io(self.client, fd, events)

    def set_timer(self, after_ms: int) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if after_ms >= 0:
            self.timer = self.loop.call_later(after_ms / 1000, self._fire)

    def _fire(self) -> None:
        self.timer = None
        if self.client is not None:
            lib.rlock_loop_timer(self.client)

    def wake(self) -> None:
        try:
            self.loop.call_soon_threadsafe(self._wake)
        except RuntimeError:  # the loop is closed: nothing to wake
            pass

    def _wake(self) -> None:
        if self.client is not None:
            lib.rlock_loop_wake(self.client)

    def detach(self) -> None:
        for fd, ev in list(self.fds.items()):
            if ev & _READ:
                self.loop.remove_reader(fd)
            if ev & _WRITE:
                self.loop.remove_writer(fd)
        self.fds.clear()
        self.set_timer(-1)
        self.client = None
        _live.discard(self)


_live: "set[_Adapter]" = set()  # adapters whose C client lives


@ffi.def_extern(onerror=swallow, error=-1)
def _rlock_loop_watch(data: Any, fd: int, events: int) -> int:
    return int(ffi.from_handle(data).watch(fd, events))


@ffi.def_extern(onerror=swallow)
def _rlock_loop_timer(data: Any, after_ms: int) -> None:
    ffi.from_handle(data).set_timer(after_ms)


@ffi.def_extern(onerror=swallow)
def _rlock_loop_wake(data: Any) -> None:
    ffi.from_handle(data).wake()


@ffi.def_extern(onerror=swallow)
def _rlock_loop_detach(data: Any) -> None:
    ffi.from_handle(data).detach()


# ---- operations ----------------------------------------------------------
class _Op:
    """One pending operation: its future, and its handle for C (kept alive
    by the client's table until the callback)."""

    __slots__ = ("client", "fut", "handle", "cop", "kind", "__weakref__")

    def __init__(self, client: "Client", kind: str) -> None:
        self.client = client
        self.kind = kind
        self.fut: "asyncio.Future[Tuple[int, Any, str]]" = \
            client._loop.create_future()
        self.handle = ffi.new_handle(self)
        self.cop: Any = None

    def finish(self, rc: int, value: Any) -> None:
        msg = ""
        if rc != OK:
            last = lib.rlock_error_last()
            msg = (ffi.string(last.message).decode("utf-8", "replace")
                   if last.code == rc else
                   ffi.string(lib.rlock_strerror(rc)).decode())
        self.client._pending.pop(id(self), None)
        if not self.fut.done():
            self.fut.set_result((rc, value, msg))


@ffi.def_extern(onerror=swallow)
def _rlock_async_done(arg: Any, rc: int, value: int) -> None:
    ffi.from_handle(arg).finish(rc, int(value))


@ffi.def_extern(onerror=swallow)
def _rlock_info_done(arg: Any, rc: int, info: Any) -> None:
    op = ffi.from_handle(arg)
    try:
        v = lock_info(op.kind, info) if rc == OK else None
    finally:
        lib.rlock_lock_info_free(info)
    op.finish(rc, v)


@ffi.def_extern(onerror=swallow)
def _rlock_leader_done(arg: Any, rc: int, leader: Any) -> None:
    op = ffi.from_handle(arg)
    try:
        v = leader_of(leader) if rc == OK else None
    finally:
        lib.rlock_leader_free(leader)
    op.finish(rc, v)


@ffi.def_extern(onerror=swallow)
def _rlock_record_done(arg: Any, rc: int, rec: Any) -> None:
    # The record is borrowed for the callback: copied here.
    ffi.from_handle(arg).finish(
        rc, _base.client_record(rec) if rec != ffi.NULL else None)


@ffi.def_extern(onerror=swallow)
def _rlock_redlock_done(arg: Any, rc: int, validity: int, res: Any) -> None:
    op = ffi.from_handle(arg)
    try:
        v = redlock_result(res)
    finally:
        lib.rlock_redlock_result_free(res)
    op.finish(rc, v)


def _loop_post(loop: asyncio.AbstractEventLoop) -> Callable[..., None]:
    """How a loop client runs its callbacks (lost locks, log messages,
    leader changes): they come on the loop's thread, inside a library
    call, and are re-dispatched with call_soon (a coroutine function's
    result becomes a task)."""
    def post(fn: Callable[..., Any], *args: Any) -> None:
        def run() -> None:
            r = fn(*args)
            if _inspect.isawaitable(r):
                asyncio.ensure_future(r)
        loop.call_soon(run)
    return post


_leaked: List[Any] = []

_task_owners: "weakref.WeakKeyDictionary[asyncio.Task[Any], Owner]" = \
    weakref.WeakKeyDictionary()


def _owner(owner: OwnerLike) -> int:
    """The owner number: `owner`'s, else the current task's own."""
    if owner is not None:
        return owner_number(owner)
    task = asyncio.current_task()
    if task is None:
        raise InvalidArgument("no current asyncio task to own the hold: "
                              "pass owner=rlock.Owner()")
    return _owner_of(task).number


def _owner_of(task: "asyncio.Task[Any]") -> Owner:
    o = _task_owners.get(task)
    if o is None:
        o = _task_owners[task] = Owner()
    return o


def task_owner(task: Optional["asyncio.Task[Any]"] = None) -> Owner:
    """The Owner that stands for `task` (default: the current task)."""
    t = task or asyncio.current_task()
    if t is None:
        raise InvalidArgument("no current asyncio task")
    return _owner_of(t)


class Client(ClientBase):
    """A client driven by the running asyncio loop (librlock's loop API).

    Create it inside a coroutine; it belongs to that loop and must be used
    and closed on it. Arguments and keywords are rlock.Client's (URL,
    timeouts in seconds, watchdog, TLS, user and password, pub/sub mode,
    ``on_lost``, ``log``); ``on_lost`` and ``log`` run as loop callbacks
    (a coroutine function's coroutine becomes a task). Writes are not
    confirmed on replicas (the loop API does not do it).

    Raises:
        InvalidArgument: a bad URL or option, or a topology the loop API
            does not support.
        RuntimeError: no running loop.
    """

    def _open(self, url: Optional[str], kw: Dict[str, Any],
              on_lost: Optional[LostCallback],
              log: Optional[LogCallback]) -> None:
        try:
            self._loop = asyncio.get_running_loop()
        except RuntimeError:
            raise RuntimeError("rlock.aio.Client() must be created in a "
                               "coroutine, on its running asyncio loop"
                               ) from None
        self._ptr: Any = None
        self._closed = False
        # metrics_text may run on another thread (a collector's scrape):
        # it and the free of the C client exclude each other.
        self._metrics_mu = threading.Lock()
        self._pending: Dict[int, _Op] = {}
        self._handles: Dict[int, Handle] = {}
        # Leader watches: freed before the client (their C objects need it).
        self._watches: "weakref.WeakSet[Handle]" = weakref.WeakSet()
        self._adapter = _Adapter(self._loop)
        cfg = self._config(url, kw, on_lost, log, _loop_post(self._loop))
        table = ffi.new("rlock_loop *")
        table.version = lib.RLOCK_LOOP_VERSION
        table.data = self._adapter.handle
        table.watch = lib._rlock_loop_watch
        table.timer = lib._rlock_loop_timer
        table.wake = lib._rlock_loop_wake
        table.detach = lib._rlock_loop_detach
        p = ffi.new("rlock_client **")
        rc = lib.rlock_client_new_loop(p, cfg, table)
        if rc != OK:
            e = error_for(rc)
            self._adapter.detach()
            raise e
        self._ptr = p[0]
        self._adapter.client = self._ptr
        self.url = url

    def _check(self) -> None:
        if self._closed:
            raise Closed("the client is closed")

    def _call(self, fn: Callable[..., _T], *args: Any) -> _T:
        """fn(*args) on the live client (Closed once closed)."""
        self._check()
        return fn(*args)

    def _track(self, h: Handle) -> None:
        self._check()
        self._handles[id(h)] = h

    def _untrack(self, h: Handle) -> None:
        self._handles.pop(id(h), None)
        if not self._closed:
            h.free()

    def close(self) -> None:
        """Close the client (on its loop's thread): operations still pending
        end with Closed, the connections close, lock objects stop working.
        Locks still held expire with their lease. Again: nothing."""
        if self._closed:
            return
        for w in list(self._watches):
            w.free()
        with self._metrics_mu:
            self._closed = True
            rc = lib.rlock_client_free(self._ptr)
            if rc != OK:
                self._closed = False
        if rc != OK:
            raise error_for(rc)
        self._ptr = None
        handles = list(self._handles.values())
        self._handles.clear()
        for h in reversed(handles):
            h.free()

    def __del__(self) -> None:
        # Dropped without close(): free it if this is its loop's thread
        # (the library allows no other); else it stays (so do its
        # adapter and callbacks, which the library may still call).
        if getattr(self, "_closed", True) or self._ptr is None:
            return
        try:
            if asyncio.get_running_loop() is self._loop:
                self.close()
                return
        except RuntimeError:
            pass
        _leaked.append((self._userdata, self._callbacks))

    async def aclose(self) -> None:
        """close(), awaitable."""
        self.close()

    @property
    def closed(self) -> bool:
        """Whether close() was called."""
        return self._closed

    async def __aenter__(self) -> "Client":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<rlock.aio.Client {self.url or 'redis://127.0.0.1:6379'}" \
               f"{' (closed)' if self._closed else ''}>"

    def owner_field(self, owner: OwnerLike = None) -> str:
        """The owner field this client writes for `owner` (default: the
        current task)."""
        return f"{self.id}:{_owner(owner)}"

    @property
    def pending(self) -> int:
        """How many operations are pending on this client now."""
        return len(self._pending)

    async def awhois(self, owner: str) -> Optional[ClientRecord]:
        """rlock.Client.whois() on the loop: who is behind an owner field
        (a Holder's or a Waiter's ``owner``) or a client id, read from the
        server (one GET, rlock_client_whois_async): its ClientRecord, or
        None when there is none (a Redisson client, an rlock client whose
        ``registry_period`` is 0, or one gone for a while). Awaited to the
        end even when the task is cancelled meanwhile (then
        CancelledError).

        Raises:
            InvalidArgument: an owner that does not start with a client id.
            TypeError: an owner that is not a str.
            Closed, ConnectionError, ...: as the other queries.
        """
        b = _bytes(owner, "owner")
        rec: Optional[ClientRecord] = await self._result(
            "whois", lib.rlock_client_whois_async, self._ptr, b,
            lib._rlock_record_done)
        return rec

    def metrics_text(self, openmetrics: bool = False) -> str:
        """rlock.Client.metrics_text(); from any thread."""
        with self._metrics_mu:
            self._check()
            return _metrics.metrics_text(self._ptr, openmetrics)

    def _start(self, kind: str, fn: Callable[..., int], *args: Any,
               with_op: bool = False) -> _Op:
        self._check()
        op = _Op(self, kind)
        if with_op:
            opp = ffi.new("rlock_op **")
            rc = fn(*args, op.handle, opp)
            op.cop = opp[0] if rc == OK else None
        else:
            rc = fn(*args, op.handle)
        if rc != OK:
            raise error_for(rc)
        self._pending[id(op)] = op
        return op

    async def _result(self, kind: str, fn: Callable[..., int],
                      *args: Any) -> Any:
        """An operation that is not canceled (a release, a query): its
        value, else its status's exception."""
        rc, value, msg = await _settle(self._start(kind, fn, *args))
        if rc != OK:
            raise error_for(rc, msg)
        return value

    # ---- lock objects -----------------------------------------------------
    # Every lock takes `wait` and `lease` (seconds; None: for ever, and
    # renewed by the watchdog): its own, as rlock.Client's locks.
    def lock(self, name: str, *, wait: Optional[float] = None,
             lease: Optional[float] = None) -> "Lock":
        """A reentrant lock (RLock) named `name`. No I/O."""
        return Lock(self, name, wait=wait, lease=lease)

    def fair_lock(self, name: str, *, wait: Optional[float] = None,
                  lease: Optional[float] = None) -> "FairLock":
        """A fair lock (RFairLock)."""
        return FairLock(self, name, wait=wait, lease=lease)

    def nonreentrant_lock(self, name: str, *, wait: Optional[float] = None,
                          lease: Optional[float] = None
                          ) -> "NonReentrantLock":
        """A non-reentrant lock (Redisson 4.4's RedissonNonReentrantLock):
        the holder acquiring it again gets AlreadyHeld at once (as
        threading.Lock would deadlock instead)."""
        return NonReentrantLock(self, name, wait=wait, lease=lease)

    def nonreentrant_fair_lock(self, name: str, *,
                               wait: Optional[float] = None,
                               lease: Optional[float] = None
                               ) -> "NonReentrantFairLock":
        """A non-reentrant fair lock (RedissonNonReentrantFairLock)."""
        return NonReentrantFairLock(self, name, wait=wait, lease=lease)

    def fenced_lock(self, name: str, *, wait: Optional[float] = None,
                    lease: Optional[float] = None) -> "FencedLock":
        """A fenced lock (RFencedLock), with ``.token``."""
        return FencedLock(self, name, wait=wait, lease=lease)

    def election(self, name: str) -> "Election":
        """The leader election `name` (rlock.Client.election). No I/O."""
        return Election(self, name)

    def spin_lock(self, name: str, *, backoff: str = "exponential",
                  initial_delay: Optional[float] = None,
                  max_delay: Optional[float] = None,
                  multiplier: Optional[float] = None,
                  jitter: Optional[bool] = None,
                  delay: Optional[float] = None,
                  wait: Optional[float] = None,
                  lease: Optional[float] = None) -> "SpinLock":
        """A spin lock (RSpinLock), with rlock.Client.spin_lock's
        back-off keywords."""
        return SpinLock(self, name, spin_options(
            backoff, initial_delay, max_delay, multiplier, jitter, delay),
            wait=wait, lease=lease)

    def read_write_lock(self, name: str, *, wait: Optional[float] = None,
                        lease: Optional[float] = None) -> "ReadWriteLock":
        """A read-write lock: ``.read_lock()``, ``.write_lock()``."""
        return ReadWriteLock(self, name, wait=wait, lease=lease)

    def multi_lock(self, *locks: "Lock", wait: Optional[float] = None,
                   lease: Optional[float] = None) -> "MultiLock":
        """All of `locks` or none (members of loop clients on this loop)."""
        return MultiLock(*locks, wait=wait, lease=lease)

    def red_lock(self, *locks: "Lock", wait: Optional[float] = None,
                 lease: Optional[float] = None) -> "RedLock":
        """A quorum lock over reentrant locks of several loop clients."""
        return RedLock(*locks, wait=wait, lease=lease)

    def semaphore(self, name: str, *,
                  wait: Optional[float] = None) -> "Semaphore":
        """A semaphore (RSemaphore); its permits never expire. No I/O."""
        return Semaphore(self, name, wait=wait)

    def permit_expirable_semaphore(
            self, name: str, *, wait: Optional[float] = None,
            lease: Optional[float] = None) -> "PermitExpirableSemaphore":
        """A permit-expirable semaphore (RPermitExpirableSemaphore). No
        I/O."""
        return PermitExpirableSemaphore(self, name, wait=wait, lease=lease)

    def count_down_latch(self, name: str) -> "CountDownLatch":
        """A count-down latch (RCountDownLatch). No I/O."""
        return CountDownLatch(self, name)


async def _settle(op: _Op) -> Tuple[int, Any, str]:
    """Await an operation that cannot be canceled (releases, queries):
    a cancelled task still waits for it to end, then is cancelled."""
    cancelled = False
    while True:
        try:
            r = await asyncio.shield(op.fut)
            break
        except asyncio.CancelledError:
            if op.fut.done():
                r = op.fut.result()
                cancelled = True
                break
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError()
    return r


async def _acquisition(op: _Op,
                       give_back: Callable[[], Awaitable[Any]]
                       ) -> Tuple[int, Any, str]:
    """Await an acquisition. A cancelled task cancels it (rlock_op_cancel)
    and waits for its end; a hold granted anyway is given back
    (give_back()) before CancelledError propagates."""
    try:
        return await asyncio.shield(op.fut)
    except asyncio.CancelledError:
        if not op.fut.done() and op.cop is not None:
            lib.rlock_op_cancel(op.cop)
        while not op.fut.done():
            try:
                await asyncio.shield(op.fut)
            except asyncio.CancelledError:
                pass
        if op.fut.result()[0] == OK:
            try:
                await asyncio.shield(give_back())
            except Exception:  # pragma: no cover - best effort
                pass
        raise




class _Deprecated(Generic[_T]):
    """What a query's old name returns: its coroutine, to await as
    before, but refusing a boolean context (``if lock.locked():``, always
    true for a coroutine) with TypeError."""

    __slots__ = ("_coro", "_name")

    def __init__(self, coro: Coroutine[Any, Any, _T], name: str) -> None:
        self._coro = coro
        self._name = name

    def __await__(self) -> Generator[Any, None, _T]:
        return self._coro.__await__()

    def __bool__(self) -> NoReturn:
        self._coro.close()
        raise TypeError(f"lock.{self._name}() is a coroutine, always true "
                        f"unawaited: write 'await lock.a{self._name}()'")


def _deprecated(coro: Coroutine[Any, Any, _T], name: str) -> _Deprecated[_T]:
    warnings.warn(f"rlock.aio: lock.{name}() is deprecated, use "
                  f"'await lock.a{name}()' (the name says it is awaited)",
                  DeprecationWarning, stacklevel=3)
    return _Deprecated(coro, name)


class _OnLoop:
    """The asyncio side of the objects of _objects.py: their package in
    messages and reprs, and owners that default to the current task."""

    _api: ClassVar[str] = "rlock.aio"
    _own: Callable[[Any], int] = staticmethod(_owner)
    _client_type: ClassVar[type] = Client

    async def _value(self: Any, kind: str, fn: Callable[..., int], *args: Any,
                     done: Any = lib._rlock_async_done) -> Any:
        """fn(ptr, *args, done)'s value (a query, a release), else the
        status's exception."""
        return await self._client._result(kind, fn, self._h.ptr, *args, done)


class Lock(_OnLoop, LockBase[Client]):
    """A reentrant lock (RLock) of an aio.Client: ``async with lock:``
    holds it for the current task; ``await lock.acquire()``, ``await
    lock.release()``; the queries are coroutines named with an ``a``
    (``await lock.alocked()``). ``client.lock(name, wait=, lease=)``
    gives it a wait and a lease of its own, as rlock.Client.lock does."""

    async def acquire(self, blocking: bool = True,
                      timeout: Optional[float] = DEFAULT,
                      lease: Optional[float] = DEFAULT, *,
                      wait: Optional[float] = DEFAULT,
                      owner: OwnerLike = None) -> bool:
        """Acquire for the current task (or `owner`): rlock.Lock.acquire's
        arguments and answers (``timeout``/``wait``: the wait, None or -1
        for ever; by default the lock's own wait and lease). Cancelling
        the awaiting task cancels the acquisition (a fair waiter leaves
        the queue)."""
        wait_v = pick_wait(blocking, timeout, wait, self._wait)
        lease_v = pick_lease(lease, self._lease)
        own = _owner(owner)
        op = self._client._start("acquire", lib.rlock_lock_acquire_async,
                                 self._h.ptr,
                                 acquire_options(lease_v, own, wait_v),
                                 lib._rlock_async_done, with_op=True)
        rc, value, msg = await _acquisition(
            op, lambda: self.release(owner=Owner(own)))
        got = answer(rc, msg)
        if got and self._wants_token:
            self._got_token(own, int(value))
        return got

    def _got_token(self, own: int, token: int) -> None:
        pass

    async def release(self, *, owner: OwnerLike = None) -> None:
        """Release one hold of the current task (or `owner`).

        Raises:
            NotHeld, LockLost, ConnectionError... as rlock.Lock.release.
        """
        await self._value("release", lib.rlock_lock_release_async,
                          _owner(owner))

    async def __aenter__(self) -> "Lock":
        """Acquire with the lock's own wait and lease; Locked when that
        wait ends without it."""
        if not await self.acquire():
            raise self._not_acquired()
        return self

    async def __aexit__(self, et: Optional[Type[BaseException]],
                        ev: Optional[BaseException],
                        tb: Optional[TracebackType]) -> None:
        await self.release()

    async def alocked(self) -> bool:
        """Whether anyone holds the lock."""
        return bool(await self._value("locked",
                                      lib.rlock_lock_is_locked_async))

    async def ahold_count(self, owner: OwnerLike = None) -> int:
        """The hold count of the current task (or `owner`)."""
        return int(await self._value("holds",
                                     lib.rlock_lock_hold_count_async,
                                     _owner(owner)))

    async def aheld(self, owner: OwnerLike = None) -> bool:
        """Whether the current task (or `owner`) holds it."""
        return await self.ahold_count(owner) > 0

    async def aextend(self, lease: float, owner: OwnerLike = None) -> None:
        """Give the current task's (or `owner`'s) fixed-lease hold a fresh
        lease of `lease` seconds from now (the sync Lock.extend's rules)."""
        ms = fixed_lease(lease, "extend")
        await self._value("extend", lib.rlock_lock_extend_async,
                          _owner(owner), ms)

    async def areacquire(self, owner: OwnerLike = None) -> None:
        """redis-py's ``reacquire()``: ``await aextend(lock.lease)``, the
        lock's own lease (the sync Lock.reacquire's rules)."""
        await self.aextend(self._own_lease("a"), owner)

    async def attl(self) -> Optional[float]:
        """Seconds left on the lease, None when not locked."""
        ms = int(await self._value("ttl", lib.rlock_lock_ttl_async))
        return None if ms < 0 else ms / 1000

    async def aforce_release(self) -> bool:
        """Delete the lock whoever holds it; True when there was one."""
        return bool(await self._value("force",
                                      lib.rlock_lock_force_release_async))

    async def ainspect(self) -> LockInfo:
        """The lock's whole state in one atomic step."""
        info: LockInfo = await self._value(self._name,
                                           lib.rlock_lock_inspect_async,
                                           done=lib._rlock_info_done)
        return info

    # The queries' names before the ``a`` prefix: deprecated.
    def locked(self) -> _Deprecated[bool]:
        """Deprecated: ``await lock.alocked()``."""
        return _deprecated(self.alocked(), "locked")

    def hold_count(self, owner: OwnerLike = None) -> _Deprecated[int]:
        """Deprecated: ``await lock.ahold_count()``."""
        return _deprecated(self.ahold_count(owner), "hold_count")

    def held(self, owner: OwnerLike = None) -> _Deprecated[bool]:
        """Deprecated: ``await lock.aheld()``."""
        return _deprecated(self.aheld(owner), "held")

    def ttl(self) -> _Deprecated[Optional[float]]:
        """Deprecated: ``await lock.attl()``."""
        return _deprecated(self.attl(), "ttl")

    def force_release(self) -> _Deprecated[bool]:
        """Deprecated: ``await lock.aforce_release()``."""
        return _deprecated(self.aforce_release(), "force_release")

    def inspect(self) -> _Deprecated[LockInfo]:
        """Deprecated: ``await lock.ainspect()``."""
        return _deprecated(self.ainspect(), "inspect")

    def check(self, owner: OwnerLike = None) -> bool:
        """Local check of the current task's (or `owner`'s) hold, no round
        trip: True held, False not held; LockLost when lost."""
        return self._held(lib.rlock_lock_check_owner, _owner(owner))


class FairLock(Lock):
    """A fair lock (RFairLock) of an aio.Client."""

    kind = "fair"


class NonReentrantLock(Lock):
    """A non-reentrant lock (Redisson 4.4's RedissonNonReentrantLock): the
    lock's layout, but the holder acquiring it again gets AlreadyHeld at
    once, whatever the wait."""

    kind = "nonreentrant"


class NonReentrantFairLock(FairLock):
    """A non-reentrant fair lock (RedissonNonReentrantFairLock)."""

    kind = "nonreentrant-fair"


class FencedLock(Lock):
    """A fenced lock (RFencedLock) of an aio.Client."""

    kind = "fenced"
    _wants_token = True

    def __init__(self, client: Client, name: str, *,
                 wait: Optional[float] = None,
                 lease: Optional[float] = None) -> None:
        super().__init__(client, name, wait=wait, lease=lease)
        self._tokens: Dict[int, int] = {}

    def _got_token(self, own: int, token: int) -> None:
        self._tokens[own] = token

    @property
    def token(self) -> Optional[int]:
        """The fencing token of the current task's latest acquisition
        through this object (None before it)."""
        return self._tokens.get(_owner(None))

    def token_of(self, owner: OwnerLike) -> Optional[int]:
        """The fencing token of `owner`'s latest acquisition."""
        return self._tokens.get(_owner(owner))


class SpinLock(SpinBase[Client], Lock):
    """A spin lock (RSpinLock) of an aio.Client."""


class ReadLock(Lock):
    """The read half of a read-write lock."""

    kind = "read"


class WriteLock(Lock):
    """The write half of a read-write lock."""

    kind = "write"


class ReadWriteLock:
    """A read-write lock (RReadWriteLock) of an aio.Client."""

    def __init__(self, client: Client, name: str, *,
                 wait: Optional[float] = None,
                 lease: Optional[float] = None) -> None:
        self._read = ReadLock(client, name, wait=wait, lease=lease)
        self._write = WriteLock(client, name, wait=wait, lease=lease)
        self.name = name

    def read_lock(self) -> ReadLock:
        """The read half."""
        return self._read

    def write_lock(self) -> WriteLock:
        """The write half."""
        return self._write


class _Group(GroupBase):
    """What MultiLock and RedLock share on a loop client: `_acquire_async`
    and `_release_async` with `_done`, their callback."""

    _acquire_async: Callable[..., int]
    _done: Any = lib._rlock_async_done
    _kind = ""

    def __init__(self, *locks: Lock, wait: Optional[float] = None,
                 lease: Optional[float] = None) -> None:
        ms = members(locks, Lock, self._what, "rlock.aio lock")
        self._client: Optional[Client] = ms[0].client if ms else None
        self._open(ms, wait, lease)

    def _call(self, fn: Callable[..., _T], *args: Any) -> _T:
        return fn(*args)

    @property
    def locks(self) -> Tuple[Lock, ...]:
        """The members, in order."""
        return tuple(self._locks)

    def _owner_client(self) -> Client:
        for m in self._locks:
            m.client._check()
        assert self._client is not None
        return self._client

    async def __aenter__(self) -> "_Group":
        """Acquire with the group's own wait and lease; Locked when that
        wait ends without it."""
        if not await self.acquire():
            raise self._not_acquired()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.release()

    async def acquire(self, blocking: bool = True,
                      timeout: Optional[float] = DEFAULT,
                      lease: Optional[float] = DEFAULT, *,
                      wait: Optional[float] = DEFAULT,
                      owner: OwnerLike = None) -> bool:
        """Acquire for the current task (or `owner`): every member (a
        MultiLock), a quorum (a RedLock)."""
        wait_v = pick_wait(blocking, timeout, wait, self._wait)
        lease_v = pick_lease(lease, self._lease)
        own = _owner(owner)
        op = self._owner_client()._start(
            self._kind, self._acquire_async, self._h.ptr,
            acquire_options(lease_v, own, wait_v), self._done, with_op=True)
        rc, value, msg = await _acquisition(
            op, lambda: self.release(owner=Owner(own)))
        self._got(value)
        return answer(rc, msg)

    def _got(self, value: Any) -> None:
        pass

    async def _release(self, fn: Callable[..., int],
                       owner: OwnerLike) -> None:
        await self._owner_client()._result(
            self._kind + "-release", fn, self._h.ptr, _owner(owner),
            self._done)

    async def release(self, *, owner: OwnerLike = None) -> None:
        raise NotImplementedError


class MultiLock(_Group):
    """All of several locks or none, for asyncio (rlock.MultiLock's
    rules; members of loop clients on this loop)."""

    _new = staticmethod(lib.rlock_multilock_new)
    _free = staticmethod(lib.rlock_multilock_free)
    _acquire_async = staticmethod(lib.rlock_multilock_acquire_async)
    _what = "MultiLock"
    _kind = "multi"

    async def release(self, *, owner: OwnerLike = None) -> None:
        """Release one hold of every member."""
        await self._release(lib.rlock_multilock_release_async, owner)


class RedLock(_Group):
    """A quorum lock over reentrant locks of several loop clients on this
    loop; ``last_result`` tells each member's outcome."""

    _new = staticmethod(lib.rlock_redlock_new)
    _free = staticmethod(lib.rlock_redlock_free)
    _acquire_async = staticmethod(lib.rlock_redlock_acquire_async_result)
    _done = lib._rlock_redlock_done
    _what = "RedLock"
    _kind = "redlock"
    last_result: Optional[RedLockResult] = None

    def _got(self, value: Any) -> None:
        self.last_result = value

    async def release(self, *, owner: OwnerLike = None) -> None:
        """Release the owner's holds on every member."""
        await self._release(lib.rlock_redlock_release_async_result, owner)


# ---- semaphores and the count-down latch -----------------------------------
@ffi.def_extern(onerror=swallow)
def _rlock_permit_done(arg: Any, rc: int, pid: Any) -> None:
    ffi.from_handle(arg).finish(rc, _text(pid) if rc == OK else None)


class _Permits(_OnLoop):
    """The permit counts of both semaphores, awaited (rlock.Semaphore's
    and rlock.PermitExpirableSemaphore's rules; their C calls are named
    alike, after `_ctype`)."""

    _ctype: str

    async def _count(self, call: str, *args: Any) -> Any:
        fn = getattr(lib, f"{self._ctype}_{call}_async")
        return await self._value(call, fn, *args)

    async def aavailable(self) -> int:
        """The permits available now."""
        return int(await self._count("available"))

    async def atry_set_permits(self, permits: int) -> bool:
        """Set the permits if none were ever set; True when set."""
        return bool(await self._count("try_set_permits",
                                      _sync.count_arg(permits, "permits")))

    async def aset_permits(self, permits: int) -> None:
        """Set the permits, whatever they were: a Semaphore's available
        ones, a PermitExpirableSemaphore's total (available plus
        leased)."""
        await self._count("set_permits", _sync.count_arg(permits, "permits"))

    async def aadd_permits(self, delta: int) -> None:
        """Add `delta` available permits (negative takes away)."""
        await self._count("add_permits", _sync.count_arg(delta, "delta"))


class Semaphore(_Permits, SemaphoreBase[Client]):
    """A semaphore (RSemaphore) of an aio.Client, shaped like
    asyncio.Semaphore but awaited throughout: ``async with sem:`` holds a
    permit; ``await sem.acquire(permits=n)``, ``await sem.release(n)``;
    the other calls are coroutines named with an ``a``. Its permits never
    expire (rlock.Semaphore says why that matters). Cancelling the task
    that awaits acquire() cancels the wait; permits granted meanwhile are
    given back."""

    async def acquire(self, blocking: bool = True,
                      timeout: Optional[float] = DEFAULT, *,
                      permits: int = 1,
                      wait: Optional[float] = DEFAULT) -> bool:
        """Take `permits` permits (rlock.Semaphore.acquire's arguments and
        answers)."""
        n = _sync.count_arg(permits, "permits")
        w = pick_wait(blocking, timeout, wait, self._wait)
        op = self._client._start("acquire", lib.rlock_semaphore_acquire_async,
                                 self._h.ptr, n, w, lib._rlock_async_done,
                                 with_op=True)
        rc, _, msg = await _acquisition(op, lambda: self.release(n))
        return answer(rc, msg)

    async def release(self, n: int = 1) -> None:
        """Give `n` permits back."""
        await self._value("release", lib.rlock_semaphore_release_async,
                          _sync.count_arg(n, "n"))

    async def __aenter__(self) -> "Semaphore":
        if not await self.acquire():
            raise self._no_permit()
        return self

    async def __aexit__(self, et: Optional[Type[BaseException]],
                        ev: Optional[BaseException],
                        tb: Optional[TracebackType]) -> None:
        await self.release()

    async def adrain(self) -> int:
        """Take every available permit; returns how many."""
        return int(await self._value("drain",
                                     lib.rlock_semaphore_drain_async))


def _permit_id(permit: Any) -> bytes:
    return permit_id(permit, Permit, "rlock.aio")


class Permit:
    """One permit of an aio PermitExpirableSemaphore: its id and
    semaphore; ``async with`` releases it at the end."""

    __slots__ = ("id", "semaphore")

    def __init__(self, semaphore: "PermitExpirableSemaphore",
                 id: str) -> None:
        self.semaphore = semaphore
        self.id = id

    def __repr__(self) -> str:
        return f"<rlock.aio.Permit {self.id} of {self.semaphore.name!r}>"

    async def release(self) -> None:
        """await semaphore.release(this permit)."""
        await self.semaphore.release(self)

    async def aupdate_lease(self, lease: float) -> None:
        """await semaphore.aupdate_lease(this permit, lease)."""
        await self.semaphore.aupdate_lease(self, lease)

    def check(self) -> bool:
        """semaphore.check(this permit), locally."""
        return self.semaphore.check(self)

    async def __aenter__(self) -> "Permit":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.release()


class PermitExpirableSemaphore(_Permits, PermitSemaphoreBase[Client]):
    """A permit-expirable semaphore (RPermitExpirableSemaphore) of an
    aio.Client: ``await sem.acquire()`` returns a Permit (or None), taken
    with ``lease=`` seconds or renewed by the watchdog on the loop;
    ``await sem.release(permit)``; ``async with sem as permit:``. The
    rules are rlock.PermitExpirableSemaphore's; cancelling the task that
    awaits acquire() cancels the wait, and a permit granted meanwhile is
    released."""

    def __init__(self, client: Client, name: str, *,
                 wait: Optional[float] = None,
                 lease: Optional[float] = None) -> None:
        # Each task's permits from ``async with``, innermost last.
        self._entered: "weakref.WeakKeyDictionary[Any, List[Permit]]" = \
            weakref.WeakKeyDictionary()
        super().__init__(client, name, wait=wait, lease=lease)

    async def acquire(self, blocking: bool = True,
                      timeout: Optional[float] = DEFAULT,
                      lease: Optional[float] = DEFAULT, *,
                      wait: Optional[float] = DEFAULT) -> Optional[Permit]:
        """Take one permit: the Permit, or None when none came within the
        wait (rlock.PermitExpirableSemaphore.acquire's arguments)."""
        w = pick_wait(blocking, timeout, wait, self._wait)
        ls = pick_lease(lease, self._lease)
        op = self._client._start("acquire",
                                 lib.rlock_psemaphore_acquire_async,
                                 self._h.ptr, w, ls, lib._rlock_permit_done,
                                 with_op=True)

        def give_back() -> Awaitable[Any]:
            return self.release(str(op.fut.result()[1]))
        rc, pid, msg = await _acquisition(op, give_back)
        if not answer(rc, msg):
            return None
        return Permit(self, str(pid))

    async def release(self, permit: Union[Permit, str]) -> None:
        """Give the permit back (LockLost, NotHeld as the sync one's)."""
        await self._value("release", lib.rlock_psemaphore_release_async,
                          _permit_id(permit))

    async def aupdate_lease(self, permit: Union[Permit, str],
                            lease: float) -> None:
        """Give the permit a fixed lease of `lease` seconds from now."""
        ms = fixed_lease(lease, "update_lease")
        await self._value("update", lib.rlock_psemaphore_update_lease_async,
                          _permit_id(permit), ms)

    def check(self, permit: Union[Permit, str]) -> bool:
        """Local check of a permit this client took: True held, False not
        held here; LockLost when lost."""
        return self._held(lib.rlock_psemaphore_check, _permit_id(permit))

    async def alease_left(self, permit: Union[Permit, str]
                          ) -> Optional[float]:
        """Seconds left on the permit's lease; None when not leased."""
        try:
            ms = await self._value("lease",
                                   lib.rlock_psemaphore_lease_ms_async,
                                   _permit_id(permit))
        except Error as e:
            if e.code == lib.RLOCK_ENOTHELD:
                return None
            raise
        return int(ms) / 1000

    async def apermits(self) -> int:
        """The total: available plus leased."""
        return int(await self._value("permits",
                                     lib.rlock_psemaphore_permits_async))

    def _task(self) -> "asyncio.Task[Any]":
        task = asyncio.current_task()
        if task is None:
            raise InvalidArgument("async with needs a current asyncio task")
        return task

    async def __aenter__(self) -> Permit:
        """Take a permit with the semaphore's own wait and lease; Locked
        when that wait ends without one."""
        permit = await self.acquire()
        if permit is None:
            raise self._no_permit()
        self._entered.setdefault(self._task(), []).append(permit)
        return permit

    async def __aexit__(self, *exc: Any) -> None:
        """Release the permit this task's ``async with`` took."""
        await self._entered[self._task()].pop().release()


class CountDownLatch(_OnLoop, Named[Client]):
    """A count-down latch (RCountDownLatch) of an aio.Client: ``await
    latch.wait()`` returns True once the count is zero (asyncio.Event's
    wait, with an optional bound); the other calls are coroutines named
    with an ``a``."""

    _new = staticmethod(lib.rlock_latch_new)
    _free = staticmethod(lib.rlock_latch_free)
    _ctype = "rlock_latch"

    async def atry_set_count(self, count: int) -> bool:
        """Set the count if the latch has none; True when set."""
        return bool(await self._value(
            "try-set", lib.rlock_latch_try_set_count_async,
            _sync.count_arg(count, "count")))

    async def acount_down(self) -> None:
        """Count down by one."""
        await self._value("down", lib.rlock_latch_count_down_async)

    async def acount(self) -> int:
        """The count now (0 when none is set)."""
        return int(await self._value("count", lib.rlock_latch_count_async))

    async def wait(self, timeout: Optional[float] = DEFAULT, *,
                   wait: Optional[float] = DEFAULT) -> bool:
        """Wait until the count is zero, at most `timeout` (or `wait`)
        seconds (None: for ever); True when zero, False when the wait
        ended first. Cancelling the task cancels the wait."""
        w = pick_wait(True, timeout, wait, None)
        op = self._client._start("await", lib.rlock_latch_await_async,
                                 self._h.ptr, w, lib._rlock_async_done,
                                 with_op=True)
        rc, _, msg = await _acquisition(op, _nothing)
        return answer(rc, msg)

    async def adelete(self) -> bool:
        """Delete the latch whatever its count; True when there was one."""
        return bool(await self._value("delete", lib.rlock_latch_delete_async))


async def _nothing() -> None:
    """A latch's wait holds nothing to give back."""


class Election(_OnLoop, ElectionBase[Client]):
    """A leader election of an aio.Client (rlock.Election's operations as
    coroutines; campaigns belong to the current task, or to ``owner=``)."""

    async def campaign(self, value: str, *, wait: Optional[float] = None,
                       lease: Optional[float] = None,
                       owner: OwnerLike = None) -> Optional[int]:
        """rlock.Election.campaign for the current task (or `owner`): the
        term, or None when the wait ended. Cancelling the awaiting task
        cancels the campaign (leadership granted meanwhile is resigned)."""
        val = leader_value(value)
        wait_v = pick_wait(True, DEFAULT, wait, None)
        lease_v = pick_lease(lease, None)
        own = _owner(owner)
        op = self._client._start("campaign", lib.rlock_election_campaign_async,
                                 self._h.ptr, val,
                                 acquire_options(lease_v, own, wait_v),
                                 lib._rlock_async_done, with_op=True)
        rc, value_, msg = await _acquisition(
            op, lambda: self.resign(owner=Owner(own)))
        return int(value_) if answer(rc, msg) else None

    async def resign(self, *, owner: OwnerLike = None) -> None:
        """Stop leading (rlock.Election.resign's exceptions)."""
        await self._value("resign", lib.rlock_election_resign_async,
                          _owner(owner))

    def watch(self, callback: LeaderCallback, *, interval: float = 1.0,
              on_error: Optional[ErrorCallback] = None) -> LeaderWatch:
        """rlock.Election.watch() on the event loop: ``callback(leader)``
        (a coroutine function's result is run as a task) with the leader
        now, then at each change, and ``on_error(exc)`` once per run of
        failed reads; close() the LeaderWatch to stop."""
        c = self._client
        w = c._call(leader_watch, self._h, self._name, interval,
                    _LeaderFollow(callback, on_error, c._callbacks.post))
        c._watches.add(w._h)
        return w

    async def observe(self) -> Optional[Leader]:
        """Who leads now (a Leader), or None: one round trip."""
        leader: Optional[Leader] = await self._value(
            "observe", lib.rlock_election_observe_async,
            done=lib._rlock_leader_done)
        return leader
