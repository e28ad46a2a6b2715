"""Benchmarks (figures, not gates): each writes results/bench/<name>-<UTC time>.json with the machine it ran on
(PROTOLAB_BENCH_OUT names another folder: `make bench-smoke` writes its tiny runs to a temporary one)."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path
from typing import Any

OUT = Path(os.environ.get("PROTOLAB_BENCH_OUT") or Path(__file__).resolve().parent.parent / "results" / "bench")


def write_result(name: str, result: dict[str, Any]) -> Path:
    """`result` with the machine and the time (unless it has them), as results/bench/<name>-<UTC time>.json."""
    from protolab import environment

    now = dt.datetime.now(dt.UTC)
    result.setdefault("machine", environment.static())
    result.setdefault("at", now.isoformat())
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{name}-{now:%Y%m%dT%H%M%SZ}.json"
    path.write_text(json.dumps(result, indent=2))
    return path
