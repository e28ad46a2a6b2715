"""Topology files: parse -> validate -> resolve into the model the built-in generators make; bad input named."""

from __future__ import annotations

import ipaddress
import textwrap
from pathlib import Path

import pytest

from protolab import spec, topo, topofile
from protolab.errors import SpecError


def _write(tmp_path: Path, text: str, name: str = "net.yaml") -> Path:
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def test_the_shipped_triangle_resolves_addresses_routes_and_impairments():
    t = topofile.load(topofile.find("triangle"))
    ips = {(n, i): ip for n, i, ip in topofile.addresses(t)}
    assert ips["h1", "h1-eth0"] == "10.0.1.1/24" and ips["r1", "r1-eth0"] == "10.0.1.3/24"
    assert ips["r1", "r1-eth1"] == "10.0.2.1/24" and ips["r2", "r2-eth0"] == "10.0.2.2/24"
    assert ips["h3", "h3-eth0"] == "10.0.3.2/24"
    h1, h3, r1 = t.host("h1"), t.host("h3"), t.host("r1")
    assert sorted(h1.routes) == [("10.0.2.0/24", "10.0.1.3"), ("10.0.3.0/24", "10.0.1.3")]  # through r1
    assert sorted(h3.routes) == [("10.0.1.0/24", "10.0.3.1"), ("10.0.2.0/24", "10.0.3.1")]  # through r2
    assert r1.routes == [("10.0.3.0/24", "10.0.2.2")] and r1.forwarding and not h1.forwarding
    assert h3.cpus == 0.5
    hub = next(s for s in t.switches if s.name == "lan")
    assert hub.mode == "hub" and hub.capacity_bps == 10e6
    assert {(i.link, i.direction, i.delay, i.loss) for i in t.impairments} == {
        (("r1", "r2"), "forward", 0.135, None),
        (("r1", "r2"), "reverse", 0.135, 0.01),
    }


def test_a_file_makes_the_same_model_as_the_switched_generator_with_its_wan_router(tmp_path):
    path = _write(
        tmp_path,
        """
        name: switched
        nodes:
          h1: {}
          h2: {}
          h3: {}
          r1: {kind: router}
          w1: {role: wan}
        segments:
          - {name: lan, bridge: s1, members: [h1, h2, h3], capacity: 100Mbit}
        links:
          - {endpoints: [s1, r1], rate: 100Mbit, addresses: [null, 10.0.1.254/24], segment: lan}
          - {endpoints: [r1, w1], rate: 1544kbit, addresses: [10.0.100.1/24, 10.0.100.2/24], segment: wan}
        """,
    )
    mine = topofile.load(path)
    theirs = topo.build("switched", {"hosts": 3, "wan_router": True})
    assert mine.hosts == theirs.hosts
    assert mine.switches == theirs.switches
    assert mine.links == theirs.links
    assert mine.interfaces() == theirs.interfaces()


def test_given_addresses_are_kept_and_assigned_ones_avoid_them(tmp_path):
    path = _write(
        tmp_path,
        """
        nodes: {a: {}, b: {}, c: {}, d: {}}
        segments: [{name: s1, members: [a, b, c], subnet: 10.0.1.0/24}]
        links:
          - {endpoints: [c, d], addresses: [10.0.2.9/24, null]}
        """,
    )
    ips = {n + "/" + i: ip for n, i, ip in topofile.addresses(topofile.load(path))}
    assert ips == {"a/a-eth0": "10.0.1.1/24", "b/b-eth0": "10.0.1.2/24", "c/c-eth0": "10.0.1.3/24",
                   "c/c-eth1": "10.0.2.9/24", "d/d-eth0": "10.0.2.1/24"}  # fmt: skip


