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


def test_a_resume_measures_again_what_the_guard_invalidated(tmp_path):
    """A measurement the run guard invalidated (the machine was busy) is dropped on resume: its row, its raw
    samples and task outputs, its invalid reason and guard entry; the others stay. An interruption's or an abort's
    reason goes too: the resume measures what they left."""
    import json

    from protolab.results.store import JsonLog, RunDir

    run_dir = RunDir.create(tmp_path / "results", "x", "20261126T000000Z-abcd")
    rows = [{"point": "p000", "repetition": 0, "a_ratio": 1.0}, {"point": "p001", "repetition": 0, "a_ratio": 2.0},
            {"point": "p001", "repetition": 1, "a_ratio": 3.0}]  # fmt: skip
    for r in rows:
        JsonLog(run_dir.path / "rows.jsonl").append(r)
    (run_dir.path / "raw" / "tasks").mkdir(parents=True)
    (run_dir.path / "raw" / "tasks" / "p001-r0-send-t.json").write_text("{}")
    (run_dir.path / "raw" / "tasks" / "p001-r1-send-t.json").write_text("{}")
    (run_dir.path / "raw" / "series.csv").write_text(
        "point,repetition,phase,series,labels,timestamp_seconds,value\n"
        "p000,0,send,s,{},1,1\np001,0,send,s,{},2,2\np001,1,send,s,{},3,3\n")  # fmt: skip
    busy = {"figures": {}, "reasons": ["host CPU 97% busy (> 95%)"]}
    (run_dir.path / "summary.json").write_text(json.dumps({
        "invalid_reasons": ["p001 rep 0 (rate=1): host CPU 97% busy (> 95%)", "interrupted (SIGINT) after 3",
                            "aborted: WorkloadError: p002 rep 0 phase send: no result"],
        "guard": {"p000/0": {"figures": {}, "reasons": []}, "p001/0": busy, "p001/1": {"figures": {}, "reasons": []}},
    }))  # fmt: skip
    run_dir.write_json("manifest.json", {"experiment": "x", "run_id": run_dir.run_id, "spec": SPEC, "points": []})
    r = _run(SPEC, SPEC)
    r.rundir, r.invalid, r.guard = run_dir, [], {}
    r.rows_log, r.faults_log = JsonLog(run_dir.path / "rows.jsonl"), JsonLog(run_dir.path / "faults.jsonl")
    r._carry_on({})
    assert [(x["point"], x["repetition"]) for x in r.rows] == [("p000", 0), ("p001", 1)]
    on_disk = JsonLog(run_dir.path / "rows.jsonl").read()
    assert [(x["point"], x["repetition"]) for x in on_disk] == [("p000", 0), ("p001", 1)]
    assert r.invalid == [] and set(r.guard) == {"p000/0", "p001/1"}
    assert "p001,0," not in (run_dir.path / "raw" / "series.csv").read_text()
    assert sorted(f.name for f in (run_dir.path / "raw" / "tasks").iterdir()) == ["p001-r1-send-t.json"]
    assert r.manifest["resumed"][-1]["remeasured"] == ["p001/0"]
