# SPDX-License-Identifier: BSD-3-Clause
"""The blocking client and its locks (rlock.Client)."""
from __future__ import annotations

import atexit
import os
import threading
import weakref
from types import TracebackType
from typing import (Any, Callable, Dict, Iterable, List, Optional, Set,
                    Tuple, Type, TypeVar)

from . import _base, _metrics, _wait
from ._base import (DEFAULT, OK, CallbackThread, ClientRecord, ErrorCallback,
                    Handle, Leader, LeaderCallback, LeaderWatch, LockInfo,
                    OwnerLike, _LeaderFollow, _bytes, _text, acquire_options,
                    answer, check, leader_of, leader_value, leader_watch,
                    lock_info, owner_number, pick_lease, pick_wait,
                    RedLockResult, SyncInfo, redlock_result, spin_options,
                    swallow)
from ._clientbase import ClientBase, LogCallback, LostCallback, Stats
from ._errors import Closed, Error, InvalidArgument, error_for
from ._native import ffi, lib
from ._objects import (ElectionBase, GroupBase, LockBase, SpinBase,
                       fixed_lease, members)
from ._wait import Cancel, give_back

_T = TypeVar("_T")
_clients: "weakref.WeakSet[Client]" = weakref.WeakSet()


@ffi.def_extern(onerror=swallow, error=1)
def _rlock_list_cb(name: Any, kind: Any, info: Any, arg: Any) -> int:
    """C listing callback (the calling thread): collect one lock."""
    out = ffi.from_handle(arg)
    out.append(lock_info(_text(name) or "", info, _text(kind)))
    return 0


@ffi.def_extern(onerror=swallow, error=1)
def _rlock_count_cb(name: Any, kind: Any, available: int, leased: int,
                    node: Any, arg: Any) -> int:
    """C count-listing callback (the calling thread): collect one count."""
    out = ffi.from_handle(arg)
    out.append(SyncInfo(name=_text(name) or "", kind=_text(kind) or "",
                        value=int(available), leased=int(leased),
                        subscribers=None, node=_text(node) or ""))
    return 0


@ffi.def_extern(onerror=swallow, error=1)
def _rlock_sync_cb(name: Any, kind: Any, value: int, leased: int,
                   subscribers: int, node: Any, arg: Any) -> int:
    """C sync-listing callback (the calling thread): collect one."""
    out = ffi.from_handle(arg)
    out.append(SyncInfo(name=_text(name) or "", kind=_text(kind) or "",
                        value=int(value), leased=int(leased),
                        subscribers=int(subscribers), node=_text(node) or ""))
    return 0


