"""Report definitions: the tables, knees, plots and checks a spec asks for, as data.

They are part of a spec (protolab.spec validates them with the rest) and are kept in every results folder's
manifest, from which protolab.results re-renders a run without the spec's topologies, labs or workloads.
A table's `reference` names a CSV inside seed-tables/ (SEED_TABLES) beside the spec, or in experiments/.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any, Literal, Protocol

from pydantic import Field, model_validator

from ..units import Quantity, Seconds
from .base import COLUMN_RE, NAME_RE, Strict

EXPERIMENTS_DIR = Path(__file__).resolve().parents[2] / "experiments"
SEED_TABLES = "seed-tables"  # a table reference's folder, relative to the spec's folder (experiments/)


class Check(Strict):
    """A bound on a tidy column, per sweep point, on the mean over repetitions; or, with `trials`, a
    binomial check: `column` counts events (lost packets) out of `trials` (packets sent), pooled over the
    repetitions, and the check passes when `target` lies inside the exact (Clopper-Pearson) interval."""

    name: str
    column: str = Field(..., pattern=COLUMN_RE)
    where: dict[str, Any] = Field(default_factory=dict, description="only points whose axes have these values")
    target: Quantity | None = Field(None, description="expected value (number, or rate/duration/percent string)")
    tolerance_percent: float | None = Field(None, gt=0)
    tolerance_absolute: Quantity | None = Field(
        None, ge=0, description="floor of the tolerance in the column's unit: max(tolerance_percent, this)"
    )
    min: Quantity | None = None
    max: Quantity | None = None
    trials: str | None = Field(None, pattern=COLUMN_RE, description="binomial check: the column of trials")
    confidence: float | None = Field(None, gt=0, lt=1, description="binomial check: e.g. 0.99")

    @model_validator(mode="after")
    def _one_form(self) -> Check:
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

    def bounds(self) -> tuple[float | None, float | None]:
        lo, hi = self.min, self.max
        if self.target is not None and self.tolerance_percent is not None:
            d = max(abs(self.target) * self.tolerance_percent / 100, self.tolerance_absolute or 0.0)
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
    round trips), a panel per value of `x`, one colour per `group` value."""

    name: str = Field(..., pattern=NAME_RE)
    title: str
    kind: Literal["bar", "line", "ccdf", "series"] = "bar"
    x: str = Field(..., description="axis name on the x axis (ccdf and series: one panel per value)")
    y: list[str] = Field(..., min_length=1, description="tidy columns (ccdf and series: raw series names)")
    group: str | None = Field(None, description="axis name: one series (or panel) per value")
    where: dict[str, Any] = Field(default_factory=dict, description="only points whose axes have these values")
    ylabel: str = ""
    reference: str | None = Field(None, description="an axis or column drawn as the configured/expected value")
    marks: dict[str, Seconds] = Field(
        default_factory=dict, description="ccdf and series: labelled lines at these times, e.g. {goal: 50ms}"
    )

    @model_validator(mode="after")
    def _raw_kinds(self) -> Plot:
        if self.marks and self.kind in ("bar", "line"):
            raise ValueError(f"plot {self.name}: marks are drawn on ccdf and series plots, not on {self.kind}")
        if self.reference and self.kind in ("ccdf", "series"):
            raise ValueError(f"plot {self.name}: a {self.kind} plot has no reference; use marks")
        return self


class CheckedExperiment(Protocol):
    """What a check needs of an experiment (protolab.spec.Experiment is one): its checks."""

    @property
    def checks(self) -> Sequence[Check]: ...


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
