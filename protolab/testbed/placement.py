"""Which testbed host each node of a lab runs on (issue 18: a lab over several hosts).

The hosts come from an Ansible inventory (`ansible/inventory/*.yml`, the `testbed` group, as `make setup`
provisions them); each may say where its Docker engine answers, its underlay address for VXLAN, and how many
cores it gives to nodes:

    testbed:
      hosts:
        lab-a: {ansible_host: 192.0.2.10, protolab_underlay: 192.0.2.10, protolab_engine: "ssh://root@192.0.2.10",
                protolab_cpus: 8}
        lab-b: {ansible_host: 192.0.2.11, protolab_cpus: 4}
      vars: {protolab_vxlan_port: 4789, protolab_underlay_mtu: 1500}

place() keeps what a shared medium joins on one host: a hub or switch with every node linked to it (its shaper
and its queue are one kernel object there), so only point-to-point links between two containers (r1-w1, C_1-C_2)
may cross hosts. A node's `host:` pins it, and its group with it; the other groups go, largest CPU budget first,
to the host with the most cores left per core it has (ties: inventory order). Each link whose ends land on two
hosts is stitched by a VXLAN tunnel of its own (one VNI per link, VNI_BASE upward), its MTU the underlay's less
the 50 octets of VXLAN over IPv4. One host (the default inventory: localhost) places everything there and
stitches nothing.
"""

from __future__ import annotations

import contextlib
import ipaddress
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import Field, ValidationError, field_validator

from ..errors import SpecError
from ..model.base import Strict
from ..topo import Host, Link, Switch, Topology, VxlanEnd

INVENTORY_DIR = Path(__file__).resolve().parents[2] / "ansible" / "inventory"
DEFAULT_INVENTORY = INVENTORY_DIR / "local.yml"
GROUP = "testbed"
VXLAN_OVERHEAD = 50  # outer Ethernet 14 + IPv4 20 + UDP 8 + VXLAN 8
VNI_BASE = 4200
DEFAULT_NODE_CPUS = 1.0  # a node without a budget weighs one core when groups are balanced


class PlacementError(SpecError, ValueError):
    """A placement that cannot be: an inventory that does not read, a pin to an unknown host, a shared medium
    split across hosts."""


# What an inventory value may be. Each reaches ssh's argv, a remote shell (quoted) or a path on a host, so each is
# typed here: no leading `-` (an ssh option), no whitespace or shell metacharacters, no `..` or `/` in a name.
HOST_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}")  # a file and container name part too
USER_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,31}")  # a POSIX login
DNS_RE = re.compile(r"(?=.{1,253}\Z)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
                    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*")  # fmt: skip
ABS_PATH_RE = re.compile(r"/[A-Za-z0-9_./+-]{0,4095}")
FILE_PATH_RE = re.compile(r"[A-Za-z0-9_./~+][A-Za-z0-9_./~+-]{0,4095}")  # absolute, relative or ~/ (ssh expands it)
NETNS_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,254}")
# the inventory variable of each field (errors name what the inventory's author wrote)
INVENTORY_KEYS = {"name": "host name", "address": "ansible_host", "underlay": "protolab_underlay",
                  "engine": "protolab_engine", "cpus": "protolab_cpus", "vxlan_port": "protolab_vxlan_port",
                  "underlay_mtu": "protolab_underlay_mtu", "netns": "protolab_netns",
                  "prometheus_port": "protolab_prometheus_port", "user": "ansible_user", "ssh_port": "ansible_port",
                  "ssh_key": "ansible_ssh_private_key_file", "known_hosts": "protolab_known_hosts",
                  "python": "protolab_python"}  # fmt: skip


def ip_address(value: str) -> str:
    """An IPv4 or IPv6 address without a scope ID (`%eth0`: refused, whatever the Python release accepts)."""
    if "%" in value:
        raise ValueError(f"{value!r}: a scope ID (%...) is not allowed")
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        raise ValueError(f"{value!r} is not an IP address") from None


def host_address(value: str) -> str:
    """An IP address (ip_address) or a DNS host name (letters, digits, `-` and dots; no leading `-`)."""
    with_colon_or_digits = ":" in value or "%" in value or value.replace(".", "").isdigit()
    if with_colon_or_digits or DNS_RE.fullmatch(value) is None:
        try:
            return ip_address(value)
        except ValueError:
            raise ValueError(f"{value!r} is neither an IP address nor a host name (letters, digits, `-`, dots; "
                             "no leading `-`)") from None  # fmt: skip
    return value


