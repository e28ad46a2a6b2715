"""A measurement disturbed from outside the lab (the hypervisor's steal, foreign processes) is measured again once
the cores are back; the disturbed attempt leaves nothing in the results but its guard figures."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from protolab.lab import guard
from protolab.orchestrator.experiment import ExperimentRun

STEAL = {"host_cpu_steal_cores": 0.7, "foreign_cpu_cores": 0.0}
CLEAN = {"host_cpu_steal_cores": 0.0, "foreign_cpu_cores": 0.1}
BUSY = {"host_cpu_steal_cores": 0.0, "foreign_cpu_cores": 0.0, "host_cpu_busy_ratio": 0.99}


class Written:
    def __init__(self) -> None:
        self.rows: list[tuple] = []

    def write_rows(self, rows):
        self.rows += list(rows)
        return len(rows)


def _run(monkeypatch, outcomes: list[dict[str, float]]) -> tuple[ExperimentRun, list[str]]:
    """A run whose attempts (fake) show `outcomes`' guard figures one after the other."""
    run = ExperimentRun.__new__(ExperimentRun)
    run.invalid, run.guard, run.fault_rows = ["from before"], {}, []
    run.raw, run.faults_log = Written(), SimpleNamespace(lines=[])
    run.faults_log.append = run.faults_log.lines.append
    waits: list[str] = []
    monkeypatch.setattr(guard, "wait_for_cores", lambda say: waits.append("waited") or {"waited_seconds": 1.0})
    seq = iter(range(len(outcomes)))

    def attempt(point, rep, lab, prom):
        i = next(seq)
        figures = outcomes[i]
        reasons = [f"attempt {i} reason"] if guard.disturbed(figures) or figures is BUSY else []
        run.guard[f"{point.id}/{rep}"] = {"figures": figures, "reasons": reasons}
        run.invalid += [f"{point.id} rep {rep}: attempt {i} invalid"] + reasons
        run._pending_raw.append((point.id, rep, "main", "s", {}, float(i), float(i)))
        run._pending_faults.append({"attempt": i})
        return {"point": point.id, "repetition": rep, "attempt": i}

    monkeypatch.setattr(run, "_attempt", attempt)
    return run, waits


POINT = SimpleNamespace(id="p000")


def test_a_measurement_the_hypervisor_disturbed_is_measured_again_and_only_the_clean_attempt_counts(monkeypatch):
    run, waits = _run(monkeypatch, [STEAL, CLEAN])
    row = run._measure(POINT, 0, None, None)
    assert row["attempt"] == 1
    assert run.invalid == ["from before", "p000 rep 0: attempt 1 invalid"]
    assert [r[5] for r in run.raw.rows] == [1.0]  # the disturbed attempt's series are not in the raw file
    assert run.fault_rows == [{"attempt": 1}] and run.faults_log.lines == [{"attempt": 1}]
    first = run.guard["p000/0"]["disturbed_attempts"]
    assert len(first) == 1 and first[0]["figures"] is STEAL
    assert first[0]["invalid_reasons"] == ["p000 rep 0: attempt 0 invalid", "attempt 0 reason"]
    assert waits == ["waited"]


def test_the_last_attempt_stands_disturbed_or_not(monkeypatch):
    run, waits = _run(monkeypatch, [STEAL] * (guard.REMEASURE_DISTURBED + 1))
    row = run._measure(POINT, 2, None, None)
    assert row["attempt"] == guard.REMEASURE_DISTURBED
    assert f"attempt {guard.REMEASURE_DISTURBED} reason" in run.invalid  # the run says it was disturbed
    assert len(run.guard["p000/2"]["disturbed_attempts"]) == guard.REMEASURE_DISTURBED
    assert len(waits) == guard.REMEASURE_DISTURBED


def test_the_labs_own_load_is_not_measured_again(monkeypatch):
    run, waits = _run(monkeypatch, [BUSY, CLEAN])
    row = run._measure(POINT, 0, None, None)
    assert row["attempt"] == 0 and "attempt 0 reason" in run.invalid
    assert "disturbed_attempts" not in run.guard["p000/0"] and waits == []


def test_an_attempt_that_fails_keeps_its_fault_events(monkeypatch):
    run, _ = _run(monkeypatch, [CLEAN])

    def failing(point, rep, lab, prom):
        run._pending_faults.append({"link": "down"})
        raise RuntimeError("a task failed")

    monkeypatch.setattr(run, "_attempt", failing)
    with pytest.raises(RuntimeError):
        run._measure(POINT, 0, None, None)
    assert run.fault_rows == [{"link": "down"}]


