"""The testbed hosts of a run over several hosts: `protolab run NAME --emulate-hosts a,b | --inventory FILE`.

open_hosts() gives them: emulated ones (protolab.testbed.emulation) started in the run's ledger, with the run's
images copied into their engines and a control link from this machine into their underlay; or the hosts of an
inventory, the run's images copied to their engines; and a Prometheus on each host (protolab.testbed.federation),
federated by the run's.
The lab over them is protolab.lab.testbed's TestbedLab.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import ownership
from ..errors import LabError
from . import emulation, federation, placement


@dataclass
class Hosts:
    """The testbed hosts of one run."""

    inventory: placement.Inventory
    emulated: list[emulation.EmulatedHost] = field(default_factory=list)
    proms: dict[str, federation.HostPrometheus] = field(default_factory=dict)
    control: str | None = None  # this machine's address on the emulated underlay

    def close(self) -> list[str]:
        """The run's end: federation cleared, the hosts' Prometheus removed where their engines outlive the run
        (remote hosts), every SSH session ended; what could not be removed."""
        from .. import monitor
        from . import reach

        failures = federation.forget(monitor.state_dir(), list(self.proms.values()))
        for h in self.inventory.hosts:
            reach.close(h)
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
    emulated: list[emulation.EmulatedHost] = []
    control = None
    if emulate:
        how = ", reached over SSH" if ssh else ""
        log(f"starting emulated testbed hosts {', '.join(emulate)} (a network namespace and a Docker engine each{how})")
        emulated = emulation.start(emulate, ledger, ssh=ssh)
        for ref in sorted(images | {federation.IMAGE}):
            emulation.load_image(emulated, ref)
        inventory = emulation.write_inventory(emulated, record, cpus=cpus)
        control = emulation.control_address()
    if inventory is None:
        raise LabError("a run over several hosts needs --inventory FILE or --emulate-hosts a,b")
    inv = placement.load_inventory(inventory)
    if not emulate:
        from . import reach

        reach.copy_images({h.name: reach.engine(h) for h in inv.hosts}, images | {federation.IMAGE}, log)
    proms = {h.name: federation.start(h, run_id, ledger, state_dir) for h in inv.hosts}
    federation.wait_ready(list(proms.values()))
    federation.write_federation(list(proms.values()), state_dir)
    log(f"testbed hosts: {', '.join(f'{n} (Prometheus {p.address})' for n, p in proms.items())}")
    return Hosts(inv, emulated, proms, control)
