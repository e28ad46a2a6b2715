"""Request/response round trips between two hosts for as long as the phase lasts, every one timed: SCIOP's
measurement (seed 001) through protolab-spims, on one path, on both at once (MPTCP) or redundantly (the same
request on both paths, the first reply wins: the application's upper bound).

    - {kind: request_response, name: rr, client: h1, server: h2, transport: mptcp, mptcp: fullmesh,
       size: 1024B, duration: 20s}

Paths: the client sends to the server's first interface (path A on dual_homed). `transport: mptcp` with
`mptcp: backup|fullmesh` configures the in-kernel path manager on both hosts for a second subflow over their
second interfaces (the server signals its second address; the client's second address is a `subflow`
endpoint, `backup` while path A works, or `fullmesh`); `redundant: true` sends every request on both paths
over two connections of `transport`. `rto_min` sets the route option on both hosts' routes (TCP and MPTCP
subflows retransmit sooner than the kernel's 200 ms); like every task, `sysctls` sets network sysctls in both hosts'
namespaces (e.g. `net.mptcp.stale_loss_cnt`, `net.ipv4.tcp_retries2`) for the phase; everything is put back after
it. `options` are the initiator's socket knobs (`protolab-spims transports --knobs`: e.g. `user_timeout`,
TCP_USER_TIMEOUT; a connection it ends ends the task, the agent does not reconnect). The tuning is recorded in
raw/tasks under `tool.setup.tuning`: rto_min, the sysctls as read back, the options, and each connection's
knobs as in force.

Columns: `<task>_rtt_{mean,p50,p99,p999,max}_seconds` (the max counts a timed-out round trip as `timeout`),
`<task>_exchanges_total`, `<task>_late_total` and `<task>_late_ratio` (round trips longer than `late_bound`,
50 ms: SCIOP's goal), `<task>_timeouts_total`, and with link faults in the phase
`<task>_failover_max_seconds`: for each link going down, how long after it the first reply came (the exchange
in flight completing late, or timing out and the next one answering; 0 when nothing in flight was later than
`late_bound`). Raw series `<task>_late_rtt_seconds` (every late round trip, at its start) and
`<task>_block_max_seconds` (the maximum of each block of `block` round trips: Fig. 8's per-experiment maxima).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field, model_validator

from ..units import Bytes, Seconds
from .base import ClientServerTask, Link, host_paths, workload
from .spims import TRANSPORTS

if TYPE_CHECKING:
    from ..topo import Topology


@workload("request_response", runner="protolab.workloads.request_response_runner:RequestResponseRunner")
class RequestResponseTask(ClientServerTask):
    kind: Literal["request_response"]
    client: str = Field(..., description="host that sends the requests")
    server: str = Field(..., description="host that answers")
    transport: str = Field("tcp", description=f"the protocol implementation: {', '.join(TRANSPORTS)}")
    mptcp: Literal["backup", "fullmesh"] | None = Field(
        None, description="mptcp: a second subflow over the hosts' second interfaces, as a backup or both in use"
    )
    redundant: bool = Field(False, description="every request on both paths (two connections); first reply wins")
    size: Bytes = Field(64, description="request and response payload, e.g. '1024B'")
    interval: Seconds | None = Field(None, description="pause between round trips (default: none, back to back)")
    late_bound: Seconds = Field(0.05, description="a round trip longer than this is late (SCIOP's goal: 50ms)")
    timeout: Seconds = Field(5.0, description="one round trip's limit; past it the exchange counts as a timeout")
    rto_min: Seconds | None = Field(None, description="route option rto_min on both hosts, e.g. '10ms'")
    options: dict[str, str] = Field(default_factory=dict, description="transport knobs, e.g. {user_timeout: 2s}")
    block: int = Field(10000, ge=10, description="round trips per block whose maximum is kept (Fig. 8)")
    port: int = Field(7200, ge=1024, le=65000)
    family: Literal["ipv4", "ipv6"] = Field("ipv4", description="the server's IPv4 addresses or their IPv6 twins")

    @model_validator(mode="after")
    def _sane(self) -> RequestResponseTask:
        if self.transport not in TRANSPORTS:
            raise ValueError(f"unknown transport {self.transport!r}; registered: {', '.join(TRANSPORTS)}")
        if self.mptcp and self.transport != "mptcp":
            raise ValueError(f"mptcp: {self.mptcp} needs transport: mptcp")
        if self.redundant and self.mptcp:
            raise ValueError("redundant sends on two connections itself; give mptcp or redundant, not both")
        if self.transport == "udp" and self.size > 65503:
            raise ValueError("udp carries at most 65503 bytes a message")
        return self

    def two_paths(self) -> bool:
        return bool(self.mptcp) or self.redundant

    def paths(self, topology: Topology) -> dict[str, list[list[Link]]]:
        """To the server's first interface (path A); with two paths also to its second (path B), as for SCTP,
        whose ends bind every address (a multihomed association)."""
        both = self.two_paths() or self.transport == "sctp"
        return {
            f"{self.client}->{self.server}": host_paths(topology, self.client, self.server, (0, 1) if both else (0,))
        }

    def columns(self) -> list[str]:
        n = self.name
        return [*(f"{n}_rtt_{s}_seconds" for s in ("mean", "p50", "p99", "p999", "max")), f"{n}_exchanges_total",
                f"{n}_late_total", f"{n}_late_ratio", f"{n}_timeouts_total", f"{n}_failover_max_seconds"]  # fmt: skip
