"""Plots of a run: plots/<name>.png, bar or line charts (matplotlib, Agg), one panel per y column; scatter plots
of columns and derived results across points (derived.py), with derived fits drawn."""

from __future__ import annotations

import io
import math
import textwrap
from collections.abc import Sequence
from typing import Any

from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.ticker import StrMethodFormatter

from ..model.report import Plot
from ..stats import clean, describe
from .derived import DerivedData, fit_displays, matches
from .display import Display, parse_axis_value, quantity_name, unit_family
from .sweep import Row, Sweep, only_where, pooled_note, where_note

PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22"]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "<", ">"]  # lines that coincide stay distinguishable
REFERENCE_COLOR = "#222222"


def suptitle(fig: Figure, title: str) -> Text:
    """The figure's bold title, wrapped to the figure's width (a long title would run off both edges)."""
    per_line = max(30, int(fig.get_figwidth() * 8.5))  # characters of 13 pt bold per inch at this dpi, about
    return fig.suptitle(textwrap.fill(title, per_line), fontsize=13, fontweight="bold")


def _reference(ref: str | None, sweep: Sweep, rows: Sequence[Row], y_family: str | None) -> float | None:
    """The configured/expected value over these rows (base units), None when absent or not unique."""
    if not ref or not rows:
        return None
    if ref in sweep.axes:
        parsed = {parse_axis_value(r.get(ref)) for r in rows}
        if len(parsed) != 1 or None in parsed:
            return None
        value, fam = parsed.pop()  # type: ignore[misc]
        if fam is not None and y_family is not None and fam != y_family:
            return None  # e.g. a rate axis as the reference of a packets/s column: not comparable
        return value
    vals = clean(r.get(ref) for r in rows)
    return sum(vals) / len(vals) if vals else None


def _ylabel(spec: Plot, column: str, disp: Display) -> str:
    """'h3 rx (Mbit/s)'; the spec's ylabel is used unless it only names the base unit ('bits per second')."""
    base_names = {
        "rate": {"bits per second", "bit/s", "bits/s", "bps"},
        "pps": {"packets per second", "pkt/s", "packets/s"},
        "mps": {"messages per second", "msg/s", "messages/s"},
        "ratio": {"ratio"},
        "seconds": {"seconds", "s", "second"},
        "bytes": {"bytes", "b"},
        "total": {"count", "total"},
    }
    label = spec.ylabel.strip()
    if len(spec.y) > 1 or not label or label.lower() in base_names.get(disp.family or "", set()):
        label = quantity_name(column)
    return f"{label} ({disp.unit})" if disp.unit and disp.unit not in label else label


def _style(ax: Any) -> None:
    ax.spines["top"].set_visible(False)
    ax.spines["right"].set_visible(False)
    ax.grid(axis="y", color="#dddddd", linewidth=0.8)
    ax.set_axisbelow(True)
    ax.yaxis.set_major_formatter(StrMethodFormatter("{x:,.6g}"))


def _x_numeric(sweep: Sweep, axis: str, values: Sequence[str]) -> tuple[list[float], Display, str] | None:
    """x positions in display units, the axis display and label, when every value parses as a quantity."""
    parsed = [parse_axis_value(v) for v in values]
    if not parsed or any(p is None for p in parsed):
        return None
    fams = {p[1] for p in parsed if p}
    if len(fams) != 1:
        return None
    fam = fams.pop()
    base = [p[0] for p in parsed if p]
    suffix = {"rate": "_bits_per_second", "seconds": "_seconds", "bytes": "_bytes"}.get(fam or "", "")
    disp = Display.for_column(f"x{suffix}", base) if suffix else Display(None, 1.0, "")
    label = f"{axis} ({disp.unit})" if disp.unit else axis
    return [b * disp.scale for b in base], disp, label


