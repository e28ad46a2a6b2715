"""The results folder: `results/<experiment>/<run-id>/` and the files in it.

    manifest.json     what ran (written by the runner)
    raw/series.csv    raw Prometheus samples, long format (streamed by RawWriter)
    tidy.csv          one row per sweep point x repetition
    summary.json      validity, checks, statistics
    tables/, plots/, report.html   derived from the three files above (see render.py)

Run ids are UTC timestamps plus a random suffix (`20261122T031500Z-ab12`), so they sort by start time.

This module owns the format: the file names (MANIFEST, SUMMARY, TIDY, RAW, ROWS, FAULTS, ...), their writers and
readers, and SCHEMA_VERSION, written into manifest.json, summary.json, derived.json and the references. The bump
rule: SCHEMA_VERSION goes up when a file's meaning changes so that an older protolab would misread it (a field
renamed or removed, a unit or a column's meaning changed); a new field does not bump it (readers ignore what
they do not know). A reader refuses a version it does not know (load_json).
"""

from __future__ import annotations

import csv
import io
import json
import logging
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import ProtolabError
from ..jsonio import (  # noqa: F401  (re-exported: the results format's own writers)
    RUN_ID_RE,
    JsonLog,
    append_lines,
    atomic_open,
    fsync_dir,
    new_run_id,
    write_json,
    write_text_atomic,
)
from .display import axis_str, is_measured

log = logging.getLogger(__name__)
SCHEMA_VERSION = 1
MANIFEST = "manifest.json"
SUMMARY = "summary.json"
TIDY = "tidy.csv"
FAULTS = "faults.csv"  # what a fault schedule did when (write_faults_csv)
DERIVED = "derived.json"  # sums, ratios and fits of the spec's `derived` (results.derived)
REPORT = "report.html"  # the one-file report (results.render)
FAULT_TIMELINE = "plots/fault_timeline.png"
COMPARE_DIR = "compare"  # a run's comparison with its reference: compare.{md,html,json}
CONSOLE_LOG = "console.log"  # what the run printed (orchestrator.session)
RAW = "raw/series.csv"
RAW_COLUMNS = ("point", "repetition", "phase", "series", "labels", "timestamp_seconds", "value")
ID_COLUMNS = ("point", "repetition")
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


class ResultsError(ProtolabError):
    """A results folder or file that cannot be read as the format says."""


