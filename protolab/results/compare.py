"""Reference results, and the comparison of a run with a reference (or with another run).

A reference holds, per sweep point and measured column, the mean, sample standard deviation and n of one or
more valid runs pooled, and the machine they came from. A comparison tests each point x column:

- **Welch's t-test** on the two means. It does not assume equal variances (a reference pooled over nights and
  a run of tonight need not share one) and is the usual choice for the small, roughly normal samples of a
  lab's repetitions (n = 2..20); a bootstrap interval needs more repetitions than most profiles have.
- With **one value on one side** Welch's test is undefined; the single value is then tested against the other
  side's prediction interval (Student's t with that side's sd and n - 1 degrees of freedom).
- A difference counts only when it is both **significant** (p < alpha, 0.01 by default) and **practical**
  (larger than 5 % of the reference mean, or the column's own tolerance). Its direction names it *improved*
  or *regressed* where the column's name says which way is better, else *changed*.
- A **CPU share** must also move by more than the reference's **between-run floor**: when a reference pools
  two or more runs, the 95th percentile over its CPU cells of the spread of the runs' means (in cores). A
  run's repetitions share one deployment and one state of the machine, so their sd understates how much a
  CPU share moves from one run to the next; measured here, two nightlies of the same code differed by up to
  0.08 cores (p95 0.026 over 102 cells) while their repetitions' sds were often under 0.005.
- **Between runs.** A run's repetitions share one deployment and one state of the machine, so their spread
  understates how much a run's mean moves from one run to the next (measured here: a receiver lost 0 of 8,000
  messages in every repetition of two nightlies and 8 in every repetition of another, same code). A reference
  pooled from two or more runs keeps each run's mean per cell, and a cell also needs the new run's mean to lie
  outside the reference runs' own scatter: Student's t prediction of one more run mean, with the column's
  run-to-run coefficient of variation pooled over its points (one cell's k runs give k - 1 degrees of freedom,
  too few to find anything after the adjustment below; a column's scatter relative to its level is much alike
  from point to point). The cell's p is the larger of the two tests' (both must reject: an intersection-union
  test, still at level alpha). Runs whose means are all 0 (every run lost nothing) say nothing about the
  scatter; Welch's test alone decides there.
- The cells of one comparison are **many tests at once** (562 over the five nightlies): at alpha 0.01 each,
  about 5 would be flagged every night by chance alone. So the decision uses each cell's p adjusted by
  **Benjamini-Hochberg** over the comparison's tested cells (q, the false discovery rate; scipy's
  `false_discovery_control`), and both p and q are shown. Measured here: a nightly of unchanged code had one
  cell of 136 at p 0.0017 (a 5 ms-resolution outage edge, 2.1 -> 3.3 ms); its q is 0.22.
- Runs on **different machines** (cores, CPU model or impairment backend) are compared by **shape** only: each
  column's means divided by their mean over the points, so a uniformly slower machine is not a regression.
"""

from __future__ import annotations

import datetime as dt
import html
import json
import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from scipy import stats as _st

from ..model.report import EXPERIMENTS_DIR
from ..stats import clean
from .display import Display, is_measured
from .store import COMPARE_DIR, SCHEMA_VERSION, SUMMARY, TIDY, ResultsError, load_json, load_manifest

REFERENCES_DIR = EXPERIMENTS_DIR / "references"  # <experiment>/<profile>.json, committed
ALPHA = 0.01
RELATIVE_THRESHOLD = 0.05
MACHINE_KEYS = ("cores", "cpu_model", "impairment_backend")  # a change of any: compare shapes only
FLOOR_QUANTILE = 0.95  # of the reference runs' between-run spread, per CPU cell
CALIBRATION_TOLERANCE = 0.10  # the machine's own hash rate moving more than this scales CPU shares
LOWER_IS_BETTER = ("loss", "lost", "rtt", "delay", "latency", "cpu", "drop", "error", "outage", "elapsed",
                   "jitter", "stddev", "retries")  # fmt: skip
HIGHER_IS_BETTER = ("goodput", "throughput", "delivered", "received_ratio")
RECEIVED_RATE = ("rx_", "_per_second")  # a rate something received: higher is better (a sent rate is the load)
STATUSES = ("regressed", "changed", "improved", "unchanged", "not comparable")


