# SPDX-License-Identifier: BSD-3-Clause
"""What the blocking and the asyncio clients share: durations, owners,
the configuration keywords, lock snapshots, the C handles' lifetimes and
the callbacks' re-dispatch."""
from __future__ import annotations

import enum
import math
import threading
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

from ._errors import Closed, Error, InvalidArgument, error_for
from ._native import ffi, lib

OK = 0
ELOCKED = lib.RLOCK_ELOCKED
ECANCELED = lib.RLOCK_ECANCELED
_MAX_MS = lib.RLOCK_MAX_DURATION_MS
_MAX_OWNER = (1 << 64) - 1


class Status(enum.IntEnum):
    """librlock's status codes (rlock/errors.h); ``Error.code`` is one."""

    OK = lib.RLOCK_OK
    EINVAL = lib.RLOCK_EINVAL
    ENOMEM = lib.RLOCK_ENOMEM
    EIO = lib.RLOCK_EIO
    ETIMEOUT = lib.RLOCK_ETIMEOUT
    EPROTO = lib.RLOCK_EPROTO
    ESERVER = lib.RLOCK_ESERVER
    EAUTH = lib.RLOCK_EAUTH
    EWRONGTYPE = lib.RLOCK_EWRONGTYPE
    ELOCKED = lib.RLOCK_ELOCKED
    ENOTHELD = lib.RLOCK_ENOTHELD
    ELOST = lib.RLOCK_ELOST
    ECLOSED = lib.RLOCK_ECLOSED
    ECANCELED = lib.RLOCK_ECANCELED
    EDEADLK = lib.RLOCK_EDEADLK
    EREPLICA = lib.RLOCK_EREPLICA
    EHELD = lib.RLOCK_EHELD


class PubSubMode(enum.IntEnum):
    """How lock channels use pub/sub on a cluster
    (rlock_config_set_pubsub_mode)."""

    AUTO = lib.RLOCK_PUBSUB_AUTO
    CLASSIC = lib.RLOCK_PUBSUB_CLASSIC
    SHARDED = lib.RLOCK_PUBSUB_SHARDED


class LogLevel(enum.IntEnum):
    """How much a log message matters (rlock_log_level)."""

    ERROR = lib.RLOCK_LOG_ERROR
    WARN = lib.RLOCK_LOG_WARN
    INFO = lib.RLOCK_LOG_INFO
    DEBUG = lib.RLOCK_LOG_DEBUG


def swallow(exc: Any, value: Any, tb: Any) -> None:
    """The onerror of every extern "Python" callback: nothing may reach
    the library, so an exception raised in one is dropped and the
    callback returns its error value (0 unless given)."""


def _text(p: Any) -> Optional[str]:
    """A C string as str (None for NULL)."""
    return None if p == ffi.NULL else ffi.string(p).decode("utf-8",
                                                           "replace")


def _bytes(value: Any, what: str) -> bytes:
    """A str argument as UTF-8 bytes for C; refuses other types and NULs."""
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, not {type(value).__name__}")
    b = value.encode("utf-8")
    if b"\0" in b:
        raise InvalidArgument(f"{what} must not contain a NUL character")
    return b


def seconds_to_ms(value: Any, what: str) -> int:
    """Seconds (int or float) as whole milliseconds, rounded up so that a
    positive duration never becomes 0; the library checks the range."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{what} must be a number of seconds, not "
                        f"{type(value).__name__}")
    if math.isnan(value) or math.isinf(value):
        raise InvalidArgument(f"{what} must be a finite number of seconds, "
                              f"not {value!r}")
    ms = math.ceil(value * 1000)
    return max(min(ms, 1 << 62), -(1 << 62))


class _Default:
    """The default of a keyword whose default is the lock's own (the wait
    and lease given to client.lock())."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "DEFAULT"


#: "The lock's own": the default of acquire()'s timeout/wait and lease.
DEFAULT: Any = _Default()


