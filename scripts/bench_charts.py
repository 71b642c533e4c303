#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Turn a run of scripts/bench_peers.sh (its JSON lines) into the SVG
charts of docs/BENCHMARKS.md, written by hand as SVG text (no plotting
library):

  docs/bench/workloads.svg  rlock next to the floor and the peers, one
                            panel per workload (medians over the rounds)
  docs/bench/handoff.svg    the time a waiter waits for a released lock,
                            p50 to p99 per library and workload (log scale)
  docs/bench/semaphores.svg rlock's two semaphores next to redis-semaphore's
                            Semaphore, one panel per workload

The run's data is kept beside them (docs/bench/peers.jsonl), so the charts
are regenerated from it by one command:

  scripts/bench_charts.py                  # from docs/bench/peers.jsonl
  scripts/bench_charts.py --from FILE      # a new run: FILE is copied there
                                           # first (bench_peers.sh leaves
                                           # build-bench/bench-peers-last.jsonl)
"""
from __future__ import annotations

import argparse
import html
import json
import math
import shutil
import statistics
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "bench"
LIBS = ["rlock", "redis-py", "node-redlock", "redis-semaphore"]
FLOOR = "floor"
COLOURS = {FLOOR: "#9e9e9e", "rlock": "#c62828", "redis-py": "#1565c0",
           "node-redlock": "#2e7d32", "redis-semaphore": "#ef6c00",
           "rlock-sem": "#c62828", "rlock-psem": "#ad1457",
           "rs-sem": "#ef6c00"}
# The semaphores' columns (bench_peers.sh) and their names in the chart.
SEMS = {"rlock-sem": "rlock semaphore", "rlock-psem": "rlock psemaphore",
        "rs-sem": "redis-semaphore"}
FONT = 'font-family="DejaVu Sans, Helvetica, Arial, sans-serif"'


def load(path: Path) -> List[dict]:
    return [json.loads(line) for line in path.open() if line.strip()]


def median(rows: List[dict], col: str, run: str, key: str) -> Optional[float]:
    v = [r[key] for r in rows
         if r.get("col") == col and r.get("run") == run
         and isinstance(r.get(key), (int, float))]
    return statistics.median(v) if v else None


# ---- SVG text ----------------------------------------------------------------

def text(x: float, y: float, s: str, size: int = 12, anchor: str = "start",
         weight: str = "normal", fill: str = "#212121") -> str:
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" {FONT} '
            f'text-anchor="{anchor}" font-weight="{weight}" fill="{fill}">'
            f'{html.escape(s)}</text>')


def rect(x: float, y: float, w: float, h: float, fill: str) -> str:
    return (f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(w, 0.5):.1f}" '
            f'height="{h:.1f}" fill="{fill}"/>')


def line(x1: float, y1: float, x2: float, y2: float, stroke: str = "#bdbdbd",
         width: float = 1, dash: str = "") -> str:
    d = f' stroke-dasharray="{dash}"' if dash else ""
    return (f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" '
            f'stroke="{stroke}" stroke-width="{width}"{d}/>')


def svg(width: int, height: int, body: List[str]) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" '
            f'height="{height}" viewBox="0 0 {width} {height}">\n'
            f'<rect width="{width}" height="{height}" fill="white"/>\n'
            + "\n".join(body) + "\n</svg>\n")


def fmt(v: float, unit: str) -> str:
    if unit == "us" and v >= 1000000:
        return f"{v / 1000000:.3g} s"
    if unit == "us" and v >= 1000:
        return f"{v / 1000:.3g} ms"
    if unit == "us":
        return f"{v:.3g} µs"
    if v >= 1000:
        return f"{v / 1000:.3g} k/s"
    return f"{v:.3g} /s"


# ---- the workloads chart ------------------------------------------------------

Panel = Tuple[str, str, bool, List[Tuple[str, Optional[float]]]]


def panels(rows: List[dict]) -> List[Panel]:
    """(title, unit, log scale, [(series, value)]) per workload."""
    ceiling = median(rows, "server", "ceiling", "requests_per_s")

    def peers(run: str, key: str) -> List[Tuple[str, Optional[float]]]:
        return [(c, median(rows, c, run, key)) for c in LIBS[1:]]
    return [
        ("Uncontended lock+unlock, p50 (lower is better)", "us", False,
         [(FLOOR, median(rows, "rlock", "unc", "floor_p50_us")),
          ("rlock", median(rows, "rlock", "unc", "lock_unlock_p50_us"))]
         + peers("unc", "lock_unlock_p50_us")),
        ("Handoff to a waiting process, p50 (lower is better; log scale)",
         "us", True,
         [(FLOOR, median(rows, "rlock", "hand", "bare_handoff_p50_us")),
          ("rlock", median(rows, "rlock", "hand", "rlock_handoff_p50_us"))]
         + peers("hand", "handoff_p50_us")),
        ("4 processes on one lock, acquisitions/s (higher is better)",
         "/s", False,
         [("rlock", median(rows, "rlock", "con0", "acquisitions_per_s"))]
         + peers("con0", "acquisitions_per_s")),
        ("8 workers, 1000 locks, lock+unlock pairs/s (higher is better)",
         "/s", False,
         [(FLOOR, ceiling / 2 if ceiling else None),
          ("rlock", median(rows, "rlock", "many", "ops_per_s"))]
         + peers("many", "ops_per_s")),
    ]


def scale(values: Sequence[float], log: bool, width: float):  # type: ignore[no-untyped-def]
    top = max(values)
    if not log:
        return lambda v: width * v / top
    lo = 10 ** math.floor(math.log10(min(values)))
    hi = 10 ** math.ceil(math.log10(top))
    return lambda v: width * (math.log10(v) - math.log10(lo)) / \
        (math.log10(hi) - math.log10(lo))


def bar_panel(y: float, p: Panel, label_w: float, plot_w: float) -> Tuple[List[str], float]:
    title, unit, log, series = p
    out = [text(10, y + 14, title, 13, weight="bold")]
    y += 24
    present = [(s, v) for s, v in series if v is not None and v > 0]
    if not present:
        return out + [text(label_w, y + 12, "no data in this run", 11)], y + 24
    x_of = scale([v for _, v in present], log, plot_w)
    for s, v in present:
        name = "floor (bare hiredis)" if s == FLOOR else SEMS.get(s, s)
        if s == FLOOR and unit == "/s":
            name = "server ceiling / 2"
        out.append(text(label_w - 8, y + 12, name, 12, "end"))
        w = x_of(v)
        out.append(rect(label_w, y + 2, w, 14, COLOURS[s]))
        out.append(text(label_w + w + 6, y + 13, fmt(v, unit), 11))
        y += 20
    return out, y + 14


def workloads_svg(rows: List[dict], note: str) -> str:
    label_w, plot_w, width = 170.0, 430.0, 720
    body = [text(10, 22, "rlock, the floor and the peers, per workload", 16,
                 weight="bold"), text(10, 40, note, 11, fill="#616161")]
    y = 56.0
    for p in panels(rows):
        part, y = bar_panel(y, p, label_w, plot_w)
        body += part
    return svg(width, int(y + 6), body)


# ---- the semaphores chart -------------------------------------------------------

def sem_panels(rows: List[dict]) -> List[Panel]:
    def each(run: str, key: str, peer_key: str) -> List[Tuple[str, Optional[float]]]:
        return [(c, median(rows, c, run, peer_key if c == "rs-sem" else key))
                for c in SEMS]
    return [
        ("Uncontended acquire+release of one permit, p50 (lower is better)",
         "us", False, each("sunc", "pair_p50_us", "lock_unlock_p50_us")),
        ("8 processes on 3 permits, 1 ms holds, acquisitions/s (higher is "
         "better)", "/s", False,
         each("scon", "acquisitions_per_s", "acquisitions_per_s")),
        ("8 processes on 3 permits, wait in acquire, p50 (lower is better)",
         "us", False, each("scon", "acquire_p50_us", "acquire_p50_us")),
        ("Handoff of 1 permit to a waiting process, p50 (lower is better; "
         "log scale)", "us", True,
         each("shand", "handoff_p50_us", "handoff_p50_us")),
    ]


def semaphores_svg(rows: List[dict], note: str) -> str:
    label_w, plot_w, width = 170.0, 430.0, 720
    body = [text(10, 22, "rlock's semaphores next to redis-semaphore", 16,
                 weight="bold"), text(10, 40, note, 11, fill="#616161")]
    y = 56.0
    for p in sem_panels(rows):
        part, y = bar_panel(y, p, label_w, plot_w)
        body += part
    return svg(width, int(y + 6), body)


# ---- the handoff chart ----------------------------------------------------------

def handoff_points(rows: List[dict]) -> List[Tuple[str, List[Tuple[str, float, float]]]]:
    """Per workload: [(series, p50, p99)] in microseconds."""
    groups = []
    for run, title in (("hand", "one waiter, 300 µs holds"),
                       ("con0", "4 processes, no pause between"),
                       ("con1", "4 processes, 1 ms pause between")):
        pts = []
        if run == "hand":
            for s, pre in ((FLOOR, "bare"), ("rlock", "rlock")):
                a = median(rows, "rlock", run, f"{pre}_handoff_p50_us")
                b = median(rows, "rlock", run, f"{pre}_handoff_p99_us")
                if a and b:
                    pts.append((s, a, b))
        for c in LIBS if run != "hand" else LIBS[1:]:
            a = median(rows, c, run, "handoff_p50_us")
            b = median(rows, c, run, "handoff_p99_us")
            if a and b:
                pts.append((c, a, b))
        groups.append((title, pts))
    return groups


def handoff_svg(rows: List[dict], note: str) -> str:
    label_w, plot_w, width = 170.0, 480.0, 720
    groups = handoff_points(rows)
    vals = [v for _, pts in groups for _, a, b in pts for v in (a, b)]
    body = [text(10, 22, "Handoff: a released lock to its next holder", 16,
                 weight="bold"),
            text(10, 40, "p50 (dot) to p99 (end of bar), log scale; " + note,
                 11, fill="#616161")]
    if not vals:
        return svg(width, 80, body + [text(10, 64, "no data", 12)])
    lo = 10 ** math.floor(math.log10(min(vals)))
    hi = 10 ** math.ceil(math.log10(max(vals)))

    def x(v: float) -> float:
        return label_w + plot_w * (math.log10(v) - math.log10(lo)) / \
            (math.log10(hi) - math.log10(lo))
    y = 60.0
    rows_h = sum(24 + 20 * len(p) + 10 for _, p in groups)
    decade = lo
    while decade <= hi:
        body.append(line(x(decade), y, x(decade), y + rows_h, dash="3,3"))
        body.append(text(x(decade), y + rows_h + 14,
                         fmt(decade, "us"), 10, "middle", fill="#616161"))
        decade *= 10
    for title, pts in groups:
        body.append(text(10, y + 14, title, 13, weight="bold"))
        y += 24
        for s, a, b in pts:
            name = "floor (bare hiredis)" if s == FLOOR else s
            body.append(text(label_w - 8, y + 12, name, 12, "end"))
            body.append(line(x(a), y + 8, x(b), y + 8, COLOURS[s], 4))
            body.append(f'<circle cx="{x(a):.1f}" cy="{y + 8:.1f}" r="5" '
                        f'fill="{COLOURS[s]}"/>')
            body.append(text(x(b) + 6, y + 12,
                             f"{fmt(a, 'us')} / {fmt(b, 'us')}", 10))
            y += 20
        y += 10
    return svg(width, int(y + 26), body)


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--from", dest="src", type=Path,
                    help="a bench_peers.sh run's JSON lines, copied to "
                         "docs/bench/peers.jsonl first")
    args = ap.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    data = OUT / "peers.jsonl"
    if args.src is not None:
        shutil.copyfile(args.src, data)
    if not data.exists():
        print(f"{data}: no run yet (scripts/bench_peers.sh, then --from "
              f"build-bench/bench-peers-last.jsonl)", file=sys.stderr)
        return 1
    rows = load(data)
    rounds = max((r.get("round", 1) for r in rows), default=0)
    note = (f"medians over {rounds} round(s) of scripts/bench_peers.sh "
            f"(docs/bench/peers.jsonl)")
    (OUT / "workloads.svg").write_text(workloads_svg(rows, note))
    (OUT / "handoff.svg").write_text(handoff_svg(rows, note))
    (OUT / "semaphores.svg").write_text(semaphores_svg(rows, note))
    print(f"wrote {OUT / 'workloads.svg'}, {OUT / 'handoff.svg'} and "
          f"{OUT / 'semaphores.svg'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
