# SPDX-License-Identifier: BSD-3-Clause
"""The blocking client and its locks (rlock.Client)."""
from __future__ import annotations

import atexit
import os
import threading
import weakref
from dataclasses import dataclass
from types import TracebackType
from typing import (Any, Callable, Dict, Iterable, List, Optional, Sequence,
                    Set, Tuple, Type, Union)

from . import _base, _metrics, _sync, _wait
from ._base import (DEFAULT, ECANCELED, ELOCKED, OK, CallbackThread,
                    ClientRecord, ErrorCallback, Handle, Leader,
                    LeaderCallback, LeaderWatch, LockInfo, LogLevel,
                    _LeaderFollow, leader_watch,
                    OwnerLike, PubSubMode, RedLockResult, _bytes, _text,
                    check, lease_ms, leader_of, leader_value, lock_info,
                    owner_number, pick_lease, pick_wait, redlock_result,
                    spin_options, wait_ms)
from ._errors import (Closed, Error, InvalidArgument, Locked, LockLost,
                      NotHeld, error_for)
from ._metrics import Metrics, MetricsCollector
from ._native import ffi, lib

_UNSET: Any = object()
_tls = threading.local()


def _thread_cancel() -> Any:
    """The calling thread's own cancel token: every wait of the thread
    passes it, so that closing the client ends the wait (Closed)."""
    try:
        return _tls.cancel
    except AttributeError:
        p = ffi.new("rlock_cancel **")
        check(lib.rlock_cancel_new(p))
        _tls.cancel = ffi.gc(p[0], lib.rlock_cancel_free)
        return _tls.cancel


class Cancel:
    """A token that makes the waits given it (``cancel=``) give up:
    ``fire()`` from any thread, and every such wait raises rlock.Canceled
    within about 20 ms; a fair waiter leaves the queue. Stays fired until
    ``reset()``."""

    __slots__ = ("_ptr",)

    def __init__(self) -> None:
        p = ffi.new("rlock_cancel **")
        check(lib.rlock_cancel_new(p))
        self._ptr = ffi.gc(p[0], lib.rlock_cancel_free)

    def fire(self) -> None:
        """Fire the token (any thread)."""
        lib.rlock_cancel_fire(self._ptr)

    def reset(self) -> None:
        """Clear a fired token, to use it again."""
        lib.rlock_cancel_reset(self._ptr)

    @property
    def fired(self) -> bool:
        """Whether it has fired (and not been reset)."""
        return bool(lib.rlock_cancel_fired(self._ptr))


@dataclass(frozen=True)
class Stats:
    """A client's counters since it was created (rlock_client_stats)."""

    acquisitions: int
    waits: int
    wakeups: int
    releases: int
    renewals: int
    renewal_failures: int
    lost: int
    connects: int
    connect_failures: int
    disconnects: int
    topology_changes: int
    redirections: int
    reconnects: int


LostCallback = Callable[[str, str], Any]
LogCallback = Callable[[LogLevel, str], Any]

_clients: "weakref.WeakSet[Client]" = weakref.WeakSet()


@ffi.def_extern()
def _rlock_lost_cb(name: Any, owner: Any, userdata: Any) -> None:
    """C lost-lock callback (library thread): queue it for the client's
    callback thread; never raises into C."""
    try:
        ffi.from_handle(userdata)._post_lost(_text(name), _text(owner))
    except BaseException:  # pragma: no cover - nothing may reach C
        pass


@ffi.def_extern()
def _rlock_log_cb(level: int, message: Any, userdata: Any) -> None:
    """C log hook (any thread): queue it for the callback thread."""
    try:
        ffi.from_handle(userdata)._post_log(int(level), _text(message))
    except BaseException:  # pragma: no cover
        pass


@ffi.def_extern()
def _rlock_list_cb(name: Any, kind: Any, info: Any, arg: Any) -> int:
    """C listing callback (the calling thread): collect one lock."""
    try:
        out = ffi.from_handle(arg)
        out.append(lock_info(_text(name) or "", info, _text(kind)))
        return 0
    except BaseException:  # pragma: no cover
        return 1


