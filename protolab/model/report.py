"""Report definitions: the tables, knees, plots, checks and derived results a spec asks for, as data.

They are part of a spec (protolab.spec validates them with the rest) and are kept in every results folder's
manifest, from which protolab.results re-renders a run without the spec's topologies, labs or workloads.
A table's `reference` names a CSV inside seed-tables/ (SEED_TABLES) beside the spec, or in experiments/.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any, Literal, Protocol

from pydantic import Field, model_validator

from ..units import Quantity, Seconds
from .base import COLUMN_RE, NAME_RE, Strict

EXPERIMENTS_DIR = Path(__file__).resolve().parents[2] / "experiments"
SEED_TABLES = "seed-tables"  # a table reference's folder, relative to the spec's folder (experiments/)


class CheckNoise(Strict):
    """The measured noise of a check's mean, which widens its bound: per repetition, the standard deviation of
    the samples behind `column` (`spread`) and how many there were (`samples`), and the same of `baseline`'s
    when the check has one. The bound's half-width grows by `k` x the standard error of the bounded value (the
    mean over repetitions, less the baseline's): sqrt(sum(sd^2/n) / R^2) of the column plus the baseline's."""

    spread: str = Field(..., pattern=COLUMN_RE, description="column: each repetition's standard deviation of samples")
    samples: str = Field(..., pattern=COLUMN_RE, description="column: how many samples that deviation is of")
    baseline_spread: str | None = Field(None, pattern=COLUMN_RE, description="the same of the baseline column")
    baseline_samples: str | None = Field(None, pattern=COLUMN_RE)
    k: float = Field(3.0, gt=0, le=10, description="how many standard errors the bound widens by")

    @model_validator(mode="after")
    def _pairs(self) -> CheckNoise:
        if (self.baseline_spread is None) != (self.baseline_samples is None):
            raise ValueError("baseline_spread and baseline_samples go together")
        return self


class Check(Strict):
    """A bound on a tidy column, per sweep point, on the mean over repetitions; or, with `trials`, a
    binomial check: `column` counts events (lost packets) out of `trials` (packets sent), pooled over the
    repetitions, and the check passes when `target` lies inside the exact (Clopper-Pearson) interval; or, with
    `derived`, a bound on every row of a derived sum or ratio, or (with `field`) on a derived fit's c0, c1 or r2
    in each of its groups: one entry in the summary, recording the worst row."""

    name: str
    column: str | None = Field(None, pattern=COLUMN_RE, max_length=128, description="the tidy column (or give derived)")
    derived: str | None = Field(
        None, pattern=COLUMN_RE, description="a derived sum, ratio or fit (see Derived): every row within the bounds"
    )
    field: Literal["c0", "c1", "c2", "r2"] | None = Field(
        None, description="derived fit: the intercept c0, the slope c1 (c2: of x2) or r2, in every group of the fit"
    )
    where: dict[str, Any] = Field(
        default_factory=dict, description="only points (derived: rows or fit groups) whose axes have these values"
    )
    target: Quantity | None = Field(None, description="expected value (number, or rate/duration/percent string)")
    tolerance_percent: float | None = Field(None, gt=0)
    tolerance_absolute: Quantity | None = Field(
        None, ge=0, description="floor of the tolerance in the column's unit: max(tolerance_percent, this)"
    )
    min: Quantity | None = None
    max: Quantity | None = None
    baseline: str | None = Field(
        None,
        pattern=COLUMN_RE,
        description="bound column - baseline (each the mean over the point's repetitions), e.g. a path's RTT less "
        "the RTT of a like path without the impairment, so the bound is on what the impairment added",
    )
    trials: str | None = Field(None, pattern=COLUMN_RE, description="binomial check: the column of trials")
    confidence: float | None = Field(None, gt=0, lt=1, description="binomial check: e.g. 0.99")
    noise: CheckNoise | None = Field(
        None,
        description="widen the bound by the measured noise of the mean (e.g. an RTT's: its deviation and echo "
        "count), so a check is as tight as the measurement allows and no tighter",
    )
    reproduction: bool = Field(
        False,
        description="a check of the seed's conclusion rather than of the platform: its failure is a finding, "
        "reported apart (summary reproduction_failed, FINDING in the output), never a failed check",
    )

    @model_validator(mode="after")
    def _one_form(self) -> Check:
        if (self.column is None) == (self.derived is None):
            raise ValueError("a check bounds a tidy `column` or a `derived` result: give one of them")
        if self.field is not None and self.derived is None:
            raise ValueError("field names a figure of a derived fit: give derived")
        if self.derived is not None and (self.trials is not None or self.confidence is not None):
            raise ValueError("a binomial check counts a tidy column: no derived")
        if self.baseline is not None and (self.derived is not None or self.trials is not None):
            raise ValueError("baseline is subtracted from a tidy column's mean: not with derived or trials")
        if self.noise is not None:
            if self.derived is not None or self.trials is not None:
                raise ValueError("noise widens a bound on a tidy column's mean: not with derived or trials")
            if (self.baseline is None) != (self.noise.baseline_spread is None):
                raise ValueError("with a baseline, noise needs baseline_spread and baseline_samples (and only then)")
        if self.trials is not None or self.confidence is not None:
            if self.trials is None or self.confidence is None or self.target is None:
                raise ValueError("a binomial check needs trials, confidence and target")
            if self.tolerance_percent is not None or self.min is not None or self.max is not None:
                raise ValueError("a binomial check's bound is its confidence interval: no tolerance, min or max")
            return self
        if (self.target is None) != (self.tolerance_percent is None):
            raise ValueError("target and tolerance_percent go together")
        if self.tolerance_absolute is not None and self.tolerance_percent is None:
            raise ValueError("tolerance_absolute is a floor under tolerance_percent: give both")
        if self.target is None and self.min is None and self.max is None:
            raise ValueError("a check needs target + tolerance_percent, or min and/or max")
        return self

    def bounds(self, widen: float = 0.0) -> tuple[float | None, float | None]:
        """(min, max); `widen` (the measured noise's share, >= 0) moves each bound outwards by that much."""
        lo = None if self.min is None else self.min - widen
        hi = None if self.max is None else self.max + widen
        if self.target is not None and self.tolerance_percent is not None:
            d = max(abs(self.target) * self.tolerance_percent / 100, self.tolerance_absolute or 0.0) + widen
            lo = self.target - d if lo is None else max(lo, self.target - d)
            hi = self.target + d if hi is None else min(hi, self.target + d)
        return lo, hi


class TableReference(Strict):
    """The seed's own numbers for a table, shown beside the measured ones (experiments/seed-tables/README.md)."""

    file: str = Field(
        ...,
        pattern=r"^[A-Za-z0-9_./-]+\.csv$",
        description=f"CSV in {SEED_TABLES}/, relative to the spec's folder, e.g. '{SEED_TABLES}/thesis-table-4-1.csv'",
    )
    citation: str = Field(..., description="where the numbers come from, e.g. 'Thesis (seed 003), Table 4-1'")


class Table(Strict):
    name: str = Field(..., pattern=NAME_RE)
    title: str
    rows: list[str] = Field(..., min_length=1, description="axis names that index the rows")
    columns: list[str] = Field(..., min_length=1, description="tidy columns to show (mean over repetitions)")
    where: dict[str, Any] = Field(
        default_factory=dict, description="only points whose axes have these values (e.g. one topology's rows)"
    )
    reference: TableReference | None = Field(None, description="the seed's table, shown beside this one")

    @model_validator(mode="after")
    def _reference_inside_seed_tables(self) -> Table:
        if self.reference is not None and (why := reference_problem(self.reference.file)):
            raise ValueError(f"table {self.name}: reference.file {self.reference.file!r}: {why}")
        return self


def reference_problem(file: str) -> str | None:
    """Why a table reference's file is not a plain relative path inside seed-tables/ (None if it is)."""
    parts = file.split("/")
    if file.startswith("/"):
        return f"an absolute path; give a path relative to the spec's folder, like '{SEED_TABLES}/<name>.csv'"
    if ".." in parts:
        return f"'..' is not allowed; seed tables live in {SEED_TABLES}/ (like '{SEED_TABLES}/<name>.csv')"
    if len(parts) < 2 or parts[0] != SEED_TABLES or not all(parts[1:]):
        return f"not a file in {SEED_TABLES}/; give it like '{SEED_TABLES}/<name>.csv'"
    return None


def resolve_reference(spec_dir: Path, file: str) -> Path:
    """The reference's path under `spec_dir`; ValueError if it is not a plain path or resolves (through a
    symbolic link) outside spec_dir/seed-tables/."""
    if why := reference_problem(file):
        raise ValueError(f"reference {file!r}: {why}")
    folder = (Path(spec_dir) / SEED_TABLES).resolve()
    path = (Path(spec_dir) / PurePosixPath(file)).resolve()
    if not path.is_relative_to(folder):
        raise ValueError(f"reference {file!r} resolves to {path}, outside {folder}")
    return path


class Knee(Strict):
    """Where delivery stops keeping up with the offered load along one sweep axis (the thesis's throughput
    collapse): per combination of `rows`, the highest `x` up to which every point delivered at least
    `min_ratio` of what was offered, the first `x` that did not, and the peak delivered rate."""

    name: str = Field(..., pattern=NAME_RE)
    title: str
    rows: list[str] = Field(default_factory=list, description="axis names that index the rows (others pooled)")
    x: str = Field(..., description="the sweep axis of the offered load, e.g. rate")
    delivered: str = Field(..., description="tidy column of what arrived, e.g. rx_packets_per_second")
    offered: str | None = Field(None, description="tidy column of what was offered (default: the x axis's value)")
    min_ratio: float = Field(0.95, gt=0, le=1, description="delivered / offered still counted as keeping up")


class Plot(Strict):
    """bar and line: tidy columns against a sweep axis. From the raw series of the tasks (raw/series.csv):
    `ccdf`, the distribution of every sample a histogram series counted (y names it: `rr_rtt_seconds` reads
    the buckets `rr_rtt_seconds_bucket`), a panel per value of `x`, one curve per `group` value, log-log; and
    `series`, each sample of a raw series against its number (SCIOP's Fig. 8: the maximum of each block of
    round trips), a panel per value of `x`, one colour per `group` value. `scatter`: one y against one x, each a
    tidy column, derived sum or derived ratio (a dot per point, or per ratio row), bubbles sized by `size`,
    labelled with an axis's value, coloured by `group`, with a derived fit's line(s)."""

    name: str = Field(..., pattern=NAME_RE)
    title: str
    kind: Literal["bar", "line", "ccdf", "series", "scatter"] = "bar"
    x: str = Field(
        ...,
        description="axis name on the x axis (ccdf and series: one panel per value; scatter: a tidy column, "
        "derived sum or derived ratio)",
    )
    y: list[str] = Field(
        ...,
        min_length=1,
        description="tidy columns (ccdf and series: raw series names; scatter: one column, derived sum or ratio)",
    )
    group: str | None = Field(None, description="axis name: one series (or panel) per value")
    where: dict[str, Any] = Field(default_factory=dict, description="only points whose axes have these values")
    ylabel: str = ""
    reference: str | None = Field(None, description="an axis or column drawn as the configured/expected value")
    marks: dict[str, Seconds] = Field(
        default_factory=dict, description="ccdf and series: labelled lines at these times, e.g. {goal: 50ms}"
    )
    size: str | None = Field(
        None, pattern=COLUMN_RE, description="scatter: a tidy column, derived sum or ratio drawn as the bubbles' area"
    )
    label: str | None = Field(None, description="scatter: the axis whose value is written beside each dot")
    fit: str | None = Field(None, description="scatter: a derived fit drawn as its line(s), its equation in the legend")

    @model_validator(mode="after")
    def _raw_kinds(self) -> Plot:
        if self.marks and self.kind in ("bar", "line", "scatter"):
            raise ValueError(f"plot {self.name}: marks are drawn on ccdf and series plots, not on {self.kind}")
        if self.reference and self.kind in ("ccdf", "series", "scatter"):
            raise ValueError(f"plot {self.name}: a {self.kind} plot has no reference; use marks")
        if self.kind == "scatter":
            if len(self.y) != 1:
                raise ValueError(f"plot {self.name}: a scatter plot has one y ({len(self.y)} given)")
        elif self.size or self.label or self.fit:
            raise ValueError(f"plot {self.name}: size, label and fit are for scatter plots, not {self.kind}")
        return self


class DerivedSum(Strict):
    """A column per sweep point: the weighted sum of tidy columns, each first the mean over the point's
    repetitions (e.g. complexity = 1 x integers + 4 x reals)."""

    name: str = Field(..., pattern=COLUMN_RE)
    of: dict[str, float] = Field(..., min_length=1, description="tidy column -> its weight")

    @model_validator(mode="after")
    def _columns(self) -> DerivedSum:
        bad = [c for c in self.of if not re.match(COLUMN_RE, c)]
        if bad:
            raise ValueError(f"sum {self.name}: {bad} are not column names ({COLUMN_RE})")
        return self


class DerivedRatio(Strict):
    """column[axis = numerator] / column[axis = denominator], per combination of the other axes' values (a row
    each, carrying the derived sums of its numerator point); minus one with `minus_one`, e.g. the relative
    cost (ber - raw) / raw."""

    name: str = Field(..., pattern=COLUMN_RE)
    column: str = Field(..., pattern=COLUMN_RE, description="a tidy column or derived sum (mean over repetitions)")
    axis: str = Field(..., pattern=COLUMN_RE, description="the sweep axis whose two values are compared")
    numerator: Any = Field(..., description="the axis value on top, e.g. ber")
    denominator: Any = Field(..., description="the axis value below, e.g. raw")
    minus_one: bool = Field(False, description="numerator / denominator - 1")


class DerivedFit(Strict):
    """Least squares y = c0 + c1 x over the sweep points (over a ratio's rows when x or y is a ratio): c0, c1,
    their standard errors, r2, n and every residual; one fit per value of `group`. A point without x or y is
    left out (counted)."""

    name: str = Field(..., pattern=COLUMN_RE)
    x: str = Field(..., pattern=COLUMN_RE, description="a tidy column, derived sum or derived ratio")
    y: str = Field(..., pattern=COLUMN_RE, description="a tidy column, derived sum or derived ratio")
    x2: str | None = Field(
        None,
        pattern=COLUMN_RE,
        description="a second regressor: y = c0 + c1 x + c2 x2 by least squares (e.g. CPU against packets and "
        "messages); a tidy column or derived sum",
    )
    group: str | None = Field(None, description="axis name: one fit per value")
    where: dict[str, Any] = Field(default_factory=dict, description="only points whose axes have these values")


class Derived(Strict):
    """Results that combine sweep points, computed from tidy.csv into derived.json and tables/derived-*: `sums`
    (a column per point), `ratios` (a row per combination of the other axes) and `fits` (lines across points).
    Their names are shared: a ratio may divide a sum, a fit or a scatter plot may take a sum or a ratio as x or
    y, and a check may bound any of them (`derived:`)."""

    sums: list[DerivedSum] = Field(default_factory=list)
    ratios: list[DerivedRatio] = Field(default_factory=list)
    fits: list[DerivedFit] = Field(default_factory=list)

    @model_validator(mode="after")
    def _names(self) -> Derived:
        names = [d.name for d in (*self.sums, *self.ratios, *self.fits)]
        if dup := sorted({n for n in names if names.count(n) > 1}):
            raise ValueError(f"derived names repeat: {dup}")
        for s in self.sums:
            if used := sorted(set(s.of) & set(names)):
                raise ValueError(f"sum {s.name}: {used} are derived; a sum adds tidy columns")
        for r in self.ratios:
            if self.kind(r.column) in ("ratio", "fit"):
                raise ValueError(f"ratio {r.name}: column {r.column!r} is a derived {self.kind(r.column)}; "
                                 "a ratio divides a tidy column or a sum")  # fmt: skip
            if _axis_text(r.numerator) == _axis_text(r.denominator):
                raise ValueError(f"ratio {r.name}: numerator and denominator are both {_axis_text(r.numerator)!r}")
        for f in self.fits:
            if f.x == f.y:
                raise ValueError(f"fit {f.name}: x and y are both {f.x!r}")
            if f.x2 is not None and f.x2 in (f.x, f.y):
                raise ValueError(f"fit {f.name}: x2 {f.x2!r} is also its x or y")
            if f.x2 is not None and self.kind(f.x2) == "ratio":
                raise ValueError(f"fit {f.name}: x2 {f.x2!r} is a derived ratio; x2 takes a tidy column or a sum")
            try:
                self.ratio_axis([f.x, f.y, *([f.x2] if f.x2 else [])])
            except ValueError as exc:
                raise ValueError(f"fit {f.name}: {exc}") from None
        return self

    def kind(self, name: str) -> Literal["sum", "ratio", "fit"] | None:
        """What a derived name is; None for anything else (a tidy column)."""
        for kind, items in (("sum", self.sums), ("ratio", self.ratios), ("fit", self.fits)):
            if any(d.name == name for d in items):
                return kind  # type: ignore[return-value]
        return None

    def ratio(self, name: str) -> DerivedRatio:
        return next(r for r in self.ratios if r.name == name)

    def fit(self, name: str) -> DerivedFit:
        return next(f for f in self.fits if f.name == name)

    def ratio_axis(self, names: Iterable[str]) -> str | None:
        """The axis of the ratios among `names` (values taken together come from those ratios' rows), None
        when none is a ratio. ValueError when they cannot come from one row: ratios over different axes, a
        fit, or a tidy column beside a ratio (a ratio's row carries ratios over its axis and the sums of its
        numerator point)."""
        names = list(names)
        if fits := [n for n in names if self.kind(n) == "fit"]:
            raise ValueError(f"{fits[0]!r} is a fit, not a value of a point or row")
        axes = list(dict.fromkeys(self.ratio(n).axis for n in names if self.kind(n) == "ratio"))
        if not axes:
            return None
        if len(axes) > 1:
            raise ValueError(f"ratios over different axes ({', '.join(axes)}) have no rows in common")
        if tidy := [n for n in names if self.kind(n) is None]:
            raise ValueError(f"{tidy[0]!r} is a tidy column, which a ratio's row does not carry (only ratios "
                             f"over {axes[0]} and the sums of the numerator point)")  # fmt: skip
        return axes[0]

    def columns_used(self, plots: Sequence[Plot] = ()) -> set[str]:
        """The tidy columns these derived results and the scatter plots read."""
        names = [c for s in self.sums for c in s.of] + [r.column for r in self.ratios]
        names += [n for f in self.fits for n in (f.x, f.y)]
        names += [n for p in plots if p.kind == "scatter" for n in (p.x, *p.y, p.size) if n]
        return {n for n in names if self.kind(n) is None}

    def problems(
        self, sweep: Mapping[str, Sequence[Any]], checks: Sequence[Check] = (), plots: Sequence[Plot] = ()
    ) -> list[str]:
        """What does not fit the sweep (axes and their values), and checks and scatter plots naming derived
        results that do not exist or cannot be read as they ask; [] when all is well."""
        out: list[str] = []

        def axes(what: str, names: Iterable[str | None], ratio_axis: str | None) -> None:
            for a in names:
                if a is None:
                    continue
                if a not in sweep:
                    out.append(f"{what}: {a!r} is not a sweep axis (axes: {list(sweep)})")
                elif a == ratio_axis:
                    out.append(f"{what}: its rows are ratios over {a}, which have no {a}")

        for r in self.ratios:
            if r.axis not in sweep:
                out.append(f"ratio {r.name}: {r.axis!r} is not a sweep axis (axes: {list(sweep)})")
                continue
            values = [_axis_text(v) for v in sweep[r.axis]]
            for role in ("numerator", "denominator"):
                if _axis_text(getattr(r, role)) not in values:
                    out.append(f"ratio {r.name}: {role} {_axis_text(getattr(r, role))!r} is not a value of "
                               f"{r.axis} ({', '.join(values)})")  # fmt: skip
        for f in self.fits:
            axes(f"fit {f.name}", [f.group, *f.where], self.ratio_axis([f.x, f.y]))
        for c in checks:
            if c.derived is None:
                continue
            what, kind = f"check {c.name!r}", self.kind(c.derived)
            if kind is None:
                out.append(f"{what}: {c.derived!r} is not a derived sum, ratio or fit")
            elif kind == "fit" and c.field is None:
                out.append(f"{what}: fit {c.derived} needs a field (c0, c1 or r2)")
            elif kind != "fit" and c.field is not None:
                out.append(f"{what}: field is for fits; {c.derived} is a {kind}")
            elif kind == "fit":
                f = self.fit(c.derived)
                if bad := [a for a in c.where if a not in (f.group, *f.where)]:
                    out.append(f"{what}: fit {f.name}'s groups have only {[f.group, *f.where]}, not {bad}")
            else:
                axes(what, c.where, self.ratio(c.derived).axis if kind == "ratio" else None)
        for p in plots:
            if p.kind != "scatter":
                continue
            what = f"plot {p.name}"
            try:
                ratio_axis = self.ratio_axis([p.x, *p.y, *([p.size] if p.size else [])])
            except ValueError as exc:
                out.append(f"{what}: {exc}")
                continue
            axes(what, [p.group, p.label, *p.where], ratio_axis)
            if p.fit is not None and self.kind(p.fit) != "fit":
                out.append(f"{what}: fit {p.fit!r} is not a derived fit")
        return out


def _axis_text(value: Any) -> str:
    """An axis value as tidy.csv writes it (protolab.results.display.axis_str, which the model cannot import)."""
    if isinstance(value, dict) and isinstance(value.get("name"), str):
        return value["name"]
    if isinstance(value, (dict, list)) or value is None:
        return json.dumps(value, sort_keys=True)
    return str(value)


class CheckedExperiment(Protocol):
    """What a check needs of an experiment (protolab.spec.Experiment is one): its checks, and its derived
    results (for checks of a derived value)."""

    @property
    def checks(self) -> Sequence[Check]: ...

    @property
    def derived(self) -> Derived: ...


class SweepPoint(Protocol):
    """What the results need of a sweep point (protolab.spec.Point is one): its index, id, axis values and the
    experiment resolved for it."""

    @property
    def index(self) -> int: ...

    @property
    def id(self) -> str: ...

    @property
    def values(self) -> Mapping[str, Any]: ...

    @property
    def experiment(self) -> CheckedExperiment: ...


# -- discussion: paragraphs whose numbers come from the run ----------------------------------------------------

FIGURE_KINDS = ("table", "seed", "fit", "ratio")
FIT_FIELDS = ("c0", "c1", "c2", "c0_se", "c1_se", "c2_se", "r2", "n")
_PLACEHOLDER = re.compile(r"\{\{(.*?)\}\}", re.S)
_REF = re.compile(r"\s*(table|seed|fit|ratio):([a-z][a-z0-9_-]*)(?:\.([a-z][a-z0-9_]*))?\s*(?:\[([^\]]*)\])?\s*")
_SCALE = re.compile(r"\*\s*([0-9.]+(?:[eE][+-]?[0-9]+)?)\s*")


class FigureRef(Strict):
    """One number of a run: `table:NAME.COLUMN[axis=value, ...]` (the table's mean in the row those values
    of its row axes name), `seed:NAME.COLUMN[...]` (the seed's number in that row of the table's reference),
    `fit:NAME.FIELD` (a derived fit's c0, c1, c2, their _se, r2 or n; `[group_axis=value]` for a grouped fit)
    or `ratio:NAME[axis=value, ...]` (the one row of a derived ratio those values of its other axes name)."""

    kind: Literal["table", "seed", "fit", "ratio"]
    name: str
    field: str | None = None
    where: dict[str, str] = Field(default_factory=dict)

    def text(self) -> str:
        where = f"[{', '.join(f'{a}={v}' for a, v in self.where.items())}]" if self.where else ""
        return f"{self.kind}:{self.name}{'.' + self.field if self.field else ''}{where}"


class Figure(Strict):
    """A placeholder `{{ REF [/ REF] [* SCALE] [: FORMAT] }}`: one figure (FigureRef), or the quotient of two
    (ours over the seed's, say), times SCALE (e.g. 1e6 for microseconds), formatted with a Python format spec
    (default .3g; .0% for a percentage)."""

    source: str
    top: FigureRef
    bottom: FigureRef | None = None
    scale: float = 1.0
    format: str = ".3g"

    def refs(self) -> list[FigureRef]:
        return [self.top, *([self.bottom] if self.bottom else [])]


def _parse_ref(text: str, pos: int, source: str) -> tuple[FigureRef, int]:
    m = _REF.match(text, pos)
    if not m:
        raise ValueError(f"{{{{{source}}}}}: expected table:, seed:, fit: or ratio: at {text[pos:]!r}")
    where: dict[str, str] = {}
    for item in filter(None, (s.strip() for s in (m.group(4) or "").split(","))):
        axis, eq, value = item.partition("=")
        if not eq or not re.match(COLUMN_RE, axis.strip()) or not value.strip():
            raise ValueError(f"{{{{{source}}}}}: {item!r} is not axis=value")
        where[axis.strip()] = value.strip()
    return FigureRef(kind=m.group(1), name=m.group(2), field=m.group(3), where=where), m.end()  # type: ignore[arg-type]


def parse_figure(source: str) -> Figure:
    """A placeholder's inside (between the braces) as a Figure; ValueError says what is wrong. Whitespace is
    ignored (a folded YAML line may break a placeholder anywhere)."""
    source = "".join(source.split())
    top, pos = _parse_ref(source, 0, source)
    bottom = None
    if source.startswith("/", pos):
        bottom, pos = _parse_ref(source, pos + 1, source)
    scale = 1.0
    if m := _SCALE.match(source, pos):
        scale, pos = float(m.group(1)), m.end()
    fmt = ".3g"
    if source.startswith(":", pos):
        fmt, pos = source[pos + 1 :].strip(), len(source)
        try:
            format(1.5, fmt)
        except ValueError:
            raise ValueError(f"{{{{{source}}}}}: {fmt!r} is not a number format (e.g. .2f, .0%, .3g)") from None
    if source[pos:].strip():
        raise ValueError(f"{{{{{source}}}}}: cannot read {source[pos:].strip()!r} (REF [/ REF] [* SCALE] [: FORMAT])")
    for r in (top, bottom):
        if r is None:
            continue
        if r.kind in ("table", "seed") and r.field is None:
            raise ValueError(f"{{{{{source}}}}}: {r.kind}:{r.name} needs .COLUMN")
        if r.kind == "fit" and r.field not in FIT_FIELDS:
            raise ValueError(f"{{{{{source}}}}}: fit {r.name} needs .FIELD, one of {', '.join(FIT_FIELDS)}")
        if r.kind == "ratio" and r.field is not None:
            raise ValueError(f"{{{{{source}}}}}: a ratio is one number per row; no .{r.field}")
    return Figure(source=source, top=top, bottom=bottom, scale=scale, format=fmt)


class Paragraph(Strict):
    """Prose for the report written around the run's own numbers: each `{{ ... }}` in `text` is a Figure,
    filled in from this run's tables, seed tables and derived results when the report is rendered (n/a, and
    a note, where the run has no such number), so the paragraph says what this run measured."""

    title: str = Field(..., description="e.g. 'What differs from the thesis, and why'")
    text: str = Field(..., description="prose with {{table:T.COLUMN[axis=v]}}, {{seed:...}}, {{fit:F.c1}}, "
                      "{{ratio:R[axis=v]}} figures, optionally A / B, * SCALE and : FORMAT")  # fmt: skip

    def figures(self) -> list[Figure]:
        return [parse_figure(m.group(1)) for m in _PLACEHOLDER.finditer(self.text)]

    @model_validator(mode="after")
    def _parses(self) -> Paragraph:
        self.figures()
        return self

    def fill(self, value: Callable[[Figure], str]) -> str:
        """The text with each placeholder replaced by value(its Figure)."""
        return _PLACEHOLDER.sub(lambda m: value(parse_figure(m.group(1))), self.text)


def discussion_problems(paragraphs: Sequence[Paragraph], tables: Sequence[Table], derived: Derived,
                        sweep: Mapping[str, Sequence[Any]]) -> list[str]:  # fmt: skip
    """What the paragraphs' figures name that the spec does not have; [] when all is well."""
    out: list[str] = []
    by_name = {t.name: t for t in tables}
    for p in paragraphs:
        for fig in p.figures():
            for r in fig.refs():
                what = f"discussion {p.title!r}: {{{{{fig.source}}}}}"
                if r.kind in ("table", "seed"):
                    t = by_name.get(r.name)
                    if t is None:
                        out.append(f"{what}: no table {r.name!r} (tables: {sorted(by_name)})")
                        continue
                    if r.field not in t.columns:
                        out.append(f"{what}: {r.field!r} is not a column of table {t.name} ({t.columns})")
                    if sorted(r.where) != sorted(t.rows):
                        out.append(f"{what}: name the row by the table's rows {t.rows}, not {sorted(r.where)}")
                    if r.kind == "seed" and t.reference is None:
                        out.append(f"{what}: table {t.name} has no seed reference")
                elif r.kind == "fit":
                    if derived.kind(r.name) != "fit":
                        out.append(f"{what}: {r.name!r} is not a derived fit")
                        continue
                    f = derived.fit(r.name)
                    want = [f.group] if f.group else []
                    if list(r.where) != want:
                        out.append(f"{what}: fit {f.name} " + (f"has a line per {f.group}: give [{f.group}=VALUE]"
                                   if f.group else "has one line: no [...]"))  # fmt: skip
                else:
                    if derived.kind(r.name) != "ratio":
                        out.append(f"{what}: {r.name!r} is not a derived ratio")
                        continue
                    axis = derived.ratio(r.name).axis
                    if bad := [a for a in r.where if a == axis or a not in sweep]:
                        out.append(f"{what}: {bad} are not the ratio's other sweep axes")
    return out
