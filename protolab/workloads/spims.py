"""A SPIMS specification (seed 004, Appendix B) as a workload: its benchmark procedures run by `protolab-spims`
between lab hosts over a registered transport, its results reduced the paper's way.

    - {kind: spims, name: rr, spec: "100 from h1 to h2 request_response 32*1000,", transport: tcp, duration: 60s}

FROM names the initiator and TO the responder (default: the task's `initiator` and `responder`). A statement's
`<num runs>` are the measurement runs: each run is `count` data units (request_response, connect_disconnect:
one round trip or connection each; bulk_get: one transfer of `count` units), and the run's value is their mean
time (bulk_get: its throughput at the receiver). Across runs: mean, sd, min, max and normalized sd, as SPIMS's
statistics package reports them (sec. 7.2). `parallel:`/`total:` parts run at once, every replica measured,
with the bytes all of them received over the span from the first start to the last end (Diagram 2's
aggregate); in `background:` the first part is measured and
the others load the path, from `background_lead` before it starts until it ends; `priority background:` runs
that load at nice `background_nice` while the measured processes keep nice 0 (SCHED_OTHER weights: Diagram 1's
priority variant, sec. 7.4).

Columns, per statement (`<task>_` alone for a one-statement spec, else `<task>_s<i>_`):
`_response_{mean,sd,min,max}_seconds` and `_response_p99_seconds` (request_response),
`_connect_..._seconds` (connect_disconnect), `_throughput_..._bytes_per_second` (bulk_get), each with
`_..._ci95_...` (half-width of the mean's 95 % confidence interval, Student's t over the runs) and
`_..._nsd_ratio`; for bulk_get also its throughput at the sender (the responder's first read of its source to
its last write's return, per run), `_sender_throughput_{mean,sd,min,max}_bytes_per_second` and
`_sender_throughput_nsd_ratio`; `_runs_total`, `_timeouts_total`, `_late_total` (exchanges or connections beyond
`late_bound`);
`_aggregate_throughput_mean_bytes_per_second` for parallel bulk_gets and
`_background_throughput_bytes_per_second` for background load.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, field_validator, model_validator

from ..spims import Job, Specification, SpimsSyntaxError, expand, parse
from ..units import Seconds
from .base import Link, TaskModel, host_paths, workload

if TYPE_CHECKING:
    from ..topo import Topology

# protolab-spims's registry (agents/transport), as agents/transport/names.txt lists it (tests on both sides hold
# the three equal); `protolab-spims transports` says which this kernel has
TRANSPORTS = ("tcp", "tls", "udp", "quic", "mptcp", "sctp")
QUANTITY = {  # application type -> (column quantity, unit)
    "request_response": ("response", "seconds"),
    "connect_disconnect": ("connect", "seconds"),
    "bulk_get": ("throughput", "bytes_per_second"),
}
STATS = ("mean", "sd", "min", "max")


def aggregate_composer(jobs: list[Any]) -> bool:
    """Whether a statement's measured bulk_gets are reported as one aggregate too: more than one of them, or a
    `parallel:` or `total:` composite of any number (its N = 1 is a point of the same curve)."""
    bulk = [j for j in jobs if j.type == "bulk_get"]
    return len(bulk) > 1 or any(j.composer in ("parallel", "total") for j in bulk)


@workload("spims", runner="protolab.workloads.spims_runner:SpimsRunner")
class SpimsTask(TaskModel):
    kind: Literal["spims"]
    spec: str = Field(..., description="a SPIMS specification (Appendix B), e.g. '100 rr 32*1000,'")
    transport: str = Field("tcp", description=f"the protocol implementation: {', '.join(TRANSPORTS)}")
    initiator: str | None = Field(None, description="host of the initiators when the spec has no FROM")
    responder: str | None = Field(None, description="host of the responders when the spec has no TO")
    family: Literal["ipv4", "ipv6"] = Field("ipv4", description="the responder's IPv4 address or its IPv6 twin")
    late_bound: Seconds = Field(0.05, description="a round trip or connection longer than this counts as late")
    timeout: Seconds = Field(10.0, description="one exchange's limit; past it the run counts a timeout")
    background_nice: int = Field(10, ge=1, le=19, description="nice of background load under `priority`")
    background_lead: Seconds = Field(1.0, description="background load runs this long before the measured part")
    port: int = Field(7100, ge=1024, le=65000, description="first responder port (one per initiator)")
    options: dict[str, str] = Field(
        default_factory=dict,
        description="transport knobs for every initiator, e.g. {user_timeout: 2s, congestion: cubic}",
    )
    dscp: int | None = Field(
        None, ge=0, le=63, description="DSCP of the measured parts' packets both ways (46: EF), e.g. for a dscp queue"
    )
    seed: int = Field(1, description="seed of the size and delay distributions")

    @field_validator("spec")
    @classmethod
    def _parses(cls, v: str) -> str:
        try:
            parse(v)
        except SpimsSyntaxError as exc:  # names line, column and what was expected
            raise ValueError(str(exc)) from None
        return v

    @field_validator("transport")
    @classmethod
    def _known(cls, v: str) -> str:
        if v not in TRANSPORTS:
            raise ValueError(f"unknown transport {v!r}; registered: {', '.join(TRANSPORTS)}")
        return v

    @model_validator(mode="after")
    def _runnable(self) -> SpimsTask:
        for job in self.jobs():
            if job.initiator_host is None or job.responder_host is None:
                raise ValueError(f"job {job.id}: no FROM/TO in the spec and no initiator/responder in the task")
            if job.initiator_host == job.responder_host:
                raise ValueError(f"job {job.id}: initiator and responder are the same host")
            if job.reply_delay_s is not None:
                raise ValueError(f"job {job.id}: a responder delay (the second timing) is not supported yet")
            for side, end in (("source", job.source), ("destination", job.destination)):
                if end.access == "file" and not (end.path or "").startswith("/"):
                    raise ValueError(f"job {job.id}: {side} FILE {end.path!r}: a path in the node's filesystem from /")
            if (
                job.type == "connect_disconnect"
                and job.source.access != "memory"
                or (job.type != "bulk_get" and job.destination.access != "memory")
            ):
                raise ValueError(f"job {job.id}: {job.type} moves data from and to memory only (FILE and VIRTUAL "
                                 "MEMORY are for bulk_get, and for request_response's requests)")  # fmt: skip
            if job.count is None and job.amount_bytes is None:
                raise ValueError(f"job {job.id}: give a count (SIZE*COUNT) or an amount of data")
            if job.amount_bytes is not None and job.size_bytes.name != "constant":
                raise ValueError(f"job {job.id}: an amount of data needs a constant data unit size")
            if len(self.jobs()) > 32:
                raise ValueError(f"{len(self.jobs())} initiator-responder pairs: more than 32")
        return self

    def parsed(self) -> Specification:
        return parse(self.spec)

    def jobs(self) -> list[Job]:
        """The spec's jobs with the task's hosts filled in where the spec names none."""
        return [replace(j, initiator_host=j.initiator_host or self.initiator,
                        responder_host=j.responder_host or self.responder)
                for j in expand(self.parsed(), self.transport)]  # fmt: skip

    def address_family(self) -> int:
        return 6 if self.family == "ipv6" else 4

    def nodes(self) -> list[str]:
        hosts = [h for j in self.jobs() for h in (j.initiator_host, j.responder_host) if h]
        return list(dict.fromkeys(hosts))

    def paths(self, topology: Topology) -> dict[str, list[list[Link]]]:
        """Each initiator's path to its responder's first interface (the address it is sent to)."""
        pairs = dict.fromkeys((j.initiator_host, j.responder_host) for j in self.jobs())
        return {f"{a}->{b}": host_paths(topology, a, b) for a, b in pairs if a and b and a != b}

    def prefix(self, group: int) -> str:
        return self.name if len(self.parsed().statements) == 1 else f"{self.name}_s{group}"

    def columns(self) -> list[str]:
        cols: list[str] = []
        jobs = self.jobs()
        for g in sorted({j.group for j in jobs}):
            p = self.prefix(g)
            measured = [j for j in jobs if j.group == g and j.role == "measured"]
            for kind in dict.fromkeys(j.type for j in measured):
                q, unit = QUANTITY[kind]
                cols += [f"{p}_{q}_{s}_{unit}" for s in STATS] + [f"{p}_{q}_ci95_{unit}", f"{p}_{q}_nsd_ratio"]
                if kind == "request_response":
                    cols.append(f"{p}_response_p99_seconds")
                if kind == "bulk_get":
                    cols += [f"{p}_sender_{q}_{s}_{unit}" for s in STATS] + [f"{p}_sender_{q}_nsd_ratio"]
            cols += [f"{p}_runs_total", f"{p}_timeouts_total", f"{p}_late_total"]
            if aggregate_composer(measured):
                cols.append(f"{p}_aggregate_throughput_mean_bytes_per_second")
            if any(j.group == g and j.role == "background" for j in jobs):
                cols.append(f"{p}_background_throughput_bytes_per_second")
        return cols + [f"{self.name}_{h}_cpu_ratio" for h in self.nodes()]