@dataclass(frozen=True)
class Sample:
    n: int
    mean: float
    sd: float

    @classmethod
    def of(cls, values: Iterable[Any]) -> Sample | None:
        xs = clean(values)
        if not xs:
            return None
        return cls(len(xs), statistics.fmean(xs), statistics.stdev(xs) if len(xs) > 1 else 0.0)


def two_sided_test(ref: Sample, new: Sample) -> tuple[float, float, float] | None:
    """(p, low, high): the p value of 'same mean' and the 95 % interval of new.mean - ref.mean; None when the
    samples cannot say (one value each, or no spread at all where a test needs one)."""
    diff = new.mean - ref.mean
    if ref.n >= 2 and new.n >= 2:
        v1, v2 = ref.sd**2 / ref.n, new.sd**2 / new.n
        if v1 + v2 == 0:
            return (1.0 if diff == 0 else 0.0), diff, diff
        se = math.sqrt(v1 + v2)
        df = (v1 + v2) ** 2 / ((v1**2 / (ref.n - 1) if v1 else 0) + (v2**2 / (new.n - 1) if v2 else 0))
    elif ref.n >= 2 or new.n >= 2:  # one value against the other side's prediction interval
        many = ref if ref.n >= 2 else new
        if many.sd == 0:
            return (1.0 if diff == 0 else 0.0), diff, diff
        se, df = many.sd * math.sqrt(1 + 1 / many.n), many.n - 1
    else:
        return None
    t = diff / se
    p = float(2 * _st.t.sf(abs(t), df))
    half = float(_st.t.ppf(0.975, df)) * se
    return p, diff - half, diff + half


def better(column: str) -> str | None:
    """'higher', 'lower' or None (unknown) from the column's name."""
    name = column.lower()
    if any(w in name for w in HIGHER_IS_BETTER) or (RECEIVED_RATE[0] in name and name.endswith(RECEIVED_RATE[1])):
        return "higher"
    if any(w in name for w in LOWER_IS_BETTER):
        return "lower"
    return None


@dataclass
class Cell:
    point: str
    label: str
    column: str
    status: str
    ref: Sample | None
    new: Sample | None
    diff: float | None = None
    relative: float | None = None
    p: float | None = None  # the larger of p_within and p_between (both tests must reject)
    p_within: float | None = None  # Welch's test of the repetitions
    p_between: float | None = None  # the new run mean against the reference runs' means (None: fewer than 2 runs)
    q: float | None = None  # p adjusted over the comparison's tested cells (Benjamini-Hochberg); p alone: None
    low: float | None = None
    high: float | None = None
    why: str = ""

    def row(self) -> dict[str, Any]:
        d = asdict(self)
        for side in ("ref", "new"):
            s = d.pop(side) or {}
            d |= {f"{side}_{k}": s.get(k) for k in ("n", "mean", "sd")}
        return d


def is_cpu(column: str) -> bool:
    return "cpu" in column


def classify(column: str, ref: Sample | None, new: Sample | None, alpha: float = ALPHA,
             threshold: float = RELATIVE_THRESHOLD, point: str = "", label: str = "",
             floor: float | None = None) -> Cell:  # fmt: skip
    """One point x column on its own (a family of one test): significant and practical (beyond `threshold` of
    the reference mean and, when given, beyond the absolute `floor`), in which direction."""
    return decide(measure(column, ref, new, point, label), alpha, threshold, floor)


@dataclass(frozen=True)
class Scatter:
    """How much a column's run means scatter from run to run, relative to their level: the coefficient of
    variation of the reference runs' means, pooled over the column's points (df = sum of k - 1)."""

    relative_sd: float
    df: int


def column_scatter(cells: Iterable[tuple[str, Sequence[float]]]) -> dict[str, Scatter]:
    """(column, its runs' means at one point) for every cell -> each column's pooled Scatter. Cells whose runs'
    mean is 0 carry no relative scatter and are left out; a column without any has none."""
    sums: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
    for col, means in cells:
        level = statistics.fmean(means)
        if len(means) < 2 or level == 0:
            continue
        sums[col][0] += (len(means) - 1) * (statistics.stdev(means) / abs(level)) ** 2
        sums[col][1] += len(means) - 1
    return {col: Scatter(math.sqrt(ss / df), int(df)) for col, (ss, df) in sums.items() if df and ss > 0}


