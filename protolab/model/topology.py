"""A topology as data: the YAML a user writes (`mininet-topologies/*.yaml`, their own file, or inline in a spec).

    name: triangle
    nodes:
      h1: {}                               # kind host (the default)
      r1: {kind: router}
      h2: {image: protolab/node, cpus: 0.5}
      r2: {kind: router, interfaces: [{name: lo1, address: 192.0.2.1/32}]}   # extra interfaces
    segments:                              # a hub or switch and its members: one subnet
      - {name: lan, kind: hub, members: [h1, r1], capacity: 10Mbit}
    links:                                 # point to point: one subnet each
      - endpoints: [r1, h2]
        rate: 1544kbit
        impairments: {forward: {delay: 135ms}, reverse: {delay: 135ms, loss: 1%}}

Addresses not given are assigned (each segment and each point-to-point link a /24 of 10.0.0.0/8, hosts numbered
in order); with `ipv6: true` (the default) every address also has an IPv6 twin with the same digits
(10.0.1.2/24 -> fd00:10:0:1::2/80, protolab.topo.v6_address) and every route its twin. Routes between subnets
are added along the shortest path through routers. A node's extra interfaces (`interfaces`, dummy interfaces made
inside the node, e.g. a router's loopback address) are subnets of their own that every other node is routed to
through the first router on the way, or the node itself when it is a neighbor. protolab.topofile turns
this model into the same `Topology` the built-in generators make, so both are validated and built alike.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from ..units import BitsPerSecond
from .base import Strict
from .impairment import Impairment
from .types import ImageRef, IpAddress, IpNetwork, SafeName, plain_interface, plain_network

NicFilterMode = Literal["perfect", "hash64", "promiscuous"]
NIC_FILTER_DOC = (
    "the receive address filter of the node's NICs on bridges, modelled at the bridge port toward it (frames it "
    "drops still crossed the medium, and cost the node nothing): perfect (today's NICs: unicast to its own MAC, the "
    "multicast groups it joined, broadcast), hash64 (the thesis's era: unicast as perfect; multicast by the 64-bin "
    "CRC hash of the LANCE/PCnet controllers, so groups sharing a joined group's bin pass and the kernel filters "
    "them), promiscuous (every frame reaches the node's kernel)"
)
HUB_QUEUE_DOC = (
    "hub: frames that may wait for the shared medium (one FIFO for all ports; a frame arriving to a full queue is "
    "dropped). Default 100: a 10BASE-T hub has no buffer of its own; frames wait in the senders' device queues, and "
    "Linux of the thesis's era gave every Ethernet device 100 frames (ether_setup: tx_queue_len 100; today 1000)"
)

NODE_NAME_RE = r"^[a-z][a-z0-9_]*$"
MAX_NODES = 512


def _cidr(v: str | None) -> str | None:
    if v is None:
        return v
    iface = ipaddress.ip_interface(plain_interface(v))
    if "/" not in v:
        raise ValueError(f"{v!r} needs a prefix length, e.g. {v}/24")
    if iface.version != 4:
        raise ValueError(f"{v!r}: give the IPv4 address; its IPv6 twin is derived (10.0.1.1/24 -> fd00:10:0:1::1/80)")
    if iface.ip == iface.network.network_address and iface.network.prefixlen < iface.max_prefixlen - 1:
        raise ValueError(f"{v!r} is its network's own address; give a host address")
    return v


class Route(Strict):
    to: IpNetwork = Field(..., description="destination prefix, e.g. 10.0.9.0/24")
    via: IpAddress = Field(..., description="gateway address on a subnet the node is on")


IFNAME_RE = re.compile(r"^[a-z][a-z0-9_]{0,14}$")  # within IFNAMSIZ (15)
RESERVED_IFNAME_RE = re.compile(r"^(lo|eth\d+)$")  # the container's loopback and its management interface (eth0)


def interface_name_problem(name: str) -> str | None:
    """Why `name` cannot be an extra interface's (None: it can)."""
    if re.fullmatch(r"[a-z0-9_]+-eth\d+", name):
        return f"{name!r} is the form of the lab's own link interfaces (<node>-eth<N>); choose another name"
    if not IFNAME_RE.fullmatch(name):
        return f"{name!r}: an interface name is 1-15 lower-case letters, digits and _, starting with a letter"
    if RESERVED_IFNAME_RE.fullmatch(name):
        return f"{name!r} is taken in every node (lo: its loopback, eth0: its management interface)"
    return None


