"""Tables, plots and the HTML report of a run, derived from manifest.json, tidy.csv and summary.json alone.

`render_all(run_dir)` can be rerun at any time (e.g. after improving a plot) without rerunning the
experiment; table files come out byte-identical for the same inputs.

- tables/<name>.csv: one row per combination of the table's `rows` axes (sweep order), per column
  `<column>_mean`, `<column>_sd`, `<column>_n` in base units (for programs).
- tables/<name>.md: the same for people: Mbit/s, %, ms, `mean ± sd` when n > 1.
- plots/<name>.png: bar or line charts (matplotlib, Agg), one panel per y column.
- report.html: one self-contained file (CSS inline, plots as data URIs, no external references).

When a table's `rows` (or a plot's `x`/`group`) combine fewer axes than the sweep has, the values of
the other axes are pooled with the repetitions (the notes under tables and plots say so).
"""

from __future__ import annotations

import base64
import csv
import io
import itertools
import json
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from jinja2 import Environment, FileSystemLoader, StrictUndefined
from matplotlib.figure import Figure
from matplotlib.ticker import StrMethodFormatter
from pydantic import ValidationError

from ..model.report import Knee, Plot, Table
from .display import MISSING, Display, axis_str, parse_axis_value, quantity_name, unit_family
from .seedtables import SeedTable, load_for_run
from .seedtables import key as seedkey
from .stats import clean, describe
from .store import SUMMARY, TIDY, load_json, load_manifest, read_tidy
from .timeline import fault_timeline_png

log = logging.getLogger(__name__)
TEMPLATES = Path(__file__).resolve().parent / "templates"
REPORT_TEMPLATE = "report.html.j2"
PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22"]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "<", ">"]  # lines that coincide stay distinguishable
REFERENCE_COLOR = "#222222"
Row = Mapping[str, Any]


# --------------------------------------------------------------------------------------------------
# the sweep as the run saw it


@dataclass
class Sweep:
    """Axis names and their values as strings, in the spec's order; point ids with their labels."""

    axes: list[str]
    values: dict[str, list[str]]
    point_values: dict[str, dict[str, str]] = field(default_factory=dict)
    point_labels: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_manifest(cls, manifest: Mapping[str, Any], rows: Sequence[Row] = ()) -> Sweep:
        sweep = manifest.get("spec", {}).get("sweep") or {}
        axes = list(sweep)
        values = {a: [axis_str(v) for v in sweep[a]] for a in axes}
        for r in rows:  # values the spec does not list (should not happen) go last, in order of appearance
            for a in axes:
                v = r.get(a)
                if v is not None and v not in values[a]:
                    values[a].append(v)
        pv, labels = {}, {}
        for p in manifest.get("points") or []:
            vals = {k: axis_str(v) for k, v in (p.get("values") or {}).items()}
            pv[p["id"]] = vals
            labels[p["id"]] = p.get("label") or ", ".join(f"{k}={v}" for k, v in vals.items()) or p["id"]
        return cls(axes, values, pv, labels)

    def combos(self, axes: Sequence[str], rows: Sequence[Row]) -> list[tuple[str, ...]]:
        """Combinations of these axes' values in sweep order that the plan or the data contain."""
        present = {tuple(v.get(a) for a in axes) for v in self.point_values.values()}
        present |= {tuple(r.get(a) for a in axes) for r in rows}
        return [c for c in itertools.product(*(self.values[a] for a in axes)) if c in present]

    def pooled(self, axes: Sequence[str], rows: Sequence[Row]) -> list[str]:
        """Axes not in `axes` that take more than one value in the data (pooled with the repetitions)."""
        return [a for a in self.axes if a not in axes and len({r.get(a) for r in rows}) > 1]


def _select(rows: Sequence[Row], axes: Sequence[str], combo: Sequence[str]) -> list[Row]:
    return [r for r in rows if all(r.get(a) == v for a, v in zip(axes, combo, strict=True))]


