"""The simulated DIS host (agents/dishost, `protolab-dishost` in the node image): one sender, one receiver.

The sender generates messages (the thesis's 2-byte message address + one DIS PDU) for `entities` entities at
`messages_per_second`, spread uniformly over `groups` multicast groups; the receiver joins `share` of them
(groups 0..round(share x groups)-1, real IGMP joins) and decodes what arrives. With sender == receiver the
messages go over the loopback (unicast 127.0.0.1) instead.

Columns (per task): `<task>_messages_per_second` and `<task>_packets_per_second` received (per second of the
sender's run), `<task>_sent_packets_per_second`, `<task>_loss_ratio` with
`<task>_sent_total` (messages sent to the joined groups) and `<task>_lost_total`, `<task>_delay_p50_seconds`,
`<task>_delay_p99_seconds` and `<task>_delay_mean_seconds` (one-way, from the DIS timestamp set before the
encoding to the delivery after the decoding, so a transfer syntax's encoding and decoding are inside it) with
`<task>_delay_sd_seconds`, `<task>_delay_cov_ratio` (sd / mean, seed 000's C.o.V.) and
`<task>_delay_ci99_seconds` (the half-width of the mean's 99 % interval),
`<task>_message_bytes` (a datagram's mean UDP payload: the 2-byte message address and the encoded PDU),
`<task>_encode_mean_seconds` and `<task>_decode_mean_seconds` (each PDU's encoding on the sender and decoding
on the receiver, timed in place: the codecs' CPU as the lab's traffic pattern leaves their caches),
`<task>_skinny_match_ratio` (skinny: the share of PDUs its pre-encoded octets matched, the rest parsed as BER),
`<task>_pdu_integers`, `<task>_pdu_reals` and `<task>_pdu_octet_strings` (a received message's mean
composition: the leaves of the DIS v6 ASN.1 module, as seed 000's Table 2 counts them), `<task>_dropped_total`
(datagrams the receiver could not use), `<task>_kernel_drops_total` (UDP datagrams the receiver's network
namespace dropped before a socket read them, /proc/net/snmp's Udp InErrors over its window),
`<task>_reasm_fails_total` (Ip ReasmFails over the same window: fragments of datagrams larger than the MTU
refused or expired in reassembly; past `ipfrag_high_thresh` every new fragment is refused), and the receiver's
CPU two ways: `<task>_cpu_cgroup_ratio` (its container's cgroup CPU without the work loop's thread, in cores)
and `<task>_cpu_busyloop_ratio` (the thesis's method: share of a calibrated work loop's throughput lost while
receiving; needs `busy_loop: true`), each with its floor:
`<task>_cpu_cgroup_idle_ratio` (the same cgroup figure during calibration, no traffic: the node's agent and
the runtime) and `<task>_cpu_busyloop_noise_ratio` (|1 - second calibration / first|, both without traffic;
the lost share is signed, and a value within this noise is none).

With `cpu` set, the receiver's process is pinned there and so is the kernel's receive work for its data
interfaces (RPS: rps_cpus of each rx queue), so that IP/UDP processing and the filtering of multicast groups
it did not join compete with the work loop on that CPU, as on the thesis's one-CPU hosts. Without RPS a veth
delivers in the sending CPU's softirq, where the receiver's loop and cgroup cannot see it. Without `cpu`,
RPS is off.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from .. import naming
from ..units import Bytes, Seconds
from .base import TaskModel, workload

COLUMNS = (
    "messages_per_second",
    "packets_per_second",
    "sent_packets_per_second",
    "loss_ratio",
    "sent_total",
    "lost_total",
    "delay_p50_seconds",
    "delay_p99_seconds",
    "delay_mean_seconds",
    "delay_sd_seconds",
    "delay_ci99_seconds",
    "delay_cov_ratio",
    "message_bytes",
    "encode_mean_seconds",
    "decode_mean_seconds",
    "skinny_match_ratio",
    "pdu_integers",
    "pdu_reals",
    "pdu_octet_strings",
    "dropped_total",
    "kernel_drops_total",
    "reasm_fails_total",
    "cpu_cgroup_ratio",
    "cpu_busyloop_ratio",
    "cpu_cgroup_idle_ratio",
    "cpu_busyloop_noise_ratio",
)


@workload("dis", runner="protolab.workloads.dis_runner:DisRunner")
class DisTask(TaskModel):
    kind: Literal["dis"]
    sender: str = Field(..., description="host running `protolab-dishost send`")
    receiver: str = Field(..., description="host running `protolab-dishost recv` (same as sender: loopback)")
    messages_per_second: float = Field(..., gt=0, le=1e6, description="offered messages (= packets) per second")
    arrival: Literal["constant", "poisson"] = "constant"
    size: Bytes | None = Field(None, description="UDP payload per message, 62..8192 B (default: the PDU's size)")
    entities: int = Field(100, ge=1, le=65535)
    mix: str | None = Field(None, description="PDU mix, e.g. 'entity_state=92,fire=3,detonation=3,collision=2'")
    heartbeat: bool = Field(
        True, description="an Entity State PDU when an entity's 5 s heartbeat is due (false: only the mix's types)"
    )
    articulations: int = Field(
        0, ge=0, le=255, description="articulation parameters per Entity State PDU (4 integers, an 8-octet value each)"
    )
    groups: int = Field(1, ge=1, le=65536, description="multicast groups the traffic is spread over")
    share: float = Field(1.0, gt=0, le=1, description="share of the groups the receiver joins")
    per_group: int | None = Field(
        None, ge=1, le=65536, description="message addresses per packet address (default 32, fewer when groups > 2048)"
    )
    busy_loop: bool = Field(True, description="run the thesis's calibrated work loop on the receiver")
    calibrate: Seconds = Field(2.0, description="work loop calibration before the receiver joins")
    port: int = Field(3000, ge=1024, le=65535)
    cpu: int | None = Field(
        None,
        ge=0,
        description="pin the receiver (work loop, receiving, and by RPS the kernel's receive work) to this CPU, "
        "like the thesis's one-CPU hosts",
    )

    syntax: Literal["raw", "ber", "der", "uper", "per", "skinny"] = Field(
        "raw",
        description="transfer syntax of the PDUs at both ends (agents/syntax): raw (DIS's own bytes), ASN.1 BER, "
        "DER or unaligned PER (asn1c), aligned PER (free5gc/aper), or skinny (pre-encoded invariant octets, BER "
        "fallback)",
    )

    @model_validator(mode="after")
    def _fits(self) -> DisTask:
        if self.syntax != "raw" and self.size is not None:
            raise ValueError(f"size: a {self.syntax} PDU goes out at its encoded size; give no size with a syntax")
        if self.size is not None and not 62 <= self.size <= 8192:
            raise ValueError(f"size {self.size} B: a message is 62..8192 bytes (address + the smallest PDU .. 8192)")
        if self.groups * self.messages_per_group > 65536:
            raise ValueError(
                f"{self.groups} groups x {self.messages_per_group} message addresses per group exceed the 65536 "
                "two-byte message addresses"
            )
        return self

    @property
    def messages_per_group(self) -> int:
        return self.per_group or min(32, 65536 // self.groups)

    @property
    def joined(self) -> int:
        return min(self.groups, max(1, int(self.share * self.groups + 0.5)))

    def nodes(self) -> list[str]:
        return [self.sender, self.receiver]

    def scrape_ports(self) -> dict[str, list[int]]:
        """Prometheus targets of the two processes (their /metrics while they run): node -> ports."""
        out: dict[str, list[int]] = {self.receiver: [naming.DIS_PORT]}
        out.setdefault(self.sender, []).append(naming.DIS_PORT + 1)
        return out

    def columns(self) -> list[str]:
        return [f"{self.name}_{c}" for c in COLUMNS]
