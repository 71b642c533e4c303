# SPDX-License-Identifier: BSD-3-Clause
"""rlock: Redisson-compatible distributed locks over Redis, for Python.

The binding of librlock (the C library): the same locks, keys, channels
and scripts as Redisson's RLock, RFairLock, RReadWriteLock, RFencedLock,
RSpinLock, MultiLock and RedLock, and of its RSemaphore,
RPermitExpirableSemaphore and RCountDownLatch, so Python services share
them with Java services, the ``rlock`` command and C programs.

    import rlock

    client = rlock.Client("redis://127.0.0.1:6379")
    with client.lock("orders"):
        ...  # held; renewed by the watchdog until the block ends

    lock = client.fair_lock("jobs")
    if lock.acquire(wait=5, lease=30):
        try:
            ...
        finally:
            lock.release()

``rlock.aio`` has the same locks for asyncio.
"""
from ._base import (ClientRecord, Holder, Leader, LeaderWatch, LockInfo, LogLevel,
                    MemberResult, Owner, PubSubMode, RedLockResult, Status,
                    SyncInfo, Waiter)
from ._client import (Cancel, Client, Election, FairLock, FencedLock, Lock, MultiLock,
                      NonReentrantFairLock, NonReentrantLock, ReadLock,
                      ReadWriteLock, RedLock, SpinLock, Stats, WriteLock,
                      lock_order)
from ._sync import (CountDownLatch, Permit, PermitExpirableSemaphore,
                    Semaphore)
from ._errors import (AlreadyHeld, AuthError, Canceled, Closed,
                      ConnectionError, Deadlock, Error, InvalidArgument,
                      Locked, LockLost, NotHeld, OutOfMemory, ProtocolError,
                      ReplicaError, ServerError, TimeoutError, WrongType)
from ._metrics import Histogram, LockMetrics, Metrics, MetricsCollector
from ._native import HEADER_VERSION, LIBRARY_VERSION

#: The package's version: the version of librlock it was built against.
__version__ = HEADER_VERSION
#: The version of the librlock loaded now (the same major version).
library_version = LIBRARY_VERSION

__all__ = [
    "Client", "Election", "Leader", "LeaderWatch", "Lock", "FairLock", "FencedLock", "SpinLock", "ReadLock",
    "NonReentrantLock", "NonReentrantFairLock", "AlreadyHeld",
    "Semaphore", "PermitExpirableSemaphore", "Permit", "CountDownLatch",
    "WriteLock", "ReadWriteLock", "MultiLock", "RedLock", "Owner", "Cancel",
    "LockInfo", "SyncInfo", "Holder", "Waiter", "ClientRecord", "RedLockResult", "MemberResult", "Stats",
    "Metrics", "LockMetrics", "Histogram", "MetricsCollector",
    "Status", "PubSubMode", "LogLevel", "lock_order", "Error",
    "InvalidArgument", "OutOfMemory", "ConnectionError", "TimeoutError",
    "ProtocolError", "ServerError", "AuthError", "WrongType", "Locked",
    "NotHeld", "LockLost", "Closed", "Canceled", "Deadlock", "ReplicaError",
    "__version__", "library_version",
]
