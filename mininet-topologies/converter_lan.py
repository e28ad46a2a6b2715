"""converter_lan: the thesis's five Study 3 layouts (sec. 3.4.5) as one kind with a `layout` parameter.

Every layout has the simulation hosts h1..hN (role host, 10.0.1.<i>) and the WAN router r1 (role router), which
runs the outside message source and sink itself, so WAN traffic enters the LAN at the router as in the thesis's
COMNET model (sec. 3.5.1); no multicast routing beyond the LAN is needed. The converter layouts add the router
interfaces c1a, c1b, ... (role converter-c1) and the central converter c2 (role converter-c2).

| layout | s1 (the hosts' LAN) | s2 (the converters' LAN) |
|---|---|---|
| baseline | 10 Mbit hub: hosts, r1 | - |
| switched | 100 Mbit switch: hosts, r1 | - |
| converter_hub | 10 Mbit hub: hosts, r1, c1s, c2 | - |
| converter_100_10 | 10 Mbit hub: hosts, c2 | 100 Mbit switch: c1s, c2, r1 |
| converter_100_100 | 100 Mbit hub: hosts, c2 | 100 Mbit switch: c1s, c2, r1 |

In the last two c2 is dual-homed: c2-eth0 on s1 (10.0.1.100, where it broadcasts bundles to the hosts; the
lab routes multicast onto a node's first interface) and c2-eth1 on s2 (10.0.2.100). Addresses: hosts
10.0.1.<i>, c2 .100, c1a/c1b/... .101.., r1 .254, on whichever LAN the node sits.

Each link's `segment` names the traffic it carries, for the per-segment link utilisation of Tables 4-14,
4-16, 4-18 and 4-20: `host_link` (a simulation host's link), `c2_host` (c2 toward the hosts), `c1_c2`
(c2 toward the C1s), `c1_router` (r1's link: C1s <-> router), `c1_link` (a C1's own link), `router_link`
(r1 in the baseline layouts). On a hub every segment is the one shared medium (in converter_hub the C1s' links
are labelled `c1_c2`).
"""

from typing import Literal

from pydantic import Field

from protolab.topo import HUB_QUEUE, Host, Link, Switch, Topology, TopologyParams, register
from protolab.units import BitsPerSecond

Layout = Literal["baseline", "switched", "converter_hub", "converter_100_10", "converter_100_100"]
LAYOUTS: tuple[str, ...] = Layout.__args__  # type: ignore[attr-defined]
C1_NAMES = "abcdef"  # C_1a .. C_1f: the thesis allows up to six router interfaces


class ConverterLanParams(TopologyParams):
    layout: Layout = Field(..., description="one of the thesis's five topologies (sec. 3.4.5)")
    hosts: int = Field(6, ge=2, le=16, description="simulation hosts h1..hN (C_2 serves up to 16)")
    c1: int = Field(2, ge=1, le=6, description="router interfaces C_1a.. (converter layouts only)")
    host_rate: BitsPerSecond | None = Field(
        None, description="the hosts' LAN capacity (default: 100 Mbit for switched and converter_100_100, else 10)"
    )
    converter_rate: BitsPerSecond = Field(100e6, description="the converters' switch, per port and direction")
    hub_queue: int = HUB_QUEUE
    converter_cpus: float | None = Field(
        None, gt=0, description="CPU budget of every converter (C_1s, C_2) in cores; null: none"
    )
    multicast: Literal["off", "snooping"] = Field(
        "off", description="switches only: IGMP snooping, or flood multicast like the thesis's 1997 switches"
    )


def hosts_lan_rate(p: ConverterLanParams) -> float:
    if p.host_rate is not None:
        return p.host_rate
    return 100e6 if p.layout in ("switched", "converter_100_100") else 10e6


def c1_nodes(p: ConverterLanParams) -> list[str]:
    return [f"c1{C1_NAMES[i]}" for i in range(p.c1)] if p.layout.startswith("converter") else []


@register("converter_lan", ConverterLanParams)
def build(p: ConverterLanParams) -> Topology:
    """the thesis's Study 3 LANs: baseline / switched / converter_hub / converter_100_10 / converter_100_100"""
    rate = hosts_lan_rate(p)
    hub = p.layout != "switched"
    snoop = p.multicast == "snooping"
    if snoop and hub:
        raise ValueError(f"layout {p.layout}: the hosts are on a hub, which floods by definition (multicast 'off')")
    if hub:
        s1 = Switch("s1", mode="hub", capacity_bps=rate, queue_frames=p.hub_queue)
    else:
        s1 = Switch("s1", multicast_snooping=snoop)
    t = Topology("converter_lan", switches=[s1])
    port_rate = None if hub else rate  # a hub's limit is its medium, not its ports

    def on_s1(node: str, ip: str, segment: str) -> None:
        t.links.append(Link(node, "s1", ip1=f"10.0.1.{ip}/24", rate_bps=port_rate, segment=segment))

    for i in range(1, p.hosts + 1):
        t.hosts.append(Host(f"h{i}", role="host"))
        on_s1(f"h{i}", str(i), "host_link")
    c1s = c1_nodes(p)
    if p.layout in ("baseline", "switched"):
        t.hosts.append(Host("r1", role="router"))
        on_s1("r1", "254", "router_link")
        return t
    t.hosts.append(Host("c2", role="converter-c2", cpus=p.converter_cpus))
    on_s1("c2", "100", "c2_host")  # first: c2-eth0 faces the hosts (multicast is routed onto eth0)
    t.hosts += [Host(c, role="converter-c1", cpus=p.converter_cpus) for c in c1s]
    t.hosts.append(Host("r1", role="router"))
    if p.layout == "converter_hub":
        for i, c in enumerate(c1s):
            on_s1(c, str(101 + i), "c1_c2")  # on the hub all traffic shares the medium; these carry the bundles
        on_s1("r1", "254", "c1_router")
        return t
    t.switches.append(Switch("s2", multicast_snooping=snoop))

    def on_s2(node: str, ip: str, segment: str) -> None:
        t.links.append(Link(node, "s2", ip1=f"10.0.2.{ip}/24", rate_bps=p.converter_rate, segment=segment))

    on_s2("c2", "100", "c1_c2")
    for i, c in enumerate(c1s):
        on_s2(c, str(101 + i), "c1_link")
    on_s2("r1", "254", "c1_router")
    return t