class Client(ClientBase):
    """A connection to Redis (one server, a Cluster or Sentinel) that every
    lock uses; thread-safe, share one per process.

    Args:
        url: the servers (default ``redis://127.0.0.1:6379``):
            ``redis://[[user]:password@]host[:port][/db]``, ``rediss://...``
            (TLS), ``unix:///path``, ``redis-cluster://host:port,...``,
            ``redis-sentinel://host:port,...#MASTER`` (rlock/config.h).

    Keywords (every configuration setter of librlock; durations are seconds,
    int or float):
        connect_timeout: bound on making a connection (default 2).
        command_timeout: bound on one command's round trip (default 3).
        watchdog_timeout: lease of a lock taken without one, renewed every
            third of it while held (default 30).
        fair_wait_timeout: how long a fair waiter may stay queued behind
            the one ahead of it (default 300).
        unreachable_retry: how long a wait keeps trying a server it cannot
            reach before it fails (ConnectionError); None (the default) as
            long as the wait lasts, so a wait without a bound on a server
            that is down waits until it is back; 0 never.
        pool_size: most command connections (default 64).
        pubsub_mode: "auto", "classic" or "sharded" (a cluster's pub/sub).
        fair_deferred_shift: fair locks leave Redisson's deadline shift
            pending for the next fair script (default False: applied at
            once, as Redisson does); only where every client of a fair
            lock is rlock.
        replica_sync: confirm lock writes on replicas with WAIT (default
            True); replica_sync_timeout: WAIT's bound (default 1).
        on_lost: called as ``on_lost(name, owner)`` when the watchdog finds
            a lock this client held gone (for a permit of a
            permit-expirable semaphore: its name and the permit's id); runs on the client's callback
            thread (never while the library holds a mutex), so it may call
            anything, close the client included.
        tls_ca, tls_ca_dir, tls_cert, tls_key, tls_server_name,
        tls_insecure: TLS settings (rediss:// URLs).
        user, password: the data nodes' login, instead of the URL's.
        subscription_linger, max_idle_subscriptions: how long an idle lock
            channel stays subscribed (default 1 s), and how many at most
            (default 64).
        log, log_level: ``log(level, message)`` receives the client's log
            messages up to log_level (default LogLevel.WARN), on the
            callback thread.
        metrics_names: keep the metrics of up to this many lock names
            apart, each under a ``name`` label (default 0: per kind only;
            rlock_config_set_metrics_names).
        registry_period: how often (seconds) the client writes its
            registry record, rlock:client:<client id>, naming its host,
            pid, program, rlock version and start time for operators
            (whois(), ``rlock status``); default 10, 0: never
            (rlock_config_set_registry_period).
        program: the program that record names (default: the command
            line, e.g. "python3 app.py"; at most 256 bytes).

    Raises:
        InvalidArgument: a URL or an option out of range; the message says
            which and why.

    A client does not connect here: the first operation does. Close it with
    close() (or use it as a context manager); at interpreter exit the
    clients still open are closed. A client belongs to the process that
    made it: in a fork()ed child every call raises Closed.
    """

    def _open(self, url: Optional[str], kw: Dict[str, Any],
              on_lost: Optional[LostCallback],
              log: Optional[LogCallback]) -> None:
        self._mu = threading.RLock()
        self._idle = threading.Condition(self._mu)
        self._closed = False
        self._pid = os.getpid()
        self._inflight = 0
        self._waiting: Set[Any] = set()
        self._handles: Dict[int, Handle] = {}
        self._ptr: Any = None
        self._cbthread = CallbackThread("rlock-callbacks")
        cfg = self._config(url, kw, on_lost, log, self._cbthread.post)
        p = ffi.new("rlock_client **")
        check(lib.rlock_client_new(p, cfg))
        self._ptr = p[0]
        self.url = url
        _clients.add(self)

    # ---- lifetime ---------------------------------------------------------
    def _enter(self, token: Any = None, reset: bool = True) -> None:
        """Count a call in (refused once closed, or in a fork()ed child);
        `token`: the calling thread's cancel token, fired by close() (reset
        here first unless `reset` is False)."""
        if token is not None and reset:
            lib.rlock_cancel_reset(token)
        with self._mu:
            if self._closed:
                raise Closed("the client is closed")
            if self._pid != os.getpid():
                raise Closed(
                    f"this client was made by process {self._pid}, the "
                    f"parent of this fork()ed process: create a Client here")
            self._inflight += 1
            if token is not None:
                self._waiting.add(token)

    def _leave(self, token: Any = None) -> None:
        with self._mu:
            self._inflight -= 1
            if token is not None:
                self._waiting.discard(token)
            if self._inflight == 0 and self._closed:
                self._idle.notify_all()

    def _call(self, fn: Callable[..., _T], *args: Any) -> _T:
        """fn(*args), counted in and out (Closed once closed)."""
        self._enter()
        try:
            return fn(*args)
        finally:
            self._leave()

    def _track(self, h: Handle) -> None:
        with self._mu:
            if self._closed:
                h.free()
                raise Closed("the client is closed")
            self._handles[id(h)] = h

    def _untrack(self, h: Handle) -> None:
        with self._mu:
            self._handles.pop(id(h), None)
            h.free()

    def close(self) -> None:
        """Close the client: waits that use no Cancel of their own end with
        Closed, every lock object made from it stops working, the
        background thread stops and the connections close. Locks still
        held are not released: they expire with their lease (the watchdog
        stops renewing them). Waits for calls in progress on other
        threads. Calling it again does nothing. In a fork()ed child it
        frees nothing (the parent's client is not the child's)."""
        with self._mu:
            if self._closed:
                return
            self._closed = True
            for t in self._waiting:
                lib.rlock_cancel_fire(t)
            while self._inflight > 0:
                self._idle.wait()
            handles = list(self._handles.values())
            self._handles.clear()
        _clients.discard(self)
        if self._pid != os.getpid():
            return
        for h in reversed(handles):
            h.free()
        rc = lib.rlock_client_free(self._ptr)
        if rc != OK:  # pragma: no cover - never on our threads
            raise error_for(rc)
        self._ptr = None
        self._cbthread.stop()

    @property
    def closed(self) -> bool:
        """Whether close() was called."""
        return self._closed

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            if not self._closed and self._ptr is not None:
                self.close()
        except Exception:  # pragma: no cover
            pass

    def __repr__(self) -> str:
        state = "closed" if self._closed else self.topology
        return f"<rlock.Client {self.url or 'redis://127.0.0.1:6379'} " \
               f"({state})>"

    # ---- about the client -------------------------------------------------
    @property
    def owner(self) -> str:
        """The owner field this client writes for the calling thread,
        "<client id>:<owner number>"."""
        buf = ffi.new("char[]", lib.RLOCK_OWNER_MAX)
        check(self._call(lib.rlock_client_owner, buf, lib.RLOCK_OWNER_MAX,
                         self._ptr))
        return str(ffi.string(buf).decode())

    def owner_field(self, owner: OwnerLike) -> str:
        """The owner field this client writes for `owner`."""
        return f"{self.id}:{owner_number(owner) or lib.rlock_owner_thread()}"

    @property
    def topology(self) -> str:
        """"single", "cluster" or "sentinel", from the URL."""
        return self._call(lambda: _text(
            lib.rlock_client_topology(self._ptr)) or "")

    def ping(self) -> float:
        """Round trip a PING; returns the round-trip time in seconds."""
        rtt = ffi.new("int64_t *")
        check(self._call(lib.rlock_client_ping, self._ptr, rtt))
        return int(rtt[0]) / 1e6

    def whois(self, owner: str) -> Optional[ClientRecord]:
        """Who is behind an owner field (a Holder's or a Waiter's ``owner``)
        or a client id: its client's registry record, read from the
        server (one GET), or None when there is none (a Redisson client,
        an rlock client whose ``registry_period`` is 0, or one gone for a
        while). Raises InvalidArgument for an owner that does not start
        with a client id."""
        out = ffi.new("rlock_client_record *")
        b = _bytes(owner, "owner")
        found = self._call(lib.rlock_client_whois, self._ptr, b, out)
        check(min(found, 0))
        return _base.client_record(out) if found == 1 else None

    def metrics_text(self, openmetrics: bool = False) -> str:
        """The client's metrics in the Prometheus text format (OpenMetrics
        when `openmetrics`), for an application's metrics endpoint
        (rlock_client_metrics_text)."""
        return self._call(_metrics.metrics_text, self._ptr, openmetrics)

    def _listing(self, fn: Any, cb: Any, pattern: Optional[str]) -> List[Any]:
        """Run one of librlock's listings (fn, its callback cb collecting
        into a list) over `pattern` (None: all)."""
        out: List[Any] = []
        h = ffi.new_handle(out)
        pat = ffi.NULL if pattern is None else _bytes(pattern, "pattern")
        check(self._call(fn, self._ptr, pat, cb, h))
        return out

    def list_locks(self, pattern: Optional[str] = None) -> List[LockInfo]:
        """The locks held now whose names match the glob `pattern` (Redis's
        MATCH syntax; None: all), on every server of the topology, each
        with its snapshot and kind. SCAN-based: never blocks the server."""
        return self._listing(lib.rlock_client_list_locks, lib._rlock_list_cb, pattern)

    def list_syncs(self, pattern: Optional[str] = None) -> List[SyncInfo]:
        """The semaphores, latches and permit-expirable semaphores whose
        names match the glob `pattern` (None: all) that can be told from any
        other counter: those a client waits on now, and permit-expirable
        semaphores with permits leased (rlock_client_list_syncs: PUBSUB
        and SCAN, nothing written)."""
        return self._listing(lib.rlock_client_list_syncs, lib._rlock_sync_cb, pattern)

    def list_counts(self, pattern: Optional[str] = None) -> List[SyncInfo]:
        """Every string of decimal digits whose name matches `pattern`
        (semaphores, latches, and any application counter: give a pattern
        only yours match) and every permit-expirable semaphore with permits
        leased (rlock_client_list_counts: SCAN, each string read)."""
        return self._listing(lib.rlock_client_list_counts, lib._rlock_count_cb, pattern)

    # ---- lock objects -----------------------------------------------------
    # Every lock takes `wait` (seconds; None: for ever) and `lease`
    # (seconds; None: the watchdog renews it while held): its own, used by
    # ``with`` and by acquire() when not given others.
    def lock(self, name: str, *, wait: Optional[float] = None,
             lease: Optional[float] = None) -> "Lock":
        """A reentrant lock (Redisson's RLock) named `name`, with its own
        `wait` and `lease` in seconds (None: wait for ever; renewed by the
        watchdog). No I/O."""
        return Lock(self, name, wait=wait, lease=lease)

    def fair_lock(self, name: str, *, wait: Optional[float] = None,
                  lease: Optional[float] = None) -> "FairLock":
        """A fair lock (RFairLock): waiters served in arrival order."""
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
        """A fenced lock (RFencedLock): each acquisition gets a growing
        fencing token (``.token``)."""
        return FencedLock(self, name, wait=wait, lease=lease)

    def election(self, name: str) -> "Election":
        """The leader election `name` (on the fenced lock `name`): campaign,
        resign, check, observe. No I/O."""
        return Election(self, name)

    def spin_lock(self, name: str, *, backoff: str = "exponential",
                  initial_delay: Optional[float] = None,
                  max_delay: Optional[float] = None,
                  multiplier: Optional[float] = None,
                  jitter: Optional[bool] = None,
                  delay: Optional[float] = None,
                  wait: Optional[float] = None,
                  lease: Optional[float] = None) -> "SpinLock":
        """A spin lock (RSpinLock): waiters retry with a back-off instead of
        subscribing. backoff "exponential" (initial_delay 0.001 s, times
        multiplier 2 up to max_delay 0.128 s, with jitter) or "constant"
        (every pause `delay`, 0.064 s). Seconds; None keeps the default."""
        return SpinLock(self, name, spin_options(
            backoff, initial_delay, max_delay, multiplier, jitter, delay),
            wait=wait, lease=lease)

    def read_write_lock(self, name: str, *, wait: Optional[float] = None,
                        lease: Optional[float] = None) -> "ReadWriteLock":
        """A read-write lock (RReadWriteLock): ``.read_lock()`` and
        ``.write_lock()``, both with this wait and lease."""
        return ReadWriteLock(self, name, wait=wait, lease=lease)

    def multi_lock(self, *locks: "Lock", wait: Optional[float] = None,
                   lease: Optional[float] = None) -> "MultiLock":
        """All of `locks` or none, taken in the order given (they may come
        from several clients)."""
        return MultiLock(*locks, wait=wait, lease=lease)

    def red_lock(self, *locks: "Lock", wait: Optional[float] = None,
                 lease: Optional[float] = None) -> "RedLock":
        """A quorum lock over reentrant locks of independent servers (one
        client each)."""
        return RedLock(*locks, wait=wait, lease=lease)

    # ---- semaphores and the latch (rlock/_sync.py) -------------------------
    def semaphore(self, name: str, *,
                  wait: Optional[float] = None) -> "_sync.Semaphore":
        """A semaphore (Redisson's RSemaphore) named `name`, shaped like
        threading.Semaphore, with its own `wait` for ``with`` (None: for
        ever). Its permits never expire (see Semaphore). No I/O."""
        return _sync.Semaphore(self, name, wait=wait)

    def permit_expirable_semaphore(
            self, name: str, *, wait: Optional[float] = None,
            lease: Optional[float] = None
    ) -> "_sync.PermitExpirableSemaphore":
        """A permit-expirable semaphore (RPermitExpirableSemaphore): each
        permit has an id and a lease (`lease` seconds, or None: renewed by
        the watchdog while held) and comes back by itself. No I/O."""
        return _sync.PermitExpirableSemaphore(self, name, wait=wait,
                                              lease=lease)

    def count_down_latch(self, name: str) -> "_sync.CountDownLatch":
        """A count-down latch (RCountDownLatch), waited on as
        threading.Event. No I/O."""
        return _sync.CountDownLatch(self, name)


