# SPDX-License-Identifier: BSD-3-Clause
"""The objects a client makes (locks, groups of locks, elections,
semaphores, latches): the half that the blocking classes (rlock.Lock, ...)
and the asyncio ones (rlock.aio.Lock, ...) share. How such an object is
made, checked and freed, its own wait and lease, and the reading of the
library's answers are decided here; the classes of _client.py, _sync.py
and aio.py add how a call is made (a blocking call, or an _async call and
its future) and their docstrings."""
from __future__ import annotations

from typing import (Any, Callable, ClassVar, Dict, Generic, Iterable, List,
                    Optional, Protocol, Sequence, Tuple, Type, TypeVar)

from ._base import (Handle, OwnerLike, _bytes, check, held_answer,
                    lease_ms, owner_number, spin_options, wait_ms)
from ._errors import InvalidArgument, Locked
from ._native import ffi, lib

_T = TypeVar("_T")


class ClientLike(Protocol):
    """What the objects use of their client (rlock.Client's and
    rlock.aio.Client's): its C pointer, a call made on it (counted in on
    the blocking client; refused once closed on both), and the handles it
    frees before itself."""

    _ptr: Any

    def _call(self, fn: Callable[..., _T], *args: Any) -> _T: ...

    def _track(self, h: Handle) -> None: ...

    def _untrack(self, h: Handle) -> None: ...


C = TypeVar("C", bound=ClientLike)


class OwnWait:
    """An object's own wait (``client.lock(name, wait=5)``): checked when
    it is made, used by ``with`` and by acquire() unless told otherwise."""

    _wait: Optional[float] = None

    def _own_wait(self, wait: Optional[float]) -> None:
        wait_ms(True, wait, "wait")
        self._wait = wait

    @property
    def wait(self) -> Optional[float]:
        """Its own wait in seconds (None: for ever): what ``with`` and
        acquire() wait unless told otherwise."""
        return self._wait


class OwnTimes(OwnWait):
    """An own wait and an own lease (``client.lock(name, wait=5,
    lease=30)``)."""

    _lease: Optional[float] = None

    def _own_times(self, wait: Optional[float],
                   lease: Optional[float]) -> None:
        self._own_wait(wait)
        lease_ms(lease)
        self._lease = lease

    @property
    def lease(self) -> Optional[float]:
        """Its own lease in seconds (None: renewed by the watchdog while
        held): what ``with`` and acquire() take unless told otherwise."""
        return self._lease


class Named(Generic[C]):
    """A C object a client makes from a name: made by `_new` (or
    `_make`), freed by `_free`, before its client (which tracks it).
    `_client_type` is the client it takes, `_api` its package (in messages
    and reprs), `_own` how it reads an ``owner=`` (the calling thread's
    by default, or the current task's)."""

    _new: Callable[..., int]
    _free: Callable[[Any], None]
    _ctype = ""
    _client_type: ClassVar[type]
    _api: ClassVar[str] = "rlock"
    _own: Callable[[Any], int] = staticmethod(owner_number)

    def __init__(self, client: C, name: str) -> None:
        self._check_client(client)
        self._open(client, name)

    def _check_client(self, client: Any) -> None:
        if not isinstance(client, self._client_type):
            raise TypeError(f"client must be an {self._api}.Client, not "
                            f"{type(client).__name__}")

    def _open(self, client: C, name: str) -> None:
        self._client = client
        self._name = name
        p = ffi.new(f"{self._ctype} **")
        # Inside the call: a closed client is told before a bad name.
        check(client._call(
            lambda: self._make(p, client._ptr, _bytes(name, "name"))))
        self._h = Handle(p[0], self._free)
        client._track(self._h)

    def _make(self, out: Any, client: Any, name: bytes) -> int:
        return int(self._new(out, client, name))

    def __del__(self) -> None:
        h = getattr(self, "_h", None)
        if h is not None:
            self._client._untrack(h)

    def __repr__(self) -> str:
        return f"<{self._api}.{type(self).__name__} {self._name!r}>"

    @property
    def name(self) -> str:
        """The name (its key in Redis)."""
        return self._name

    @property
    def client(self) -> C:
        """The client it uses."""
        return self._client

    def _do(self, fn: Callable[..., int], *args: Any) -> None:
        """fn(ptr, *args) on the client, raising the status's exception."""
        check(self._client._call(fn, self._h.ptr, *args))

    def _out(self, fn: Callable[..., int], ctype: str, *args: Any) -> Any:
        """fn(out, ptr, *args)'s *out, raising the status's exception."""
        out = ffi.new(ctype)
        check(self._client._call(fn, out, self._h.ptr, *args))
        return out[0]

    def _held(self, fn: Callable[..., int], *args: Any) -> bool:
        """A local check, fn(ptr, *args), as held_answer() reads it."""
        return held_answer(self._client._call(fn, self._h.ptr, *args))


