"""Topologies as pure data, and the registry of topology kinds.

A topology module in mininet-topologies/ declares a parameter model (pydantic) and a `build(params)`
function that returns a `Topology`: plain dataclasses, no Mininet, no root, so specs validate and plans
print anywhere. `protolab.lab` turns a `Topology` into a running Mininet network of containers.

Naming scheme (as Mininet's): hosts h1..hN, routers r1.., switches s1.., interfaces `<node>-eth<N>`
numbered per node in link order. In the root namespace every bridge, veth and IFB the tool creates is
prefixed with `plab-` (see `protolab.naming`), which is how `protolab clean` finds them.
"""

from __future__ import annotations

import contextlib
import importlib.util
import ipaddress
import re
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .errors import SpecError
from .model.impairment import LinkImpairment, percents_as_written
from .model.topology import HUB_QUEUE_DOC, NIC_FILTER_DOC, NODE_NAME_RE, NicFilterMode, interface_name_problem
from .model.types import image_problem, name_problem, plain_address, plain_interface, plain_network
from .registry import Registry
from .units import BitsPerSecond

REPO = Path(__file__).resolve().parent.parent
TOPOLOGY_DIR = REPO / "mininet-topologies"


@dataclass
class Interface:
    """An extra interface made inside a container at deploy, beside one per link (e.g. a loopback address)."""

    name: str
    kind: Literal["dummy"] = "dummy"  # holds addresses, sends nothing
    address: str | None = None  # 'a.b.c.d/len'; with ipv6 also its twin (v6_address)


@dataclass
class Host:
    """A container node. `role` is a label for metrics (host, router, converter, ...)."""

    name: str
    role: str = "host"
    image: str | None = None  # None: the experiment's default node image
    cpus: float | None = None  # CPU budget in cores; None: the experiment's (or none)
    forwarding: bool = False  # routers forward IPv4 (and multicast, with smcroute)
    routes: list[tuple[str, str]] = field(default_factory=list)  # (destination prefix, gateway)
    interfaces: list[Interface] = field(default_factory=list)  # extra ones, beyond one per link
    nic_filter: str = "perfect"  # its NICs' receive address filter on bridges (NIC_FILTER_DOC)
    host: str | None = None  # the testbed host it must run on (protolab.testbed.placement); None: placed


@dataclass
class VxlanEnd:
    """One end of a link stitched between two testbed hosts (protolab.testbed.placement): a VXLAN device on this host's
    bridge that carries the link's frames to the other host's."""

    vni: int
    local: str  # this host's underlay address
    remote: str  # the other end's
    port: int  # UDP destination port
    mtu: int  # the link's MTU: the underlay's less the encapsulation


@dataclass
class Switch:
    """A Linux bridge in the root namespace.

    mode 'switch': a learning bridge; rates are per port and direction (set on the links).
    mode 'hub': no learning (every frame flooded to every port) and one shaper for all frames entering
    the bridge, so a single capacity is shared by all ports and both directions.
    """

    name: str
    mode: Literal["switch", "hub"] = "switch"
    capacity_bps: float | None = None  # hub only: the shared medium's capacity
    multicast_snooping: bool = False  # IGMP snooping; when on, the bridge is also the querier
    queue_frames: int = 100  # hub only: frames waiting for the medium (HUB_QUEUE_DOC)
    host: str | None = None  # the testbed host it must run on, with its members (protolab.testbed.placement)
    vxlan: VxlanEnd | None = None  # a stitch bridge: one node's half of a link to another host (placement.split)


@dataclass
class Link:
    """A veth pair between two nodes; `rate_bps` shapes each direction (HTB on both ends)."""

    node1: str
    node2: str
    ip1: str | None = None  # 'a.b.c.d/len' for the interface on node1 (hosts only)
    ip2: str | None = None
    rate_bps: float | None = None
    segment: str = "lan"  # a name for reports: which network segment this link belongs to


