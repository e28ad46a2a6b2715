"""switched: hosts on a learning bridge, each port full duplex at `rate` (the thesis's 100 Mbit/s switch)."""

from protolab.topo import Host, LanParams, Link, Switch, Topology, add_wan_router, lan_ip, register


class SwitchedParams(LanParams):
    pass


@register("switched", SwitchedParams)
def build(p: SwitchedParams) -> Topology:
    """hosts h1..hN on learning bridge s1, every port shaped to `rate` in each direction"""
    t = Topology("switched", switches=[Switch("s1", multicast_snooping=p.multicast == "snooping")])
    for i in range(1, p.hosts + 1):
        t.hosts.append(Host(f"h{i}"))
        t.links.append(Link(f"h{i}", "s1", ip1=lan_ip(1, i), rate_bps=p.rate))
    if p.wan_router:
        add_wan_router(t, "s1", p)
    return t