class InterfaceDef(Strict):
    """An extra interface made inside a node at deploy (beyond one per link), e.g. a router's loopback address."""

    name: str = Field(..., description="its name inside the node, e.g. lo1 (not lo, ethN or <node>-ethN)")
    kind: Literal["dummy"] = Field(
        "dummy", description="dummy: holds addresses and sends nothing (an IFB stands in where the kernel has no dummy)"
    )
    address: str | None = Field(
        None, description="IPv4 address with its prefix, e.g. 192.0.2.1/32 (with ipv6: true, also its IPv6 twin)"
    )

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if why := interface_name_problem(v):
            raise ValueError(why)
        return v

    @field_validator("address")
    @classmethod
    def _address(cls, v: str | None) -> str | None:
        return _cidr(v)


class NodeDef(Strict):
    kind: Literal["host", "router", "switch", "hub"] = Field("host", description="host, router, switch or hub")
    image: ImageRef | None = Field(None, description="container image (hosts, routers); null: the experiment's default")
    cpus: float | None = Field(None, gt=0, description="CPU budget in cores (hosts, routers); null: none")
    role: SafeName | None = Field(None, description="label for metrics (default: the kind)")
    routes: list[Route] = Field(default_factory=list, description="static routes beyond the automatic ones")
    capacity: BitsPerSecond | None = Field(None, description="hub: the shared medium's capacity")
    nic_filter: NicFilterMode | None = Field(None, description="hosts, routers: " + NIC_FILTER_DOC + "; null: perfect")
    queue: int | None = Field(None, ge=1, le=100000, description=HUB_QUEUE_DOC + "; null: 100")
    multicast: Literal["off", "snooping"] = Field("off", description="switch: IGMP snooping (and querier)")
    interfaces: list[InterfaceDef] = Field(
        default_factory=list,
        description="extra interfaces made inside the node, e.g. [{name: lo1, address: 192.0.2.1/32}]",
    )
    host: SafeName | None = Field(
        None,
        description="the testbed host (inventory name) it runs on; a hub or switch takes its members along; "
        "null: placed by the run (protolab.testbed.placement)",
    )

    @model_validator(mode="after")
    def _fits_kind(self) -> NodeDef:
        bridge = self.kind in ("switch", "hub")
        if bridge and (self.image or self.cpus or self.routes or self.interfaces):
            raise ValueError(
                f"a {self.kind} is a bridge, not a container: image, cpus, routes and interfaces do not apply"
            )
        names = [i.name for i in self.interfaces]
        if dup := sorted({n for n in names if names.count(n) > 1}):
            raise ValueError(f"interfaces: {dup} named twice")
        if self.capacity is not None and self.kind != "hub":
            raise ValueError("capacity is a hub's shared medium; a link's or a switch port's speed is a link rate")
        if self.multicast != "off" and self.kind != "switch":
            raise ValueError("multicast snooping is a switch's; a hub floods by definition")
        if self.queue is not None and self.kind != "hub":
            raise ValueError("queue is a hub's shared medium's; a switch port's queue is its link's `limit`")
        if bridge and self.nic_filter is not None:
            raise ValueError(f"nic_filter is a host's or router's NIC; a {self.kind} is a bridge")
        return self


class Directions(Strict):
    """Per-direction impairments of a link: forward is endpoints[0] -> endpoints[1]."""

    both: Impairment | None = None
    forward: Impairment | None = None
    reverse: Impairment | None = None

    @model_validator(mode="after")
    def _not_both_ways(self) -> Directions:
        if self.both is not None and (self.forward is not None or self.reverse is not None):
            raise ValueError("give `both`, or `forward`/`reverse`, not both")
        return self