@dataclass
class Topology:
    kind: str
    hosts: list[Host] = field(default_factory=list)
    switches: list[Switch] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)
    impairments: list[LinkImpairment] = field(default_factory=list)  # from a topology file, per link direction
    source: str | None = None  # the file it was read from (None: a generator or inline)
    ipv6: bool = True  # every addressed interface also gets its IPv4 address's IPv6 twin (v6_address)
    receive_cpu: str = "node"  # whose CPU kernel receive work is charged to (protolab.lab.rxcpu.MODES)

    def to_json(self) -> dict[str, Any]:
        """Everything it holds, resolved (addresses, routes, impairments): what a testbed host's lab keeper is
        given as its part of a lab over several hosts (from_json reads it back)."""
        d = asdict(self)
        d["impairments"] = [i.model_dump(mode="json") for i in self.impairments]  # with units, as a spec writes them
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Topology:
        d = dict(d)
        hosts = [Host(**{**h, "routes": [tuple(r) for r in h.get("routes", [])],
                         "interfaces": [Interface(**i) for i in h.get("interfaces", [])]})
                 for h in d.pop("hosts", [])]  # fmt: skip
        switches = [Switch(**{**s, "vxlan": VxlanEnd(**s["vxlan"]) if s.get("vxlan") else None})
                    for s in d.pop("switches", [])]  # fmt: skip
        links = [Link(**lk) for lk in d.pop("links", [])]
        imps = [LinkImpairment.model_validate(percents_as_written(i)) for i in d.pop("impairments", [])]
        return cls(hosts=hosts, switches=switches, links=links, impairments=imps, **d)

    def linked(self) -> set[tuple[str, str]]:
        """Every (a, b) that a link joins, both ways: "is there a link between a and b" for spec checks and
        drawings (problems() finds a link given twice or to no node on its own)."""
        return {(lk.node1, lk.node2) for lk in self.links} | {(lk.node2, lk.node1) for lk in self.links}

    def host(self, name: str) -> Host:
        for h in self.hosts:
            if h.name == name:
                return h
        raise KeyError(name)

    def node_names(self) -> list[str]:
        return [h.name for h in self.hosts] + [s.name for s in self.switches]

    def interfaces(self) -> dict[str, list[str]]:
        """Interface names per node, in Mininet's order (`<node>-eth<N>`, N counted per node)."""
        out: dict[str, list[str]] = {n: [] for n in self.node_names()}
        for link in self.links:
            for n in (link.node1, link.node2):
                out[n].append(f"{n}-eth{len(out[n])}")
        return out

    def addresses(self) -> dict[str, str]:
        """Every IPv4 address of a container (no prefix) -> the same with its prefix, e.g. '10.0.1.1/24'."""
        return {str(ipaddress.ip_interface(ip).ip): ip for lk in self.links for ip in (lk.ip1, lk.ip2) if ip}

    def routes6(self, host: Host) -> list[tuple[str, str]]:
        """The IPv6 twins of a host's routes (those whose gateway is a lab address; others have no twin)."""
        known = self.addresses()
        return [(v6_network(dst), str(ipaddress.ip_interface(v6_address(known[gw])).ip))
                for dst, gw in host.routes if gw in known]  # fmt: skip

    def validate(self, where: str | None = None) -> None:
        """The one check every topology passes before it is built: a file's after resolution, a generator's output,
        a node filter's result. Raises TopologyError, "<where>: invalid topology" and one line per problem."""
        if problems := self.problems():
            where = where or f"topology {self.kind}"
            raise TopologyError(f"{where}: invalid topology\n  " + "\n  ".join(problems))

    def problems(self) -> list[str]:
        """What would stop this topology from being built as given (empty: nothing)."""
        out: list[str] = self.type_problems()
        if out:  # a value of the wrong type is reported alone: the checks below would only echo it
            return out
        names = self.node_names()
        known = set(names)
        if dup := sorted({n for n in names if names.count(n) > 1}):
            out.append(f"nodes: {dup} named twice (a duplicate name)")
        bridges = {s.name: s for s in self.switches}
        containers = {h.name for h in self.hosts}
        for s in self.switches:
            if s.mode == "hub" and not s.capacity_bps:
                out.append(f"hub {s.name}: no capacity (the shared medium's rate, e.g. 10Mbit)")
        pairs: set[frozenset[str]] = set()
        hub_of: dict[str, str] = {}
        addrs: dict[str, str] = {}  # IPv4 address -> where it is
        for lk in self.links:
            what = f"link {lk.node1}-{lk.node2}"
            if missing := [n for n in (lk.node1, lk.node2) if n not in known]:
                out += [f"{what}: no node {n!r} (nodes: {', '.join(sorted(known))})" for n in missing]
                continue
            if lk.node1 == lk.node2:
                out.append(f"{what}: a link joins two different nodes")
            key = frozenset((lk.node1, lk.node2))
            if key in pairs:
                out.append(f"{what}: the two nodes are joined twice (one link per pair)")
            pairs.add(key)
            ends = [bridges.get(lk.node1), bridges.get(lk.node2)]
            if all(ends) and "hub" in (ends[0].mode, ends[1].mode):  # type: ignore[union-attr]
                out.append(f"{what}: joins a hub to a bridge; join switches only")
            for n, other, ip in ((lk.node1, lk.node2, lk.ip1), (lk.node2, lk.node1, lk.ip2)):
                if ip is not None and n in bridges:
                    out.append(f"{what}: {n} is a {bridges[n].mode} and has no address ({ip})")
                    continue
                hub = bridges.get(other)
                if n in containers and hub is not None and hub.mode == "hub":
                    if n in hub_of and hub_of[n] != other:
                        out.append(f"{what}: {n} is already on hub {hub_of[n]}; a node is on one hub")
                    hub_of.setdefault(n, other)
                if ip is None:
                    continue
                try:
                    iface = ipaddress.ip_interface(ip)
                except ValueError:
                    out.append(f"{what}: {ip!r} is not an address with a prefix length, e.g. 10.0.1.1/24")
                    continue
                if "/" not in ip or iface.version != 4:
                    out.append(f"{what}: {ip!r}: give an IPv4 address with its prefix length, e.g. 10.0.1.1/24")
                elif str(iface.ip) in addrs:
                    out.append(f"{what}: {iface.ip} is also {addrs[str(iface.ip)]}'s (an address given twice)")
                addrs.setdefault(str(iface.ip), n)
        out += self._interface_problems(addrs)
        out += self._route_problems(addrs)
        for imp in self.impairments:
            if frozenset(imp.link) not in pairs:
                out.append(f"impairment on {imp.link[0]}-{imp.link[1]}: no link between {imp.link[0]} and "
                           f"{imp.link[1]}")  # fmt: skip
        return out

    def type_problems(self) -> list[str]:
        """Every value that later names something on the machine or reaches a command, checked by its type (the
        topology file's model checks them too; a generator's output and a topology read back from JSON are checked
        here): node names, roles, images, placements, segment names, addresses, routes."""
        out: list[str] = []

        def check(what: str, why: str | None) -> None:
            if why:
                out.append(f"{what}: {why}")

        def address(v: str, fn: Any) -> str | None:
            try:
                fn(v)
            except (ValueError, TypeError) as exc:
                return str(exc)
            return None

        for n in self.node_names():
            if not isinstance(n, str) or not re.fullmatch(NODE_NAME_RE, n):
                out.append(f"node {n!r}: a node name is lower-case letters, digits and _, starting with a letter")
        for h in self.hosts:
            check(f"node {h.name}: role", name_problem(h.role))
            check(f"node {h.name}: host", h.host and name_problem(h.host))
            check(f"node {h.name}: image", h.image and image_problem(h.image))
            for x in h.interfaces:
                check(f"node {h.name}: interface {x.name!r}: address", x.address and address(x.address, _plain_cidr))
            for dst, gw in h.routes:
                check(f"node {h.name}: route to {dst!r}", address(dst, plain_network))
                check(f"node {h.name}: route to {dst!r} via {gw!r}", address(gw, plain_address))
        for s in self.switches:
            check(f"node {s.name}: host", s.host and name_problem(s.host))
        for lk in self.links:
            check(f"link {lk.node1!r}-{lk.node2!r}: segment", name_problem(lk.segment))
            for ip in (lk.ip1, lk.ip2):
                check(f"link {lk.node1}-{lk.node2}: address", ip and address(ip, _plain_cidr))
        return out

    def connected(self, host: str) -> list[ipaddress.IPv4Interface | ipaddress.IPv6Interface]:
        """The addresses (with their subnets) of a container's interfaces."""
        out = []
        for lk in self.links:
            for n, ip in ((lk.node1, lk.ip1), (lk.node2, lk.ip2)):
                if n == host and ip is not None:
                    with contextlib.suppress(ValueError):
                        out.append(ipaddress.ip_interface(ip))
        return out

    def unreachable_route(self, host: str, gw: str, addrs: dict[str, str] | None = None) -> str | None:
        """Why a route of `host` through gateway `gw` cannot be configured (None: it can): the kernel takes a
        gateway only on a subnet the node is on, and on a lab subnet only a node's address answers."""
        if addrs is None:
            addrs = {str(ipaddress.ip_interface(ip).ip): n for lk in self.links
                     for n, ip in ((lk.node1, lk.ip1), (lk.node2, lk.ip2)) if ip}  # fmt: skip
        try:
            addr = ipaddress.ip_address(gw)
        except ValueError:
            return f"{gw!r} is not an address"
        mine = self.connected(host)
        if not any(addr.version == i.version and addr in i.network for i in mine):
            nets = ", ".join(sorted({str(i.network) for i in mine})) or "none: it has no addressed interface"
            return f"gateway {gw} is on none of its subnets ({nets})"
        lab_nets = {ipaddress.ip_interface(ip).network for lk in self.links for ip in (lk.ip1, lk.ip2) if ip}
        if any(addr in net for net in lab_nets) and gw not in addrs:
            return f"gateway {gw} is no node's address"
        if addrs.get(gw) == host:
            return f"gateway {gw} is {host}'s own address"
        return None

    def _interface_problems(self, addrs: dict[str, str]) -> list[str]:
        """Extra interfaces: names no link interface has, addresses no other interface has, subnets apart."""
        out = []
        nets: dict[Any, str] = {}  # subnet -> whose
        for lk in self.links:
            for ip in (lk.ip1, lk.ip2):
                if ip is not None:
                    with contextlib.suppress(ValueError):  # reported with the link
                        nets.setdefault(ipaddress.ip_interface(ip).network, f"link {lk.node1}-{lk.node2}")
        generated: dict[str, list[str]] = {}  # as interfaces(), which needs every link's nodes to exist
        for lk in self.links:
            for n in (lk.node1, lk.node2):
                generated.setdefault(n, []).append(f"{n}-eth{len(generated.get(n, []))}")
        for h in self.hosts:
            names = [x.name for x in h.interfaces]
            for x in h.interfaces:
                what = f"node {h.name}: interface {x.name}"
                if why := interface_name_problem(x.name):
                    out.append(f"{what}: {why}")
                elif x.name in generated.get(h.name, []) or names.count(x.name) > 1:
                    out.append(f"{what}: the node has another interface of that name")
                if x.kind != "dummy":
                    out.append(f"{what}: kind {x.kind!r}; an extra interface is a dummy")
                if x.address is None:
                    continue
                try:
                    iface = ipaddress.ip_interface(x.address)
                except ValueError:
                    out.append(f"{what}: {x.address!r} is not an address with a prefix length, e.g. 192.0.2.1/32")
                    continue
                if "/" not in x.address or iface.version != 4:
                    out.append(f"{what}: {x.address!r}: give an IPv4 address with its prefix length, e.g. 192.0.2.1/32")
                elif str(iface.ip) in addrs:
                    out.append(f"{what}: {iface.ip} is also {addrs[str(iface.ip)]}'s (an address given twice)")
                elif clash := next((w for n, w in nets.items() if n.overlaps(iface.network)), None):
                    out.append(f"{what}: {iface.network} overlaps the subnet of {clash}")
                addrs.setdefault(str(iface.ip), h.name)
                nets.setdefault(iface.network, f"{h.name}'s {x.name}")
        return out

    def _route_problems(self, addrs: dict[str, str]) -> list[str]:
        out = []
        for h in self.hosts:
            for dst, gw in h.routes:
                try:
                    ipaddress.ip_network(dst)
                except ValueError as exc:
                    out.append(f"node {h.name}: route to {dst!r}: {exc}")
                    continue
                if why := self.unreachable_route(h.name, gw, addrs):
                    out.append(f"node {h.name}: route to {dst} via {gw}: {why}")
        return out