def _path(value: str, pattern: re.Pattern[str], what: str) -> str:
    if pattern.fullmatch(value) is None:
        raise ValueError(f"{value!r} is not {what} (letters, digits and _ . / ~ + -; no leading `-`, no whitespace "
                         "or shell metacharacters)")  # fmt: skip
    if ".." in value.split("/"):
        raise ValueError(f"{value!r}: `..` is not allowed in a path")
    return value


def engine_endpoint(value: str) -> str:
    """A Docker engine endpoint: unix:///ABSOLUTE/PATH, tcp://HOST:PORT or ssh://[USER@]HOST[:PORT]."""
    scheme, sep, rest = value.partition("://")
    if not sep or scheme not in ("unix", "tcp", "ssh"):
        raise ValueError(f"{value!r} is not an engine endpoint (unix:///PATH, tcp://HOST:PORT, ssh://USER@HOST)")
    if scheme == "unix":
        _path(rest, ABS_PATH_RE, "an absolute path")
        return value
    user, at, hostport = rest.rpartition("@")
    if at and (scheme != "ssh" or USER_RE.fullmatch(user) is None):
        raise ValueError(f"{value!r}: a login ({user!r}) is only for ssh:// and is letters, digits, _ . -")
    m = re.fullmatch(r"\[([0-9A-Fa-f:.]+)\](?::(\d{1,5}))?|([^:\[\]]+)(?::(\d{1,5}))?", hostport)
    if m is None:
        raise ValueError(f"{value!r}: not HOST[:PORT]")
    host, port = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
    host_address(host)
    if port is not None and not 1 <= int(port) <= 65535:
        raise ValueError(f"{value!r}: port {port} is not 1-65535")
    if scheme == "tcp" and port is None:
        raise ValueError(f"{value!r}: a tcp:// endpoint needs its port")
    return value


class TestbedHost(Strict):
    """One host of the `testbed` group, from its inventory variables."""

    name: str
    address: str | None = Field(None, description="ansible_host: where Ansible and SSH reach it")
    underlay: str | None = Field(None, description="protolab_underlay: the address VXLAN tunnels end at")
    engine: str = Field("unix:///var/run/docker.sock", description="protolab_engine: its Docker engine's endpoint")
    cpus: float = Field(1.0, gt=0, description="protolab_cpus: cores it gives to nodes (balancing weight)")
    vxlan_port: int = Field(4789, ge=1, le=65535, description="protolab_vxlan_port: UDP port of the tunnels")
    underlay_mtu: int = Field(1500, ge=1280, le=65535, description="protolab_underlay_mtu")
    netns: str | None = Field(
        None, description="protolab_netns: an emulated host's network namespace (testbed.emulation)"
    )
    prometheus_port: int = Field(
        9190,
        ge=1,
        le=65535,
        description="protolab_prometheus_port: where its Prometheus listens (testbed.federation)",
    )
    # a host that is not emulated here is reached over SSH (an OpenSSH session kept open: testbed.reach)
    user: str = Field("root", description="ansible_user: the SSH login (root: the keeper runs Mininet and tc)")
    ssh_port: int = Field(22, ge=1, le=65535, description="ansible_port: its SSH port")
    ssh_key: str | None = Field(None, description="ansible_ssh_private_key_file: the SSH key (None: ssh's default)")
    known_hosts: str | None = Field(
        None, description="protolab_known_hosts: a known_hosts file holding its host key (None: the user's)"
    )
    python: str | None = Field(
        None, description="protolab_python: protolab's Python on the host (None: the path of this machine's)"
    )

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if HOST_NAME_RE.fullmatch(v) is None or ".." in v:
            raise ValueError(f"{v!r} is not a testbed host name (up to 63 letters, digits, _ . -, starting with a "
                             "letter or digit; it names files and containers)")  # fmt: skip
        return v

    @field_validator("address")
    @classmethod
    def _address(cls, v: str | None) -> str | None:
        return None if v is None else host_address(v)

    @field_validator("underlay")
    @classmethod
    def _underlay(cls, v: str | None) -> str | None:
        return None if v is None else ip_address(v)  # a VXLAN remote and a listen address: an IP

    @field_validator("engine")
    @classmethod
    def _engine(cls, v: str) -> str:
        return engine_endpoint(v)

    @field_validator("netns")
    @classmethod
    def _netns(cls, v: str | None) -> str | None:
        if v is not None and (NETNS_RE.fullmatch(v) is None or v in (".", "..")):
            raise ValueError(f"{v!r} is not a network namespace name (letters, digits, _ . -; no `/`)")
        return v

    @field_validator("user")
    @classmethod
    def _user(cls, v: str) -> str:
        if USER_RE.fullmatch(v) is None:
            raise ValueError(f"{v!r} is not a login (up to 32 letters, digits, _ . -, not starting with `-`)")
        return v

    @field_validator("python")
    @classmethod
    def _python(cls, v: str | None) -> str | None:
        return None if v is None else _path(v, ABS_PATH_RE, "an absolute path")

    @field_validator("ssh_key", "known_hosts")
    @classmethod
    def _file(cls, v: str | None) -> str | None:
        return None if v is None else _path(v, FILE_PATH_RE, "a file path")