def _only(where: Mapping[str, Any], sweep: Sweep, rows: Sequence[Row]) -> tuple[Sweep, list[Row]]:
    """A table's or plot's `where`: only the rows, and the planned points, whose axes have these values."""
    want = {a: axis_str(v) for a, v in where.items()}

    def keep(values: Mapping[str, Any]) -> bool:
        return all(values.get(a) == v for a, v in want.items())

    points = {p: v for p, v in sweep.point_values.items() if keep(v)}
    return Sweep(sweep.axes, sweep.values, points, sweep.point_labels), [r for r in rows if keep(r)]


def _where_note(where: Mapping[str, Any]) -> str:
    return ", ".join(f"{a} = {axis_str(v)}" for a, v in where.items())


def _pooled_note(pooled: Sequence[str]) -> str:
    if not pooled:
        return "mean over repetitions"
    axes = pooled[0] if len(pooled) == 1 else ", ".join(pooled[:-1]) + " and " + pooled[-1]
    return f"mean over repetitions and over {axes}"


# --------------------------------------------------------------------------------------------------
# tables


@dataclass
class TableData:
    spec: Table
    combos: list[tuple[str, ...]]
    stats: list[list[dict[str, Any]]]  # [combo][column] -> describe()
    displays: list[Display]
    pooled: list[str]
    seed: SeedTable | None = None  # the seed's numbers, shown beside the measured columns they share

    @classmethod
    def build(cls, spec: Table, sweep: Sweep, rows: Sequence[Row], seed: SeedTable | None = None) -> TableData:
        unknown = [a for a in [*spec.rows, *spec.where] if a not in sweep.axes]
        if unknown:
            raise ValueError(f"rows {unknown} are not sweep axes (axes: {sweep.axes})")
        sweep, rows = _only(spec.where, sweep, rows)
        combos = sweep.combos(spec.rows, rows)
        stats = [
            [describe(r.get(c) for r in _select(rows, spec.rows, combo)) for c in spec.columns] for combo in combos
        ]
        displays = [Display.for_column(c, clean(r.get(c) for r in rows)) for c in spec.columns]
        if seed is not None:  # seed rows the run did not measure go last, with empty measured cells
            measured = {seedkey(c) for c in combos}
            for k, _ in seed.rows:
                if seedkey(k) not in measured:
                    combos.append(k)
                    stats.append([describe([]) for _ in spec.columns])
        return cls(spec, combos, stats, displays, sweep.pooled(spec.rows, rows), seed)

    def _has_seed(self, column: str) -> bool:
        return self.seed is not None and column in self.seed.columns

    @property
    def headers(self) -> list[str]:
        out = list(self.spec.rows)
        for c, d in zip(self.spec.columns, self.displays, strict=True):
            out.append(d.header(c))
            if self._has_seed(c):
                out.append(f"seed ({d.unit})" if d.unit else "seed")
        return out

    @property
    def classes(self) -> list[str]:
        """Per header: '' for row keys, 'num' for measured columns, 'num seed' for the seed's."""
        out = [""] * len(self.spec.rows)
        for c in self.spec.columns:
            out += ["num", "num seed"] if self._has_seed(c) else ["num"]
        return out

    def _seed_values(self, combo: Sequence[str]) -> dict[str, float | None]:
        return self.seed.lookup().get(seedkey(combo), {}) if self.seed is not None else {}

    def cells(self) -> list[list[str]]:
        out = []
        for combo, stats in zip(self.combos, self.stats, strict=True):
            seed = self._seed_values(combo)
            row = list(combo)
            for c, s, d in zip(self.spec.columns, stats, self.displays, strict=True):
                row.append(d.mean_sd(s["mean"], s["sd"], s["n"]))
                if self._has_seed(c):
                    row.append(d.number(seed.get(c)))
            out.append(row)
        return out

    @property
    def seed_note(self) -> str:
        if self.seed is None:
            return ""
        return f"Seed columns: {self.seed.citation} (experiments/{self.seed.source}); {MISSING} = no number there."

    @property
    def note(self) -> str:
        ns = sorted({s["n"] for row in self.stats for s in row if s["n"]})
        n = f"n = {ns[0]}" if len(ns) == 1 else f"n = {ns[0]}–{ns[-1]}" if ns else "no values"
        only = _where_note(self.spec.where)
        return (
            (f"Only the points with {only}. " if only else "")
            + f"Cells: {_pooled_note(self.pooled)} ({n}), ± sample standard deviation when n > 1; "
            f"{MISSING} = not measured."
        )

    def csv_text(self) -> str:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        header = list(self.spec.rows)
        for c in self.spec.columns:
            header += [f"{c}_{k}" for k in ("mean", "sd", "n")] + ([f"{c}_seed"] if self._has_seed(c) else [])
        w.writerow(header)
        for combo, stats in zip(self.combos, self.stats, strict=True):
            cells: list[str] = list(combo)
            seed = self._seed_values(combo)
            for c, s in zip(self.spec.columns, stats, strict=True):
                cells += [_num(s["mean"]), _num(s["sd"]) if s["n"] else "", str(s["n"])]
                if self._has_seed(c):
                    cells.append(_num(seed.get(c)))
            w.writerow(cells)
        return buf.getvalue()

    def markdown_text(self) -> str:
        def esc(s: str) -> str:
            return s.replace("|", "\\|").replace("\n", " ")

        headers = self.headers
        align = ["---" if not cls else "---:" for cls in self.classes]
        lines = [f"# {esc(self.spec.title)}", "", "| " + " | ".join(esc(h) for h in headers) + " |"]
        lines.append("|" + "|".join(align) + "|")
        lines += ["| " + " | ".join(esc(c) for c in row) + " |" for row in self.cells()]
        lines += ["", self.note, ""]
        if self.seed is not None:
            lines += [self.seed_note, ""]
        return "\n".join(lines)


