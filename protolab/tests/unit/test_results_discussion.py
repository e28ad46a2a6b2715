"""protolab.results.discussion and the `discussion:` model: paragraphs whose figures are filled in from a run's
tables, seed tables and derived results (issue 21: "a 'what differs and why' paragraph written from the
measurements"). The run is test_results_derived's synthetic transfer-syntax run, whose delays are known."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from protolab import spec
from protolab.errors import SpecError
from protolab.model.report import Paragraph, parse_figure
from protolab.results import render_all

from .test_results_derived import LINES, MINI, PDU, delay, make_run

TABLE = {"name": "delays", "title": "Delay per PDU and syntax", "rows": ["pdu", "syntax"],
         "columns": ["rx_delay_mean_seconds"], "where": {"budget": "none"},
         "reference": {"file": "seed-tables/delays.csv", "citation": "a made-up seed"}}  # fmt: skip
SEED_CSV = "pdu,syntax,rx_delay_mean_seconds\nentity,raw,0.0073\nentity,ber,0.0102\n"


# -- the placeholder's grammar -------------------------------------------------------------------------------------


def test_a_figure_reads_its_parts():
    f = parse_figure(" table:delays.rx_delay_mean_seconds[pdu=entity, syntax=ber] / seed:delays.rx_delay_mean_seconds"
                     "[pdu=entity,syntax=ber] * 100 :.1f ")  # fmt: skip
    assert (f.top.kind, f.top.name, f.top.field, f.top.where) == (
        "table", "delays", "rx_delay_mean_seconds", {"pdu": "entity", "syntax": "ber"})  # fmt: skip
    assert f.bottom is not None and f.bottom.kind == "seed" and f.scale == 100 and f.format == ".1f"
    g = parse_figure("fit:delay_vs_integers.c1[syntax=ber]*1e6")
    assert (g.top.kind, g.top.field, g.top.where, g.scale, g.format) == ("fit", "c1", {"syntax": "ber"}, 1e6, ".3g")
    assert parse_figure("ratio:speedup[pdu=data, budget=none]:.0%").format == ".0%"


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("mean:delays.x", "expected table:, seed:, fit: or ratio:"),
        ("table:delays", "needs .COLUMN"),
        ("fit:f", "needs .FIELD"),
        ("fit:f.slope", "needs .FIELD, one of c0, c1"),
        ("ratio:r.value", "a ratio is one number per row"),
        ("table:t.c[pdu]", "'pdu' is not axis=value"),
        ("table:t.c:.2q", "is not a number format"),
        ("table:t.c + 3", r"cannot read '\+3'"),
    ],
)
def test_a_broken_figure_says_what_is_wrong(text, why):
    with pytest.raises(ValueError, match=why):
        parse_figure(text)
    with pytest.raises(ValidationError, match=why):
        Paragraph(title="t", text=f"before {{{{{text}}}}} after")


# -- filled in from a run ------------------------------------------------------------------------------------------

TEXT = """BER costs {{table:delays.rx_delay_mean_seconds[pdu=entity, syntax=ber]*1e3:.2f}} ms for an entity state
PDU against the seed's {{seed:delays.rx_delay_mean_seconds[pdu=entity, syntax=ber]*1e3:.1f}} ms, {{table:delays.
rx_delay_mean_seconds[pdu=entity,syntax=ber] / seed:delays.rx_delay_mean_seconds[pdu=entity,syntax=ber]:.3f}}x.