@dataclass
class Inventory:
    source: str
    hosts: list[TestbedHost]

    def names(self) -> list[str]:
        return [h.name for h in self.hosts]

    def get(self, name: str) -> TestbedHost:
        for h in self.hosts:
            if h.name == name:
                return h
        raise PlacementError(f"inventory {self.source}: no testbed host {name!r} (hosts: {', '.join(self.names())})")


def load_inventory(path: Path | str = DEFAULT_INVENTORY) -> Inventory:
    """The `testbed` group of an Ansible YAML inventory (hosts with their variables, group vars beneath)."""
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise PlacementError(f"inventory {path}: {exc}") from None
    group = (raw or {}).get(GROUP) if isinstance(raw, dict) else None
    if not isinstance(group, dict) or not isinstance(group.get("hosts"), dict) or not group["hosts"]:
        raise PlacementError(f"inventory {path}: no `{GROUP}:` group with `hosts:` (the group `make setup` provisions)")
    common = group.get("vars") or {}
    hosts = []
    if not isinstance(common, dict):
        raise PlacementError(f"inventory {path}: `{GROUP}: vars:` is not a mapping")
    for name, hv in group["hosts"].items():
        if hv is not None and not isinstance(hv, dict):
            raise PlacementError(f"inventory {path}: host {name!r}: its variables are not a mapping")
        v = {**common, **(hv or {})}
        try:
            keys = ("engine", "cpus", "vxlan_port", "underlay_mtu", "netns", "prometheus_port", "known_hosts", "python")
            extra = {k: v[f"protolab_{k}"] for k in keys if f"protolab_{k}" in v}
            ansible = {"user": "ansible_user", "ssh_port": "ansible_port", "ssh_key": "ansible_ssh_private_key_file"}
            extra |= {k: v[a] for k, a in ansible.items() if a in v}
            underlay = v.get("protolab_underlay")
            if underlay is None and isinstance(v.get("ansible_host"), str):  # an address, not a name, ends a tunnel
                with contextlib.suppress(ValueError):
                    underlay = ip_address(v["ansible_host"])
            hosts.append(TestbedHost(name=str(name), address=v.get("ansible_host"), underlay=underlay, **extra))
        except ValidationError as exc:
            e = exc.errors()[0]
            field_ = ".".join(map(str, e["loc"]))
            why = e["msg"].removeprefix("Value error, ")
            shown = name if HOST_NAME_RE.fullmatch(str(name)) else repr(name)  # a hostile name, visibly
            raise PlacementError(f"inventory {path}: host {shown}: {field_}: {why} (inventory variable "
                                 f"{INVENTORY_KEYS.get(field_, field_)})") from None  # fmt: skip
    return Inventory(str(path), hosts)


@dataclass
class Stitch:
    """A link between nodes on two hosts, carried by a VXLAN tunnel of its own."""

    link: tuple[str, str]
    hosts: tuple[str, str]
    vni: int
    mtu: int
    port: int

    def to_json(self) -> dict[str, Any]:
        return {"link": list(self.link), "hosts": list(self.hosts), "vni": self.vni, "mtu": self.mtu,
                "udp_port": self.port}  # fmt: skip