def pick_wait(blocking: bool, timeout: Any, wait: Any,
              default: Optional[float]) -> int:
    """acquire()'s wait in ms from its `timeout` or `wait` keyword (the
    same thing under threading's and rlock's names; not both), else the
    lock's `default` (None: for ever) when blocking."""
    if timeout is not DEFAULT and wait is not DEFAULT:
        raise TypeError("give the wait as timeout= or as wait=, not both")
    what = "wait" if wait is not DEFAULT else "timeout"
    w = wait if wait is not DEFAULT else timeout
    if w is DEFAULT:
        w, what = (default if blocking else None), "wait"
    return wait_ms(blocking, w, what)


def pick_lease(lease: Any, default: Optional[float]) -> int:
    """acquire()'s lease in ms: `lease`, else the lock's `default`."""
    return lease_ms(default if lease is DEFAULT else lease)


def wait_ms(blocking: bool, timeout: Optional[float],
            what: str = "timeout") -> int:
    """threading.Lock.acquire's (blocking, timeout) as a wait in ms;
    `what` names the keyword in messages."""
    if not isinstance(blocking, bool):
        raise TypeError("blocking must be a bool, not "
                        f"{type(blocking).__name__}")
    if timeout is None or (not isinstance(timeout, bool)
                           and isinstance(timeout, (int, float))
                           and timeout == -1):
        return int(lib.RLOCK_WAIT_FOREVER) if blocking else 0
    if not blocking:
        raise InvalidArgument("can't specify a timeout for a non-blocking "
                              f"call (blocking=False with {what}="
                              f"{timeout!r})")
    ms = seconds_to_ms(timeout, what)
    if timeout < 0:
        raise InvalidArgument(f"{what} must be None or -1 (wait for ever) "
                              f"or a number of seconds >= 0, not "
                              f"{timeout!r}")
    if ms > _MAX_MS:
        raise InvalidArgument(f"{what} {timeout!r} s is longer than 365 "
                              f"days, the longest wait accepted")
    return ms


def lease_ms(lease: Optional[float]) -> int:
    """A lease in seconds (None: the watchdog renews it) as ms."""
    if lease is None:
        return int(lib.RLOCK_LEASE_WATCHDOG)
    ms = seconds_to_ms(lease, "lease")
    if lease <= 0 or ms > _MAX_MS:
        raise InvalidArgument(f"lease must be None (renewed by the "
                              f"watchdog) or 0.001 to 31536000 seconds "
                              f"(365 days), not {lease!r}")
    return ms


class Owner:
    """An explicit owner of holds: for code that acquires on one thread and
    releases on another, or several owners on one thread (tasks, jobs).

    ``Owner()`` takes a number never used before in this process, by a
    thread or another Owner (rlock_owner_new). ``Owner(n)`` uses `n` as
    given, say to act for a Java thread id; the number written after the
    client id in the lock's hash field. Two owners exclude each other even
    on one thread. Pass it as ``owner=`` to acquire, release and the
    queries.
    """

    __slots__ = ("number",)
    number: int

    def __init__(self, number: Optional[int] = None) -> None:
        if number is None:
            self.number = int(lib.rlock_owner_new())
            return
        if isinstance(number, bool) or not isinstance(number, int):
            raise TypeError("Owner number must be an int, not "
                            f"{type(number).__name__}")
        if not 0 < number <= _MAX_OWNER:
            raise InvalidArgument(f"Owner number must be 1 to 2**64-1, "
                                  f"not {number}")
        self.number = number

    @classmethod
    def current_thread(cls) -> "Owner":
        """The calling thread's own owner (what ``owner=None`` means)."""
        return cls(int(lib.rlock_owner_thread()))

    def __int__(self) -> int:
        return self.number

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Owner) and other.number == self.number

    def __hash__(self) -> int:
        return hash(self.number)

    def __repr__(self) -> str:
        return f"rlock.Owner({self.number})"


OwnerLike = Union[Owner, int, None]


def owner_number(owner: OwnerLike) -> int:
    """`owner` as the library's number: 0 (RLOCK_OWNER_THREAD) for None."""
    if owner is None:
        return 0
    if isinstance(owner, Owner):
        return owner.number
    return Owner(owner).number


@dataclass(frozen=True)
class Holder:
    """One holder in a LockInfo: its owner field ("<client id>:<owner
    number>", ":write" appended for a read-write lock's writer) and hold
    count."""

    owner: str
    holds: int