def between_runs_test(run_means: Sequence[float], new: Sample, scatter: Scatter | None) -> float | None:
    """p of 'the new run's mean is one more draw of the reference runs' means', with the column's pooled relative
    scatter (Student's t prediction, scatter.df degrees of freedom); None without runs or scatter to judge by."""
    if scatter is None or len(run_means) < 2:
        return None
    level = statistics.fmean(run_means)
    if level == 0:
        return None
    sd = scatter.relative_sd * abs(level) * math.sqrt(1 + 1 / len(run_means))
    return float(2 * _st.t.sf(abs(new.mean - level) / sd, scatter.df))


def measure(column: str, ref: Sample | None, new: Sample | None, point: str = "", label: str = "",
            ref_runs: Sequence[float] | None = None, scatter: Scatter | None = None) -> Cell:  # fmt: skip
    """The difference, its interval and p; 'not comparable' when a side is missing or cannot be tested.
    `ref_runs`, `scatter`: the reference runs' means of this cell and its column's pooled scatter (a reference
    pooled from two or more runs), for the between-run test."""
    cell = Cell(point, label, column, "not comparable", ref, new)
    if ref is None or new is None:
        cell.why = "no reference value" if ref is None else "not measured in this run"
        return cell
    cell.diff = new.mean - ref.mean
    cell.relative = cell.diff / abs(ref.mean) if ref.mean else None
    tested = two_sided_test(ref, new)
    if tested is None:
        cell.why = "one value on each side: no test possible (repeat the points)"
        return cell
    cell.p_within, cell.low, cell.high = tested
    cell.p_between = between_runs_test(ref_runs, new, scatter) if ref_runs else None
    cell.p = max(cell.p_within, cell.p_between if cell.p_between is not None else 0.0)
    return cell


def adjust(cells: Sequence[Cell]) -> None:
    """Set each tested cell's q: its p adjusted by Benjamini-Hochberg over all the tested cells."""
    tested = [c for c in cells if c.p is not None]
    if tested:
        for c, q in zip(tested, _st.false_discovery_control([c.p for c in tested]), strict=True):
            c.q = float(q)


def decide(cell: Cell, alpha: float = ALPHA, threshold: float = RELATIVE_THRESHOLD,
           floor: float | None = None) -> Cell:  # fmt: skip
    """Name a measured cell's status from its q (its p when it was tested alone) and the practical size."""
    if cell.p is None or cell.diff is None or cell.ref is None:
        return cell
    ref = cell.ref
    practical = abs(cell.diff) > threshold * abs(ref.mean) if ref.mean else cell.diff != 0
    beyond = f"{threshold:.0%}"
    if floor is not None:
        practical = practical and abs(cell.diff) > floor
        beyond += f" and the {floor:.3g} between-run floor"
    sig, name = (cell.p, "p") if cell.q is None else (cell.q, "q")
    told = f"{name} {sig:.3g}" + ("" if cell.q is None else f" (p {cell.p:.3g})")
    if cell.p_between is not None:
        told += f" [Welch p {cell.p_within:.3g}, between runs p {cell.p_between:.3g}]"
    if sig >= alpha or not practical:
        cell.status = "unchanged"
        cell.why = f"{told} >= {alpha:g}" if sig >= alpha else f"within {beyond}"
        return cell
    way = better(cell.column)
    if way is None:
        cell.status = "changed"
    else:
        up = cell.diff > 0
        cell.status = "improved" if up == (way == "higher") else "regressed"
    cell.why = f"{told} < {alpha:g} and beyond {beyond}"
    return cell


# -- references --------------------------------------------------------------------------------------------
def _key(values: dict[str, Any]) -> str:
    return json.dumps(values, sort_keys=True)


def machine(manifest: dict[str, Any]) -> dict[str, Any]:
    host = manifest.get("host") if isinstance(manifest.get("host"), dict) else {}
    backend = manifest.get("impairment_backend") or {}
    commit = manifest.get("git_commit")
    return {
        "cores": host.get("cpu_count") or host.get("cores"),
        "cpu_model": host.get("cpu_model"),
        "kernel": manifest.get("kernel"),
        "impairment_backend": backend.get("chosen") if isinstance(backend, dict) else backend,
        "commit": commit.get("commit") if isinstance(commit, dict) else commit,
        "hash_mib_per_second": ((manifest.get("calibration") or {}).get("start") or {}).get("hash_mib_per_second"),
    }


