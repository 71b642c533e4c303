# SPDX-License-Identifier: BSD-3-Clause
"""A client's metrics (rlock_client_metrics_text): the text itself, read
into small dataclasses, and a collector for prometheus_client. Both
clients (the blocking one and rlock.aio's) use these."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Mapping, Optional, Tuple

from ._base import check
from ._native import ffi, lib

_FIRST_SIZE = 1 << 16


def metrics_text(ptr: Any, openmetrics: bool = False) -> str:
    """The metrics of the C client at `ptr`, in the Prometheus text format
    (or OpenMetrics): asked with a buffer that grows to what is needed."""
    flags = lib.RLOCK_METRICS_OPENMETRICS if openmetrics else 0
    size = _FIRST_SIZE
    needed = ffi.new("size_t *")
    while True:
        buf = ffi.new("char[]", size)
        rc = lib.rlock_client_metrics_text(ptr, buf, size, needed, flags)
        if rc == 0:
            return str(ffi.string(buf).decode("utf-8", "replace"))
        if int(needed[0]) <= size:
            check(rc)  # not a size problem: raises
        size = int(needed[0]) + 4096  # it may grow meanwhile


@dataclass(frozen=True)
class Histogram:
    """A histogram's buckets: (upper bound in seconds, how many observed
    at most that; the last bound is inf), their sum (seconds) and count."""

    buckets: Tuple[Tuple[float, int], ...]
    sum: float
    count: int


_EMPTY = Histogram((), 0.0, 0)


@dataclass(frozen=True)
class LockMetrics:
    """The metrics of one kind of lock ("reentrant", "fair", "read",
    "write", "fenced", "spin", "nonreentrant", "nonreentrant_fair",
    "multilock", "redlock", "semaphore", "psemaphore", "latch"), or of one lock name of that kind when the
    client keeps it apart (``metrics_names``); `name` is None for the
    kind's series."""

    kind: str
    name: Optional[str]
    acquisitions: int = 0
    timeouts: int = 0
    failures: int = 0
    lost: int = 0
    holds: int = 0
    waiters: int = 0
    wait: Histogram = _EMPTY
    hold: Histogram = _EMPTY
    handoff: Histogram = _EMPTY


@dataclass(frozen=True)
class Metrics:
    """A client's metrics (Client.metrics()): `locks` per kind (and per
    name kept), and the client's own counters by name without the
    ``rlock_`` prefix and ``_total`` suffix (``renewals``,
    ``disconnects``, ...)."""

    locks: Tuple[LockMetrics, ...]
    counters: Mapping[str, int]

    def lock(self, kind: str, name: Optional[str] = None) -> LockMetrics:
        """The metrics of `kind` (its series without a name), or of `name`
        of that kind; all zeros when the client has seen none."""
        for m in self.locks:
            if m.kind == kind and m.name == name:
                return m
        return LockMetrics(kind, name)


_LINE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
_UNESCAPE = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}

_COUNTERS = {"rlock_acquisitions_total": "acquisitions",
             "rlock_acquire_timeouts_total": "timeouts",
             "rlock_acquire_failures_total": "failures",
             "rlock_lost_total": "lost", "rlock_holds": "holds",
             "rlock_waiters": "waiters"}
_HISTOGRAMS = {"rlock_wait_seconds": "wait", "rlock_hold_seconds": "hold",
               "rlock_handoff_seconds": "handoff"}


def _unescape(m: "re.Match[str]") -> str:
    return _UNESCAPE.get(m.group(0), m.group(0))


def _labels(text: Optional[str]) -> Dict[str, str]:
    if not text:
        return {}
    return {k: re.sub(r"\\.", _unescape, v) for k, v in _LABEL.findall(text)}


def _histogram(parts: Dict[str, Any]) -> Histogram:
    buckets = sorted(parts.get("bucket", []))
    return Histogram(tuple((b, int(n)) for b, n in buckets),
                     float(parts.get("sum", 0.0)), int(parts.get("count", 0)))


def _put_histogram(hists: Dict[str, Dict[str, Any]], family: str,
                   part: str, labels: Dict[str, str], value: float) -> None:
    h = hists.setdefault(family, {})
    if part == "bucket":
        le = labels.get("le", "+Inf")
        h.setdefault("bucket", []).append(
            (math.inf if le == "+Inf" else float(le), value))
    else:
        h[part] = value


def parse(text: str) -> Metrics:
    """Read the text rlock_client_metrics_text writes into Metrics."""
    sets: Dict[Tuple[str, Optional[str]], Dict[str, Any]] = {}
    counters: Dict[str, int] = {}
    for line in text.splitlines():
        m = _LINE.match(line)
        if line.startswith("#") or m is None:
            continue
        name, labels, value = m.group(1), _labels(m.group(2)), float(m.group(3))
        if "kind" not in labels:
            if name.startswith("rlock_") and name.endswith("_total"):
                counters[name[6:-6]] = int(value)
            continue
        key = (labels["kind"], labels.get("name"))
        fields = sets.setdefault(key, {"_hists": {}})
        family, _, part = name.rpartition("_")
        if name in _COUNTERS:
            fields[_COUNTERS[name]] = int(value)
        elif family in _HISTOGRAMS and part in ("bucket", "sum", "count"):
            _put_histogram(fields["_hists"], _HISTOGRAMS[family], part,
                           labels, value)
    locks: List[LockMetrics] = []
    for (kind, lname), fields in sets.items():
        hists = fields.pop("_hists")
        locks.append(LockMetrics(
            kind, lname, **fields,
            wait=_histogram(hists.get("wait", {})),
            hold=_histogram(hists.get("hold", {})),
            handoff=_histogram(hists.get("handoff", {}))))
    return Metrics(tuple(locks), counters)


class MetricsCollector:
    """A prometheus_client collector of one client's metrics: register it
    with ``prometheus_client.REGISTRY.register(client.collector())`` (or
    any CollectorRegistry), and every scrape reads the client's metrics
    anew (rlock_client_metrics_text, read by prometheus_client's own
    parser). Needs prometheus_client (Debian's python3-prometheus-client)
    only when collected."""

    def __init__(self, text: Any) -> None:
        self._text = text  # the client's metrics_text

    def collect(self) -> Iterator[Any]:
        from prometheus_client.parser import text_string_to_metric_families
        yield from text_string_to_metric_families(  # type: ignore[no-untyped-call]
            self._text())

    def describe(self) -> List[Any]:
        """Nothing up front: the families a client has grow with the kinds
        it uses, so the registry must not fix them at registration."""
        return []
