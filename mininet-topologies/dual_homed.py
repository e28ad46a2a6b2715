"""dual_homed: every host on two independent paths (switches s1 and s2), so one path can fail alone.

Path A is 10.0.1.0/24 through s1 (interface <h>-eth0), path B is 10.0.2.0/24 through s2 (<h>-eth1);
the SCIOP paper's set-up (seed 001): pulling one cable leaves the other path up.
"""

from pydantic import Field

from protolab.topo import Host, LanParams, Link, Switch, Topology, add_wan_router, lan_ip, register
from protolab.units import BitsPerSecond


class DualHomedParams(LanParams):
    rate_b: BitsPerSecond | None = Field(None, description="rate of path B (default: same as rate)")


@register("dual_homed", DualHomedParams)
def build(p: DualHomedParams) -> Topology:
    """hosts h1..hN each with one link to s1 (path A) and one to s2 (path B)"""
    snoop = p.multicast == "snooping"
    t = Topology(
        "dual_homed", switches=[Switch("s1", multicast_snooping=snoop), Switch("s2", multicast_snooping=snoop)]
    )
    for i in range(1, p.hosts + 1):
        t.hosts.append(Host(f"h{i}"))
    for i in range(1, p.hosts + 1):
        t.links.append(Link(f"h{i}", "s1", ip1=lan_ip(1, i), rate_bps=p.rate, segment="path_a"))
        t.links.append(Link(f"h{i}", "s2", ip1=lan_ip(2, i), rate_bps=p.rate_b or p.rate, segment="path_b"))
    if p.wan_router:
        add_wan_router(t, "s1", p)
    return t
