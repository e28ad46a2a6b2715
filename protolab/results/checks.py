"""Checks and statistics for summary.json, from the plan's points and the tidy rows.

A check bounds the mean over a sweep point's repetitions of one tidy column (less another's with
`baseline`). It applies to the points whose axis values match its `where` (compared as strings, so
`where: {rate: 10Mbit}` and YAML numbers both work). A column that was not measured at a point fails
the check with `measured: null`.

A check of a derived result (`derived:`, see derived.py) is one entry for the whole sweep: every row of the
sum or ratio (every group of the fit) that matches its `where` must be within the bounds; the entry records
the worst row (the one furthest outside, or closest to a bound), how many rows there were and how many failed.
No matching row, or a row without a value, fails it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..model.report import Check, SweepPoint
from ..stats import binomial_interval, clean, describe, mean
from .derived import DerivedData, group_by_point
from .display import axis_str
from .store import SCHEMA_VERSION
from .sweep import Sweep


def applies(check: Check, values: Mapping[str, Any]) -> bool:
    """Whether a check's `where` matches a point's axis values (as strings; an unknown axis never matches)."""
    return all(k in values and axis_str(values[k]) == axis_str(v) for k, v in check.where.items())


def evaluate(points: Sequence[SweepPoint], rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The summary's "checks" list: one entry per (point, check that applies there), points in index order.

    `points[i].experiment.checks` are the checks already substituted for that point. `rows` are tidy rows
    (as read_tidy returns them, or as written) with a `point` id. Checks of derived results follow, one entry
    each (derived_checks), from the first point's experiment.
    """
    rows = list(rows)
    by_point = group_by_point(rows)
    out: list[dict[str, Any]] = []
    for p in sorted(points, key=lambda p: p.index):
        prow = by_point.get(p.id, [])
        for c in p.experiment.checks:
            if c.derived is not None or not applies(c, p.values):
                continue
            noise_entry: dict[str, Any] = {}
            if c.trials is not None:
                measured, lo, hi, passed = _binomial(c, prow)
            else:
                measured = mean(r.get(c.column) for r in prow)
                if c.baseline is not None and measured is not None:
                    base = mean(r.get(c.baseline) for r in prow)
                    measured = None if base is None else measured - base
                widen = 0.0
                if c.noise is not None:
                    se = standard_error(c, prow)
                    widen = c.noise.k * se if se is not None else 0.0
                    noise_entry = {"noise": {"standard_error": se, "k": c.noise.k, "bound_widened_by": widen}}
                lo, hi = c.bounds(widen)
                passed = measured is not None and (lo is None or measured >= lo) and (hi is None or measured <= hi)
            out.append(
                {
                    "name": c.name,
                    "point": p.id,
                    "values": dict(p.values),
                    "column": c.column,
                    **({"baseline_column": c.baseline} if c.baseline is not None else {}),
                    "measured": measured,
                    "bound": {"min": lo, "max": hi},
                    "passed": bool(passed),
                    "reproduction": c.reproduction,
                    **noise_entry,
                    **(
                        {"target": c.target, "confidence": c.confidence, "trials_column": c.trials}
                        if c.trials is not None
                        else {}
                    ),
                }
            )
    return out + derived_checks(points, rows)


def standard_error(c: Check, rows: Sequence[Mapping[str, Any]]) -> float | None:
    """The standard error of what a check bounds at one point (the mean of `column` over the repetitions, less
    the baseline's): sqrt(sum(sd_r^2 / n_r)) / R for the column, the same added in quadrature for the baseline.
    None when a repetition lacks a deviation or a count (fewer than two samples): the bound is then not widened,
    and the entry says so with a null."""
    assert c.noise is not None
    pairs = [(c.noise.spread, c.noise.samples)]
    if c.noise.baseline_spread is not None and c.noise.baseline_samples is not None:
        pairs.append((c.noise.baseline_spread, c.noise.baseline_samples))
    total = 0.0
    for spread, samples in pairs:
        reps = [(r.get(spread), r.get(samples)) for r in rows if r.get(c.column) is not None]
        if not reps:
            return None
        for sd, n in reps:
            if not isinstance(sd, (int, float)) or not isinstance(n, (int, float)) or n < 2 or not math.isfinite(sd):
                return None
            total += sd**2 / n / len(reps) ** 2
    return math.sqrt(total)


def sweep_of(points: Sequence[SweepPoint]) -> Sweep:
    """The sweep as these points span it: axes and values in sweep (index) order, as strings."""
    ordered = sorted(points, key=lambda p: p.index)
    axes = list(ordered[0].values) if ordered else []
    values: dict[str, list[str]] = {a: [] for a in axes}
    pv = {}
    for p in ordered:
        pv[p.id] = {a: axis_str(v) for a, v in p.values.items()}
        for a, v in pv[p.id].items():
            if v not in values.setdefault(a, []):
                values[a].append(v)
    return Sweep(axes, values, pv)