class _Callbacks:
    """The userdata of a client's C callbacks: re-dispatches them."""

    def __init__(self, on_lost: Optional[LostCallback],
                 log: Optional[LogCallback],
                 post: Callable[..., None]) -> None:
        self.on_lost = on_lost
        self.log = log
        self.post = post

    def _post_lost(self, name: str, owner: str) -> None:
        if self.on_lost is not None:
            self.post(self.on_lost, name, owner)

    def _post_log(self, level: int, message: str) -> None:
        if self.log is not None:
            self.post(self.log, LogLevel(level), message)


class Client:
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

    def __init__(self, url: Optional[str] = None, *,
                 connect_timeout: Optional[float] = None,
                 command_timeout: Optional[float] = None,
                 watchdog_timeout: Optional[float] = None,
                 fair_wait_timeout: Optional[float] = None,
                 unreachable_retry: Optional[float] = _UNSET,
                 pool_size: Optional[int] = None,
                 pubsub_mode: Union[str, PubSubMode, None] = None,
                 replica_sync: Optional[bool] = None,
                 fair_deferred_shift: Optional[bool] = None,
                 replica_sync_timeout: Optional[float] = None,
                 on_lost: Optional[LostCallback] = None,
                 tls_ca: Optional[str] = None,
                 tls_ca_dir: Optional[str] = None,
                 tls_cert: Optional[str] = None,
                 tls_key: Optional[str] = None,
                 tls_server_name: Optional[str] = None,
                 tls_insecure: Optional[bool] = None,
                 user: Optional[str] = None,
                 password: Optional[str] = None,
                 subscription_linger: Optional[float] = None,
                 max_idle_subscriptions: Optional[int] = None,
                 metrics_names: Optional[int] = None,
                 registry_period: Optional[float] = None,
                 program: Optional[str] = None,
                 log: Optional[LogCallback] = None,
                 log_level: LogLevel = LogLevel.WARN) -> None:
        kw = {k: v for k, v in locals().items()
              if k not in ("self", "url", "on_lost", "log") and v is not _UNSET}
        for name, fn in (("on_lost", on_lost), ("log", log)):
            if fn is not None and not callable(fn):
                raise TypeError(f"{name} must be callable, not "
                                f"{type(fn).__name__}")
        self._mu = threading.RLock()
        self._idle = threading.Condition(self._mu)
        self._closed = False
        self._pid = os.getpid()
        self._inflight = 0
        self._waiting: Set[Any] = set()
        self._handles: Dict[int, Handle] = {}
        self._ptr: Any = None
        self._cbthread = CallbackThread("rlock-callbacks")
        self._callbacks = _Callbacks(on_lost, log, self._cbthread.post)
        self._userdata = ffi.new_handle(self._callbacks)
        cfg = _base.make_config(
            url, kw, lib._rlock_lost_cb if on_lost else None,
            lib._rlock_log_cb if log else None, self._userdata)
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
    def id(self) -> str:
        """The client's identity, a UUID, first half of its owner fields."""
        self._enter()
        try:
            return _text(lib.rlock_client_id(self._ptr)) or ""
        finally:
            self._leave()

    @property
    def owner(self) -> str:
        """The owner field this client writes for the calling thread,
        "<client id>:<owner number>"."""
        buf = ffi.new("char[]", lib.RLOCK_OWNER_MAX)
        self._enter()
        try:
            check(lib.rlock_client_owner(buf, lib.RLOCK_OWNER_MAX, self._ptr))
        finally:
            self._leave()
        return str(ffi.string(buf).decode())

    def owner_field(self, owner: OwnerLike) -> str:
        """The owner field this client writes for `owner`."""
        return f"{self.id}:{owner_number(owner) or lib.rlock_owner_thread()}"

    @property
    def topology(self) -> str:
        """"single", "cluster" or "sentinel", from the URL."""
        self._enter()
        try:
            return _text(lib.rlock_client_topology(self._ptr)) or ""
        finally:
            self._leave()

    def ping(self) -> float:
        """Round trip a PING; returns the round-trip time in seconds."""
        rtt = ffi.new("int64_t *")
        self._enter()
        try:
            check(lib.rlock_client_ping(self._ptr, rtt))
        finally:
            self._leave()
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
        self._enter()
        try:
            found = lib.rlock_client_whois(self._ptr, b, out)
        finally:
            self._leave()
        check(min(found, 0))
        return _base.client_record(out) if found == 1 else None

    def stats(self) -> Stats:
        """The client's counters (acquisitions, waits, renewals, ...)."""
        s = ffi.new("rlock_stats *")
        self._enter()
        try:
            check(lib.rlock_client_stats(self._ptr, s,
                                         ffi.sizeof("rlock_stats")))
        finally:
            self._leave()
        return Stats(**{f: int(getattr(s, f))
                        for f in Stats.__dataclass_fields__})

    def metrics_text(self, openmetrics: bool = False) -> str:
        """The client's metrics in the Prometheus text format (OpenMetrics
        when `openmetrics`), for an application's metrics endpoint
        (rlock_client_metrics_text)."""
        self._enter()
        try:
            return _metrics.metrics_text(self._ptr, openmetrics)
        finally:
            self._leave()

    def metrics(self) -> Metrics:
        """The client's metrics, read: per kind of lock (and per name kept,
        ``metrics_names``) its counters, gauges and wait, hold and handoff
        histograms, and the client's own counters."""
        return _metrics.parse(self.metrics_text())

    def collector(self) -> MetricsCollector:
        """A prometheus_client collector of this client's metrics, to
        register with a CollectorRegistry (prometheus_client needed then,
        Debian's python3-prometheus-client)."""
        return MetricsCollector(self.metrics_text)

    def list_locks(self, pattern: Optional[str] = None) -> List[LockInfo]:
        """The locks held now whose names match the glob `pattern` (Redis's
        MATCH syntax; None: all), on every server of the topology, each
        with its snapshot and kind. SCAN-based: never blocks the server."""
        out: List[LockInfo] = []
        h = ffi.new_handle(out)
        pat = ffi.NULL if pattern is None else _bytes(pattern, "pattern")
        self._enter()
        try:
            check(lib.rlock_client_list_locks(self._ptr, pat,
                                              lib._rlock_list_cb, h))
        finally:
            self._leave()
        return out

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