def test_waiting_for_the_cores_probes_until_the_hypervisor_gives_them_back_for_a_while():
    """A lone quiet probe in a burst is a lull: the wait goes on until QUIET_PROBES quiet probes in a row."""
    now = [0.0]
    quiet = guard.QUIET_STEAL_CORES
    probes = iter([0.8, 0.6, quiet, 0.7] + [0.1] * (guard.QUIET_PROBES - 1) + [quiet])
    said: list[str] = []

    def sleep(s: float) -> None:
        now[0] += s

    out = guard.wait_for_cores(said.append, probe=lambda: next(probes), sleep=sleep, clock=lambda: now[0])
    assert out == {"waited_seconds": (3 + guard.QUIET_PROBES) * guard.CORES_POLL_SECONDS, "stolen_cores": quiet}
    assert len(said) == 1 and "0.80 cores" in said[0]
    assert next(probes, None) is None  # not one probe more than it needed


def test_a_self_checks_wait_for_the_cores_holds_out_for_its_own_lower_limit():
    now, said = [0.0], []
    probes = iter([0.2, 0.15] + [0.05] * guard.QUIET_PROBES)  # quiet for a measurement, not for a self-check

    def sleep(s: float) -> None:
        now[0] += s

    assert guard.wait_for_cores(said.append, probe=lambda: 0.2, sleep=sleep, clock=lambda: now[0]) == {
        "waited_seconds": 0.0, "stolen_cores": 0.2}  # fmt: skip
    out = guard.wait_for_cores(said.append, probe=lambda: next(probes), sleep=sleep, clock=lambda: now[0],
                               quiet_cores=0.1)  # fmt: skip
    assert out["waited_seconds"] == (1 + guard.QUIET_PROBES) * guard.CORES_POLL_SECONDS and said


def test_a_self_check_under_steal_the_measurements_guard_lets_by_is_made_again():
    """0.18 cores, under the guard's limit for a measurement, moved a faithful 10 ms link's mean 0.56 ms."""
    import time

    from protolab.lab import selfcheck

    results = iter([{"passed": False, "failures": ["RTT 11.136 ms"]}, {"passed": True, "failures": []}])
    t0, first_until = time.monotonic(), [float("inf")]

    def steal() -> float:  # 0.18 cores all through the first check, none after it
        return 0.18 * (min(time.monotonic(), first_until[0]) - t0)

    def check(*_a: object) -> dict:
        time.sleep(0.3)
        res = next(results)
        first_until[0] = min(first_until[0], time.monotonic())
        return res

    res = selfcheck.check_undisturbed(None, SimpleNamespace(src="r1", dst="h2"), None, log=lambda _l: None,
                                      check=check, steal=steal, wait=lambda _log: {})  # fmt: skip
    (first,) = res["disturbed_attempts"]
    assert selfcheck.STEAL_LIMIT_CORES < first["stolen_cores"] < guard.MAX_STEAL_CORES, first
    assert res["passed"] and first["failures"] == ["RTT 11.136 ms"]


def test_waiting_for_the_cores_gives_up_at_its_bound():
    now = [0.0]

    def sleep(s: float) -> None:
        now[0] += s

    out = guard.wait_for_cores(lambda _l: None, probe=lambda: 0.9, sleep=sleep, clock=lambda: now[0], max_wait=10)
    assert out["stolen_cores"] == 0.9 and 10 <= out["waited_seconds"] < 10 + guard.CORES_POLL_SECONDS


def test_no_wait_without_steal():
    said: list[str] = []
    out = guard.wait_for_cores(said.append, probe=lambda: 0.0, sleep=pytest.fail, clock=lambda: 5.0)
    assert out == {"waited_seconds": 0.0, "stolen_cores": 0.0} and said == []


def test_the_probe_asks_every_core_for_its_time():
    """The real probe on this machine: every core busy (or withheld) for the probe's time, and a figure within reach."""
    import os

    import psutil

    cores = os.cpu_count() or 1
    before = psutil.cpu_times()
    stolen = guard.stolen_cores(0.3)
    after = psutil.cpu_times()
    asked = sum(getattr(after, k) - getattr(before, k) for k in ("user", "nice", "system", "softirq", "irq", "steal"))
    assert 0.0 <= stolen <= cores
    assert asked >= 0.5 * 0.3 * cores  # half of what it asked for at least: the loops ran on every core


def test_a_self_check_the_hypervisor_disturbed_is_made_again():
    from protolab.lab import selfcheck

    results = iter([{"passed": True, "failures": []}, {"passed": False, "failures": ["RTT 10.5 ms"]}])
    steal = iter([0.0, 30.0, 30.0, 30.0])  # 30 s withheld during the first check (far more than 0.5 cores)
    waits: list[str] = []
    p = SimpleNamespace(src="h1", dst="h2")
    res = selfcheck.check_undisturbed(None, p, None, log=lambda _l: None, check=lambda *_a: next(results),
                                      steal=lambda: next(steal), wait=lambda _log: waits.append("w") or {})  # fmt: skip
    assert res["passed"] is False and res["failures"] == ["RTT 10.5 ms"]  # the undisturbed check's verdict stands
    assert res["stolen_cores"] == 0.0 and waits == ["w"]
    (first,) = res["disturbed_attempts"]
    assert first["passed"] is True and first["stolen_cores"] > selfcheck.STEAL_LIMIT_CORES