def plot_png(spec: Plot, sweep: Sweep, rows: Sequence[Row]) -> bytes:
    """One PNG: a panel per y column; bar (grouped) or line chart; error bars = sd when n > 1."""
    for a in (spec.x, spec.group, *spec.where):
        if a is not None and a not in sweep.axes:
            raise ValueError(f"{a!r} is not a sweep axis (axes: {sweep.axes})")
    sweep, rows = only_where(spec.where, sweep, rows)
    xs = [c[0] for c in sweep.combos([spec.x], rows)]
    groups: list[str | None] = [c[0] for c in sweep.combos([spec.group], rows)] if spec.group else [None]
    npanels = len(spec.y)
    # bars need room per bar; lines do not
    width = max(7.5, min(14.0, 2.5 + 1.0 * len(xs) * max(1, len(groups)) ** 0.6)) if spec.kind == "bar" else 9.0
    fig = Figure(figsize=(width, 0.6 + 3.9 * npanels), dpi=110, layout="constrained")
    axs = fig.subplots(npanels, 1, squeeze=False)[:, 0]
    pooled = sweep.pooled([spec.x] + ([spec.group] if spec.group else []), rows)
    suptitle(fig, spec.title)
    note = (f"only {where_note(spec.where)}; " if spec.where else "") + pooled_note(pooled)
    note += "; error bars ±1 sd (n > 1)"
    if spec.reference:
        note += f"; {'black marks' if spec.kind == 'bar' else 'dashed line'}: configured value ({spec.reference})"
    axs[0].set_title(note, fontsize=9, color="#555555", loc="left")
    for ax, column in zip(axs, spec.y, strict=True):
        disp = Display.for_column(column, clean(r.get(column) for r in rows))
        (_bar if spec.kind == "bar" else _line)(ax, spec, sweep, rows, column, disp, xs, groups)
        ax.set_ylabel(_ylabel(spec, column, disp))
        _style(ax)
        seen: dict[str, Any] = {}  # one legend entry per group (bars are drawn one by one), "configured" last
        for h, lab in sorted(zip(*ax.get_legend_handles_labels(), strict=True), key=lambda hl: hl[1] == "configured"):
            seen.setdefault(lab, h)
        if seen:
            ax.legend(
                list(seen.values()),
                list(seen),
                title=spec.group,
                loc="upper left",
                bbox_to_anchor=(1.01, 1.0),
                frameon=False,
            )
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()


def _cell_stats(rows: Sequence[Row], spec: Plot, column: str, x: str, g: str | None) -> tuple[list[Row], dict]:
    sub = [r for r in rows if r.get(spec.x) == x and (spec.group is None or r.get(spec.group) == g)]
    return sub, describe(r.get(column) for r in sub)


def _sig(disp: Display, value: float, digits: int = 3) -> str:
    """A bar label: 3 significant digits in display units, no exponent ('9.60', '61.0', '1,234')."""
    scaled = abs(value * disp.scale)
    d = 0 if scaled == 0 else max(0, digits - 1 - math.floor(math.log10(scaled)))
    return disp.number(value, d)


def _bar(ax: Any, spec: Plot, sweep: Sweep, rows: Sequence[Row], column: str, disp: Display, xs, groups) -> None:
    ng = len(groups)
    w = 0.8 / ng
    fam = unit_family(column)
    bars: list[tuple[float, float, float | None, str]] = []  # position, top of bar + error, reference, label
    ref_labelled = False
    for gi, g in enumerate(groups):
        color = PALETTE[gi % len(PALETTE)]
        for xi, x in enumerate(xs):
            pos = xi + (gi - (ng - 1) / 2) * w
            sub, s = _cell_stats(rows, spec, column, x, g)
            ref = _reference(spec.reference, sweep, sub, fam)
            r = ref * disp.scale if ref is not None else None
            if r is not None:
                ax.hlines(
                    r,
                    pos - w * 0.5,
                    pos + w * 0.5,
                    colors=REFERENCE_COLOR,
                    linewidth=2.5,
                    zorder=4,
                    label=None if ref_labelled else "configured",
                )
                ref_labelled = True
            if s["n"] == 0:
                ax.text(pos, 0, "n/a", ha="center", va="bottom", fontsize=8, color="#888888")
                continue
            m = s["mean"] * disp.scale
            err = s["sd"] * disp.scale if s["n"] > 1 else None
            ax.bar(pos, m, w * 0.92, color=color, label=g, zorder=2)
            if err:
                ax.errorbar(pos, m, yerr=err, fmt="none", ecolor="#333333", capsize=3, lw=1, zorder=3)
            bars.append((pos, m + (err or 0), r, _sig(disp, s["mean"])))
    top = max([b[1] for b in bars] + [b[2] for b in bars if b[2] is not None] + [0.0])
    ymax = top * 1.15 if top > 0 else 1.0
    for pos, hi, r, text in bars:
        # the value sits on its bar, or above the configured mark when that mark is in the way
        if r is not None and -0.02 * ymax < r - hi < 0.06 * ymax:
            hi = max(hi, r)
        ax.annotate(
            text,
            (pos, hi),
            xytext=(0, 3),
            textcoords="offset points",
            ha="center",
            va="bottom",
            fontsize=8,
            color="#333333",
            zorder=5,
        )
    ax.set_xticks(range(len(xs)), xs)
    ax.set_xlabel(spec.x)
    ax.set_xlim(-0.6, len(xs) - 0.4)
    ax.set_ylim(bottom=0, top=ymax)


