"""SPIMS specifications run between lab hosts by protolab-spims: every application type and both compositions,
over TCP and QUIC, reduced to the paper's per-run statistics; the transports this kernel has are probed."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from protolab import images
from protolab.results.store import read_raw

from .conftest import run_spec

pytestmark = pytest.mark.integration


def test_spims_specifications_run_through_the_runner(tmp_path, no_leftovers):
    _run, summary = run_spec("spims", tmp_path)
    for point in summary["statistics"].values():
        assert point["b_s3_connect_mean_seconds"]["mean"] > 0 and point["b_s2_response_nsd_ratio"]["mean"] >= 0


def test_the_node_image_says_which_transports_this_kernel_has():
    ref = images.NAMES["node"]
    out = subprocess.run(["docker", "run", "--rm", "--entrypoint", "protolab-spims", ref, "transports"],
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    assert out.returncode == 0, out.stderr
    lines = {ln.split()[0]: ln for ln in out.stdout.splitlines() if ln.strip()}
    assert set(lines) >= {"tcp", "tls", "udp", "quic", "mptcp", "sctp"}, out.stdout
    has_sctp = Path("/proc/net/sctp").exists() or subprocess.run(["modprobe", "-n", "sctp"]).returncode == 0
    if not has_sctp:
        assert "no SCTP" in lines["sctp"], lines["sctp"]  # the one line a skipped SCTP row carries


def test_request_response_fails_over_as_each_transport_can(tmp_path, no_leftovers):
    run, summary = run_spec("failover", tmp_path)
    raw = (run / "raw" / "tasks").glob("*.json")
    mptcp = [json.loads(p.read_text()) for p in raw if json.loads(p.read_text())["tool"].get("mptcp_monitor")]
    assert mptcp and "SF_ESTABLISHED" in mptcp[0]["tool"]["mptcp_monitor"]["stdout"], "subflow events recorded"
    assert mptcp[0]["sysctls"] == {h: {"net.mptcp.stale_loss_cnt": "2"} for h in ("h1", "h2")}, mptcp[0]["sysctls"]
    series = {r["series"] for r in read_raw(run / "raw" / "series.csv")}
    assert {"rr_rtt_seconds_bucket", "rr_subflows", "rr_block_max_seconds"} <= series, series