@dataclass(frozen=True)
class Waiter:
    """One queued waiter of a fair lock: its owner field, and the seconds
    left before its deadline in the queue."""

    owner: str
    deadline: float


@dataclass(frozen=True)
class ClientRecord:
    """Who an owner field belongs to: its client's registry record
    (Client.whois(), rlock.aio.Client.awhois(), rlock_client_whois),
    written by every rlock client
    unless its ``registry_period`` is 0.

    Attributes:
        client_id: the client's id, the owner field's part before ':'.
        host: the host name it runs on.
        pid: its process id there.
        program: the ``program`` it was given, else its argv[0].
        version: its rlock version.
        started: when the client was made, Unix epoch seconds (its clock).
    """

    client_id: str
    host: str
    pid: int
    program: str
    version: str
    started: float


def client_record(rec: Any) -> ClientRecord:
    """Copy a filled rlock_client_record into a ClientRecord."""
    def text(field: Any) -> str:
        return str(ffi.string(field).decode("utf-8", "replace"))
    return ClientRecord(client_id=text(rec.client_id), host=text(rec.host),
                        pid=int(rec.pid), program=text(rec.program),
                        version=text(rec.version),
                        started=int(rec.started_ms) / 1000)


@dataclass(frozen=True)
class SyncInfo:
    """A semaphore, permit-expirable semaphore or count-down latch found by
    Client.list_syncs() (rlock_client_list_syncs) or Client.list_counts()
    (rlock_client_list_counts).

    Attributes:
        name: its name (its key).
        kind: from list_syncs(): "semaphore" (a client waits on or follows
            its channel, and it has no permit leased), "latch" (likewise,
            the latch's channel) or "permit-expirable-semaphore" (permits
            leased now); from list_counts(): "permit-expirable-semaphore"
            or "count" (a semaphore's permits, a latch's count or any other
            string of decimal digits: in Redis they look alike).
        value: the number stored: available permits or the latch's count
            (0 when the key is absent).
        leased: permits leased now (a permit-expirable semaphore), else 0.
        subscribers: client connections subscribed to its channel
            (list_syncs(); each may carry several waiters); None from
            list_counts().
        node: the server that holds its key, "host:port".
    """

    name: str
    kind: str
    value: int
    leased: int
    subscribers: Optional[int]
    node: str


@dataclass(frozen=True)
class LockInfo:
    """A lock's whole state, read in one atomic step (inspect()).

    Attributes:
        name: the lock's name.
        locked: whether the key existed.
        mode: "read" or "write" for a read-write lock, else None.
        node: the server that answered, "host:port".
        ttl: seconds left on the lease, None when not locked.
        holders: every holder with its hold count.
        queue: a fair lock's queued waiters, next in line first.
        queue_length: how many waiters were queued (may exceed
            len(queue) in a listing).
        kind: from list_locks(): "reentrant", "fair", "read-write" or
            "fenced"; None from inspect().
    """

    name: str
    locked: bool
    mode: Optional[str]
    node: Optional[str]
    ttl: Optional[float]
    holders: Tuple[Holder, ...]
    queue: Tuple[Waiter, ...]
    queue_length: int
    kind: Optional[str] = None


@dataclass(frozen=True)
class Leader:
    """Who leads an election, read in one atomic step (observe()).

    Attributes:
        owner: the leader's owner field ("<client id>:<owner>").
        value: what the leader published; None for a holder of the lock
            that did not campaign (a Redisson RFencedLock, say).
        term: the leader's term, its fencing token (0 when unknown, as
            for the value).
        ttl: seconds left on the leader's lease.
    """

    owner: str
    value: Optional[str]
    term: int
    ttl: float


def leader_of(ptr: Any) -> Optional[Leader]:
    """Copy a rlock_leader (borrowed) into a Leader; None: nobody leads."""
    if not lib.rlock_leader_present(ptr):
        return None
    return Leader(owner=_text(lib.rlock_leader_owner(ptr)) or "",
                  value=_text(lib.rlock_leader_value(ptr)),
                  term=int(lib.rlock_leader_term(ptr)),
                  ttl=max(0, int(lib.rlock_leader_ttl_ms(ptr))) / 1000)


LeaderCallback = Callable[[Optional[Leader]], Any]
ErrorCallback = Callable[[Error], Any]


