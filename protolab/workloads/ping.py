"""ICMP echo between two container hosts: the RTT distribution, loss, and outages with their edges.

Columns: `<task>_rtt_{mean,p50,p99,stddev}_seconds`, `<task>_{sent,lost}_total`, `<task>_loss_ratio`,
`<task>_outages_total` with their summed length `<task>_outage_seconds`, and
`<task>_outage_edge_error_max_seconds` when the phase has link down/up events (how far the outage the probes
saw starts and ends from the moments the fault schedule cut and restored the link). Every reply is also kept
as a raw series `<task>_rtt_seconds` for timeline plots.

Outage edges are in send time: a probe's send time is its reply time minus its RTT; lost probes are placed by
interpolating between answered neighbours (ping sends on a fixed interval). An outage starts halfway between
the last answered probe and the first lost one and ends halfway between the last lost and the next answered
one, so the edge error is bounded by half the interval plus scheduling noise.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field, model_validator

from ..units import Bytes, Seconds
from .base import ClientServerTask, workload

if TYPE_CHECKING:
    pass


@workload("ping", runner="protolab.workloads.ping_runner:PingRunner")
class PingTask(ClientServerTask):
    kind: Literal["ping"]
    client: str = Field(..., description="host that sends the echo requests")
    server: str = Field(..., description="host that answers")
    interval: Seconds = Field(0.01, description="between requests, at least 2ms (e.g. '10ms')")
    size: Bytes = Field(56, description="ICMP payload bytes (ping -s)")
    timeout: Seconds = Field(2.0, description="how long to wait for the last replies")
    family: Literal["ipv4", "ipv6"] = Field("ipv4", description="send to the server's IPv4 address or its IPv6 twin")

    @model_validator(mode="after")
    def _sane(self) -> PingTask:
        if self.interval < 0.002:
            raise ValueError("interval below 2ms: ping refuses to flood faster than that")
        if self.duration / self.interval > 100_000:
            raise ValueError("more than 100000 requests: use a longer interval")
        return self

    def count(self) -> int:
        return max(1, round(self.duration / self.interval))

    def columns(self) -> list[str]:
        n = self.name
        return [
            f"{n}_rtt_mean_seconds",
            f"{n}_rtt_p50_seconds",
            f"{n}_rtt_p99_seconds",
            f"{n}_rtt_stddev_seconds",
            f"{n}_sent_total",
            f"{n}_received_total",
            f"{n}_lost_total",
            f"{n}_loss_ratio",
            f"{n}_outages_total",
            f"{n}_outage_seconds",
            f"{n}_outage_edge_error_max_seconds",
        ]
