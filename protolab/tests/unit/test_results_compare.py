"""Reference results and comparisons: the statistics on synthetic data with known answers, and the files."""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path

import pytest

from protolab.results import compare as cmp
from protolab.results.compare import Sample, classify, two_sided_test
from protolab.results.store import ResultsError


def _sample(rng: random.Random, n: int, mu: float, sd: float) -> Sample:
    return Sample.of([rng.gauss(mu, sd) for _ in range(n)])  # type: ignore[return-value]


@pytest.mark.parametrize("n", [3, 5, 10])
def test_false_positive_rate_is_near_alpha(n):
    """Same distribution on both sides: 'significant' about alpha of the time (Welch is exact for normals)."""
    rng = random.Random(n)
    trials, alpha = 4000, 0.05
    hits = sum(two_sided_test(_sample(rng, n, 100, 5), _sample(rng, n, 100, 5))[0] < alpha for _ in range(trials))
    assert 0.035 < hits / trials < 0.065, hits / trials


def test_power_on_a_known_shift():
    """A shift of 1 sd with n = 10 each: the share found at alpha 0.05 is the power normal theory gives
    (noncentral t, ~0.56)."""
    import math

    from scipy import stats

    rng = random.Random(7)
    trials, df, nc = 2000, 18, 1 / math.sqrt(2 / 10)
    t = stats.t.ppf(0.975, df)
    theory = 1 - stats.nct.cdf(t, df, nc) + stats.nct.cdf(-t, df, nc)
    hits = sum(two_sided_test(_sample(rng, 10, 100, 5), _sample(rng, 10, 105, 5))[0] < 0.05 for _ in range(trials))
    assert abs(hits / trials - theory) < 0.04, (hits / trials, theory)


def test_one_value_against_a_prediction_interval_keeps_its_alpha():
    rng = random.Random(3)
    trials = 4000
    hits = sum(two_sided_test(_sample(rng, 8, 50, 2), _sample(rng, 1, 50, 2))[0] < 0.05 for _ in range(trials))
    assert 0.035 < hits / trials < 0.065, hits / trials


def test_interval_of_the_difference_covers_the_true_shift():
    rng = random.Random(11)
    covered = 0
    for _ in range(2000):
        _p, lo, hi = two_sided_test(_sample(rng, 6, 10, 1), _sample(rng, 6, 12, 2))
        covered += lo <= 2 <= hi
    assert 0.93 < covered / 2000 < 0.97


def test_classify_needs_significance_and_a_practical_size_and_knows_which_way_is_worse():
    ref = Sample(10, 100.0, 1.0)
    assert classify("f1_goodput_bits_per_second", ref, Sample(10, 90.0, 1.0)).status == "regressed"
    assert classify("f1_goodput_bits_per_second", ref, Sample(10, 110.0, 1.0)).status == "improved"
    assert classify("p_rtt_mean_seconds", ref, Sample(10, 110.0, 1.0)).status == "regressed"
    assert classify("h3_rx_packets_per_second", ref, Sample(10, 90.0, 1.0)).status == "regressed"  # received
    assert classify("h1_tx_packets_per_second", ref, Sample(10, 110.0, 1.0)).status == "changed"  # the load
    small = classify("f1_goodput_bits_per_second", ref, Sample(10, 98.0, 0.1))  # significant, only 2 %
    assert small.status == "unchanged" and small.p < 0.001 and "within 5%" in small.why
    noisy = classify("f1_goodput_bits_per_second", Sample(3, 100.0, 30.0), Sample(3, 80.0, 30.0))
    assert noisy.status == "unchanged" and noisy.p > 0.01
    assert classify("x_total", Sample(1, 1.0, 0.0), Sample(1, 2.0, 0.0)).status == "not comparable"
    assert classify("x_total", None, Sample(1, 2.0, 0.0)).why == "no reference value"


def _family(rng: random.Random, m: int, shifted: int, shift_sd: float) -> list[cmp.Cell]:
    """m cells of n = 6 vs 6 (sd 1, mean 100), the first `shifted` of them moved by shift_sd sds, decided
    as one comparison decides its cells."""
    cells = [cmp.measure("x_delay_seconds", _sample(rng, 6, 100, 1), _sample(rng, 6, 100 + (i < shifted) * shift_sd, 1),
                         f"p{i:03d}") for i in range(m)]  # fmt: skip
    cmp.adjust(cells)
    return [cmp.decide(c, alpha=0.05, threshold=0.0) for c in cells]


