"""The helpers are watched: SIGKILL a link emulator (protolab-linkem), the NIC filter model (protolab-nicfilter)
or a node's metrics agent (protolab-agent, the container's main process) in the middle of a real `protolab run`,
and the run comes out INVALID with the helper and its node named in summary.json, with nothing left behind."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from protolab import cleanup, engine
from protolab.errors import EXIT_INVALID

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[3]
SPEC = """\
name: helpers-watched
description: integration test of the watched helpers (a helper killed mid-measurement)
seed: {document: null, reproduces: "platform test: a helper that dies makes its measurement invalid"}
topology: {kind: switched, params: {hosts: 3, rate: 100Mbit}}
impairment_backend: fallback
impairments:
  - {link: [h1, s1], direction: forward, delay: 5ms}
self_check: false
settle: 0.2s
warmup: 0.2s
phases:
  - name: probe
    tasks:
      - {kind: ping, name: p, client: h1, server: h2, interval: 10ms, duration: 8s, timeout: 1s}
checks:
  - {name: replies came back, column: p_loss_ratio, max: 0.2}
profiles: {quick: {}}
"""


def _child(run: subprocess.Popen, exe: str) -> psutil.Process:
    """The run's helper process of that executable."""
    for p in psutil.Process(run.pid).children(recursive=True):
        try:
            if Path(p.exe()).name == exe:
                return p
        except psutil.Error:
            continue
    raise AssertionError(f"no {exe} under the run")


def _agent(node: str) -> psutil.Process:
    """The node's metrics agent: the one child of its container's docker-init."""
    init = engine.client().containers.get(f"plab-{node}").attrs["State"]["Pid"]
    (agent,) = psutil.Process(init).children()
    assert agent.name() == "protolab-agent", agent
    return agent


@pytest.mark.parametrize(
    ("helper", "named"),
    [
        ("linkem", r"protolab-linkem for h1-eth0>\S+ \(pid \d+, the link into node s1\) ended \(killed by signal 9\)"),
        ("nicfilter", r"protolab-nicfilter lab \(pid \d+, the NIC filters of h1-eth0, h2-eth0, h3-eth0\) ended "
                      r"\(killed by signal 9\)"),
        ("agent", r"the metrics agent of node h3 \(plab-h3:9100\) answered no scrape for [\d.]+ s"),
    ],
    ids=["linkem", "nicfilter", "agent"],
)  # fmt: skip
def test_a_helper_killed_mid_measurement_makes_it_invalid_naming_it(tmp_path, no_leftovers, helper, named):
    spec = tmp_path / "helpers-watched.yaml"
    spec.write_text(SPEC)
    run = subprocess.Popen([sys.executable, "-m", "protolab.cli", "run", str(spec), "--results", str(tmp_path)],
                           cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           start_new_session=True)  # fmt: skip
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(iter(run.stdout.readline, "")), daemon=True).start()
    try:
        deadline = time.monotonic() + 180
        while "] p000" not in "".join(lines):  # the measurement has begun
            assert run.poll() is None and time.monotonic() < deadline, "".join(lines)[-3000:]
            time.sleep(0.05)
        time.sleep(3)  # into the 8 s phase
        victim = {
            "linkem": lambda: _child(run, "protolab-linkem"),
            "nicfilter": lambda: _child(run, "protolab-nicfilter"),
            "agent": lambda: _agent("h3"),
        }[helper]()
        os.kill(victim.pid, signal.SIGKILL)
        code = run.wait(timeout=180)
    finally:
        if run.poll() is None:
            run.kill()
    time.sleep(0.3)
    out = "".join(lines)
    assert code == EXIT_INVALID, out[-3000:]
    folder = Path(re.search(r"results -> (\S+)", out).group(1))
    summary = json.loads((folder / "summary.json").read_text())
    assert not summary["valid"]
    reasons = [r for r in summary["invalid_reasons"] if r.startswith("p000 rep 0")]
    assert any(re.search(named, r) for r in reasons), summary["invalid_reasons"]
    assert cleanup.leftovers() == []
