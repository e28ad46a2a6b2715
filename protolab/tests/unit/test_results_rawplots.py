"""Plots of raw series (ccdf of a histogram series, each sample of a series: SCIOP's Fig. 8) and the MPTCP
subflow timeline parsed from `ip -ts mptcp monitor`."""

import json

import pytest
from pydantic import ValidationError

from protolab.model.report import Plot
from protolab.results.rawplots import ccdf, histogram, raw_plot_png, samples
from protolab.results.sweep import Sweep
from protolab.results.timeline import fault_timeline_png, subflow_lanes
from protolab.workloads.request_response_runner import monitor_events, subflow_series

from .test_results_render import PNG_MAGIC

SWEEP = Sweep(
    ["variant", "condition"],
    {"variant": ["tcp", "mptcp"], "condition": ["loss1", "flap"]},
    {
        "p000": {"variant": "tcp", "condition": "loss1"},
        "p001": {"variant": "tcp", "condition": "flap"},
        "p002": {"variant": "mptcp", "condition": "loss1"},
        "p003": {"variant": "mptcp", "condition": "flap"},
    },
)


def bucket(point: str, rep: int, le: float, cum: float) -> dict:
    return {"point": point, "repetition": rep, "phase": "rr", "series": "rr_rtt_seconds_bucket",
            "labels": {"le": f"{le:g}"}, "timestamp_seconds": 100.0, "value": cum}  # fmt: skip


def test_histograms_of_two_repetitions_pool_their_buckets_and_give_the_ccdf():
    raw = [bucket("p000", 0, 1e-4, 90), bucket("p000", 0, 0.2, 100),  # 90 fast, 10 at the RTO
           bucket("p000", 1, 1e-4, 99), bucket("p000", 1, 1e-3, 100),  # another repetition: different edges
           bucket("p002", 0, 1e-4, 1000)]  # fmt: skip
    h = histogram(raw, "rr_rtt_seconds", {"p000"})
    assert h == {1e-4: 189, 1e-3: 1, 0.2: 10}
    xs, ys, n = ccdf(h)
    assert n == 200 and xs == [1e-4, 1e-3, 0.2]
    assert ys == pytest.approx([11 / 200, 10 / 200, 0.0])
    assert histogram(raw, "rr_rtt_seconds", {"p001"}) == {}


def test_series_samples_come_point_by_point_in_time_order():
    raw = [{"point": p, "repetition": 0, "phase": "rr", "series": "rr_block_max_seconds", "labels": {},
            "timestamp_seconds": t, "value": v}
           for p, t, v in [("p001", 2.0, 0.3), ("p001", 1.0, 0.2), ("p003", 1.0, 0.01)]]  # fmt: skip
    assert samples(raw, "rr_block_max_seconds", {"p001"}) == [0.2, 0.3]
    spec = Plot(name="fig8", title="t", kind="series", x="condition", y=["rr_block_max_seconds"], group="variant",
                where={"condition": "flap"}, marks={"goal": "50ms"})  # fmt: skip
    assert spec.marks == {"goal": 0.05}
    assert raw_plot_png(spec, SWEEP, raw).startswith(PNG_MAGIC)
    spec_loss = spec.model_copy(update={"where": {"condition": "loss1"}})
    with pytest.raises(ValueError, match="no samples of rr_block_max_seconds"):
        raw_plot_png(spec_loss, SWEEP, raw)
    with pytest.raises(ValueError, match="not a sweep axis"):
        raw_plot_png(spec.model_copy(update={"x": "size"}), SWEEP, raw)


def test_ccdf_plot_draws_and_marks_belong_to_raw_kinds():
    raw = [bucket("p000", 0, 1e-4, 90), bucket("p000", 0, 0.2, 100), bucket("p002", 0, 1e-4, 50)]
    spec = Plot(name="c", title="t", kind="ccdf", x="condition", y=["rr_rtt_seconds"], group="variant")
    assert raw_plot_png(spec, SWEEP, raw).startswith(PNG_MAGIC)
    with pytest.raises(ValidationError, match="marks are drawn on ccdf and series"):
        Plot(name="b", title="t", kind="bar", x="condition", y=["a_seconds"], marks={"goal": "50ms"})


MONITOR = """\
[2026-11-24T23:38:19.714556] [       CREATED] token=d2011b28 remid=0 locid=0 saddr4=10.0.1.1 daddr4=10.0.1.2 sport=10600 dport=7200
[2026-11-24T23:38:19.714682] [   ESTABLISHED] token=d2011b28 remid=0 locid=0 saddr4=10.0.1.1 daddr4=10.0.1.2 sport=10600 dport=7200
[2026-11-24T23:38:19.714690] [     ANNOUNCED] token=d2011b28 remid=1 daddr4=10.0.2.2 dport=7200
[2026-11-24T23:38:19.714697] [SF_ESTABLISHED] token=d2011b28 remid=1 locid=1 saddr4=10.0.2.1 daddr4=10.0.2.2 sport=17007 dport=7200 backup=1 ifindex=3
[2026-11-24T23:38:25.000000] [     SF_CLOSED] token=d2011b28 remid=0 locid=0 saddr4=10.0.1.1 daddr4=10.0.1.2 sport=10600 dport=7200 error=110
not a monitor line
[2026-11-24T23:38:36.737152] [        CLOSED] token=d2011b28
"""  # noqa: E501


