"""Seed tables: the seed's numbers beside a measured table (spec table `reference`)."""

import csv
import json

import pytest

from protolab.model.report import Table
from protolab.results import render_all
from protolab.results.seedtables import parse

from .test_results_render import make_run

SEED_CSV = """# transcribed for the test; rates in bit/s
topology,rate,h3_rx_bits_per_second,f2_loss_ratio
hub,10000kbit,9.5e6,0.02
switched,100Mbit,,0.001
hub,1Gbit,900e6,
"""


def add_reference(run_dir, csv_text=SEED_CSV):
    manifest_path = run_dir / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    seed_file = run_dir.parent.parent.parent / "seed-tables" / "mini.csv"  # beside the spec file
    seed_file.parent.mkdir(parents=True, exist_ok=True)
    seed_file.write_text(csv_text)
    assert manifest["spec_file"].endswith("mini.yaml")
    manifest["spec"]["tables"][0]["reference"] = {"file": "seed-tables/mini.csv", "citation": "Mini paper, Table 9"}
    manifest_path.write_text(json.dumps(manifest))
    return seed_file


@pytest.fixture
def seeded(tmp_path):
    run_dir = make_run(tmp_path)
    seed_file = add_reference(run_dir)
    render_all(run_dir)
    return run_dir, seed_file


def test_markdown_interleaves_seed_columns(seeded):
    run_dir, _ = seeded
    md = (run_dir / "tables" / "throughput.md").read_text()
    header = next(line for line in md.splitlines() if line.startswith("| topology"))
    assert header == (
        "| topology | rate | h3 rx (Mbit/s) | seed (Mbit/s) | f1 goodput (Mbit/s) | f2 loss (%) | seed (%) "
        "| f1 retransmits (count) |"
    )
    rows = {tuple(c.strip() for c in line.strip("|").split("|")[:2]): line for line in md.splitlines()}
    # '10000kbit' in the seed matches the sweep's '10Mbit'; measured mean 9.60, seed 9.50
    assert "| 9.600 ± 0.028 | 9.500 |" in rows["hub", "10Mbit"]
    assert "| 2.30 ± 0.28 † | 2.00 |"  # nsd 0.12 > 0.05 in rows["hub", "10Mbit"]
    # a blank seed cell is shown as missing; a seed-only row comes last with empty measured cells
    assert "| 97.00 ± 0.14 | — |" in rows["switched", "100Mbit"]
    assert md.splitlines().index(rows["hub", "1Gbit"]) > md.splitlines().index(rows["switched", "100Mbit"])
    assert rows["hub", "1Gbit"] == "| hub | 1Gbit | — | 900.00 | — | — | — | — |"
    assert "Seed columns: Mini paper, Table 9 (experiments/seed-tables/mini.csv)" in md


def test_csv_has_seed_columns_in_base_units(seeded):
    run_dir, _ = seeded
    rows = list(csv.DictReader((run_dir / "tables" / "throughput.csv").open()))
    assert "h3_rx_bits_per_second_seed" in rows[0] and "f1_goodput_bits_per_second_seed" not in rows[0]
    hub10 = next(r for r in rows if (r["topology"], r["rate"]) == ("hub", "10Mbit"))
    assert float(hub10["h3_rx_bits_per_second_seed"]) == 9.5e6
    assert float(hub10["f2_loss_ratio_seed"]) == 0.02


def test_report_shows_seed_beside_and_rerenders_from_results_folder_alone(seeded):
    run_dir, seed_file = seeded
    html = (run_dir / "report.html").read_text()
    assert '<th class="num seed">seed (Mbit/s)</th>' in html
    assert "Mini paper, Table 9" in html
    assert (run_dir / "tables" / "throughput.seed.csv").read_text() == SEED_CSV
    seed_file.unlink()  # the results folder has its own copy
    before = (run_dir / "tables" / "throughput.md").read_text()
    render_all(run_dir)
    assert (run_dir / "tables" / "throughput.md").read_text() == before


def test_bad_seed_table_is_reported_not_fatal(tmp_path):
    run_dir = make_run(tmp_path)
    add_reference(run_dir, "topology,rate,h9_rx_bits_per_second\nhub,10Mbit,1\n")
    render_all(run_dir)
    html = (run_dir / "report.html").read_text()
    assert "table throughput" in html and "h9_rx_bits_per_second" in html
    assert not (run_dir / "tables" / "throughput.md").exists()


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("rate,topology,f2_loss_ratio\n", "must start with the table's rows"),
        ("topology,rate\nhub,10Mbit\n", "no value columns"),
        ("topology,rate,f2_loss_ratio\nhub,10Mbit,2%\n", "not a number"),
        ("topology,rate,f2_loss_ratio\nhub,10Mbit\n", "has 2 cells"),
    ],
)
def test_parse_errors_say_why(text, why):
    table = Table(name="t", title="t", rows=["topology", "rate"], columns=["f2_loss_ratio"])
    with pytest.raises(ValueError, match=why):
        parse(text, table, "c", "x.csv")
