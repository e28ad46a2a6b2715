"""iperf3 between two container hosts: TCP throughput, or UDP at an offered rate (packets/s, loss).

Columns: `<task>_goodput_bits_per_second` (application payload delivered, from the receiver's report),
`<task>_packets_per_second`, `<task>_loss_ratio` and the datagram counts `<task>_{sent,lost}_total` (for
binomial checks) for UDP, with `<task>_handshake_retries_total` (iperf3 3.12 opens a UDP test with one datagram
each way; on a lossy link it is restarted, and the measurement window moves to the attempt that ran) and
`<task>_sender_ahead_seconds` (the most the sender ran ahead of its rate: iperf3 keeps its average from the test's
start, so a start held up by a lost control message comes out as one burst; beyond noise the measurement is invalid),
`<task>_retransmits_total` for TCP.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field, model_validator

from ..units import BitsPerSecond, Bytes
from .base import ClientServerTask, workload

if TYPE_CHECKING:
    pass


@workload("iperf3", runner="protolab.workloads.iperf3_runner:Iperf3Runner")
class Iperf3Task(ClientServerTask):
    kind: Literal["iperf3"]
    client: str = Field(..., description="sending host")
    server: str = Field(..., description="receiving host (runs iperf3 -s)")
    protocol: Literal["tcp", "udp"] = "tcp"
    rate: BitsPerSecond | None = Field(None, description="UDP: offered payload rate (required); TCP: a cap")
    length: Bytes | None = Field(None, description="UDP datagram / TCP write size in bytes")
    port: int = Field(5201, ge=1024, le=65535)
    overdrive: float = Field(1.0, ge=0.1, le=10, description="offer rate x this (e.g. 1.2 to saturate a shaper)")
    family: Literal["ipv4", "ipv6"] = Field("ipv4", description="send to the server's IPv4 address or its IPv6 twin")

    @model_validator(mode="after")
    def _udp_needs_rate(self) -> Iperf3Task:
        if self.protocol == "udp" and self.rate is None:
            raise ValueError("UDP needs a rate (e.g. '10Mbit'): iperf3 would otherwise offer only 1 Mbit/s")
        return self

    def columns(self) -> list[str]:
        cols = [f"{self.name}_goodput_bits_per_second"]
        if self.protocol == "udp":
            cols += [f"{self.name}_packets_per_second", f"{self.name}_loss_ratio"]
            cols += [f"{self.name}_sent_total", f"{self.name}_lost_total", f"{self.name}_handshake_retries_total"]
            cols += [f"{self.name}_sender_ahead_seconds"]
        else:
            cols += [f"{self.name}_retransmits_total"]
        return cols