def _run_samples(run_dir: Path) -> tuple[dict[str, Any], dict[str, dict[str, list[float]]], dict[str, Any]]:
    """(manifest, point key -> column -> values, point key -> point record) of one valid run."""
    from .store import read_tidy

    run_dir = Path(run_dir)
    manifest = load_manifest(run_dir)
    summary = load_json(run_dir / SUMMARY)
    axes = list((manifest["spec"].get("sweep") or {}).keys())
    rows = read_tidy(run_dir / TIDY, axes)
    points = {p["id"]: p for p in manifest["points"]}
    values: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    records = {}
    for r in rows:
        p = points.get(r["point"])
        if p is None:
            raise ResultsError(f"{run_dir}: tidy.csv names point {r['point']} that the manifest does not list")
        k = _key(p["values"])
        records[k] = p
        for col, v in r.items():
            if is_measured(col) and v is not None:
                values[k][col].append(float(v))
    return manifest | {"_summary": summary}, values, records


def build_reference(run_dirs: Sequence[Path], allow_invalid: bool = False) -> dict[str, Any]:
    """A reference from one or more runs of one experiment and profile, their repetitions pooled."""
    if not run_dirs:
        raise ResultsError("a reference needs at least one run folder")
    pooled: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    records: dict[str, Any] = {}
    first: dict[str, Any] | None = None
    runs = []
    run_means: dict[tuple[str, str], list[float]] = defaultdict(list)  # each cell: each run's mean
    for d in run_dirs:
        manifest, values, recs = _run_samples(d)
        if not manifest["_summary"].get("valid") and not allow_invalid:
            why = "; ".join(manifest["_summary"].get("invalid_reasons", [])[:2])
            raise ResultsError(f"{d}: the run is INVALID ({why}); a reference is made of valid runs")
        if first is None:
            first = manifest
        elif (manifest["experiment"], manifest.get("profile")) != (first["experiment"], first.get("profile")):
            raise ResultsError(f"{d}: {manifest['experiment']}/{manifest.get('profile')} is not "
                               f"{first['experiment']}/{first.get('profile')}")  # fmt: skip
        elif machine(manifest)["cores"] != machine(first)["cores"]:
            raise ResultsError(f"{d}: made on another machine kind than {run_dirs[0]}; pool runs of one machine")
        runs.append(manifest["run_id"])
        records |= recs
        for k, cols in values.items():
            for col, vs in cols.items():
                pooled[k][col] += vs
                if vs:
                    run_means[k, col].append(statistics.fmean(vs))
    assert first is not None
    rates = [r for d in run_dirs if (r := machine(load_manifest(d))["hash_mib_per_second"])]
    points = []
    for k, rec in records.items():
        cols = {}
        for col, vs in sorted(pooled[k].items()):
            s = Sample.of(vs)
            if s is not None:
                cols[col] = {"n": s.n, "mean": s.mean, "sd": s.sd}
                if len(run_means[k, col]) > 1:
                    cols[col]["run_means"] = run_means[k, col]
        points.append({"id": rec["id"], "label": rec.get("label", ""), "values": rec["values"], "columns": cols})
    return {
        "schema_version": SCHEMA_VERSION,
        "experiment": first["experiment"],
        "profile": first.get("profile"),
        "made_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "runs": runs,
        "machine": machine(first) | {"hash_mib_per_second": statistics.fmean(rates) if rates else None},
        "points": points,
        "cpu_floor": _between_run_floor({key: m for key, m in run_means.items() if is_cpu(key[1])}),
    }


def _between_run_floor(run_means: dict[tuple[str, str], list[float]]) -> dict[str, Any] | None:
    """The FLOOR_QUANTILE of the CPU cells' spread (max - min) of their runs' means; None from one run."""
    spreads = sorted(max(m) - min(m) for m in run_means.values() if len(m) > 1)
    if not spreads:
        return None
    q = spreads[min(len(spreads) - 1, math.ceil(FLOOR_QUANTILE * len(spreads)) - 1)]
    return {"cores": q, "cells": len(spreads), "quantile": FLOOR_QUANTILE}