def test_many_cells_at_once_keep_the_comparison_false_alarm_rate_near_alpha():
    """100 unchanged cells per comparison: tested one by one at alpha 0.05, nearly every comparison flags
    something (1 - 0.95^100); adjusted by Benjamini-Hochberg, about alpha of the comparisons do (under the
    global null, BH controls the family-wise rate at alpha)."""
    rng = random.Random(5)
    trials = 200
    any_raw = any_bh = 0
    for _ in range(trials):
        cells = _family(rng, 100, 0, 0)
        any_raw += any(c.p < 0.05 for c in cells)
        any_bh += any(c.status != "unchanged" for c in cells)
    assert any_raw / trials > 0.97, any_raw / trials
    assert any_bh / trials < 0.09, any_bh / trials


def test_many_cells_at_once_still_find_a_known_shift():
    """10 of 100 cells moved by 4 sds (n = 6 each: Welch's power ~0.99 alone): BH finds most of them, and
    the share of false discoveries among the flagged stays under alpha."""
    rng = random.Random(9)
    found = false = flagged = 0
    for _ in range(40):
        cells = _family(rng, 100, 10, 4.0)
        hit = [int(c.point[1:]) for c in cells if c.status != "unchanged"]
        found += sum(i < 10 for i in hit)
        false += sum(i >= 10 for i in hit)
        flagged += len(hit)
    assert found / 400 > 0.8, found / 400
    assert false / flagged < 0.05, false / flagged
    one = cmp.decide(cmp.measure("x_delay_seconds", Sample(6, 100.0, 1.0), Sample(6, 110.0, 1.0)))
    assert one.q is None and one.status == "regressed" and one.why.startswith("p ")  # alone: p is q


# -- folders ---------------------------------------------------------------------------------------------------
def make_run(root: Path, run_id: str, goodput: dict[int, list[float]], valid: bool = True, cores: int = 2,
             hash_rate: float | None = None, cpu: float = 0.2) -> Path:  # fmt: skip
    d = root / run_id
    d.mkdir(parents=True)
    points = [{"id": f"p{i:03d}", "values": {"rate": r}, "label": f"rate={r}"} for i, r in enumerate(goodput)]
    manifest = {"schema_version": 1, "experiment": "mini", "run_id": run_id, "profile": "quick",
                "spec": {"sweep": {"rate": list(goodput)}}, "points": points,
                "host": {"cpu_count": cores, "cpu_model": "test cpu"}, "kernel": "6.18",
                "impairment_backend": {"chosen": "fallback"}, "git_commit": {"commit": "abc"},
                "calibration": {"start": {"hash_mib_per_second": hash_rate}}}  # fmt: skip
    (d / "manifest.json").write_text(json.dumps(manifest))
    (d / "summary.json").write_text(json.dumps({"valid": valid, "invalid_reasons": [] if valid else ["cpu busy"]}))
    with (d / "tidy.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["point", "repetition", "rate", "f1_goodput_bits_per_second", "p_rtt_mean_seconds",
                    "h1_cpu_ratio"])  # fmt: skip
        for p, (rate, values) in zip(points, goodput.items(), strict=True):
            for rep, v in enumerate(values):
                w.writerow([p["id"], rep, rate, v, 0.010 + rep * 1e-5, cpu * (1 + 0.01 * (rep % 3))])
    return d


