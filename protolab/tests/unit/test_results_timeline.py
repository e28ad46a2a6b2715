"""The fault timeline over latency in report.html, from faults.csv and raw/series.csv alone."""

from protolab.results import render_all
from protolab.results.store import RAW_COLUMNS
from protolab.results.timeline import _down_spans, fault_timeline_png

from .test_results_render import PNG_MAGIC, make_run

T0 = 1795322948.0
FAULTS_CSV = (
    "point,repetition,phase,link,action,planned_seconds,actual_seconds,timing_error_seconds,unix_time_seconds,error\n"
    f"p000,0,flows,h2-s1,down,1.0,1.004,0.004,{T0 + 1.004},\n"
    f"p000,0,flows,h2-s1,up,1.5,1.503,0.003,{T0 + 1.503},\n"
    f"p000,0,flows,h1-s1,set,2.0,2.001,0.001,{T0 + 2.001},\n"
)


def test_down_spans_pair_edges_and_close_open_ones():
    ev = [
        {"link": "a", "action": "down", "actual_seconds": "1"},
        {"link": "a", "action": "up", "actual_seconds": "2"},
        {"link": "b", "action": "down", "actual_seconds": "3"},
    ]
    assert _down_spans(ev, 9.0) == {"a": [(1.0, 2.0)], "b": [(3.0, 9.0)]}


def test_report_shows_the_fault_timeline_only_when_the_run_had_faults(tmp_path):
    run_dir = make_run(tmp_path)
    render_all(run_dir)
    assert fault_timeline_png(run_dir) is None
    assert "fault_timeline" not in (run_dir / "report.html").read_text()

    (run_dir / "faults.csv").write_text(FAULTS_CSV)
    (run_dir / "raw").mkdir(exist_ok=True)
    rows = [",".join(RAW_COLUMNS)]
    rows += [
        f"p000,0,flows,f_rtt_seconds,{{}},{T0 + i / 10},{0.010 + (0.005 if 10 <= i < 15 else 0)}" for i in range(30)
    ]
    (run_dir / "raw" / "series.csv").write_text("\n".join(rows) + "\n")
    png, caption = fault_timeline_png(run_dir)
    assert png.startswith(PNG_MAGIC) and "no delay or RTT" not in caption
    render_all(run_dir)
    assert (run_dir / "plots" / "fault_timeline.png").read_bytes().startswith(PNG_MAGIC)
    html = (run_dir / "report.html").read_text()
    assert "Fault timeline over latency" in html and "plots/fault_timeline.png" in html


def test_timeline_without_latency_series_says_so(tmp_path):
    run_dir = make_run(tmp_path)
    (run_dir / "faults.csv").write_text(FAULTS_CSV)
    _png, caption = fault_timeline_png(run_dir)
    assert "no delay or RTT series" in caption