def reference_path(root: Path, experiment: str, profile: str | None) -> Path:
    return Path(root) / experiment / f"{profile or 'default'}.json"


def load_reference(path: Path) -> dict[str, Any]:
    ref = load_json(path)
    if ref.get("schema_version") != SCHEMA_VERSION or "points" not in ref:
        raise ResultsError(f"{path}: not a protolab reference (schema_version {SCHEMA_VERSION})")
    return ref


def as_reference(path: Path) -> dict[str, Any]:
    """A reference file, or a run folder read as a one-run reference."""
    path = Path(path)
    return build_reference([path], allow_invalid=True) if path.is_dir() else load_reference(path)


# -- comparing ---------------------------------------------------------------------------------------------
@dataclass
class Comparison:
    experiment: str
    run_id: str
    reference: str
    shapes_only: bool
    machine_note: str
    cells: list[Cell]

    def counts(self) -> dict[str, int]:
        return {s: sum(c.status == s for c in self.cells) for s in STATUSES}

    def failed(self) -> bool:
        """What CI fails on: a regression, or an unexplained significant change."""
        c = self.counts()
        return bool(c["regressed"] or c["changed"])


def calibration_scale(ref_machine: dict[str, Any], run_machine: dict[str, Any]) -> float | None:
    """The factor that puts this run's CPU shares on the reference machine's speed (run rate / reference
    rate), when the calibration moved by more than CALIBRATION_TOLERANCE; None otherwise."""
    a, b = ref_machine.get("hash_mib_per_second"), run_machine.get("hash_mib_per_second")
    if not a or not b or abs(b / a - 1) <= CALIBRATION_TOLERANCE:
        return None
    return b / a


def _shapes(by_point: dict[str, dict[str, Sample]]) -> dict[str, dict[str, Sample]]:
    """Each column's means (and sds) divided by the column's mean over the points."""
    totals: dict[str, list[float]] = defaultdict(list)
    for cols in by_point.values():
        for col, s in cols.items():
            totals[col].append(s.mean)
    scale = {col: sum(v) / len(v) for col, v in totals.items() if v and sum(v)}
    return {k: {col: Sample(s.n, s.mean / scale[col], s.sd / abs(scale[col])) for col, s in cols.items()
                if col in scale} for k, cols in by_point.items()}  # fmt: skip


def compare(run_dir: Path, reference: dict[str, Any], alpha: float = ALPHA,
            threshold: float = RELATIVE_THRESHOLD) -> Comparison:  # fmt: skip
    manifest, values, records = _run_samples(Path(run_dir))
    if manifest["experiment"] != reference["experiment"]:
        raise ResultsError(
            f"{run_dir} is a run of {manifest['experiment']}, the reference of {reference['experiment']}"
        )
    mine, theirs = machine(manifest), reference.get("machine") or {}
    moved = [k for k in MACHINE_KEYS if mine.get(k) != theirs.get(k)]
    note = ("same machine kind" if not moved else
            "different machine (" + ", ".join(f"{k} {theirs.get(k)} -> {mine.get(k)}" for k in moved) +
            "): only shapes compared (each column divided by its mean over the points)")  # fmt: skip
    new = {k: {c: s for c, vs in cols.items() if (s := Sample.of(vs))} for k, cols in values.items()}
    ref = {_key(p["values"]): {c: Sample(v["n"], v["mean"], v["sd"]) for c, v in p["columns"].items()}
           for p in reference["points"]}  # fmt: skip
    runs = {} if moved else {(_key(p["values"]), c): v["run_means"] for p in reference["points"]
                             for c, v in p["columns"].items() if v.get("run_means")}  # fmt: skip
    scatter = column_scatter((c, m) for (_k, c), m in runs.items())
    labels = {_key(p["values"]): (p["id"], p.get("label", "")) for p in reference["points"]}
    labels |= {k: (r["id"], r.get("label", "")) for k, r in records.items()}
    if moved:
        new, ref = _shapes(new), _shapes(ref)
    elif (scale := calibration_scale(theirs, mine)) is not None:
        note += (f"; the machine's own hash rate moved {theirs['hash_mib_per_second']:.0f} -> "
                 f"{mine['hash_mib_per_second']:.0f} MiB/s: CPU columns scaled by {scale:.3f}")  # fmt: skip
        new = {k: {c: (Sample(s.n, s.mean * scale, s.sd * scale) if is_cpu(c) else s) for c, s in cols.items()}
               for k, cols in new.items()}  # fmt: skip
    floor = None if moved else (reference.get("cpu_floor") or {}).get("cores")
    if floor is not None:
        note += f"; CPU shares must also move more than {floor:.3g} cores (the reference runs' between-run floor)"
    elif not moved and len(reference.get("runs") or []) < 2:
        note += "; the reference has one run: no between-run floor for CPU shares"
    cells = []
    for k in sorted(set(new) | set(ref), key=lambda k: labels[k][0]):
        pid, label = labels[k]
        for col in sorted(set(new.get(k, {})) | set(ref.get(k, {}))):
            cells.append(measure(col, ref.get(k, {}).get(col), new.get(k, {}).get(col), pid, label, runs.get((k, col)),
                                 scatter.get(col)))  # fmt: skip
    adjust(cells)
    for cell in cells:
        decide(cell, alpha, threshold, floor if is_cpu(cell.column) else None)
    if runs:
        note += f"; each cell also against the {len(reference.get('runs') or [])} reference runs' scatter of means"
    note += f"; q: p adjusted by Benjamini-Hochberg over the {sum(c.q is not None for c in cells)} tested cells"
    where = ", ".join(reference.get("runs", [])) or "?"
    return Comparison(manifest["experiment"], manifest["run_id"], where, bool(moved), note, cells)