def _plain_cidr(v: str) -> None:
    """An IPv4 address with its prefix length and nothing else (ValueError: why not)."""
    if "/" not in v or ipaddress.ip_interface(plain_interface(v)).version != 4:
        raise ValueError(f"{v!r}: give an IPv4 address with its prefix length, e.g. 10.0.1.1/24")


class TopologyError(SpecError, ValueError):
    """A topology that cannot be built (a SpecError for the CLI, a ValueError inside spec validation)."""


V6_PREFIX = 0xFD00  # ULA: fd00::/8, global id 0 -- a lab's addresses never leave the machine
V6_PREFIXLEN = 80


def _group(octet: int) -> int:
    """An IPv4 octet written as an IPv6 group with the same digits: 10 -> 0x10, 254 -> 0x254."""
    return int(str(octet), 16)


def v6_network(prefix4: str) -> str:
    """The IPv6 twin of an IPv4 subnet: 10.0.1.0/24 -> fd00:10:0:1::/80 (the network's octets, digit for digit)."""
    net = ipaddress.ip_network(prefix4, strict=False)
    if net.version != 4 or net.prefixlen < 8:
        raise ValueError(f"{prefix4}: an IPv6 twin is derived from an IPv4 prefix of /8 or longer")
    value = V6_PREFIX << 112
    for i, octet in enumerate(net.network_address.packed):
        value |= _group(octet) << (96 - 16 * i)
    return f"{ipaddress.IPv6Address(value)}/{V6_PREFIXLEN}"