@pytest.mark.parametrize(
    "body, says",
    [
        ("nodes: {h1: {}, h1: {}}", "duplicate key 'h1'"),
        ("nodes: {h1: {}, h2: {}}\nlinks: [{endpoints: [h1, h9]}]", "links.0.endpoints: no node 'h9'"),
        (
            "nodes: {h1: {}, h2: {}, h3: {}}\nsegments: [{name: a, kind: hub, members: [h1, h2]},"
            " {name: b, kind: hub, members: [h2, h3]}]",
            "segments.1.members: h2 is already on hub a",
        ),
        ("nodes: {h1: {}, h2: {}}\nsegments: [{name: h1, members: [h2]}]", "bridge name 'h1' is taken"),
        ("nodes: {h1: {}}\nsegments: [{name: s1, members: [h1, h7]}]", "segments.0.members: no node 'h7'"),
        ("nodes: {h1: {}, h2: {}}\nlinks: [{endpoints: [h1, h2]}, {endpoints: [h2, h1]}]", "already joined by links.0"),
        ("nodes: {averyverylongname: {}}", "longer than 10 characters"),
        ("nodes: {h1: {}, longsw: {kind: switch}}\nlinks: [{endpoints: [h1, longsw]}]", "too long"),
        ("nodes: {h1: {kind: switch, cpus: 1}}", "nodes.h1: a switch is a bridge"),
        ("nodes: {H1: {}}", "a node name is lower-case"),
        ("nodes: {h1: {}, h2: {}}\nlinks: [{endpoints: [h1, h2], addresses: [10.0.0.1, null]}]", "needs a prefix"),
        ("nodes: {h1: {}, h2: {}}\nlinks: [{endpoints: [h1, h2], impairments: {both: {loss: 2}}}]", "percentage"),
        ("nodes: {h1: {}}\nlinks: [{endpoints: [h1, h1]}]", "two different nodes"),
        ("nodes: {h1: {}, h2: {}}\nlinks: [{endpoints: [h1, h2], addresses: [fd00::1/64, null]}]", "IPv6 twin"),
        # what the resolver leaves to the check every topology passes (Topology.validate)
        (
            "nodes: {h1: {routes: [{to: 10.9.0.0/16, via: 10.0.7.1}]}, h2: {}}\nlinks: [{endpoints: [h1, h2]}]",
            "node h1: route to 10.9.0.0/16 via 10.0.7.1: gateway 10.0.7.1 is on none of its subnets (10.0.1.0/24)",
        ),
        (
            "nodes: {h1: {routes: [{to: 10.9.0.0/16, via: 10.0.1.9}]}, h2: {}}\nlinks: [{endpoints: [h1, h2]}]",
            "route to 10.9.0.0/16 via 10.0.1.9: gateway 10.0.1.9 is no node's address",
        ),
        ("nodes: {h1: {}, h2: {}}\nsegments: [{name: lan, kind: hub, members: [h1, h2]}]", "hub lan: no capacity"),
        ("nodes: {h1: {}, h2: {}}\nsegments: [{name: lan, members: [h1, h2], queue: 9}]", "queue is a hub's"),
        ("nodes: {h1: {}, s1: {kind: switch, queue: 9}}\nlinks: [{endpoints: [h1, s1]}]", "queue is a hub's"),
        (
            "nodes: {h1: {}, h2: {}}\n"
            "segments: [{name: lan, kind: hub, capacity: 10Mbit, members: [h1, h2], queue: 0}]",
            "segments.0.queue",
        ),
        # extra interfaces
        ("nodes: {h1: {interfaces: [{name: lo}]}}", "nodes.h1.interfaces.0.name: 'lo' is taken in every node"),
        ("nodes: {h1: {interfaces: [{name: eth0}]}}", "'eth0' is taken in every node"),
        ("nodes: {h1: {interfaces: [{name: h1-eth0}]}}", "the form of the lab's own link interfaces"),
        ("nodes: {h1: {interfaces: [{name: loopback_number1}]}}", "1-15 lower-case letters"),
        ("nodes: {h1: {interfaces: [{name: lo1}, {name: lo1}]}}", "nodes.h1: interfaces: ['lo1'] named twice"),
        ("nodes: {h1: {interfaces: [{name: lo1, kind: veth}]}}", "nodes.h1.interfaces.0.kind"),
        ("nodes: {h1: {interfaces: [{name: lo1, address: 192.0.2.1}]}}", "needs a prefix length"),
        ("nodes: {s1: {kind: switch, interfaces: [{name: lo1}]}}", "routes and interfaces do not apply"),
        (
            "nodes: {h1: {interfaces: [{name: lo1, address: 10.0.1.2/32}]}, h2: {}}\n"
            "segments: [{name: s1, members: [h1, h2], subnet: 10.0.1.0/24}]",
            "node h1: interface lo1: 10.0.1.2 is also h2's (an address given twice)",
        ),
        (
            "nodes: {h1: {interfaces: [{name: lo1, address: 10.0.1.77/32}]}, h2: {}}\n"
            "segments: [{name: s1, members: [h1, h2], subnet: 10.0.1.0/24}]",
            "node h1: interface lo1: 10.0.1.77/32 overlaps the subnet of link h1-s1",
        ),
        (
            "nodes: {h1: {interfaces: [{name: lo1, address: 192.0.2.1/24}]}, h2: {interfaces: [{name: lo1,"
            " address: 192.0.2.9/32}]}}\nlinks: [{endpoints: [h1, h2]}]",
            "node h2: interface lo1: 192.0.2.9/32 overlaps the subnet of h1's lo1",
        ),
    ],
)
def test_bad_topologies_are_refused_naming_the_file_and_field(tmp_path, body, says):
    path = _write(tmp_path, body)
    with pytest.raises(SpecError) as err:
        topofile.load(path)
    assert str(path) in str(err.value) and says in str(err.value), str(err.value)


