"""protolab.results.render (with tables, plots, report_html): tables, plots and report.html from a synthetic
results folder."""

import base64
import csv
import json
import re
import shutil
from pathlib import Path

import matplotlib.image as mpimg
import numpy as np
import pytest

from protolab import spec
from protolab.model.report import Knee
from protolab.results import RunDir, build_summary, render_all
from protolab.results.display import axis_str
from protolab.results.plots import PALETTE, REFERENCE_COLOR

MINI = Path(__file__).parent / "fixtures" / "results" / "mini.yaml"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

# (topology, rate) -> per repetition: h3 rx, h4 rx, f1 goodput, f1 retransmits, f2 loss
DATA = {
    ("hub", "10Mbit"): [(9.62e6, 9.61e6, 4.41e6, None, 0.021), (9.58e6, 9.57e6, 4.39e6, None, 0.025)],
    ("hub", "100Mbit"): [(60.0e6, 60.1e6, 28.0e6, 40, 0.30), (62.0e6, 61.9e6, 29.0e6, 46, 0.32)],
    ("switched", "10Mbit"): [(9.71e6, 9.70e6, 9.21e6, 2, 0.001), (9.69e6, 9.68e6, 9.19e6, 4, 0.002)],
    ("switched", "100Mbit"): [(97.1e6, 97.0e6, 92.5e6, 11, None), (96.9e6, 96.8e6, 92.3e6, 13, None)],
}


def make_run(root: Path) -> Path:
    """A complete results folder as the runner would leave it (before rendering)."""
    src = root / "mini.yaml"
    shutil.copy(MINI, src)
    plan = spec.load(src)
    axes = list(plan.raw["sweep"])
    columns = plan.base.columns()
    run = RunDir.create(root / "results", "mini", "20261122T031500Z-ab12")
    run.write_json(
        "manifest.json",
        {
            "schema_version": 1,
            "experiment": "mini",
            "run_id": run.run_id,
            "profile": None,
            "spec_file": str(src),
            "spec": plan.raw,
            "points": [{"id": p.id, "values": p.values, "label": p.label()} for p in plan.points],
            "git_commit": "0123456789abcdef",
            "kernel": "6.1.0-test-amd64",
            "host": "labhost <lab&1>",
            "tool_versions": {"iperf3": "3.16", "mininet": "2.3.0"},
            "images": {"protolab/node": "sha256:feedface"},
            "impairment_backend": "tc",
            "random_seed": 7,
            "started_at": "2026-11-22T03:15:00Z",
            "finished_at": "2026-11-22T03:16:05Z",
            "environment": {"static": {"cpus": 8, "governor": "performance"}, "dynamic": {"load1": 0.12}},
        },
    )
    rows = []
    for p in plan.points:
        for rep, (h3, h4, gp, retx, loss) in enumerate(DATA[p.values["topology"], p.values["rate"]]):
            rows.append(
                {
                    "point": p.id,
                    "repetition": rep,
                    **{a: axis_str(p.values[a]) for a in axes},
                    "h3_rx_bits_per_second": h3,
                    "h4_rx_bits_per_second": h4,
                    "f1_goodput_bits_per_second": gp,
                    "f1_retransmits_total": retx,
                    "f2_loss_ratio": loss,
                    "f2_goodput_bits_per_second": gp * 0.9,
                    "f2_packets_per_second": gp * 0.9 / 8 / 1400,
                }
            )
    run.write_tidy(rows, axes, columns)
    summary = build_summary(
        "mini",
        run.run_id,
        plan.points,
        run.read_tidy(),
        columns,
        invalid_reasons=["<script>alert(1)</script> CPU of h1 saturated"],
    )
    run.write_json("summary.json", summary)
    return run.path


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    run_dir = make_run(tmp_path_factory.mktemp("render"))
    return run_dir, render_all(run_dir)