def test_a_reference_pools_runs_and_a_run_compares_unchanged_with_itself(tmp_path):
    a = make_run(tmp_path, "20261123T010000Z-aaaa", {10: [9.5, 9.6, 9.55], 100: [95.0, 95.2, 95.1]})
    b = make_run(tmp_path, "20261123T020000Z-bbbb", {10: [9.52, 9.58, 9.56], 100: [95.1, 95.0, 95.3]})
    ref = cmp.build_reference([a, b])
    p10 = next(p for p in ref["points"] if p["values"] == {"rate": 10})
    assert p10["columns"]["f1_goodput_bits_per_second"]["n"] == 6 and ref["runs"] == [a.name, b.name]
    assert ref["machine"]["cores"] == 2 and ref["machine"]["impairment_backend"] == "fallback"
    c = cmp.compare(b, ref)
    assert not c.failed() and c.counts()["unchanged"] == 6, [x.row() for x in c.cells]
    md = cmp.markdown(c)
    assert "| p000 rate=10 | f1_goodput_bits_per_second | **unchanged** | 6, 9.552" in md


def test_a_slower_run_is_flagged_in_exactly_the_column_it_touches(tmp_path):
    ref = cmp.build_reference([make_run(tmp_path, "r1", {10: [9.5, 9.6, 9.55, 9.52, 9.58]})])
    slow = make_run(tmp_path, "r2", {10: [8.5, 8.6, 8.55, 8.52, 8.58]})
    c = cmp.compare(slow, ref)
    assert c.failed() and {(x.column, x.status) for x in c.cells} == {
        ("f1_goodput_bits_per_second", "regressed"),
        ("p_rtt_mean_seconds", "unchanged"),
        ("h1_cpu_ratio", "unchanged"),
    }
    paths = cmp.write(c, tmp_path / "out")
    assert json.loads(paths[2].read_text())["counts"]["regressed"] == 1 and "regressed" in paths[1].read_text()


def test_another_machine_kind_compares_shapes_only(tmp_path):
    ref = cmp.build_reference([make_run(tmp_path, "r1", {10: [9.5, 9.6, 9.55], 100: [95.0, 95.2, 95.1]})])
    half = make_run(tmp_path, "r2", {10: [4.75, 4.8, 4.77], 100: [47.5, 47.6, 47.55]}, cores=8)  # all halved
    c = cmp.compare(half, ref)
    assert c.shapes_only and "cores 2 -> 8" in c.machine_note and not c.failed()


def test_references_are_made_of_valid_runs_of_one_experiment(tmp_path):
    bad = make_run(tmp_path, "r1", {10: [9.5]}, valid=False)
    with pytest.raises(ResultsError, match="INVALID .*cpu busy"):
        cmp.build_reference([bad])
    with pytest.raises(ResultsError, match="at least one run"):
        cmp.build_reference([])


def test_a_slower_machine_is_not_a_cpu_regression():
    """The machine's hash rate fell 40 % and the CPU share rose 1/0.6: scaled by the calibration, unchanged;
    the same rise without a calibration that moved is a regression."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        ref = cmp.build_reference([make_run(root, "r1", {10: [9.5, 9.6, 9.55, 9.52]}, hash_rate=1000.0)])
        slow_machine = make_run(root, "r2", {10: [9.5, 9.6, 9.55, 9.52]}, hash_rate=600.0, cpu=0.2 / 0.6)
        c = cmp.compare(slow_machine, ref)
        assert "CPU columns scaled by 0.600" in c.machine_note and not c.failed(), [x.row() for x in c.cells]
        same_machine = make_run(root, "r3", {10: [9.5, 9.6, 9.55, 9.52]}, hash_rate=990.0, cpu=0.2 / 0.6)
        got = {x.column: x.status for x in cmp.compare(same_machine, ref).cells}
        assert got["h1_cpu_ratio"] == "regressed"


def test_the_calibration_measures_this_machine():
    from protolab import calibration

    c = calibration.measure()
    assert c["hash_mib_per_second"] > 10 and c["loopback_udp_packets_per_second"] > 1000 and c["seconds"] < 5


def test_cpu_shares_must_also_beat_the_reference_runs_between_run_floor(tmp_path):
    """Two reference runs whose CPU share differs by 0.03 cores set a floor of 0.03: a difference of 0.02
    is unchanged however small its p; one of 0.035 passes the floor. Goodput has no floor."""
    good = [9.5 + 0.01 * i for i in range(10)]
    runs = [make_run(tmp_path, f"r{i}", {10: good, 20: good}, cpu=c) for i, c in enumerate((0.20, 0.23))]
    ref = cmp.build_reference(runs)
    assert ref["cpu_floor"]["cells"] == 2 and ref["cpu_floor"]["cores"] == pytest.approx(0.03 * 1.009)
    floor = ref["cpu_floor"]["cores"]
    base = cmp.Sample(20, 0.215, 0.001)
    near = cmp.decide(cmp.measure("h1_cpu_ratio", base, cmp.Sample(10, 0.235, 0.001)), floor=floor)
    assert near.status == "unchanged" and "between-run floor" in near.why and near.p < 1e-6
    far = cmp.decide(cmp.measure("h1_cpu_ratio", base, cmp.Sample(10, 0.25, 0.001)), floor=floor)
    assert far.status == "regressed"
    assert "CPU shares must also move more than 0.0303 cores" in cmp.compare(runs[1], ref).machine_note
    one = cmp.build_reference(runs[:1])
    assert one["cpu_floor"] is None
    assert "one run: no between-run floor" in cmp.compare(runs[1], one).machine_note


def test_column_scatter_pools_the_runs_relative_spread_over_the_points():
    sc = cmp.column_scatter([("x", [9.0, 11.0]), ("x", [18.0, 22.0]), ("x", [0.0, 0.0]), ("y", [5.0, 5.0])])
    assert sc["x"].relative_sd == pytest.approx(2**0.5 / 10) and sc["x"].df == 2  # the all-zero cell says nothing
    assert "y" not in sc  # runs that agree exactly: no scatter to judge by


def _runs_with_a_run_effect(rng: random.Random, k: int, n: int, level: float, between: float, within: float):
    """k runs of n repetitions: each run's level drawn with sd `between` (relative), repetitions with `within`."""
    out = []
    for _ in range(k):
        run_level = level * (1 + rng.gauss(0, between))
        out.append([run_level * (1 + rng.gauss(0, within)) for _ in range(n)])
    return out


