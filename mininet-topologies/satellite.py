"""satellite: two sites joined by one long-delay link, the set-up of seed 002 (Colella, Aronoff, Mills: ISO
class 4 transport over a 64 kbit/s satellite channel, about 270 ms one way).

Site A: hosts h1..hN on switch s1 with router r1 (10.0.1.0/24, r1 = .254); site B: hosts hN+1..h2N on s2 with
router r2 (10.0.2.0/24, r2 = .254). r1-r2 is the satellite link (10.0.254.0/30), `sat_rate` each way with
`delay` one way and `ber` bit errors: a packet of n bytes on it is lost with probability 1-(1-ber)^(8n) (a
damaged frame fails its checksum and is dropped, as the paper's channel model assumes). The site LANs run at
`rate` and add nothing.

`queue` is the link's queue limit in packets each way (the impairment's `limit`): the 1000 packets sized for
fast links would hold minutes at 64 kbit/s (1000 full frames = 190 s), a bufferbloat no satellite modem has.
It also bounds the packets held for the delay (netem's queue, linkem's): 20 leaves room for the ~13 small
TPDUs (170 B frames) that 270 ms at 64 kbit/s holds.
"""

from pydantic import Field

from protolab.model.impairment import MAX_BER, LinkImpairment
from protolab.topo import Host, Link, Switch, Topology, TopologyParams, lan_ip, register
from protolab.units import BitsPerSecond, Seconds


class SatelliteParams(TopologyParams):
    hosts: int = Field(1, ge=1, le=16, description="hosts per site: h1..hN at site A, hN+1..h2N at site B")
    rate: BitsPerSecond = Field(10e6, description="rate of the site LANs, e.g. '10Mbit'")
    sat_rate: BitsPerSecond = Field(64e3, description="rate of the satellite link each way, e.g. '64kbit'")
    delay: Seconds = Field(0.27, ge=0, le=2, description="one-way delay of the satellite link, e.g. '270ms'")
    ber: float | None = Field(
        None, ge=0, le=MAX_BER, description=f"bit error rate of the satellite link, 0 or null: none, at most {MAX_BER}"
    )
    queue: int = Field(
        20, ge=2, le=10000, description="queue limit of the satellite link each way, packets (held for the delay too)"
    )


@register("satellite", SatelliteParams)
def build(p: SatelliteParams) -> Topology:
    """two sites (h1..hN behind r1, hN+1..h2N behind r2) joined by one shaped long-delay link with bit errors"""
    t = Topology("satellite", switches=[Switch("s1"), Switch("s2")])
    t.hosts += [Host("r1", role="router", forwarding=True, routes=[("10.0.2.0/24", "10.0.254.2")]),
                Host("r2", role="router", forwarding=True, routes=[("10.0.1.0/24", "10.0.254.1")])]  # fmt: skip
    t.links.append(Link("r1", "r2", ip1="10.0.254.1/30", ip2="10.0.254.2/30", rate_bps=p.sat_rate, segment="satellite"))
    for site, (switch, router, subnet, far) in enumerate((("s1", "r1", 1, 2), ("s2", "r2", 2, 1))):
        t.links.append(Link(switch, router, ip2=lan_ip(subnet, 254), rate_bps=p.rate, segment=f"site_{'ab'[site]}"))
        for i in range(1, p.hosts + 1):
            name = f"h{site * p.hosts + i}"
            t.hosts.append(Host(name, routes=[(f"10.0.{far}.0/24", f"10.0.{subnet}.254"),
                                              ("10.0.254.0/30", f"10.0.{subnet}.254")]))  # fmt: skip
            t.links.append(Link(name, switch, ip1=lan_ip(subnet, i), rate_bps=p.rate, segment=f"site_{'ab'[site]}"))
    imp: dict[str, str | float | int] = {"delay": f"{p.delay * 1e6:.0f}us"} if p.delay else {}
    if p.ber:
        imp["ber"] = p.ber
    if imp:
        t.impairments.append(LinkImpairment(link=("r1", "r2"), direction="both", limit=p.queue, **imp))
    return t