def _line(ax: Any, spec: Plot, sweep: Sweep, rows: Sequence[Row], column: str, disp: Display, xs, groups) -> None:
    num = _x_numeric(sweep, spec.x, xs)
    if num is not None:
        positions, _, xlabel = num
        order = sorted(range(len(xs)), key=lambda i: positions[i])
    else:
        positions, xlabel, order = list(range(len(xs))), spec.x, list(range(len(xs)))
    fam = unit_family(column)
    refs: list[tuple[str, list[float], list[float]]] = []
    plotted: list[float] = []
    for gi, g in enumerate(groups):
        color = PALETTE[gi % len(PALETTE)]
        px, py, pe, rx, ry = [], [], [], [], []
        for i in order:
            sub, s = _cell_stats(rows, spec, column, xs[i], g)
            ref = _reference(spec.reference, sweep, sub, fam)
            if ref is not None:
                rx.append(positions[i])
                ry.append(ref * disp.scale)
            if s["n"] == 0:
                continue
            px.append(positions[i])
            py.append(s["mean"] * disp.scale)
            pe.append(s["sd"] * disp.scale if s["n"] > 1 else 0.0)
        plotted += py
        if px:
            marker = MARKERS[gi % len(MARKERS)]
            ax.errorbar(
                px,
                py,
                yerr=pe if any(pe) else None,
                color=color,
                marker=marker,
                lw=2,
                ms=7,
                capsize=3,
                label=g if g is not None else quantity_name(column),
                zorder=3,
            )
        if rx:
            refs.append((color, rx, ry))
    if refs:
        same = all(r[1:] == refs[0][1:] for r in refs)
        for k, (color, rx, ry) in enumerate(refs[:1] if same else refs):
            ax.plot(
                rx,
                ry,
                linestyle="--",
                lw=1.5,
                color=REFERENCE_COLOR if same else color,
                zorder=2,
                label="configured" if k == 0 else None,
            )
    if num is None:
        ax.set_xticks(positions, xs)
    else:
        lo_x, hi_x = min(positions), max(positions)
        if lo_x > 0 and hi_x / lo_x >= 10 and len(xs) >= 3:
            ax.set_xscale("log")  # sweeps over decades (1, 10, 100 Mbit/s)
            if plotted and min(plotted) > 0 and max(plotted) / min(plotted) >= 100:
                ax.set_yscale("log")  # and values that follow them
                ax.yaxis.set_major_formatter(StrMethodFormatter("{x:,.6g}"))
        if len(xs) <= 10:
            ax.set_xticks(positions, [f"{v:,.6g}" for v in positions])
            ax.minorticks_off()
    ax.set_xlabel(xlabel)
    lo, hi = ax.get_ylim()
    if ax.get_yscale() == "linear" and 0 < lo < 0.5 * hi:
        ax.set_ylim(bottom=0)


