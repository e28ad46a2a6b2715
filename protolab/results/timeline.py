"""The fault timeline over latency: one panel per (point, repetition, phase) that had faults.

From the results folder alone: faults.csv (what happened when) and raw/series.csv (any series whose name
says it is a delay in seconds: `*rtt_seconds`, `*delay_seconds`, `*latency_seconds`; and `*_subflows`, the
MPTCP subflows up, as steps on a second axis). Links that were down
are red bands (one lane per link under the latency), step changes and node events (pause, kill, stress, ...)
dashed lines. Time is seconds since the
phase start (the events' unix time minus their actual offset).
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from .store import RAW, read_raw

FAULTS = "faults.csv"
LATENCY_RE = re.compile(r"(rtt|delay|latency)_seconds$")
SUBFLOWS_RE = re.compile(r"_subflows$")  # a step series: how many MPTCP subflows were up (request_response)
MAX_PANELS = 6
COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b"]
DOWN_COLOR = "#d62728"


def _fault_groups(run_dir: Path) -> dict[tuple[str, int, str], list[dict[str, Any]]]:
    groups: dict[tuple[str, int, str], list[dict[str, Any]]] = {}
    with (run_dir / FAULTS).open(newline="") as f:
        for r in csv.DictReader(f):
            if not r.get("unix_time_seconds") or not r.get("actual_seconds"):
                continue  # an event that failed: listed in faults.csv, nothing to draw
            key = (r["point"], int(r["repetition"]), r["phase"])
            groups.setdefault(key, []).append(r)
    return groups


def _down_spans(events: Sequence[dict[str, Any]], end: float) -> dict[str, list[tuple[float, float]]]:
    spans: dict[str, list[tuple[float, float]]] = {}
    open_at: dict[str, float] = {}
    for e in sorted(events, key=lambda e: float(e["actual_seconds"])):
        t = float(e["actual_seconds"])
        if e["action"] not in ("down", "up"):
            continue  # a step change or a node event: a dashed line, not a lane
        spans.setdefault(e["link"], [])
        if e["action"] == "down":
            open_at.setdefault(e["link"], t)
        elif e["action"] == "up" and e["link"] in open_at:
            spans[e["link"]].append((open_at.pop(e["link"]), t))
    for link, t in open_at.items():
        spans[link].append((t, end))
    return spans


def fault_timeline_png(run_dir: Path, labels: dict[str, str] | None = None) -> tuple[bytes, str] | None:
    """The figure and a caption, or None when the run had no faults."""
    run_dir = Path(run_dir)
    if not (run_dir / FAULTS).exists():
        return None
    groups = _fault_groups(run_dir)
    if not groups:
        return None
    raw = read_raw(run_dir / RAW) if (run_dir / RAW).exists() else []
    keys = list(groups)[:MAX_PANELS]
    fig = Figure(figsize=(10, 2.6 * len(keys) + 0.4), dpi=100)
    axes = fig.subplots(len(keys), 1, squeeze=False)[:, 0]
    any_latency = any_steps = False
    for ax, key in zip(axes, keys, strict=True):
        events = groups[key]
        t0 = min(float(e["unix_time_seconds"]) - float(e["actual_seconds"]) for e in events)
        series: dict[str, list[tuple[float, float]]] = {}
        steps: dict[str, list[tuple[float, float]]] = {}
        for r in raw:
            if (r["point"], r["repetition"], r["phase"]) != key:
                continue
            if LATENCY_RE.search(r["series"]):
                series.setdefault(r["series"], []).append((r["timestamp_seconds"] - t0, r["value"] * 1e3))
            elif SUBFLOWS_RE.search(r["series"]):
                steps.setdefault(r["series"], []).append((r["timestamp_seconds"] - t0, r["value"]))
        end = max([float(e["actual_seconds"]) for e in events]
                  + [t for pts in [*series.values(), *steps.values()] for t, _ in pts])  # fmt: skip
        end = max(end, 1.0)
        top = 0.0
        for i, (name, pts) in enumerate(sorted(series.items())):
            pts.sort()
            any_latency = True
            ax.plot([t for t, _ in pts], [v for _, v in pts], ".", ms=2.5, color=COLORS[i % len(COLORS)],
                    label=name.removesuffix("_seconds").replace("_", " "))  # fmt: skip
            top = max(top, max(v for _, v in pts if v == v) if pts else top)
        top = top or 1.0
        spans = _down_spans(events, end)
        for li, (link, sp) in enumerate(sorted(spans.items())):
            for a, b in sp:
                ax.axvspan(a, b, color=DOWN_COLOR, alpha=0.13, lw=0)
                ax.text((a + b) / 2, top * (1.02 + 0.07 * li), f"{link} down", ha="center", va="bottom",
                        fontsize=8, color=DOWN_COLOR)  # fmt: skip
        for e in events:
            if e["action"] not in ("down", "up"):
                t = float(e["actual_seconds"])
                ax.axvline(t, color="#444444", ls="--", lw=1)
                ax.text(t, top * 1.02, f" {e['link']} {e['action']}", fontsize=8, color="#444444", va="bottom")
        if steps:
            any_steps = True
            twin = ax.twinx()
            for name, pts in sorted(steps.items()):
                pts.sort()
                xs, ys = [t for t, _ in pts], [v for _, v in pts]
                twin.step([*xs, end], [*ys, ys[-1]], where="post", color="#2ca02c", lw=1.2,
                          label=name.replace("_", " "))  # fmt: skip
            twin.set_ylabel("subflows up", color="#2ca02c")
            twin.set_ylim(0, max(v for pts in steps.values() for _, v in pts) + 1)
            twin.spines[["top"]].set_visible(False)
            twin.legend(loc="upper left", fontsize=8, frameon=False)
        ax.set_xlim(0, end)
        ax.set_ylim(0, top * (1.12 + 0.07 * max(0, len(spans) - 1)))
        point, rep, phase = key
        ax.set_title(f"{labels.get(point, point) if labels else point} · rep {rep + 1} · phase {phase}",
                     fontsize=10, loc="left")  # fmt: skip
        ax.set_ylabel("latency (ms)" if series else "no latency series")
        ax.grid(True, color="#e0e0e0", lw=0.6)
        ax.spines[["top", "right"]].set_visible(False)
        if series:
            ax.legend(loc="upper right", fontsize=8, frameon=False, markerscale=3)
    axes[-1].set_xlabel("seconds since the phase start")
    fig.suptitle("Fault timeline over latency", fontsize=13, fontweight="bold")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    caption = "Fault timeline over latency: red bands = link down, dashed = step change or node event"
    if any_steps:
        caption += ", green steps = MPTCP subflows up (ip mptcp monitor)"
    if not any_latency:
        caption += " (no delay or RTT series in this run's raw/series.csv)"
    if len(groups) > MAX_PANELS:
        caption += f"; the first {MAX_PANELS} of {len(groups)} phases with faults"
    return buf.getvalue(), caption