def test_a_run_to_run_effect_fools_welch_but_not_the_between_run_test():
    """Same code, a machine whose run level moves 10 % from run to run while repetitions agree within 1 %
    (as CPU shares and losses do here): Welch's test on the pooled repetitions flags most cells; with the
    new run's mean also tested against the reference runs' scatter, about alpha of them are flagged."""
    rng = random.Random(21)
    trials, points, alpha = 300, 6, 0.05
    welch = both = 0
    for _ in range(trials):
        refs = [_runs_with_a_run_effect(rng, 3, 3, 10.0 * (p + 1), 0.10, 0.01) for p in range(points)]
        scatter = cmp.column_scatter(("x", [sum(r) / len(r) for r in runs]) for runs in refs)["x"]
        for p, runs in enumerate(refs):
            new = cmp.Sample.of(_runs_with_a_run_effect(rng, 1, 3, 10.0 * (p + 1), 0.10, 0.01)[0])
            cell = cmp.measure("x_ratio", cmp.Sample.of([v for r in runs for v in r]), new,
                               ref_runs=[sum(r) / len(r) for r in runs], scatter=scatter)  # fmt: skip
            welch += cell.p_within < alpha
            both += cell.p < alpha
    cells = trials * points
    assert welch / cells > 0.5, welch / cells
    assert both / cells < 1.4 * alpha, both / cells


def test_a_shift_beyond_the_runs_scatter_is_still_found():
    """The same machine, and a new run 50 % up (5 times the run-to-run spread): found in nearly every cell."""
    rng = random.Random(22)
    found = cells = 0
    for _ in range(100):
        refs = [_runs_with_a_run_effect(rng, 3, 3, 10.0 * (p + 1), 0.10, 0.01) for p in range(6)]
        scatter = cmp.column_scatter(("x", [sum(r) / len(r) for r in runs]) for runs in refs)["x"]
        for p, runs in enumerate(refs):
            new = cmp.Sample.of(_runs_with_a_run_effect(rng, 1, 3, 15.0 * (p + 1), 0.10, 0.01)[0])
            cell = cmp.measure("x_ratio", cmp.Sample.of([v for r in runs for v in r]), new,
                               ref_runs=[sum(r) / len(r) for r in runs], scatter=scatter)  # fmt: skip
            found += cell.p < 0.05
            cells += 1
    assert found / cells > 0.9, found / cells