# The library's constructor of each kind of lock (a spin lock's takes its
# back-off too: SpinBase).
_LOCK_NEW: Dict[str, Callable[..., int]] = {
    "reentrant": lib.rlock_lock_new, "fair": lib.rlock_lock_new_fair,
    "nonreentrant": lib.rlock_lock_new_nonreentrant,
    "nonreentrant-fair": lib.rlock_lock_new_fair_nonreentrant,
    "fenced": lib.rlock_lock_new_fenced, "read": lib.rlock_lock_new_read,
    "write": lib.rlock_lock_new_write}


class LockBase(Named[C], OwnTimes):
    """What a lock is on both clients; the kinds below differ only in how
    the C lock is made (by `kind`)."""

    _free = staticmethod(lib.rlock_lock_free)
    _ctype = "rlock_lock"
    kind = "reentrant"
    _wants_token = False  # a fenced lock's acquisitions return a token

    def __init__(self, client: C, name: str, *,
                 wait: Optional[float] = None,
                 lease: Optional[float] = None) -> None:
        self._check_client(client)
        self._own_times(wait, lease)  # checked now, used at each acquire
        self._open(client, name)

    def _make(self, out: Any, client: Any, name: bytes) -> int:
        return int(_LOCK_NEW[self.kind](out, client, name))

    def _not_acquired(self) -> Locked:
        """What ``with`` raises when the lock's own wait ended without it."""
        return Locked(f"lock '{self._name}' was not acquired within its "
                      f"wait of {self._wait} s")

    def _own_lease(self, a: str = "") -> float:
        """reacquire()'s lease: the lock's own (`a`: the asyncio names'
        prefix, in the message)."""
        if self._lease is None:
            raise InvalidArgument(
                f"{a}reacquire needs the lock's own lease (client.lock("
                f"{self._name!r}, lease=...)); this one has none: {a}extend("
                f"seconds) a hold taken with acquire(lease=...)")
        return self._lease


def fixed_lease(lease: float, what: str) -> int:
    """A lease given to extend() or update_lease(): seconds, not None."""
    ms = lease_ms(lease)
    if ms == lib.RLOCK_LEASE_WATCHDOG:
        raise InvalidArgument(f"{what} needs a lease in seconds")
    return ms


class SpinBase(LockBase[C]):
    """A spin lock on both clients: its C lock takes the back-off
    (rlock_spin_options from client.spin_lock()'s keywords; None: their
    defaults)."""

    kind = "spin"

    def __init__(self, client: C, name: str, opts: Any = None, *,
                 wait: Optional[float] = None,
                 lease: Optional[float] = None) -> None:
        self._opts = opts if opts is not None else spin_options(
            "exponential", None, None, None, None, None)
        super().__init__(client, name, wait=wait, lease=lease)

    def _make(self, out: Any, client: Any, name: bytes) -> int:
        return int(lib.rlock_lock_new_spin_opts(out, client, name,
                                                self._opts))


class ElectionBase(Named[C]):
    """What an election is on both clients: its C object, and the local
    check of who leads."""

    _new = staticmethod(lib.rlock_election_new)
    _free = staticmethod(lib.rlock_election_free)
    _ctype = "rlock_election"

    def check(self, *, owner: OwnerLike = None) -> None:
        """Whether the owner (the calling thread, the current task on an
        rlock.aio client, or `owner`) still leads, answered locally (no
        round trip; an rlock.aio client's on its loop): returns while it
        leads.

        Raises:
            LockLost: leadership was lost (the lease ran out, the lock was
                deleted or taken, or renewals failed for a whole lease).
            NotHeld: the owner does not lead here.
        """
        self._do(lib.rlock_election_check, self._own(owner))

    def leading(self, *, owner: OwnerLike = None) -> bool:
        """check() as a bool: False when lost or not leading."""
        rc = self._client._call(lib.rlock_election_check, self._h.ptr,
                                self._own(owner))
        if rc in (lib.RLOCK_ELOST, lib.RLOCK_ENOTHELD):
            return False
        check(rc)
        return True