def scatter_png(spec: Plot, data: DerivedData) -> bytes:
    """One y against one x (tidy columns, derived sums or ratios): a dot per point or ratio row, its area from
    `size`, its text from the `label` axis, a colour per `group` value, and the lines of a derived `fit` with
    their equations in the legend. ValueError when there is nothing to draw."""
    y = spec.y[0]
    names = [spec.x, y, *([spec.size] if spec.size else [])]
    recs = [r for r in data.records(names) if matches(spec.where, r.values)]
    for a in (spec.group, spec.label):
        if a is not None and recs and a not in recs[0].values:
            raise ValueError(f"{a!r} is not an axis of these rows (axes: {list(recs[0].values)})")
    drawn = [r for r in recs if r.fields[spec.x] is not None and r.fields[y] is not None]
    if not drawn:
        only = f" with {where_note(spec.where)}" if spec.where else ""
        raise ValueError(f"no point has both {spec.x} and {y}{only}")
    if spec.fit and data.spec.kind(spec.fit) != "fit":
        raise ValueError(f"fit {spec.fit!r} is not a derived fit")
    fit = data.spec.fit(spec.fit) if spec.fit else None
    fit_res = data.fits.get(spec.fit, []) if spec.fit else []
    xdisp = Display.for_column(spec.x, [r.fields[spec.x] for r in drawn])
    ydisp = Display.for_column(y, [r.fields[y] for r in drawn])
    if fit is not None:  # the fit's units where it is drawn over the same columns
        fx, fy = fit_displays(data, fit)
        xdisp, ydisp = (fx if fit.x == spec.x else xdisp), (fy if fit.y == y else ydisp)
    groups: list[str | None] = [None]
    if spec.group:
        present = {r.values.get(spec.group) for r in drawn}
        groups = [v for v in data.sweep.values.get(spec.group, []) if v in present]
    colors = {g: PALETTE[i % len(PALETTE)] for i, g in enumerate(groups)}
    sizes = clean(r.fields.get(spec.size) for r in drawn) if spec.size else []
    top = max((abs(s) for s in sizes), default=0.0)

    def area(r: Any) -> float:
        v = r.fields.get(spec.size) if spec.size else None
        return 60.0 if v is None or top == 0 else 25.0 + 575.0 * abs(v) / top

    fig = Figure(figsize=(9.0, 6.0), dpi=110, layout="constrained")
    ax = fig.subplots()
    suptitle(fig, spec.title)
    for gi, g in enumerate(groups):
        sub = [r for r in drawn if g is None or r.values.get(spec.group or "") == g]
        ax.scatter([r.fields[spec.x] * xdisp.scale for r in sub], [r.fields[y] * ydisp.scale for r in sub],
                   s=[area(r) for r in sub], color=colors[g], alpha=0.55, edgecolors="#333333", linewidths=0.6,
                   marker=MARKERS[gi % len(MARKERS)] if not spec.size else "o", zorder=3,
                   label=g if g is not None else quantity_name(y))  # fmt: skip
        if spec.label:
            for r in sub:
                xy = (r.fields[spec.x] * xdisp.scale, r.fields[y] * ydisp.scale)
                ax.annotate(r.values.get(spec.label, ""), xy, xytext=(5, 4), textcoords="offset points", fontsize=8,
                            color="#333333", zorder=4)  # fmt: skip
    for k, res in enumerate(fit_res):
        if res.c0 is None or res.c1 is None or not res.residuals or res.c2 is not None:
            continue  # no line (a two-regressor fit is a plane: its figures are in the derived table)
        xs = [e.x for e in res.residuals]
        lo, hi = min(xs), max(xs)
        same_groups = fit is not None and spec.group == fit.group
        color = colors.get(res.group, REFERENCE_COLOR) if same_groups else REFERENCE_COLOR
        c0, c1 = res.c0 * ydisp.scale, res.c1 * ydisp.scale / xdisp.scale
        sign = "+" if c1 >= 0 else "−"
        r2 = f"{res.r2:.3f}" if res.r2 is not None else "?"
        head = f"{res.group}: " if res.group is not None else "fit: "
        ax.plot([lo * xdisp.scale, hi * xdisp.scale], [c0 + c1 * lo * xdisp.scale, c0 + c1 * hi * xdisp.scale],
                ls="--" if k % 2 == 0 else "-.", lw=1.6, color=color, zorder=2,
                label=f"{head}y = {c0:.4g} {sign} {abs(c1):.4g}·x (r² = {r2}, n = {res.n})")  # fmt: skip
    xl, yl = quantity_name(spec.x) if xdisp.family else spec.x, quantity_name(y) if ydisp.family else y
    ax.set_xlabel(f"{xl} ({xdisp.unit})" if xdisp.unit else xl)
    ax.set_ylabel(_ylabel(spec, y, ydisp) if spec.ylabel else (f"{yl} ({ydisp.unit})" if ydisp.unit else yl))
    _style(ax)
    ax.grid(axis="x", color="#eeeeee", linewidth=0.8)
    ax.legend(title=spec.group, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, fontsize=8,
              markerscale=0.6 if spec.size else 1.0)  # fmt: skip
    notes = [f"only {where_note(spec.where)}"] if spec.where else []
    notes.append("each dot the mean over a point's repetitions" if data.spec.ratio_axis(names) is None
                 else f"a dot per row of {', '.join(n for n in names if data.spec.kind(n) == 'ratio')}")  # fmt: skip
    if spec.size:
        notes.append(f"area ∝ {spec.size}")
    if left := len(recs) - len(drawn):
        notes.append(f"{left} left out (no {spec.x} or {y})")
    if spec.fit and not any(r.c0 is not None for r in fit_res):
        notes.append(f"fit {spec.fit}: no line")
    ax.set_title("; ".join(notes), fontsize=9, color="#555555", loc="left")
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()