@dataclass
class Placement:
    inventory: str
    node_host: dict[str, str]
    groups: list[list[str]]  # nodes that stay together (a shared medium and its members), in topology order
    stitches: list[Stitch] = field(default_factory=list)
    load: dict[str, float] = field(default_factory=dict)  # host -> CPU budget placed on it (cores)

    @property
    def hosts(self) -> list[str]:
        return list(dict.fromkeys(self.node_host.values()))

    def to_json(self) -> dict[str, Any]:
        """For the manifest and `protolab inspect`."""
        return {"inventory": self.inventory, "nodes": dict(self.node_host), "groups": self.groups,
                "stitches": [s.to_json() for s in self.stitches], "cpus_per_host": self.load}  # fmt: skip

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Placement:
        """to_json's inverse (a lab over several hosts found again from its supervisor's state)."""
        stitches = [Stitch((s["link"][0], s["link"][1]), (s["hosts"][0], s["hosts"][1]), s["vni"], s["mtu"],
                           s["udp_port"]) for s in d.get("stitches") or []]  # fmt: skip
        return cls(d["inventory"], dict(d["nodes"]), [list(g) for g in d.get("groups") or []], stitches,
                   dict(d.get("cpus_per_host") or {}))  # fmt: skip


def groups(topo: Topology) -> list[list[str]]:
    """Nodes that must share a host: each bridge with every node linked to it, transitively (union-find)."""
    parent = {n: n for n in topo.node_names()}

    def find(n: str) -> str:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    bridges = {s.name for s in topo.switches}
    for lk in topo.links:
        if lk.node1 in bridges or lk.node2 in bridges:
            parent[find(lk.node1)] = find(lk.node2)
    out: dict[str, list[str]] = {}
    for n in topo.node_names():
        out.setdefault(find(n), []).append(n)
    return list(out.values())


def place(topo: Topology, inventory: Inventory, pins: Mapping[str, str] | None = None,
          default_cpus: float | None = None) -> Placement:  # fmt: skip
    """Each node's host (see the module docstring). `pins`: node -> host, beside the topology's own `host:`s;
    `default_cpus`: the budget of nodes without one (the experiment's default), else DEFAULT_NODE_CPUS."""
    nodes: list[Host | Switch] = [*topo.hosts, *topo.switches]
    pinned: dict[str, str] = {n.name: n.host for n in nodes if n.host}
    for node, host in (pins or {}).items():
        if node not in topo.node_names():
            raise PlacementError(f"placement: {node!r} is not a node of this topology")
        if node in pinned and pinned[node] != host:
            raise PlacementError(f"placement: {node} is pinned to {pinned[node]} by the topology and to {host}")
        pinned[node] = host
    for host in pinned.values():
        inventory.get(host)  # an unknown host says which exist
    cpus = {h.name: (h.cpus if h.cpus is not None else default_cpus or DEFAULT_NODE_CPUS) for h in topo.hosts}
    parts = groups(topo)
    load = {h.name: 0.0 for h in inventory.hosts}
    node_host: dict[str, str] = {}
    free: list[tuple[int, list[str]]] = []
    for i, g in enumerate(parts):
        want = sorted({pinned[n] for n in g if n in pinned})
        if len(want) > 1:
            pins_ = ", ".join(f"{n} on {pinned[n]}" for n in g if n in pinned)
            raise PlacementError(f"placement: {pins_} share a hub or switch ({', '.join(g)}); a shared medium never "
                                 "spans hosts: pin them to one host, or join them by point-to-point links")  # fmt: skip
        if want:
            _assign(g, want[0], cpus, load, node_host)
        else:
            free.append((i, g))
    capacity = {h.name: h.cpus for h in inventory.hosts}
    order = {h.name: i for i, h in enumerate(inventory.hosts)}
    for _i, g in sorted(free, key=lambda ig: (-sum(cpus.get(n, 0.0) for n in ig[1]), ig[0])):
        best = min(load, key=lambda h: ((load[h] + sum(cpus.get(n, 0.0) for n in g)) / capacity[h], order[h]))
        _assign(g, best, cpus, load, node_host)
    return Placement(inventory.source, {n: node_host[n] for n in topo.node_names()}, parts,
                     _stitches(topo, inventory, node_host), load)  # fmt: skip


def describe(inventory: Inventory, p: Placement | None = None) -> str:
    """The hosts of an inventory as placement reads them and, given a placement, what runs where and which links
    are stitched (`protolab place`)."""
    lines = [f"inventory {inventory.source}: {len(inventory.hosts)} testbed host(s)"]
    for h in inventory.hosts:
        where = f"netns {h.netns} (emulated)" if h.netns else (h.address or "this machine")
        cores = f"{h.cpus:g} core{'' if h.cpus == 1 else 's'}"
        lines.append(f"  {h.name}: {where}; engine {h.engine}; underlay {h.underlay or '-'}; {cores}; "
                     f"VXLAN port {h.vxlan_port}, underlay MTU {h.underlay_mtu}")  # fmt: skip
    if p is None:
        return "\n".join(lines)
    lines.append("placement (a hub or switch stays on one host with its members):")
    for host in inventory.names():
        nodes = [n for n, h in p.node_host.items() if h == host]
        if nodes:
            lines.append(f"  {host} ({p.load.get(host, 0.0):g} cores of node budget): {', '.join(nodes)}")
    if not p.stitches:
        lines.append("no link crosses hosts: nothing stitched")
    for st in p.stitches:
        lines.append(f"  stitched {st.link[0]}-{st.link[1]}: {st.hosts[0]} <-> {st.hosts[1]}, VXLAN VNI {st.vni}, "
                     f"UDP {st.port}, MTU {st.mtu}")  # fmt: skip
    return "\n".join(lines)