class _LeaderFollow:
    """The userdata of a leader watch's C callback: turns each call into
    a Leader (or None, or an error) and hands it to `post`, which runs it
    where the client runs callbacks."""

    def __init__(self, callback: LeaderCallback,
                 on_error: Optional[ErrorCallback],
                 post: Callable[..., None]) -> None:
        self.callback = callback
        self.on_error = on_error
        self.post = post

    def told(self, rc: int, leader: Optional[Leader]) -> None:
        if rc == OK:
            self.post(self.callback, leader)
        elif self.on_error is not None:
            self.post(self.on_error, error_for(rc))


@ffi.def_extern(onerror=swallow)
def _rlock_leader_change(arg: Any, rc: int, leader: Any) -> None:
    """C leader-change callback (the client's loop thread): copy the
    snapshot, free it, queue the user's callback; never raises into C."""
    v = None
    if leader != ffi.NULL:
        try:
            v = leader_of(leader)
        finally:
            lib.rlock_leader_free(leader)
    ffi.from_handle(arg).told(rc, v)


class LeaderWatch:
    """A running Election.watch(): close() (or leaving a ``with`` block)
    stops it; so do closing its election's client and freeing the
    election. Once close() has returned, no new call of the callback is
    queued."""

    def __init__(self, h: "Handle", name: str) -> None:
        self._h = h
        self._name = name

    def close(self) -> None:
        """Stop following (waits for a C callback under way to return)."""
        self._h.free()

    @property
    def closed(self) -> bool:
        """Whether it was stopped."""
        return self._h.ptr is None

    def __enter__(self) -> "LeaderWatch":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<rlock.LeaderWatch {self._name!r}>"


def leader_watch(election: "Handle", name: str, interval: float,
                 follow: _LeaderFollow) -> LeaderWatch:
    """rlock_election_watch_new on `election` (its handle frees the watch
    first); the watch's handle keeps `follow`'s C handle alive."""
    ms = seconds_to_ms(interval, "interval")
    userdata = ffi.new_handle(follow)
    p = ffi.new("rlock_election_watch **")
    rc = lib.rlock_election_watch_new(p, election.ptr, ms,
                                      lib._rlock_leader_change, userdata)
    if rc != OK:
        raise error_for(rc)

    def free(ptr: Any, keep: Any = userdata) -> None:
        lib.rlock_election_watch_free(ptr)
        del keep

    h = Handle(p[0], free)
    election.deps.append(h)
    return LeaderWatch(h, name)


def leader_value(value: str) -> bytes:
    """A campaign's value as the library takes it (checked there too)."""
    if not isinstance(value, str):
        raise TypeError(f"value must be a str, not {type(value).__name__}")
    if "\0" in value:
        raise InvalidArgument("a leader value cannot contain NUL")
    return value.encode()


def lock_info(name: str, info: Any, kind: Optional[str] = None) -> LockInfo:
    """Copy a rlock_lock_info (borrowed) into a LockInfo."""
    ttl = int(lib.rlock_lock_info_ttl_ms(info))
    holders = tuple(
        Holder(_text(lib.rlock_lock_info_holder_owner(info, i)) or "",
               int(lib.rlock_lock_info_holder_holds(info, i)))
        for i in range(lib.rlock_lock_info_holder_count(info)))
    queue = tuple(
        Waiter(_text(lib.rlock_lock_info_queue_owner(info, i)) or "",
               int(lib.rlock_lock_info_queue_deadline_ms(info, i)) / 1000)
        for i in range(lib.rlock_lock_info_queue_count(info)))
    return LockInfo(name=name, locked=bool(lib.rlock_lock_info_locked(info)),
                    mode=_text(lib.rlock_lock_info_mode(info)),
                    node=_text(lib.rlock_lock_info_node(info)),
                    ttl=None if ttl < 0 else ttl / 1000, holders=holders,
                    queue=queue,
                    queue_length=int(lib.rlock_lock_info_queue_length(info)),
                    kind=kind)


@dataclass(frozen=True)
class MemberResult:
    """One RedLock member's outcome in a round: taken, or why not."""

    taken: bool
    code: int
    message: str