def test_every_output_is_written(rendered):
    run_dir, paths = rendered
    expected = {
        "tables/throughput.csv",
        "tables/throughput.md",
        "tables/by_topology.csv",
        "tables/by_topology.md",
        "plots/throughput.png",
        "plots/goodput_vs_rate.png",
        "report.html",
    }
    assert {str(p.relative_to(run_dir)) for p in paths} == expected
    assert all(p.is_file() and p.stat().st_size > 0 for p in paths)


def test_plots_are_real_pngs(rendered):
    run_dir, _ = rendered
    for name in ("throughput", "goodput_vs_rate"):
        data = (run_dir / "plots" / f"{name}.png").read_bytes()
        assert data[:8] == PNG_MAGIC
        assert len(data) > 15_000  # a drawn chart, not an empty canvas
        width = int.from_bytes(data[16:20], "big")
        height = int.from_bytes(data[20:24], "big")
        assert width >= 700 and height >= 400


def _share_of_color(png: Path, hex_color: str) -> float:
    img = mpimg.imread(png)[:, :, :3]
    rgb = np.array([int(hex_color[i : i + 2], 16) / 255 for i in (1, 3, 5)])
    return float(np.mean(np.all(np.abs(img - rgb) < 0.02, axis=-1)))


def test_bar_plot_draws_the_data(rendered):
    run_dir, _ = rendered
    png = run_dir / "plots" / "throughput.png"
    # two bars per group colour, the 100 Mbit ones tall: both colours cover a visible share of the image
    assert _share_of_color(png, PALETTE[0]) > 0.005
    assert _share_of_color(png, PALETTE[1]) > 0.05
    assert _share_of_color(png, REFERENCE_COLOR) > 0.001  # the "configured" marks


def test_line_plot_draws_one_line_per_group(rendered):
    run_dir, _ = rendered
    png = run_dir / "plots" / "goodput_vs_rate.png"
    assert _share_of_color(png, PALETTE[0]) > 0.002  # hub
    assert _share_of_color(png, PALETTE[1]) > 0.002  # switched
    assert _share_of_color(png, PALETTE[2]) == 0.0  # there is no third topology


def test_plot_without_data_has_no_bars(tmp_path):
    run_dir = make_run(tmp_path)
    (run_dir / "tidy.csv").unlink()
    render_all(run_dir)
    assert _share_of_color(run_dir / "plots" / "throughput.png", PALETTE[1]) < 0.001


def test_markdown_known_cells(rendered):
    run_dir, _ = rendered
    md = (run_dir / "tables" / "throughput.md").read_text()
    assert md.startswith("# Configured rate vs measured wire rate and goodput\n")
    header = "| topology | rate | h3 rx (Mbit/s) | f1 goodput (Mbit/s) | f2 loss (%) | f1 retransmits (count) |"
    assert header in md
    # hub @ 10 Mbit: h3 (9.62, 9.58) -> 9.600 ± 0.028; goodput 4.400 ± 0.014; loss 2.30 ± 0.28 % (nsd 0.12: †)
    assert "| hub | 10Mbit | 9.600 ± 0.028 | 4.400 ± 0.014 | 2.30 ± 0.28 † | — |" in md
    # switched @ 100 Mbit: loss not measured
    assert "| switched | 100Mbit | 97.00 ± 0.14 | 92.40 ± 0.14 | — | 12.0 ± 1.4 † |" in md  # retransmits nsd 0.12
    lines = [ln for ln in md.splitlines() if ln.startswith("| ")]
    order = [ln.split(" | ")[0][2:] + "/" + ln.split(" | ")[1] for ln in lines[1:]]
    assert order == ["hub/10Mbit", "hub/100Mbit", "switched/10Mbit", "switched/100Mbit"]  # sweep order


