"""Results that combine sweep points (a spec's `derived:`), from the sweep and the tidy rows alone.

Each value is first the mean over a point's repetitions (empty cells skipped), then:

- sums: per point, the weighted sum of tidy columns;
- ratios: per combination of the other axes (sweep order), column[axis=numerator] / column[axis=denominator]
  (minus one with `minus_one`); a row without a value says why; each row carries its numerator point's sums;
- fits: y = c0 + c1 x by least squares (scipy.stats.linregress) over the points, or over a ratio's rows when x
  or y is a ratio; one fit per value of `group`; rows without x or y are left out and counted.

render.py writes them to derived.json and tables/derived-<name>.csv/.md (fits also derived-<name>-residuals.csv);
checks.py bounds them (`DerivedData.check_rows`); plots.py draws scatter plots from `DerivedData.records`.
"""

from __future__ import annotations

import csv
import io
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..model.report import Check, Derived, DerivedFit, DerivedRatio, DerivedSum
from ..stats import mean
from .display import MISSING, Display, axis_str, quantity_name, unit_family
from .store import SCHEMA_VERSION
from .sweep import Row, Sweep, where_note

TABLE_PREFIX = "derived-"


@dataclass
class Record:
    """A point (or a ratio's row, standing for its numerator point) with the axis values that identify it and
    the values asked of it by name (None: missing)."""

    point: str | None
    values: dict[str, str]
    fields: dict[str, float | None]


@dataclass
class RatioRow:
    values: dict[str, str]  # the other axes
    value: float | None
    numerator: tuple[str | None, float | None]  # point id, the column's mean there
    denominator: tuple[str | None, float | None]
    sums: dict[str, float | None]  # of the numerator point
    why: str | None = None


@dataclass
class Residual:
    point: str | None
    values: dict[str, str]
    x: float
    y: float
    fitted: float

    @property
    def residual(self) -> float:
        return self.y - self.fitted


@dataclass
class FitResult:
    """One group's line; c0 ... r2 None (and `why` said) when there is no line, the standard errors None below
    three points."""

    group: str | None
    n: int
    left_out: int
    c0: float | None = None
    c1: float | None = None
    c0_se: float | None = None
    c1_se: float | None = None
    r2: float | None = None
    c2: float | None = None  # the second regressor's slope (DerivedFit.x2)
    c2_se: float | None = None
    residuals: list[Residual] = field(default_factory=list)
    why: str | None = None

    @property
    def max_abs_residual(self) -> float | None:
        return max((abs(r.residual) for r in self.residuals), default=None) if self.c0 is not None else None

    def figure(self, name: str) -> float | None:
        return {"c0": self.c0, "c1": self.c1, "c2": self.c2, "r2": self.r2}[name]


def group_by_point(rows: Iterable[Row]) -> dict[str, list[Row]]:
    """Tidy rows grouped by their point id, in row order."""
    out: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        out[str(r["point"])].append(r)
    return dict(out)


def _finite(v: Any) -> float | None:
    return float(v) if v is not None and math.isfinite(float(v)) else None


def matches(where: Mapping[str, Any], values: Mapping[str, str]) -> bool:
    """Whether values have the `where` axis values (as strings, as checks.applies compares)."""
    return all(a in values and values[a] == axis_str(v) for a, v in where.items())


