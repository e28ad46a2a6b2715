"""Tasks skipped on this machine (summary.json `skipped`) in report.html: one short section."""

from __future__ import annotations

import json

from protolab.results import render_all
from protolab.results.report_html import _skipped

from .test_results_render import make_run

WHY = "sysctl net.sctp.rto_min does not exist on h1 (this kernel lacks that part: no /proc/sys/net/sctp/rto_min)"
LINES = [f"p084 (variant=sctp-table2, condition=none, size=64B) task rr: {WHY}",
         f"p085 (variant=sctp-table2, condition=none, size=1024B) task rr: {WHY}",
         "p090 (variant=sctp-10ms, condition=flap, size=64B) task rr: transport sctp is not available on h2: "
         "EPROTONOSUPPORT",
         "a line of another shape"]  # fmt: skip


def test_skip_lines_are_grouped_by_task_and_reason():
    groups = _skipped({"skipped": LINES})
    assert [(g["task"], g["why"], len(g["points"])) for g in groups] == [
        ("rr", WHY, 2),
        ("rr", "transport sctp is not available on h2: EPROTONOSUPPORT", 1),
        ("", "a line of another shape", 0),
    ]
    assert groups[0]["points"][1] == "p085 (variant=sctp-table2, condition=none, size=1024B)"
    assert _skipped({}) == [] and _skipped({"skipped": []}) == []


def test_report_shows_the_skipped_tasks_only_when_there_are_some(tmp_path):
    run_dir = make_run(tmp_path)
    render_all(run_dir)
    assert 'id="skipped"' not in (run_dir / "report.html").read_text()

    summary = json.loads((run_dir / "summary.json").read_text())
    (run_dir / "summary.json").write_text(json.dumps({**summary, "skipped": LINES}))
    render_all(run_dir)
    html = (run_dir / "report.html").read_text()
    section = html[html.index('<section id="skipped">') : html.index('<section id="checks">')]
    assert "Skipped here" in section and section.count("<li>") == 3
    assert "task <code>rr</code> at 2 points: sysctl net.sctp.rto_min does not exist on h1" in section
    assert "task <code>rr</code> at 1 point: transport sctp is not available on h2" in section
    assert "p085 (variant=sctp-table2, condition=none, size=1024B)" in section
