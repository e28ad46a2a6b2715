"""protolab.results.derived: sums, ratios and fits across sweep points, their checks, tables, scatter plots and
report section, from synthetic tidy rows and a synthetic manifest; and the spec errors of `derived:`."""

from __future__ import annotations

import csv
import itertools
import json
import random
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from pydantic import ValidationError

from protolab import spec
from protolab.errors import SpecError
from protolab.model.report import Check, Derived, Plot
from protolab.results import RunDir, build_summary, evaluate, render_all
from protolab.results.checks import sweep_of, unmeasured
from protolab.results.derived import DerivedData
from protolab.results.plots import scatter_png

MINI = Path(__file__).parent / "fixtures" / "results" / "mini.yaml"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

# a PDU type -> integers, reals, octet strings; its complexity 1 x integers + 4 x reals + 4 x octet strings
PDU = {"entity": (2, 1, 0), "fire": (5, 0, 1), "detonate": (8, 3, 1), "signal": (12, 2, 2), "data": (20, 4, 0)}
SWEEP = {"pdu": list(PDU), "syntax": ["raw", "ber", "skinny"], "budget": ["none", "tight"]}
LINES = {"raw": (1.0e-3, 2e-5), "ber": (1.5e-3, 8e-5), "skinny": (1.1e-3, 3e-5)}  # delay = c0 + c1 x integers
COLUMNS = ["rx_delay_mean_seconds", "rx_pdu_integers", "rx_pdu_reals", "rx_pdu_octet_strings"]

DERIVED = {
    "sums": [{"name": "complexity", "of": {"rx_pdu_integers": 1, "rx_pdu_reals": 4, "rx_pdu_octet_strings": 4}}],
    "ratios": [
        {"name": "degradation", "column": "rx_delay_mean_seconds", "axis": "syntax", "numerator": "ber",
         "denominator": "raw", "minus_one": True},
        {"name": "speedup", "column": "rx_delay_mean_seconds", "axis": "syntax", "numerator": "ber",
         "denominator": "skinny"},
    ],
    "fits": [
        {"name": "delay_vs_integers", "x": "rx_pdu_integers", "y": "rx_delay_mean_seconds", "group": "syntax",
         "where": {"budget": "none"}},
        {"name": "speedup_vs_complexity", "x": "complexity", "y": "speedup", "where": {"budget": "none"}},
    ],
}  # fmt: skip


@dataclass
class Exp:
    checks: list[Check] = field(default_factory=list)
    derived: Derived = field(default_factory=Derived)


Pt = spec.Point  # around a stand-in experiment (Exp): its checks and derived results are all evaluate() reads


def points(checks=(), derived=DERIVED) -> list[Pt]:
    exp: Any = Exp([Check.model_validate(c) for c in checks], Derived.model_validate(derived))
    return [Pt(i, dict(zip(SWEEP, c, strict=True)), exp) for i, c in enumerate(itertools.product(*SWEEP.values()))]


def delay(values: dict[str, Any], noise: float = 0.0, rng: random.Random | None = None) -> float:
    c0, c1 = LINES[values["syntax"]]
    d = (c0 + c1 * PDU[values["pdu"]][0]) * (1.2 if values["budget"] == "tight" else 1.0)
    return d * (1 + rng.gauss(0, noise)) if rng else d


def tidy(pts: list[Pt], noise: float = 0.0, reps: int = 2, seed: int = 1) -> list[dict[str, Any]]:
    """Two repetitions per point, the delay split +-1 % around the model (mean = the model, times noise)."""
    rng = random.Random(seed)
    rows = []
    for p in pts:
        ints, reals, octets = PDU[p.values["pdu"]]
        d = delay(p.values, noise, rng if noise else None)
        for rep in range(reps):
            spread = 1 + (0.01 if rep % 2 == 0 else -0.01)
            rows.append({"point": p.id, "repetition": rep, **p.values, "rx_delay_mean_seconds": d * spread,
                         "rx_pdu_integers": float(ints), "rx_pdu_reals": float(reals),
                         "rx_pdu_octet_strings": float(octets)})  # fmt: skip
    return rows


def build(rows, pts=None, derived=DERIVED) -> DerivedData:
    pts = pts or points(derived=derived)
    return DerivedData.build(Derived.model_validate(derived), sweep_of(pts), rows)


def pid(pts: list[Pt], **values: str) -> str:
    return next(p.id for p in pts if all(p.values[k] == v for k, v in values.items()))


# -- sums and ratios ---------------------------------------------------------------------------------------------


