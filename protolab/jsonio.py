"""Small, dependable file I/O shared by the lab and the results folder: JSON written atomically, append-only
JSON-lines files whose lines are whole or absent, and run ids. It imports nothing of protolab's results package
(nor matplotlib or jinja2), so a lab keeper or the ledger can use it without loading the report renderer."""

from __future__ import annotations

import errno
import fcntl
import json
import logging
import math
import os
import re
import secrets
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

log = logging.getLogger(__name__)
RUN_ID_RE = re.compile(r"^\d{8}T\d{6}Z-[0-9a-f]{4}$")


def new_run_id(now: datetime | None = None) -> str:
    """'20261122T031500Z-ab12': UTC start time, then 4 random hex digits."""
    now = (now or datetime.now(UTC)).astimezone(UTC)
    return f"{now:%Y%m%dT%H%M%SZ}-{secrets.token_hex(2)}"


def jsonable(obj: Any) -> Any:
    """NaN and infinities become null (JSON has no such numbers)."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, Mapping):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
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
    return write_text_atomic(path, json.dumps(jsonable(obj), indent=2, ensure_ascii=False, allow_nan=False) + "\n")


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


class JsonLog:
    """An append-only JSON-lines file, each line whole and fsynced as it is written: what a run has measured is on
    disk before the next measurement starts, whatever happens to the process afterwards; a line that cannot be
    written whole (a full disk) raises and leaves no part of itself."""

    def __init__(self, path: Path, mode: int = 0o644) -> None:
        self.path, self.mode = Path(path), mode

    def append(self, obj: Mapping[str, Any]) -> None:
        """One line, whole and fsynced, or an OSError and the file as it was (append_lines)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        append_lines(self.path, (json.dumps(jsonable(obj), allow_nan=False) + "\n").encode(), mode=self.mode)

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
