"""protolab.results.checks: evaluate() over real spec points, statistics and the summary."""

from pathlib import Path

import pytest

from protolab import spec
from protolab.model.report import Check
from protolab.results.checks import applies, build_summary, evaluate, statistics

MINI = Path(__file__).parent / "fixtures" / "results" / "mini.yaml"


@pytest.fixture(scope="module")
def plan():
    return spec.load(MINI)


def ids(plan):
    """axis values -> point id"""
    return {(p.values["topology"], p.values["rate"]): p.id for p in plan.points}


def row(pid, rep, **cols):
    return {"point": pid, "repetition": rep, **cols}


def by(checks, name, point):
    found = [c for c in checks if c["name"] == name and c["point"] == point]
    assert len(found) == 1, (name, point, checks)
    return found[0]


H3 = "switched h3 wire rate within 5% of the port rate"
HUB = "hub aggregate within 5% of the shared capacity"
LOSS = "f2 loss below 1%"
RETX = "f1 retransmits recorded"


def test_where_filters_points(plan):
    checks = evaluate(plan.points, [])
    i = ids(plan)
    names = {(c["point"], c["name"]) for c in checks}
    assert (i["switched", "10Mbit"], H3) in names
    assert (i["hub", "10Mbit"], H3) not in names
    assert (i["hub", "100Mbit"], HUB) in names
    assert (i["switched", "100Mbit"], HUB) not in names
    # where: {rate: 10Mbit} compares as strings
    assert {p for p, n in names if n == LOSS} == {i["hub", "10Mbit"], i["switched", "10Mbit"]}
    # no where: every point
    assert len([1 for _, n in names if n == RETX]) == 4
    assert len(checks) == 2 + 2 + 2 + 4


def test_pass_fail_and_missing(plan):
    i = ids(plan)
    sw10, sw100, hub10 = i["switched", "10Mbit"], i["switched", "100Mbit"], i["hub", "10Mbit"]
    rows = [
        # mean 9.6e6: inside [9.5e6, 10.5e6]
        row(sw10, 0, h3_rx_bits_per_second=9.7e6, f2_loss_ratio=0.002, f1_retransmits_total=1.0),
        row(sw10, 1, h3_rx_bits_per_second=9.5e6, f2_loss_ratio=None, f1_retransmits_total=3.0),
        # 100 Mbit/s +-5 % -> bound [95e6, 105e6]; mean 94e6 fails
        row(sw100, 0, h3_rx_bits_per_second=93e6),
        row(sw100, 1, h3_rx_bits_per_second=95e6),
        # loss 2 % fails max 1 %; h3 column absent entirely
        row(hub10, 0, f2_loss_ratio=0.02),
        row(hub10, 1, f2_loss_ratio=0.02),
    ]
    checks = evaluate(plan.points, rows)

    c = by(checks, H3, sw10)
    assert c["passed"] is True
    assert c["measured"] == pytest.approx(9.6e6)
    assert c["bound"] == {"min": pytest.approx(9.5e6), "max": pytest.approx(10.5e6)}
    assert c["values"] == {"topology": "switched", "rate": "10Mbit"}
    assert c["column"] == "h3_rx_bits_per_second"
    assert set(c) == {"name", "point", "values", "column", "measured", "bound", "passed", "reproduction"}
    assert c["reproduction"] is False

    c = by(checks, H3, sw100)
    assert c["passed"] is False
    assert c["measured"] == pytest.approx(94e6)
    assert c["bound"]["min"] == pytest.approx(95e6)

    assert by(checks, LOSS, sw10)["measured"] == pytest.approx(0.002)  # the None repetition is left out
    assert by(checks, LOSS, sw10)["passed"] is True
    assert by(checks, LOSS, hub10)["passed"] is False
    assert by(checks, LOSS, hub10)["bound"] == {"min": None, "max": 0.01}

    missing = by(checks, HUB, hub10)  # rows exist but the column is empty there
    assert missing["measured"] is None and missing["passed"] is False
    no_rows = by(checks, HUB, i["hub", "100Mbit"])  # no rows at all for the point
    assert no_rows["measured"] is None and no_rows["passed"] is False

    assert by(checks, RETX, sw10)["passed"] is True  # min 0, mean 2
    assert by(checks, RETX, sw100)["passed"] is False  # never measured