class KneeData(TableData):
    """A Knee's table: per row combination the highest offered value kept up with, the first that was not,
    and the peak delivered rate (the columns `<x>_sustained`, `<x>_collapse`, `<delivered>_peak`)."""

    knee: Knee

    @classmethod
    def build_knee(cls, spec: Knee, sweep: Sweep, rows: Sequence[Row]) -> KneeData:
        unknown = [a for a in [*spec.rows, spec.x] if a not in sweep.axes]
        if unknown:
            raise ValueError(f"axes {unknown} are not sweep axes (axes: {sweep.axes})")
        if spec.x in spec.rows:
            raise ValueError(f"x axis {spec.x!r} cannot also index the rows")
        xs: list[tuple[float, str]] = []
        for v in sweep.values[spec.x]:
            parsed = parse_axis_value(v)
            if parsed is None:
                raise ValueError(f"x axis {spec.x!r} value {v!r} is not a number")
            xs.append((parsed[0], v))
        xs.sort()
        combos = sweep.combos(spec.rows, rows)
        stats: list[list[dict[str, Any]]] = []
        for combo in combos:
            sub = _select(rows, spec.rows, combo)
            sustained = collapse = None
            peak: float | None = None
            for num, label in xs:
                at = [r for r in sub if r.get(spec.x) == label]
                got = clean(r.get(spec.delivered) for r in at)
                if not got:
                    continue  # not measured: neither kept up nor collapsed
                delivered = math.fsum(got) / len(got)
                offered_vals = clean(r.get(spec.offered) for r in at) if spec.offered else [num]
                offered = math.fsum(offered_vals) / len(offered_vals) if offered_vals else num
                peak = delivered if peak is None else max(peak, delivered)
                if collapse is None:
                    if offered > 0 and delivered / offered >= spec.min_ratio:
                        sustained = num
                    else:
                        collapse = num
            stats.append([describe([] if v is None else [v]) for v in (sustained, collapse, peak)])
        columns = [f"{spec.x}_sustained", f"{spec.x}_collapse", f"{spec.delivered}_peak"]
        table = Table(name=spec.name, title=spec.title, rows=spec.rows or [spec.x], columns=columns)
        if not spec.rows:  # one row for the whole sweep
            combos, table = [("all",)], table.model_copy(update={"rows": ["points"]})
        peaks = [st[2]["mean"] for st in stats]
        x_disp = Display.for_column(spec.delivered if _same_family(spec, sweep) else spec.x)
        displays = [x_disp, x_disp, Display.for_column(spec.delivered, clean(peaks))]
        data = cls(table, combos, stats, displays, sweep.pooled([*spec.rows, spec.x], rows))
        data.knee = spec
        return data

    @property
    def headers(self) -> list[str]:
        x, d = self.knee.x, self.displays
        unit = f" ({d[0].unit})" if d[0].unit else ""
        return [*self.spec.rows, f"{x} kept up to{unit}", f"{x} collapsed at{unit}", d[2].header(self.spec.columns[2])]

    @property
    def note(self) -> str:
        k = self.knee
        offered = k.offered or f"the {k.x} axis"
        return (
            f"Kept up: delivered ({k.delivered}) >= {k.min_ratio:g} x offered ({offered}) at this {k.x} and every "
            f"lower one measured; collapsed at: the first {k.x} below that; {MISSING} = none. "
            + _pooled_note(self.pooled).capitalize()
            + "."
        )