def _spec(tmp_path: Path, topology: str, extra: str = "") -> Path:
    return _write(
        tmp_path,
        f"""
        name: t
        description: a topology test
        seed: {{reproduces: none}}
        topology: {topology}
        phases:
          - name: p
            tasks: [{{kind: ping, name: p, client: h1, server: h2, interval: 10ms, duration: 1s}}]
        {extra}
        """,
        "spec.yaml",
    )


def test_a_spec_takes_a_topology_inline_by_file_or_by_name(tmp_path):
    _write(tmp_path, "nodes: {h1: {}, h2: {cpus: 0.5}}\nlinks: [{endpoints: [h1, h2], rate: 10Mbit}]", "mine.yaml")
    inline = "{nodes: {h1: {}, h2: {cpus: 0.5}}, links: [{endpoints: [h1, h2], rate: 10Mbit}]}"
    for ref in ("{file: mine.yaml}", inline):
        ex = spec.load(_spec(tmp_path, ref)).points[0].experiment
        t = ex.topology.build()
        assert [lk.rate_bps for lk in t.links] == [10e6] and t.host("h2").cpus == 0.5
        images, cpus, _ = spec.node_settings(t, ex.nodes)
        assert cpus == {"h1": None, "h2": 0.5} and images == {"h1": "protolab/node", "h2": "protolab/node"}
    named = spec.load(_spec(tmp_path, "{kind: triangle}"))
    assert named.points[0].experiment.topology.build().host("r2").forwarding


def test_a_spec_entry_for_a_node_overrides_the_file_and_errors_point_at_the_topology_file(tmp_path):
    _write(tmp_path, "nodes: {h1: {}, h2: {cpus: 0.5}}\nlinks: [{endpoints: [h1, h2]}]", "mine.yaml")
    ex = spec.load(_spec(tmp_path, "{file: mine.yaml}", "nodes: {default: {}, h2: {cpus: 1}}")).points[0].experiment
    assert spec.node_settings(ex.topology.build(), ex.nodes)[1] == {"h1": None, "h2": 1.0}
    bad = _write(tmp_path, "nodes: {h1: {}, h2: {}}\nlinks: [{endpoints: [h1, h3]}]", "bad.yaml")
    with pytest.raises(SpecError, match=f"{bad}: invalid topology\n  links.0.endpoints: no node 'h3'"):
        spec.load(_spec(tmp_path, "{file: bad.yaml}"))
    with pytest.raises(SpecError, match="no link between h1 and h9"):
        spec.load(_spec(tmp_path, "{file: mine.yaml}", "impairments: [{link: [h1, h9], delay: 1ms}]"))
    with pytest.raises(SpecError, match="topology file 'nowhere.yaml' not found"):
        spec.load(_spec(tmp_path, "{file: nowhere.yaml}"))
    with pytest.raises(SpecError, match="only a generator kind takes params"):
        spec.load(_spec(tmp_path, "{file: mine.yaml, params: {hosts: 3}}"))


@pytest.mark.parametrize(
    "v4, v6",
    [
        ("10.0.1.2/24", "fd00:10:0:1::2/80"),
        ("10.0.1.254/24", "fd00:10:0:1::254/80"),
        ("10.0.9.5/30", "fd00:10:0:9:4::5/80"),  # a /30's network octet keeps two /30s apart
        ("10.0.9.1/30", "fd00:10:0:9:0::1/80"),
        ("192.168.3.7/16", "fd00:192:168::3:7/80"),
        ("10.1.2.3/8", "fd00:10::1:2:3/80"),
    ],
)
def test_ipv6_twins_keep_the_ipv4_digits(v4, v6):
    twin = ipaddress.ip_interface(topo.v6_address(v4))
    assert twin == ipaddress.ip_interface(v6)
    assert twin.network == ipaddress.ip_network(topo.v6_network(str(ipaddress.ip_interface(v4).network)))