def _close_all() -> None:
    """At exit: stop every client's background thread while Python can
    still run its callbacks."""
    for c in list(_clients):
        try:
            c.close()
        except Exception:  # pragma: no cover
            pass


def _after_fork() -> None:
    """In a fork()ed child: fresh mutexes (another thread may have held
    one at the fork); every call then raises Closed."""
    for c in list(_clients):
        c._mu = threading.RLock()
        c._idle = threading.Condition(c._mu)
        c._inflight = 0
        c._waiting = set()


atexit.register(_close_all)
os.register_at_fork(after_in_child=_after_fork)


class _Takes:
    """acquire() on _take(), for Lock and the groups: a hold taken when an
    exception ends the acquisition is given back (by release()) before the
    exception goes on. Each public entry (acquire, ``with``) keeps its own
    try, so that no frame stands between the hold and that try."""

    def _take(self, blocking: bool, timeout: Any, lease: Any, wait: Any,
              owner: OwnerLike, cancel: Optional[Cancel],
              took: List[bool]) -> bool:
        raise NotImplementedError

    def release(self, *, owner: OwnerLike = None) -> None:
        raise NotImplementedError

    def acquire(self, blocking: bool = True,
                timeout: Optional[float] = DEFAULT,
                lease: Optional[float] = DEFAULT, *,
                wait: Optional[float] = DEFAULT, owner: OwnerLike = None,
                cancel: Optional[Cancel] = None) -> bool:
        """Acquire the lock, waiting for it as threading.Lock does (a
        MultiLock or RedLock: the group, with the wait and lease it was
        given; its class says what holding it means).

        Args:
            blocking: False tries once.
            timeout: the longest wait in seconds (threading's name for it;
                it is not a lease, unlike redis-py's ``timeout``); None or
                -1 for ever. Default: the lock's wait (for ever unless
                client.lock() was given one).
            lease: a fixed lease in seconds after which the lock expires,
                held or not; None: the watchdog renews it while held.
                Default: the lock's lease (None unless client.lock() was
                given one).
            wait: the same as timeout, under rlock's name (give one or
                the other).
            owner: the holder: None for the calling thread, or an Owner.
            cancel: a Cancel whose fire() ends the wait (Canceled). On the
                main thread Ctrl-C fires it too.

        Returns:
            True when the owner now holds the lock (once more), False when
            another owner held it for the whole wait.

        Raises:
            KeyboardInterrupt: Ctrl-C on the main thread during the wait
                (nothing is held). InvalidArgument (bad durations),
                WrongType (the key is not a lock of this family), Deadlock
                (write half asked while holding the read half),
                ConnectionError/TimeoutError (server unreachable: a wait
                tries again until it ends, or for the client's
                ``unreachable_retry``), ReplicaError, Canceled, Closed.
        """
        took: List[bool] = []
        try:
            return self._take(blocking, timeout, lease, wait, owner,
                              cancel, took)
        except BaseException:
            if took:
                give_back(lambda: self.release(owner=owner))
            raise


