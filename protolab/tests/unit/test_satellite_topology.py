"""The satellite topology (seed 002): two sites behind routers, one shaped long-delay link with bit errors."""

import pytest
from pydantic import ValidationError

from protolab import topo


def test_two_sites_route_to_each_other_over_the_one_satellite_link():
    t = topo.build("satellite", {"hosts": 2, "sat_rate": "64kbit", "delay": "270ms", "ber": 1e-5})
    assert [h.name for h in t.hosts] == ["r1", "r2", "h1", "h2", "h3", "h4"]
    sat = [lk for lk in t.links if lk.segment == "satellite"]
    assert len(sat) == 1 and (sat[0].node1, sat[0].node2, sat[0].rate_bps) == ("r1", "r2", 64e3)
    assert t.host("h1").routes[0] == ("10.0.2.0/24", "10.0.1.254")  # site A -> B through r1
    assert t.host("h3").routes[0] == ("10.0.1.0/24", "10.0.2.254")
    assert t.host("r1").routes == [("10.0.2.0/24", "10.0.254.2")] and t.host("r1").forwarding
    addrs = t.addresses()
    for gw in ("10.0.1.254", "10.0.2.254", "10.0.254.1", "10.0.254.2"):
        assert gw in addrs
    (imp,) = t.impairments
    assert imp.link == ("r1", "r2") and imp.direction == "both" and imp.delay == pytest.approx(0.27)
    # a 1024-byte packet at BER 1e-5 is lost with probability 1-(1-1e-5)^8192
    assert imp.corrupt_probability(1024) == pytest.approx(1 - (1 - 1e-5) ** 8192)


def test_no_ber_no_bit_errors_and_a_zero_delay_link_is_unimpaired():
    t = topo.build("satellite", {})
    assert t.impairments[0].ber is None and t.impairments[0].delay == pytest.approx(0.27)
    assert topo.build("satellite", {"delay": "0s"}).impairments == []


@pytest.mark.parametrize("ber", [-1e-6, 0.05, 1.0])
def test_a_bit_error_rate_outside_0_to_1e_2_is_refused(ber):
    with pytest.raises(ValidationError, match="ber"):
        topo.build("satellite", {"ber": ber})


def test_the_satellite_queue_is_the_links_limit_each_way_not_netems_1000_packets():
    (imp,) = topo.build("satellite", {"ber": 1e-5}).impairments
    assert imp.queue_limit() == 20 and imp.netem_args()[:2] == ["limit", "20"]
    (imp,) = topo.build("satellite", {"queue": 64}).impairments
    assert imp.queue_limit() == 64
    with pytest.raises(ValidationError, match="queue"):
        topo.build("satellite", {"queue": 0})
