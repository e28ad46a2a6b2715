"""Repetitions that stop themselves: a point is repeated until the nsd of its mean is below the bound, or
its maximum count (SPIMS sec. 7, Appendix C)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from pydantic import ValidationError

from protolab.orchestrator.experiment import ExperimentRun
from protolab.spec import RepeatUntil


def test_nsd_of_the_mean_falls_with_n():
    r = RepeatUntil(until_nsd=0.05)
    assert r.nsd_of_mean([10.0]) is None and r.nsd_of_mean([0.0, 0.0]) is None
    # sd 1, mean 10: nsd 0.1 of a value, 0.1 / sqrt(n) of the mean
    assert r.nsd_of_mean([9.0, 11.0]) == pytest.approx(2**0.5 / 10 / 2**0.5)
    assert r.nsd_of_mean([9.0, 11.0] * 8) < r.nsd_of_mean([9.0, 11.0])


def test_bad_bounds_are_refused():
    with pytest.raises(ValidationError, match="min \\(5\\) is above max \\(3\\)"):
        RepeatUntil(until_nsd=0.05, min=5, max=3)
    with pytest.raises(ValidationError):
        RepeatUntil(until_nsd=0.0)


def _run(rows, until):
    run = ExperimentRun.__new__(ExperimentRun)
    run.rows, run.repetitions = rows, {}
    run.plan = SimpleNamespace(base=SimpleNamespace(order="sweep"))
    point = SimpleNamespace(id="p000", experiment=SimpleNamespace(repetitions=until, columns=lambda: ["x_seconds"]))
    return run, point


def test_a_point_is_repeated_until_stable_or_its_maximum():
    until = RepeatUntil(until_nsd=0.05, min=3, max=5)
    noisy = [{"point": "p000", "x_seconds": v} for v in (1.0, 2.0, 3.0)]
    run, p = _run(noisy, until)
    assert [(q.id, rep) for q, rep in run._another_round([p], None)] == [("p000", 3)]
    assert run.repetitions["p000"]["converged"] is False and run.repetitions["p000"]["n"] == 3
    run, p = _run(noisy + [{"point": "p000", "x_seconds": 2.0}] * 2, until)
    assert run._another_round([p], None) == [] and run.repetitions["p000"] == {
        "n": 5, "converged": False, "nsd_of_mean": pytest.approx({"x_seconds": 0.1581}, rel=1e-3)}  # fmt: skip
    steady = [{"point": "p000", "x_seconds": v} for v in (10.0, 10.1, 9.9)]
    run, p = _run(steady, until)
    assert run._another_round([p], None) == [] and run.repetitions["p000"]["converged"] is True


def test_fixed_repetitions_never_add_a_round():
    run, p = _run([{"point": "p000", "x_seconds": 1.0}], 1)
    assert run._another_round([p], None) == [] and run.repetitions == {}