@dataclass
class DerivedData:
    """The derived results of one run: build() from the spec's `derived`, the sweep and the tidy rows."""

    spec: Derived
    sweep: Sweep
    by_point: dict[str, list[Row]]
    sums: dict[str, list[Record]] = field(default_factory=dict)
    ratios: dict[str, list[RatioRow]] = field(default_factory=dict)
    fits: dict[str, list[FitResult]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)  # fits that could not be formed
    _means: dict[tuple[str, str], float | None] = field(default_factory=dict, repr=False)

    @classmethod
    def build(cls, spec: Derived, sweep: Sweep, rows: Sequence[Row]) -> DerivedData:
        data = cls(spec, sweep, group_by_point(rows))
        for s in spec.sums:
            data.sums[s.name] = [Record(pid, vals, {s.name: data._sum(s, pid)}) for pid, vals in data.points()]
        for r in spec.ratios:
            data.ratios[r.name] = data._ratio(r)
        for f in spec.fits:
            try:
                data.fits[f.name] = data._fit(f)
            except ValueError as exc:
                data.problems.append(f"fit {f.name}: {exc}")
        return data

    # -- values of points -------------------------------------------------------------------------------
    def points(self) -> list[tuple[str, dict[str, str]]]:
        """Planned points (and any point the rows have that the plan does not) in sweep order."""
        pv = dict(self.sweep.point_values)
        for pid in self.by_point:
            if pid not in pv:
                pv[pid] = {a: axis_str(self.by_point[pid][0].get(a)) for a in self.sweep.axes}

        def order(item: tuple[str, dict[str, str]]) -> tuple[int, ...]:
            vals = item[1]
            return tuple(
                self.sweep.values[a].index(vals[a]) if vals.get(a) in self.sweep.values.get(a, []) else 1 << 30
                for a in self.sweep.axes
            )

        return sorted(pv.items(), key=order)

    def mean(self, pid: str, column: str) -> float | None:
        """The column's mean over the point's repetitions (None: not measured there)."""
        if (pid, column) not in self._means:
            self._means[pid, column] = mean(r.get(column) for r in self.by_point.get(pid, []))
        return self._means[pid, column]

    def _sum(self, s: DerivedSum, pid: str) -> float | None:
        parts = [self.mean(pid, c) for c in s.of]
        if any(p is None for p in parts):
            return None
        return math.fsum(w * p for w, p in zip(s.of.values(), parts, strict=True))  # type: ignore[operator]

    def value(self, pid: str, name: str) -> float | None:
        """A tidy column's mean or a sum's value at a point."""
        if self.spec.kind(name) == "sum":
            return self._sum(next(s for s in self.spec.sums if s.name == name), pid)
        return self.mean(pid, name)

    # -- ratios ---------------------------------------------------------------------------------------------
    def _ratio(self, r: DerivedRatio) -> list[RatioRow]:
        others = [a for a in self.sweep.axes if a != r.axis]
        num, den = axis_str(r.numerator), axis_str(r.denominator)
        at: dict[tuple[tuple[str, ...], str], str] = {}
        keys: dict[tuple[str, ...], None] = {}
        for pid, vals in self.points():
            key = tuple(vals.get(a, "") for a in others)
            keys.setdefault(key)
            at[key, vals.get(r.axis, "")] = pid
        out = []
        for key in keys:
            values = dict(zip(others, key, strict=True))
            npid, dpid = at.get((key, num)), at.get((key, den))
            nv, nwhy = self._ratio_part(npid, r, num)
            dv, dwhy = self._ratio_part(dpid, r, den)
            why = nwhy or dwhy
            if why is None and dv == 0:
                why = f"{r.column} is 0 at {dpid} ({r.axis}={den})"
            value = None if why is not None else nv / dv - (1.0 if r.minus_one else 0.0)  # type: ignore[operator]
            sums = {s.name: self.value(npid, s.name) if npid else None for s in self.spec.sums}
            out.append(RatioRow(values, _finite(value), (npid, nv), (dpid, dv), sums, why))
        return out

    def _ratio_part(self, pid: str | None, r: DerivedRatio, value: str) -> tuple[float | None, str | None]:
        if pid is None:
            return None, f"no point with {r.axis}={value}"
        if pid not in self.by_point:
            return None, f"{pid} ({r.axis}={value}) was not measured"
        v = self.value(pid, r.column)
        return v, None if v is not None else f"no {r.column} at {pid} ({r.axis}={value})"

    # -- rows of several values: fits, scatter plots, checks ---------------------------------------------------
    def records(self, names: Sequence[str]) -> list[Record]:
        """One record per point with these names' values; when one of them is a ratio, one per row of that
        ratio (other ratios over the same axis joined on the other axes' values, sums of the numerator point).
        ValueError when the names cannot share a row (Derived.ratio_axis)."""
        axis = self.spec.ratio_axis(names)
        if axis is None:
            return [Record(pid, vals, {n: self.value(pid, n) for n in names}) for pid, vals in self.points()]
        ratio_names = [n for n in names if self.spec.kind(n) == "ratio"]
        joined = {n: {tuple(row.values.items()): row for row in self.ratios[n]} for n in ratio_names}
        out = []
        for row in self.ratios[ratio_names[0]]:
            key = tuple(row.values.items())
            fields: dict[str, float | None] = {}
            for n in names:
                if n in joined:
                    other = joined[n].get(key)
                    fields[n] = other.value if other is not None else None
                else:
                    fields[n] = row.sums.get(n)
            out.append(Record(row.numerator[0], dict(row.values), fields))
        return out

    def _fit(self, f: DerivedFit) -> list[FitResult]:
        from scipy.stats import linregress

        if f.x2 is not None:
            return self._fit2(f)
        recs = [r for r in self.records([f.x, f.y]) if matches(f.where, r.values)]
        if not recs:
            raise ValueError(f"no point has {where_note(f.where)}" if f.where else "no points")
        if f.group is None:
            groups: list[str | None] = [None]
        else:
            present = {r.values.get(f.group) for r in recs}
            groups = [v for v in self.sweep.values.get(f.group, []) if v in present]
        out = []
        for g in groups:
            sub = [r for r in recs if g is None or r.values.get(f.group or "") == g]
            usable = [r for r in sub if r.fields[f.x] is not None and r.fields[f.y] is not None]
            res = FitResult(g, len(usable), len(sub) - len(usable))
            xs = [float(r.fields[f.x]) for r in usable]  # type: ignore[arg-type]
            ys = [float(r.fields[f.y]) for r in usable]  # type: ignore[arg-type]
            if len(usable) < 2:
                res.why = f"{len(usable)} point(s) with both {f.x} and {f.y}; a line needs 2"
            elif len(set(xs)) < 2:
                res.why = f"every point has {f.x} = {xs[0]:g}; a line needs two x values"
            else:
                lr = linregress(xs, ys)
                res.c0, res.c1 = float(lr.intercept), float(lr.slope)
                res.r2 = _finite(lr.rvalue**2)
                if len(usable) >= 3:
                    res.c0_se, res.c1_se = _finite(lr.intercept_stderr), _finite(lr.stderr)
                res.residuals = [Residual(r.point, r.values, x, y, res.c0 + res.c1 * x)
                                 for r, x, y in zip(usable, xs, ys, strict=True)]  # fmt: skip
            out.append(res)
        return out

    def _fit2(self, f: DerivedFit) -> list[FitResult]:
        """y = c0 + c1 x + c2 x2 by least squares (numpy), per group: r2 and, from 4 points on, the standard
        errors (residual variance times (X'X)^-1)."""
        import numpy as np

        x2 = f.x2 or ""
        recs = [r for r in self.records([f.x, f.y, x2]) if matches(f.where, r.values)]
        if not recs:
            raise ValueError(f"no point has {where_note(f.where)}" if f.where else "no points")
        present = {r.values.get(f.group) for r in recs} if f.group else {None}
        groups = [v for v in self.sweep.values.get(f.group, []) if v in present] if f.group else [None]
        out = []
        for g in groups:
            sub = [r for r in recs if g is None or r.values.get(f.group or "") == g]
            usable = [r for r in sub if all(r.fields[n] is not None for n in (f.x, x2, f.y))]
            res = FitResult(g, len(usable), len(sub) - len(usable))
            a = np.array([[1.0, float(r.fields[f.x]), float(r.fields[x2])] for r in usable]).reshape(-1, 3)  # type: ignore[arg-type]
            y = np.array([float(r.fields[f.y]) for r in usable])  # type: ignore[arg-type]
            if len(usable) < 3 or np.linalg.matrix_rank(a) < 3:
                res.why = (f"{len(usable)} point(s) with {f.x}, {x2} and {f.y}: a plane needs 3 whose x and x2 are "
                           "not proportional")  # fmt: skip
                out.append(res)
                continue
            coef, *_ = np.linalg.lstsq(a, y, rcond=None)
            fitted = a @ coef
            ss_res, ss_tot = float(((y - fitted) ** 2).sum()), float(((y - y.mean()) ** 2).sum())
            res.c0, res.c1, res.c2 = (float(c) for c in coef)
            res.r2 = _finite(1 - ss_res / ss_tot) if ss_tot > 0 else None
            if len(usable) > 3:
                se = np.sqrt(np.diag(ss_res / (len(usable) - 3) * np.linalg.inv(a.T @ a)))
                res.c0_se, res.c1_se, res.c2_se = (_finite(float(s)) for s in se)
            res.residuals = [Residual(r.point, r.values, float(row[1]), float(v), float(fv))
                             for r, row, v, fv in zip(usable, a, y, fitted, strict=True)]  # fmt: skip
            out.append(res)
        return out

    def check_rows(self, c: Check) -> list[tuple[str | None, dict[str, str], float | None, str | None]]:
        """What a derived check bounds: (point, axis values, value, why it is missing) per row of the sum or
        ratio, per group of the fit (its values: the fit's `where` and its group), those that match its
        `where`."""
        name = c.derived or ""
        kind = self.spec.kind(name)
        rows: list[tuple[str | None, dict[str, str], float | None, str | None]]
        if kind == "sum":
            rows = [(r.point, r.values, r.fields[name], None if r.fields[name] is not None else "not measured")
                    for r in self.sums[name]]  # fmt: skip
        elif kind == "ratio":
            rows = [(r.numerator[0], r.values, r.value, r.why) for r in self.ratios[name]]
        elif kind == "fit":
            f = self.spec.fit(name)
            fixed = {a: axis_str(v) for a, v in f.where.items()}
            rows = [(None, {**fixed, **({f.group: g.group} if f.group and g.group is not None else {})},
                     g.figure(c.field or "r2"), g.why) for g in self.fits.get(name, [])]  # fmt: skip
        else:
            raise ValueError(f"{name!r} is not a derived sum, ratio or fit")
        return [r for r in rows if matches(c.where, r[1])]

    def unit_column(self, c: Check) -> str | None:
        """The column whose unit a derived check's value is in (a fit's c0: y's; c1 too when x has no unit)."""
        if self.spec.kind(c.derived or "") != "fit" or c.field == "r2":
            return None
        f = self.spec.fit(c.derived or "")
        if c.field == "c1" and unit_family(f.x) is not None:
            return None
        return f.y if unit_family(f.y) is not None else None

    # -- output ---------------------------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        """derived.json: every row of every sum and ratio, every fit with its residuals (base units)."""
        return {
            "schema_version": SCHEMA_VERSION,
            "sums": {
                s.name: {
                    "of": dict(s.of),
                    "rows": [
                        {"point": r.point, "values": r.values, "value": r.fields[s.name]} for r in self.sums[s.name]
                    ],
                }
                for s in self.spec.sums
            },
            "ratios": {
                r.name: {
                    "column": r.column,
                    "axis": r.axis,
                    "numerator": axis_str(r.numerator),
                    "denominator": axis_str(r.denominator),
                    "minus_one": r.minus_one,
                    "rows": [
                        {
                            "values": row.values,
                            "value": row.value,
                            "numerator": {"point": row.numerator[0], "value": row.numerator[1]},
                            "denominator": {"point": row.denominator[0], "value": row.denominator[1]},
                            "sums": row.sums,
                            "why": row.why,
                        }
                        for row in self.ratios[r.name]
                    ],
                }
                for r in self.spec.ratios
            },
            "fits": {
                f.name: {
                    "x": f.x,
                    "y": f.y,
                    "group": f.group,
                    "where": {a: axis_str(v) for a, v in f.where.items()},
                    "groups": [
                        {
                            "group": g.group,
                            "n": g.n,
                            "left_out": g.left_out,
                            "c0": g.c0,
                            "c0_se": g.c0_se,
                            "c1": g.c1,
                            "c1_se": g.c1_se,
                            **({"x2": f.x2, "c2": g.c2, "c2_se": g.c2_se} if f.x2 else {}),
                            "r2": g.r2,
                            "max_abs_residual": g.max_abs_residual,
                            "why": g.why,
                            "residuals": [
                                {
                                    "point": e.point,
                                    "values": e.values,
                                    "x": e.x,
                                    "y": e.y,
                                    "fitted": e.fitted,
                                    "residual": e.residual,
                                }
                                for e in g.residuals
                            ],
                        }
                        for g in self.fits[f.name]
                    ],
                }
                for f in self.spec.fits
                if f.name in self.fits
            },
        }

    def tables(self) -> list[DerivedTable]:
        out = [_sum_table(self, s) for s in self.spec.sums]
        out += [_ratio_table(self, r) for r in self.spec.ratios]
        out += [_fit_table(self, f) for f in self.spec.fits if f.name in self.fits]
        return out


