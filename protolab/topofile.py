"""Topology files: YAML (protolab.model.topology) -> a `Topology`, the model the built-in generators make.

parse (YAML, duplicate keys refused) -> validate the fields (pydantic) -> resolve (names, segments, addresses,
routes) -> the `Topology` that `protolab.lab` builds. Every error names the file, the field and the reason, and
comes before anything is created.

Resolution:
- A segment is a bridge (its `bridge` name, else its own) with a link to every member; a hub's capacity is
  shared by all its ports, a switch's `capacity` is every port's rate.
- Bridges joined by links form one layer-2 domain and one subnet; a point-to-point link between two
  containers is a subnet of its own. Subnets not given are the next free /24 of 10.0.0.0/8 from 10.0.1.0;
  members are numbered .1, .2, ... in the order they join, skipping addresses given explicitly.
- Routes: every container gets a route to every subnet it is not on, through the first router on a shortest
  path (routers forward; hosts do not), unless its own `routes` already cover that subnet. A node's extra
  interface (`interfaces`) is a subnet of its own, reached through that node when it is a neighbor.
"""

from __future__ import annotations

import ipaddress
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from . import naming
from .errors import SpecError
from .model.impairment import LinkImpairment
from .model.topology import TopologyDef
from .topo import TOPOLOGY_DIR, Host, Interface, Link, Switch, Topology

AUTO_POOL = ipaddress.ip_network("10.0.0.0/8")
MAX_HOST_NAME = 10  # '<node>-eth<N>' within IFNAMSIZ (15)


class _UniqueKeys(yaml.SafeLoader):
    """A YAML loader that refuses a mapping with a key given twice (PyYAML keeps the last silently)."""


def _mapping(loader: _UniqueKeys, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} (a name given twice)", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node, deep)


_UniqueKeys.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)
UniqueKeyLoader = _UniqueKeys  # for experiment specs too (protolab.spec.load)


def read_yaml(path: Path) -> Any:
    try:
        return yaml.load(path.read_text(), Loader=_UniqueKeys)  # noqa: S506 (a SafeLoader subclass)
    except yaml.YAMLError as exc:
        raise SpecError(f"{path}: not valid YAML: {exc}") from None
    except OSError as exc:
        raise SpecError(f"{path}: cannot read: {exc.strerror}") from None


def find(name: str, spec_dir: Path | None = None) -> Path:
    """A topology file by path (absolute, or relative to the spec's folder or the working folder) or by name
    in mininet-topologies/ (`triangle` -> mininet-topologies/triangle.yaml)."""
    p = Path(name)
    tries = [p] if p.is_absolute() else [*(d / p for d in (spec_dir, Path.cwd()) if d is not None)]
    if not p.is_absolute():
        tries += [TOPOLOGY_DIR / p, TOPOLOGY_DIR / f"{name}.yaml"]
    tries = list(dict.fromkeys(tries))
    for t in tries:
        if t.is_file():
            return t
    raise SpecError(f"topology file {name!r} not found (looked in: {', '.join(str(t) for t in tries)})")


def builtin_files() -> dict[str, Path]:
    """The topology files shipped in mininet-topologies/, by name."""
    return {p.stem: p for p in sorted(TOPOLOGY_DIR.glob("*.yaml"))}


def parse(raw: Any, where: str) -> TopologyDef:
    """Validate a topology's fields; errors name `where` (a file, or `topology` inline) and the field."""
    if not isinstance(raw, dict):
        raise SpecError(f"{where}: a topology is a mapping with nodes, links and segments")
    try:
        return TopologyDef.model_validate(raw)
    except ValidationError as exc:
        lines = [f"{'.'.join(str(x) for x in e['loc']) or '(top)'}: {e['msg'].removeprefix('Value error, ')}"
                 for e in exc.errors()]  # fmt: skip
        raise SpecError(f"{where}: invalid topology\n  " + "\n  ".join(lines)) from None