def derived_checks(points: Sequence[SweepPoint], rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One entry per check of a derived result (the first point's experiment's checks and derived results)."""
    if not points:
        return []
    experiment = min(points, key=lambda p: p.index).experiment
    wanted = [c for c in experiment.checks if c.derived is not None]
    if not wanted:
        return []
    data = DerivedData.build(experiment.derived, sweep_of(points), rows)
    return [derived_entry(c, data) for c in wanted]


def derived_entry(c: Check, data: DerivedData) -> dict[str, Any]:
    """A derived check's summary entry: the worst row's point, values and value, the bound, rows and failures."""
    lo, hi = c.bounds()

    def margin(v: float | None) -> float:
        if v is None:
            return -math.inf
        return min(v - lo if lo is not None else math.inf, hi - v if hi is not None else math.inf)

    unknown = None
    try:
        rows = data.check_rows(c)
    except ValueError as exc:  # a derived name the spec lacks (spec.load refuses it; a hand-made summary may not)
        rows, unknown = [], str(exc)
    worst = min(rows, key=lambda r: margin(r[2]), default=None)
    failed = sum(1 for r in rows if margin(r[2]) < 0)
    missing = sum(1 for r in rows if r[2] is None)
    entry = {
        "name": c.name,
        "point": (worst[0] if worst else None) or "",
        "values": dict(worst[1]) if worst else {},
        "column": c.derived if c.field is None else f"{c.derived}.{c.field}",
        "derived": c.derived,
        "field": c.field,
        "measured": worst[2] if worst else None,
        "bound": {"min": lo, "max": hi},
        "passed": bool(rows) and failed == 0,
        "reproduction": c.reproduction,
        "rows": len(rows),
        "rows_failed": failed,  # rows outside the bounds, and rows without a value
        "rows_unmeasured": missing,
        "why": (worst[3] if worst and worst[2] is None else None) if rows else unknown or "no row matches",
    }
    if unit := data.unit_column(c):
        entry["unit_column"] = unit
    return entry


def unmeasured(c: Mapping[str, Any]) -> bool:
    """A failed check whose only failures are values the run lacks (points or rows not measured): for a
    reproduction check, not a finding about the seed but a run that could not tell."""
    if c.get("passed"):
        return False
    if c.get("derived") is not None:
        return not c.get("rows") or c.get("rows_failed", 0) == c.get("rows_unmeasured", 0)
    return c.get("measured") is None


def _binomial(c: Check, rows: Sequence[Mapping[str, Any]]) -> tuple[float | None, float | None, float | None, bool]:
    """Pooled proportion over the repetitions, its interval, and whether the target lies inside."""
    pairs = [(r.get(c.column), r.get(c.trials)) for r in rows]
    pairs = [(float(k), float(n)) for k, n in pairs if k not in (None, "") and n not in (None, "")]
    events, trials = int(sum(k for k, _ in pairs)), int(sum(n for _, n in pairs))
    if trials <= 0 or not 0 <= events <= trials:
        return None, None, None, False
    lo, hi = binomial_interval(events, trials, c.confidence or 0.99)
    assert c.target is not None
    return events / trials, lo, hi, lo <= c.target <= hi


def statistics(rows: Iterable[Mapping[str, Any]], columns: Sequence[str]) -> dict[str, dict[str, dict[str, Any]]]:
    """The summary's "statistics": {point id: {column: describe(values over repetitions)}}.

    Every point that has rows gets every listed column (n=0 when never measured there). Points appear in
    the order of their first row.
    """
    by_point = group_by_point(rows)
    return {pid: {c: describe(clean(r.get(c) for r in prow)) for c in columns} for pid, prow in by_point.items()}


def build_summary(
    experiment: str,
    run_id: str,
    points: Sequence[SweepPoint],
    rows: Sequence[Mapping[str, Any]],
    columns: Sequence[str],
    invalid_reasons: Sequence[str] = (),
    guard: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The whole summary.json. `valid` is about the run (no invalid_reasons from the guard), not the checks:
    a valid run whose checks fail is a trustworthy measurement that disagrees with the expectation."""
    checks = evaluate(points, rows)
    platform = [c for c in checks if not c.get("reproduction")]
    passed = sum(1 for c in platform if c["passed"])
    findings = [c for c in checks if c.get("reproduction")]
    return {
        "schema_version": SCHEMA_VERSION,
        "experiment": experiment,
        "run_id": run_id,
        "valid": not invalid_reasons,
        "invalid_reasons": list(invalid_reasons),
        "checks": checks,
        "checks_passed": passed,
        "checks_failed": len(platform) - passed,
        # the seed's conclusions (Check.reproduction): a failure is a finding about the reproduction; one the run
        # lacks the values for (points not measured) is neither
        "reproduction_passed": sum(1 for c in findings if c["passed"]),
        "reproduction_failed": sum(1 for c in findings if not c["passed"] and not unmeasured(c)),
        "reproduction_unmeasured": sum(1 for c in findings if unmeasured(c)),
        "statistics": statistics(rows, columns),
        "guard": dict(guard or {}),
    }
