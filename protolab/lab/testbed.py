"""A lab over the testbed hosts of an inventory, keeping the contract of a running lab (protolab.lab.api) as the
single-machine Lab does: `protolab run NAME --emulate-hosts a,b | --inventory FILE`, and the self-check across
the stitches of `protolab deploy ... --emulate-hosts`.

protolab.lab.parts deploys the parts (one keeper per host). TestbedLab is composed of what it deployed and reads:

- `parts`: the MultiLab (each host's part and its keeper); commands in a node go through its host's engine;
- `states`: each keeper's state, read once the parts are up (nodes, link rows, shaped interfaces, what applied);
- `links`: TestbedLinks, the link state over the keepers (protolab.lab.api.LinkControl): a direction's
  impairment is changed by the keeper of the host that applies it (placement.split's rule: at sender on the
  sending node's host, at receiver on the receiving node's; a stitched link's far end is that host's stitch
  bridge), a stitched cable is pulled on both hosts.

What a run adds to a deploy (hosts given):

- targets(): each host's Prometheus scrapes its own part's nodes; the run's Prometheus reads them through
  federation, so measurements, recording rules and dashboards query one Prometheus as on one host.
- the self-saturation guard: hosts on this machine's kernel (emulated ones, reached through their namespaces or
  over SSH) share its cores, so the one guard here is theirs, and it counts every such part's nodes, keepers,
  engines and Prometheus as the lab's CPU, not as foreign load; a host with a kernel of its own is guarded there,
  by its keeper (host_guards()).
- timings: placement, the stitches' underlay round trips and the hosts' clock offsets (lab.parts.deploy), for the
  manifest; a one-way delay between two hosts carries the sum of their clock uncertainties (clock_note()).
"""

from __future__ import annotations

import ipaddress
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import LabError, ProtolabError
from ..model.impairment import Impairment
from ..testbed import federation, placement
from ..topo import Topology, v6_address
from .impair import Endpoint
from .parts import MultiLab, docker_client
from .parts import deploy as deploy_parts

if TYPE_CHECKING:
    from .. import ownership
    from ..model.impairment import LinkImpairment
    from ..testbed.hosts import Hosts
    from .api import Direction, Setting


def _endpoint(state: dict[str, Any], node: str, intf: str) -> Endpoint:
    """An interface of a keeper's part: a node's in its namespace (its pid), a bridge's on the host's side (the
    keeper's pid)."""
    pid = next((n["pid"] for n in state.get("nodes", []) if n["name"] == node), None)
    return Endpoint(intf, pid) if pid is not None else Endpoint(intf, state.get("pid"), host_side=True)


def _ends_of(state: dict[str, Any]) -> list[tuple[str, Endpoint]]:
    """A keeper state's link ends, each as _endpoint has it."""
    return [(e["node"], _endpoint(state, e["node"], e["interface"])) for row in state.get("links", [])
            for e in row["ends"]]  # fmt: skip


