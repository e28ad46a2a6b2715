"""Reading ping output into outages and edges, the self-check's probe plan and expectations, and
binomial checks. No lab: pure functions on captured or constructed data."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from protolab import topo
from protolab.lab import selfcheck
from protolab.model.impairment import GilbertElliott, Impairment
from protolab.model.report import Check
from protolab.results.checks import evaluate
from protolab.units import parse_quantity
from protolab.workloads.ping_runner import edge_errors, outages, parse, summary

PING = """PING 10.0.1.2 (10.0.1.2) 56(84) bytes of data.
[1000.0105] 64 bytes from 10.0.1.2: icmp_seq=1 ttl=64 time=0.500 ms
[1000.0205] 64 bytes from 10.0.1.2: icmp_seq=2 ttl=64 time=0.500 ms
[1000.0205] 64 bytes from 10.0.1.2: icmp_seq=2 ttl=64 time=0.600 ms (DUP!)
[1000.0705] 64 bytes from 10.0.1.2: icmp_seq=7 ttl=64 time=0.500 ms
[1000.0805] 64 bytes from 10.0.1.2: icmp_seq=8 ttl=64 time=0.500 ms

--- 10.0.1.2 ping statistics ---
9 packets transmitted, 4 received, +1 duplicates, 55.5556% packet loss, time 80ms
"""


def test_ping_parse_keeps_first_replies_and_send_times():
    sent, echoes = parse(PING)
    assert sent == 9 and [e.seq for e in echoes] == [1, 2, 7, 8]
    assert echoes[0].sent == pytest.approx(1000.01) and echoes[0].rtt == pytest.approx(0.0005)


def test_ping_summary_gives_the_mean_finer_than_the_replies():
    # a steady 270.3 ms path: every reply prints "time=270 ms", the closing line keeps the microseconds
    out = "[1.0] 64 bytes from 10.0.1.2: icmp_seq=1 ttl=64 time=270 ms\n"
    out += "1 packets transmitted, 1 received, 0% packet loss, time 0ms\n"
    assert summary(out) is None
    out += "rtt min/avg/max/mdev = 270.251/270.312/270.401/0.041 ms\n"
    assert summary(out) == pytest.approx((0.270312, 0.000041))


def test_outage_edges_sit_halfway_between_probes():
    sent, echoes = parse(PING)
    found = outages(sent, echoes, 0.01)
    # requests 3..6 unanswered: sent at 1000.03..1000.06 (interpolated); 9 is a trailing single loss
    assert len(found) == 1 and found[0].lost == 4
    assert found[0].start == pytest.approx(1000.025) and found[0].end == pytest.approx(1000.065)
    down = SimpleNamespace(action="down", wall=1000.027)
    up = SimpleNamespace(action="up", wall=1000.061)
    errs = edge_errors(found, [down, up, SimpleNamespace(action="set", wall=1000.0)])
    assert errs == pytest.approx([-0.002, 0.004])


def test_an_edge_the_probes_never_saw_is_infinite_not_zero():
    sent, echoes = parse(PING)
    assert edge_errors([], [SimpleNamespace(action="down", wall=1.0)]) == [math.inf]
    assert outages(sent, echoes, 0.01, min_lost=5) == []


def test_ping_without_statistics_is_an_error():
    with pytest.raises(ValueError, match="no ping statistics"):
        parse("ping: connect: Network is unreachable\n")


def _switched(n: int = 3):
    return topo.build("switched", {"hosts": n, "rate": "100Mbit"})


def test_probe_plan_crosses_the_direction_with_unimpaired_hosts_first():
    t = _switched()
    p = selfcheck.plan(t, ("s1", "h2"), {("s1", "h2"), ("h1", "s1")})
    assert (p.src, p.dst, p.dst_ip) == ("h3", "h2", "10.0.1.2")  # h1's link is impaired: h3 is cleaner
    assert p.path == [("h3", "s1"), ("s1", "h2")]
    q = selfcheck.plan(t, ("h1", "s1"), {("h1", "s1")})
    assert (q.src, q.dst) == ("h1", "h2") and q.path == [("h1", "s1"), ("s1", "h2")]


def test_probe_plan_on_dual_homed_path_b_uses_path_b_addresses():
    t = topo.build("dual_homed", {"hosts": 2, "rate": "10Mbit"})
    p = selfcheck.plan(t, ("s2", "h2"), {("s2", "h2")})
    assert (p.src, p.dst_ip) == ("h1", "10.0.2.2")


def test_expected_figures_compose_along_the_path():
    t = _switched()
    p = selfcheck.plan(t, ("h1", "s1"), {("h1", "s1")})
    base = Impairment(rate="100Mbit")
    configured = {
        ("h1", "s1"): (Impairment(rate="10Mbit", delay="10ms", jitter="3ms", loss="1%"), "sender"),
        ("s1", "h2"): (Impairment(rate="100Mbit", delay="5ms", jitter="4ms", loss="2%"), "sender"),
        ("h2", "s1"): (base, "sender"),
        ("s1", "h1"): (Impairment(rate="100Mbit", delay="1ms"), "sender"),
    }
    want = selfcheck.expected(p, configured, spec_rated={("h1", "s1")})
    assert want.rate_bps == 10e6 and want.rated == ("h1", "s1")
    assert want.rtt_seconds == pytest.approx(0.016)
    assert want.jitter_seconds == pytest.approx(0.005)
    assert want.loss_ratio == pytest.approx(1 - 0.99 * 0.98)
    assert not want.bursty
    ge = {("h1", "s1"): (Impairment(loss_model=GilbertElliott(p="1%", r="10%")), "sender")}
    assert selfcheck.expected(p, ge, set()).bursty and selfcheck.expected(p, ge, set()).rate_bps is None


def test_percent_quantities_are_ratios():
    assert parse_quantity("1%") == pytest.approx(0.01) and parse_quantity(" 0.1 %") == pytest.approx(0.001)


def _point(check: Check):
    exp = SimpleNamespace(checks=[check])
    return SimpleNamespace(id="p000", index=0, values={"loss": "1%"}, experiment=exp)


def test_binomial_check_pools_repetitions_and_tests_the_target():
    c = Check(name="loss", column="u_lost_total", trials="u_sent_total", target="1%", confidence=0.99)
    rows = [{"point": "p000", "u_lost_total": 9, "u_sent_total": 1000},
            {"point": "p000", "u_lost_total": 12, "u_sent_total": 1000}]  # fmt: skip
    (r,) = evaluate([_point(c)], rows)
    assert r["passed"] and r["measured"] == pytest.approx(0.0105) and r["bound"]["min"] < 0.01 < r["bound"]["max"]
    far = [{"point": "p000", "u_lost_total": 60, "u_sent_total": 2000}]
    (r,) = evaluate([_point(c)], far)
    assert not r["passed"] and r["bound"]["min"] > 0.01


def test_a_check_with_a_baseline_bounds_the_difference_of_the_means():
    c = Check(name="d", column="p_rtt_mean_seconds", baseline="b_rtt_mean_seconds", target="10ms",
              tolerance_percent=2, tolerance_absolute="0.5ms")  # fmt: skip
    rows = [{"point": "p000", "p_rtt_mean_seconds": 0.0106, "b_rtt_mean_seconds": 0.0004},
            {"point": "p000", "p_rtt_mean_seconds": 0.0108, "b_rtt_mean_seconds": 0.0006}]  # fmt: skip
    (r,) = evaluate([_point(c)], rows)
    assert r["passed"] and r["measured"] == pytest.approx(0.0102) and r["baseline_column"] == "b_rtt_mean_seconds"
    # the same RTT without its base is 0.7 ms over: outside max(0.5 ms, 2 %)
    (r,) = evaluate([_point(c.model_copy(update={"baseline": None}))], rows)
    assert not r["passed"]
    # no baseline measured: not a pass
    (r,) = evaluate([_point(c)], [{"point": "p000", "p_rtt_mean_seconds": 0.0102}])
    assert not r["passed"] and r["measured"] is None
    with pytest.raises(ValueError, match="baseline"):
        Check(name="x", column="a_total", baseline="b_total", trials="c_total", target="1%", confidence=0.9)


def test_a_checks_bound_widens_by_the_measured_noise_and_still_catches_half_a_millisecond():
    noise = {"spread": "p_rtt_stddev_seconds", "samples": "p_received_total",
             "baseline_spread": "b_rtt_stddev_seconds", "baseline_samples": "b_received_total"}  # fmt: skip
    c = Check(name="d", column="p_rtt_mean_seconds", baseline="b_rtt_mean_seconds", target="10ms",
              tolerance_percent=2, tolerance_absolute="0.2ms", noise=noise)  # fmt: skip

    def row(added: float, sd: float, n: int = 300) -> dict:
        return {"point": "p000", "p_rtt_mean_seconds": 0.0004 + added, "b_rtt_mean_seconds": 0.0004,
                "p_rtt_stddev_seconds": sd, "p_received_total": n, "b_rtt_stddev_seconds": 0.00005,
                "b_received_total": n}  # fmt: skip

    # 1 ms of jitter over 300 echoes: a standard error of 58 us, so 3 x it widens 0.2 ms to 0.37 ms
    (r,) = evaluate([_point(c)], [row(0.01031, 0.001)])
    se = math.sqrt(0.001**2 / 300 + 0.00005**2 / 300)
    assert r["passed"] and r["noise"]["standard_error"] == pytest.approx(se)
    assert r["bound"]["max"] == pytest.approx(0.0102 + 3 * se)
    (r,) = evaluate([_point(c.model_copy(update={"noise": None}))], [row(0.01031, 0.001)])
    assert not r["passed"]  # the same mean without its noise: outside the bare tolerance
    # a real 0.5 ms error on a quiet path is caught; repetitions pool: two of them halve the variance
    (r,) = evaluate([_point(c)], [row(0.0105, 0.00005)])
    assert not r["passed"], r
    (r,) = evaluate([_point(c)], [row(0.0101, 0.001), row(0.0101, 0.001)])
    assert r["noise"]["standard_error"] == pytest.approx(se / math.sqrt(2))
    # a repetition without a deviation (a single echo): no noise known, the bound is the tolerance alone, said
    (r,) = evaluate([_point(c)], [row(0.0101, 0.001, n=1)])
    assert r["noise"]["standard_error"] is None and r["bound"]["max"] == pytest.approx(0.0102) and r["passed"]
    with pytest.raises(ValueError, match="baseline_spread"):
        Check(name="x", column="a_seconds", baseline="b_seconds", target="1ms", tolerance_percent=2,
              noise={"spread": "s_seconds", "samples": "n_total"})  # fmt: skip
    with pytest.raises(ValueError, match="not with derived or trials"):
        Check(name="x", column="a_total", trials="b_total", target="1%", confidence=0.9,
              noise={"spread": "s_seconds", "samples": "n_total"})  # fmt: skip


def test_binomial_check_with_nothing_sent_fails():
    c = Check(name="loss", column="u_lost_total", trials="u_sent_total", target="1%", confidence=0.99)
    (r,) = evaluate([_point(c)], [{"point": "p000", "u_lost_total": None, "u_sent_total": None}])
    assert not r["passed"] and r["measured"] is None


def test_check_forms_are_validated():
    with pytest.raises(ValueError, match="binomial check needs"):
        Check(name="x", column="a_total", trials="b_total", target="1%")
    with pytest.raises(ValueError, match="no tolerance"):
        Check(name="x", column="a_total", trials="b_total", target="1%", confidence=0.99, max=1)
    with pytest.raises(ValueError, match="floor"):
        Check(name="x", column="a_seconds", min=0, tolerance_absolute="0.5ms")
    c = Check(name="d", column="a_seconds", target="100ms", tolerance_percent=2, tolerance_absolute="0.5ms")
    assert c.bounds() == pytest.approx((0.098, 0.102))
    c = Check(name="d", column="a_seconds", target="1ms", tolerance_percent=2, tolerance_absolute="0.5ms")
    assert c.bounds() == pytest.approx((0.0005, 0.0015))


def test_a_bit_error_rate_applies_to_the_echos_ip_length_as_linkem_draws_it():
    t = topo.build("satellite", {"ber": 1e-3})
    p = selfcheck.plan(t, ("r1", "r2"), {("r1", "r2"), ("r2", "r1")})
    ber = Impairment(ber=1e-3)
    want = selfcheck.expected(p, {("r1", "r2"): (ber, "sender"), ("r2", "r1"): (ber, "sender")}, set())
    ip = 56 + 8 + 20  # ping's payload, ICMP and IPv4 headers: no Ethernet header
    assert selfcheck.ping_ip_bytes(p) == ip
    assert want.loss_ratio == pytest.approx(1 - (1 - 1e-3) ** (2 * 8 * ip))