def test_an_undisturbed_self_check_is_made_once():
    from protolab.lab import selfcheck

    calls: list[int] = []
    res = selfcheck.check_undisturbed(None, SimpleNamespace(src="a", dst="b"), None, log=lambda _l: None,
                                      check=lambda *_a: calls.append(1) or {"passed": True, "failures": []},
                                      steal=lambda: 1.0, wait=pytest.fail)  # fmt: skip
    assert calls == [1] and "disturbed_attempts" not in res and res["stolen_cores"] == 0.0


def test_a_self_check_its_noise_left_unable_to_tell_is_made_again_and_fails_if_it_stays_so():
    from protolab.lab import selfcheck

    def unresolved(bound: float) -> dict:
        return {"passed": False, "unresolved": True, "failures": ["RTT could not be told"],
                "measured": {"rtt_bound_seconds": bound}}  # fmt: skip

    told = {"passed": True, "failures": [], "measured": {"rtt_bound_seconds": 0.0003}}
    for results, attempts, passed in (([unresolved(0.0006), told], 1, True),
                                      ([unresolved(0.0006)] * (guard.REMEASURE_DISTURBED + 1),
                                       guard.REMEASURE_DISTURBED, False)):  # fmt: skip
        it, waits, said = iter(results), [], []
        res = selfcheck.check_undisturbed(None, SimpleNamespace(src="h1", dst="h2"), None, log=said.append,
                                          check=lambda *_a, it=it: next(it), steal=lambda: 0.0,
                                          wait=lambda _log, waits=waits: waits.append("w") or {})  # fmt: skip
        assert res["passed"] is passed and len(res["disturbed_attempts"]) == attempts == len(waits)
        assert res["disturbed_attempts"][0]["rtt_bound_seconds"] == 0.0006
        assert "too wide to tell; checking again" in said[0] and "hypervisor" not in said[0]


def test_a_self_checks_line_says_the_steal_beside_its_figures():
    from protolab.lab import selfcheck

    res = {"passed": True, "failures": [], "configured": {"rtt_seconds": 0.01}, "stolen_cores": 0.28,
           "measured": {"rtt_mean_seconds": 0.0104, "rtt_bound_seconds": 0.0009}}  # fmt: skip
    assert "0.28 cores withheld by the hypervisor" in selfcheck.summarize(res)
    assert "withheld" not in selfcheck.summarize(res | {"stolen_cores": 0.02})


def test_a_fault_event_the_hypervisor_held_up_disturbs_its_measurement():
    assert guard.disturbed({"fault_event_stolen_max_seconds": guard.MAX_EVENT_STEAL_SECONDS}) == [
        "steal at a fault event"
    ]
    assert guard.disturbed({"fault_event_stolen_max_seconds": 0.0}) == []
    assert guard.disturbed({"fault_event_stolen_max_seconds": None}) == []  # a phase without events


def test_a_self_check_with_a_burst_of_steal_in_it_is_made_again(monkeypatch):
    import time

    from protolab.lab import selfcheck

    monkeypatch.setattr(guard, "STEAL_WINDOW_SECONDS", 0.05)
    monkeypatch.setattr(guard, "STEAL_SAMPLE_SECONDS", 0.01)
    t0 = time.monotonic()

    def steal() -> float:  # the first check loses 0.05 s over 0.1 s of its 0.6 s; the second none
        t = time.monotonic() - t0
        return 0.5 * min(max(t - 0.2, 0.0), 0.1)

    def check(*_a: object) -> dict:
        time.sleep(0.6)
        return {"passed": True, "failures": []}

    waits: list[str] = []
    res = selfcheck.check_undisturbed(None, SimpleNamespace(src="h1", dst="h2"), None, log=lambda _l: None,
                                      check=check, steal=steal, wait=lambda _log: waits.append("w") or {})  # fmt: skip
    (first,) = res["disturbed_attempts"]
    assert first["stolen_cores"] < selfcheck.STEAL_LIMIT_CORES < first["stolen_cores_peak"], first  # the mean hid it
    assert waits == ["w"] and res["stolen_cores_peak"] == 0.0


def test_a_measurement_its_tool_spoilt_by_chance_is_made_again(monkeypatch, capsys):
    run, waits = _run(monkeypatch, [CLEAN, CLEAN])
    real = run._attempt

    def attempt(point, rep, lab, prom):
        row = real(point, rep, lab, prom)
        if row["attempt"] == 0:  # what the phase records of a runner's `remake`
            run._pending_remake.append("task wan: the UDP sender on h1 ran 1.031 s ahead; it sent nothing for 1.00 s")
        return row

    monkeypatch.setattr(run, "_attempt", attempt)
    row = run._measure(POINT, 0, None, None)
    assert row["attempt"] == 1 and run.invalid == ["from before", "p000 rep 0: attempt 1 invalid"]
    (first,) = run.guard["p000/0"]["disturbed_attempts"]
    assert first["invalid_reasons"] == ["p000 rep 0: attempt 0 invalid"]
    assert "spoilt by chance outside what it measures (task wan: the UDP sender on h1" in capsys.readouterr().out