def test_twins_of_distinct_subnets_are_distinct_and_routes_have_twins():
    t = topofile.load(topofile.find("triangle"))
    nets = {topo.v6_network(ip) for lk in t.links for ip in (lk.ip1, lk.ip2) if ip}
    assert len(nets) == len({ipaddress.ip_interface(ip).network for lk in t.links for ip in (lk.ip1, lk.ip2) if ip})
    assert t.ipv6
    assert sorted(t.routes6(t.host("h1"))) == [("fd00:10:0:2::/80", "fd00:10:0:1::3"),
                                               ("fd00:10:0:3::/80", "fd00:10:0:1::3")]  # fmt: skip
    with pytest.raises(ValueError, match="/8 or longer"):
        topo.v6_network("10.0.0.0/7")


def test_ipv6_is_on_by_default_and_a_spec_or_file_turns_it_off(tmp_path):
    assert spec.load(_spec(tmp_path, "{kind: triangle}")).points[0].experiment.topology.build().ipv6
    off = spec.load(_spec(tmp_path, "{kind: hub, params: {hosts: 2}, ipv6: false}")).points[0].experiment
    assert not off.topology.build().ipv6
    inline = "{nodes: {h1: {}, h2: {}}, links: [{endpoints: [h1, h2]}], ipv6: false}"
    assert not spec.load(_spec(tmp_path, inline)).points[0].experiment.topology.build().ipv6
    path = _write(
        tmp_path,
        """
        name: t
        description: an IPv6 ping on a lab without IPv6
        seed: {reproduces: none}
        topology: {kind: hub, params: {hosts: 2}, ipv6: false}
        phases:
          - name: p
            tasks: [{kind: ping, name: p, client: h1, server: h2, interval: 10ms, duration: 1s, family: ipv6}]
        """,
        "v6.yaml",
    )
    with pytest.raises(SpecError, match="family ipv6, but the topology has ipv6: false"):
        spec.load(path)


def _generator_cases() -> list[tuple[str, dict]]:
    cases = []
    for name, kind in topo.load_all().items():
        layouts = kind.params.model_fields["layout"].annotation.__args__ if "layout" in kind.params.model_fields else ()
        cases += [(name, {"layout": x}) for x in layouts] or [(name, {})]
    return cases


@pytest.mark.parametrize("kind, params", _generator_cases())
def test_every_builtin_generator_passes_the_check_a_file_passes(kind, params):
    t = topo.build(kind, params)  # validates
    assert t.hosts and t.links and t.problems() == []


@pytest.mark.parametrize(
    "tamper, says",
    [
        (lambda t: t.links.append(topo.Link("h1", "x9")), "link h1-x9: no node 'x9' (nodes: h1, h2, s1)"),
        (lambda t: t.hosts.append(topo.Host("h1")), "nodes: ['h1'] named twice (a duplicate name)"),
        (lambda t: t.hosts[0].routes.append(("10.9.0.0/16", "10.0.5.1")),
         "node h1: route to 10.9.0.0/16 via 10.0.5.1: gateway 10.0.5.1 is on none of its subnets (10.0.1.0/24)"),
        (lambda t: setattr(t.links[1], "ip1", t.links[0].ip1),
         "link h2-s1: 10.0.1.1 is also h1's (an address given twice)"),
    ],
)  # fmt: skip
def test_a_tampered_generator_fails_the_same_check_with_the_same_error_shape(monkeypatch, tmp_path, tamper, says):
    kind = topo.load_all().get("hub")
    original = kind.build

    def tampered(p):
        t = original(p)
        tamper(t)
        return t

    monkeypatch.setattr(kind, "build", tampered)
    with pytest.raises(topo.TopologyError) as err:
        topo.build("hub", {})
    assert str(err.value) == f"mininet-topologies/hub.py (generator hub): invalid topology\n  {says}"
    assert isinstance(err.value, SpecError)  # the CLI's spec error (exit 2), like a file's
    # a file with a dangling endpoint: the same shape, `<where>: invalid topology`, the place, the same reason
    bad = _write(tmp_path, "nodes: {h1: {}, h2: {}}\nsegments: [{name: s1, members: [h1, h2]}]\n"
                           "links: [{endpoints: [h1, x9]}]")  # fmt: skip
    with pytest.raises(SpecError) as file_err:
        topofile.load(bad)
    assert str(file_err.value) == f"{bad}: invalid topology\n  links.0.endpoints: no node 'x9' (nodes: h1, h2, s1)"


