# SPDX-License-Identifier: BSD-3-Clause
"""What the blocking and the asyncio clients share: their keywords, the
userdata of their C callbacks, and the calls made alike on both (the
client's id, counters and metrics)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional, TypeVar, Union

from . import _metrics
from ._base import (LogLevel, PubSubMode, _text, check, make_config,
                    swallow)
from ._metrics import Metrics, MetricsCollector
from ._native import ffi, lib


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
_T = TypeVar("_T")
_UNSET: Any = object()


class Callbacks:
    """The userdata of a client's C callbacks (lost locks, log messages):
    hands each to `post`, which runs it where the client runs callbacks
    (the blocking client's callback thread, the asyncio loop)."""

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


@ffi.def_extern(onerror=swallow)
def _rlock_lost_cb(name: Any, owner: Any, userdata: Any) -> None:
    """C lost-lock callback (library thread, or the loop's): queue it where
    the client runs callbacks; never raises into C."""
    ffi.from_handle(userdata)._post_lost(_text(name), _text(owner))


@ffi.def_extern(onerror=swallow)
def _rlock_log_cb(level: int, message: Any, userdata: Any) -> None:
    """C log hook (any thread): queue it where the client runs callbacks."""
    ffi.from_handle(userdata)._post_log(int(level), _text(message))


def _client_id(ptr: Any) -> str:
    return _text(lib.rlock_client_id(ptr)) or ""


class ClientBase:
    """What rlock.Client and rlock.aio.Client share: the keywords (every
    configuration setter; rlock.Client says what each means), the
    callbacks' userdata, and the calls made alike on both. A subclass
    makes the C client in _open() and runs a library call on it with
    _call(): counted in on the blocking client, on a live client on the
    loop."""

    _ptr: Any
    _callbacks: Callbacks

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
              if k not in ("self", "url", "on_lost", "log")
              and v is not _UNSET}
        for name, fn in (("on_lost", on_lost), ("log", log)):
            if fn is not None and not callable(fn):
                raise TypeError(f"{name} must be callable, not "
                                f"{type(fn).__name__}")
        self._open(url, kw, on_lost, log)

    def _open(self, url: Optional[str], kw: Dict[str, Any],
              on_lost: Optional[LostCallback],
              log: Optional[LogCallback]) -> None:
        raise NotImplementedError

    def _config(self, url: Optional[str], kw: Dict[str, Any],
                on_lost: Optional[LostCallback], log: Optional[LogCallback],
                post: Callable[..., None]) -> Any:
        """The rlock_config for _open(), with the callbacks posted by
        `post` (their userdata kept by the client)."""
        self._callbacks = Callbacks(on_lost, log, post)
        self._userdata = ffi.new_handle(self._callbacks)
        return make_config(url, kw, lib._rlock_lost_cb if on_lost else None,
                           lib._rlock_log_cb if log else None, self._userdata)

    def _call(self, fn: Callable[..., _T], *args: Any) -> _T:
        raise NotImplementedError

    @property
    def id(self) -> str:
        """The client's identity, a UUID, first half of its owner fields."""
        return self._call(_client_id, self._ptr)

    def stats(self) -> Stats:
        """The client's counters (acquisitions, waits, renewals, ...)."""
        s = ffi.new("rlock_stats *")
        check(self._call(lib.rlock_client_stats, self._ptr, s,
                         ffi.sizeof("rlock_stats")))
        return Stats(**{f: int(getattr(s, f))
                        for f in Stats.__dataclass_fields__})

    def metrics_text(self, openmetrics: bool = False) -> str:
        raise NotImplementedError

    def metrics(self) -> Metrics:
        """The client's metrics, read: per kind of lock (and per name kept,
        ``metrics_names``) its counters, gauges and wait, hold and handoff
        histograms, and the client's own counters. From any thread."""
        return _metrics.parse(self.metrics_text())

    def collector(self) -> MetricsCollector:
        """A prometheus_client collector of this client's metrics, to
        register with a CollectorRegistry (prometheus_client needed then,
        Debian's python3-prometheus-client); its scrapes may come from
        any thread."""
        return MetricsCollector(self.metrics_text)