def test_sum_is_the_weighted_sum_of_the_means():
    pts = points()
    rows = tidy(pts)
    rows[0]["rx_pdu_integers"] = 4.0  # entity/raw/none: integers (4 + 2) / 2 = 3 over its two repetitions
    rows[1]["rx_pdu_reals"] = None  # an empty cell is skipped: reals = 1
    data = build(rows, pts)
    by_point = {r.point: r.fields["complexity"] for r in data.sums["complexity"]}
    assert by_point[pts[0].id] == pytest.approx(3 + 4 * 1 + 4 * 0)
    assert by_point[pid(pts, pdu="signal", syntax="ber", budget="tight")] == pytest.approx(12 + 4 * 2 + 4 * 2)
    assert len(by_point) == len(pts)
    rows = [r for r in tidy(pts) if r["point"] != pts[3].id or r.pop("rx_pdu_reals") is None]
    assert {r.point: r.fields["complexity"] for r in build(rows, pts).sums["complexity"]}[pts[3].id] is None


def test_ratios_per_combination_of_the_other_axes():
    pts = points()
    data = build(tidy(pts), pts)
    deg = data.ratios["degradation"]
    assert [tuple(r.values.values()) for r in deg] == list(itertools.product(SWEEP["pdu"], SWEEP["budget"]))
    row = deg[0]  # entity, none
    assert row.values == {"pdu": "entity", "budget": "none"}
    ber = delay({"pdu": "entity", "syntax": "ber", "budget": "none"})
    raw = delay({"pdu": "entity", "syntax": "raw", "budget": "none"})
    assert row.value == pytest.approx((ber - raw) / raw)  # minus_one
    assert row.numerator == (pid(pts, pdu="entity", syntax="ber", budget="none"), pytest.approx(ber))
    assert row.denominator == (pid(pts, pdu="entity", syntax="raw", budget="none"), pytest.approx(raw))
    assert row.sums == {"complexity": pytest.approx(6.0)} and row.why is None
    sk = delay({"pdu": "data", "syntax": "skinny", "budget": "tight"})
    speed = {tuple(r.values.values()): r.value for r in data.ratios["speedup"]}
    assert speed["data", "tight"] == pytest.approx(delay({"pdu": "data", "syntax": "ber", "budget": "tight"}) / sk)
    assert all(v > 1 for v in speed.values())


def test_a_ratio_without_a_denominator_says_why():
    pts = points()
    rows = tidy(pts)
    raw_fire = pid(pts, pdu="fire", syntax="raw", budget="none")
    raw_data = pid(pts, pdu="data", syntax="raw", budget="tight")
    raw_sig = pid(pts, pdu="signal", syntax="raw", budget="none")
    rows = [r for r in rows if r["point"] != raw_fire]  # never measured
    for r in rows:
        if r["point"] == raw_data:
            r["rx_delay_mean_seconds"] = 0.0
        if r["point"] == raw_sig:
            r["rx_delay_mean_seconds"] = None  # measured, column empty
    deg = {tuple(r.values.values()): r for r in build(rows, pts).ratios["degradation"]}
    assert deg["fire", "none"].value is None and deg["fire", "none"].why == f"{raw_fire} (syntax=raw) was not measured"
    assert deg["data", "tight"].value is None and "is 0 at" in deg["data", "tight"].why
    assert deg["signal", "none"].value is None and deg["signal", "none"].why.startswith("no rx_delay_mean_seconds at")
    assert deg["entity", "none"].value is not None and deg["entity", "none"].why is None


def test_a_ratio_over_a_value_the_run_lacks_says_so():
    pts = [p for p in points() if p.values["syntax"] != "skinny"]
    speed = build(tidy(pts), pts).ratios["speedup"]
    assert speed and all(r.value is None and r.why == "no point with syntax=skinny" for r in speed)


# -- fits ----------------------------------------------------------------------------------------------------------


def test_fit_recovers_a_known_line_per_group():
    pts = points()
    data = build(tidy(pts), pts)
    fits = data.fits["delay_vs_integers"]
    assert [g.group for g in fits] == ["raw", "ber", "skinny"]
    for g in fits:
        c0, c1 = LINES[g.group]
        assert g.c0 == pytest.approx(c0) and g.c1 == pytest.approx(c1)
        assert g.r2 == pytest.approx(1.0) and g.n == 5 and g.left_out == 0  # budget: none only
        assert g.max_abs_residual == pytest.approx(0, abs=1e-12)
        assert {e.values["budget"] for e in g.residuals} == {"none"}


