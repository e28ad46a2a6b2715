"""The self-check's delay bound comes from the path's measured base and its spread plus the configured tolerance:
an undelayed link whose own round trip is 0.643 ms passes (it failed against a bound of ±0.633 ms when its base was
taken as 0), a 10 ms link that really adds 10.5 ms fails, and base, spread and bound are recorded."""

from __future__ import annotations

import math
import random

import pytest

from protolab.lab import selfcheck
from protolab.lab.selfcheck import Base, ProbePath
from protolab.model.impairment import Impairment


class Links:
    def __init__(self, lab: FakeLab) -> None:
        self.lab = lab

    def replace(self, a: str, b: str, imp: Impairment, at: str) -> None:
        self.lab.current[(a, b)] = (imp, at)
        self.lab.replaced.append((a, b, imp.delay))


class FakeLab:
    """A path h1 -> s1 -> h2 whose RTT is its base (normal, `base_sd`, drifting by `drift` per series) plus the
    delays in force, each plus `error` when the emulator holds a packet at all (a wrong emulator: pass-through
    holds none)."""

    def __init__(self, delays: dict, base: float = 0.000643, base_sd: float = 0.00008, drift: float = 0.0,
                 error: float = 0.0, seed: int = 1) -> None:  # fmt: skip
        self.current = {d: (Impairment(delay=f"{v * 1e3:g}ms") if v else Impairment(rate="1Gbit"), "sender")
                        for d, v in delays.items()}  # fmt: skip
        self.configured = dict(self.current)
        self.base, self.base_sd, self.drift, self.error = base, base_sd, drift, error
        self.rng, self.series, self.replaced = random.Random(seed), 0, []
        self.links = Links(self)

    def exec(self, node: str, cmd: list[str]) -> tuple[int, str, str]:
        count = int(cmd[cmd.index("-c") + 1])
        held = sum(
            (imp.delay or 0) + (self.error if (imp.delay or 0) > 1e-3 else 0) for imp, _ in self.current.values()
        )
        base = self.base + self.drift * self.series
        self.series += 1
        rtts = [max(1e-5, self.rng.gauss(base, self.base_sd)) + held for _ in range(count)]
        lines = [f"[1700000000.{i:06d}] 64 bytes from 10.0.0.2: icmp_seq={i + 1} ttl=64 time={r * 1e3:.3f} ms"
                 for i, r in enumerate(rtts)]  # fmt: skip
        mean = sum(rtts) / count
        sd = math.sqrt(sum((r - mean) ** 2 for r in rtts) / count)
        lines += [f"{count} packets transmitted, {count} received, 0% packet loss, time 2000ms",
                  f"rtt min/avg/max/mdev = {min(rtts) * 1e3:.3f}/{mean * 1e3:.3f}/{max(rtts) * 1e3:.3f}/"
                  f"{sd * 1e3:.3f} ms"]  # fmt: skip
        return 0, "\n".join(lines) + "\n", ""


PATH = ProbePath(("h1", "s1"), "h1", "h2", "10.0.0.2", [("h1", "s1"), ("s1", "h2")])


def _check(lab: FakeLab) -> dict:
    want = selfcheck.expected(PATH, lab.configured, set())
    return selfcheck.check_direction(lab, PATH, want)


def test_an_undelayed_link_is_held_against_its_own_base_not_against_zero():
    lab = FakeLab({("h1", "s1"): 0.0})  # impaired but not delayed, 0.643 ms of own RTT
    res = _check(lab)
    assert res["passed"], res["failures"]
    m = res["measured"]
    assert m["rtt_base"]["through"] == "the path as it is" and m["rtt_base"]["n"] == 2 * selfcheck.BASE_COUNT
    assert m["rtt_base_seconds"] == pytest.approx(0.000643, abs=3e-5)
    assert abs(m["rtt_added_seconds"]) < m["rtt_bound_seconds"] < 0.0003
    assert m["rtt_base"]["p5_seconds"] < m["rtt_base"]["p50_seconds"] < m["rtt_base"]["p95_seconds"]
    assert res["configured"]["rtt_tolerance_seconds"] == selfcheck.DELAY_FLOOR
    assert lab.replaced == []  # nothing on the path to pass through


