"""Checks and statistics for summary.json, from the plan's points and the tidy rows.

A check bounds the mean over a sweep point's repetitions of one tidy column. It applies to the points
whose axis values match its `where` (compared as strings, so `where: {rate: 10Mbit}` and YAML numbers
both work). A column that was not measured at a point fails the check with `measured: null`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..model.report import Check, SweepPoint
from ..stats import clean, describe, mean
from .display import axis_str
from .store import SCHEMA_VERSION


def applies(check: Check, values: Mapping[str, Any]) -> bool:
    """Whether a check's `where` matches a point's axis values (as strings; an unknown axis never matches)."""
    return all(k in values and axis_str(values[k]) == axis_str(v) for k, v in check.where.items())


def _by_point(rows: Iterable[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    out: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for r in rows:
        out[str(r["point"])].append(r)
    return out


def evaluate(points: Sequence[SweepPoint], rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The summary's "checks" list: one entry per (point, check that applies there), points in index order.

    `points[i].experiment.checks` are the checks already substituted for that point. `rows` are tidy rows
    (as read_tidy returns them, or as written) with a `point` id.
    """
    by_point = _by_point(rows)
    out: list[dict[str, Any]] = []
    for p in sorted(points, key=lambda p: p.index):
        prow = by_point.get(p.id, [])
        for c in p.experiment.checks:
            if not applies(c, p.values):
                continue
            if c.trials is not None:
                measured, lo, hi, passed = _binomial(c, prow)
            else:
                measured = mean(r.get(c.column) for r in prow)
                lo, hi = c.bounds()
                passed = measured is not None and (lo is None or measured >= lo) and (hi is None or measured <= hi)
            out.append(
                {
                    "name": c.name,
                    "point": p.id,
                    "values": dict(p.values),
                    "column": c.column,
                    "measured": measured,
                    "bound": {"min": lo, "max": hi},
                    "passed": bool(passed),
                    **(
                        {"target": c.target, "confidence": c.confidence, "trials_column": c.trials}
                        if c.trials is not None
                        else {}
                    ),
                }
            )
    return out


def binomial_interval(events: int, trials: int, confidence: float) -> tuple[float, float]:
    """Exact (Clopper-Pearson) interval of a proportion."""
    from scipy.stats import binomtest

    ci = binomtest(events, trials).proportion_ci(confidence_level=confidence)
    return float(ci.low), float(ci.high)


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
    by_point = _by_point(rows)
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
    passed = sum(1 for c in checks if c["passed"])
    return {
        "schema_version": SCHEMA_VERSION,
        "experiment": experiment,
        "run_id": run_id,
        "valid": not invalid_reasons,
        "invalid_reasons": list(invalid_reasons),
        "checks": checks,
        "checks_passed": passed,
        "checks_failed": len(checks) - passed,
        "statistics": statistics(rows, columns),
        "guard": dict(guard or {}),
    }
