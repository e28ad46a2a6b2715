"""The lab: a topology running as Mininet nodes in Docker containers on this machine, its links shaped and
impaired (protolab.lab.local's `Lab`), and what the rest of protolab uses of it.

Its mechanisms (the link state, impairment backends, the self-check, faults, quiescence ...) are still
top-level modules of protolab; they move in here one at a time.
"""

from .local import (
    CAPABILITIES,
    MEMORY_LIMIT,
    MULTICAST_PREFIX,
    OFFLOADS,
    PIDS_LIMIT,
    Lab,
    NodeRuntime,
    container_privileges,
    counters_of,
    exec_in,
    granted,
    parse_offloads,
    read_offloads,
)

__all__ = [
    "CAPABILITIES",
    "MEMORY_LIMIT",
    "MULTICAST_PREFIX",
    "OFFLOADS",
    "PIDS_LIMIT",
    "Lab",
    "NodeRuntime",
    "container_privileges",
    "counters_of",
    "exec_in",
    "granted",
    "parse_offloads",
    "read_offloads",
]