def test_pooled_table(rendered):
    run_dir, _ = rendered
    md = (run_dir / "tables" / "by_topology.md").read_text()
    assert "over rate" in md  # says what it pooled
    rows = list(csv.DictReader((run_dir / "tables" / "by_topology.csv").open()))
    assert [r["topology"] for r in rows] == ["hub", "switched"]
    assert rows[0]["h4_rx_bits_per_second_n"] == "4"
    assert float(rows[0]["h4_rx_bits_per_second_mean"]) == pytest.approx((9.61 + 9.57 + 60.1 + 61.9) / 4 * 1e6)


def test_csv_keeps_base_units(rendered):
    run_dir, _ = rendered
    rows = list(csv.DictReader((run_dir / "tables" / "throughput.csv").open()))
    hub10 = rows[0]
    assert (hub10["topology"], hub10["rate"]) == ("hub", "10Mbit")
    assert float(hub10["h3_rx_bits_per_second_mean"]) == pytest.approx(9.6e6)
    assert float(hub10["f2_loss_ratio_mean"]) == pytest.approx(0.023)
    assert hub10["f1_retransmits_total_n"] == "0" and hub10["f1_retransmits_total_mean"] == ""


def test_report_is_self_contained(rendered):
    run_dir, _ = rendered
    html = (run_dir / "report.html").read_text()
    assert "http://" not in html and "https://" not in html
    assert not re.search(r"""(?:src|href)\s*=\s*(?!["']?(?:data:|#))""", html), "only data: URIs and in-page links"
    assert "@import" not in html and "url(" not in html
    imgs = re.findall(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)"', html)
    assert len(imgs) == 2
    assert base64.b64decode(imgs[0]) == (run_dir / "plots" / "throughput.png").read_bytes()


def test_report_content(rendered):
    run_dir, _ = rendered
    html = (run_dir / "report.html").read_text()
    assert "INVALID" in html and "20261122T031500Z-ab12" in html
    assert "none (results unit test)" in html  # the seed it reproduces
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script>" not in html  # escaped
    assert "labhost &lt;lab&amp;1&gt;" in html
    assert "6.1.0-test-amd64" in html and "iperf3" in html and "sha256:feedface" in html and "0123456789abcdef" in html
    assert "<details>" in html and "random_seed: 7" in html  # the spec as YAML
    checks = html[html.index('id="checks"') :]
    by_check, per_point = checks.split("<details", 1)
    assert per_point.count('class="pass"') == 7 and per_point.count('class="fail"') == 3
    # one line per check (failures first): 3 checks failed somewhere, 1 passed everywhere
    assert by_check.count('class="pass"') == 1 and by_check.count('class="fail"') == 3
    assert by_check.index("FAIL") < by_check.index("PASS") and "1 / 2" in by_check and "2 / 2" in by_check
    assert "9.600 .. 61.00 Mbit/s" in by_check  # the range of the means, in human units
    assert "<details open>" in checks  # the per-point list is open when something failed
    # the failing hub 100 Mbit check in human units
    assert "61.000 Mbit/s" not in html and "61.00 Mbit/s" in html and "95.00 – 105.00 Mbit/s" in html
    assert "not measured" in html


def test_rerender_is_identical(tmp_path):
    run_dir = make_run(tmp_path)
    render_all(run_dir)
    first = {p.name: p.read_bytes() for p in (run_dir / "tables").iterdir()}
    report1 = (run_dir / "report.html").read_bytes()
    render_all(run_dir)
    second = {p.name: p.read_bytes() for p in (run_dir / "tables").iterdir()}
    assert first == second and len(first) == 4
    assert (run_dir / "report.html").read_bytes() == report1


def test_bad_plot_axis_is_reported_not_fatal(tmp_path):
    run_dir = make_run(tmp_path)
    m = json.loads((run_dir / "manifest.json").read_text())
    m["spec"]["plots"][0]["x"] = "nosuchaxis"
    (run_dir / "manifest.json").write_text(json.dumps(m))
    paths = render_all(run_dir)
    assert not (run_dir / "plots" / "throughput.png").exists()
    assert (run_dir / "plots" / "goodput_vs_rate.png") in paths
    assert "nosuchaxis" in (run_dir / "report.html").read_text()


