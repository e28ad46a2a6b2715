"""Results of a run: the folder format, statistics, checks, and the tables/plots/report derived from it.

The runner: `RunDir.create(root, name)`, then `write_json("manifest.json", ...)`, `raw_writer()` for the
raw samples, `write_tidy(rows, axes, columns)`, `write_json("summary.json", build_summary(...))` and
finally `render_all(path)`, which `protolab report` can rerun on any results folder.
"""

from ..stats import describe
from .checks import applies, build_summary, evaluate, statistics
from .display import Display, axis_str
from .render import render_all
from .store import (
    RawWriter,
    ResultsError,
    RunDir,
    latest,
    load_manifest,
    load_summary,
    new_run_id,
    read_raw,
    read_tidy,
    runs,
    write_json,
    write_tidy,
)

__all__ = [
    "Display",
    "RawWriter",
    "ResultsError",
    "RunDir",
    "applies",
    "axis_str",
    "build_summary",
    "describe",
    "evaluate",
    "latest",
    "load_manifest",
    "load_summary",
    "new_run_id",
    "read_raw",
    "read_tidy",
    "render_all",
    "runs",
    "statistics",
    "write_json",
    "write_tidy",
]
