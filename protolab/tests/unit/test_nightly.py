"""The nightly job's pages and exit status, on synthetic runs (the runs themselves are real only in
`make nightly`)."""

from __future__ import annotations

import json

from protolab import nightly
from protolab.errors import EXIT_INVALID, EXIT_OK, EXIT_REGRESSED
from protolab.results import compare as cmp
from protolab.results import render_all
from protolab.tests.unit.test_results_compare import make_run


def test_exit_status_fails_on_an_invalid_run_or_a_regression():
    ok = {"valid": True, "comparison": {"failed": False}}
    assert nightly.exit_status([ok, {"valid": True, "comparison": {"reference": None}}]) == EXIT_OK
    assert nightly.exit_status([ok, {"valid": True, "comparison": {"failed": True}}]) == EXIT_REGRESSED
    assert nightly.exit_status([ok, {"valid": False}]) == EXIT_INVALID


def test_a_run_is_compared_with_its_reference_and_its_headline_kept(tmp_path):
    refs = tmp_path / "references"
    ref = cmp.build_reference([make_run(tmp_path, "r1", {10: [9.5e6, 9.6e6, 9.55e6, 9.52e6]})])
    path = cmp.reference_path(refs, "mini", "quick")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(ref))
    slow = make_run(tmp_path, "r2", {10: [8.5e6, 8.6e6, 8.55e6, 8.52e6]})
    got = cmp.with_reference(slow, refs)
    assert got["failed"] and got["counts"]["regressed"] == 1 and (slow / "compare" / "compare.html").exists()
    assert cmp.with_reference(slow, tmp_path / "none")["reference"] is None
    # the run's report shows the reference beside the measured values, the regressed cell first
    render_all(slow)
    page = (slow / "report.html").read_text()
    section = page[page.index('<section id="reference">') :]
    assert "1 regressed" in section and section.index("regressed") < section.index("Unchanged (")
    row = section[section.index('<tr class="cmp-regressed">') :].split("</tr>")[0]
    assert "f1_goodput_bits_per_second" in row
    assert "9.543 ± 0.043 Mbit/s (n 4)" in row and "8.543 ± 0.043 Mbit/s (n 4)" in row
    assert "-1.000 Mbit/s (-10.5%)" in row


def test_index_and_trend_pages(tmp_path):
    root = tmp_path / "nightly"
    for night, goodput in (("2026-11-21", 9.5), ("2026-11-22", 9.6)):
        (root / night).mkdir(parents=True)
        line = {"experiment": "smoke", "profile": "quick", "valid": True, "seconds": 120.0, "run": "/r",
                "comparison": {"reference": "x", "counts": {"regressed": 0}, "failed": False},
                "headline": {"f1_goodput_bits_per_second": goodput}}  # fmt: skip
        (root / night / "index.json").write_text(json.dumps({"night": night, "runs": [line]}))
        page = nightly.index_html(root / night, [line])
        assert "VALID" in page and "0 regressed" in page and "/r/report.html" in page
    trend = nightly.trend(root).read_text()
    assert "2 night(s)" in trend and trend.count("<img") == 1 and "smoke f1_goodput_bits_per_second" in trend


def test_the_nightly_profile_is_preferred_to_quick(tmp_path):
    spec = tmp_path / "x.yaml"
    spec.write_text("profiles: {quick: {}, nightly: {}}\n")
    assert nightly.profile_for(spec) == "nightly"
    spec.write_text("profiles: {full: {}}\n")
    assert nightly.profile_for(spec) is None