def _fmt(v: float | None, digits: int = 4) -> str:
    if v is None:
        return "—"
    return f"{v:.{digits}g}"


def markdown(c: Comparison) -> str:
    counts = ", ".join(f"{n} {s}" for s, n in c.counts().items() if n)
    lines = [f"# {c.experiment} run {c.run_id} vs reference ({c.reference})", "",
             f"{c.machine_note}. Welch's t-test per point and column, q its p adjusted by Benjamini-Hochberg, "
             f"alpha {ALPHA:g} on q, practical threshold {RELATIVE_THRESHOLD:.0%} of the reference mean. {counts}.", "",
             "| point | column | status | reference (n, mean ± sd) | this run | difference | 95 % interval | p | q |",
             "|---|---|---|---|---|---:|---|---:|---:|"]  # fmt: skip
    for cell in _sorted_cells(c):

        def side(s: Sample | None) -> str:
            return "—" if s is None else f"{s.n}, {_fmt(s.mean)} ± {_fmt(s.sd, 2)}"

        rel = f" ({cell.relative:+.1%})" if cell.relative is not None else ""
        ci = f"{_fmt(cell.low)} .. {_fmt(cell.high)}" if cell.low is not None else "—"
        lines.append(f"| {cell.point} {cell.label} | {cell.column} | **{cell.status}** | {side(cell.ref)} | "
                     f"{side(cell.new)} | {_fmt(cell.diff)}{rel} | {ci} | {_fmt(cell.p, 3)} | "
                     f"{_fmt(cell.q, 3)} |")  # fmt: skip
    return "\n".join(lines) + "\n"


def report_rows(saved: dict[str, Any]) -> list[dict[str, str]]:
    """compare.json's cells as the run's report shows them, the flagged ones first."""
    order = {s: i for i, s in enumerate(STATUSES)}
    out = []
    for c in sorted(saved.get("cells") or [], key=lambda c: (order.get(c["status"], 9), c["point"], c["column"])):
        d = Display.for_column(c["column"], [c.get("ref_mean"), c.get("new_mean")])
        unit = f" {d.unit}" if d.unit else ""

        def side(k: str, c: dict[str, Any] = c, d: Display = d, unit: str = unit) -> str:
            if c.get(f"{k}_mean") is None:
                return "—"
            return f"{d.mean_sd(c[f'{k}_mean'], c.get(f'{k}_sd'), c.get(f'{k}_n') or 1)}{unit} (n {c.get(f'{k}_n')})"

        diff = "—"
        if c.get("diff") is not None:
            diff = ("+" if c["diff"] > 0 else "") + d.number(c["diff"]) + unit
            diff += f" ({c['relative']:+.1%})" if c.get("relative") is not None else ""
        out.append({"point": f"{c['point']} {c.get('label', '')}".strip(), "column": c["column"],
                    "status": c["status"], "reference": side("ref"), "run": side("new"), "difference": diff,
                    "p": _fmt(c.get("p"), 3), "q": _fmt(c.get("q"), 3)})  # fmt: skip
    return out


