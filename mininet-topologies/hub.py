"""hub: hosts on one shared medium (the thesis's 10 Mbit/s Ethernet hub, sec. 3.4.5).

One Linux bridge with learning off floods every frame to every port, and every frame entering it passes
one shaper: one capacity (`rate`) shared by all ports and both directions, as on a real hub.
"""

from protolab.topo import Host, LanParams, Link, Switch, Topology, add_wan_router, lan_ip, register


class HubParams(LanParams):
    pass


@register("hub", HubParams)
def build(p: HubParams) -> Topology:
    """hosts h1..hN on one shared-capacity hub s1"""
    medium = Switch("s1", mode="hub", capacity_bps=p.rate, multicast_snooping=False, queue_frames=p.hub_queue)
    t = Topology("hub", switches=[medium])
    for i in range(1, p.hosts + 1):
        t.hosts.append(Host(f"h{i}"))
        t.links.append(Link(f"h{i}", "s1", ip1=lan_ip(1, i)))  # the medium, not the port, is the limit
    if p.multicast == "snooping":
        raise ValueError("a hub floods by definition: multicast snooping does not apply (use 'off')")
    if p.wan_router:
        add_wan_router(t, "s1", p)
    return t
