"""The transfer workload (seed 002) through a real lab: tp4 and TCP over the satellite topology's 64 kbit/s,
270 ms link with bit errors (specs/satellite.yaml's checks: both complete byte-exact), nothing left behind."""

from __future__ import annotations

import csv
import json

import pytest

from .conftest import run_spec

pytestmark = pytest.mark.integration


def test_tp4_and_tcp_transfers_cross_a_satellite_link_with_bit_errors(tmp_path, no_leftovers):
    run, summary = run_spec("satellite", tmp_path, timeout=900)
    assert {"every transfer completes", "every octet arrives"} <= {c["name"] for c in summary["checks"]}
    rows = {r["variant"]: r for r in csv.DictReader((run / "tidy.csv").open())}
    assert set(rows) == {"tp4", "tcp", "tcp-expedited", "quic-expedited"}, rows
    for v in ("tcp-expedited", "quic-expedited"):  # one message, on one clock: at least a trip of the 270 ms link
        assert (
            0.27 < float(rows[v]["xfer_expedited_delay_seconds"]) <= float(rows[v]["xfer_expedited_delay_max_seconds"])
        )
    tp4, tcp = rows["tp4"], rows["tcp"]
    # tp4: its own receive buffer and the paper's echoed parameters; TCP: ss's socket memory sampled (the
    # sender's queue holds data while the link drains it; the receiving application reads at once, so its
    # receive memory is the out-of-order queue and may well be 0 on a transfer that lost nothing)
    assert float(tp4["xfer_recv_buffer_max_bytes"]) > 0 and float(tp4["xfer_window_bytes"]) == 20480
    assert float(tcp["xfer_send_buffer_max_bytes"]) > 0 and float(tcp["xfer_recv_buffer_max_bytes"]) >= 0
    # QUIC: the stream octets its receiver held, counted from quic-go's tracer (reported, however small)
    quic = rows["quic-expedited"]
    assert 0 <= float(quic["xfer_recv_buffer_avg_bytes"]) <= float(quic["xfer_recv_buffer_max_bytes"])
    assert tcp["xfer_retransmissions_total"] != ""
    assert tcp["xfer_spurious_retransmissions_total"] != ""  # SACK on at both ends: D-SACKs counted
    raw = {r["point"]: r for r in (json.loads(p.read_text()) for p in (run / "raw" / "tasks").glob("*.json"))}
    tp4_raw, tcp_raw = raw["p000"], raw["p001"]  # order: sweep
    assert tp4_raw["tool"]["sender"]["completed"] and tp4_raw["tool"]["receiver"]["user_tsdus_corrupt"] == 0
    assert tcp_raw["sysctls"]["h1"]["net.ipv4.tcp_congestion_control"] == "reno" and tcp_raw["tool"]["sack"]
