"""Appends to rows.jsonl and raw/series.csv are whole lines or fail loudly; atomic writes leave no torn file and
no temporary file behind.

A short write and a full disk are faked at os.write, for the file under test only (by its /proc/self/fd link).
"""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path

import pytest

from protolab.results.store import JsonLog, RawWriter, atomic_open, read_raw, write_json, write_tidy

REAL_WRITE = os.write


def _fd_path(fd: int) -> str:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return ""


def _fake_writes(monkeypatch, path: Path, plan: list[str]) -> list[int]:
    """os.write on `path` follows `plan` in turn, then writes normally: "half" writes half of what it is given
    (at least a byte), "enospc" raises ENOSPC. Returns the sizes asked for."""
    asked: list[int] = []

    def write(fd: int, data) -> int:
        if _fd_path(fd) != str(path) or not plan:
            return REAL_WRITE(fd, data)
        asked.append(len(data))
        what = plan.pop(0)
        if what == "enospc":
            raise OSError(errno.ENOSPC, "No space left on device")
        return REAL_WRITE(fd, bytes(data[: max(1, len(data) // 2)]))

    monkeypatch.setattr(os, "write", write)
    return asked


def test_a_short_write_is_carried_on_to_the_whole_line(tmp_path, monkeypatch):
    log = JsonLog(tmp_path / "rows.jsonl")
    log.append({"point": "p000", "repetition": 0})
    asked = _fake_writes(monkeypatch, log.path, ["half", "half", "half"])
    log.append({"point": "p001", "repetition": 0, "x": "y" * 100})
    log.append({"point": "p002", "repetition": 0})
    line = len(json.dumps({"point": "p001", "repetition": 0, "x": "y" * 100})) + 1
    assert asked == [line, line - line // 2, line - line // 2 - (line - line // 2) // 2]  # each time the rest
    assert [r["point"] for r in log.read()] == ["p000", "p001", "p002"]
    assert log.path.read_bytes().count(b"\n") == 3


def test_a_full_disk_mid_line_raises_and_leaves_the_file_at_its_last_whole_line(tmp_path, monkeypatch, caplog):
    log = JsonLog(tmp_path / "rows.jsonl")
    log.append({"point": "p000", "repetition": 0})
    before = log.path.read_bytes()
    _fake_writes(monkeypatch, log.path, ["half", "enospc"])
    with pytest.raises(OSError) as exc:
        log.append({"point": "p001", "repetition": 0, "x": "y" * 100})
    assert exc.value.errno == errno.ENOSPC
    assert log.path.read_bytes() == before  # the half written was cut off again
    log.append({"point": "p002", "repetition": 0})  # space again: the next row is whole, nothing joined to it
    assert [r["point"] for r in log.read()] == ["p000", "p002"]
    assert "torn" not in caplog.text


def test_a_torn_line_left_by_a_killed_process_is_cut_before_the_next_append(tmp_path, caplog):
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b'{"point": "p000", "repetition": 0}\n{"point": "p001", "rep')
    JsonLog(path).append({"point": "p002", "repetition": 0})
    assert [r["point"] for r in JsonLog(path).read()] == ["p000", "p002"]
    assert "a torn last line (22 bytes) cut off" in caplog.text


def test_a_torn_first_line_is_cut_whole(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b"x" * 70000)  # longer than one backwards read
    JsonLog(path).append({"point": "p000", "repetition": 0})
    assert path.read_bytes() == b'{"point": "p000", "repetition": 0}\n'


def test_the_raw_series_stays_whole_rows_on_a_full_disk(tmp_path, monkeypatch):
    path = tmp_path / "raw" / "series.csv"
    w = RawWriter(path)
    w.write("p000", 0, "probe", "rtt", {"node": "h1"}, 1.0, 0.002)
    _fake_writes(monkeypatch, path, ["half", "enospc"])
    with pytest.raises(OSError):
        w.write_rows([("p000", 0, "probe", "rtt", {"node": "h1"}, float(t), 0.002) for t in range(2, 50)])
    w.write("p001", 0, "probe", "rtt", {"node": "h1"}, 60.0, 0.003)
    w.close()  # nothing buffered: closing cannot fail on a full disk
    w.close()
    assert [(r["point"], r["timestamp_seconds"]) for r in read_raw(path)] == [("p000", 1.0), ("p001", 60.0)]
    with pytest.raises(ValueError, match="closed"):
        w.write("p002", 0, "probe", "rtt", {}, 61.0, 0.0)


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def test_an_atomic_write_that_fails_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    path = tmp_path / "summary.json"
    write_json(path, {"valid": True})
    with pytest.raises(RuntimeError), atomic_open(path) as f:
        f.write('{"valid": fal')
        raise RuntimeError("the caller failed mid-write")
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (_ for _ in ()).throw(OSError(errno.ENOSPC, "No space left")))
    with pytest.raises(OSError):
        write_json(path, {"valid": False})
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert json.loads(path.read_text()) == {"valid": True}
    assert _leftovers(tmp_path) == []


def test_atomic_writes_fsync_the_file_and_its_folder_with_unique_temporary_names(tmp_path, monkeypatch):
    synced: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append("dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    path = tmp_path / "tidy.csv"
    with atomic_open(path) as a, atomic_open(path) as b:  # two writers at once: two temporary files
        assert len(_leftovers(tmp_path)) == 2
        a.write("a\n")
        b.write("b\n")
    assert path.read_text() == "a\n"  # the last to finish (a) wins, whole
    assert synced == ["file", "dir", "file", "dir"]
    write_tidy(path, [{"point": "p000", "repetition": 0, "x": 1.0}], [], ["x"])
    assert path.read_text() == "point,repetition,x\np000,0,1.0\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert _leftovers(tmp_path) == []