def _result(rc: int, user_cancel: Any) -> bool:
    """An acquisition's status as acquire()'s answer."""
    if rc == OK:
        return True
    if rc == ELOCKED:
        return False
    if rc == ECANCELED and user_cancel is None:
        raise Closed("the client was closed while waiting for the lock")
    raise error_for(rc)


def _cancel_ptr(cancel: Optional["Cancel"]) -> Any:
    """A user's Cancel as its C token (TypeError for anything else)."""
    if not isinstance(cancel, Cancel):
        raise TypeError("cancel must be an rlock.Cancel, not "
                        f"{type(cancel).__name__}")
    return cancel._ptr


class Lock:
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

    _new = staticmethod(lib.rlock_lock_new)
    kind = "reentrant"

    def __init__(self, client: Client, name: str, *,
                 wait: Optional[float] = None,
                 lease: Optional[float] = None) -> None:
        if not isinstance(client, Client):
            raise TypeError("client must be an rlock.Client, not "
                            f"{type(client).__name__}")
        wait_ms(True, wait, "wait")  # checked now, used at each acquire
        lease_ms(lease)
        self._wait: Optional[float] = wait
        self._lease: Optional[float] = lease
        p = ffi.new("rlock_lock **")
        self._client = client
        self._name = name
        client._enter()
        try:
            rc = self._make(p, client._ptr, _bytes(name, "name"))
            if rc != OK:
                raise error_for(rc)
        finally:
            client._leave()
        self._h = Handle(p[0], lib.rlock_lock_free)
        client._track(self._h)

    def _make(self, out: Any, client: Any, name: bytes) -> int:
        return int(self._new(out, client, name))

    def __del__(self) -> None:
        h = getattr(self, "_h", None)
        if h is not None:
            self._client._untrack(h)

    def __repr__(self) -> str:
        return f"<rlock.{type(self).__name__} {self._name!r}>"

    @property
    def name(self) -> str:
        """The lock's name (its key in Redis)."""
        return self._name

    @property
    def client(self) -> Client:
        """The client the lock uses."""
        return self._client

    @property
    def wait(self) -> Optional[float]:
        """The lock's own wait in seconds (None: for ever), given to
        client.lock(): what ``with`` and acquire() wait by default."""
        return self._wait

    @property
    def lease(self) -> Optional[float]:
        """The lock's own lease in seconds (None: renewed by the watchdog
        while held), given to client.lock()."""
        return self._lease

    def acquire(self, blocking: bool = True,
                timeout: Optional[float] = DEFAULT,
                lease: Optional[float] = DEFAULT, *,
                wait: Optional[float] = DEFAULT, owner: OwnerLike = None,
                cancel: Optional[Cancel] = None) -> bool:
        """Acquire the lock, waiting for it as threading.Lock does.

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
                self._give_back(owner)
            raise

    _wants_token = False

    def _take(self, blocking: bool, timeout: Any, lease: Any, wait: Any,
              owner: OwnerLike, cancel: Optional[Cancel],
              took: List[bool]) -> bool:
        """acquire()'s work; appends to `took` once a hold is taken (the
        caller gives it back if an exception follows)."""
        wait_v = pick_wait(blocking, timeout, wait, self._wait)
        lease_v = pick_lease(lease, self._lease)
        own = owner_number(owner)
        user = None if cancel is None else _cancel_ptr(cancel)
        tok = _thread_cancel() if user is None else user
        c = self._client
        ptr = self._h.ptr
        if own == 0 and user is None and not self._wants_token:
            def attempt(w: int, box: Any) -> None:
                c._enter(tok, reset=False)
                try:
                    lib.rlock_py_lock_try_acquire(ptr, w, lease_v, tok, box)
                finally:
                    c._leave(tok)
            rc = _wait.wait(attempt, wait_v, tok, True, took)
            return _result(rc, None)
        o = ffi.new("rlock_acquire_options *")
        lib.rlock_acquire_options_init(o, lib.RLOCK_ACQUIRE_OPTIONS_VERSION)
        o.lease_ms, o.owner, o.cancel = lease_v, own, tok
        token = ffi.new("int64_t *") if self._wants_token else None
        if token is not None:
            o.token = token
        mine = None if user is not None else tok

        def attempt_opts(w: int, box: Any) -> None:
            o.wait_ms = w
            c._enter(mine, reset=False)
            try:
                lib.rlock_py_lock_acquire(ptr, o, box)
            finally:
                c._leave(mine)
        rc = _wait.wait(attempt_opts, wait_v, tok, user is None, took)
        got = _result(rc, cancel)
        if got and token is not None:
            self._got_token(own, int(token[0]))
        return got

    def _give_back(self, owner: OwnerLike) -> None:
        """Release the hold an interrupted acquisition took; its errors
        give way to the exception being raised."""
        try:
            self.release(owner=owner)
        except Exception:
            pass

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
        own = owner_number(owner)
        c = self._client
        c._enter()
        try:
            rc = lib.rlock_lock_release_owner(self._h.ptr, own)
        finally:
            c._leave()
        if rc != OK:
            raise error_for(rc)

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
                raise Locked(f"lock '{self._name}' was not acquired within "
                             f"its wait of {self._wait} s")
            return self
        except BaseException:
            if took:
                self._give_back(None)
            raise

    def __exit__(self, et: Optional[Type[BaseException]],
                 ev: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self.release()

    def _query(self, fn: Callable[..., int], ctype: str, *args: Any) -> Any:
        out = ffi.new(ctype)
        c = self._client
        c._enter()
        try:
            rc = fn(out, self._h.ptr, *args)
        finally:
            c._leave()
        if rc != OK:
            raise error_for(rc)
        return out[0]

    def locked(self) -> bool:
        """Whether anyone holds the lock (one round trip)."""
        return bool(self._query(lib.rlock_lock_is_locked, "int *"))

    def held(self, owner: OwnerLike = None) -> bool:
        """Whether the calling thread (or `owner`) holds it (server's
        answer)."""
        return bool(self._query(lib.rlock_lock_is_held_owner, "int *",
                                owner_number(owner)))

    def owned(self, owner: OwnerLike = None) -> bool:
        """held(), under redis-py's name."""
        return self.held(owner)

    def holds(self, owner: OwnerLike = None) -> int:
        """The hold count of the calling thread (or `owner`), 0 if none."""
        return int(self._query(lib.rlock_lock_hold_count_owner,
                               "int64_t *", owner_number(owner)))

    @property
    def hold_count(self) -> int:
        """The calling thread's hold count on the server (0 when not
        held); holds(owner) for an explicit owner."""
        return self.holds()

    @property
    def ttl(self) -> Optional[float]:
        """Seconds left on the lock's lease, None when it is not locked."""
        ms = int(self._query(lib.rlock_lock_ttl, "int64_t *"))
        return None if ms < 0 else ms / 1000

    def force_release(self) -> bool:
        """Delete the lock whoever holds it and wake a waiter; True when
        there was a lock to delete."""
        return bool(self._query(lib.rlock_lock_force_release, "int *"))

    def check(self, owner: OwnerLike = None) -> bool:
        """Whether the calling thread's (or `owner`'s) hold is still good,
        answered locally without a round trip: True while held, False when
        not held here.

        Raises:
            LockLost: the watchdog found it gone, its fixed lease ran out,
                or renewals failed for a whole watchdog lease.
        """
        c = self._client
        c._enter()
        try:
            rc = lib.rlock_lock_check_owner(self._h.ptr, owner_number(owner))
        finally:
            c._leave()
        if rc == lib.RLOCK_ENOTHELD:
            return False
        if rc != OK:
            raise error_for(rc)
        return True

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
        ms = lease_ms(lease)
        if ms == lib.RLOCK_LEASE_WATCHDOG:
            raise InvalidArgument("extend needs a lease in seconds")
        c = self._client
        c._enter()
        try:
            rc = lib.rlock_lock_extend_owner(self._h.ptr, owner_number(owner),
                                             ms)
        finally:
            c._leave()
        if rc != OK:
            raise error_for(rc)

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
        if self._lease is None:
            raise InvalidArgument(
                f"reacquire needs the lock's own lease (client.lock("
                f"{self._name!r}, lease=...)); this one has none: extend("
                f"seconds) a hold taken with acquire(lease=...)")
        self.extend(self._lease, owner)

    def inspect(self) -> LockInfo:
        """The lock's whole state in one atomic step (LockInfo): TTL, every
        holder with its hold count, a fair lock's queue."""
        p = ffi.new("rlock_lock_info **")
        c = self._client
        c._enter()
        try:
            rc = lib.rlock_lock_inspect(p, self._h.ptr)
        finally:
            c._leave()
        if rc != OK:
            raise error_for(rc)
        try:
            return lock_info(self._name, p[0])
        finally:
            lib.rlock_lock_info_free(p[0])