def test_extra_interfaces_are_made_addressed_and_routed_to(tmp_path):
    path = _write(
        tmp_path,
        """
        nodes:
          h1: {}
          h2: {interfaces: [{name: svc, address: 198.51.100.7/32}]}   # a host: reached from its neighbors
          r1: {kind: router, interfaces: [{name: lo1, address: 192.0.2.1/32}, {name: spare}]}
          r2: {kind: router}
          h3: {interfaces: [{name: lo1, address: 10.0.1.1/32}]}      # the pool's first /24 is then skipped
        segments: [{name: lan, members: [h1, h2, r1]}]
        links: [{endpoints: [r1, r2]}, {endpoints: [r2, h3]}]
        """,
    )
    t = topofile.load(path)
    r1 = t.host("r1")
    assert r1.interfaces == [topo.Interface("lo1", "dummy", "192.0.2.1/32"), topo.Interface("spare", "dummy", None)]
    ips = {(n, i): ip for n, i, ip in topofile.addresses(t)}
    assert ips["h1", "h1-eth0"] == "10.0.2.1/24"  # 10.0.1.0/24 holds h3's lo1
    r1_lan = ips["r1", "r1-eth0"].split("/")[0]
    h2_lan = ips["h2", "h2-eth0"].split("/")[0]
    assert ("192.0.2.1/32", r1_lan) in t.host("h1").routes  # through r1, its neighbor
    assert ("198.51.100.7/32", h2_lan) in t.host("h1").routes  # h2 does not forward, but holds the address
    assert ("192.0.2.1/32", ips["r1", "r1-eth1"].split("/")[0]) in t.host("r2").routes
    assert ("10.0.1.1/32", ips["r2", "r2-eth0"].split("/")[0]) in t.host("r1").routes  # h3's lo1 via r2
    assert ("198.51.100.7/32", ips["r2", "r2-eth1"].split("/")[0]) in t.host("h3").routes  # via r2, r1, then h2
    assert not any(dst == "192.0.2.1/32" for dst, _gw in r1.routes)  # its own
    assert ("fd00:192:0:2:1::/80", topo.v6_address(ips["r1", "r1-eth0"]).split("/")[0]) in t.routes6(t.host("h1"))
    assert t.problems() == []


def test_a_generator_s_extra_interfaces_pass_the_same_check():
    t = topo.build("switched", {"hosts": 2})
    t.hosts[0].interfaces.append(topo.Interface("lo1", address="192.0.2.1/32"))
    assert t.problems() == []
    t.hosts[1].interfaces.append(topo.Interface("lo1", address=t.links[0].ip1))
    t.hosts[1].interfaces.append(topo.Interface("h2-eth0"))
    assert t.problems() == [
        "node h2: interface lo1: 10.0.1.1 is also h1's (an address given twice)",
        "node h2: interface h2-eth0: 'h2-eth0' is the form of the lab's own link interfaces (<node>-eth<N>); "
        "choose another name",
    ]


def test_a_hubs_queue_is_a_stated_parameter_of_files_and_generators(tmp_path):
    path = _write(tmp_path, "nodes: {h1: {}, h2: {}}\nsegments: [{name: lan, kind: hub, capacity: 10Mbit, "
                  "members: [h1, h2], queue: 700}]")  # fmt: skip
    assert [s.queue_frames for s in topofile.load(path).switches] == [700]
    assert [s.queue_frames for s in topo.build("hub", {"hosts": 2}).switches] == [100]  # the stated default
    assert [s.queue_frames for s in topo.build("hub", {"hosts": 2, "hub_queue": 16}).switches] == [16]
    lan = topo.build("converter_lan", {"layout": "baseline", "hub_queue": 700})
    assert [s.queue_frames for s in lan.switches if s.mode == "hub"] == [700]