class TestbedLinks:
    """The link state of a lab over testbed hosts (LinkControl): what the spec configured and what is in force,
    each change made by the keeper that applies it."""

    __test__ = False  # not a pytest class, for all its name

    def __init__(self, parts: MultiLab, topology: Topology, states: dict[str, dict[str, Any]]) -> None:
        from .linkstate import wanted_settings

        self.parts, self.states = parts, states
        self.configured: dict[Direction, Setting] = wanted_settings(topology, list(topology.impairments))
        self.current: dict[Direction, Setting] = dict(self.configured)  # the links' rates too, as each keeper has
        self.stitched = {frozenset(s.link): s for s in parts.placement.stitches}

    def step(self, link: tuple[str, str], direction: str, change: Impairment | None) -> None:
        """LinkState.step over hosts: the fields given in `change` replace the current ones of the direction(s),
        each changed by the keeper that applies it."""
        from .linkstate import step_changes

        for d, imp, at in step_changes(self.current, link, direction, change):
            self.replace(*d, imp, at)

    def set_cable(self, link: tuple[str, str], state: str) -> None:
        """Pull ("down") or plug ("up") a link's cable. A stitched link is one cable between two hosts: each host
        pulls its end (the node's port on its stitch bridge), so both nodes lose carrier as with one cable."""
        a, b = link
        node_host = self.parts.placement.node_host
        st = self.stitched.get(frozenset(link))
        if st is None:
            ends = {h: [a, b] for h in {node_host[n] for n in link if n in node_host}}
        else:
            x = placement.stitch_bridge(st.vni)
            ends = {node_host[n]: [n, x] for n in link}
        for host, local in sorted(ends.items()):
            self.parts.parts[host].request("links", method="set_cable", link=local, state=state)

    def restore(self) -> list[str]:
        """Every cable in and every direction as configured, on every host; what could not be, by host."""
        failures = []
        for host, part in sorted(self.parts.parts.items()):
            try:
                failures += [f"{host}: {f}" for f in part.request("links", method="restore")["failures"]]
            except LabError as exc:
                failures.append(f"{host}: {exc}")
        self.current = dict(self.configured)
        return failures

    def where(self, a: str, b: str, at: str) -> tuple[str, list[str]]:
        """(host, link in that host's part) of direction a -> b's impairment."""
        st = self.stitched.get(frozenset((a, b)))
        host = self.parts.placement.node_host[a if at == "sender" else b]
        if st is None:
            return host, [a, b]
        x = placement.stitch_bridge(st.vni)
        return host, ([a, x] if at == "sender" else [x, b])

    def _end(self, node: str, other: str) -> Endpoint:
        host = self.parts.placement.node_host[node]
        st = self.stitched.get(frozenset((node, other)))
        peer = placement.stitch_bridge(st.vni) if st else other
        state = self.states[host]
        for row in state.get("links", []):
            names = [e["node"] for e in row["ends"]]
            if set(names) == {node, peer}:
                return _endpoint(state, node, row["ends"][names.index(node)]["interface"])
        raise LabError(f"no link {node}-{peer} in the part on {host}")

    def ends(self, a: str, b: str) -> tuple[Endpoint, Endpoint]:
        return self._end(a, b), self._end(b, a)

    def replace(self, a: str, b: str, imp: Impairment, at: str) -> None:
        host, link = self.where(a, b, at)
        # what is in force; the keeper's configured impairments stay the spec's
        self.parts.parts[host].request(
            "links", method="replace", link=link, at=at, impairment=imp.model_dump(mode="json")
        )
        self.current[(a, b)] = (imp, at)


class _LazyContainer:
    """A node's container on its host's engine, looked up on first use (a run asks for few of them)."""

    def __init__(self, parts: MultiLab, node: str) -> None:
        self._parts, self._node = parts, node
        self._c: Any = None

    def __getattr__(self, name: str) -> Any:
        if self._c is None:
            self._c = self._parts.container(self._node)
        return getattr(self._c, name)


class _ReceiveCpu:
    """Lab.receive_cpu's manifest over hosts: each keeper's."""

    def __init__(self, states: dict[str, dict[str, Any]]) -> None:
        self.states = states

    def manifest(self) -> dict[str, Any]:
        return {"hosts": {h: st.get("receive_cpu") for h, st in sorted(self.states.items())}}