@dataclass
class DerivedTable:
    """A derived result as files (tables/derived-<name>.csv and .md, a fit's -residuals.csv) and for the report:
    `lines` (a fit's coefficients per group) above a table of `headers` and `cells`, and a note."""

    name: str
    title: str
    headers: list[str]
    classes: list[str]  # per header: '' for axis values and text, 'num' for numbers
    cells: list[list[str]]
    note: str
    csv: dict[str, str]  # file name (in tables/) -> text
    lines: list[str] = field(default_factory=list)
    kind: str = "ratio"  # sum, ratio or fit

    @property
    def stem(self) -> str:
        return f"{TABLE_PREFIX}{self.name}"

    def markdown_text(self) -> str:
        def esc(s: str) -> str:
            return s.replace("|", "\\|").replace("\n", " ")

        out = [f"# {esc(self.title)}", ""]
        if self.lines:
            out += [f"- {esc(line)}" for line in self.lines] + [""]
        if self.cells:
            out.append("| " + " | ".join(esc(h) for h in self.headers) + " |")
            out.append("|" + "|".join("---:" if c == "num" else "---" for c in self.classes) + "|")
            out += ["| " + " | ".join(esc(c) for c in row) + " |" for row in self.cells]
            out.append("")
        return "\n".join([*out, self.note, ""])