def test_the_mptcp_monitor_becomes_a_step_series_of_subflows_up():
    events = monitor_events(MONITOR)
    assert [e for _, e, _ in events] == ["CREATED", "ESTABLISHED", "ANNOUNCED", "SF_ESTABLISHED", "SF_CLOSED",
                                         "CLOSED"]  # fmt: skip
    assert events[0][0] == pytest.approx(1795563499.714556)  # UTC
    s = subflow_series(MONITOR, "rr_subflows")
    assert [(v, lab["event"]) for _, _, v, lab in s] == [(1, "ESTABLISHED"), (2, "SF_ESTABLISHED"),
                                                         (1, "SF_CLOSED"), (0, "CLOSED")]  # fmt: skip
    assert s[1][3] == {"event": "SF_ESTABLISHED", "subflow": "10.0.2.1:17007->10.0.2.2:7200", "backup": "1"}
    assert subflow_series("", "rr_subflows") == []


def test_the_fault_timeline_draws_the_subflows(tmp_path):
    t0 = 1795563499.0
    (tmp_path / "faults.csv").write_text(
        "point,repetition,phase,link,action,planned_seconds,actual_seconds,timing_error_seconds,unix_time_seconds,"
        f"error\np000,0,rr,h1-s1,down,6.0,6.0,0.0,{t0 + 6},\n"
    )
    (tmp_path / "raw").mkdir()
    rows = ["point,repetition,phase,series,labels,timestamp_seconds,value",
            f"p000,0,rr,rr_late_rtt_seconds,{{}},{t0 + 6.1},0.2"]  # fmt: skip
    rows += [f'p000,0,rr,rr_subflows,"{json.dumps(lab).replace(chr(34), chr(34) * 2)}",{t},{v}'
             for _, t, v, lab in subflow_series(MONITOR, "rr_subflows")]  # fmt: skip
    (tmp_path / "raw" / "series.csv").write_text("\n".join(rows) + "\n")
    png, caption = fault_timeline_png(tmp_path)
    assert png.startswith(PNG_MAGIC) and "MPTCP subflows up, one lane per subflow" in caption


def test_each_subflow_of_the_captured_monitor_is_a_lane_of_its_own():
    rows = [
        {"series": n, "t": t - 1795563499.0, "labels": lab} for n, t, _, lab in subflow_series(MONITOR, "rr_subflows")
    ]
    lanes = subflow_lanes(rows, end=40.0)
    assert list(lanes) == ["10.0.1.1 -> 10.0.1.2", "10.0.2.1 -> 10.0.2.2"]
    ((a0, b0, backup0),) = lanes["10.0.1.1 -> 10.0.1.2"]  # the initial subflow on path A, closed by a timeout
    assert (a0, b0, backup0) == (pytest.approx(0.714682), pytest.approx(6.0), False)
    ((a1, b1, backup1),) = lanes["10.0.2.1 -> 10.0.2.2"]  # path B's, a backup until the connection closed
    assert (a1, b1, backup1) == (pytest.approx(0.714697), pytest.approx(17.737152), True)


def test_subflow_lanes_follow_priority_changes_and_end_open_ones():
    def row(t, event, sf=None, backup=None, series="rr_subflows"):
        labels = {"event": event} | ({"subflow": sf} if sf else {}) | ({"backup": backup} if backup else {})
        return {"series": series, "t": t, "labels": labels}

    a, b6 = "10.0.1.1:1->10.0.1.2:7200", "fd00:10:0:2::1:2->fd00:10:0:2::2:7200"
    rows = [row(1, "ESTABLISHED", a), row(2, "SF_ESTABLISHED", b6, "1"), row(5, "SF_PRIORITY", b6, "0"),
            row(6, "SF_CLOSED", a), row(7, "ESTABLISHED", a),
            row(3, "SF_ESTABLISHED", a, series="x_subflows")]  # fmt: skip
    lanes = subflow_lanes(rows, end=10.0)
    assert lanes == {
        "rr: 10.0.1.1 -> 10.0.1.2": [(1, 6, False), (7, 10.0, False)],  # down from 6 s to 7 s, then up to the end
        "rr: fd00:10:0:2::1 -> fd00:10:0:2::2": [(2, 5, True), (5, 10.0, False)],  # a backup until 5 s
        "x: 10.0.1.1 -> 10.0.1.2": [(3, 10.0, False)],
    }
    assert subflow_lanes([row(1, "ESTABLISHED", a), row(4, "CLOSED")], end=9.0) == {
        "10.0.1.1 -> 10.0.1.2": [(1, 4, False)]
    }
