# SPDX-License-Identifier: BSD-3-Clause
"""Blocking waits that Ctrl-C (SIGINT) interrupts, and that never leave a
hold behind when an exception ends them.

The problem: CPython runs Python-level signal handlers only in the main
thread, between bytecodes. A main thread blocked inside a library call
(the GIL released) runs none until the call returns: a Ctrl-C during
``with lock:`` would only raise KeyboardInterrupt once the lock was taken,
after the call and before the ``with`` body, so nothing released it.

The design, chosen over running the wait on a helper thread while the
main thread waits on an Event (which would cost a thread hand-off, tens of
microseconds, on every acquisition of the main thread, where the
uncontended acquisition costs about a hundred): while the main thread
waits, a small C handler (rlock/_build.py, SOURCE) stands in front of
Python's SIGINT handler. It fires the wait's cancel token, which the
library honours at once (RLOCK_ECANCELED, nothing held, a fair waiter
leaves the queue), and records the signal. It does not call Python's
handler: CPython would then raise KeyboardInterrupt the moment the call
returns, before the binding has read whether the call took the lock. It
is installed only around the call, only by the main thread (the only one
Python raises KeyboardInterrupt in, and the only one that may change
signal handlers, so none changes under it), and only when SIGINT has a
Python handler (not SIG_DFL, which kills the process anyway, nor
SIG_IGN); a child fork()ed meanwhile gets Python's back. After the call
the binding reads
the status, restores Python's handler, and calls that handler itself: the
default one raises KeyboardInterrupt, which propagates instead of the
status; a handler that returns lets the wait go on for the time left, as
PEP 475 does for system calls (a fair waiter queues again, at the end).

The status is also stored in memory the binding owns (``box``), so an
exception raised right after the call returns (another signal's Python
handler: CPython raises pending ones as soon as a C call returns) still
tells whether a hold was taken; the caller gives it back.

Every blocking call of the binding (locks, groups, campaigns, semaphores,
latches) goes through blocking(), which picks the cancel token and runs
wait() with an attempt that counts the call in and out of its client(s);
the call itself is a shim in _build.py's SOURCE that also stores its
status in an ``int *``.
"""
from __future__ import annotations

import os
import signal
import threading
import time
from typing import Any, Callable, List, Optional, Protocol

from ._base import check
from ._native import ffi, lib

# signal.getsignal converts its answer to an enum: 2.4 us a call, against
# 0.03 for _signal's, on every wait of the main thread.
_getsignal: Callable[[int], Any] = getattr(
    __import__("_signal"), "getsignal", signal.getsignal)

OK = 0
ECANCELED = lib.RLOCK_ECANCELED
_PENDING = 1  # no library status is positive: "the call has not returned"

# The last user token armed, kept alive until the next arm: the C handler
# may still be reading it on another thread just after disarm.
_armed_token: List[Any] = [None]

Attempt = Callable[[int, Any], None]
_tls = threading.local()


class Cancel:
    """A token that makes the waits given it (``cancel=``) give up:
    ``fire()`` from any thread, and every such wait raises rlock.Canceled
    within about 20 ms; a fair waiter leaves the queue. Stays fired until
    ``reset()``."""

    __slots__ = ("_ptr",)

    def __init__(self) -> None:
        self._ptr = _new_token()

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


def _new_token() -> Any:
    """A rlock_cancel, freed by cffi when dropped."""
    p = ffi.new("rlock_cancel **")
    check(lib.rlock_cancel_new(p))
    return ffi.gc(p[0], lib.rlock_cancel_free)


def thread_cancel() -> Any:
    """The calling thread's own cancel token: every wait of the thread
    passes it, so that closing the client ends the wait (Closed)."""
    try:
        return _tls.cancel
    except AttributeError:
        _tls.cancel = _new_token()
        return _tls.cancel


def cancel_ptr(cancel: Optional[Cancel]) -> Any:
    """A user's Cancel as its C token (TypeError for anything else)."""
    if not isinstance(cancel, Cancel):
        raise TypeError("cancel must be an rlock.Cancel, not "
                        f"{type(cancel).__name__}")
    return cancel._ptr