class FairLock(Lock):
    """A fair lock (Redisson's RFairLock): waiters acquire in the order
    they arrived; a waiter that gives up (timeout, Cancel) leaves the
    queue."""

    _new = staticmethod(lib.rlock_lock_new_fair)
    kind = "fair"


class NonReentrantLock(Lock):
    """A non-reentrant lock (Redisson 4.4's RedissonNonReentrantLock): the
    lock's layout, but the holder acquiring it again gets AlreadyHeld at
    once, whatever the wait."""

    _new = staticmethod(lib.rlock_lock_new_nonreentrant)
    kind = "nonreentrant"


class NonReentrantFairLock(FairLock):
    """A non-reentrant fair lock (RedissonNonReentrantFairLock)."""

    _new = staticmethod(lib.rlock_lock_new_fair_nonreentrant)
    kind = "nonreentrant-fair"


class FencedLock(Lock):
    """A fenced lock (Redisson's RFencedLock): every acquisition takes the
    next fencing token of the lock's name, which only grows: a resource
    that remembers the highest token it saw refuses a stale holder."""

    _new = staticmethod(lib.rlock_lock_new_fenced)
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
        return int(self._query(lib.rlock_lock_token, "int64_t *"))


class SpinLock(Lock):
    """A spin lock (Redisson's RSpinLock): a waiter never subscribes; it
    retries after a back-off (client.spin_lock's keywords)."""

    kind = "spin"

    def __init__(self, client: Client, name: str, opts: Any = None, *,
                 wait: Optional[float] = None,
                 lease: Optional[float] = None) -> None:
        self._opts = opts if opts is not None else spin_options(
            "exponential", None, None, None, None, None)
        super().__init__(client, name, wait=wait, lease=lease)

    def _make(self, out: Any, client: Any, name: bytes) -> int:
        return int(lib.rlock_lock_new_spin_opts(out, client, name,
                                                self._opts))