def load(path: Path) -> Topology:
    """Read, validate and resolve a topology file."""
    t = resolve(parse(read_yaml(path), str(path)), str(path))
    t.source = str(path)
    return t


# -- resolution --------------------------------------------------------------------------------------------
def resolve(d: TopologyDef, where: str = "topology") -> Topology:
    """The file's fields resolved into a `Topology`, then the check every topology passes (Topology.validate,
    which a generator's output passes too): errors "<where>: invalid topology" and the reason."""
    try:
        t = _Resolver(d).topology()
    except ValueError as exc:
        raise SpecError(f"{where}: invalid topology\n  {exc}") from None
    t.validate(where)
    return t


class _Resolver:
    def __init__(self, d: TopologyDef) -> None:
        self.d = d
        self.kinds = {n: nd.kind for n, nd in d.nodes.items()}
        for i, seg in enumerate(d.segments):
            b = seg.bridge_name
            if b in self.kinds:
                raise ValueError(f"segments.{i}: bridge name {b!r} is taken by a node or a segment (a duplicate name)")
            self.kinds[b] = seg.kind
        self.bridges = {n for n, k in self.kinds.items() if k in ("switch", "hub")}
        self.containers = [n for n, k in self.kinds.items() if k in ("host", "router")]

    def topology(self) -> Topology:
        d = self.d
        self._check_names()
        links = self._links()
        t = Topology(d.name, ipv6=d.ipv6)
        for name, nd in d.nodes.items():
            if nd.kind in ("host", "router"):
                extra = [Interface(x.name, x.kind, x.address) for x in nd.interfaces]
                t.hosts.append(Host(name, role=nd.role or nd.kind, image=nd.image, cpus=nd.cpus,
                                    forwarding=nd.kind == "router", routes=[(r.to, r.via) for r in nd.routes],
                                    interfaces=extra, nic_filter=nd.nic_filter or "perfect",
                                    host=nd.host))  # fmt: skip
            else:
                t.switches.append(Switch(name, mode=nd.kind, capacity_bps=nd.capacity,
                                         multicast_snooping=nd.multicast == "snooping",
                                         queue_frames=nd.queue or 100, host=nd.host))  # fmt: skip
        for seg in d.segments:
            t.switches.append(Switch(seg.bridge_name, mode=seg.kind,
                                     capacity_bps=seg.capacity if seg.kind == "hub" else None,
                                     multicast_snooping=seg.multicast == "snooping",
                                     queue_frames=seg.queue or 100))  # fmt: skip
        t.links = links
        self._address(t)
        self._route(t)
        t.impairments = self._impairments(t)
        return t

    def _check_names(self) -> None:
        for n in self.containers:
            if len(n) > MAX_HOST_NAME:
                raise ValueError(f"nodes.{n}: name longer than {MAX_HOST_NAME} characters (interfaces are {n}-eth0)")
        where = {n: f"nodes.{n}" for n in self.bridges}
        where.update(
            {s.bridge_name: f"segments.{i}.{'bridge' if s.bridge else 'name'}" for i, s in enumerate(self.d.segments)}
        )
        for n in self.bridges:
            try:
                naming.bridge_name(n)
            except ValueError as exc:
                raise ValueError(f"{where[n]}: {exc}") from None
        hubs: dict[str, str] = {}
        for i, seg in enumerate(self.d.segments):
            for m in seg.members:
                if m not in self.kinds:
                    raise ValueError(f"segments.{i}.members: no node {m!r} (nodes: {', '.join(sorted(self.kinds))})")
                if m in self.bridges:
                    raise ValueError(f"segments.{i}.members: {m} is a {self.kinds[m]}; join bridges with a link")
                if seg.kind == "hub":
                    if m in hubs:
                        raise ValueError(f"segments.{i}.members: {m} is already on hub {hubs[m]}; a node is on one hub")
                    hubs[m] = seg.bridge_name

    def _links(self) -> list[Link]:
        out: list[Link] = []
        pairs: dict[frozenset[str], str] = {}
        for i, seg in enumerate(self.d.segments):
            rate = seg.capacity if seg.kind == "switch" else None  # a hub's medium, not its ports, is the limit
            for m in seg.members:
                out.append(Link(m, seg.bridge_name, rate_bps=rate, segment=seg.name))
                pairs[frozenset((m, seg.bridge_name))] = f"segments.{i}"
        for i, lk in enumerate(self.d.links):
            a, b = lk.endpoints
            for n in (a, b):
                if n not in self.kinds:
                    raise ValueError(f"links.{i}.endpoints: no node {n!r} (nodes: {', '.join(sorted(self.kinds))})")
            key = frozenset((a, b))
            if key in pairs:
                raise ValueError(f"links.{i}: {a} and {b} are already joined by {pairs[key]} (one link per pair)")
            pairs[key] = f"links.{i}"
            if a in self.bridges and b in self.bridges and "hub" in (self.kinds[a], self.kinds[b]):
                raise ValueError(f"links.{i}: {a}-{b} joins a hub to a bridge; join switches only")
            ips = lk.addresses or (None, None)
            for n, ip in zip((a, b), ips, strict=True):
                if ip is not None and n in self.bridges:
                    raise ValueError(f"links.{i}.addresses: {n} is a {self.kinds[n]} and has no address")
            out.append(Link(a, b, ip1=ips[0], ip2=ips[1], rate_bps=lk.rate, segment=lk.segment or f"{a}-{b}"))
        return out

    # -- addresses ------------------------------------------------------------------------------------------
    def _domains(self, links: list[Link]) -> dict[str, str]:
        """Bridge -> the layer-2 domain it belongs to (named by its first bridge), bridges joined by links."""
        parent = {b: b for b in self.bridges}

        def root(x: str) -> str:
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        for lk in links:
            if lk.node1 in self.bridges and lk.node2 in self.bridges:
                parent[root(lk.node2)] = root(lk.node1)
        return {b: root(b) for b in self.bridges}

    def _address(self, t: Topology) -> None:
        domain = self._domains(t.links)
        # subnet of each domain / point-to-point link, from what is given
        ends: dict[str, list[tuple[Link, int]]] = {}  # subnet key -> (link, end index 1|2) of containers
        for i, lk in enumerate(t.links):
            for end, (n, other) in enumerate(((lk.node1, lk.node2), (lk.node2, lk.node1)), start=1):
                if n in self.bridges:
                    continue
                key = f"l2:{domain[other]}" if other in self.bridges else f"p2p:{i}"
                ends.setdefault(key, []).append((lk, end))
        given: dict[str, ipaddress.IPv4Network | ipaddress.IPv6Network] = {}
        for i, seg in enumerate(self.d.segments):
            if seg.subnet:
                key = f"l2:{domain[seg.bridge_name]}"
                net = ipaddress.ip_network(seg.subnet)
                if key in given and given[key] != net:
                    raise ValueError(f"segments.{i}.subnet: {net} but its bridges' domain already has {given[key]}")
                given[key] = net
        for key, members in ends.items():
            for lk, end in members:
                ip = lk.ip1 if end == 1 else lk.ip2
                if ip is None:
                    continue
                net = ipaddress.ip_interface(ip).network
                if key in given and given[key] != net:
                    raise ValueError(f"link {lk.node1}-{lk.node2}: {ip} is not in {given[key]}, the subnet of the rest "
                                     "of its segment")  # fmt: skip
                given[key] = net
        extra = {f"if:{h.name}:{x.name}": (h.name, x.address) for h in t.hosts for x in h.interfaces if x.address}
        taken = list(given.values()) + [ipaddress.ip_interface(ip).network for _n, ip in extra.values()]
        pool = (n for n in AUTO_POOL.subnets(new_prefix=24) if int(n.network_address) >= int(AUTO_POOL[256]))
        self.subnets: dict[str, ipaddress.IPv4Network | ipaddress.IPv6Network] = {}
        for key in ends:
            if key in given:
                self.subnets[key] = given[key]
                continue
            net = next(n for n in pool if not any(n.overlaps(x) for x in taken))
            self.subnets[key] = net
            taken.append(net)
        for key, members in ends.items():
            net = self.subnets[key]
            used = {ipaddress.ip_interface(ip).ip for lk, end in members if (ip := lk.ip1 if end == 1 else lk.ip2)}
            free = (h for h in net.hosts() if h not in used)
            for lk, end in members:
                if (lk.ip1 if end == 1 else lk.ip2) is None:
                    try:
                        ip = f"{next(free)}/{net.prefixlen}"
                    except StopIteration:
                        raise ValueError(f"subnet {net} has no address left for {lk.node1}-{lk.node2}") from None
                    if end == 1:
                        lk.ip1 = ip
                    else:
                        lk.ip2 = ip
        self.members = {key: [(lk.node1 if end == 1 else lk.node2, lk.ip1 if end == 1 else lk.ip2)
                              for lk, end in m] for key, m in ends.items()}  # fmt: skip
        for key, (n, ip) in extra.items():  # an extra interface: a subnet of its own, its node the one member
            self.subnets[key] = ipaddress.ip_interface(ip).network
            self.members[key] = [(n, ip)]

    # -- routes ---------------------------------------------------------------------------------------------
    def _route(self, t: Topology) -> None:
        on: dict[str, list[str]] = {n: [] for n in self.containers}  # node -> subnet keys
        for key, members in self.members.items():
            for n, _ip in members:
                on[n].append(key)
        forwarding = {h.name for h in t.hosts if h.forwarding}
        for h in t.hosts:
            have = [ipaddress.ip_network(dst) for dst, _ in h.routes]
            for key, net in self.subnets.items():
                if key in on[h.name] or any(net.subnet_of(x) for x in have if x.version == net.version):
                    continue
                gw = self._next_hop(h.name, key, on, forwarding)
                if gw is not None:
                    h.routes.append((str(net), gw))

    def _next_hop(self, src: str, dst: str, on: dict[str, list[str]], forwarding: set[str]) -> str | None:
        """The address of the first router on a shortest path from src to subnet dst; None: unreachable."""
        queue: deque[tuple[str, str | None]] = deque([(src, None)])
        seen = {src}
        while queue:
            node, first = queue.popleft()
            for key in on[node]:
                if key == dst:
                    return first
                for n, ip in self.members[key]:
                    if n in seen:
                        continue
                    if dst.startswith("if:") and dst in on[n]:  # a neighbor's own extra interface: through it
                        return first or str(ipaddress.ip_interface(ip).ip)
                    if n not in forwarding:
                        continue
                    seen.add(n)
                    queue.append((n, first or str(ipaddress.ip_interface(ip).ip)))
        return None

    def _impairments(self, t: Topology) -> list[LinkImpairment]:
        out = []
        hubs = {s.name for s in t.switches if s.mode == "hub"}
        for i, lk in enumerate(self.d.links):
            if lk.impairments is None:
                continue
            for direction in ("both", "forward", "reverse"):
                imp = getattr(lk.impairments, direction)
                if imp is None:
                    continue
                given = {k: getattr(imp, k) for k in imp.model_fields_set}  # validated already: no re-parsing
                li = LinkImpairment.model_construct(
                    _fields_set=set(given) | {"link", "direction"}, **given, link=lk.endpoints, direction=direction
                )
                if why := li.hub_conflict(hubs):
                    raise ValueError(f"links.{i}.impairments.{direction}: {why}")
                out.append(li)
        return out


def addresses(t: Topology) -> Iterator[tuple[str, str, str]]:
    """(node, interface, address) of every container interface, in interface order."""
    intfs = t.interfaces()
    count: dict[str, int] = {}
    for lk in t.links:
        for n, ip in ((lk.node1, lk.ip1), (lk.node2, lk.ip2)):
            k = count.get(n, 0)
            count[n] = k + 1
            if ip is not None:
                yield n, intfs[n][k], ip
