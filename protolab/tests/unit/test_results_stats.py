"""protolab.stats.describe against hand-computed values."""

import math

import pytest

from protolab.stats import KEYS, describe


def test_describe_four_values():
    d = describe([4, 1, 3, 2])
    assert d["n"] == 4
    assert d["mean"] == 2.5
    sd = math.sqrt(5 / 3)  # sum of squared deviations 5, n-1 = 3
    assert d["sd"] == pytest.approx(sd)
    assert d["nsd"] == pytest.approx(sd / 2.5)
    assert (d["min"], d["max"]) == (1.0, 4.0)
    # numpy's linear interpolation on sorted [1, 2, 3, 4]: rank q*(n-1)
    assert d["p50"] == pytest.approx(2.5)
    assert d["p95"] == pytest.approx(3.85)
    assert d["p99"] == pytest.approx(3.97)
    # Student t, 3 degrees of freedom: t_0.975 = 3.182446305 (tables)
    half = 3.182446305 * sd / 2
    assert d["ci95_low"] == pytest.approx(2.5 - half, rel=1e-9)
    assert d["ci95_high"] == pytest.approx(2.5 + half, rel=1e-9)
    assert d["ci95_high"] == pytest.approx(4.554, abs=1e-3)


def test_describe_two_values_wide_interval():
    # t_0.975 with 1 degree of freedom is 12.706; sd of (9, 11) is sqrt(2)
    d = describe([9.0, 11.0])
    assert d["sd"] == pytest.approx(math.sqrt(2))
    assert d["ci95_low"] == pytest.approx(10 - 12.7062047 * math.sqrt(2) / math.sqrt(2), rel=1e-6)
    assert d["ci95_high"] == pytest.approx(22.7062047, rel=1e-6)


def test_describe_drops_none_and_nan():
    d = describe([None, 2.0, float("nan"), 4.0, ""])
    assert d["n"] == 2
    assert d["mean"] == 3.0
    assert d["min"] == 2.0


def test_describe_single_value():
    d = describe([7.5])
    assert d["n"] == 1
    assert d["sd"] == 0.0
    assert d["nsd"] == 0.0
    assert d["ci95_low"] == d["ci95_high"] == d["mean"] == d["p99"] == 7.5


def test_describe_empty():
    for empty in ([], [None, float("nan")]):
        d = describe(empty)
        assert d["n"] == 0
        assert set(d) == set(KEYS)
        assert all(d[k] is None for k in KEYS if k != "n")


def test_nsd_undefined_at_zero_mean():
    d = describe([-1.0, 1.0])
    assert d["mean"] == 0.0
    assert d["nsd"] is None


def test_describe_returns_plain_floats():
    d = describe([1, 2, 3])
    assert all(type(d[k]) is float for k in KEYS if k != "n")
    assert type(d["n"]) is int