def test_fit_with_noise_matches_least_squares_and_states_every_residual():
    pts = points()
    data = build(tidy(pts, noise=0.03, seed=5), pts)
    ber = next(g for g in data.fits["delay_vs_integers"] if g.group == "ber")
    xs = np.array([e.x for e in ber.residuals])
    ys = np.array([e.y for e in ber.residuals])
    c1, c0 = np.polyfit(xs, ys, 1)
    assert ber.c0 == pytest.approx(c0) and ber.c1 == pytest.approx(c1)
    assert ber.c0 == pytest.approx(LINES["ber"][0], rel=0.15) and ber.c1 == pytest.approx(LINES["ber"][1], rel=0.15)
    resid = ys - (c0 + c1 * xs)
    assert [e.residual for e in ber.residuals] == pytest.approx(list(resid))
    assert sum(e.residual for e in ber.residuals) == pytest.approx(0, abs=1e-12)
    assert ber.max_abs_residual == pytest.approx(max(abs(resid)))
    assert 0.5 < ber.r2 < 1.0
    # standard errors as the textbook gives them
    s2 = sum(resid**2) / (len(xs) - 2)
    sxx = sum((xs - xs.mean()) ** 2)
    assert ber.c1_se == pytest.approx(np.sqrt(s2 / sxx))
    assert ber.c0_se == pytest.approx(np.sqrt(s2 * (1 / len(xs) + xs.mean() ** 2 / sxx)))
    dumped = data.to_json()["fits"]["delay_vs_integers"]["groups"][1]
    assert dumped["group"] == "ber" and len(dumped["residuals"]) == 5
    assert dumped["residuals"][0]["values"] == {"pdu": "entity", "syntax": "ber", "budget": "none"}


def test_fit_over_a_ratio_takes_the_numerator_points_sums():
    pts = points()
    fit = build(tidy(pts), pts).fits["speedup_vs_complexity"]
    assert len(fit) == 1 and fit[0].group is None and fit[0].n == 5
    assert sorted(e.x for e in fit[0].residuals) == [6.0, 9.0, 24.0, 28.0, 36.0]
    assert all(e.values["budget"] == "none" and "syntax" not in e.values for e in fit[0].residuals)


def test_fit_leaves_out_points_without_x_or_y_and_counts_them():
    pts = points()
    gone = pid(pts, pdu="fire", syntax="ber", budget="none")
    rows = [r | {"rx_pdu_integers": None} if r["point"] == gone else r for r in tidy(pts)]
    ber = next(g for g in build(rows, pts).fits["delay_vs_integers"] if g.group == "ber")
    assert ber.n == 4 and ber.left_out == 1 and ber.c1 == pytest.approx(LINES["ber"][1])


def test_a_fit_needs_two_x_values():
    derived = {"fits": [{"name": "f", "x": "rx_pdu_integers", "y": "rx_delay_mean_seconds",
                         "where": {"pdu": "fire", "budget": "none"}}]}  # fmt: skip
    pts = points(derived=derived)
    f = build(tidy(pts), pts, derived).fits["f"][0]
    assert f.c0 is None and f.n == 3 and "two x values" in f.why
    derived["fits"][0]["where"] = {"pdu": "fire", "budget": "none", "syntax": "ber"}
    f = build(tidy(pts), pts, derived).fits["f"][0]
    assert f.c0 is None and f.n == 1 and "a line needs 2" in f.why
    derived["fits"][0]["where"] = {"pdu": "nosuch"}
    data = build(tidy(pts), pts, derived)
    assert "f" not in data.fits and data.problems == ["fit f: no point has pdu = nosuch"]


# -- checks --------------------------------------------------------------------------------------------------------

CHECKS = [
    {"name": "BER costs more than raw for every type", "derived": "degradation", "min": 0},
    {"name": "skinny recovers most", "derived": "speedup", "min": 1},
    {"name": "the linear model fits", "derived": "delay_vs_integers", "field": "r2", "min": 0.9,
     "where": {"syntax": "ber"}},
    {"name": "more fields pay more", "derived": "delay_vs_integers", "field": "c1", "min": 0},
    {"name": "plain: delay below 10 ms", "column": "rx_delay_mean_seconds", "max": 0.01, "where": {"pdu": "data"}},
]  # fmt: skip


def by_name(checks: list[dict[str, Any]], name: str) -> dict[str, Any]:
    found = [c for c in checks if c["name"] == name]
    assert len(found) == 1, (name, checks)
    return found[0]


def test_derived_checks_pass_with_one_entry_each():
    pts = points(CHECKS)
    rows = tidy(pts, noise=0.01, seed=2)
    checks = evaluate(pts, rows)
    assert len(checks) == 6 + 4  # the plain check at each of the 6 data points, one entry per derived check
    assert all(c["passed"] for c in checks), [c for c in checks if not c["passed"]]
    plain = by_name([c for c in checks if c["point"] == pts[-1].id], CHECKS[4]["name"])
    assert set(plain) == {"name", "point", "values", "column", "measured", "bound", "passed", "reproduction"}
    deg = by_name(checks, CHECKS[0]["name"])
    assert deg["rows"] == 10 and deg["rows_failed"] == 0 and deg["derived"] == "degradation"
    # the worst row: the one closest to the bound (the smallest degradation)
    least = min(build(rows, pts).ratios["degradation"], key=lambda r: r.value)
    assert deg["values"] == least.values and deg["measured"] == least.value and least.values["pdu"] == "entity"
    assert deg["point"] == least.numerator[0] and deg["bound"] == {"min": 0, "max": None}
    r2 = by_name(checks, CHECKS[2]["name"])
    assert r2["rows"] == 1 and r2["values"] == {"budget": "none", "syntax": "ber"}
    assert r2["column"] == "delay_vs_integers.r2" and r2["field"] == "r2"
    slope = by_name(checks, CHECKS[3]["name"])
    assert slope["rows"] == 3 and slope["measured"] == pytest.approx(LINES["raw"][1], rel=0.25)  # the smallest slope
    assert slope["values"] == {"budget": "none", "syntax": "raw"}
    assert slope["unit_column"] == "rx_delay_mean_seconds"