def _csv(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    for row in rows:
        w.writerow(["" if v is None else repr(float(v)) if isinstance(v, float) else str(v) for v in row])
    return buf.getvalue()


def _g(v: float | None, scale: float = 1.0) -> str:
    """4 significant digits (display units), MISSING for None."""
    return MISSING if v is None else f"{v * scale:.4g}"


def _sum_table(data: DerivedData, s: DerivedSum) -> DerivedTable:
    axes = data.sweep.axes
    rows = data.sums[s.name]
    formula = " + ".join(f"{w:g} × {c}" for c, w in s.of.items())
    disp = Display.for_column(s.name, [r.fields[s.name] for r in rows])
    cells = [[r.values.get(a, "") for a in axes] + [disp.number(r.fields[s.name])] for r in rows]
    return DerivedTable(
        s.name,
        f"{s.name} = {formula}",
        [*axes, s.name + (f" ({disp.unit})" if disp.unit else "")],
        [""] * len(axes) + ["num"],
        cells,
        f"Per point, each column first the mean over the point's repetitions; {MISSING} = a column not measured.",
        {
            f"{TABLE_PREFIX}{s.name}.csv": _csv(
                ["point", *axes, s.name],
                [[r.point, *(r.values.get(a, "") for a in axes), r.fields[s.name]] for r in rows],
            )
        },
        kind="sum",
    )


def _ratio_table(data: DerivedData, r: DerivedRatio) -> DerivedTable:
    rows = data.ratios[r.name]
    others = [a for a in data.sweep.axes if a != r.axis]
    num, den = axis_str(r.numerator), axis_str(r.denominator)
    disp = Display.for_column(r.column, [v for row in rows for v in (row.numerator[1], row.denominator[1])])
    unit = f" ({disp.unit})" if disp.unit else ""
    sums = [s.name for s in data.spec.sums]
    sdisp = {s: Display.for_column(s, [row.sums.get(s) for row in rows]) for s in sums}
    why = any(row.why for row in rows)
    headers = [*others, f"{r.column} at {r.axis}={num}{unit}", f"at {r.axis}={den}{unit}", r.name,
               *(s + (f" ({sdisp[s].unit})" if sdisp[s].unit else "") for s in sums)]  # fmt: skip
    cells = [
        [*(row.values.get(a, "") for a in others), disp.number(row.numerator[1]), disp.number(row.denominator[1]),
         _g(row.value), *(sdisp[s].number(row.sums.get(s)) for s in sums)] + ([row.why or ""] if why else [])
        for row in rows
    ]  # fmt: skip
    formula = f"{r.column}[{r.axis}={num}] / {r.column}[{r.axis}={den}]" + (" - 1" if r.minus_one else "")
    note = (
        f"{r.name} = {formula}, per combination of {', '.join(others) or 'no other axis'}; each the mean over the "
        f"point's repetitions" + (f"; {', '.join(sums)}: of the {r.axis}={num} point" if sums else "")
        + (f"; {MISSING} = no value (why in the last column)." if why else ".")
    )  # fmt: skip
    csv_rows = [[*(row.values.get(a, "") for a in others), row.numerator[0], row.numerator[1], row.denominator[0],
                 row.denominator[1], row.value, *(row.sums.get(s) for s in sums), row.why] for row in rows]  # fmt: skip
    header = [*others, "numerator_point", "numerator_value", "denominator_point", "denominator_value", r.name,
              *sums, "why"]  # fmt: skip
    return DerivedTable(
        r.name,
        f"{r.name} = {formula}",
        headers + (["why not"] if why else []),
        [""] * len(others) + ["num"] * (3 + len(sums)) + ([""] if why else []),
        cells,
        note,
        {f"{TABLE_PREFIX}{r.name}.csv": _csv(header, csv_rows)},
    )


def fit_line(f: DerivedFit, g: FitResult, xdisp: Display, ydisp: Display) -> str:
    """'syntax = ber: c0 = 1.234 ms (± 0.01), c1 = 0.05 ms per x (± 0.002), r² = 0.987, n = 10, max |residual| =
    0.02 ms' in display units; or why there is no line."""
    head = f"{f.group} = {g.group}: " if f.group else ""
    left = f", {g.left_out} left out (no {f.x} or {f.y})" if g.left_out else ""
    if g.c0 is None or g.c1 is None:
        return f"{head}no line: {g.why}{left}"
    yu = f" {ydisp.unit}" if ydisp.unit else ""
    per = f"{ydisp.unit or ''} per {xdisp.unit or quantity_name(f.x)}".strip()
    c1_scale = ydisp.scale / xdisp.scale

    def se(v: float | None, scale: float) -> str:
        return f" (± {v * scale:.2g})" if v is not None else ""

    r2 = MISSING if g.r2 is None else f"{g.r2:.4f}"
    c2 = ""
    if f.x2 and g.c2 is not None:
        x2disp = Display.for_column(f.x2, [])
        per2 = f"{ydisp.unit or ''} per {x2disp.unit or quantity_name(f.x2)}".strip()
        c2 = f", c2 = {_g(g.c2, ydisp.scale / x2disp.scale)} {per2}{se(g.c2_se, ydisp.scale / x2disp.scale)}"
    return (f"{head}c0 = {_g(g.c0, ydisp.scale)}{yu}{se(g.c0_se, ydisp.scale)}, c1 = {_g(g.c1, c1_scale)} {per}"
            f"{se(g.c1_se, c1_scale)}{c2}, r² = {r2}, n = {g.n}, max |residual| = {_g(g.max_abs_residual, ydisp.scale)}"
            f"{yu}{left}")  # fmt: skip


def fit_displays(data: DerivedData, f: DerivedFit) -> tuple[Display, Display]:
    res = [e for g in data.fits.get(f.name, []) for e in g.residuals]
    return Display.for_column(f.x, [e.x for e in res]), Display.for_column(f.y, [e.y for e in res])


def _fit_table(data: DerivedData, f: DerivedFit) -> DerivedTable:
    groups = data.fits[f.name]
    xdisp, ydisp = fit_displays(data, f)
    axes = [a for a in data.sweep.axes if a != data.spec.ratio_axis([f.x, f.y])]
    xu, yu = (f" ({d.unit})" if d.unit else "" for d in (xdisp, ydisp))
    cells = [[*(e.values.get(a, "") for a in axes), _g(e.x, xdisp.scale), _g(e.y, ydisp.scale),
              _g(e.fitted, ydisp.scale), _g(e.residual, ydisp.scale)] for g in groups for e in g.residuals]  # fmt: skip
    group = [f.group] if f.group else []
    two = ["c2", "c2_se"] if f.x2 else []
    coef = _csv([*group, "n", "left_out", "c0", "c0_se", "c1", "c1_se", *two, "r2", "max_abs_residual", "why"],
                [[*([g.group] if f.group else []), g.n, g.left_out, g.c0, g.c0_se, g.c1, g.c1_se,
                  *([g.c2, g.c2_se] if f.x2 else []), g.r2, g.max_abs_residual, g.why] for g in groups])  # fmt: skip
    resid = _csv(["point", *axes, f.x, f.y, "fitted", "residual"],
                 [[e.point, *(e.values.get(a, "") for a in axes), e.x, e.y, e.fitted, e.residual]
                  for g in groups for e in g.residuals])  # fmt: skip
    left = sum(g.left_out for g in groups)
    note = (
        (
            f"Least squares {f.y} = c0 + c1 × {f.x} + c2 × {f.x2} (numpy.linalg.lstsq)"
            if f.x2
            else f"Least squares {f.y} = c0 + c1 × {f.x} (scipy.stats.linregress)"
        )
        + (f", one line per {f.group}" if f.group else "")
        + (f", only the points with {where_note(f.where)}" if f.where else "")
        + "; each value the mean over a point's repetitions; ± = standard error (3 points or more)"
        + (f"; {left} point(s) left out for want of x or y" if left else "")
        + "."
    )
    return DerivedTable(
        f.name,
        f"{f.name}: {f.y} against {f.x}",
        [*axes, f"{f.x}{xu}", f"{f.y}{yu}", f"fitted{yu}", f"residual{yu}"],
        [""] * len(axes) + ["num"] * 4,
        cells,
        note,
        {f"{TABLE_PREFIX}{f.name}.csv": coef, f"{TABLE_PREFIX}{f.name}-residuals.csv": resid},
        [fit_line(f, g, xdisp, ydisp) for g in groups],
        "fit",
    )