def test_missing_summary_and_tidy_still_render(tmp_path):
    run_dir = make_run(tmp_path)
    (run_dir / "summary.json").unlink()
    (run_dir / "tidy.csv").unlink()
    paths = render_all(run_dir)
    html = (run_dir / "report.html").read_text()
    assert "UNKNOWN" in html and "tidy.csv is missing" in html
    md = (run_dir / "tables" / "throughput.md").read_text()
    assert "| hub | 10Mbit | — | — | — | — |" in md  # the plan's points, nothing measured
    assert (run_dir / "plots" / "throughput.png") in paths


def test_knee_finds_where_delivery_stops_keeping_up():
    from protolab.results.sweep import Sweep
    from protolab.results.tables import KneeData

    sweep = Sweep(["size", "rate"], {"size": ["96B", "1024B"], "rate": ["1000", "2000", "5000", "10000"]})
    got = {  # (size, rate) -> delivered; 96 B keeps up to 5000, 1024 B falls behind at 2000 and recovers at 5000
        ("96B", "1000"): 1000, ("96B", "2000"): 1990, ("96B", "5000"): 4900, ("96B", "10000"): 6100,
        ("1024B", "1000"): 998, ("1024B", "2000"): 1200, ("1024B", "5000"): 4999, ("1024B", "10000"): None,
    }  # fmt: skip
    rows = [{"size": s, "rate": r, "rx_packets_per_second": v} for (s, r), v in got.items()]
    k = Knee(name="collapse", title="t", rows=["size"], x="rate", delivered="rx_packets_per_second")
    data = KneeData.build_knee(k, sweep, rows)
    assert data.combos == [("96B",), ("1024B",)]
    cells = [[s["mean"] for s in row] for row in data.stats]
    assert cells == [[5000, 10000, 6100], [1000, 2000, 4999]]  # the first shortfall is the collapse
    assert data.headers[:3] == ["size", "rate kept up to (pkt/s)", "rate collapsed at (pkt/s)"]
    assert "rate_sustained_mean" in data.csv_text().splitlines()[0]
    with pytest.raises(ValueError, match="not sweep axes"):
        KneeData.build_knee(k.model_copy(update={"x": "load"}), sweep, rows)


def test_cells_whose_repetitions_disagree_are_marked(rendered):
    run_dir, _ = rendered
    md = (run_dir / "tables" / "throughput.md").read_text()
    assert "† = normalized standard deviation (sd / |mean|) above 0.05" in md
    assert "9.600 ± 0.028 |" in md and "9.600 ± 0.028 †" not in md  # nsd 0.003
    header = (run_dir / "tables" / "throughput.csv").read_text().splitlines()[0]
    assert "h3_rx_bits_per_second_nsd" in header


def test_tables_say_how_many_repetitions_each_point_took(tmp_path):
    """Under `repetitions: {until_nsd: ...}` a table gets a repetitions column: per row the count its points
    took (a range when they differ) and whether they converged; the CSV has the same as numbers."""
    run_dir = make_run(tmp_path)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    manifest["spec"]["repetitions"] = {"until_nsd": 0.05, "min": 2, "max": 2, "columns": None}
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    summary = json.loads((run_dir / "summary.json").read_text())
    ids = {(p["values"]["topology"], p["values"]["rate"]): p["id"] for p in manifest["points"]}
    summary["repetitions"] = {pid: {"n": 2, "converged": key != ("hub", "10Mbit")} for key, pid in ids.items()}
    (run_dir / "summary.json").write_text(json.dumps(summary))
    render_all(run_dir)
    md = (run_dir / "tables" / "throughput.md").read_text()
    assert "| topology | rate | repetitions | h3 rx (Mbit/s) |" in md
    assert "| hub | 10Mbit | 2 ✗ | 9.600 ± 0.028 |" in md and "| hub | 100Mbit | 2 ✓ |" in md
    assert "each point repeated until the normalized standard deviation of its mean of every result column" in md
    pooled = (run_dir / "tables" / "by_topology.md").read_text()
    assert "| hub | 2 (1 of 2 ✓) |" in pooled and "| switched | 2 ✓ |" in pooled  # two points of 2 each
    rows = list(csv.DictReader((run_dir / "tables" / "by_topology.csv").open()))
    assert [(r["points"], r["points_converged"], r["repetitions_min"], r["repetitions_max"]) for r in rows] == [
        ("2", "1", "2", "2"), ("2", "2", "2", "2")]  # fmt: skip
    html = (run_dir / "report.html").read_text()
    assert "<th>repetitions</th>" in html or ">repetitions</th>" in html