class Entered(Protocol):
    """What a blocking wait counts itself in and out of: a client, or the
    clients of a group's members."""

    def _enter(self, token: Any = None, reset: bool = True) -> None: ...

    def _leave(self, token: Any = None) -> None: ...


Call = Callable[[int, Any, Any], None]


def blocking(clients: Entered, call: Call, wait_ms: int,
             cancel: Optional[Cancel], took: List[bool]) -> int:
    """Run a blocking library call through wait(): ``call(wait_ms, token,
    box)`` makes it, counted in and out of `clients` around each try.
    The token is `cancel`'s, else the thread's own (which closing the
    client fires: the caller answers ECANCELED then with Closed). Returns
    the library's status; `took` as wait()'s."""
    user = None if cancel is None else cancel_ptr(cancel)
    tok = thread_cancel() if user is None else user
    mine = None if user is not None else tok

    def attempt(w: int, box: Any) -> None:
        clients._enter(mine, reset=False)
        try:
            call(w, tok, box)
        finally:
            clients._leave(mine)
    return wait(attempt, wait_ms, tok, user is None, took)


def give_back(release: Callable[[], Any]) -> None:
    """Give back a hold that an interrupted acquisition took: its errors
    give way to the exception being raised."""
    try:
        release()
    except Exception:
        pass


def _disarm_in_child() -> None:
    """fork() from another thread while the main thread waits: the child
    has no wait, so SIGINT goes back to Python's handler there."""
    lib.rlock_py_intr_disarm()


os.register_at_fork(after_in_child=_disarm_in_child)


def _interruptible() -> bool:
    """Whether SIGINT can interrupt this thread's wait: the main thread,
    with a Python handler for SIGINT."""
    if threading.get_ident() != threading.main_thread().ident:
        return False
    try:
        return callable(_getsignal(signal.SIGINT))
    except ValueError:  # pragma: no cover - a subinterpreter
        return False


def _run_sigint_handler() -> None:
    """Hand the SIGINT the C handler caught to Python's handler (after
    disarming): KeyboardInterrupt for the default one."""
    handler = _getsignal(signal.SIGINT)
    if callable(handler):
        import sys
        handler(signal.SIGINT, sys._getframe(1))


def wait(attempt: Attempt, wait_ms: int, token: Any, own_token: bool,
         took: List[bool]) -> int:
    """Run one blocking acquisition so that SIGINT interrupts it.

    `attempt(wait_ms, box)` makes the library call (counted in and out of
    the client by itself), passing `token` as its cancel token and `box`
    (an ``int *``) for its status. `own_token`: `token` is the thread's own
    (reset here before each try; a user's Cancel is never reset). On the
    main thread, SIGINT fires `token` and then runs Python's handler; if
    that returns, the wait is tried again for what is left of `wait_ms`
    (with a user's Cancel, fired by the signal, its status is returned).

    Returns the library's status. Appends True to `took` as soon as the
    status says a hold was taken, also when an exception is raised (the
    caller then gives the hold back): callers own that undo, since Python
    may raise between any two of their own steps too.
    """
    deadline = time.monotonic() + wait_ms / 1000 if wait_ms > 0 else 0.0
    while True:
        box = ffi.new("int *", _PENDING)
        arm = token is not None and _interruptible()
        try:
            if own_token:
                lib.rlock_cancel_reset(token)
            if arm:
                if not own_token:
                    _armed_token[0] = token
                lib.rlock_py_intr_arm(token)
            attempt(wait_ms, box)
            hit = lib.rlock_py_intr_disarm() if arm else 0
            if box[0] == OK:
                took.append(True)
        except BaseException:
            if arm:
                lib.rlock_py_intr_disarm()
            if box[0] == OK and not took:
                took.append(True)
            raise
        rc = int(box[0])
        if not hit:
            return rc
        _run_sigint_handler()  # raises, usually
        if rc != ECANCELED or not own_token:
            return rc
        if wait_ms > 0:
            left = deadline - time.monotonic()
            wait_ms = max(0, int(left * 1000))
