"""Finishing the results folder of a run whose process died (SIGKILL, a lost machine) from what is on disk.

`protolab clean` calls it for every dead run it finds in the ledger: tidy.csv from rows.jsonl (every row
measured before the process died), and a summary.json that is INVALID and says why. Nothing here needs the
spec: the manifest names the axes and columns.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .store import MANIFEST, RESERVE, ROWS, SCHEMA_VERSION, SUMMARY, TIDY, JsonLog, load_json, write_json, write_tidy


def finalize_orphan(run_dir: Path, run: dict[str, Any]) -> bool:
    """Write tidy.csv and an invalid summary.json into a folder that has no summary; True if it did."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir() or (run_dir / SUMMARY).exists():
        return False
    (run_dir / RESERVE).unlink(missing_ok=True)  # the disk the run held for its end
    try:
        manifest = load_json(run_dir / MANIFEST)
    except Exception:
        manifest = {}
    rows = JsonLog(run_dir / ROWS).read()
    axes = manifest.get("axes") or []
    columns = manifest.get("columns") or sorted({k for r in rows for k in r} - {"point", "repetition", *axes})
    write_tidy(run_dir / TIDY, rows, axes, columns)
    reason = (f"the run's process (PID {run.get('pid')}) ended without finishing (killed, or its results folder "
              f"full or read-only: see its output); "
              f"{len(rows)} measured row(s) recovered by `protolab clean`")  # fmt: skip
    write_json(
        run_dir / SUMMARY,
        {
            "schema_version": SCHEMA_VERSION,
            "experiment": manifest.get("experiment", run_dir.parent.name),
            "run_id": manifest.get("run_id", run_dir.name),
            "valid": False,
            "invalid_reasons": [reason],
            "checks": [],
            "checks_passed": 0,
            "checks_failed": 0,
            "statistics": {},
            "guard": {},
            "rows": len(rows),
        },
    )
    return True