@dataclass(frozen=True)
class RedLockResult:
    """The last round of a RedLock acquisition: the validity left (seconds;
    0 when the quorum was not reached) and each member's outcome, in the
    members' order."""

    validity: float
    members: Tuple[MemberResult, ...]


def redlock_result(res: Any) -> RedLockResult:
    """Copy a rlock_redlock_result (not freed here)."""
    if res == ffi.NULL:
        return RedLockResult(0.0, ())
    members = tuple(
        MemberResult(lib.rlock_redlock_result_status(res, i) == OK,
                     int(lib.rlock_redlock_result_status(res, i)),
                     _text(lib.rlock_redlock_result_message(res, i)) or "")
        for i in range(lib.rlock_redlock_result_count(res)))
    return RedLockResult(
        int(lib.rlock_redlock_result_validity_ms(res)) / 1000, members)


class Handle:
    """A C object's pointer and its destructor, freed once. A handle
    frees its dependants first (a MultiLock before its member locks)."""

    __slots__ = ("ptr", "_free", "deps", "__weakref__")

    def __init__(self, ptr: Any, free: Callable[[Any], None]) -> None:
        self.ptr = ptr
        self._free = free
        self.deps: List["Handle"] = []

    def free(self) -> None:
        """Free the dependants, then this; later calls do nothing."""
        ptr, self.ptr = self.ptr, None
        if ptr is None:
            return
        deps, self.deps = self.deps, []
        for d in reversed(deps):
            d.free()
        self._free(ptr)


SPIN_BACKOFFS = {"exponential": lib.RLOCK_SPIN_EXPONENTIAL,
                 "constant": lib.RLOCK_SPIN_CONSTANT}


def spin_options(backoff: str, initial_delay: Optional[float],
                 max_delay: Optional[float], multiplier: Optional[float],
                 jitter: Optional[bool], delay: Optional[float]) -> Any:
    """rlock_spin_options from the spin_lock() keywords (None: default)."""
    o = ffi.new("rlock_spin_options *")
    lib.rlock_spin_options_init(o, lib.RLOCK_SPIN_OPTIONS_VERSION)
    if backoff not in SPIN_BACKOFFS:
        raise InvalidArgument(f"backoff must be 'exponential' or "
                              f"'constant', not {backoff!r}")
    o.backoff = SPIN_BACKOFFS[backoff]
    if initial_delay is not None:
        o.initial_ms = seconds_to_ms(initial_delay, "initial_delay")
    if max_delay is not None:
        o.max_ms = seconds_to_ms(max_delay, "max_delay")
    if delay is not None:
        o.delay_ms = seconds_to_ms(delay, "delay")
    if multiplier is not None:
        if isinstance(multiplier, bool) or not isinstance(multiplier,
                                                          (int, float)):
            raise TypeError("multiplier must be a number, not "
                            f"{type(multiplier).__name__}")
        o.multiplier = float(multiplier)
    if jitter is not None:
        o.jitter = 1 if jitter else 0
    return o


def check(rc: int, context: str = "") -> None:
    """Raise the exception for a failed call's status (on the calling
    thread, right after the call: it reads the thread's last error)."""
    if rc != OK:
        raise error_for(rc, context=context)


def answer(rc: int, message: Optional[str] = None,
           closed: Optional[str] = None) -> bool:
    """An acquisition's status as acquire()'s answer: True when taken,
    False when the wait ended first (RLOCK_ELOCKED), else the exception,
    with `message` (an asynchronous call's) or the thread's last error.
    `closed`: what a blocking wait on the thread's own token waited for;
    its ECANCELED means the client was closed (Closed)."""
    if rc == OK:
        return True
    if rc == ELOCKED:
        return False
    if rc == ECANCELED and closed is not None:
        raise Closed(f"the client was closed while waiting for {closed}")
    raise error_for(rc, message)


def held_answer(rc: int) -> bool:
    """A local check's status (rlock_lock_check_owner, ...): True while
    held, False when not held here (RLOCK_ENOTHELD), else the exception
    (LockLost: it was lost)."""
    if rc == lib.RLOCK_ENOTHELD:
        return False
    check(rc)
    return True


