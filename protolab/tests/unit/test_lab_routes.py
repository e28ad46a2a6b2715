"""The route check after configuration reads `ip route show` as the kernel prints it."""

import ipaddress

from protolab.lab.local import _route_destinations

SHOWN = """10.0.1.0/24 dev h1-eth0 proto kernel scope link src 10.0.1.1
192.0.2.1 via 10.0.1.2 dev h1-eth0
default via 10.0.1.2 dev h1-eth0
fd00:192:0:2::1 via fd00:10:0:1::2 dev h1-eth0 metric 1024 pref medium
224.0.0.0/4 dev h1-eth0 scope link
"""


def test_host_routes_print_without_their_prefix_length_and_still_count():
    found = _route_destinations(SHOWN)
    assert ipaddress.ip_network("192.0.2.1/32") in found
    assert ipaddress.ip_network("fd00:192:0:2::1/128") in found
    assert ipaddress.ip_network("10.0.1.0/24") in found


def test_a_route_that_is_not_there_is_missing():
    found = _route_destinations(SHOWN)
    assert ipaddress.ip_network("10.0.9.0/24") not in found
    assert ipaddress.ip_network("192.0.2.0/24") not in found
