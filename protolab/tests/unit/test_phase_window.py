"""The measurement window of a phase follows a task that began late (an iperf3 UDP handshake retried)."""

from types import SimpleNamespace

from protolab.orchestrator import phase_window


def test_window_starts_warmup_after_the_phase_when_every_task_began_on_time():
    runners = [SimpleNamespace(started=100.05), SimpleNamespace(started=None)]  # the ping runner says nothing
    assert phase_window(100.0, runners, 1.5, 4.0) == (101.55, 104.05)


def test_a_retried_handshake_moves_the_window_to_the_attempt_that_ran():
    runners = [SimpleNamespace(started=103.2), SimpleNamespace(started=None)]
    ws, we = phase_window(100.0, runners, 1.5, 4.0)
    assert (round(ws, 6), round(we, 6)) == (104.7, 107.2)


def test_without_start_times_the_window_is_the_configured_one():
    assert phase_window(10.0, [], 0.5, 3.0) == (10.5, 13.0)


def test_a_phase_whose_tasks_end_before_their_time_limit_is_measured_until_they_ended():
    """A SPIMS procedure's duration is a time limit: the window must not run on over the idle seconds after it."""
    assert phase_window(100.0, [], 1.0, 300.0, ended=112.5) == (101.0, 112.5)
    assert phase_window(100.0, [], 1.0, 10.0, ended=110.2) == (101.0, 110.0)  # a task that ends late: its duration


def test_a_phase_shorter_than_its_warmup_has_an_empty_window():
    assert phase_window(100.0, [], 1.0, 300.0, ended=100.9) == (101.0, 101.0)


def _column(samples: list[tuple[float, float]], window: tuple[float, float]) -> float | None:
    from protolab.monitor import Sample
    from protolab.orchestrator import collect
    from protolab.spec import Measurement

    class Prom:
        def samples(self, expr: str, start: float, end: float) -> list:
            return [({"node": "h1"}, [Sample(t, v) for t, v in samples if start <= t <= end])]

    kept: list = []
    m = Measurement(name="h1", kind="cpu", node="h1")
    value = collect.column(m, [("p", *window)], Prom(), lambda *a: kept.append(a))
    assert len(kept) == len([t for t, _ in samples if window[0] - 1 <= t <= window[1] + 1])  # every sample kept raw
    return value


def test_a_counters_rate_needs_samples_over_a_quarter_of_its_window():
    """diagram4's 1 KiB point on the switch: 0.51 s of CPU between two scrapes while a 0.9 s transfer ran. Its
    window ran on to the 300 s time limit, so the one step inside it was idle after the transfer: 0.001 cores.
    Ending at the tasks' end leaves one sample inside, and no rate, rather than a wrong one."""
    samples = [(436.709, 36.778), (437.709, 37.289), (438.709, 37.2907)]
    assert _column(samples, (437.6, 736.0)) is None  # what the old window would now give: too little of it covered
    assert _column(samples, (437.0, 437.9)) is None  # the window it gets now: one sample
    steady = [(100.0 + i, 0.5 * i) for i in range(12)]  # half a core for 11 s
    assert _column(steady, (100.5, 110.5)) == 0.5
    assert _column(steady, (100.5, 103.0)) == 0.5  # link-fidelity's 2.5 s window: one or two steps inside, enough
    assert _column(steady[:3], (100.5, 110.5)) is None  # samples over 1 s of a 10 s window: not