def _same_family(spec: Knee, sweep: Sweep) -> bool:
    """Whether the x axis carries the delivered column's unit (a packets/s rate axis of a packets/s column):
    then the kept-up and collapse values are shown in that unit."""
    fam = unit_family(spec.delivered)
    parsed = parse_axis_value(sweep.values[spec.x][0]) if sweep.values.get(spec.x) else None
    return fam is not None and parsed is not None and (parsed[1] == fam or (parsed[1] is None and fam == "pps"))


def _num(v: float | None) -> str:
    return "" if v is None or (isinstance(v, float) and math.isnan(v)) else repr(float(v))


# --------------------------------------------------------------------------------------------------
# plots


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
    sweep, rows = _only(spec.where, sweep, rows)
    xs = [c[0] for c in sweep.combos([spec.x], rows)]
    groups: list[str | None] = [c[0] for c in sweep.combos([spec.group], rows)] if spec.group else [None]
    npanels = len(spec.y)
    # bars need room per bar; lines do not
    width = max(7.5, min(14.0, 2.5 + 1.0 * len(xs) * max(1, len(groups)) ** 0.6)) if spec.kind == "bar" else 9.0
    fig = Figure(figsize=(width, 0.6 + 3.9 * npanels), dpi=110, layout="constrained")
    axs = fig.subplots(npanels, 1, squeeze=False)[:, 0]
    pooled = sweep.pooled([spec.x] + ([spec.group] if spec.group else []), rows)
    fig.suptitle(spec.title, fontsize=13, fontweight="bold")
    note = (f"only {_where_note(spec.where)}; " if spec.where else "") + _pooled_note(pooled)
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


# --------------------------------------------------------------------------------------------------
# report