def acquire_options(lease: int, owner: int, wait: int = 0) -> Any:
    """A rlock_acquire_options with the lease, owner and wait given (ms and
    owner number), the rest the library's defaults."""
    o = ffi.new("rlock_acquire_options *")
    lib.rlock_acquire_options_init(o, lib.RLOCK_ACQUIRE_OPTIONS_VERSION)
    o.lease_ms, o.owner, o.wait_ms = lease, owner, wait
    return o


# The configuration keywords by the kind of value they take, each with its
# setter; make_config sets them in a fixed order (the first bad one is the
# one reported). Durations are seconds; see Client's docstring.
_DURATIONS = (
    ("connect_timeout", lib.rlock_config_set_connect_timeout_ms),
    ("command_timeout", lib.rlock_config_set_command_timeout_ms),
    ("watchdog_timeout", lib.rlock_config_set_watchdog_timeout_ms),
    ("fair_wait_timeout", lib.rlock_config_set_fair_wait_timeout_ms),
    ("replica_sync_timeout", lib.rlock_config_set_replica_sync_timeout_ms))
_COUNTS = (("pool_size", lib.rlock_config_set_pool_size),
           ("metrics_names", lib.rlock_config_set_metrics_names))
_FLAGS = {"fair_deferred_shift": lib.rlock_config_set_fair_deferred_shift,
          "replica_sync": lib.rlock_config_set_replica_sync,
          "tls_insecure": lib.rlock_config_set_tls_insecure}
# Optional strings set together by one setter (NULL for those not given).
_TLS = ((("tls_ca", "tls_ca_dir"), lib.rlock_config_set_tls_ca),
        (("tls_cert", "tls_key"), lib.rlock_config_set_tls_cert),
        (("tls_server_name",), lib.rlock_config_set_tls_server_name))
_LOGIN = ((("user", "password"), lib.rlock_config_set_password),)
_PUBSUB_MODES = {"auto": PubSubMode.AUTO, "classic": PubSubMode.CLASSIC,
                 "sharded": PubSubMode.SHARDED}


def _set(cfg: Any, what: str, rc: int) -> None:
    if rc != OK:
        raise error_for(rc, context=f"{what}: ")


def make_config(url: Optional[str], kw: Dict[str, Any],
                lost_cb: Any, log_cb: Any, userdata: Any) -> Any:
    """A rlock_config (freed by cffi when dropped) from Client's keywords.
    `lost_cb` and `log_cb` are the extern "Python" functions to install
    (or None), `userdata` their handle."""
    p = ffi.new("rlock_config **")
    check(lib.rlock_config_new(p))
    cfg = ffi.gc(p[0], lib.rlock_config_free)
    if url is not None:
        _set(cfg, f"url {url!r}",
             lib.rlock_config_set_url(cfg, _bytes(url, "url")))
    for key, setter in _DURATIONS:
        v = kw.get(key)
        if v is not None:
            _set(cfg, f"{key}={v!r}", setter(cfg, seconds_to_ms(v, key)))
    if "unreachable_retry" in kw:
        v = kw["unreachable_retry"]
        ms = (lib.RLOCK_RETRY_FOREVER if v is None
              else seconds_to_ms(v, "unreachable_retry"))
        _set(cfg, f"unreachable_retry={v!r}",
             lib.rlock_config_set_unreachable_retry_ms(cfg, ms))
    for key, setter in _COUNTS:
        v = kw.get(key)
        if v is not None:
            _set(cfg, f"{key}={v!r}", setter(cfg, _count(v, key)))
    _set_pubsub_mode(cfg, kw.get("pubsub_mode"))
    _set_flags(cfg, kw, "fair_deferred_shift", "replica_sync")
    _set_linger(cfg, kw)
    _set_strings(cfg, kw, _TLS)
    _set_flags(cfg, kw, "tls_insecure")
    _set_strings(cfg, kw, _LOGIN)
    _set_registry(cfg, kw)
    if lost_cb is not None:
        _set(cfg, "on_lost",
             lib.rlock_config_set_lost_callback(cfg, lost_cb, userdata))
    if log_cb is not None:
        level = kw.get("log_level", LogLevel.WARN)
        _set(cfg, f"log_level={level!r}",
             lib.rlock_config_set_log(cfg, log_cb, int(level), userdata))
    return cfg


