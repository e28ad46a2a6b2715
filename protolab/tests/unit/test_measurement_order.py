"""Measurements run lab by lab, in a seeded shuffled order within each lab (or in sweep order)."""

from __future__ import annotations

from types import SimpleNamespace

from protolab.orchestrator.experiment import measurement_order


def _points():
    def p(i: int, lab: str, reps: int) -> SimpleNamespace:
        return SimpleNamespace(
            id=f"p{i:03d}", topology_key=lambda: lab, experiment=SimpleNamespace(initial_repetitions=lambda: reps)
        )

    return [p(0, "hub", 3), p(1, "switched", 2), p(2, "hub", 3), p(3, "switched", 2)]


def _ids(groups):
    return [[f"{p.id}/{r}" for p, r in g] for g in groups]


def test_sweep_order_groups_by_lab_and_keeps_repetitions_together():
    assert _ids(measurement_order(_points(), "sweep", 1)) == [
        ["p000/0", "p000/1", "p000/2", "p002/0", "p002/1", "p002/2"],
        ["p001/0", "p001/1", "p003/0", "p003/1"],
    ]


def test_shuffled_is_a_seeded_permutation_within_each_lab():
    sweep = _ids(measurement_order(_points(), "sweep", 1))
    a, b = _ids(measurement_order(_points(), "shuffled", 7)), _ids(measurement_order(_points(), "shuffled", 7))
    assert a == b  # the seed makes it reproducible
    assert [sorted(g) for g in a] == [sorted(g) for g in sweep] and a != sweep
    assert _ids(measurement_order(_points(), "shuffled", 8)) != a
