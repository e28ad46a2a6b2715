"""The end of a run: tidy.csv, faults.csv, summary.json and the report from what was measured."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..results.checks import unmeasured
from ..results.display import axis_str
from ..results.store import FAULTS, REPORT, SUMMARY, write_faults_csv


def finish(rundir: Any, plan: Any, rows: list[dict[str, Any]], fault_rows: list[dict[str, Any]],
           invalid: list[str], guard: dict[str, Any], self_checks: list[dict[str, Any]],
           repetitions: dict[str, Any] | None = None, references: Path | None = None,
           skipped: list[str] | None = None) -> bool:  # fmt: skip
    """Write what was measured and say whether the run is valid."""
    from ..results import checks, render

    e = plan.base
    columns = list(dict.fromkeys(c for p in plan.points for c in p.experiment.columns()))
    rows = sorted(rows, key=lambda r: (int(r["point"][1:]), r["repetition"]))  # measured shuffled, kept in sweep order
    rundir.write_tidy(rows, list(e.sweep), columns)
    if fault_rows:
        write_faults_csv(rundir.path / FAULTS, fault_rows)
    measured = {r["point"] for r in rows}
    reasons = invalid + ([] if rows else ["nothing was measured"])
    points = [p for p in plan.points if p.id in measured]
    summary = checks.build_summary(e.name, rundir.run_id, points, rows, columns, reasons, guard)
    summary["self_check"] = {
        "directions": len(self_checks),
        "passed": all(r["passed"] for r in self_checks),
        "failures": [f"{r['from']}->{r['to']}: {f}" for r in self_checks for f in r["failures"]],
    }
    summary["skipped"] = skipped or []  # tasks that measured nothing here, and why (e.g. no SCTP in the kernel)
    if repetitions:
        summary["repetitions"] = repetitions  # per point: n, converged, the watched columns' nsd of the mean
    rundir.write_json(SUMMARY, summary)
    against = reference_line(rundir.path, references)
    try:
        render.render_all(rundir.path)
    except Exception as exc:  # the measured data is safe; say how to regenerate
        print(f"rendering the report failed ({exc}); rerun `protolab report {rundir.path}`", flush=True)
    print_summary(summary, rundir.path)
    if against:
        print(against, flush=True)
    return bool(summary["valid"])


def reference_line(path: Path, references: Path | None = None) -> str:
    """Compare the run with its reference (committed, or under `references`) into compare/, which the report
    shows; one line."""
    from ..errors import ProtolabError
    from ..results import compare

    try:
        c = compare.with_reference(path, references or compare.REFERENCES_DIR)
    except (ProtolabError, OSError, ValueError, KeyError) as exc:
        return f"against the reference: not compared ({exc})"
    if c["reference"] is None:
        return ""
    counts = ", ".join(f"{n} {s}" for s, n in c["counts"].items() if n)
    return f"against the reference: {counts} ({path / compare.COMPARE_DIR / 'compare.html'})"


def print_summary(summary: dict[str, Any], path: Path) -> None:
    print(f"\n{'VALID' if summary['valid'] else 'INVALID'} run {summary['run_id']}: "
          f"{summary['checks_passed']} check(s) passed, {summary['checks_failed']} failed"
          + (f"; the seed's conclusions: {summary['reproduction_passed']} hold, {summary['reproduction_failed']} do not"
             + (f", {n} not measured" if (n := summary.get("reproduction_unmeasured", 0)) else "")
             if summary.get("reproduction_passed", 0) + summary.get("reproduction_failed", 0)
             + summary.get("reproduction_unmeasured", 0) else ""))  # fmt: skip
    for c in summary["checks"]:
        if not c["passed"]:
            where = ", ".join(f"{k}={axis_str(v)}" for k, v in c["values"].items())
            at = " ".join(filter(None, [c.get("point"), f"({where})" if where else ""]))
            at = f" at {at}" if at else ""
            what = f"{c['derived']}: " if c.get("derived") else ""
            label = "FAILED"
            if c.get("reproduction"):
                label = "NOT MEASURED (the seed's conclusion)" if unmeasured(c) else "FINDING (does not hold here)"
            print(f"  {label} {c['name']}{at}: {what}measured {c['measured']}, bound {c['bound']}")
    for r in summary["invalid_reasons"]:
        print(f"  invalid: {r}")
    for r in summary.get("skipped", []):
        print(f"  skipped: {r}")
    print(f"results: {path}\nreport:  {path / REPORT}", flush=True)