def load_json(path: Path) -> dict[str, Any]:
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except OSError as exc:
        raise ResultsError(f"{path}: cannot read: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise ResultsError(f"{path}: not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ResultsError(f"{path}: expected a JSON object")
    version = data.get("schema_version")
    if version is not None and version != SCHEMA_VERSION:
        raise ResultsError(f"{path}: schema_version {version!r}, this protolab reads {SCHEMA_VERSION}")
    return data


def load_manifest(run_dir: Path) -> dict[str, Any]:
    """manifest.json of a run folder (checked for schema_version 1 and the keys reports need)."""
    data = load_json(Path(run_dir) / MANIFEST)
    missing = [k for k in ("experiment", "run_id", "spec", "points") if k not in data]
    if missing:
        raise ResultsError(f"{Path(run_dir) / MANIFEST}: missing {', '.join(missing)}")
    return data


def load_summary(run_dir: Path) -> dict[str, Any]:
    """summary.json of a run folder."""
    return load_json(Path(run_dir) / SUMMARY)


def _cell(value: Any) -> str:
    """A CSV cell: None/NaN empty, floats round-trip exactly (repr), axis mappings as JSON."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        return "" if math.isnan(value) else repr(value)
    if isinstance(value, int):
        return str(value)
    return axis_str(value)


def write_tidy(path: Path, rows: Iterable[Mapping[str, Any]], axes: Sequence[str], columns: Sequence[str]) -> Path:
    """tidy.csv: `point,repetition,<axes>,<columns>`; a missing or None/NaN value is an empty cell.

    Keys of a row that are not in the header (a column the spec does not declare) are left out, with a
    warning: this runs at the end of a long run, and the declared columns must not be lost.
    """
    path = Path(path)
    header = [*ID_COLUMNS, *axes, *columns]
    if len(set(header)) != len(header):
        raise ValueError(f"tidy columns repeat: {header}")
    with atomic_open(path, newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        for i, row in enumerate(rows):
            extra = set(row) - set(header)
            if extra:
                log.warning("%s: row %d: left out columns not in the header: %s", path, i, sorted(extra))
            w.writerow([_cell(row.get(c)) for c in header])
    return path


def read_tidy(path: Path, axes: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """Rows of tidy.csv: point as str, repetition as int, axes as str, measured columns as float (empty: None).

    Without `axes`, a column is measured when its name ends in a unit suffix (`_bits_per_second`,
    `_packets_per_second`, `_ratio`, `_seconds`, `_total`, `_bytes`) and an axis otherwise.
    """
    path = Path(path)
    try:
        f = path.open(newline="")
    except OSError as exc:
        raise ResultsError(f"{path}: cannot read: {exc.strerror}") from None
    with f:
        reader = csv.DictReader(f)
        header = reader.fieldnames or []
        if list(header[:2]) != list(ID_COLUMNS):
            raise ResultsError(f"{path}: the header must start with point,repetition (has {header[:2]})")
        rest = header[2:]
        axis_set = set(axes) if axes is not None else {c for c in rest if not is_measured(c)}
        out: list[dict[str, Any]] = []
        for lineno, raw in enumerate(reader, start=2):
            row: dict[str, Any] = {"point": raw["point"]}
            try:
                row["repetition"] = int(raw["repetition"])
                for c in rest:
                    v = raw[c]
                    if c in axis_set:
                        row[c] = v
                    else:
                        row[c] = None if v is None or v.strip() == "" else float(v)
            except ValueError as exc:
                raise ResultsError(f"{path}:{lineno}: {exc}") from None
            out.append(row)
    return out


def tidy_header(path: Path) -> list[str]:
    with Path(path).open(newline="") as f:
        return next(csv.reader(f), [])


class RawWriter:
    """Appends raw samples to raw/series.csv as they arrive; the header is written once, for a new file.

    Use as a context manager, or call close(). Each write_rows() call appends whole lines (append_lines, not
    fsynced): a full disk raises there, and the file still ends at its last whole row.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.closed = False
        if not self.path.exists() or self.path.stat().st_size == 0:
            self._append([RAW_COLUMNS])

    def _append(self, rows: list[Sequence[Any]]) -> None:
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerows(rows)
        append_lines(self.path, buf.getvalue().encode(), sync=False)

    def write(
        self,
        point: str,
        repetition: int,
        phase: str,
        series: str,
        labels: Mapping[str, Any],
        timestamp_seconds: float,
        value: float,
    ) -> None:
        self.write_rows([(point, repetition, phase, series, labels, timestamp_seconds, value)])

    def write_rows(self, rows: Iterable[Sequence[Any] | Mapping[str, Any]]) -> int:
        """Rows as tuples in RAW_COLUMNS order or as mappings with those keys; returns how many."""
        if self.closed:
            raise ValueError(f"{self.path}: the raw writer is closed")
        out: list[Sequence[Any]] = []
        for row in rows:
            if isinstance(row, Mapping):
                row = [row[c] for c in RAW_COLUMNS]
            if len(row) != len(RAW_COLUMNS):
                raise ValueError(f"a raw row has {len(RAW_COLUMNS)} fields {RAW_COLUMNS}, got {len(row)}")
            point, rep, phase, series, labels, ts, value = row
            if not isinstance(labels, str):
                labels = json.dumps(dict(labels), sort_keys=True, separators=(",", ":"))
            out.append([point, int(rep), phase, series, labels, _cell(float(ts)), _cell(float(value))])
        if out:
            self._append(out)
        return len(out)

    def close(self) -> None:
        """Nothing is buffered: closing only refuses later writes (and never fails)."""
        self.closed = True

    def __enter__(self) -> RawWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_raw(path: Path) -> list[dict[str, Any]]:
    """raw/series.csv back: labels as a dict, repetition int, timestamp and value float."""
    with Path(path).open(newline="") as f:
        return [
            {
                "point": r["point"],
                "repetition": int(r["repetition"]),
                "phase": r["phase"],
                "series": r["series"],
                "labels": json.loads(r["labels"]) if r["labels"] else {},
                "timestamp_seconds": float(r["timestamp_seconds"]),
                "value": float(r["value"]) if r["value"] != "" else float("nan"),
            }
            for r in csv.DictReader(f)
        ]


class RunDir:
    """One run's folder. `RunDir.create` makes a new one; `RunDir(path)` opens an existing one."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    @classmethod
    def create(cls, results_root: Path, experiment: str, run_id: str | None = None) -> RunDir:
        """Make `results_root/<experiment>/<run_id>/` (and raw/); never reuses an existing folder.

        Without run_id a fresh one is made (retrying on the unlikely collision); an explicit run_id that
        exists already raises FileExistsError.
        """
        for what, name in (("experiment", experiment), ("run id", run_id)):
            if name is not None and (not _SAFE_NAME.match(name) or name in (".", "..")):
                raise ValueError(f"{what} {name!r}: use letters, digits, '_', '-', '.' only")
        parent = Path(results_root) / experiment
        parent.mkdir(parents=True, exist_ok=True)
        for _ in range(100):
            rid = run_id or new_run_id()
            path = parent / rid
            try:
                path.mkdir()
            except FileExistsError:
                if run_id is not None:
                    raise FileExistsError(f"{path}: a run with this id exists; refusing to overwrite it") from None
                continue
            (path / "raw").mkdir()
            return cls(path)
        raise FileExistsError(f"{parent}: could not find a free run id")

    @property
    def run_id(self) -> str:
        return self.path.name

    @property
    def experiment(self) -> str:
        return self.path.parent.name

    def write_json(self, name: str, obj: Any) -> Path:
        return write_json(self.path / name, obj)

    def raw_writer(self) -> RawWriter:
        return RawWriter(self.path / RAW)

    def write_tidy(self, rows: Iterable[Mapping[str, Any]], axes: Sequence[str], columns: Sequence[str]) -> Path:
        return write_tidy(self.path / TIDY, rows, axes, columns)

    def read_tidy(self, axes: Iterable[str] | None = None) -> list[dict[str, Any]]:
        if axes is None and (self.path / MANIFEST).exists():
            axes = list((load_manifest(self.path)["spec"].get("sweep") or {}).keys())
        return read_tidy(self.path / TIDY, axes)

    def manifest(self) -> dict[str, Any]:
        return load_manifest(self.path)

    def summary(self) -> dict[str, Any]:
        return load_summary(self.path)

    def __repr__(self) -> str:
        return f"RunDir({str(self.path)!r})"


def runs(results_root: Path, experiment: str) -> list[Path]:
    """Finished-or-running run folders of an experiment (those with a manifest.json), oldest first by id."""
    parent = Path(results_root) / experiment
    if not parent.is_dir():
        return []
    return sorted(p for p in parent.iterdir() if p.is_dir() and (p / MANIFEST).is_file())


def latest(results_root: Path, experiment: str) -> Path | None:
    """The newest run folder (largest run id, i.e. latest start) that has a manifest.json, or None."""
    found = runs(results_root, experiment)
    return found[-1] if found else None


ROWS = "rows.jsonl"  # measured rows as they are measured; tidy.csv is written from them
RESERVE = ".space-reserve"  # disk held by a running run for its end (orchestrator.experiment.reserve_space)
RESERVE_BYTES = 4 << 20
FAULTS_LOG = "raw/faults.jsonl"


def write_faults_csv(path: Path, fault_rows: list[dict[str, Any]]) -> None:
    """faults.csv, atomically: every column any row has, in the order they first appear (rows carried on by
    --resume from a run of an earlier protolab may lack the columns added since: left empty)."""
    columns = list(dict.fromkeys(k for r in fault_rows for k in r))
    with atomic_open(path, newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns, restval="")
        w.writeheader()
        w.writerows(fault_rows)
