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
