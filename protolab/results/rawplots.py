"""Plots of the tasks' raw series (raw/series.csv) rather than the tidy table: `ccdf`, the distribution of every
sample a histogram series counted (Prometheus-style cumulative `<name>_bucket` rows with an `le` label), and
`series`, every sample of a raw series against its number (SCIOP's Fig. 8: per-experiment maxima)."""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import Any

from matplotlib.figure import Figure

from ..model.report import Plot
from .plots import suptitle
from .sweep import Sweep, only_where, where_note

PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22"]
MARK_STYLES = ["--", ":", "-."]


def _scale(name: str) -> tuple[float, str]:
    """Seconds are drawn in milliseconds; anything else as it is."""
    return (1e3, "ms") if name.endswith("_seconds") else (1.0, "")


def _cells(spec: Plot, sweep: Sweep) -> tuple[Sweep, list[str], list[str | None], dict[tuple[str, Any], set[str]]]:
    """The sweep after `where`, the panels (values of x), the groups, and the point ids of each (x, group)."""
    for a in (spec.x, spec.group, *spec.where):
        if a is not None and a not in sweep.axes:
            raise ValueError(f"{a!r} is not a sweep axis (axes: {sweep.axes})")
    sweep, _ = only_where(spec.where, sweep, [])
    panels = [c[0] for c in sweep.combos([spec.x], [])]
    groups: list[str | None] = [c[0] for c in sweep.combos([spec.group], [])] if spec.group else [None]
    cells: dict[tuple[str, Any], set[str]] = {}
    for pid, vals in sweep.point_values.items():
        cells.setdefault((vals.get(spec.x), vals.get(spec.group) if spec.group else None), set()).add(pid)
    return sweep, panels, groups, cells


def _pooled(spec: Plot, sweep: Sweep) -> list[str]:
    """Axes other than x, group and where's that take several values among the points: pooled in each curve."""
    keep = {spec.x, spec.group, *spec.where}
    return [a for a in sweep.axes if a not in keep and len({v.get(a) for v in sweep.point_values.values()}) > 1]


def histogram(raw: Sequence[Mapping[str, Any]], name: str, points: set[str]) -> dict[float, float]:
    """Samples per bucket upper edge (seconds), summed over these points' repetitions and phases, from the
    cumulative `<name>_bucket` rows (each (point, repetition, phase) is one histogram)."""
    per: dict[tuple[str, int, str], dict[float, float]] = {}
    for r in raw:
        if r["series"] == f"{name}_bucket" and r["point"] in points:
            le = (r.get("labels") or {}).get("le")
            if le is None:
                continue
            per.setdefault((r["point"], r["repetition"], r["phase"]), {})[float(le)] = r["value"]
    out: dict[float, float] = {}
    for cum in per.values():
        prev = 0.0
        for le in sorted(cum):
            out[le] = out.get(le, 0.0) + max(0.0, cum[le] - prev)
            prev = max(prev, cum[le])
    return out


def ccdf(hist: Mapping[float, float]) -> tuple[list[float], list[float], float]:
    """(bucket upper edges, fraction of samples above each edge, sample count); the last edge's fraction is 0."""
    n = sum(hist.values())
    xs, ys, seen = [], [], 0.0
    for le in sorted(hist):
        seen += hist[le]
        xs.append(le)
        ys.append(max(0.0, 1 - seen / n) if n else 0.0)
    return xs, ys, n


def samples(raw: Sequence[Mapping[str, Any]], name: str, points: set[str]) -> list[float]:
    """The values of a raw series for these points, point by point, repetition by repetition, in time order."""
    rows = [r for r in raw if r["series"] == name and r["point"] in points]
    rows.sort(key=lambda r: (r["point"], r["repetition"], r["phase"], r["timestamp_seconds"]))
    return [r["value"] for r in rows]


def raw_plot_png(spec: Plot, sweep: Sweep, raw: Sequence[Mapping[str, Any]]) -> bytes:
    """One PNG, a row of panels per y series and a panel per value of x; ValueError when there is nothing to draw."""
    if spec.kind not in ("ccdf", "series"):
        raise ValueError(f"plot {spec.name}: raw plots are ccdf or series, not {spec.kind}")
    sweep, panels, groups, cells = _cells(spec, sweep)
    if not panels:
        raise ValueError(f"no point has {where_note(spec.where)}" if spec.where else "no points")
    fig = Figure(figsize=(min(16.0, 1.5 + 4.6 * len(panels)), 0.9 + 3.6 * len(spec.y)), dpi=110, layout="constrained")
    axs = fig.subplots(len(spec.y), len(panels), squeeze=False, sharex=spec.kind == "ccdf", sharey="row")
    drawn = 0
    for row, name in enumerate(spec.y):
        scale, unit = _scale(name)
        for col, panel in enumerate(panels):
            ax = axs[row][col]
            for gi, g in enumerate(groups):
                points = cells.get((panel, g), set())
                color, label = PALETTE[gi % len(PALETTE)], g if g is not None else name
                if spec.kind == "ccdf":
                    xs, ys, n = ccdf(histogram(raw, name, points))
                    if not n:
                        continue
                    # a step per bucket; the floor of the y axis is one sample in n
                    ax.step([x * scale for x in xs], [max(y, 0.5 / n) for y in ys], where="post", color=color,
                            lw=1.4, label=f"{label} (n={n:,.0f})")  # fmt: skip
                else:
                    vals = samples(raw, name, points)
                    if not vals:
                        continue
                    ax.plot(range(1, len(vals) + 1), [v * scale for v in vals], "o", ms=3.5, color=color,
                            label=f"{label} ({len(vals)})", alpha=0.85)  # fmt: skip
                drawn += 1
            for mi, (mark, value) in enumerate(spec.marks.items()):
                style = dict(color="#222222", ls=MARK_STYLES[mi % len(MARK_STYLES)], lw=1)
                if spec.kind == "ccdf":
                    ax.axvline(value * scale, **style, label=f"{mark} ({value * scale:g} {unit})")
                else:
                    ax.axhline(value * scale, **style, label=f"{mark} ({value * scale:g} {unit})")
            ax.set_title(f"{spec.x} = {panel}", fontsize=10, loc="left")
            if spec.kind == "ccdf":
                ax.set_xscale("log")
                ax.set_yscale("log")
                ax.set_xlabel(f"{name.removesuffix('_seconds').replace('_', ' ')} ({unit})" if unit else name)
                if col == 0:
                    ax.set_ylabel("fraction of samples above")
            else:
                ax.set_yscale("log")
                ax.set_xlabel("sample number")
                if col == 0:
                    ax.set_ylabel(f"{name.removesuffix('_seconds').replace('_', ' ')} ({unit})" if unit else name)
            ax.grid(True, which="major", color="#dddddd", lw=0.8)
            ax.spines[["top", "right"]].set_visible(False)
            if ax.get_legend_handles_labels()[0] and col == len(panels) - 1:  # one legend, right of the last panel
                ax.legend(fontsize=7, frameon=False, title=spec.group, title_fontsize=8, loc="upper left",
                          bbox_to_anchor=(1.01, 1.0))  # fmt: skip
    if not drawn:
        raise ValueError(f"raw/series.csv has no samples of {', '.join(spec.y)} for these points")
    suptitle(fig, spec.title)
    notes = [f"only {where_note(spec.where)}"] if spec.where else []
    if pooled := _pooled(spec, sweep):
        notes.append(f"pooled over {', '.join(pooled)}")
    notes.append("all repetitions pooled")
    axs[0][0].annotate("; ".join(notes), (0, 1.08), xycoords="axes fraction", fontsize=9, color="#555555")
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()
