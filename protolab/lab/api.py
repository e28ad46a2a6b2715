"""What the rest of protolab may use of a running lab, wherever it runs: the contract both labs keep.

- `NodeAccess`: what a workload runner uses (commands in a node, its addresses and interfaces, the NIC filters'
  model brought up to the nodes' joins).
- `LinkControl`: a running lab's link state (what the spec configured, what is in force, and changing it).
- `RunningLab`: what the orchestrator, the self-check, quiescence, the guard and faults use: NodeAccess, the
  links, what the lab reads of itself for the manifest, its monitoring targets and its life cycle.

Two labs keep it: `protolab.lab.local.Lab` (one machine) and `protolab.lab.testbed.TestbedLab` (the testbed hosts of
an inventory, over their keepers). Importing this module loads neither: it is types only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from pathlib import Path

    from ..model.impairment import Impairment, LinkImpairment
    from ..topo import Topology
    from .impair import Endpoint

Direction = tuple[str, str]  # (from node, to node)
Setting = tuple["Impairment", str]  # an impairment and where it applies ("sender" or "receiver")


class NodeAccess(Protocol):
    """What a workload runner uses of a running lab."""

    topology: Topology
    cpus: dict[str, float | None]

    @property
    def nodes(self) -> Mapping[str, Any]: ...

    def data_interfaces(self, node: str) -> list[str]: ...

    def node_shell(self, node: str, script: str) -> str: ...

    def exec(self, node: str, cmd: list[str], timeout: float | None = None) -> tuple[int, str, str]: ...

    def ip(self, node: str, intf: int = 0, family: int = 4) -> str: ...

    def sync_nic_filters(self) -> dict[str, list[str]]: ...


class LinkControl(Protocol):
    """A running lab's link state: configured (the spec's), current (in force), and its changes."""

    configured: dict[Direction, Setting]
    current: dict[Direction, Setting]

    def replace(self, a: str, b: str, imp: Impairment, at: str) -> None: ...

    def step(self, link: Direction, direction: str, change: Impairment | None) -> None: ...

    def set_cable(self, link: Direction, state: str) -> None: ...


class Manifested(Protocol):
    """Something of a lab that says itself in the manifest."""

    def manifest(self) -> dict[str, Any]: ...


class RunningLab(NodeAccess, Protocol):
    """What the orchestrator, the self-check, quiescence, the guard and faults use of a running lab."""

    impairments: list[LinkImpairment]
    actions: list[str]
    timings: dict[str, Any]
    teardown_failures: list[str]

    @property
    def links(self) -> Any: ...  # a LinkControl once deployed (Lab: None before)

    @property
    def configured(self) -> dict[Direction, Setting]: ...

    @property
    def current(self) -> dict[Direction, Setting]: ...

    @property
    def applied(self) -> list[dict[str, Any]]: ...

    @property
    def nic_filters(self) -> dict[str, str]: ...

    @property
    def receive_cpu(self) -> Manifested: ...  # whose cgroup the kernel's receive work is charged to

    @property
    def containers(self) -> Mapping[str, Any] | str: ...  # each node's privileges and limits, as granted

    # life cycle: teardown() removes what deploy() made, also after a deploy() that raised part way (its caller
    # calls it then); it never raises (what it could not remove is in teardown_failures)
    def deploy(self) -> None: ...

    def teardown(self) -> None: ...

    # what the lab reads of itself (for the manifest, the guard and the self-check)
    def unshaped(self) -> dict[int | None, set[str]]: ...

    def offloads(self) -> dict[str, dict[str, str]]: ...

    def interface_counters(self) -> dict[str, dict[str, int]]: ...

    def emulator_drops(self) -> dict[str, dict[str, int]]: ...

    def linkem_sockets(self) -> list[tuple[str, Path]]: ...  # the link emulators' control sockets on this machine

    def remote_held(self) -> dict[str, tuple[int, str]]: ...  # what emulators on hosts over SSH hold

    def keepers_helpers_down(self, since: float) -> list[str]: ...  # what the keepers' watches saw

    def ends_here(self) -> list[tuple[str, Endpoint]]: ...  # the link ends in namespaces on this machine

    def namespace_host(self, pid: int | None) -> str | None: ...  # the testbed host of a keeper's namespace

    def node_sysctls(self) -> dict[str, dict[str, str]]: ...

    def service_pids(self) -> list[int]: ...

    def cgroup_pids(self) -> list[int]: ...

    def host_guards(self) -> dict[str, dict[str, Any]]: ...

    def clock_note(self, sender: str, receiver: str) -> dict[str, Any] | None: ...

    # monitoring
    def targets(self, extra_ports: dict[str, list[int]] | None = None) -> list[dict[str, Any]]: ...

    def clear_targets(self) -> None: ...
