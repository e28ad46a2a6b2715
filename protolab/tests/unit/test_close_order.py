"""The end of a run: teardown always first, and each later step's failure recorded, not fatal to the others; once a
run is stopping, further signals are said, never raised."""

from __future__ import annotations

import errno
import json
import signal
from types import SimpleNamespace

import pytest

from protolab.errors import EXIT_INTERRUPTED, EXIT_INVALID, EXIT_OK
from protolab.orchestrator import experiment, session
from protolab.orchestrator.experiment import ExperimentRun
from protolab.orchestrator.session import Interrupted, Signals
from protolab.results.store import RESERVE, RESERVE_BYTES, RunDir


def _enospc(what: str):
    def fail(*_a, **_k):
        raise OSError(errno.ENOSPC, f"No space left on device ({what})")

    return fail


class Steps:
    """Records the order of _close's steps; `fail` names the steps that raise ENOSPC."""

    def __init__(self, monkeypatch, tmp_path, fail: set[str]) -> None:
        self.order: list[str] = []
        self.finished_with: list[str] | None = None

        def step(name: str, result=None):
            def run(*_a, **_k):
                self.order.append(name)
                if name in fail:
                    _enospc(name)()
                return result

            return run

        def finish(rundir, plan, rows, fault_rows, invalid, *_rest):
            step("summary")()
            self.finished_with = list(invalid)
            return True

        monkeypatch.setattr(session, "teardown", step("teardown", []))
        monkeypatch.setattr(experiment.summary, "finish", finish)
        run = ExperimentRun.__new__(ExperimentRun)
        run.keep, run.hosts, run.status = False, None, EXIT_OK
        run.invalid, run.teardown_failures, run.closing_failures = [], [], []
        run.deployments, run.actions, run.repetitions, run.cross_host = [], [], {}, {}
        run.rows, run.fault_rows, run.guard, run.self_checks, run.skipped = [], [], {}, [], []
        run.plan, run.references = None, None
        run.raw = SimpleNamespace(close=step("raw.close"))
        run.exporter = SimpleNamespace(close=step("exporter.close"))
        run.ledger = SimpleNamespace(sweep=step("ledger.sweep", []))
        run.rundir = RunDir.create(tmp_path, "x")
        run.manifest = {"environment": {"dynamic": {}}, "host_state": {}}
        real_write = run.rundir.write_json

        def write_json(name, obj):
            step(name)()
            return real_write(name, obj)

        run.rundir.write_json = write_json  # type: ignore[method-assign]
        self.run = run

    def close(self, error: BaseException | None = None) -> None:
        self.run._close(None, error, Signals(self.run.rundir.path))


def test_teardown_runs_first_and_a_full_disk_at_the_raw_log_is_recorded(monkeypatch, tmp_path, capsys):
    s = Steps(monkeypatch, tmp_path, fail={"raw.close"})
    experiment.reserve_space(s.run.rundir.path)
    assert (s.run.rundir.path / RESERVE).stat().st_size == RESERVE_BYTES
    s.close()
    assert not (s.run.rundir.path / RESERVE).exists()  # freed before the manifest and summary are written
    assert s.order == ["teardown", "raw.close", "exporter.close", "manifest.json", "summary", "ledger.sweep"]
    reason = "closing raw/series.csv failed: OSError: [Errno 28] No space left on device (raw.close)"
    assert s.finished_with == [reason]  # the summary says why the run is invalid
    assert s.run.status == EXIT_INVALID
    manifest = json.loads((s.run.rundir.path / "manifest.json").read_text())
    assert manifest["closing_failures"] == [reason]
    assert reason in capsys.readouterr().out


def test_a_teardown_that_raises_still_writes_the_results_and_keeps_the_ledger(monkeypatch, tmp_path):
    s = Steps(monkeypatch, tmp_path, fail={"teardown"})
    s.close(error=Interrupted("SIGINT"))
    assert s.order == ["teardown", "raw.close", "exporter.close", "manifest.json", "summary"]  # no sweep: for clean
    assert s.finished_with is not None
    assert s.finished_with == ["teardown: OSError: [Errno 28] No space left on device (teardown)"]


def test_results_that_cannot_be_written_leave_the_run_record_for_clean(monkeypatch, tmp_path, capsys):
    s = Steps(monkeypatch, tmp_path, fail={"manifest.json", "summary"})
    s.run.status = EXIT_INTERRUPTED
    s.close(error=Interrupted("SIGINT"))
    assert s.order == ["teardown", "raw.close", "exporter.close", "manifest.json", "summary"]  # no ledger sweep
    assert s.run.status == EXIT_INTERRUPTED  # an interruption stays one
    out = capsys.readouterr().out
    assert "writing the results failed: OSError: [Errno 28] No space left on device (summary)" in out
    assert f"INVALID run {s.run.rundir.run_id}: writing manifest.json failed" in out


def test_keep_leaves_the_lab_and_still_writes_the_results(monkeypatch, tmp_path):
    s = Steps(monkeypatch, tmp_path, fail=set())
    s.run.keep = True
    s.close()
    assert s.order == ["raw.close", "exporter.close", "manifest.json", "summary"]
    assert s.run.status == EXIT_OK


def test_signals_after_the_first_are_said_not_raised(tmp_path, capsys):
    sig = Signals(tmp_path)
    with pytest.raises(Interrupted, match="SIGINT"):
        sig._handle(signal.SIGINT, None)
    assert sig.finishing
    sig._handle(signal.SIGINT, None)  # a second Ctrl-C while stopping
    sig._handle(signal.SIGTERM, None)
    assert sig.received == ["SIGINT", "SIGINT", "SIGTERM"]
    out = capsys.readouterr().out
    assert out.count("already stopping, cleaning up") == 2


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the drop is what is tested
def test_a_signal_dropped_in_a_finalizer_is_raised_again_by_check(tmp_path):
    """The handler raises wherever the main thread is; in a finalizer Python prints the exception and drops it (a
    Ctrl-C that once let a run finish VALID). check() raises it again; once delivered, it does not."""
    import gc

    sig = Signals(tmp_path)

    class Finalized:
        def __del__(self):
            sig._handle(signal.SIGINT, None)

    Finalized()  # its __del__ raises Interrupted, and Python drops it
    gc.collect()
    assert sig.finishing and sig.pending == "SIGINT"
    with pytest.raises(Interrupted, match="SIGINT"):
        sig.check()
    sig.check()  # raised once
    sig2 = Signals(tmp_path)
    with pytest.raises(Interrupted):
        sig2._handle(signal.SIGTERM, None)
    sig2.delivered()  # the run has it
    sig2.check()
    assert sig2.pending is None
