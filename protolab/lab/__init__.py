"""The lab: a topology running as Mininet nodes in Docker containers on this machine, its links shaped and
impaired (protolab.lab.local's `Lab`); a lab over the testbed hosts of an inventory, through a keeper on each
(protolab.lab.testbed's `TestbedLab`); and the contract the rest of protolab uses of a running lab, wherever it
runs (protolab.lab.api's `RunningLab`), which both keep.

Its mechanisms live here beside them: the link state (linkstate) and the impairment backends (impair), the
measured check of the impaired links (selfcheck), faults and chaos, quiescence between measurements (quiesce,
reassembly), the self-saturation guard (guard), the helper processes and their watch (helperproc), the NIC
filters (nicfilter), where receive work is charged (rxcpu), the lab's firewall rules (firewall) and the VXLAN
stitches between testbed hosts (stitch).

The names below load on first use (PEP 562), so importing the contract (lab.api) loads no implementation.
"""

from .. import lazy

_LOCAL = ("CAPABILITIES", "MEMORY_LIMIT", "MULTICAST_PREFIX", "OFFLOADS", "PIDS_LIMIT", "Lab", "NodeRuntime",
          "container_privileges", "counters_of", "exec_in", "granted", "parse_offloads", "read_offloads")  # fmt: skip
_HOMES = {**dict.fromkeys(_LOCAL, ".local"), "RunningLab": ".api", "NodeAccess": ".api"}
__getattr__ = lazy.names(__name__, globals(), _HOMES)

__all__ = sorted(_HOMES)