Each integer adds {{fit:delay_vs_integers.c1[syntax=ber]*1e6:.1f}} us (r2 {{fit:delay_vs_integers.r2[syntax=ber]:.3f}});
skinny is {{ratio:speedup[pdu=data, budget=none]:.2f}}x faster for data PDUs; the fire row's seed number:
{{seed:delays.rx_delay_mean_seconds[pdu=fire, syntax=raw]}}; a load the run lacks:
{{table:delays.rx_delay_mean_seconds[pdu=nosuch, syntax=raw]}}."""


def _run_with_discussion(tmp_path: Path, text: str = TEXT) -> Path:
    run_dir = make_run(tmp_path)
    m = json.loads((run_dir / "manifest.json").read_text())
    m["spec"]["tables"] = [TABLE]
    m["spec"]["discussion"] = [{"title": "What differs from the seed, and why", "text": text}]
    (run_dir / "manifest.json").write_text(json.dumps(m))
    (run_dir / "tables").mkdir(exist_ok=True)
    (run_dir / "tables" / "delays.seed.csv").write_text(SEED_CSV)  # the results folder's copy of the seed table
    return run_dir


def test_the_paragraph_carries_the_runs_numbers(tmp_path):
    run_dir = _run_with_discussion(tmp_path)
    paths = render_all(run_dir)
    assert run_dir / "discussion.md" in paths
    md = (run_dir / "discussion.md").read_text()
    ber = delay({"pdu": "entity", "syntax": "ber", "budget": "none"})  # the synthetic run's mean (no noise)
    assert (
        f"BER costs {ber * 1e3:.2f} ms for an entity state PDU against the seed's 10.2 ms, {ber / 0.0102:.3f}x." in md
    )
    assert f"Each integer adds {LINES['ber'][1] * 1e6:.1f} us (r2 1.000);" in md
    sk = delay({"pdu": "data", "syntax": "skinny", "budget": "none"})
    assert f"skinny is {delay({'pdu': 'data', 'syntax': 'ber', 'budget': 'none'}) / sk:.2f}x faster" in md
    # the two paragraphs stay two; what the run lacks reads n/a and says why
    assert md.count("\n\n") >= 4 and "seed number: n/a; a load the run lacks: n/a." in md
    assert "- n/a: {{seed:delays.rx_delay_mean_seconds[pdu=fire,syntax=raw]}}: table delays: the seed has no " \
           "rx_delay_mean_seconds in that row" in md  # fmt: skip
    assert "table delays has no row pdu=nosuch, syntax=raw" in md
    html = (run_dir / "report.html").read_text()
    section = html[html.index('<section id="discussion">') :]
    section = section[: section.index("</section>")]
    assert "What differs from the seed, and why" in section and f"{ber / 0.0102:.3f}x" in section
    assert section.count("<p>") == 2 and "table delays has no row pdu=nosuch" in section
    assert PDU  # the run's PDU types, as test_results_derived defines them


def test_a_run_without_a_discussion_writes_none(tmp_path):
    run_dir = make_run(tmp_path)
    render_all(run_dir)
    assert not (run_dir / "discussion.md").exists()
    assert 'id="discussion"' not in (run_dir / "report.html").read_text()


def test_a_broken_paragraph_in_a_manifest_is_a_problem_line(tmp_path):
    run_dir = _run_with_discussion(tmp_path, "{{fit:delay_vs_integers}}")
    render_all(run_dir)
    html = (run_dir / "report.html").read_text()
    assert "discussion[0]: invalid" in html and "needs .FIELD" in html and not (run_dir / "discussion.md").exists()


# -- spec errors ---------------------------------------------------------------------------------------------------


def _mini(tmp_path: Path, text: str, derived: dict | None = None) -> Path:
    raw = yaml.safe_load(MINI.read_text())
    raw["discussion"] = [{"title": "why", "text": text}]
    if derived:
        raw["derived"] = derived
    path = tmp_path / "mini.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


DERIVED = {
    "ratios": [{"name": "gain", "column": "f1_goodput_bits_per_second", "axis": "topology", "numerator": "switched",
                "denominator": "hub"}],
    "fits": [{"name": "line", "x": "h3_rx_bits_per_second", "y": "f1_goodput_bits_per_second", "group": "topology"}],
}  # fmt: skip


def test_a_discussion_naming_what_the_spec_has_loads(tmp_path):
    text = ("{{table:throughput.f2_loss_ratio[topology=hub, rate=10Mbit]:.1%}} lost; gain {{ratio:gain[rate=10Mbit]}},"
            " slope {{fit:line.c1[topology=hub]}}")  # fmt: skip
    plan = spec.load(_mini(tmp_path, text, DERIVED))
    assert [len(p.figures()) for p in plan.base.discussion] == [3]


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("{{table:nosuch.f2_loss_ratio[topology=hub, rate=10Mbit]}}", "no table 'nosuch'"),
        ("{{table:throughput.nosuch_ratio[topology=hub, rate=10Mbit]}}", "'nosuch_ratio' is not a column of table"),
        (
            "{{table:throughput.f2_loss_ratio[topology=hub]}}",
            r"name the row by the table's rows \['topology', 'rate'\]",
        ),
        ("{{seed:throughput.f2_loss_ratio[topology=hub, rate=10Mbit]}}", "table throughput has no seed reference"),
        ("{{fit:nosuch.c1}}", "'nosuch' is not a derived fit"),
        ("{{fit:line.c1}}", r"fit line has a line per topology: give \[topology=VALUE\]"),
        ("{{ratio:line}}", "'line' is not a derived ratio"),
        ("{{ratio:gain[topology=hub]}}", r"\['topology'\] are not the ratio's other sweep axes"),
    ],
)
def test_a_discussion_naming_what_is_not_there_is_a_spec_error(tmp_path, text, why):
    with pytest.raises(SpecError, match=why):
        spec.load(_mini(tmp_path, text, DERIVED))
