"""The self-check on a real lab (it passes when the link does what it was told, and catches it when
not), and the link-fidelity experiment's quick profile through the runner."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from protolab import topo
from protolab.lab import Lab, selfcheck
from protolab.model.impairment import Impairment, LinkImpairment

pytestmark = pytest.mark.integration


def _lab(*items: dict) -> Lab:
    t = topo.build("switched", {"hosts": 3, "rate": "1Gbit"})
    imps = [LinkImpairment.model_validate(i) for i in items]
    return Lab(t, "itest", {h.name: "protolab/node:latest" for h in t.hosts}, impairments=imps)


def test_self_check_passes_a_faithful_link_and_catches_one_that_is_not(no_leftovers):
    with _lab({"link": ["h1", "s1"], "direction": "forward", "rate": "20Mbit", "delay": "20ms", "loss": "2%"}) as lab:
        (ok,) = selfcheck.run_all(lab, log=lambda _: None)
        assert ok["passed"], ok
        m, c = ok["measured"], ok["configured"]
        assert c == {
            "rtt_seconds": 0.02,
            "jitter_seconds": 0.0,
            "loss_ratio": pytest.approx(0.02),
            "rate_bps": 20e6,
            "rtt_tolerance_seconds": pytest.approx(0.02 * selfcheck.DELAY_TOLERANCE),
        }  # 2 % of 20 ms > 0.2 ms
        assert m["sent"] >= 200 and m["loss_interval"][0] <= 0.02 <= m["loss_interval"][1]
        # the delay is added to the path's own RTT, measured through the same mechanism holding nothing
        assert 0 < m["rtt_base_seconds"] < 0.005 and m["rtt_added_seconds"] == pytest.approx(0.02, abs=0.001)
        assert lab.current[("h1", "s1")] == lab.configured[("h1", "s1")]  # put back after the base measurement
        # Behind the orchestrator's back the link now does something else: the self-check must say so.
        lab.links.step(("h1", "s1"), "forward", Impairment(delay="30ms", rate="15Mbit", loss="2%"))
        assert lab.configured[("h1", "s1")][0].delay == 0.02  # what the spec said is unchanged
        (bad,) = selfcheck.run_all(lab, log=lambda _: None)
        assert not bad["passed"]
        text = " ".join(bad["failures"])
        rtt = float(re.search(r"RTT ([0-9.]+) ms on the path's own [0-9.]+ ms, configured 20.000 ms", text).group(1))
        rate = float(re.search(r"rate ([0-9.]+) Mbit/s, configured 20.000 Mbit/s", text).group(1))
        assert 29.5 < rtt < 31.5 and 14.5 < rate < 15.5, bad["failures"]  # what the link does now


def test_link_fidelity_quick_profile_reports_configured_vs_measured(tmp_path, no_leftovers):
    from protolab.results.store import latest

    cmd = [
        sys.executable,
        "-m",
        "protolab.cli",
        "run",
        "link-fidelity",
        "--profile",
        "quick",
        "--results",
        str(tmp_path),
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    run = latest(tmp_path, "link-fidelity")
    summary = json.loads((run / "summary.json").read_text())
    manifest = json.loads((run / "manifest.json").read_text())
    failed = [c for c in summary["checks"] if not c["passed"]]
    assert summary["valid"] and not failed, (summary["invalid_reasons"], failed)
    assert summary["checks_passed"] == 4 * 5 and summary["self_check"] == {
        "directions": 4,
        "passed": True,
        "failures": [],
    }
    probes = [d["self_check"][0] for d in manifest["deployments"]]
    assert all(p["passed"] and p["measured"]["rate_bps"] for p in probes), probes
    assert (run / "faults.csv").exists() and (run / "tables" / "fidelity.md").exists()
