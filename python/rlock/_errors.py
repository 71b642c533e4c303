# SPDX-License-Identifier: BSD-3-Clause
"""The exception hierarchy: one base, rlock.Error, and one subclass per
failure a caller handles differently, each mapped from librlock's status
codes (rlock/errors.h). A wait that ends without the lock is not an error
for acquire(), which returns False; ``with`` raises Locked."""
from __future__ import annotations

import builtins
from typing import Dict, Optional, Type

from ._native import ffi, lib

__all__ = [
    "Error", "InvalidArgument", "OutOfMemory", "ConnectionError",
    "TimeoutError", "ProtocolError", "ServerError", "AuthError", "WrongType",
    "Locked", "NotHeld", "LockLost", "Closed", "Canceled", "Deadlock",
    "ReplicaError", "error_for",
]


class Error(Exception):
    """Base of every exception rlock raises.

    Attributes:
        code: librlock's status code (a negative ``RLOCK_E*`` number; see
            ``rlock.Status``).
        message: the library's one-line message: what went wrong, naming
            the server, the lock or the argument.
    """

    code: int
    message: str

    def __init__(self, message: str, code: Optional[int] = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = _CODES.get(type(self), -1) if code is None else code

    def __str__(self) -> str:
        return self.message


class InvalidArgument(Error, ValueError):
    """An argument was missing, empty, too long, out of range or malformed
    (RLOCK_EINVAL); the message says which and why."""


class OutOfMemory(Error, MemoryError):
    """The library could not allocate memory (RLOCK_ENOMEM)."""


class ConnectionError(Error, builtins.ConnectionError):
    """The server could not be reached or the connection broke
    (RLOCK_EIO). Also a subclass of the built-in ConnectionError."""


class TimeoutError(ConnectionError, builtins.TimeoutError):
    """The server did not answer within the command timeout
    (RLOCK_ETIMEOUT). A ConnectionError, and the built-in TimeoutError."""


class ProtocolError(Error):
    """The server answered something the library cannot interpret
    (RLOCK_EPROTO)."""


class ServerError(Error):
    """The server answered with an error reply: READONLY, OOM, ...
    (RLOCK_ESERVER)."""


class AuthError(Error, PermissionError):
    """Authentication, database selection or an ACL right was refused
    (RLOCK_EAUTH)."""


class WrongType(Error):
    """The lock's key holds something that is not a lock of this family
    (another type, a hash that is not a lock, a read-write lock where a
    reentrant one was asked for, or the reverse); it was left untouched
    (RLOCK_EWRONGTYPE)."""


class Locked(Error):
    """Another owner held the lock for the whole wait (RLOCK_ELOCKED):
    raised by ``with lock:`` when the lock was given a wait
    (``client.lock(name, wait=5)``) that ended without it. acquire() never
    raises it: it returns False."""


class NotHeld(Error, RuntimeError):
    """Release of a lock the owner does not hold (RLOCK_ENOTHELD); like
    threading.Lock's RuntimeError, which it subclasses."""


class LockLost(Error):
    """The owner held the lock, but it expired or was deleted meanwhile
    (RLOCK_ELOST): another owner may have had it since."""


class Closed(Error):
    """The client cannot serve the call: it was closed, or it belongs to
    the parent of this fork()ed process (RLOCK_ECLOSED)."""


class Canceled(Error):
    """The wait was given up because its rlock.Cancel fired
    (RLOCK_ECANCELED)."""


class Deadlock(Error, RuntimeError):
    """Waiting would deadlock: the owner asked for the write half of a
    read-write lock whose read half it holds, or closed a client from its
    own lost-lock callback thread (RLOCK_EDEADLK)."""


class AlreadyHeld(Error, RuntimeError):
    """A non-reentrant lock asked again by the thread (or owner) that holds
    it: refused at once, nothing written (RLOCK_EHELD; Redisson's
    NON_REENTRANT_REACQUIRE)."""


class ReplicaError(Error):
    """No replica confirmed the write within the replica sync timeout
    (RLOCK_EREPLICA): an acquisition was undone, a release happened on the
    master only."""


_BY_CODE: Dict[int, Type[Error]] = {
    lib.RLOCK_EINVAL: InvalidArgument,
    lib.RLOCK_ENOMEM: OutOfMemory,
    lib.RLOCK_EIO: ConnectionError,
    lib.RLOCK_ETIMEOUT: TimeoutError,
    lib.RLOCK_EPROTO: ProtocolError,
    lib.RLOCK_ESERVER: ServerError,
    lib.RLOCK_EAUTH: AuthError,
    lib.RLOCK_EWRONGTYPE: WrongType,
    lib.RLOCK_ELOCKED: Locked,
    lib.RLOCK_ENOTHELD: NotHeld,
    lib.RLOCK_ELOST: LockLost,
    lib.RLOCK_ECLOSED: Closed,
    lib.RLOCK_ECANCELED: Canceled,
    lib.RLOCK_EDEADLK: Deadlock,
    lib.RLOCK_EHELD: AlreadyHeld,
    lib.RLOCK_EREPLICA: ReplicaError,
}
_CODES: Dict[Type[Error], int] = {v: k for k, v in _BY_CODE.items()}


def error_for(code: int, message: Optional[str] = None,
              context: str = "") -> Error:
    """The exception for status `code`: with `message`, or else the calling
    thread's last library error when it is about this code (read it right
    after the failed call, on the same thread), or else the code's static
    description; `context` ("lock 'x': ") goes in front."""
    if message is None:
        last = lib.rlock_error_last()
        if last.code == code:
            message = ffi.string(last.message).decode("utf-8", "replace")
        else:
            message = ffi.string(lib.rlock_strerror(code)).decode()
    cls = _BY_CODE.get(code, Error)
    return cls(context + message, code)