def _assign(group: Sequence[str], host: str, cpus: Mapping[str, float], load: dict[str, float],
            node_host: dict[str, str]) -> None:  # fmt: skip
    for n in group:
        node_host[n] = host
    load[host] += sum(cpus.get(n, 0.0) for n in group)


def _stitches(topo: Topology, inventory: Inventory, node_host: Mapping[str, str]) -> list[Stitch]:
    out: list[Stitch] = []
    for lk in topo.links:
        a, b = node_host[lk.node1], node_host[lk.node2]
        if a == b:
            continue
        ha, hb = inventory.get(a), inventory.get(b)
        for h in (ha, hb):
            if not h.underlay:
                where = f"inventory {inventory.source}: host {h.name}"
                raise PlacementError(f"{where} carries link {lk.node1}-{lk.node2} across hosts but has no "
                                     "protolab_underlay (or ansible_host)")  # fmt: skip
        if ha.vxlan_port != hb.vxlan_port:
            raise PlacementError(f"inventory {inventory.source}: {a} and {b} use VXLAN ports {ha.vxlan_port} and "
                                 f"{hb.vxlan_port}; a tunnel between them needs one")  # fmt: skip
        mtu = min(ha.underlay_mtu, hb.underlay_mtu) - VXLAN_OVERHEAD
        out.append(Stitch((lk.node1, lk.node2), (a, b), VNI_BASE + len(out), mtu, ha.vxlan_port))
    return out


def stitch_bridge(vni: int) -> str:
    """The name of the bridge that holds a stitched link's VXLAN device on each of its two hosts."""
    return f"x{vni}"


def split(topo: Topology, p: Placement, inventory: Inventory) -> dict[str, Topology]:
    """Each host's part of the lab: its nodes and the links between them, and for each stitched link a bridge
    of its own (stitch_bridge(vni)) holding the VXLAN end, linked to the local node with the link's addresses
    and rate. Impairments follow the packets: at: sender on the sending node's host (toward its stitch
    bridge), at: receiver on the receiving node's (from its stitch bridge)."""
    parts = {h: Topology(topo.kind, source=topo.source, ipv6=topo.ipv6, receive_cpu=topo.receive_cpu)
             for h in p.hosts}  # fmt: skip
    for h in topo.hosts:
        parts[p.node_host[h.name]].hosts.append(h)
    for s in topo.switches:
        parts[p.node_host[s.name]].switches.append(s)
    stitched = {frozenset(s.link): s for s in p.stitches}
    for lk in topo.links:
        st = stitched.get(frozenset((lk.node1, lk.node2)))
        if st is None:
            parts[p.node_host[lk.node1]].links.append(lk)
            continue
        x = stitch_bridge(st.vni)
        for node, ip, other in ((lk.node1, lk.ip1, lk.node2), (lk.node2, lk.ip2, lk.node1)):
            here, there = inventory.get(p.node_host[node]), inventory.get(p.node_host[other])
            assert here.underlay and there.underlay  # _stitches refused hosts without one
            end = VxlanEnd(st.vni, here.underlay, there.underlay, st.port, st.mtu)
            part = parts[here.name]
            part.switches.append(Switch(x, host=here.name, vxlan=end))
            part.links.append(Link(node, x, ip1=ip, rate_bps=lk.rate_bps, segment=lk.segment))
    for imp in topo.impairments:
        st = stitched.get(frozenset(imp.link))
        if st is None:
            parts[p.node_host[imp.link[0]]].impairments.append(imp)
            continue
        x = stitch_bridge(st.vni)
        for src, dst in imp.directions():
            if imp.at == "sender":
                host, link = p.node_host[src], (src, x)
            else:
                host, link = p.node_host[dst], (x, dst)
            parts[host].impairments.append(imp.model_copy(update={"link": link, "direction": "forward"}))
    return parts