def _count(v: Any, key: str) -> int:
    """A count keyword (pool_size, ...): an int, clamped so that the
    library, not cffi, refuses what is out of range."""
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"{key} must be an int, not {type(v).__name__}")
    return max(min(v, 1 << 30), -1)


def _set_flags(cfg: Any, kw: Dict[str, Any], *keys: str) -> None:
    for key in keys:
        v = kw.get(key)
        if v is not None:
            _set(cfg, key, _FLAGS[key](cfg, 1 if v else 0))


def _set_strings(cfg: Any, kw: Dict[str, Any],
                 groups: Tuple[Tuple[Tuple[str, ...], Any], ...]) -> None:
    for keys, setter in groups:
        if all(kw.get(k) is None for k in keys):
            continue
        args = [ffi.NULL if kw.get(k) is None else _bytes(kw[k], k)
                for k in keys]
        _set(cfg, "/".join(keys), setter(cfg, *args))


def _set_pubsub_mode(cfg: Any, v: Any) -> None:
    if v is None:
        return
    mode = _PUBSUB_MODES.get(v) if isinstance(v, str) else v
    if not isinstance(mode, int) or isinstance(mode, bool):
        raise InvalidArgument(f"pubsub_mode must be 'auto', 'classic', "
                              f"'sharded' or a PubSubMode, not {v!r}")
    _set(cfg, f"pubsub_mode={v!r}",
         lib.rlock_config_set_pubsub_mode(cfg, int(mode)))


def _set_linger(cfg: Any, kw: Dict[str, Any]) -> None:
    linger = kw.get("subscription_linger")
    idle = kw.get("max_idle_subscriptions")
    if linger is None and idle is None:
        return
    ms = 1000 if linger is None else seconds_to_ms(
        linger, "subscription_linger")
    n = _count(64 if idle is None else idle, "max_idle_subscriptions")
    _set(cfg, f"subscription_linger={linger!r}, "
         f"max_idle_subscriptions={idle!r}",
         lib.rlock_config_set_subscription_linger(cfg, ms, n))


def _set_registry(cfg: Any, kw: Dict[str, Any]) -> None:
    v = kw.get("registry_period")
    if v is not None:
        _set(cfg, f"registry_period={v!r}",
             lib.rlock_config_set_registry_period(
                 cfg, seconds_to_ms(v, "registry_period")))
    v = kw.get("program")
    if v is not None:
        _set(cfg, f"program={v!r}",
             lib.rlock_config_set_program(cfg, _bytes(v, "program")))


class CallbackThread:
    """Runs the user's callbacks (lost locks, log messages) on a thread of
    its own, in order: the library calls its C callbacks on its background
    thread, which must not block or call back into the client (a callback
    that closes the client would make the thread join itself). Started at
    the first event; an exception raised by a callback is reported through
    threading.excepthook and does not stop the thread."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._mu = threading.Lock()
        self._items: List[Optional[Tuple[Callable[..., Any], Tuple[Any,
                                                                   ...]]]] = []
        self._cv = threading.Condition(self._mu)
        self._thread: Optional[threading.Thread] = None

    def post(self, fn: Callable[..., Any], *args: Any) -> None:
        """Queue fn(*args) (any thread; never blocks for long)."""
        with self._mu:
            self._items.append((fn, args))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run,
                                                name=self._name, daemon=True)
                self._thread.start()
            self._cv.notify()

    def _run(self) -> None:
        while True:
            with self._mu:
                while not self._items:
                    self._cv.wait()
                item = self._items.pop(0)
            if item is None:
                return
            fn, args = item
            try:
                fn(*args)
            except Exception:  # reported, never raised into the library
                import sys
                ex = sys.exc_info()
                threading.excepthook(threading.ExceptHookArgs(
                    (ex[0], ex[1], ex[2], threading.current_thread())))

    def stop(self) -> None:
        """Run what is queued, then end the thread (joined unless called
        from it)."""
        with self._mu:
            t = self._thread
            if t is None:
                return
            self._items.append(None)
            self._cv.notify()
        if t is not threading.current_thread():
            t.join()


__all__ = ["Status", "PubSubMode", "LogLevel", "Owner", "Holder", "Waiter",
           "LockInfo", "SyncInfo", "MemberResult", "RedLockResult", "Error"]