def test_derived_checks_fail_recording_the_worst_row():
    pts = points(CHECKS)
    rows = tidy(pts, noise=0.03, seed=5)
    cheap = pid(pts, pdu="signal", syntax="ber", budget="tight")
    for r in rows:
        if r["point"] == cheap:  # ber faster than raw and skinny for one type
            r["rx_delay_mean_seconds"] = 0.5e-3
        if r["syntax"] == "raw" and r["budget"] == "none":  # raw delay falling with more integers
            r["rx_delay_mean_seconds"] = 5e-3 - 1e-4 * r["rx_pdu_integers"]
    summary = build_summary("ts", "r1", pts, rows, COLUMNS)
    checks = summary["checks"]
    deg = by_name(checks, CHECKS[0]["name"])
    assert deg["passed"] is False and deg["values"] == {"pdu": "signal", "budget": "tight"} and deg["point"] == cheap
    assert deg["measured"] < 0 and deg["rows_failed"] >= 1
    speed = by_name(checks, CHECKS[1]["name"])
    assert speed["passed"] is False and speed["values"] == {"pdu": "signal", "budget": "tight"}
    slope = by_name(checks, CHECKS[3]["name"])
    assert slope["passed"] is False and slope["values"] == {"budget": "none", "syntax": "raw"} and slope["measured"] < 0
    assert slope["rows"] == 3 and slope["rows_failed"] == 1
    assert by_name(checks, CHECKS[2]["name"])["passed"] is True  # ber's own line still fits
    assert summary["checks_failed"] == 3 and summary["checks_passed"] == len(checks) - 3


def test_a_poor_fit_fails_the_r2_check():
    pts = points(CHECKS[2:3])
    rows = tidy(pts)
    rng = random.Random(3)
    for r in rows:
        if r["syntax"] == "ber":
            r["rx_delay_mean_seconds"] = 2e-3 * (1 + rng.uniform(-0.5, 0.5))
    (c,) = evaluate(pts, rows)
    assert c["passed"] is False and c["measured"] < 0.9 and c["values"]["syntax"] == "ber"


def test_a_derived_check_without_rows_or_values_fails():
    pts = points([{"name": "no rows", "derived": "degradation", "min": 0, "where": {"pdu": "nosuch"}},
                  {"name": "no value", "derived": "degradation", "min": 0}])  # fmt: skip
    raw = pid(pts, pdu="fire", syntax="raw", budget="none")
    rows = [r for r in tidy(pts) if r["point"] != raw]
    none, missing = evaluate(pts, rows)
    assert none["passed"] is False and none["rows"] == 0 and none["measured"] is None and none["why"]
    assert missing["passed"] is False and missing["measured"] is None and missing["rows_failed"] == 1
    assert missing["values"] == {"pdu": "fire", "budget": "none"} and "not measured" in missing["why"]
    assert missing["rows_unmeasured"] == 1 and unmeasured(missing) and unmeasured(none)


def test_a_seed_conclusion_the_run_lacks_values_for_is_not_a_finding():
    """A reproduction check whose only failing rows have no value (a point not measured: an interrupted run, a
    quick profile) says not measured; with one measured row outside the bound it is a finding."""
    check = {"name": "BER costs more", "derived": "degradation", "min": 0, "reproduction": True}
    pts = points([check])
    raw = pid(pts, pdu="fire", syntax="raw", budget="none")
    rows = [r for r in tidy(pts) if r["point"] != raw]
    s = build_summary("ts", "r", pts, rows, COLUMNS)
    (c,) = s["checks"]
    assert not c["passed"] and unmeasured(c) and c["rows_unmeasured"] == 1
    assert (s["reproduction_passed"], s["reproduction_failed"], s["reproduction_unmeasured"]) == (0, 0, 1)
    ber = pid(pts, pdu="data", syntax="ber", budget="none")
    for r in rows:
        if r["point"] == ber:
            r["rx_delay_mean_seconds"] = 1e-6  # BER faster than raw for data PDUs: the conclusion fails there
    s = build_summary("ts", "r", pts, rows, COLUMNS)
    assert not unmeasured(s["checks"][0])
    assert (s["reproduction_passed"], s["reproduction_failed"], s["reproduction_unmeasured"]) == (0, 1, 0)


