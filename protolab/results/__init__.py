"""Results of a run: the folder format, statistics, checks, and the tables/plots/report derived from it.

The runner: `RunDir.create(root, name)`, then `write_json("manifest.json", ...)`, `raw_writer()` for the
raw samples, `write_tidy(rows, axes, columns)`, `write_json("summary.json", build_summary(...))` and
finally `render_all(path)`, which `protolab report` can rerun on any results folder.
"""

from .. import lazy

# each name's home, imported on first use: lab-side code reads and writes results folders (results.salvage,
# results.store) without loading the renderer (matplotlib, jinja2)
_STORE = ("RawWriter", "ResultsError", "RunDir", "latest", "load_manifest", "load_summary", "new_run_id", "read_raw",
          "read_tidy", "runs", "write_json", "write_tidy")  # fmt: skip
_HOMES = {"describe": "..stats", "applies": ".checks", "build_summary": ".checks", "evaluate": ".checks",
          "statistics": ".checks", "Display": ".display", "axis_str": ".display", "render_all": ".render",
          **dict.fromkeys(_STORE, ".store")}  # fmt: skip


__getattr__ = lazy.names(__name__, globals(), _HOMES)


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