def _kv(d: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    def show(v: Any) -> str:
        if isinstance(v, (dict, list)):
            return json.dumps(v, sort_keys=True, ensure_ascii=False)
        return "" if v is None else str(v)

    return [(str(k), show(v)) for k, v in (d or {}).items()]


def _check_rows(summary: Mapping[str, Any], sweep: Sweep) -> list[dict[str, Any]]:
    out = []
    # failures first (stable: in point order within each), so a glance at the top tells what went wrong
    for c in sorted(summary.get("checks") or [], key=lambda c: bool(c.get("passed"))):
        bound = c.get("bound") or {}
        lo, hi = bound.get("min"), bound.get("max")
        binomial = c.get("trials_column") is not None  # measured is a proportion; the bound is its interval
        column = f"{c['column']}_as_ratio" if binomial else c["column"]
        disp = Display.for_column(column, [v for v in (c.get("measured"), lo, hi) if v is not None])
        values = {k: axis_str(v) for k, v in (c.get("values") or {}).items()}
        out.append(
            {
                "name": c["name"],
                "point": c.get("point", ""),
                "label": sweep.point_labels.get(c.get("point", "")) or ", ".join(f"{k}={v}" for k, v in values.items()),
                "column": c["column"],
                "measured": disp.with_unit(c.get("measured")) if c.get("measured") is not None else "not measured",
                "bound": (
                    f"{disp.with_unit(c.get('target'))} inside the {100 * (c.get('confidence') or 0):g}% interval "
                    + disp.bound(lo, hi)
                    if binomial
                    else disp.bound(lo, hi)
                ),
                "passed": bool(c.get("passed")),
                "value": c.get("measured"),
                "disp": disp,
            }
        )
    return out


def _check_groups(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One line per check over all the points it ran at (failures first): how many passed, the measured range."""
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["name"], r["column"]), []).append(r)
    out = []
    for (name, column), rs in groups.items():
        vals = clean(r["value"] for r in rs)
        disp = rs[0]["disp"]
        lo, hi = (min(vals), max(vals)) if vals else (None, None)
        measured = (
            "not measured"
            if lo is None
            else disp.with_unit(lo)
            if disp.number(lo) == disp.number(hi)
            else f"{disp.number(lo)} .. {disp.with_unit(hi)}"
        )
        bounds = sorted({r["bound"] for r in rs})
        out.append(
            {
                "name": name,
                "column": column,
                "points": len(rs),
                "passed": sum(1 for r in rs if r["passed"]),
                "measured": measured,
                "bound": bounds[0] if len(bounds) == 1 else "per point",
            }
        )
    return sorted(out, key=lambda g: g["passed"] == g["points"])


def _stat_rows(summary: Mapping[str, Any], sweep: Sweep) -> list[dict[str, str]]:
    out = []
    for pid, cols in (summary.get("statistics") or {}).items():
        for col, s in cols.items():
            if not s.get("n"):
                continue
            disp = Display.for_column(col, [s.get("mean")])
            ci = (
                f"{disp.number(s['ci95_low'])} – {disp.number(s['ci95_high'])}" if s.get("ci95_low") is not None else ""
            )
            out.append(
                {
                    "point": sweep.point_labels.get(pid, pid),
                    "column": disp.header(col),
                    "n": str(s["n"]),
                    "mean": disp.number(s.get("mean")),
                    "ci": ci,
                    "nsd": f"{s['nsd'] * 100:.2f} %" if s.get("nsd") is not None else "",
                }
            )
    return out


class _SpecDumper(yaml.SafeDumper):
    """Multi-line strings (descriptions) as `|` blocks, as people write them."""


def _str_block(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)


_SpecDumper.add_representer(str, _str_block)


def _yaml(obj: Any) -> str:
    return yaml.dump(obj, Dumper=_SpecDumper, sort_keys=False, allow_unicode=True, width=110)


def _commit(c: Any) -> str:
    """{'commit': 'abc..', 'dirty': False} -> 'abc.. (clean tree)'."""
    if not isinstance(c, Mapping):
        return str(c or "")
    return f"{c.get('commit') or '?'} ({'uncommitted changes' if c.get('dirty') else 'clean tree'})"


def _backend(b: Any) -> str:
    """The impairment backend record -> 'fallback (chosen by probing): HTB + ...; netem unavailable: ...'."""
    if not isinstance(b, Mapping):
        return str(b or "")
    chosen, probe = b.get("chosen"), b.get("probe") or {}
    how = "chosen by probing" if b.get("requested") in (None, "auto") else f"requested: {b.get('requested')}"
    parts = [f"{chosen} ({how})" + (f": {probe[chosen]['why']}" if chosen in probe else "")]
    parts += [f"{name} {'available' if p.get('available') else 'unavailable'}: {p.get('why')}"
              for name, p in probe.items() if name != chosen]  # fmt: skip
    return "; ".join(parts)


def _host(host: Any) -> str:
    """The manifest's host: a name, or the static environment (a mapping with a hostname)."""
    if isinstance(host, Mapping):
        return str(host.get("hostname") or json.dumps(host, sort_keys=True))
    return "" if host is None else str(host)


def _duration(manifest: Mapping[str, Any]) -> str:
    from datetime import datetime

    try:
        a = datetime.fromisoformat(str(manifest["started_at"]).replace("Z", "+00:00"))
        b = datetime.fromisoformat(str(manifest["finished_at"]).replace("Z", "+00:00"))
    except (KeyError, ValueError, TypeError):
        return ""
    secs = int((b - a).total_seconds())
    if secs >= 3600:
        return f"{secs // 3600}h {secs % 3600 // 60:02d}m {secs % 60:02d}s"
    return f"{secs // 60}m {secs % 60:02d}s"


def report_html(
    manifest: Mapping[str, Any],
    summary: Mapping[str, Any] | None,
    tables: Sequence[TableData],
    plots: Sequence[tuple[Plot, bytes]],
    sweep: Sweep,
    problems: Sequence[str] = (),
) -> str:
    env = Environment(
        loader=FileSystemLoader(str(TEMPLATES)),
        autoescape=True,
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    spec = manifest.get("spec") or {}
    seed = spec.get("seed") or {}
    environment = manifest.get("environment") or {}
    what_ran = [
        ("profile", manifest.get("profile") or "(none)"),
        ("spec file", manifest.get("spec_file") or ""),
        ("git commit", _commit(manifest.get("git_commit"))),
        ("kernel", manifest.get("kernel") or ""),
        ("host", _host(manifest.get("host"))),
        ("impairment backend", _backend(manifest.get("impairment_backend"))),
        ("random seed", "" if manifest.get("random_seed") is None else str(manifest.get("random_seed"))),
        ("started", manifest.get("started_at") or ""),
        ("finished", manifest.get("finished_at") or ""),
        ("duration", _duration(manifest)),
        ("sweep points", str(len(manifest.get("points") or []))),
        ("repetitions", str(spec.get("repetitions", ""))),
    ]
    ctx = {
        "experiment": manifest.get("experiment", ""),
        "run_id": manifest.get("run_id", ""),
        "profile": manifest.get("profile") or "(none)",
        "description": spec.get("description") or "",
        "reproduces": seed.get("reproduces") or "",
        "seed_document": seed.get("document"),
        "valid": None if summary is None else bool(summary.get("valid")),
        "invalid_reasons": list((summary or {}).get("invalid_reasons") or []),
        "checks": (checks := _check_rows(summary or {}, sweep)),
        "check_groups": _check_groups(checks),
        "checks_passed": (summary or {}).get("checks_passed", 0),
        "checks_failed": (summary or {}).get("checks_failed", 0),
        "stats": _stat_rows(summary or {}, sweep),
        "tables": [
            {
                "name": t.spec.name,
                "title": t.spec.title,
                "headers": t.headers,
                "nrows": len(t.spec.rows),
                "classes": t.classes,
                "rows": t.cells(),
                "note": t.note,
                "seed_note": t.seed_note,
            }
            for t in tables
        ],
        "plots": [
            {"name": p.name, "title": p.title, "src": "data:image/png;base64," + base64.b64encode(png).decode()}
            for p, png in plots
        ],
        "what_ran": [(k, v) for k, v in what_ran if v],
        "tool_versions": _kv(manifest.get("tool_versions")),
        "images": _kv(manifest.get("images")),
        "env_static": _kv(environment.get("static")),
        "env_dynamic": _kv(environment.get("dynamic")),
        "guard": json.dumps((summary or {}).get("guard") or {}, indent=2, sort_keys=True, ensure_ascii=False),
        "points": [(p["id"], sweep.point_labels.get(p["id"], "")) for p in manifest.get("points") or []],
        "spec_yaml": _yaml(spec),
        "problems": list(problems),
    }
    return env.get_template(REPORT_TEMPLATE).render(**ctx)


# --------------------------------------------------------------------------------------------------


def _parse_items(model: type[Table] | type[Plot] | type[Knee], items: Any, what: str, problems: list[str]) -> list[Any]:
    out = []
    for i, item in enumerate(items or []):
        try:
            out.append(model.model_validate(item))
        except ValidationError as exc:
            problems.append(f"{what}[{i}]: invalid: {exc.errors()[0]['msg']}")
    return out


def render_all(run_dir: Path) -> list[Path]:
    """Write tables/<name>.csv and .md, plots/<name>.png and report.html; return the paths written.

    Reads only manifest.json, tidy.csv and summary.json. A table or plot that cannot be drawn (e.g. it
    names an axis the sweep lacks) is left out with a warning, logged and shown in the report.
    """
    run_dir = Path(run_dir)
    manifest = load_manifest(run_dir)
    spec = manifest.get("spec") or {}
    axes = list((spec.get("sweep") or {}).keys())
    problems: list[str] = []
    rows: list[dict[str, Any]] = []
    if (run_dir / TIDY).exists():
        rows = read_tidy(run_dir / TIDY, axes)
    else:
        problems.append(f"{TIDY} is missing: no measurements to show")
    summary: dict[str, Any] | None = None
    if (run_dir / SUMMARY).exists():
        summary = load_json(run_dir / SUMMARY)
    else:
        problems.append(f"{SUMMARY} is missing: validity and checks unknown")
    sweep = Sweep.from_manifest(manifest, rows)
    written: list[Path] = []

    tables: list[TableData] = []
    for t in _parse_items(Table, spec.get("tables"), "tables", problems):
        try:
            data = TableData.build(t, sweep, rows, load_for_run(run_dir, manifest, t))
        except ValueError as exc:
            problems.append(f"table {t.name}: {exc}")
            continue
        tables.append(data)
        for ext, text in (("csv", data.csv_text()), ("md", data.markdown_text())):
            path = run_dir / "tables" / f"{t.name}.{ext}"
            path.parent.mkdir(exist_ok=True)
            path.write_text(text, encoding="utf-8")
            written.append(path)

    for k in _parse_items(Knee, spec.get("knees"), "knees", problems):
        try:
            data = KneeData.build_knee(k, sweep, rows)
        except ValueError as exc:
            problems.append(f"knee {k.name}: {exc}")
            continue
        tables.append(data)
        for ext, text in (("csv", data.csv_text()), ("md", data.markdown_text())):
            path = run_dir / "tables" / f"{k.name}.{ext}"
            path.parent.mkdir(exist_ok=True)
            path.write_text(text, encoding="utf-8")
            written.append(path)

    plots: list[tuple[Plot, bytes]] = []
    for p in _parse_items(Plot, spec.get("plots"), "plots", problems):
        try:
            png = plot_png(p, sweep, rows)
        except ValueError as exc:
            problems.append(f"plot {p.name}: {exc}")
            continue
        plots.append((p, png))
        path = run_dir / "plots" / f"{p.name}.png"
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(png)
        written.append(path)
    try:
        timeline = fault_timeline_png(run_dir, sweep.point_labels)
    except (OSError, ValueError, KeyError) as exc:
        problems.append(f"fault timeline: {exc}")
        timeline = None
    if timeline is not None:
        png, caption = timeline
        plots.append((Plot(name="fault_timeline", title=caption, x="time", y=["latency_seconds"]), png))
        path = run_dir / "plots" / "fault_timeline.png"
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(png)
        written.append(path)

    for msg in problems:
        log.warning("%s: %s", run_dir, msg)
    html = report_html(manifest, summary, tables, plots, sweep, problems)
    path = run_dir / "report.html"
    path.write_text(html, encoding="utf-8")
    written.append(path)
    return written
