"""The fault timeline over latency: one panel per (point, repetition, phase) that had faults.

From the results folder alone: faults.csv (what happened when) and raw/series.csv (any series whose name
says it is a delay in seconds: `*rtt_seconds`, `*delay_seconds`, `*latency_seconds`; and `*_subflows`, the
MPTCP subflow events from `ip mptcp monitor`). Links that were down are red bands (one lane per link under the
latency), step changes and node events (pause, kill, stress, ...) dashed lines. Under a panel with subflow
events, one lane per subflow (its local -> remote address pair) shows when it was up, hatched while it was a
backup, on the same time axis and with the same red bands. Time is seconds since the phase start (the events'
unix time minus their actual offset).
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from .store import FAULTS, RAW, read_raw

LATENCY_RE = re.compile(r"(rtt|delay|latency)_seconds$")
SUBFLOWS_RE = re.compile(r"_subflows$")  # MPTCP subflow events, labelled with the subflow (request_response)
MAX_PANELS = 6
COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b"]
DOWN_COLOR = "#d62728"
SUBFLOW_COLOR = "#2ca02c"


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


def subflow_lanes(rows: Sequence[dict[str, Any]], end: float) -> dict[str, list[tuple[float, float, bool]]]:
    """When each subflow was up, from `*_subflows` rows (labels `event`, `subflow` 'saddr:sport->daddr:dport',
    `backup`; `t` seconds since the phase start) in time order: spans (start, end, backup) per lane, a lane being
    the address pair 'saddr -> daddr' (prefixed by the series' task when there are several series). A subflow
    is up from ESTABLISHED or SF_ESTABLISHED to SF_CLOSED, or to CLOSED (the connection, every subflow), or to
    `end`; SF_PRIORITY starts a new span with its backup flag."""
    series = {r["series"] for r in rows}
    lanes: dict[str, list[tuple[float, float, bool]]] = {}
    open_: dict[tuple[str, str], tuple[float, bool, str]] = {}  # (series, subflow) -> (since, backup, lane)

    def close(k: tuple[str, str], t: float) -> None:
        since, backup, lane = open_.pop(k)
        if t > since:
            lanes[lane].append((since, t, backup))

    for r in sorted(rows, key=lambda r: r["t"]):
        t, name, labels = r["t"], r["series"], r.get("labels") or {}
        event, sf = labels.get("event"), labels.get("subflow")
        if event == "CLOSED":
            for k in [k for k in open_ if k[0] == name]:
                close(k, t)
            continue
        if not sf:
            continue
        (src, _, _), (dst, _, _) = (side.rpartition(":") for side in sf.split("->", 1))
        lane = f"{src} -> {dst}" if len(series) == 1 else f"{name.removesuffix('_subflows')}: {src} -> {dst}"
        lanes.setdefault(lane, [])
        k, backup = (name, sf), labels.get("backup") == "1"
        if event in ("ESTABLISHED", "SF_ESTABLISHED") and k not in open_:
            open_[k] = (t, backup, lane)
        elif event == "SF_PRIORITY" and k in open_:
            close(k, t)
            open_[k] = (t, backup, lane)
        elif event == "SF_CLOSED" and k in open_:
            close(k, t)
    for k in list(open_):
        close(k, end)
    return lanes


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
    panels = []
    for key in keys:
        events = groups[key]
        t0 = min(float(e["unix_time_seconds"]) - float(e["actual_seconds"]) for e in events)
        series: dict[str, list[tuple[float, float]]] = {}
        subflow_rows: list[dict[str, Any]] = []
        for r in raw:
            if (r["point"], r["repetition"], r["phase"]) != key:
                continue
            if LATENCY_RE.search(r["series"]):
                series.setdefault(r["series"], []).append((r["timestamp_seconds"] - t0, r["value"] * 1e3))
            elif SUBFLOWS_RE.search(r["series"]):
                subflow_rows.append({**r, "t": r["timestamp_seconds"] - t0})
        end = max([float(e["actual_seconds"]) for e in events]
                  + [t for pts in series.values() for t, _ in pts] + [r["t"] for r in subflow_rows])  # fmt: skip
        end = max(end, 1.0)
        panels.append((key, events, series, subflow_lanes(subflow_rows, end), end))
    ratios = []
    for *_, lanes, _end in panels:
        ratios += [3.0, 0.3 + 0.35 * len(lanes)] if lanes else [3.0]
    fig = Figure(figsize=(10, 0.87 * sum(ratios) + 0.4), dpi=100)
    grid = fig.add_gridspec(len(ratios), 1, height_ratios=ratios)
    row, bottom = 0, None
    any_latency = any_lanes = False
    for key, events, series, lanes, end in panels:
        ax = fig.add_subplot(grid[row])
        row, bottom = row + 1, ax
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
        if lanes:
            any_lanes = True
            ax.tick_params(labelbottom=False)
            lx = fig.add_subplot(grid[row], sharex=ax)
            row, bottom = row + 1, lx
            _draw_lanes(lx, lanes, spans)
    assert bottom is not None
    bottom.set_xlabel("seconds since the phase start")
    fig.suptitle("Fault timeline over latency", fontsize=13, fontweight="bold")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    caption = "Fault timeline over latency: red bands = link down, dashed = step change or node event"
    if any_lanes:
        caption += ", green bars = MPTCP subflows up, one lane per subflow (hatched: a backup; ip mptcp monitor)"
    if not any_latency:
        caption += " (no delay or RTT series in this run's raw/series.csv)"
    if len(groups) > MAX_PANELS:
        caption += f"; the first {MAX_PANELS} of {len(groups)} phases with faults"
    return buf.getvalue(), caption


def _draw_lanes(ax: Any, lanes: dict[str, list[tuple[float, float, bool]]], down: dict[str, Any]) -> None:
    """One row of bars per subflow under a latency panel, with the same link-down bands."""
    for sp in down.values():
        for a, b in sp:
            ax.axvspan(a, b, color=DOWN_COLOR, alpha=0.13, lw=0)
    names = sorted(lanes)
    for i, name in enumerate(names):
        for backup in (False, True):
            bars = [(a, b - a) for a, b, bk in lanes[name] if bk == backup]
            if bars:
                ax.broken_barh(bars, (i - 0.35, 0.7), facecolors=SUBFLOW_COLOR, alpha=0.45 if backup else 0.9,
                               hatch="///" if backup else None, edgecolor="white", lw=0)  # fmt: skip
    ax.set_yticks(range(len(names)), names, fontsize=8)
    ax.set_ylim(-0.6, len(names) - 0.4)
    ax.set_ylabel("subflows", fontsize=8)
    ax.grid(True, axis="x", color="#e0e0e0", lw=0.6)
    ax.spines[["top", "right"]].set_visible(False)