class TestbedLab:
    """A lab over testbed hosts, as the runner drives a Lab (protolab.lab.api.RunningLab). Either deployed by a
    run (TestbedLab(topology, hosts, ...).deploy()) or over parts deployed already (TestbedLab.over(parts,
    topology): the supervisor's self-check across stitches)."""

    __test__ = False  # not a pytest class, for all its name

    def __init__(self, topology: Topology, hosts: Hosts | None = None, run_id: str = "",
                 ledger: ownership.Ledger | None = None) -> None:  # fmt: skip
        self.topology, self.hosts, self.run_id, self.ledger = topology, hosts, run_id, ledger
        self.impairments: list[LinkImpairment] = list(topology.impairments)
        self.cpus: dict[str, float | None] = {h.name: h.cpus for h in topology.hosts}
        self.actions: list[str] = []
        self.timings: dict[str, Any] = {}
        self.teardown_failures: list[str] = []
        self.parts: MultiLab | None = None
        self.states: dict[str, dict[str, Any]] = {}
        self.links: TestbedLinks | None = None
        self.receive_cpu = _ReceiveCpu(self.states)

    @classmethod
    def over(cls, parts: MultiLab, topology: Topology) -> TestbedLab:
        """The lab of parts deployed already (their keepers' states read now)."""
        lab = cls(topology)
        lab._attach(parts)
        return lab

    def _attach(self, parts: MultiLab) -> None:
        self.parts = parts
        self.states.clear()
        self.states |= {name: part.load_state() or {} for name, part in parts.parts.items()}
        self.links = TestbedLinks(parts, self.topology, self.states)

    def _deployed(self) -> MultiLab:
        if self.parts is None:
            raise LabError("the lab over testbed hosts is not deployed")
        return self.parts

    # -- life cycle ---------------------------------------------------------------------------------------------
    def deploy(self) -> None:
        t0 = time.monotonic()
        self._attach(deploy_parts(self.topology, self._hosts().inventory, out=sys.stdout, ledger=self.ledger))
        parts = self._deployed()
        placed = {k: v for k, v in parts.state().items() if k != "hosts"}  # placement, underlay, clocks
        self.timings = {"deploy_seconds": time.monotonic() - t0, "testbed": placed}
        self.actions.append(
            f"deployed over {len(parts.parts)} testbed hosts: "
            + ", ".join(f"{n} ({len(p.topology.hosts)} nodes)" for n, p in parts.parts.items())
        )

    def teardown(self) -> None:
        t0 = time.monotonic()
        if self.hosts is not None:
            self.clear_targets()
        if self.parts is not None:
            self.teardown_failures += self.parts.destroy()
        self.timings["teardown_seconds"] = time.monotonic() - t0

    def _hosts(self) -> Hosts:
        if self.hosts is None:
            raise LabError("this lab over testbed hosts was attached to parts deployed already: no hosts of a run")
        return self.hosts

    # -- the nodes ------------------------------------------------------------------------------------------------
    def exec(self, node: str, cmd: list[str], timeout: float | None = None) -> tuple[int, str, str]:
        return self._deployed().exec(node, cmd, timeout=timeout)

    def data_interfaces(self, node: str) -> list[str]:
        """A node's interfaces in link order: the whole topology's, which each host's part keeps (a stitched link
        ends at the host's stitch bridge in the same place)."""
        return self.topology.interfaces()[node]

    def ip(self, node: str, intf: int = 0, family: int = 4) -> str:
        """A node's address on its intf-th data interface, as Lab.ip gives it: IPv4, or (family 6) its twin."""
        links = [lk for lk in self.topology.links if node in (lk.node1, lk.node2)]
        if not 0 <= intf < len(links):
            raise LabError(f"{node}: no data interface {intf} (it has {len(links)})")
        cidr = links[intf].ip1 if links[intf].node1 == node else links[intf].ip2
        if cidr is None:
            raise LabError(f"{node}: its data interface {intf} has no address")
        if family == 4:
            return str(ipaddress.ip_interface(cidr).ip)
        if not self.topology.ipv6:
            raise LabError(f"{node}: this lab has no IPv6 (its topology says ipv6: false)")
        return str(ipaddress.ip_interface(v6_address(cidr)).ip)

    def node_shell(self, node: str, script: str) -> str:
        """A root shell command in the node's network namespace, run by the keeper of its host (Lab.node_shell)."""
        return str(self._deployed().host_of(node).request("sh", node=node, script=script)["output"])

    @property
    def nodes(self) -> dict[str, Any]:
        """Each node's runtime as Lab.nodes has it: name, role, image, pid, mgmt_ip, and its container (a handle on
        its host's engine)."""
        from .local import NodeRuntime

        parts = self._deployed()
        out = {}
        for h, st in self.states.items():
            remote = not parts.parts[h].local  # a pid there is not a process here: none (no CPU read here)
            for n in st.get("nodes", []):
                out[n["name"]] = NodeRuntime(n["name"], n.get("role", "host"), n.get("image", ""),
                                             pid=None if remote else n["pid"],  # type: ignore[arg-type]
                                             mgmt_ip=n.get("mgmt_ip", ""),
                                             container=_LazyContainer(parts, n["name"]))  # fmt: skip
        return out

    def sync_nic_filters(self) -> dict[str, list[str]]:
        """Lab.sync_nic_filters over hosts: each part's keeper (emulated or remote) brings its NIC filters' model
        up to its nodes' joins; 'node:interface' -> its joined link-layer groups."""
        out: dict[str, list[str]] = {}
        for part in self._deployed().parts.values():
            out |= part.request("nic_sync")["joined"]
        return out

    # -- the links --------------------------------------------------------------------------------------------
    @property
    def configured(self) -> dict[Direction, Setting]:
        return self.links.configured if self.links else {}

    @property
    def current(self) -> dict[Direction, Setting]:
        return self.links.current if self.links else {}

    @property
    def shaped_interfaces(self) -> set[str]:
        return {i for st in self.states.values() for i in st.get("shaped_interfaces", [])}

    @property
    def applied(self) -> list[dict[str, Any]]:
        return [{"host": h, **a} for h, st in sorted(self.states.items()) for a in st.get("applied", [])]

    @property
    def nic_filters(self) -> dict[str, str]:
        return {k: v for st in self.states.values() for k, v in (st.get("nic_filters") or {}).items()}

    @property
    def containers(self) -> str:
        """The nodes' privileges and limits: each keeper's defaults (a part carries no spec limits yet)."""
        from .local import container_privileges

        return f"each host keeper's defaults: {container_privileges({})}"

    # -- what a run reads of its lab, from the keepers' states and the parts here ---------------------------------
    def _local(self, host: str) -> bool:
        return self._deployed().parts[host].local

    def _ends(self, local: bool = False) -> list[tuple[str, Endpoint]]:
        """Every link end of every part (with `local`, of the parts on this machine: emulated hosts): (node or
        bridge, its Endpoint), a bridge's on its host's side."""
        return [x for h, st in self.states.items() if not (local and not self._local(h)) for x in _ends_of(st)]

    def ends_here(self) -> list[tuple[str, Endpoint]]:
        """The link ends in namespaces on this machine: the emulated hosts' parts (node or bridge, Endpoint)."""
        return self._ends(local=True)

    def namespace_host(self, pid: int | None) -> str | None:
        """The testbed host whose part has a link end in the namespace of `pid` (a keeper's: its bridges), else
        None."""
        for h, st in self.states.items():
            if pid is not None and any(e.pid == pid for _n, e in _ends_of(st)):
                return str(h)
        return None

    def interface_counters(self) -> dict[str, dict[str, int]]:
        """Every link end's counters: an emulated part's read here in its namespaces, a remote part's by its keeper."""
        from .local import counters_of

        return counters_of(self._ends(local=True)) | self._read_remote("counters")

    def offloads(self) -> dict[str, dict[str, str]]:
        from .local import read_offloads

        local = {f"{node}:{end.intf}": read_offloads(end) for node, end in self._ends(local=True)}
        return local | self._read_remote("offloads")

    def unshaped(self) -> dict[int | None, set[str]]:
        """Lab.unshaped over hosts: the data interfaces no shaper is on, by the namespace they are in (a node's pid,
        or the keeper's for its host's bridges)."""
        out: dict[int | None, set[str]] = {}
        for h, st in self.states.items():
            if not self._local(h):
                continue  # read on its host, by a guard there: not built yet
            shaped = set(st.get("shaped_interfaces", []))
            for _node, end in _ends_of(st):
                if end.intf not in shaped:
                    out.setdefault(end.pid, set()).add(end.intf)
        return out

    def linkem_sockets(self) -> list[tuple[str, Path]]:
        """The control sockets of the link emulators of the parts on this machine (emulated hosts): in each
        keeper's state directory, named "<host> <socket>" (protolab.lab.quiesce reads them)."""
        return [(f"{h} {p.name}", p) for h, part in sorted(self._deployed().parts.items()) if not part.remote
                for p in sorted((part.state_dir / "linkem").glob("*.sock"))]  # fmt: skip

    def keepers_helpers_down(self, since: float) -> list[str]:
        """Each keeper's watch of the helpers it runs (its link emulators and NIC filters: helperproc.WATCH in the
        keeper's process, here or on its host) since `since` (this process's time.monotonic()), one line each
        naming the host; a keeper that does not answer is a line too (its helpers cannot be shown up)."""
        ago = max(0.0, time.monotonic() - since)
        out = []
        for h, part in sorted(self._deployed().parts.items()):
            try:
                reasons = part.request("helpers", ago=ago)["reasons"]
            except (ProtolabError, OSError, subprocess.SubprocessError, ValueError) as exc:
                out.append(f"the helpers on host {h} could not be watched: its keeper did not answer ({exc})")
                continue
            out += [f"{r} (on host {h})" for r in reasons]
        return out

    def remote_held(self) -> dict[str, tuple[int, str]]:
        """What the link emulators of the parts on hosts reached over SSH hold, asked of their keepers (a part
        here is read on its sockets: protolab.lab.quiesce): {"<host> <emulator>": (bytes, what)}; a keeper that does
        not answer is an entry too, with 0 bytes and why."""
        out: dict[str, tuple[int, str]] = {}
        for h, part in sorted(self._deployed().parts.items()):
            if not part.remote:
                continue
            try:
                held = part.request("read", what="held")["value"]
            except (ProtolabError, OSError, subprocess.SubprocessError, ValueError) as exc:
                out[f"{h} link emulators"] = (0, f"not readable: its keeper did not answer ({exc})")
                continue
            out |= {f"{h} {name}": (int(n), str(what)) for name, (n, what) in held.items()}
        return out

    def emulator_drops(self) -> dict[str, dict[str, int]]:
        """The link emulators' losses by cause (impair.parse_drops): a part's here read on its sockets, a part's on
        a host reached over SSH asked of its keeper."""
        from .impair import linkem_drops

        out = linkem_drops(self.linkem_sockets())
        for part in self._deployed().parts.values():
            if part.remote:
                out |= part.request("read", what="drops")["value"]
        return out

    def _read_remote(self, what: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for part in self._deployed().parts.values():
            if not part.local:
                out |= part.request("read", what=what)["value"]
        return out

    def node_sysctls(self) -> dict[str, dict[str, str]]:
        from .local import _node_sysctls

        return {h.name: _node_sysctls(h.forwarding, self.topology.ipv6) for h in self.topology.hosts}

    def service_pids(self) -> list[int]:
        """Processes that serve the lab outside its containers' cgroups: the keepers on this machine's kernel
        (their own pids, as their states give them; with their reaped children), counted by the guard as the
        lab's."""
        if self.parts is None:
            return []
        return [int(self.states[h]["pid"]) for h, p in self.parts.parts.items() if p.local and "pid" in self.states[h]]

    def cgroup_pids(self) -> list[int]:
        """One process of each container that serves the lab beside its nodes, on this machine's kernel: the
        hosts' Prometheus."""
        from ..testbed import reach

        if self.parts is None or self.hosts is None:
            return []
        out = []
        for name, part in self.parts.parts.items():
            if not part.local or name not in self.hosts.proms:
                continue
            try:
                c = docker_client(reach.engine(part.host)).containers.get(self.hosts.proms[name].container)
                out.append(int(c.attrs["State"]["Pid"]))
            except Exception:  # noqa: BLE001 (a missing one is not the lab's CPU: nothing to count)
                continue
        return out

    def host_guards(self) -> dict[str, dict[str, Any]]:
        """The self-saturation snapshot of each host with a kernel of its own, taken there by its keeper (the
        guard here covers this machine's kernel and the hosts that share it)."""
        if self.parts is None:
            return {}
        return {h: p.request("read", what="guard")["value"] for h, p in self.parts.parts.items() if not p.local}

    def clock_note(self, sender: str, receiver: str) -> dict[str, Any] | None:
        """For a one-way delay from sender to receiver on two hosts: the hosts and the sum of their clock
        offsets' uncertainties (None when both are on one host)."""
        if self.parts is None:
            return None
        a, b = (self.parts.placement.node_host.get(n) for n in (sender, receiver))
        if a is None or b is None or a == b:
            return None
        u = [self.parts.clocks.get(h, {}).get("uncertainty_seconds") for h in (a, b)]
        return {"hosts": [a, b], "uncertainty_seconds": sum(u) if None not in u else None}

    # -- monitoring -----------------------------------------------------------------------------------------------
    def targets(self, extra_ports: dict[str, list[int]] | None = None) -> list[dict[str, Any]]:
        """Each host's nodes go to that host's Prometheus; the run's own file gets none of them (it federates)."""
        hosts = self._hosts()
        for host, st in self.states.items():
            hosts.proms[host].write_targets(federation.node_groups(st.get("nodes", []), self.run_id, extra_ports))
        return []

    def clear_targets(self) -> None:
        for p in self._hosts().proms.values():
            p.write_targets([])


def check_stitches(parts: MultiLab, topology: Topology, log: Any = print) -> list[dict[str, Any]]:
    """protolab.lab.selfcheck across every impaired direction of a stitched link, before any workload: a probe pair
    whose path crosses it (end to end through both hosts' shapers and the tunnel), RTT over the path's own base
    (its delays set to 1 us through the keepers, then put back), loss, and the rate at the shaping interface,
    against selfcheck's bounds; one result per direction."""
    from . import selfcheck

    lab = TestbedLab.over(parts, topology)
    crossing = {d for s in parts.placement.stitches for d in (tuple(s.link), tuple(reversed(s.link)))}
    dirs = [d for d in dict.fromkeys(d for item in topology.impairments for d in item.directions()) if d in crossing]
    spec_rated = {d for item in topology.impairments if item.rate for d in item.directions()}
    results = []
    for d in dirs:
        p = selfcheck.plan(topology, d, set(dirs))
        if isinstance(p, str):
            results.append({"from": d[0], "to": d[1], "passed": True, "skipped": p, "failures": []})
            log(f"self-check across {d[0]}->{d[1]}: not probed ({p})")
            continue
        res = selfcheck.check_direction(lab, p, selfcheck.expected(p, lab.configured, spec_rated))
        results.append(res)
        log(f"self-check across {d[0]}->{d[1]} via {p.src}->{p.dst}: " + selfcheck.summarize(res))
    return results
