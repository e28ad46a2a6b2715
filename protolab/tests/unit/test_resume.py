"""--resume carries on a run only of the same measurement: a spec that changed in what is measured is refused;
one that changed only in how the rows are read and shown (REPORT_KEYS: checks, tables, the discussion ...) is
carried on, and the results read the current spec (the manifest records which keys changed)."""

from __future__ import annotations

import copy
from pathlib import Path
from types import SimpleNamespace

import pytest

from protolab.errors import LabError
from protolab.orchestrator.experiment import REPORT_KEYS, ExperimentRun

SPEC = {"name": "x", "description": "d", "sweep": {"rate": [1, 2]}, "phases": [{"name": "p", "tasks": []}],
        "checks": [{"name": "c", "column": "a_ratio", "max": 1}], "tables": []}  # fmt: skip


def _run(old: dict, new: dict) -> ExperimentRun:
    run = ExperimentRun.__new__(ExperimentRun)
    run.resume, run.report_changed = Path("results/x/run"), []
    run.plan = SimpleNamespace(base=SimpleNamespace(name="x"), profile="quick", raw=new)  # type: ignore[assignment]
    manifest = {"experiment": "x", "profile": "quick", "spec": old}
    run.rundir = SimpleNamespace(manifest=lambda: manifest)  # type: ignore[assignment]
    return run


def test_a_changed_report_is_carried_on_and_recorded():
    new = copy.deepcopy(SPEC)
    new["checks"].append({"name": "d", "column": "a_ratio", "min": 0})
    new["discussion"] = [{"title": "t", "text": "x"}]
    run = _run(SPEC, new)
    run._check_resumable()
    assert run.report_changed == ["checks", "discussion"]
    assert set(run.report_changed) <= set(REPORT_KEYS)


@pytest.mark.parametrize(("key", "value"), [("sweep", {"rate": [1, 2, 3]}), ("phases", []), ("repetitions", 3)])
def test_a_changed_measurement_is_refused_naming_the_key(key, value):
    new = copy.deepcopy(SPEC) | {key: value}
    with pytest.raises(LabError, match=rf"the spec changed since that run \({key}\)"):
        _run(SPEC, new)._check_resumable()


def test_progress_of_a_resumed_run_counts_what_it_had(capsys, monkeypatch):
    from protolab.orchestrator import session

    clock = iter([100.0, 110.0, 130.0])
    monkeypatch.setattr(session.time, "monotonic", lambda: next(clock))
    p = session.Progress(10, before=4)  # t0 = 100
    p.step("p004 rep 1")  # at 110: the fifth of ten, no pace yet
    p.finish()
    p.step("p005 rep 1")  # at 130: one done in 30 s, five to go counting this one
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("[5/10  40% elapsed 10s ETA ?] p004")
    assert out[1].startswith("[6/10  50% elapsed 30s ETA 150s] p005"), out[1]