def v6_address(cidr4: str) -> str:
    """The IPv6 twin of an IPv4 interface address: 10.0.1.2/24 -> fd00:10:0:1::2/80, 10.0.9.5/30 ->
    fd00:10:0:9:4::5/80; its host octets (those past the prefix's whole octets) are the low groups."""
    iface = ipaddress.ip_interface(cidr4)
    net = ipaddress.IPv6Network(v6_network(str(iface.network)))
    host = iface.ip.packed[iface.network.prefixlen // 8 :]
    value = int(net.network_address)
    for i, octet in enumerate(reversed(host)):
        value |= _group(octet) << (16 * i)
    return f"{ipaddress.IPv6Address(value)}/{V6_PREFIXLEN}"


class TopologyParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    nic_filter: NicFilterMode = Field("perfect", description="every node's: " + NIC_FILTER_DOC)


@dataclass
class TopologyKind:
    name: str
    params: type[TopologyParams]
    build: Callable[[TopologyParams], Topology]
    doc: str
    source: Path


TOPOLOGIES: Registry[TopologyKind] = Registry("topology")


def register(name: str, params: type[TopologyParams], doc: str = "") -> Callable:
    """Decorator for a topology module's build function."""

    def deco(fn: Callable[[TopologyParams], Topology]) -> Callable[[TopologyParams], Topology]:
        source = Path(sys.modules[fn.__module__].__file__ or "?")
        TOPOLOGIES.register(name, TopologyKind(name, params, fn, doc or (fn.__doc__ or "").strip(), source))
        return fn

    return deco


_loaded = False


def load_all(directory: Path = TOPOLOGY_DIR) -> Registry[TopologyKind]:
    """Import every topology module in mininet-topologies/ (a folder of files, not a package)."""
    global _loaded
    if _loaded:
        return TOPOLOGIES
    for path in sorted(directory.glob("*.py")):
        if path.name.startswith("_"):
            continue
        modname = f"protolab_topologies.{path.stem}"
        spec = importlib.util.spec_from_file_location(modname, path)
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[modname] = module
        spec.loader.exec_module(module)
    _loaded = True
    return TOPOLOGIES


def build(kind: str, params: dict) -> Topology:
    """Validate params with the kind's model and build the topology."""
    k = load_all().get(kind)
    p = k.params.model_validate(params)
    topo = k.build(p)
    for h in topo.hosts:
        h.nic_filter = p.nic_filter
    rel = k.source.relative_to(REPO) if k.source.is_relative_to(REPO) else k.source
    topo.validate(f"{rel} (generator {kind})")  # the same check as a topology file's
    return topo


HUB_QUEUE = Field(100, ge=1, le=100000, description=HUB_QUEUE_DOC)


class LanParams(TopologyParams):
    """Parameters shared by the LAN topologies."""

    hosts: int = Field(2, ge=2, le=64, description="number of hosts h1..hN")
    rate: BitsPerSecond = Field(100e6, description="link rate, e.g. '100Mbit'")
    multicast: Literal["off", "snooping"] = Field(
        "off", description="bridge IGMP snooping ('snooping' also makes the bridge the querier) or flood"
    )
    wan_router: bool = Field(False, description="add r1 (IP forwarding, multicast-capable) and a WAN site w1")
    wan_rate: BitsPerSecond = Field(1.544e6, description="rate of the r1-w1 WAN link, e.g. '1544kbit'")
    hub_queue: int = HUB_QUEUE


def lan_ip(subnet: int, host: int) -> str:
    return f"10.0.{subnet}.{host}/24"


def add_wan_router(t: Topology, lan_switch: str, params: LanParams) -> None:
    """r1 joins the LAN (10.0.1.254) and reaches the WAN site w1 (10.0.100.0/24) over one shaped link."""
    t.hosts.append(Host("r1", role="router", forwarding=True))
    t.hosts.append(Host("w1", role="wan", routes=[("10.0.1.0/24", "10.0.100.1")]))
    t.links.append(Link(lan_switch, "r1", ip2=lan_ip(1, 254), rate_bps=params.rate))
    t.links.append(Link("r1", "w1", ip1="10.0.100.1/24", ip2="10.0.100.2/24", rate_bps=params.wan_rate, segment="wan"))
    for h in t.hosts:
        if h.role == "host":
            h.routes.append(("10.0.100.0/24", "10.0.1.254"))