def test_bounds_are_inclusive(plan):
    sw10 = ids(plan)["switched", "10Mbit"]
    checks = evaluate(plan.points, [row(sw10, 0, h3_rx_bits_per_second=10.5e6)])
    assert by(checks, H3, sw10)["passed"] is True
    checks = evaluate(plan.points, [row(sw10, 0, h3_rx_bits_per_second=10.5e6 + 1)])
    assert by(checks, H3, sw10)["passed"] is False


def test_statistics_per_point_and_column():
    rows = [
        row("p000", 0, a_ratio=0.1, b_total=None),
        row("p000", 1, a_ratio=0.3, b_total=None),
        row("p001", 0, a_ratio=1.0, b_total=5.0),
    ]
    s = statistics(rows, ["a_ratio", "b_total"])
    assert list(s) == ["p000", "p001"]
    assert s["p000"]["a_ratio"]["n"] == 2
    assert s["p000"]["a_ratio"]["mean"] == pytest.approx(0.2)
    assert s["p000"]["b_total"]["n"] == 0 and s["p000"]["b_total"]["mean"] is None
    assert s["p001"]["b_total"]["mean"] == 5.0 and s["p001"]["b_total"]["sd"] == 0.0


def test_build_summary(plan):
    i = ids(plan)
    rows = [row(i["switched", "10Mbit"], 0, h3_rx_bits_per_second=9.9e6)]
    s = build_summary(
        "mini", "r1", plan.points, rows, plan.base.columns(), invalid_reasons=["cpu saturated"], guard={"cpu_max": 0.99}
    )
    assert s["schema_version"] == 1
    assert s["valid"] is False and s["invalid_reasons"] == ["cpu saturated"]
    assert s["checks_passed"] == 1
    assert s["checks_failed"] == len(s["checks"]) - 1
    assert set(s["statistics"][i["switched", "10Mbit"]]) == set(plan.base.columns())
    assert s["guard"] == {"cpu_max": 0.99}
    assert build_summary("mini", "r1", plan.points, rows, [])["valid"] is True


def test_where_compares_as_strings():
    c = Check(name="c", column="x_ratio", where={"hosts": 4, "rate": "10Mbit"}, max=1)
    assert applies(c, {"hosts": "4", "rate": "10Mbit", "other": "a"})
    assert applies(c, {"hosts": 4, "rate": "10Mbit"})
    assert not applies(c, {"hosts": "8", "rate": "10Mbit"})
    assert not applies(c, {"rate": "10Mbit"})  # an axis the point lacks never matches


def test_a_seed_conclusion_that_does_not_hold_is_a_finding_not_a_failed_check(plan):
    """Check.reproduction: counted apart in the summary; the run's platform checks stay as they are."""
    i = ids(plan)
    rows = [row(i["hub", "10Mbit"], 0, f2_loss_ratio=0.02), row(i["switched", "10Mbit"], 0, f2_loss_ratio=0.002)]
    base = build_summary("mini", "r", plan.points, rows, ["f2_loss_ratio"])
    failed = base["checks_failed"]
    saved = {p.id: p.experiment.checks for p in plan.points}
    try:
        for p in plan.points:
            p.experiment.checks = [c.model_copy(update={"reproduction": c.name == LOSS}) for c in saved[p.id]]
        s = build_summary("mini", "r", plan.points, rows, ["f2_loss_ratio"])
    finally:
        for p in plan.points:
            p.experiment.checks = saved[p.id]
    loss = [c for c in s["checks"] if c["name"] == LOSS]
    assert loss and all(c["reproduction"] for c in loss)
    assert s["reproduction_failed"] == sum(1 for c in loss if not c["passed"]) == 1
    assert s["checks_failed"] == failed - 1 and s["reproduction_passed"] == len(loss) - 1 == 1
    assert s["checks_passed"] + s["checks_failed"] + s["reproduction_passed"] + s["reproduction_failed"] == len(
        s["checks"]
    )