class LinkDef(Strict):
    endpoints: tuple[str, str] = Field(..., description="the two nodes, e.g. [h1, r1]")
    rate: BitsPerSecond | None = Field(None, description="line rate of each direction, e.g. '10Mbit'")
    addresses: tuple[str | None, str | None] | None = Field(
        None, description="the two ends' addresses with prefix, e.g. [10.0.9.1/24, 10.0.9.2/24]; null: assigned"
    )
    impairments: Directions | None = Field(None, description="{both|forward|reverse: impairment}")
    segment: SafeName | None = Field(None, description="a name for reports (default: the two endpoints)")

    @field_validator("addresses")
    @classmethod
    def _addresses(cls, v: tuple[str | None, str | None] | None) -> tuple[str | None, str | None] | None:
        return None if v is None else (_cidr(v[0]), _cidr(v[1]))

    @model_validator(mode="after")
    def _two_ends(self) -> LinkDef:
        if self.endpoints[0] == self.endpoints[1]:
            raise ValueError(f"endpoints: a link joins two different nodes, not {self.endpoints[0]} to itself")
        return self


class SegmentDef(Strict):
    name: str = Field(..., pattern=NODE_NAME_RE, description="the segment's name (and its bridge's, by default)")
    kind: Literal["switch", "hub"] = Field("switch", description="switch: per-port rates; hub: one shared medium")
    bridge: str | None = Field(None, pattern=NODE_NAME_RE, description="the bridge node's name (default: name)")
    members: list[str] = Field(..., min_length=1, description="the nodes on the segment")
    capacity: BitsPerSecond | None = Field(None, description="hub: shared capacity; switch: every port's rate")
    queue: int | None = Field(None, ge=1, le=100000, description=HUB_QUEUE_DOC + "; null: 100")
    subnet: str | None = Field(None, description="IPv4 prefix, e.g. 10.0.1.0/24; null: assigned")
    multicast: Literal["off", "snooping"] = Field("off", description="switch: IGMP snooping (and querier)")

    @field_validator("subnet")
    @classmethod
    def _subnet(cls, v: str | None) -> str | None:
        if v is not None:
            net = ipaddress.ip_network(plain_network(v))
            if net.version != 4 or net.prefixlen > 30:
                raise ValueError(f"{v!r}: an IPv4 prefix of /30 or wider")
        return v

    @model_validator(mode="after")
    def _members(self) -> SegmentDef:
        dup = sorted({m for m in self.members if self.members.count(m) > 1})
        if dup:
            raise ValueError(f"members: {dup} listed twice")
        if self.multicast != "off" and self.kind == "hub":
            raise ValueError("multicast snooping is a switch's; a hub floods by definition")
        if self.queue is not None and self.kind != "hub":
            raise ValueError("queue is a hub's shared medium's; a switch port's queue is its link's `limit`")
        return self

    @property
    def bridge_name(self) -> str:
        return self.bridge or self.name


class TopologyDef(Strict):
    """A network: nodes, point-to-point links and segments (a hub or switch with its members)."""

    name: str = Field("custom", pattern=NODE_NAME_RE, max_length=64, description="the topology's name in reports")
    description: str = ""
    nodes: dict[str, NodeDef] = Field(..., min_length=1, description="name -> node; names as h1, r1, s1")
    links: list[LinkDef] = Field(default_factory=list)
    segments: list[SegmentDef] = Field(default_factory=list)
    ipv6: bool = Field(True, description="every interface also gets the IPv6 twin of its IPv4 address (fd00::/8)")

    @field_validator("nodes")
    @classmethod
    def _names(cls, v: dict[str, NodeDef]) -> dict[str, NodeDef]:
        if len(v) > MAX_NODES:
            raise ValueError(f"{len(v)} nodes: more than the limit of {MAX_NODES}")
        for name in v:
            if not re.fullmatch(NODE_NAME_RE, name):
                raise ValueError(f"{name!r}: a node name is lower-case letters, digits and _, starting with a letter")
        return v