def members(locks: Sequence[Any], lock_type: type, what: str,
            kind: str) -> List[Any]:
    """A group's members: the locks given (or one iterable of them), each
    of `lock_type` (TypeError naming `kind` otherwise)."""
    if len(locks) == 1 and not isinstance(locks[0], lock_type) and \
            isinstance(locks[0], Iterable):
        locks = list(locks[0])
    for i, m in enumerate(locks):
        if not isinstance(m, lock_type):
            raise TypeError(f"{what} member {i} must be an {kind}, not "
                            f"{type(m).__name__}")
    return list(locks)


class GroupBase(OwnTimes):
    """What MultiLock and RedLock are on both clients: members taken
    together, a wait and a lease of their own. Subclasses give `_call`,
    the library call made with every member's client entered."""

    _new: Callable[..., int]
    _free: Callable[[Any], None]
    _what = ""
    _locks: List[Any]

    def _open(self, locks: List[Any], wait: Optional[float],
              lease: Optional[float]) -> None:
        """Make the C group over `locks` (freed before any member)."""
        self._locks = locks
        self._own_times(wait, lease)
        arr = ffi.new("rlock_lock *[]", [m._h.ptr for m in locks]
                      or [ffi.NULL])
        p = ffi.new(f"rlock_{self._what.lower()} **")
        check(self._call(self._new, p, arr, len(locks)))
        self._h = Handle(p[0], self._free)
        for m in locks:
            m._h.deps.append(self._h)

    def _call(self, fn: Callable[..., _T], *args: Any) -> _T:
        raise NotImplementedError

    def __del__(self) -> None:
        h = getattr(self, "_h", None)
        if h is not None:
            for m in self._locks:
                try:
                    m._h.deps.remove(h)
                except ValueError:
                    pass
            h.free()

    def _not_acquired(self) -> Locked:
        """What ``with`` raises when the group's wait ended without it."""
        return Locked(f"{self._what} was not acquired within its wait of "
                      f"{self._wait} s")


def permit_id(permit: Any, permit_type: Type[Any], api: str) -> bytes:
    """A Permit (of `permit_type`) or its id, as the library takes it."""
    if isinstance(permit, permit_type):
        return str(permit.id).encode()
    if isinstance(permit, str):
        return _bytes(permit, "permit id")
    raise TypeError(f"permit must be an {api}.Permit or its id (str), "
                    f"not {type(permit).__name__}")


class SemaphoreBase(Named[C], OwnWait):
    """What a semaphore is on both clients (its own wait; a
    permit-expirable one's own lease too)."""

    _new = staticmethod(lib.rlock_semaphore_new)
    _free = staticmethod(lib.rlock_semaphore_free)
    _ctype = "rlock_semaphore"

    def __init__(self, client: C, name: str, *,
                 wait: Optional[float] = None) -> None:
        self._own_wait(wait)
        super().__init__(client, name)

    def _no_permit(self) -> Locked:
        """What ``with`` raises when the own wait ended without a permit."""
        return Locked(f"semaphore '{self._name}': no permit within its "
                      f"wait of {self._wait} s")


class PermitSemaphoreBase(SemaphoreBase[C], OwnTimes):
    """What a permit-expirable semaphore is on both clients."""

    _new = staticmethod(lib.rlock_psemaphore_new)
    _free = staticmethod(lib.rlock_psemaphore_free)
    _ctype = "rlock_psemaphore"

    def __init__(self, client: C, name: str, *,
                 wait: Optional[float] = None,
                 lease: Optional[float] = None) -> None:
        self._own_times(wait, lease)
        Named.__init__(self, client, name)


__all__: Tuple[str, ...] = ()