def html_page(c: Comparison) -> str:
    """compare.html: the report section's rows (display units, flagged first) with each cell's reason."""
    colors = {"regressed": "#c0392b", "changed": "#d68910", "improved": "#1e8449", "unchanged": "#555",
              "not comparable": "#999"}  # fmt: skip
    rows = []
    for r, why in zip(report_rows(as_json(c)), _sorted_cells(c), strict=True):
        rows.append("<tr>" + "".join(f"<td>{html.escape(r[k])}</td>" for k in ("point", "column")) +
                    f'<td style="color:{colors[r["status"]]}"><b>{r["status"]}</b></td>' +
                    "".join(f"<td>{html.escape(r[k])}</td>" for k in ("reference", "run", "difference", "p", "q")) +
                    f"<td>{html.escape(why.why)}</td></tr>")  # fmt: skip
    counts = ", ".join(f"{n} {s}" for s, n in c.counts().items() if n)
    head = "".join(f"<th>{h}</th>" for h in ("point", "column", "status", "reference", "this run", "difference", "p",
                                              "q", "why"))  # fmt: skip
    return (f"<!doctype html><meta charset=utf-8><title>{html.escape(c.experiment)} vs reference</title>"
            f"<h1>{html.escape(c.experiment)} run {html.escape(c.run_id)} vs {html.escape(c.reference)}</h1>"
            f"<p>{html.escape(c.machine_note)}. {counts}.</p><table border=1 cellpadding=3>"
            f"<tr>{head}</tr>{''.join(rows)}</table>\n")  # fmt: skip


def _sorted_cells(c: Comparison) -> list[Cell]:
    """The cells in report_rows' order."""
    order = {s: i for i, s in enumerate(STATUSES)}
    return sorted(c.cells, key=lambda x: (order[x.status], x.point, x.column))


def as_json(c: Comparison) -> dict[str, Any]:
    """compare.json's content."""
    return {"experiment": c.experiment, "run_id": c.run_id, "reference": c.reference, "shapes_only": c.shapes_only,
            "machine": c.machine_note, "counts": c.counts(), "cells": [x.row() for x in c.cells]}  # fmt: skip


def with_reference(run_dir: Path, references: Path = REFERENCES_DIR) -> dict[str, Any]:
    """Compare a run with its experiment and profile's reference, if there is one, into RUN/compare/; return
    what the nightly index and the run's last lines say of it."""
    m = load_manifest(run_dir)
    path = reference_path(references, m["experiment"], m.get("profile"))
    if not path.exists():
        return {"reference": None, "note": f"no reference ({path}): not compared"}
    c = compare(run_dir, load_reference(path))
    write(c, Path(run_dir) / COMPARE_DIR)
    return verdict(run_dir, references)


def verdict(run_dir: Path, references: Path = REFERENCES_DIR) -> dict[str, Any]:
    """What RUN/compare/compare.json says, as with_reference returns it (no reference: not compared)."""
    saved = Path(run_dir) / COMPARE_DIR / "compare.json"
    if not saved.exists():
        m = load_manifest(run_dir)
        path = reference_path(references, m["experiment"], m.get("profile"))
        return {"reference": None, "note": f"no reference ({path}): not compared"}
    c = load_json(saved)
    counts = c["counts"]
    failed = bool(counts.get("regressed") or counts.get("changed"))
    return {"reference": c["reference"], "counts": counts, "failed": failed, "machine": c["machine"]}


def write(c: Comparison, out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / "compare.md", out_dir / "compare.html", out_dir / "compare.json"]
    paths[0].write_text(markdown(c))
    paths[1].write_text(html_page(c))
    paths[2].write_text(json.dumps(as_json(c), indent=1) + "\n")
    return paths