class ReadLock(Lock):
    """The read half of a read-write lock: shared by any number of
    owners while no writer holds the write half."""

    _new = staticmethod(lib.rlock_lock_new_read)
    kind = "read"


class WriteLock(Lock):
    """The write half of a read-write lock: one owner, and no readers."""

    _new = staticmethod(lib.rlock_lock_new_write)
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


def _members(locks: Sequence[Any], what: str) -> List[Lock]:
    if len(locks) == 1 and not isinstance(locks[0], Lock) and isinstance(
            locks[0], Iterable):
        locks = list(locks[0])
    for i, m in enumerate(locks):
        if not isinstance(m, Lock):
            raise TypeError(f"{what} member {i} must be an rlock lock "
                            f"(client.lock(), ...), not {type(m).__name__}")
    return list(locks)


class _Group:
    """What MultiLock and RedLock share: members on one or more clients,
    entered together for every call; a wait and a lease of their own for
    ``with`` and acquire() (``wait=``, ``lease=``, as client.lock's)."""

    _new: Callable[..., int]
    _free: Callable[[Any], None]
    _what = ""

    def __init__(self, *locks: Lock, wait: Optional[float] = None,
                 lease: Optional[float] = None) -> None:
        self._locks = _members(locks, self._what)
        wait_ms(True, wait, "wait")
        lease_ms(lease)
        self._wait: Optional[float] = wait
        self._lease: Optional[float] = lease
        self._clients = list({id(m.client): m.client
                              for m in self._locks}.values())
        arr = ffi.new("rlock_lock *[]", [m._h.ptr for m in self._locks]
                      or [ffi.NULL])
        p = ffi.new(f"rlock_{self._what.lower()} **")
        self._enter(None)
        try:
            rc = self._new(p, arr, len(self._locks))
            if rc != OK:
                raise error_for(rc)
        finally:
            self._leave(None)
        self._h = Handle(p[0], self._free)
        for m in self._locks:  # freed before any member
            m._h.deps.append(self._h)

    def _enter(self, tok: Any, reset: bool = True) -> None:
        done: List[Client] = []
        try:
            for c in self._clients:
                c._enter(tok, reset=reset and not done)
                done.append(c)
        except BaseException:
            for c in done:
                c._leave(tok)
            raise

    def _leave(self, tok: Any) -> None:
        for c in self._clients:
            c._leave(tok)

    def __del__(self) -> None:
        h = getattr(self, "_h", None)
        if h is not None:
            for m in self._locks:
                try:
                    m._h.deps.remove(h)
                except ValueError:
                    pass
            h.free()

    @property
    def locks(self) -> Tuple[Lock, ...]:
        """The members, in order."""
        return tuple(self._locks)

    @property
    def wait(self) -> Optional[float]:
        """The group's own wait in seconds (None: for ever)."""
        return self._wait

    @property
    def lease(self) -> Optional[float]:
        """The group's own lease in seconds (None: the watchdog)."""
        return self._lease

    def _take(self, blocking: bool, timeout: Any, lease: Any, wait: Any,
              owner: OwnerLike, cancel: Optional[Cancel],
              took: List[bool]) -> bool:
        """acquire()'s work (Lock._take's contract)."""
        o = ffi.new("rlock_acquire_options *")
        lib.rlock_acquire_options_init(o, lib.RLOCK_ACQUIRE_OPTIONS_VERSION)
        wait_v = pick_wait(blocking, timeout, wait, self._wait)
        o.lease_ms = pick_lease(lease, self._lease)
        o.owner = owner_number(owner)
        user = None if cancel is None else _cancel_ptr(cancel)
        tok = _thread_cancel() if user is None else user
        o.cancel = tok
        mine = None if user is not None else tok

        def attempt(w: int, box: Any) -> None:
            o.wait_ms = w
            self._enter(mine, reset=False)
            try:
                self._call(o, box)
            finally:
                self._leave(mine)
        rc = _wait.wait(attempt, wait_v, tok, user is None, took)
        return _result(rc, cancel)

    def _call(self, o: Any, box: Any) -> None:
        raise NotImplementedError

    def _release(self, fn: Callable[[Any, int], int],
                 owner: OwnerLike) -> None:
        own = owner_number(owner)
        self._enter(None)
        try:
            rc = fn(self._h.ptr, own)
        finally:
            self._leave(None)
        if rc != OK:
            raise error_for(rc)

    def acquire(self, blocking: bool = True,
                timeout: Optional[float] = DEFAULT,
                lease: Optional[float] = DEFAULT, *,
                wait: Optional[float] = DEFAULT, owner: OwnerLike = None,
                cancel: Optional[Cancel] = None) -> bool:
        """Acquire as Lock.acquire (the same arguments, answers and
        Ctrl-C behaviour); the class says what holding means."""
        took: List[bool] = []
        try:
            return self._take(blocking, timeout, lease, wait, owner,
                              cancel, took)
        except BaseException:
            if took:
                self._give_back(owner)
            raise

    def _give_back(self, owner: OwnerLike) -> None:
        try:
            self.release(owner=owner)
        except Exception:
            pass

    def __enter__(self) -> "_Group":
        """Acquire with the group's wait and lease; Locked when the wait
        ends without it (as Lock's)."""
        took: List[bool] = []
        try:
            if not self._take(True, DEFAULT, DEFAULT, DEFAULT, None, None,
                              took):
                raise Locked(f"{self._what} was not acquired within its "
                             f"wait of {self._wait} s")
            return self
        except BaseException:
            if took:
                self._give_back(None)
            raise

    def __exit__(self, *exc: Any) -> None:
        self.release()

    def release(self, *, owner: OwnerLike = None) -> None:
        raise NotImplementedError


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

    def _call(self, o: Any, box: Any) -> None:
        lib.rlock_py_multilock_acquire(self._h.ptr, o, box)

    def release(self, *, owner: OwnerLike = None) -> None:
        """Release one hold of every member, in reverse order; every member
        is released even when one fails, whose error is raised."""
        self._release(lib.rlock_multilock_release_owner, owner)

    def held(self, owner: OwnerLike = None) -> bool:
        """Whether the calling thread (or `owner`) holds every member."""
        out = ffi.new("int *")
        self._enter(None)
        try:
            rc = lib.rlock_multilock_is_held_owner(out, self._h.ptr,
                                                   owner_number(owner))
        finally:
            self._leave(None)
        if rc != OK:
            raise error_for(rc)
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

    def _call(self, o: Any, box: Any) -> None:
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