def test_a_faithful_10_ms_link_passes_and_is_put_back():
    lab = FakeLab({("h1", "s1"): 0.010})
    res = _check(lab)
    assert res["passed"], res["failures"]
    assert res["measured"]["rtt_base"]["through"] == "pass-through of h1->s1"
    assert res["measured"]["rtt_added_seconds"] == pytest.approx(0.010, abs=5e-5)
    assert lab.current == lab.configured
    assert [d for _a, _b, d in lab.replaced] == [1e-6, 0.010, 1e-6, 0.010]  # a base before and after


def test_a_real_half_millisecond_error_is_caught():
    lab = FakeLab({("h1", "s1"): 0.010}, error=0.0005)
    res = _check(lab)
    assert not res["passed"]
    (failure,) = res["failures"]
    assert failure.startswith("RTT 11.1") and "configured 10.000 ms (bound ±0.2" in failure, failure
    assert "tolerance 0.200 ms + 3 x noise" in failure


def test_a_drifting_base_widens_the_bound_by_its_drift():
    quiet, drifting = FakeLab({("h1", "s1"): 0.010}), FakeLab({("h1", "s1"): 0.010}, drift=0.0001)
    q, d = _check(quiet)["measured"], _check(drifting)["measured"]
    assert d["rtt_base"]["drift_seconds"] == pytest.approx(0.0002, abs=3e-5)  # two series apart
    assert d["rtt_bound_seconds"] - q["rtt_bound_seconds"] == pytest.approx(0.0006, abs=1e-4)


def test_rtt_bound_is_the_tolerance_plus_3_times_the_measured_noise():
    from protolab.lab.selfcheck import rtt_bound

    assert rtt_bound(0.010, 0.0, 1000) == pytest.approx(0.0002)  # the tolerance's floor
    assert rtt_bound(0.540, 0.0, 200) == pytest.approx(0.0108)  # 2 %
    # 1 ms of jitter over 1000 pings: the mean's standard error is 0.032 ms, 3 of them added
    assert rtt_bound(0.010, 0.001, 1000) == pytest.approx(0.0002 + 3 * 0.001 / 1000**0.5)
    assert rtt_bound(0.010, 0.001, 1) == pytest.approx(0.0002)
    base = Base(0.0006, 0.0002, 400, 0.00005, {}, "x")
    assert rtt_bound(0.010, 0.001, 1000, base) == pytest.approx(
        0.0002 + 3 * (0.001**2 / 1000 + 0.0002**2 / 400 + 0.00005**2) ** 0.5
    )


def test_base_of_two_series_pools_them_and_keeps_their_drift():
    b = Base.of([(0.001, 0.0001, [0.0009, 0.0011]), (0.002, 0.0001, [0.0019, 0.0021])], "t")
    assert b.mean == pytest.approx(0.0015) and b.n == 4 and b.drift == pytest.approx(0.001)
    assert b.sd == pytest.approx(math.sqrt(0.0001**2 + 0.0005**2))
    assert b.record()["p5_seconds"] == 0.0009 and b.record()["p95_seconds"] == 0.0021


class LossyLab(FakeLab):
    """FakeLab whose main series (the second of three) goes unanswered for `lost` requests, of which the link
    emulator on h1->s1 counts `counted` as its loss model's (each reading of its counters adds what it lost)."""

    def __init__(self, lost: set[int], counted: int) -> None:
        super().__init__({("h1", "s1"): 0.010})
        self.lost, self.counted, self.total = lost, counted, 0

    def emulator_drops(self) -> dict:
        if self.series == 2:  # read after the main series
            self.total += self.counted
        return {"h1-eth0>s1-eth1": {"dropped": self.total, "overflow": 0}, "s1-eth2>h2-eth0": {"dropped": 5}}

    def exec(self, node: str, cmd: list[str]) -> tuple[int, str, str]:
        code, out, err = super().exec(node, cmd)
        if self.series != 2:
            return code, out, err
        keep = [ln for ln in out.splitlines() if not any(f"icmp_seq={s} " in ln for s in self.lost)]
        return code, "\n".join(keep) + "\n", err


