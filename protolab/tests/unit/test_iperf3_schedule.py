"""A UDP sender's schedule, read in iperf3's own report: the most it ran ahead of its rate (a held-up start sent in
one burst to catch up) makes the measurement invalid beyond noise, and only then."""

from __future__ import annotations

from typing import Any

import pytest

from protolab.workloads.iperf3 import Iperf3Task
from protolab.workloads.iperf3_runner import SENDER_AHEAD_BOUND_S, Iperf3Runner, sender_burst

RATE = 1_400_000  # bit/s
DGRAM = 1400  # bytes
STEP = 0.1  # s, the report's interval


def _report(per_interval: list[int]) -> dict[str, Any]:
    """A client report with one interval of STEP per entry, that many datagrams sent in it."""
    return {"intervals": [{"sum": {"start": i * STEP, "end": (i + 1) * STEP, "bytes": n * DGRAM}}
                          for i, n in enumerate(per_interval)]}  # fmt: skip


def _steady(n: int) -> list[int]:
    """Datagrams per interval of a sender exactly on its rate (whole datagrams: 12 or 13 per 0.1 s at 1.4 Mbit/s)."""
    per_s = RATE / 8 / DGRAM
    return [int((i + 1) * STEP * per_s) - int(i * STEP * per_s) for i in range(n)]


def test_a_sender_on_its_rate_is_never_more_than_a_datagram_ahead():
    ahead, *_ = sender_burst(_report(_steady(80)), RATE)
    assert ahead is not None and ahead <= 8 * DGRAM / RATE


def test_a_start_held_up_for_700_ms_then_caught_up_is_700_ms_ahead():
    sent = _steady(80)
    held = [0] * 7 + [sum(sent[:8])] + sent[8:]  # nothing for 0.7 s, then those and the next 0.1 s's at once
    ahead, *_ = sender_burst(_report(held), RATE)
    assert ahead == pytest.approx(0.7, abs=8 * DGRAM / RATE)  # 0.8 s of data in 0.1 s


def test_a_sender_that_cannot_keep_up_is_behind_not_ahead():
    ahead, *_ = sender_burst(_report([n // 2 for n in _steady(80)]), RATE)
    assert ahead == 0.0


def test_no_intervals_or_no_rate_is_unknown():
    assert sender_burst({}, RATE) is None
    assert sender_burst(_report(_steady(5)), 0) is None


def _runner(report: dict[str, Any]) -> Iperf3Runner:
    task = Iperf3Task(
        kind="iperf3",
        name="wan",
        client="h1",
        server="h3",
        protocol="udp",
        rate="1400kbit",
        length="1400B",
        duration="8s",
    )
    r = Iperf3Runner(task, lab=None)
    r.client_report = report
    return r


def test_a_burst_beyond_the_bound_makes_the_measurement_invalid_naming_the_sender():
    sent = _steady(80)
    r = _runner(_report([0] * 7 + [sum(sent[:8])] + sent[8:]))
    r._check_schedule()
    assert len(r.invalid) == 1 and "h1" in r.invalid[0] and "ahead" in r.invalid[0], r.invalid
    assert r.ahead is not None and r.ahead > 0.7


def test_noise_under_the_bound_leaves_it_valid():
    sent = _steady(80)
    sent[10] += 2  # two datagrams early (the report's granularity) and the pacing timer's slack
    r = _runner(_report(sent))
    r._check_schedule()
    assert r.invalid == [] and r.ahead is not None and r.ahead < 2 * 8 * DGRAM / RATE + SENDER_AHEAD_BOUND_S


def test_a_start_held_up_by_the_control_exchange_asks_for_the_measurement_again():
    sent = _steady(80)
    r = _runner(_report([0] * 10 + [sum(sent[:11])] + sent[11:]))  # nothing for 1 s (TCP's retransmission)
    r._check_schedule()
    assert len(r.invalid) == 1 and len(r.remake) == 1 and "sent nothing for its first 1.00 s" in r.remake[0]


def test_a_burst_after_a_start_on_time_is_made_again_saying_where_it_fell_behind():
    sent = _steady(80)
    late = sent[:20] + [0] * 7 + [sum(sent[20:28])] + sent[28:]  # held up in the middle (the machine, not the tool)
    r = _runner(_report(late))
    r._check_schedule()
    assert len(r.invalid) == 1 and r.remake == r.invalid
    assert "fell behind until 2.7 s into the test and caught up by 2.8 s" in r.invalid[0], r.invalid


def test_sender_burst_says_where_the_stretch_was():
    sent = _steady(80)
    ahead, behind_at, caught_up_at = sender_burst(_report(sent[:40] + [0] * 3 + [sum(sent[40:44])] + sent[44:]), RATE)
    assert ahead == pytest.approx(0.3, abs=0.02) and (behind_at, caught_up_at) == pytest.approx((4.3, 4.4))
    assert sender_burst({}, RATE) is None