class Election:
    """A leader election (rlock/election.h), from ``client.election(name)``.

    Leading is holding Redisson's RFencedLock `name`; the term is the
    fencing token of the campaign that won (it only grows: pass it with
    each write so a deposed leader's writes are refused). Campaigns belong
    to the calling thread, or to an explicit ``owner=``; one object serves
    any number of threads.
    """

    def __init__(self, client: Client, name: str) -> None:
        if not isinstance(client, Client):
            raise TypeError("client must be an rlock.Client, not "
                            f"{type(client).__name__}")
        p = ffi.new("rlock_election **")
        self._client = client
        self._name = name
        client._enter()
        try:
            rc = lib.rlock_election_new(p, client._ptr, _bytes(name, "name"))
            if rc != OK:
                raise error_for(rc)
        finally:
            client._leave()
        self._h = Handle(p[0], lib.rlock_election_free)
        client._track(self._h)

    def __del__(self) -> None:
        h = getattr(self, "_h", None)
        if h is not None:
            self._client._untrack(h)

    def __repr__(self) -> str:
        return f"<rlock.Election {self._name!r}>"

    @property
    def name(self) -> str:
        """The election's name (its lock's key)."""
        return self._name

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
            AlreadyHeld: this owner leads already (nothing written).
            InvalidArgument: an empty or too long value, bad durations.
            WrongType, ConnectionError, TimeoutError, Canceled, Closed.
        """
        val = leader_value(value)
        wait_v = pick_wait(True, DEFAULT, wait, None)
        lease_v = pick_lease(lease, None)
        own = owner_number(owner)
        user = None if cancel is None else _cancel_ptr(cancel)
        tok = _thread_cancel() if user is None else user
        o = ffi.new("rlock_acquire_options *")
        lib.rlock_acquire_options_init(o, lib.RLOCK_ACQUIRE_OPTIONS_VERSION)
        o.lease_ms, o.owner, o.cancel = lease_v, own, tok
        term = ffi.new("int64_t *")
        mine = None if user is not None else tok
        c, ptr = self._client, self._h.ptr

        def attempt(w: int, box: Any) -> None:
            o.wait_ms = w
            c._enter(mine, reset=False)
            try:
                lib.rlock_py_election_campaign(ptr, val, o, term, box)
            finally:
                c._leave(mine)
        took: List[bool] = []
        try:
            rc = _wait.wait(attempt, wait_v, tok, user is None, took)
            return int(term[0]) if _result(rc, cancel) else None
        except BaseException:
            if took:
                try:
                    self.resign(owner=owner)
                except Exception:
                    pass
            raise

    def resign(self, *, owner: OwnerLike = None) -> None:
        """Stop leading: the lock is released (a standby is woken).

        Raises:
            NotHeld: the owner does not lead (nothing written).
            LockLost: it led, but lost it meanwhile.
            ConnectionError/TimeoutError: the server cannot be reached.
        """
        c = self._client
        c._enter()
        try:
            rc = lib.rlock_election_resign(self._h.ptr, owner_number(owner))
        finally:
            c._leave()
        if rc != OK:
            raise error_for(rc)

    def check(self, *, owner: OwnerLike = None) -> None:
        """Whether the owner still leads, answered locally (no round
        trip): returns while it leads.

        Raises:
            LockLost: leadership was lost (the lease ran out, the lock was
                deleted or taken, or renewals failed for a whole lease).
            NotHeld: the owner does not lead here.
        """
        c = self._client
        c._enter()
        try:
            rc = lib.rlock_election_check(self._h.ptr, owner_number(owner))
        finally:
            c._leave()
        if rc != OK:
            raise error_for(rc)

    def leading(self, *, owner: OwnerLike = None) -> bool:
        """check() as a bool: False when lost or not leading."""
        try:
            self.check(owner=owner)
            return True
        except (LockLost, NotHeld):
            return False

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
        c._enter()
        try:
            return leader_watch(
                self._h, self._name, interval,
                _LeaderFollow(callback, on_error, c._cbthread.post))
        finally:
            c._leave()

    def observe(self) -> Optional[Leader]:
        """Who leads now, for anyone, in one round trip: a Leader, or None
        when nobody does."""
        out = ffi.new("rlock_leader **")
        c = self._client
        c._enter()
        try:
            rc = lib.rlock_election_observe(out, self._h.ptr)
            if rc != OK:
                raise error_for(rc)
        finally:
            c._leave()
        try:
            return leader_of(out[0])
        finally:
            lib.rlock_leader_free(out[0])