class Lock(_Takes, LockBase["Client"]):
    """A reentrant lock (Redisson's RLock), from ``client.lock(name)``.

    It follows threading.Lock: acquire() and release(), locked(), and
    ``with lock:``. Holds belong to the calling thread (each Python thread
    is an owner), or to an explicit ``owner=`` (rlock.Owner). The thread
    that holds it may acquire it again (the hold count goes up). A lock
    object holds no per-thread state: share it between threads freely.

    ``client.lock(name, wait=5, lease=30)`` gives the lock a wait and a
    lease of its own: ``with lock:`` and acquire() use them unless told
    otherwise (the defaults: wait for ever; no lease, the watchdog renews
    the hold while it is held).

    On the main thread Ctrl-C (SIGINT) ends a wait as a Cancel's fire()
    does, and raises KeyboardInterrupt: nothing is held, a fair waiter has
    left the queue. An exception raised once the library has taken the
    lock but before acquire() or ``with`` hands it over gives it back.
    """

    _client_type = Client

    def _take(self, blocking: bool, timeout: Any, lease: Any, wait: Any,
              owner: OwnerLike, cancel: Optional[Cancel],
              took: List[bool]) -> bool:
        """acquire()'s work; appends to `took` once a hold is taken (the
        caller gives it back if an exception follows)."""
        wait_v = pick_wait(blocking, timeout, wait, self._wait)
        lease_v = pick_lease(lease, self._lease)
        own = owner_number(owner)
        ptr = self._h.ptr
        closed = "the lock" if cancel is None else None
        if own == 0 and cancel is None and not self._wants_token:
            def plain(w: int, tok: Any, box: Any) -> None:
                lib.rlock_py_lock_try_acquire(ptr, w, lease_v, tok, box)
            return answer(_wait.blocking(self._client, plain, wait_v, None,
                                         took), closed=closed)
        o = acquire_options(lease_v, own)
        token = ffi.new("int64_t *") if self._wants_token else None
        if token is not None:
            o.token = token

        def with_options(w: int, tok: Any, box: Any) -> None:
            o.wait_ms, o.cancel = w, tok
            lib.rlock_py_lock_acquire(ptr, o, box)
        got = answer(_wait.blocking(self._client, with_options, wait_v,
                                    cancel, took), closed=closed)
        if got and token is not None:
            self._got_token(own, int(token[0]))
        return got

    def _got_token(self, own: int, token: int) -> None:
        pass

    def release(self, *, owner: OwnerLike = None) -> None:
        """Release one hold of the calling thread (or of `owner`, from any
        thread). The last release deletes the lock and wakes a waiter.

        Raises:
            NotHeld: the owner does not hold it (a RuntimeError, as
                threading.Lock raises); nothing changed.
            LockLost: the owner held it but it expired or was deleted
                meanwhile (someone else may have had it since).
            ConnectionError/TimeoutError: the server cannot be reached (the
                lock is no longer renewed and expires with its lease).
        """
        self._do(lib.rlock_lock_release_owner, owner_number(owner))

    def __enter__(self) -> "Lock":
        """Acquire with the lock's wait and lease (client.lock()'s).

        Raises:
            Locked: the lock's wait ended without it.
            KeyboardInterrupt: Ctrl-C during the wait (nothing held).
            The other exceptions of acquire().
        """
        took: List[bool] = []
        try:
            if not self._take(True, DEFAULT, DEFAULT, DEFAULT, None, None,
                              took):
                raise self._not_acquired()
            return self
        except BaseException:
            if took:
                give_back(self.release)
            raise

    def __exit__(self, et: Optional[Type[BaseException]],
                 ev: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self.release()

    def locked(self) -> bool:
        """Whether anyone holds the lock (one round trip)."""
        return bool(self._out(lib.rlock_lock_is_locked, "int *"))

    def held(self, owner: OwnerLike = None) -> bool:
        """Whether the calling thread (or `owner`) holds it (server's
        answer)."""
        return bool(self._out(lib.rlock_lock_is_held_owner, "int *",
                              owner_number(owner)))

    def owned(self, owner: OwnerLike = None) -> bool:
        """held(), under redis-py's name."""
        return self.held(owner)

    def holds(self, owner: OwnerLike = None) -> int:
        """The hold count of the calling thread (or `owner`), 0 if none."""
        return int(self._out(lib.rlock_lock_hold_count_owner, "int64_t *",
                             owner_number(owner)))

    @property
    def hold_count(self) -> int:
        """The calling thread's hold count on the server (0 when not
        held); holds(owner) for an explicit owner."""
        return self.holds()

    @property
    def ttl(self) -> Optional[float]:
        """Seconds left on the lock's lease, None when it is not locked."""
        ms = int(self._out(lib.rlock_lock_ttl, "int64_t *"))
        return None if ms < 0 else ms / 1000

    def force_release(self) -> bool:
        """Delete the lock whoever holds it and wake a waiter; True when
        there was a lock to delete."""
        return bool(self._out(lib.rlock_lock_force_release, "int *"))

    def check(self, owner: OwnerLike = None) -> bool:
        """Whether the calling thread's (or `owner`'s) hold is still good,
        answered locally without a round trip: True while held, False when
        not held here.

        Raises:
            LockLost: the watchdog found it gone, its fixed lease ran out,
                or renewals failed for a whole watchdog lease.
        """
        return self._held(lib.rlock_lock_check_owner, owner_number(owner))

    def extend(self, lease: float, owner: OwnerLike = None) -> None:
        """Give the calling thread's (or `owner`'s) hold, taken with a
        fixed lease, a fresh one: it now expires `lease` seconds from now.
        redis-py's ``reacquire()`` is reacquire() (``extend(lock.lease)``),
        and its ``extend(t, replace_ttl=True)`` is ``extend(t)``. A hold the
        watchdog renews needs none.

        Raises:
            NotHeld: the thread (or owner) holds nothing here.
            LockLost: the hold is gone (expired, or force-released); it is
                not re-created.
            InvalidArgument: a lease out of range, or a watchdog hold.
            ConnectionError/TimeoutError: the server cannot be reached.
        """
        ms = fixed_lease(lease, "extend")
        self._do(lib.rlock_lock_extend_owner, owner_number(owner), ms)

    def reacquire(self, owner: OwnerLike = None) -> None:
        """redis-py's ``reacquire()``: give the calling thread's (or
        `owner`'s) hold a fresh lease of the lock's own ``lease`` (given
        to client.lock()), from now: ``extend(lock.lease)``.

        Raises:
            InvalidArgument: the lock has no lease of its own (its holds
                are renewed by the watchdog, or took a lease per call:
                extend() those).
            The exceptions of extend().
        """
        self.extend(self._own_lease(), owner)

    def inspect(self) -> LockInfo:
        """The lock's whole state in one atomic step (LockInfo): TTL, every
        holder with its hold count, a fair lock's queue."""
        p = self._out(lib.rlock_lock_inspect, "rlock_lock_info **")
        try:
            return lock_info(self._name, p)
        finally:
            lib.rlock_lock_info_free(p)


class FairLock(Lock):
    """A fair lock (Redisson's RFairLock): waiters acquire in the order
    they arrived; a waiter that gives up (timeout, Cancel) leaves the
    queue."""

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
    """A fenced lock (Redisson's RFencedLock): every acquisition takes the
    next fencing token of the lock's name, which only grows: a resource
    that remembers the highest token it saw refuses a stale holder."""

    kind = "fenced"
    _wants_token = True

    def __init__(self, client: Client, name: str, *,
                 wait: Optional[float] = None,
                 lease: Optional[float] = None) -> None:
        super().__init__(client, name, wait=wait, lease=lease)
        self._tokens: Dict[int, int] = {}

    def _got_token(self, own: int, token: int) -> None:
        self._tokens[own or int(lib.rlock_owner_thread())] = token

    @property
    def token(self) -> Optional[int]:
        """The fencing token of the calling thread's latest acquisition
        through this object (None before the first)."""
        return self._tokens.get(int(lib.rlock_owner_thread()))

    def token_of(self, owner: OwnerLike) -> Optional[int]:
        """The fencing token of `owner`'s latest acquisition through this
        object."""
        return self._tokens.get(owner_number(owner) or
                                int(lib.rlock_owner_thread()))

    def latest_token(self) -> int:
        """The latest token issued for the name, by anyone (0 if none
        ever was): one round trip."""
        return int(self._out(lib.rlock_lock_token, "int64_t *"))


class SpinLock(SpinBase["Client"], Lock):
    """A spin lock (Redisson's RSpinLock): a waiter never subscribes; it
    retries after a back-off (client.spin_lock's keywords)."""


class ReadLock(Lock):
    """The read half of a read-write lock: shared by any number of
    owners while no writer holds the write half."""

    kind = "read"


class WriteLock(Lock):
    """The write half of a read-write lock: one owner, and no readers."""

    kind = "write"


class ReadWriteLock:
    """A read-write lock (Redisson's RReadWriteLock) over one name."""

    def __init__(self, client: Client, name: str, *,
                 wait: Optional[float] = None,
                 lease: Optional[float] = None) -> None:
        self._read = ReadLock(client, name, wait=wait, lease=lease)
        self._write = WriteLock(client, name, wait=wait, lease=lease)
        self.name = name

    def read_lock(self) -> ReadLock:
        """The read half (the same object every call)."""
        return self._read

    def write_lock(self) -> WriteLock:
        """The write half (the same object every call)."""
        return self._write

    def __repr__(self) -> str:
        return f"<rlock.ReadWriteLock {self.name!r}>"


class _Group(_Takes, GroupBase):
    """What MultiLock and RedLock share: members on one or more clients,
    entered together for every call; a wait and a lease of their own for
    ``with`` and acquire() (``wait=``, ``lease=``, as client.lock's)."""

    def __init__(self, *locks: Lock, wait: Optional[float] = None,
                 lease: Optional[float] = None) -> None:
        ms = members(locks, Lock, self._what,
                     "rlock lock (client.lock(), ...)")
        self._clients = list({id(m.client): m.client for m in ms}.values())
        self._open(ms, wait, lease)

    def _enter(self, token: Any = None, reset: bool = True) -> None:
        done: List[Client] = []
        try:
            for c in self._clients:
                c._enter(token, reset=reset and not done)
                done.append(c)
        except BaseException:
            for c in done:
                c._leave(token)
            raise

    def _leave(self, token: Any = None) -> None:
        for c in self._clients:
            c._leave(token)

    def _call(self, fn: Callable[..., _T], *args: Any) -> _T:
        self._enter()
        try:
            return fn(*args)
        finally:
            self._leave()

    @property
    def locks(self) -> Tuple[Lock, ...]:
        """The members, in order."""
        return tuple(self._locks)

    def _take(self, blocking: bool, timeout: Any, lease: Any, wait: Any,
              owner: OwnerLike, cancel: Optional[Cancel],
              took: List[bool]) -> bool:
        """acquire()'s work (Lock._take's contract)."""
        wait_v = pick_wait(blocking, timeout, wait, self._wait)
        o = acquire_options(pick_lease(lease, self._lease),
                            owner_number(owner))

        def call(w: int, tok: Any, box: Any) -> None:
            o.wait_ms, o.cancel = w, tok
            self._acquire(o, box)
        rc = _wait.blocking(self, call, wait_v, cancel, took)
        return answer(rc, closed="the lock" if cancel is None else None)

    def _acquire(self, o: Any, box: Any) -> None:
        raise NotImplementedError

    def _release(self, fn: Callable[[Any, int], int],
                 owner: OwnerLike) -> None:
        check(self._call(fn, self._h.ptr, owner_number(owner)))

    def __enter__(self) -> "_Group":
        """Acquire with the group's wait and lease; Locked when the wait
        ends without it (as Lock's)."""
        took: List[bool] = []
        try:
            if not self._take(True, DEFAULT, DEFAULT, DEFAULT, None, None,
                              took):
                raise self._not_acquired()
            return self
        except BaseException:
            if took:
                give_back(self.release)
            raise

    def __exit__(self, *exc: Any) -> None:
        self.release()


class MultiLock(_Group):
    """Several locks taken as one (Redisson's MultiLock): all or none.

    Members (of any kind, from any clients) are taken one after another in
    the order given; if one cannot be had within the wait, those taken are
    released before acquire() returns False. Take sets of locks in one
    global order everywhere (rlock.lock_order gives one), or two
    MultiLocks can deadlock each other. acquire() takes Lock.acquire's
    arguments; True when the owner holds every member, False when one was
    held elsewhere for the whole wait (nothing is then held).
    """

    _new = staticmethod(lib.rlock_multilock_new)
    _free = staticmethod(lib.rlock_multilock_free)
    _what = "MultiLock"

    def _acquire(self, o: Any, box: Any) -> None:
        lib.rlock_py_multilock_acquire(self._h.ptr, o, box)

    def release(self, *, owner: OwnerLike = None) -> None:
        """Release one hold of every member, in reverse order; every member
        is released even when one fails, whose error is raised."""
        self._release(lib.rlock_multilock_release_owner, owner)

    def held(self, owner: OwnerLike = None) -> bool:
        """Whether the calling thread (or `owner`) holds every member."""
        out = ffi.new("int *")
        check(self._call(lib.rlock_multilock_is_held_owner, out, self._h.ptr,
                         owner_number(owner)))
        return bool(out[0])

    def owned(self, owner: OwnerLike = None) -> bool:
        """held(), under redis-py's name."""
        return self.held(owner)


class RedLock(_Group):
    """A quorum lock (RedLock) over reentrant locks on independent servers,
    one client each: held when a majority of members is. Members are asked
    in parallel, every free one is taken, and the validity left is on
    ``last_result``. acquire() takes Lock.acquire's arguments (each member
    gets the lease); True when the owner holds a quorum with validity
    left."""

    _new = staticmethod(lib.rlock_redlock_new)
    _free = staticmethod(lib.rlock_redlock_free)
    _what = "RedLock"
    last_result: Optional[RedLockResult] = None

    def _acquire(self, o: Any, box: Any) -> None:
        res = ffi.new("rlock_redlock_result **")
        try:
            lib.rlock_py_redlock_acquire(res, self._h.ptr, o, box)
        finally:
            try:
                self.last_result = redlock_result(res[0])
            finally:
                lib.rlock_redlock_result_free(res[0])

    def release(self, *, owner: OwnerLike = None) -> None:
        """Release every member the owner holds, in parallel.

        Raises:
            NotHeld: it held none; LockLost: one member's hold had expired
            (the others were released).
        """
        self._release(lib.rlock_redlock_release_owner, owner)


def lock_order(names: Iterable[str]) -> List[str]:
    """`names` in rlock's canonical lock order (byte-wise on UTF-8, as
    rlock_names_sort), for taking several locks the same way everywhere."""
    return sorted(names, key=lambda n: _bytes(n, "name"))


__all__ = ["Client", "Cancel", "Stats", "Lock", "FairLock", "FencedLock",
           "SpinLock", "ReadLock", "WriteLock", "ReadWriteLock", "MultiLock",
           "RedLock", "lock_order", "Error", "InvalidArgument"]


class Election(ElectionBase["Client"]):
    """A leader election (rlock/election.h), from ``client.election(name)``.

    Leading is holding Redisson's RFencedLock `name`; the term is the
    fencing token of the campaign that won (it only grows: pass it with
    each write so a deposed leader's writes are refused). Campaigns belong
    to the calling thread, or to an explicit ``owner=``; one object serves
    any number of threads.
    """

    _client_type = Client

    def campaign(self, value: str, *, wait: Optional[float] = None,
                 lease: Optional[float] = None, owner: OwnerLike = None,
                 cancel: Optional[Cancel] = None) -> Optional[int]:
        """Wait until the calling thread (or `owner`) leads, publishing
        `value` (1 to 65536 bytes of text).

        Args:
            wait: seconds to wait at most (None: for ever; 0: try once).
            lease: a fixed lease in seconds after which leadership ends;
                None: the watchdog renews it while leading.
            owner: who campaigns (an Owner), None for the calling thread.
            cancel: a Cancel whose fire() ends the wait (Canceled); on the
                main thread Ctrl-C ends it too (KeyboardInterrupt).

        Returns:
            The term when leading, None when another owner led for the
            whole wait.

        Raises:
            AlreadyHeld: this owner leads already, as check() says
                (nothing written); a hold of its own it was told it lost
                is waited on as another leader's.
            InvalidArgument: an empty or too long value, bad durations.
            WrongType, ConnectionError, TimeoutError, Canceled, Closed.
        """
        val = leader_value(value)
        wait_v = pick_wait(True, DEFAULT, wait, None)
        o = acquire_options(pick_lease(lease, None), owner_number(owner))
        term = ffi.new("int64_t *")
        ptr = self._h.ptr

        def call(w: int, tok: Any, box: Any) -> None:
            o.wait_ms, o.cancel = w, tok
            lib.rlock_py_election_campaign(ptr, val, o, term, box)
        took: List[bool] = []
        try:
            rc = _wait.blocking(self._client, call, wait_v, cancel, took)
            got = answer(rc, closed="the lock" if cancel is None else None)
            return int(term[0]) if got else None
        except BaseException:
            if took:
                give_back(lambda: self.resign(owner=owner))
            raise

    def resign(self, *, owner: OwnerLike = None) -> None:
        """Stop leading: the lock is released (a standby is woken).

        Raises:
            NotHeld: the owner does not lead (nothing written).
            LockLost: it led, but lost it meanwhile.
            ConnectionError/TimeoutError: the server cannot be reached.
        """
        self._do(lib.rlock_election_resign, owner_number(owner))

    def watch(self, callback: LeaderCallback, *, interval: float = 1.0,
              on_error: Optional[ErrorCallback] = None) -> LeaderWatch:
        """Follow who leads (rlock_election_watch_new): ``callback(leader)``
        (a Leader, or None when nobody leads) with the leader now, then at
        each change of leader (owner or term), on the client's callback
        thread. The leader is read again at each message of the election's
        channel (a resignation or release, and twice soon after: the
        standby it woke takes over), at the leader's lease end and every
        `interval` seconds (taking the lead publishes nothing: a leadership
        that begins and ends between two reads is not seen). A failed read
        calls ``on_error(exc)`` once, until a read works again. Returns a
        LeaderWatch: close() it (or use ``with``) to stop."""
        c = self._client
        return c._call(leader_watch, self._h, self._name, interval,
                       _LeaderFollow(callback, on_error, c._cbthread.post))

    def observe(self) -> Optional[Leader]:
        """Who leads now, for anyone, in one round trip: a Leader, or None
        when nobody does."""
        p = self._out(lib.rlock_election_observe, "rlock_leader **")
        try:
            return leader_of(p)
        finally:
            lib.rlock_leader_free(p)


# Last: _sync imports Client from here (its objects take one).
from . import _sync