def test_report_shows_the_load_over_the_run_and_the_lab_interfaces(tmp_path):
    """SPIMS sec. 5's dynamic environment as the runner records it: the host's load between the start and the end
    of the run (environment.over_run) and each lab's interfaces, their offloads and traffic (deployments[])."""
    run_dir = make_run(tmp_path)
    m = json.loads((run_dir / "manifest.json").read_text())
    m["environment"]["over_run"] = {
        "seconds": 73.2, "cpu_busy_ratio": 0.133, "cpu_softirq_ratio": 0.025, "swapped_in_bytes": 0,
        "swapped_out_bytes": 4096,
        "interfaces": {"lo": {"rx_bytes_per_second": 73712, "tx_bytes_per_second": 73712, "rx_packets": 58217,
                              "tx_packets": 58217},
                       "docker0": {"rx_bytes_per_second": 0, "tx_bytes_per_second": 0, "rx_packets": 0,
                                   "tx_packets": 0}},
    }  # fmt: skip
    m["deployments"] = [{
        "topology": {"kind": "hub", "params": {"hosts": 2}},
        "offloads": {"h1:h1-eth0": {"tso": "off", "gso": "off", "gro": "on", "lro": "off [fixed]"}},
        "interface_traffic": {"h1:h1-eth0": {"rx_bytes_per_second": 826121.7, "tx_bytes_per_second": 180722.6,
                                             "rx_packets": 94465, "tx_packets": 88681}},
    }]  # fmt: skip
    (run_dir / "manifest.json").write_text(json.dumps(m))
    render_all(run_dir)
    html = (run_dir / "report.html").read_text()
    assert (
        "Over 73 s: the host's CPU (all cores) busy 13.3 %, of it softirq\n2.5 %; swapped 0 B in, 4096 B out." in html
    )
    assert '<th>lo</th><td class="num">589.7 kbit/s</td>' in html and "docker0" not in html  # idle ones left out
    lab = html[html.index("Lab interfaces, lab 1: hub") :]
    assert "<th>h1:h1-eth0</th><td>off</td><td>off</td><td>on</td><td>off [fixed]</td>" in lab
    assert '<td class="num">6.61 Mbit/s</td><td class="num">1.45 Mbit/s</td><td class="num">94465</td>' in lab


@pytest.mark.parametrize("width", [7.5, 9.0, 14.0])
def test_a_long_plot_title_stays_inside_the_figure(width):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from protolab.results.plots import suptitle

    title = "Diagram 3: CPU of the receiver (h1) and the sender (h2) vs parallel transfers (100 Mbit switch), " * 2
    fig = Figure(figsize=(width, 6.0), dpi=110, layout="constrained")
    fig.subplots()
    text = suptitle(fig, title.strip())
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    box = text.get_window_extent(canvas.get_renderer())
    assert "\n" in text.get_text()
    assert box.x0 >= 0 and box.x1 <= fig.bbox.width, (box, fig.bbox.width)