def test_named_and_null_axis_values_compare_as_tidy_csv_writes_them():
    """An axis of named settings ({name: ..., mix: ...}) and a null value, as transfer-syntax.yaml has them; the
    runner's rows carry them as written (the name, 'null')."""
    sweep = {"pdu": [{"name": "es", "mix": "entity_state=1"}, {"name": "fire", "mix": "fire=1"},
                     {"name": "big", "mix": "entity_state=1"}], "syntax": ["raw", "ber"], "budget": [None]}  # fmt: skip
    ints = {"es": 40.0, "fire": 20.0, "big": 300.0}
    derived = Derived.model_validate(
        {
            "ratios": [
                {
                    "name": "deg",
                    "column": "rx_delay_mean_seconds",
                    "axis": "syntax",
                    "numerator": "ber",
                    "denominator": "raw",
                    "minus_one": True,
                }
            ],
            "fits": [
                {
                    "name": "line",
                    "x": "rx_pdu_integers",
                    "y": "rx_delay_mean_seconds",
                    "group": "syntax",
                    "where": {"budget": None},
                }
            ],
        }  # fmt: skip
    )
    checks = [
        Check(name="ber costs", derived="deg", min=0, where={"pdu": "big"}),
        Check(name="slope", derived="line", field="c1", min=0, where={"budget": None, "syntax": "ber"}),
    ]
    exp = Exp(checks, derived)
    pts = [Pt(i, dict(zip(sweep, c, strict=True)), exp) for i, c in enumerate(itertools.product(*sweep.values()))]
    rows = []
    for p in pts:
        name, slope = p.values["pdu"]["name"], 3e-6 if p.values["syntax"] == "ber" else 1e-6
        rows.append({"point": p.id, "repetition": 0, "pdu": name, "syntax": p.values["syntax"], "budget": "null",
                     "rx_pdu_integers": ints[name], "rx_delay_mean_seconds": 1e-3 + slope * ints[name]})  # fmt: skip
    deg, slope = evaluate(pts, rows)
    assert deg["passed"] is True and deg["values"] == {"pdu": "big", "budget": "null"} and deg["rows"] == 1
    assert deg["measured"] == pytest.approx((1e-3 + 9e-4) / (1e-3 + 3e-4) - 1)
    assert slope["passed"] is True and slope["measured"] == pytest.approx(3e-6)
    assert derived.problems({a: list(v) for a, v in sweep.items()}, checks) == []


def test_check_model_forms():
    assert Check(name="c", derived="speedup", min=1).column is None
    with pytest.raises(ValidationError, match="give one of them"):
        Check(name="c", min=1)
    with pytest.raises(ValidationError, match="give one of them"):
        Check(name="c", column="a_seconds", derived="speedup", min=1)
    with pytest.raises(ValidationError, match="give derived"):
        Check(name="c", column="a_seconds", field="r2", min=1)
    with pytest.raises(ValidationError, match="no derived"):
        Check(name="c", derived="speedup", trials="t_total", confidence=0.9, target=0.1)


# -- render: derived.json, tables, scatter plots, report ----------------------------------------------------------

PLOTS = [
    {"name": "fig3", "title": "Speed-up vs complexity", "kind": "scatter", "x": "complexity", "y": ["speedup"],
     "size": "complexity", "label": "pdu", "fit": "speedup_vs_complexity", "where": {"budget": "none"}},
    {"name": "fig6", "title": "Delay vs integers", "kind": "scatter", "x": "rx_pdu_integers",
     "y": ["rx_delay_mean_seconds"], "group": "syntax", "label": "pdu", "fit": "delay_vs_integers",
     "where": {"budget": "none"}},
]  # fmt: skip


def make_run(root: Path, noise: float = 0.0) -> Path:
    pts = points(CHECKS)
    spec_ = {"name": "ts", "description": "transfer syntaxes", "seed": {"reproduces": "none (unit test)"},
             "sweep": SWEEP, "derived": DERIVED, "plots": PLOTS, "checks": CHECKS}  # fmt: skip
    run = RunDir.create(root / "results", "ts", "20261122T031500Z-ab12")
    run.write_json("manifest.json", {"schema_version": 1, "experiment": "ts", "run_id": run.run_id, "spec": spec_,
                                     "points": [{"id": p.id, "values": p.values} for p in pts]})  # fmt: skip
    run.write_tidy(tidy(pts, noise=noise, seed=5), list(SWEEP), COLUMNS)
    run.write_json("summary.json", build_summary("ts", run.run_id, pts, run.read_tidy(), COLUMNS))
    return run.path


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    run_dir = make_run(tmp_path_factory.mktemp("derived"), noise=0.02)
    return run_dir, render_all(run_dir)


