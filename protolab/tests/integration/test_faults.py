"""Fault schedules on a real lab: a pulled cable at the planned time, the other path unaffected."""

from __future__ import annotations

import re
import threading
import time

import pytest

from protolab import topo
from protolab.errors import EXIT_INVALID
from protolab.lab import Lab
from protolab.lab.faults import Schedule
from protolab.model.faults import Fault

from .conftest import load_summary, steal_only

pytestmark = pytest.mark.integration
INTERVAL = 0.01


def _replies(out: str) -> list[float]:
    """Unix times of the echo replies in `ping -D` output."""
    return [float(m) for m in re.findall(r"^\[(\d+\.\d+)\] \d+ bytes from", out, re.M)]


def test_link_down_up_edges_within_20_ms_and_path_b_survives(no_leftovers):
    t = topo.build("dual_homed", {"hosts": 2, "rate": "100Mbit"})
    with Lab(t, "itest", {h.name: "protolab/node:latest" for h in t.hosts}) as lab:
        f = Fault.model_validate({"link": ["h2", "s1"], "flap": {"down": "0.8s", "up": "10s", "offset": "0.6s"}})
        events = f.events(2.4)
        out: dict[str, str] = {}

        def ping(dst: str) -> None:
            out[dst] = lab.exec("h1", ["ping", "-D", "-n", "-i", str(INTERVAL), "-W", "0.2", "-w", "3", dst])[1]

        threads = [threading.Thread(target=ping, args=(d,)) for d in ("10.0.1.2", "10.0.2.2")]
        for th in threads:
            th.start()
        time.sleep(0.3)  # pings are under way
        schedule = Schedule(events, lab)
        schedule.start(time.monotonic())
        for th in threads:
            th.join()
        done = schedule.stop()
        down, up = (e for e in done if e.action == "down"), (e for e in done if e.action == "up")
        down, up = next(down), next(up)
        assert abs(down.actual - down.at) < 0.02 and abs(up.actual - up.at) < 0.02, (down, up)
        a = _replies(out["10.0.1.2"])
        gaps = [(x, y) for x, y in zip(a, a[1:], strict=False) if y - x > 0.2]
        assert len(gaps) == 1, gaps
        last_before, first_after = gaps[0]
        # the outage starts between the last reply and the next probe, and ends with the first reply after
        assert -0.02 - INTERVAL <= down.wall - last_before <= 0.02 + INTERVAL, (down.wall, last_before)
        assert -0.02 <= first_after - up.wall <= 0.02 + INTERVAL, (up.wall, first_after)
        b = _replies(out["10.0.2.2"])
        assert not [(x, y) for x, y in zip(b, b[1:], strict=False) if y - x > 0.2], "path B lost packets"


def test_runner_executes_records_and_exports_a_fault_schedule(tmp_path, no_leftovers):
    import csv
    import json
    import subprocess
    import sys
    from pathlib import Path

    from protolab.results.store import latest

    spec = Path(__file__).parent / "specs" / "flap.yaml"
    out = subprocess.run([sys.executable, "-m", "protolab.cli", "run", str(spec), "--results", str(tmp_path)],
                         capture_output=True, text=True, timeout=300)  # fmt: skip
    run = latest(tmp_path, "flap")
    if out.returncode == EXIT_INVALID and run is not None and (why := steal_only(load_summary(run))):
        pytest.skip(why)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    events = list(csv.DictReader((run / "faults.csv").open()))
    assert [(e["link"], e["action"]) for e in events] == [("h1-s1", "set"), ("h2-s1", "down"), ("h2-s1", "up")]
    said = [(e["action"], e["timing_error_seconds"], e["stolen_seconds"], e["error"]) for e in events]
    assert all(abs(float(e["timing_error_seconds"])) < 0.02 and not e["error"] for e in events), said
    summary = json.loads((run / "summary.json").read_text())
    assert summary["valid"] and summary["checks"][0]["passed"], summary
    # Prometheus scraped the orchestrator's gauges: the outage is in the run's raw series
    raw = [r for r in csv.DictReader((run / "raw" / "series.csv").open()) if r["series"] == "fault_active"]
    down = [float(r["value"]) for r in raw if json.loads(r["labels"]).get("link") == "h2-s1"]
    assert 1.0 in down and 0.0 in down, raw
    # an outage of 1 s in a 4 s UDP flow at 4 Mbit/s (500 datagrams/s): about a quarter is lost
    loss = json.loads((run / "summary.json").read_text())["statistics"]["p000"]["f1_loss_ratio"]["mean"]
    assert 0.15 < loss < 0.40, loss
