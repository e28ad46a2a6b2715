"""A run survives its results folder filling up or turning read-only, and a real terminal's Ctrl-C twice and hangup.

Each is injected for real into `protolab run` of the faults spec (specs/machine-faults.yaml, 8 measurements of
about 2 s): the results folder on a small tmpfs that a filler file fills mid-run, the same tmpfs remounted
read-only mid-run, and the run on a pty of its own (its controlling terminal) with `--live`, getting ^C through the
pty twice while it stops, or the pty's master closed (a hangup). For each: the run ends INVALID or INTERRUPTED
saying why, every row in rows.jsonl is whole, nothing of the lab is left (cleanup.leftovers, the host's links,
firewall and sysctls), and after `protolab clean` the folder has a summary.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import select
import subprocess
import termios
import threading
import time
from pathlib import Path

import pytest

from protolab import cleanup
from protolab.errors import EXIT_INTERRUPTED, EXIT_INVALID

from .conftest import root_links
from .test_faults_of_the_machine import PROTOLAB, REPO, SPEC, Run, _clean_leaves_nothing, _summary, machine  # noqa: F401 (the fixture)

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("machine")]  # its firewall and sysctls kept


@pytest.fixture
def small_results(tmp_path):
    """A 16 MiB tmpfs for the results (unmounted after the test, read-only or not)."""
    mnt = tmp_path / "results"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m,mode=0755", "plab-test-results", str(mnt)], check=True)
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


def _fill(folder: Path) -> int:
    """Write a filler file in `folder` until the disk is full; its size."""
    n = 0
    with (folder / "filler").open("wb", buffering=0) as f:
        try:
            while True:
                n += f.write(b"\0" * 65536)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
    return n


def _whole_rows(run_dir: Path) -> list[dict]:
    """rows.jsonl: every line a whole JSON row, the file ending at a newline."""
    data = (run_dir / "rows.jsonl").read_bytes()
    assert data.endswith(b"\n"), data[-200:]
    return [json.loads(line) for line in data.splitlines()]


def _measured_before(output: str) -> int:
    """Measurements the run reported done: one less than the last `[k/8` it started."""
    started = [int(k) for k in re.findall(r"\[(\d+)/8 ", output)]
    return max(started, default=1) - 1


def _left_nothing_then_clean(run_dir: Path) -> dict:
    assert cleanup.leftovers() == []  # the run's own teardown removed everything
    assert root_links() == [], root_links()
    _clean_leaves_nothing()  # and finishes a folder the run could not write its summary into
    summary = _summary(run_dir)
    assert not summary["valid"]
    return summary


def test_a_results_disk_that_fills_mid_run(small_results):
    r = Run(small_results)
    r.wait_for("[3/8")
    assert _fill(small_results) > 0
    assert r.finish() == EXIT_INVALID, r.output[-3000:]
    assert "No space left on device" in r.output, r.output[-3000:]
    rows = _whole_rows(r.run_dir)
    assert len(rows) >= max(2, _measured_before(r.output) - 1), (len(rows), r.output[-2000:])
    (small_results / "filler").unlink()
    summary = _left_nothing_then_clean(r.run_dir)
    # the space the run held for its end took its summary: the full disk is the reason
    assert any("No space left on device" in x for x in summary["invalid_reasons"]), summary["invalid_reasons"]
    assert len((r.run_dir / "tidy.csv").read_text().splitlines()) - 1 == len(rows)
    assert not list(r.run_dir.rglob("*.tmp")) and not (r.run_dir / ".space-reserve").exists()


def test_a_results_folder_turned_read_only_mid_run(small_results):
    r = Run(small_results)
    r.wait_for("[3/8")
    subprocess.run(["mount", "-o", "remount,ro", str(small_results)], check=True)
    try:
        assert r.finish() == EXIT_INVALID, r.output[-3000:]
        assert "Read-only file system" in r.output, r.output[-3000:]
        assert "writing the results failed" in r.output, r.output[-3000:]
        assert not (r.run_dir / "summary.json").exists()
        rows = _whole_rows(r.run_dir)
        assert len(rows) >= max(2, _measured_before(r.output) - 1), (len(rows), r.output[-2000:])
    finally:
        subprocess.run(["mount", "-o", "remount,rw", str(small_results)], check=True)
    summary = _left_nothing_then_clean(r.run_dir)  # clean writes the summary from rows.jsonl
    assert "ended without finishing" in summary["invalid_reasons"][0], summary["invalid_reasons"]
    assert len((r.run_dir / "tidy.csv").read_text().splitlines()) - 1 == len(rows)


class PtyRun:
    """`protolab run --live` with a pty as its controlling terminal (stdin, stdout, stderr), as in a terminal."""

    def __init__(self, results: Path) -> None:
        self.master, slave = os.openpty()
        self.proc = subprocess.Popen([*PROTOLAB, "run", str(SPEC), "--results", str(results), "--live"], cwd=REPO,
                                     stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
                                     preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))  # fmt: skip
        os.close(slave)
        self.data = bytearray()
        self._stop = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while not self._stop.is_set():
            if select.select([self.master], [], [], 0.1)[0]:
                try:
                    chunk = os.read(self.master, 65536)
                except OSError:  # EIO: the run closed its end
                    return
                if not chunk:
                    return
                self.data += chunk

    @property
    def output(self) -> str:
        return self.data.decode(errors="replace")

    def wait_for(self, text: str, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.proc.poll() is None:
            if text in self.output:
                return
            time.sleep(0.02)
        if text not in self.output:
            self.proc.kill()
            raise AssertionError(f"never saw {text!r} in:\n{self.output[-3000:]}")

    def type(self, keys: bytes) -> None:
        os.write(self.master, keys)

    def hang_up(self) -> None:
        """Close the terminal: the reader first (its read would hold the master open), then the master."""
        self._stop.set()
        self._reader.join()
        os.close(self.master)
        self.master = -1

    def finish(self, timeout: float = 180) -> int:
        code = self.proc.wait(timeout=timeout)
        if self.master >= 0:
            self._stop.set()
            self._reader.join()
            os.close(self.master)
        return code

    def run_dir(self, results: Path) -> Path:
        found = [p for p in results.glob("machine-faults/*") if p.is_dir()]
        assert len(found) == 1, found
        return found[0]


def test_ctrl_c_twice_on_a_terminal_while_live_stops(tmp_path):
    r = PtyRun(tmp_path)
    r.wait_for("[3/8")
    r.type(b"\x03")
    r.wait_for("tearing down")
    r.type(b"\x03")  # the live view is stopping now
    # the third once the second is answered: the teardown and the manifest's end come 1.1-1.4 s after the second
    # (measured here), so a fixed second's wait could land after the manifest was written
    r.wait_for("already stopping, cleaning up")
    r.type(b"\x03")  # and the lab is being torn down
    assert r.finish() == EXIT_INTERRUPTED, r.output[-3000:]
    assert r.output.count("already stopping, cleaning up") == 2, r.output[-3000:]
    run_dir = r.run_dir(tmp_path)
    summary = _summary(run_dir)
    assert not summary["valid"] and any("interrupted (SIGINT)" in x for x in summary["invalid_reasons"])
    assert json.loads((run_dir / "manifest.json").read_text())["signals"] == ["SIGINT"] * 3
    assert len(_whole_rows(run_dir)) >= 2
    assert "Traceback" not in r.output, r.output[-3000:]
    _left_nothing_then_clean(run_dir)


def test_a_terminal_hangup_during_a_live_run(tmp_path):
    r = PtyRun(tmp_path)
    r.wait_for("[3/8")
    r.hang_up()
    assert r.finish() == EXIT_INTERRUPTED
    run_dir = r.run_dir(tmp_path)
    summary = _summary(run_dir)
    assert not summary["valid"] and any("interrupted (SIGHUP)" in x for x in summary["invalid_reasons"]), summary
    log = (run_dir / "console.log").read_text()
    assert "tearing down" in log and "INVALID run" in log and "Traceback" not in log, log[-3000:]
    assert len(_whole_rows(run_dir)) >= 2
    _left_nothing_then_clean(run_dir)