def test_render_writes_derived_json_tables_and_scatter_plots(rendered):
    run_dir, paths = rendered
    names = {str(p.relative_to(run_dir)) for p in paths}
    assert {"derived.json", "plots/fig3.png", "plots/fig6.png", "report.html"} <= names
    for n in ("complexity", "degradation", "speedup", "delay_vs_integers", "speedup_vs_complexity"):
        assert {f"tables/derived-{n}.csv", f"tables/derived-{n}.md"} <= names
    assert "tables/derived-delay_vs_integers-residuals.csv" in names
    for png in ("fig3", "fig6"):
        data = (run_dir / "plots" / f"{png}.png").read_bytes()
        assert data[:8] == PNG_MAGIC and len(data) > 15_000
    saved = json.loads((run_dir / "derived.json").read_text())
    assert set(saved) == {"schema_version", "sums", "ratios", "fits"}
    assert len(saved["ratios"]["degradation"]["rows"]) == 10 and len(saved["sums"]["complexity"]["rows"]) == 30
    assert [g["group"] for g in saved["fits"]["delay_vs_integers"]["groups"]] == ["raw", "ber", "skinny"]


def test_derived_tables_csv_in_base_units_markdown_in_ms(rendered):
    run_dir, _ = rendered
    coef = list(csv.DictReader((run_dir / "tables" / "derived-delay_vs_integers.csv").open()))
    assert [r["syntax"] for r in coef] == ["raw", "ber", "skinny"] and coef[0]["n"] == "5"
    assert float(coef[1]["c1"]) == pytest.approx(LINES["ber"][1], rel=0.15) and float(coef[1]["r2"]) > 0.9
    resid = list(csv.DictReader((run_dir / "tables" / "derived-delay_vs_integers-residuals.csv").open()))
    assert len(resid) == 15 and {"rx_pdu_integers", "rx_delay_mean_seconds", "fitted", "residual"} <= set(resid[0])
    deg = list(csv.DictReader((run_dir / "tables" / "derived-degradation.csv").open()))
    assert (deg[0]["pdu"], deg[0]["budget"], deg[0]["complexity"]) == ("entity", "none", "6.0")
    md = (run_dir / "tables" / "derived-delay_vs_integers.md").read_text()
    assert "- syntax = ber: c0 = 1." in md and " ms (± " in md and "ms per rx pdu integers" in md
    assert "r² = 0.9" in md and "n = 5" in md and "max \\|residual\\| = " in md
    md = (run_dir / "tables" / "derived-speedup.md").read_text()
    assert "| rx_delay_mean_seconds at syntax=ber (ms) | at syntax=skinny (ms) | speedup | complexity |" in md


def test_report_has_a_derived_section_and_derived_checks(rendered):
    run_dir, _ = rendered
    html = (run_dir / "report.html").read_text()
    section = html[html.index('<section id="derived">') :]
    section = section[: section.index("</section>")]
    assert "speedup = rx_delay_mean_seconds[syntax=ber] / rx_delay_mean_seconds[syntax=skinny]" in section
    assert "syntax = raw: c0 = " in section and "tables/derived-speedup.csv" in section
    checks = html[html.index('id="checks"') :]
    assert "BER costs more than raw for every type" in checks and "10 / 10" in checks
    assert "worst of 10: pdu=entity, budget=" in checks


def test_rerender_gives_the_same_derived_files(tmp_path):
    run_dir = make_run(tmp_path)
    render_all(run_dir)
    first = {p.name: p.read_bytes() for p in (run_dir / "tables").iterdir()}
    derived = (run_dir / "derived.json").read_bytes()
    (run_dir / "derived.json").unlink()
    shutil.rmtree(run_dir / "tables")
    render_all(run_dir)  # from manifest.json and tidy.csv alone
    assert {p.name: p.read_bytes() for p in (run_dir / "tables").iterdir()} == first
    assert (run_dir / "derived.json").read_bytes() == derived


def test_bad_derived_in_a_manifest_is_a_problem_line(tmp_path):
    run_dir = make_run(tmp_path)
    m = json.loads((run_dir / "manifest.json").read_text())
    m["spec"]["derived"]["ratios"][1]["denominator"] = "nosuch"
    m["spec"]["plots"][0]["label"] = "nosuchaxis"
    (run_dir / "manifest.json").write_text(json.dumps(m))
    paths = render_all(run_dir)
    html = (run_dir / "report.html").read_text()
    assert "denominator &#39;nosuch&#39; is not a value of syntax" in html
    assert "nosuchaxis" in html and not (run_dir / "plots" / "fig3.png").exists()
    assert run_dir / "plots" / "fig6.png" in paths


