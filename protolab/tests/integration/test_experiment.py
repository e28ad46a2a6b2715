"""End to end: `make experiment NAME=smoke`, Ctrl-C mid-run, SIGKILL mid-run + `make clean`."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from protolab import cleanup
from protolab.errors import EXIT_INVALID
from protolab.results.store import latest

from .conftest import steal_only

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[3]
PROTOLAB = [sys.executable, "-m", "protolab.cli"]


def _start_run(results: Path) -> tuple[subprocess.Popen, list[str]]:
    """Start `protolab run smoke` in the background; its output lines collect in the returned list."""
    proc = subprocess.Popen([*PROTOLAB, "run", "smoke", "--profile", "quick", "--results", str(results)], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)  # fmt: skip
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(iter(proc.stdout.readline, "")), daemon=True).start()
    return proc, lines


def _wait_for(proc: subprocess.Popen, lines: list[str], text: str, timeout: float) -> None:
    """Until `text` appears in the child's output (the child is killed when it does not)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(text in line for line in list(lines)):
            return
        if proc.poll() is not None:
            break
        time.sleep(0.2)
    proc.kill()
    proc.wait()
    cleanup.clean(verbose=False)
    raise AssertionError(f"never saw {text!r} in:\n{''.join(lines)[-3000:]}")


def test_make_experiment_smoke(tmp_path, no_leftovers):
    """The README's first command, as a user types it; the run must be valid and every check pass."""
    out = subprocess.run(["make", "experiment", "NAME=smoke"], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert "report:" in out.stdout, out.stdout[-4000:] + out.stderr[-4000:]
    run = latest(REPO / "results", "smoke")
    assert run is not None and run.name in out.stdout  # this run's, not an earlier one's
    summary = json.loads((run / "summary.json").read_text())
    manifest = json.loads((run / "manifest.json").read_text())
    failed = [c for c in summary["checks"] if not c["passed"]]
    why = steal_only(summary) if out.returncode == EXIT_INVALID else None  # the rest is still checked, then skipped
    if not why:
        assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-4000:]
        assert summary["valid"], summary["invalid_reasons"]
    assert not failed, failed
    # every topology x rate was checked: 4 switched, 4 dual-homed (two flows each), 4 hub
    assert len(summary["checks"]) == 20
    assert {c["values"]["topology"] for c in summary["checks"]} == {"hub", "switched", "dual_homed"}
    for f in ("tidy.csv", "raw/series.csv", "tables/throughput.csv", "tables/throughput.md", "plots/throughput.png",
              "report.html"):  # fmt: skip
        assert (run / f).stat().st_size > 0, f
    assert manifest["git_commit"]["commit"] and manifest["kernel"] and manifest["images"]
    assert manifest["impairment_backend"]
    # every task's figures, and the tool's own report they came from, in raw/tasks/
    tasks = [json.loads(f.read_text()) for f in sorted((run / "raw" / "tasks").glob("*.json"))]
    rows = (run / "tidy.csv").read_text().strip().splitlines()[1:]
    assert len(tasks) == 2 * len(rows) > 0  # two iperf3 flows per measurement
    for t in tasks:
        assert t["kind"] == "iperf3" and t["tool"]["client"]["end"] and t["tool"]["server"]["end"], t["task"]
        assert t["figures"] and all(k.startswith(t["task"] + "_") for k in t["figures"])
    if why:
        pytest.skip(why)


def test_ctrl_c_tears_down_and_marks_the_run(tmp_path, no_leftovers):
    proc, lines = _start_run(tmp_path)
    _wait_for(proc, lines, "[2/12", timeout=120)
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=120)
    assert proc.returncode == 130, "".join(lines)[-3000:]
    run = latest(tmp_path, "smoke")
    summary = json.loads((run / "summary.json").read_text())
    assert not summary["valid"] and any("interrupted" in r for r in summary["invalid_reasons"])
    assert cleanup.leftovers() == []


def test_sigkill_then_make_clean_leaves_nothing(tmp_path):
    proc, lines = _start_run(tmp_path)
    _wait_for(proc, lines, "[1/12", timeout=120)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    left = cleanup.leftovers()
    assert any(item.startswith("container plab-h") for item in left), left  # the lab really was up
    out = subprocess.run(["make", "clean"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert cleanup.leftovers() == []
    # and the machine-level view a user would take
    assert "plab-" not in subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    assert subprocess.run(["docker", "ps", "-aq", "--filter", "label=protolab.managed=true"], capture_output=True,
                          text=True).stdout.strip() == ""  # fmt: skip


def test_clean_on_a_clean_machine_is_a_no_op():
    out = subprocess.run(["make", "clean"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "nothing of protolab's is left" in out.stdout, out.stdout + out.stderr