def test_a_loss_miss_names_the_unanswered_requests_and_what_the_emulators_lost():
    """9 requests lost in a run, 1 of them by the emulator's loss model: the miss says which requests and which
    mechanism counted what, so a loss that no emulator counted shows as such."""
    lab = LossyLab({7, *range(40, 48), 300}, counted=1)
    res = _check(lab)
    (failure,) = res["failures"]
    assert failure.startswith("loss 10/1000: configured 0.0000% is outside the 99.9% interval"), failure
    assert "; unanswered: #7, #40-47, #300; " in failure, failure
    assert failure.endswith("the link emulators lost over the series: 1 by h1-eth0>s1-eth1's loss model"), failure
    assert res["measured"]["emulator_drops"] == {"h1-eth0>s1-eth1": {"dropped": 1}}


def test_a_lab_that_cannot_count_its_emulators_drops_says_only_what_went_unanswered():
    lab = FakeLab({("h1", "s1"): 0.010})
    res = _check(lab)
    assert res["passed"] and "emulator_drops" not in res["measured"] and "lost_requests" not in res["measured"]


def test_lost_requests_are_named_in_runs_and_capped():
    from protolab.workloads.ping_runner import Echo

    echoes = [Echo(s, 0.0, 0.001) for s in (2, 3, 6)]
    assert selfcheck.lost_requests(7, echoes) == "#1, #4-5, #7"
    assert selfcheck.lost_requests(7, echoes, most=2) == "#1, #4-5 and 1 more runs"
    assert selfcheck.lost_requests(3, [Echo(s, 0.0, 0.001) for s in (1, 2, 3)]) == ""


def test_drops_over_two_readings_keep_only_what_counted():
    before = {"a": {"dropped": 3, "overflow": 0}}
    after = {"a": {"dropped": 5, "overflow": 0}, "b": {"queue_full": 2, "socket_full": 0}}
    assert selfcheck.drops_over(before, after) == {"a": {"dropped": 2}, "b": {"queue_full": 2}}
    assert selfcheck.drops_over(None, after) is None and selfcheck.drops_over(before, None) is None


def test_rtt_resolution_is_twice_the_tolerance_and_the_configured_jitters_own_noise():
    from protolab.lab.selfcheck import rtt_resolution

    assert rtt_resolution(0.010, 0.0, 1000) == pytest.approx(0.0004)
    assert rtt_resolution(0.540, 0.0, 200) == pytest.approx(0.0216)
    assert rtt_resolution(0.010, 0.001, 1000) == pytest.approx(0.0004 + 3 * 0.001 / 1000**0.5)
    assert rtt_resolution(0.010, 0.001, 1) == pytest.approx(0.0004)


def test_a_check_the_machines_noise_left_unable_to_tell_says_so():
    """A 0.5 ms error under 2 ms of the machine's own RTT noise: the bound (±0.56 ms) passes it, and the check says
    it could not tell finely (it is made again, and says so if the last attempt is as noisy)."""
    for error in (0.0005, 0.0):
        res = _check(FakeLab({("h1", "s1"): 0.010}, base=0.005, base_sd=0.002, error=error))
        m = res["measured"]
        assert m["rtt_bound_seconds"] > m["rtt_resolution_seconds"] == pytest.approx(0.0004)
        assert res["passed"] and res["unresolved"] and res["failures"] == []
        (note,) = res["notes"]
        assert note.startswith("RTT could not be told finely") and "past the ±0.400 ms" in note, note


def test_a_check_within_its_resolution_is_told():
    res = _check(FakeLab({("h1", "s1"): 0.010}, base_sd=0.0003))
    m = res["measured"]
    assert m["rtt_bound_seconds"] < m["rtt_resolution_seconds"] and res["passed"] and "unresolved" not in res
