"""A run over several testbed hosts (issue 18): `protolab run NAME --emulate-hosts a,b | --inventory FILE`.

The runner drives a lab through Lab's members (workloads.base.LabAPI and the few the orchestrator reads);
HostsLab gives them for a lab placed over the testbed hosts and deployed by protolab.multilab (one keeper per
host), on the view that multilab's self-check across stitches already uses: commands through each node's own
engine, link changes through the keeper of the host that applies them, counters and settings from the keepers'
states. What a run adds to a deploy:

- open_hosts(): the hosts themselves. Emulated ones (protolab.emuhost) are started in the run's ledger, with the
  run's images copied into their engines and a control link from this machine into their underlay; a
  Prometheus on each host (protolab.hostmon), federated by the run's.
- targets(): each host's Prometheus scrapes its own part's nodes; the run's Prometheus reads them through
  federation, so measurements, recording rules and dashboards query one Prometheus as on one host.
- the self-saturation guard: hosts on this machine's kernel (emulated ones, reached through their namespaces or
  over SSH) share its cores, so the one guard here is theirs, and it counts every such part's nodes, keepers,
  engines and Prometheus as the lab's CPU, not as foreign load; a host with a kernel of its own is guarded there,
  by its keeper (host_guards()).
- timings: placement, the stitches' underlay round trips and the hosts' clock offsets (multilab.deploy), for the
  manifest; a one-way delay between two hosts carries the sum of their clock uncertainties (clock_note()).
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import emuhost, hostmon, multilab, ownership, placement
from .errors import LabError
from .topo import Topology


@dataclass
class Hosts:
    """The testbed hosts of one run."""

    inventory: placement.Inventory
    emulated: list[emuhost.EmulatedHost] = field(default_factory=list)
    proms: dict[str, hostmon.HostPrometheus] = field(default_factory=dict)
    control: str | None = None  # this machine's address on the emulated underlay

    def close(self) -> list[str]:
        """The run's end: federation cleared, the hosts' Prometheus removed where their engines outlive the run
        (remote hosts), every SSH session ended; what could not be removed."""
        from . import hostlink, monitor

        failures = hostmon.forget(monitor.state_dir(), list(self.proms.values()))
        for h in self.inventory.hosts:
            hostlink.close(h)
        return failures

    def manifest(self) -> dict[str, Any]:
        return {"inventory": self.inventory.source, "emulated": [h.name for h in self.emulated],
                "hosts": [h.model_dump(mode="json") for h in self.inventory.hosts], "control_address": self.control,
                "prometheus": {n: p.address for n, p in self.proms.items()}}  # fmt: skip


def open_hosts(emulate: list[str] | None, inventory: Path | None, images: set[str], run_id: str,
               ledger: ownership.Ledger, state_dir: Path, record: Path, cpus: float = 1.0, ssh: bool = False,
               log: Any = print) -> Hosts:  # fmt: skip
    """Start the emulated hosts (or read the inventory), each host's Prometheus, and the federation of them. The
    emulated hosts' inventory is written to `record` (the run's folder keeps it)."""
    emulated: list[emuhost.EmulatedHost] = []
    control = None
    if emulate:
        how = ", reached over SSH" if ssh else ""
        log(f"starting emulated testbed hosts {', '.join(emulate)} (a network namespace and a Docker engine each{how})")
        emulated = emuhost.start(emulate, ledger, ssh=ssh)
        for ref in sorted(images | {hostmon.IMAGE}):
            emuhost.load_image(emulated, ref)
        inventory = emuhost.write_inventory(emulated, record, cpus=cpus)
        control = emuhost.control_address()
    if inventory is None:
        raise LabError("a run over several hosts needs --inventory FILE or --emulate-hosts a,b")
    inv = placement.load_inventory(inventory)
    if not emulate:
        from . import hostlink

        hostlink.copy_images({h.name: hostlink.engine(h) for h in inv.hosts}, images | {hostmon.IMAGE}, log)
    proms = {h.name: hostmon.start(h, run_id, ledger, state_dir) for h in inv.hosts}
    hostmon.wait_ready(list(proms.values()))
    hostmon.write_federation(list(proms.values()), state_dir)
    log(f"testbed hosts: {', '.join(f'{n} (Prometheus {p.address})' for n, p in proms.items())}")
    return Hosts(inv, emulated, proms, control)


class _ReceiveCpu:
    """Lab.receive_cpu's manifest over hosts: each keeper's."""

    def __init__(self, states: dict[str, dict[str, Any]]) -> None:
        self.states = states

    def manifest(self) -> dict[str, Any]:
        return {"hosts": {h: st.get("receive_cpu") for h, st in sorted(self.states.items())}}


class HostsLab(multilab._View):
    """A lab over the run's testbed hosts, as the runner drives a Lab: deploy(), targets(), teardown() and the
    members the runner reads, over multilab's view."""

    def __init__(self, topology: Topology, hosts: Hosts, run_id: str, ledger: ownership.Ledger | None = None) -> None:
        self.whole, self.hosts, self.run_id, self.ledger = topology, hosts, run_id, ledger
        self.actions: list[str] = []
        self.timings: dict[str, Any] = {}
        self.teardown_failures: list[str] = []
        self.cpus = {h.name: h.cpus for h in topology.hosts}
        self.mlab: multilab.MultiLab | None = None

    def deploy(self) -> None:
        t0 = time.monotonic()
        self.mlab = multilab.deploy(self.whole, self.hosts.inventory, out=sys.stdout, ledger=self.ledger)
        super().__init__(self.mlab, self.whole)
        self.receive_cpu = _ReceiveCpu(self.states)
        placed = {k: v for k, v in self.mlab.state().items() if k != "hosts"}  # placement, underlay, clocks
        self.timings = {"deploy_seconds": time.monotonic() - t0, "testbed": placed}
        self.actions.append(
            f"deployed over {len(self.mlab.parts)} testbed hosts: "
            + ", ".join(f"{n} ({len(p.topology.hosts)} nodes)" for n, p in self.mlab.parts.items())
        )

    def node_sysctls(self) -> dict[str, dict[str, str]]:
        from .lab.local import _node_sysctls

        return {h.name: _node_sysctls(h.forwarding, self.whole.ipv6) for h in self.whole.hosts}

    def targets(self, extra_ports: dict[str, list[int]] | None = None) -> list[dict[str, Any]]:
        """Each host's nodes go to that host's Prometheus; the run's own file gets none of them (it federates)."""
        for host, st in self.states.items():
            self.hosts.proms[host].write_targets(hostmon.node_groups(st.get("nodes", []), self.run_id, extra_ports))
        return []

    def clear_targets(self) -> None:
        for p in self.hosts.proms.values():
            p.write_targets([])

    def service_pids(self) -> list[int]:
        """Processes that serve the lab outside its containers' cgroups: the keepers on this machine's kernel
        (their own pids, as their states give them; with their reaped children), counted by the guard as the
        lab's."""
        if self.mlab is None:
            return []
        return [int(self.states[h]["pid"]) for h, p in self.mlab.parts.items() if p.local and "pid" in self.states[h]]

    def cgroup_pids(self) -> list[int]:
        """One process of each container that serves the lab beside its nodes, on this machine's kernel: the
        hosts' Prometheus."""
        from . import hostlink

        out = []
        for name, part in self.mlab.parts.items() if self.mlab else []:
            if not part.local or name not in self.hosts.proms:
                continue
            try:
                c = multilab.docker_client(hostlink.engine(part.host)).containers.get(self.hosts.proms[name].container)
                out.append(int(c.attrs["State"]["Pid"]))
            except Exception:  # noqa: BLE001 (a missing one is not the lab's CPU: nothing to count)
                continue
        return out

    def host_guards(self) -> dict[str, dict[str, Any]]:
        """The self-saturation snapshot of each host with a kernel of its own, taken there by its keeper (the
        guard here covers this machine's kernel and the hosts that share it)."""
        if self.mlab is None:
            return {}
        return {h: p.request("read", what="guard")["value"] for h, p in self.mlab.parts.items() if not p.local}

    def clock_note(self, sender: str, receiver: str) -> dict[str, Any] | None:
        """For a one-way delay from sender to receiver on two hosts: the hosts and the sum of their clock
        offsets' uncertainties (None when both are on one host)."""
        if self.mlab is None:
            return None
        a, b = (self.mlab.placement.node_host.get(n) for n in (sender, receiver))
        if a is None or b is None or a == b:
            return None
        u = [self.mlab.clocks.get(h, {}).get("uncertainty_seconds") for h in (a, b)]
        return {"hosts": [a, b], "uncertainty_seconds": sum(u) if None not in u else None}

    def teardown(self) -> None:
        t0 = time.monotonic()
        self.clear_targets()
        if self.mlab is not None:
            self.teardown_failures += self.mlab.destroy()
        self.timings["teardown_seconds"] = time.monotonic() - t0
