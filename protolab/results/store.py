"""The results folder: `results/<experiment>/<run-id>/` and the files in it.

    manifest.json     what ran (written by the runner)
    raw/series.csv    raw Prometheus samples, long format (streamed by RawWriter)
    tidy.csv          one row per sweep point x repetition
    summary.json      validity, checks, statistics
    tables/, plots/, report.html   derived from the three files above (see render.py)

Run ids are UTC timestamps plus a random suffix (`20261122T031500Z-ab12`), so they sort by start time.
"""

from __future__ import annotations

import csv
import errno
import fcntl
import io
import json
import logging
import math
import os
import re
import secrets
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from ..errors import ProtolabError
from .display import axis_str, is_measured

log = logging.getLogger(__name__)
SCHEMA_VERSION = 1
MANIFEST = "manifest.json"
SUMMARY = "summary.json"
TIDY = "tidy.csv"
RAW = "raw/series.csv"
RAW_COLUMNS = ("point", "repetition", "phase", "series", "labels", "timestamp_seconds", "value")
ID_COLUMNS = ("point", "repetition")
RUN_ID_RE = re.compile(r"^\d{8}T\d{6}Z-[0-9a-f]{4}$")
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


class ResultsError(ProtolabError):
    """A results folder or file that cannot be read as the format says."""


def new_run_id(now: datetime | None = None) -> str:
    """'20261122T031500Z-ab12': UTC start time, then 4 random hex digits."""
    now = (now or datetime.now(UTC)).astimezone(UTC)
    return f"{now:%Y%m%dT%H%M%SZ}-{secrets.token_hex(2)}"


def _jsonable(obj: Any) -> Any:
    """NaN and infinities become null (JSON has no such numbers)."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, Mapping):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    return obj


def fsync_dir(path: Path) -> None:
    """fsync a folder, so that a rename or a new file in it survives a crash of the machine."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextmanager
def atomic_open(path: Path, mode: int = 0o644, newline: str | None = None) -> Iterator[IO[str]]:
    """A text file that replaces `path` whole or not at all: written under a unique temporary name in the same
    folder (`.<name>.<random>.tmp`), flushed and fsynced, renamed over `path`, and the folder fsynced. On any
    failure (a full disk, a read-only folder, an exception of the caller) the temporary file is removed and
    `path` is what it was."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w", newline=newline) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def write_text_atomic(path: Path, text: str, mode: int = 0o644) -> Path:
    """`text` as the whole of `path`, atomically (atomic_open)."""
    with atomic_open(path, mode) as f:
        f.write(text)
    return Path(path)


def write_json(path: Path, obj: Any) -> Path:
    """Write atomically (atomic_open), indented, NaN as null, a newline at the end."""
    return write_text_atomic(path, json.dumps(_jsonable(obj), indent=2, ensure_ascii=False, allow_nan=False) + "\n")


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


def _cut_torn_tail(fd: int, path: Path) -> None:
    """A file that does not end in a newline (a process killed mid-write) is cut back to its last whole line,
    so that the next line appended is not joined to the torn one."""
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return
    end = size
    while end > 0:
        start = max(0, end - 65536)
        i = os.pread(fd, end - start, start).rfind(b"\n")
        if i >= 0:
            break
        end = start
    keep = start + i + 1 if end > 0 else 0
    log.warning("%s: a torn last line (%d bytes) cut off before appending", path, size - keep)
    os.ftruncate(fd, keep)


def append_lines(path: Path, data: bytes, sync: bool = True, mode: int = 0o644) -> None:
    """Append `data` (whole lines, ending in a newline) to `path`: all of it, or nothing and the error raised.

    The file is locked (flock) while appending; a torn last line left by a killed process is cut off first; a
    short write is carried on until everything is written; on any failure (ENOSPC, EROFS, EIO, a signal) the file
    is cut back to where it ended, i.e. at its last whole line. With `sync`, the file is fsynced before returning.
    """
    if not data.endswith(b"\n"):
        raise ValueError(f"{path}: append_lines takes whole lines (ending in a newline)")
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, mode)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        _cut_torn_tail(fd, Path(path))
        end = os.fstat(fd).st_size
        try:
            view = memoryview(data)
            while view:
                view = view[_write(fd, view) :]
            if sync:
                os.fsync(fd)
        except BaseException:
            try:
                os.ftruncate(fd, end)
            except OSError as exc:
                log.error("%s: cannot cut a partly written line off (%s): the next append cuts it", path, exc)
            raise
    finally:
        os.close(fd)


def _write(fd: int, data: memoryview) -> int:
    n = os.write(fd, data)
    if n <= 0:
        raise OSError(errno.EIO, f"write of {len(data)} bytes wrote nothing")
    return n


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


class JsonLog:
    """An append-only JSON-lines file, each line whole and fsynced as it is written: what a run has measured is on
    disk before the next measurement starts, whatever happens to the process afterwards; a line that cannot be
    written whole (a full disk) raises and leaves no part of itself."""

    def __init__(self, path: Path, mode: int = 0o644) -> None:
        self.path, self.mode = Path(path), mode

    def append(self, obj: Mapping[str, Any]) -> None:
        """One line, whole and fsynced, or an OSError and the file as it was (append_lines)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        append_lines(self.path, (json.dumps(_jsonable(obj), allow_nan=False) + "\n").encode(), mode=self.mode)

    def read(self) -> list[dict[str, Any]]:
        """Every complete line (a line torn by a crash is left out)."""
        try:
            lines = self.path.read_text().splitlines()
        except FileNotFoundError:
            return []
        out = []
        for line in lines:
            try:
                out.append(json.loads(line))
            except ValueError:
                log.warning("%s: a torn line left out", self.path)
        return out