def test_scatter_refuses_what_it_cannot_draw():
    pts = points()
    data = build(tidy(pts), pts)
    plot = Plot.model_validate(PLOTS[0])
    assert scatter_png(plot, data)[:8] == PNG_MAGIC
    with pytest.raises(ValueError, match="not an axis of these rows"):
        scatter_png(plot.model_copy(update={"label": "syntax"}), data)  # a ratio's rows have no syntax
    with pytest.raises(ValueError, match="no point has both"):
        scatter_png(plot, build([], pts))
    with pytest.raises(ValueError, match="tidy column"):
        scatter_png(plot.model_copy(update={"x": "rx_pdu_integers"}), data)


def test_plot_model_scatter_forms():
    with pytest.raises(ValidationError, match="one y"):
        Plot(name="s", title="t", kind="scatter", x="a", y=["b", "c"])
    with pytest.raises(ValidationError, match="for scatter plots"):
        Plot(name="s", title="t", kind="bar", x="a", y=["b"], size="c")
    with pytest.raises(ValidationError, match="no reference"):
        Plot(name="s", title="t", kind="scatter", x="a", y=["b"], reference="rate")


# -- spec errors ------------------------------------------------------------------------------------------------

MINI_DERIVED = {
    "sums": [{"name": "wire", "of": {"h3_rx_bits_per_second": 1, "h4_rx_bits_per_second": 1}}],
    "ratios": [{"name": "switch_gain", "column": "f1_goodput_bits_per_second", "axis": "topology",
                "numerator": "switched", "denominator": "hub"}],
    "fits": [{"name": "goodput_vs_wire", "x": "wire", "y": "f1_goodput_bits_per_second", "group": "topology"}],
}  # fmt: skip


def write_mini(tmp_path: Path, derived: dict[str, Any], checks=(), plots=()) -> Path:
    raw = yaml.safe_load(MINI.read_text())
    raw["derived"] = derived
    raw["checks"] = raw["checks"] + list(checks)
    raw["plots"] = raw["plots"] + list(plots)
    path = tmp_path / "mini.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def test_a_valid_derived_section_loads(tmp_path):
    checks = [
        {"name": "switching pays", "derived": "switch_gain", "min": 1, "where": {"rate": "100Mbit"}},
        {"name": "line", "derived": "goodput_vs_wire", "field": "c1", "min": 0, "where": {"topology": "hub"}},
    ]
    plots = [{"name": "gain", "title": "t", "kind": "scatter", "x": "wire", "y": ["f1_goodput_bits_per_second"],
              "group": "topology", "label": "rate", "fit": "goodput_vs_wire"}]  # fmt: skip
    plan = spec.load(write_mini(tmp_path, MINI_DERIVED, checks, plots))
    assert plan.base.derived.ratios[0].numerator == "switched"
    assert [c.derived for c in plan.base.checks if c.derived] == ["switch_gain", "goodput_vs_wire"]


def test_a_ratio_naming_a_value_the_sweep_lacks_is_a_spec_error(tmp_path):
    bad = json.loads(json.dumps(MINI_DERIVED))
    bad["ratios"][0]["denominator"] = "ring"
    with pytest.raises(SpecError, match=r"denominator 'ring' is not a value of topology \(hub, switched\)"):
        spec.load(write_mini(tmp_path, bad))
    bad["ratios"][0]["axis"] = "speed"
    with pytest.raises(SpecError, match="'speed' is not a sweep axis"):
        spec.load(write_mini(tmp_path, bad))


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (lambda d: d["sums"][0]["of"].update(nosuch_total=1), r"\['nosuch_total'\] are not columns"),
        (lambda d: d["fits"][0].update(group="nosuch"), "'nosuch' is not a sweep axis"),
        (
            lambda d: d["fits"][0].update(x="h3_rx_bits_per_second", y="switch_gain", group=None),
            "is a tidy column, which a ratio's row does not carry",
        ),
        (lambda d: d["fits"][0].update(y="switch_gain"), "its rows are ratios over topology, which have no topology"),
        (lambda d: d["fits"].append({"name": "wire", "x": "wire", "y": "wire"}), "derived names repeat"),
        (lambda d: d["ratios"][0].update(numerator="hub"), "numerator and denominator are both 'hub'"),
    ],
)
def test_broken_derived_sections_are_spec_errors(tmp_path, change, why):
    bad = json.loads(json.dumps(MINI_DERIVED))
    change(bad)
    with pytest.raises(SpecError, match=why):
        spec.load(write_mini(tmp_path, bad))


@pytest.mark.parametrize(
    ("check", "why"),
    [
        ({"name": "c", "derived": "nosuch", "min": 0}, "'nosuch' is not a derived sum, ratio or fit"),
        ({"name": "c", "derived": "goodput_vs_wire", "min": 0}, "needs a field"),
        ({"name": "c", "derived": "switch_gain", "field": "r2", "min": 0}, "field is for fits"),
        ({"name": "c", "derived": "switch_gain", "min": 0, "where": {"topology": "hub"}}, "ratios over topology"),
    ],
)
def test_derived_checks_naming_what_is_not_there_are_spec_errors(tmp_path, check, why):
    with pytest.raises(SpecError, match=why):
        spec.load(write_mini(tmp_path, MINI_DERIVED, [check]))


def test_a_scatter_plot_naming_a_missing_fit_is_a_spec_error(tmp_path):
    plot = {"name": "s", "title": "t", "kind": "scatter", "x": "wire", "y": ["f1_goodput_bits_per_second"],
            "fit": "nosuch"}  # fmt: skip
    with pytest.raises(SpecError, match="fit 'nosuch' is not a derived fit"):
        spec.load(write_mini(tmp_path, MINI_DERIVED, plots=[plot]))


def test_a_two_regressor_fit_recovers_a_known_plane_and_matches_least_squares():
    """x2: delay = c0 + c1 integers + c2 reals per syntax, exact, then with noise against numpy's own lstsq;
    the coefficient table, the line in the report and a check on c2 carry it."""
    derived = {"fits": [{"name": "plane", "x": "rx_pdu_integers", "x2": "rx_pdu_reals", "y": "rx_delay_mean_seconds",
                         "group": "syntax", "where": {"budget": "none"}}]}  # fmt: skip
    pts = points(derived=derived)
    rows = tidy(pts)
    plane = {"raw": (1e-3, 2e-5, 5e-5), "ber": (1.5e-3, 8e-5, 3e-4), "skinny": (1.1e-3, 3e-5, 1e-4)}
    for r in rows:
        c0, c1, c2 = plane[r["syntax"]]
        r["rx_delay_mean_seconds"] = c0 + c1 * r["rx_pdu_integers"] + c2 * r["rx_pdu_reals"]
    data = build(rows, pts, derived)
    for g in data.fits["plane"]:
        assert (g.c0, g.c1, g.c2) == pytest.approx(plane[g.group]) and g.r2 == pytest.approx(1.0) and g.n == 5
    rng = random.Random(3)
    for r in rows:
        r["rx_delay_mean_seconds"] *= 1 + rng.gauss(0, 0.05)
    ber = next(g for g in build(rows, pts, derived).fits["plane"] if g.group == "ber")
    by_point: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        if r["syntax"] == "ber" and r["budget"] == "none":
            by_point.setdefault(r["point"], []).append(r)
    a = np.array([[1, v[0]["rx_pdu_integers"], v[0]["rx_pdu_reals"]] for v in by_point.values()], dtype=float)
    y = np.array([np.mean([r["rx_delay_mean_seconds"] for r in v]) for v in by_point.values()])
    want, *_ = np.linalg.lstsq(a, y, rcond=None)
    assert (ber.c0, ber.c1, ber.c2) == pytest.approx(list(want))
    assert ber.c2_se is not None and ber.c2_se > 0 and 0 < ber.r2 < 1
    table = next(t for t in data.tables() if t.name == "plane")
    assert "c2 =" in table.lines[0] and "numpy.linalg.lstsq" in table.note
    dumped = data.to_json()["fits"]["plane"]["groups"][0]
    assert dumped["x2"] == "rx_pdu_reals" and dumped["c2"] == pytest.approx(plane["raw"][2])
    # a check bounds c2 like c1
    chk = Check.model_validate({"name": "reals cost", "derived": "plane", "field": "c2", "min": 0})
    assert [v for _, _, v, _ in data.check_rows(chk)] == pytest.approx([p[2] for p in plane.values()])


def test_a_two_regressor_fit_says_why_when_x_and_x2_move_together():
    derived = {"fits": [{"name": "plane", "x": "rx_pdu_integers", "x2": "twice", "y": "rx_delay_mean_seconds",
                         "where": {"budget": "none", "syntax": "raw"}}],
               "sums": [{"name": "twice", "of": {"rx_pdu_integers": 2}}]}  # fmt: skip
    pts = points(derived=derived)
    g = build(tidy(pts), pts, derived).fits["plane"][0]
    assert g.c0 is None and "not proportional" in (g.why or "")
    with pytest.raises(ValueError, match="x2 'rx_pdu_integers' is also its x or y"):
        Derived.model_validate({"fits": [{"name": "p", "x": "rx_pdu_integers", "x2": "rx_pdu_integers", "y": "a"}]})


def test_the_run_summary_says_finding_or_not_measured(capsys, tmp_path):
    from protolab.orchestrator.summary import print_summary

    check = {"name": "BER costs more", "derived": "degradation", "min": 0, "reproduction": True}
    pts = points([check])
    raw = pid(pts, pdu="fire", syntax="raw", budget="none")
    print_summary(build_summary("ts", "r", pts, [r for r in tidy(pts) if r["point"] != raw], COLUMNS), tmp_path)
    out = capsys.readouterr().out
    assert "the seed's conclusions: 0 hold, 0 do not, 1 not measured" in out
    assert "NOT MEASURED (the seed's conclusion) BER costs more" in out and "FINDING" not in out
