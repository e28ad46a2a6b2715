"""The bundle converter (thesis Study 3, sec. 3.4; `protolab-converter` in the node image) and its baseline.

A `converter` task drives every node of a converter_lan topology by its role: on the router (role router) the
outside message source and sink (`protolab-converter wan`: `wan_messages_per_second` messages in all, one per IP
multicast packet, spread over `wan_groups` groups every host wants, like the COMNET model's all-host traffic);
on each simulation host (role host) the inside load: `host_messages_per_second` messages, each to `to` random
other hosts. Where the topology has converters (roles converter-c1 and converter-c2) the hosts run the host
interface (`h`: bundles to and from C_2), C_2 the central converter (`c2`) and each C_1 the router interface
(`c1`: IP multicast to and from the router, bundles to and from C_2); without converters the hosts send and
receive one message per IP multicast packet (`host`, the baseline). Messages are `size` bytes (the thesis's
150: a 2-byte message address + payload).

Columns (per task `<task>_`), over the phase (the processes' own run; CPU and byte counters read before and
after it from the host, outside the containers):

- `host_cpu_ratio`: mean over the simulation hosts of their container's cgroup CPU, in cores (1.0 = one core
  busy); `host_cpu_max_ratio` the busiest host. `host_cpu_share_ratio`: the same as a share of each host's CPU
  budget (`cpus`), or of one core without a budget: the thesis's "Host %" of a one-CPU host.
- `c1_cpu_ratio` / `c1_cpu_share_ratio` (mean over the C_1s) and `c2_cpu_ratio` / `c2_cpu_share_ratio`:
  the same for the converters (none in the baseline layouts).
- `delay_mean_seconds`, `delay_p99_seconds`: one-way message delay from the sender's timestamp to the receiving
  host's application, over every message the hosts received (mean weighted by count; p99 the largest of the
  hosts' p99s, an upper bound of the pooled p99). `delivered_messages_per_second`: messages a host received per
  second (mean over hosts). `loss_ratio` = lost_total / expected_total, where a host expects every WAN message
  and every host message addressed to it; `reflected_total`: own messages a host got back (must be 0).
- `host_rx_packets_per_second`: packets per second arriving at a host's interface (mean over hosts): the
  interrupts the bundling saves. `wan_sent_messages_per_second`, `host_sent_messages_per_second` (per host):
  the load actually offered.
- `util_host_link_ratio`, `util_c1_router_ratio`, `util_c1_c2_ratio`, `util_c2_host_ratio`: link utilisation of
  each segment (the topology's link `segment`s; Tables 4-14, 4-16, 4-18, 4-20): on a hub the bits through its
  shared medium (every frame once, both directions) over its capacity; on a switch, per link, the bits in both
  directions over the link's rate, mean over the segment's links (the thesis's C1-Router figures sum both
  directions over one capacity too). Bytes are Ethernet frames without preamble and FCS, as the shapers count
  them. None where the layout has no such segment.
- `dropped_total`: messages the converters dropped (malformed, congestion, overflow; all reasons).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from .. import naming
from ..units import Bytes, Seconds
from .base import TaskModel, workload

COLUMNS = (
    "host_cpu_ratio",
    "host_cpu_max_ratio",
    "host_cpu_share_ratio",
    "c1_cpu_ratio",
    "c1_cpu_share_ratio",
    "c2_cpu_ratio",
    "c2_cpu_share_ratio",
    "delay_mean_seconds",
    "delay_p99_seconds",
    "delivered_messages_per_second",
    "loss_ratio",
    "expected_total",
    "lost_total",
    "reflected_total",
    "host_rx_packets_per_second",
    "wan_sent_messages_per_second",
    "host_sent_messages_per_second",
    "util_host_link_ratio",
    "util_c1_router_ratio",
    "util_c1_c2_ratio",
    "util_c2_host_ratio",
    "dropped_total",
    "priority_loss_ratio",
    "retransmitted_total",
    "duplicates_total",
)


def parse_load(text: str) -> float:
    """'250' -> 250.0, '1k' -> 1000.0 (messages per second, the thesis's table headers)."""
    return float(text[:-1]) * 1000 if text.endswith("k") else float(text)


SEGMENTS = ("host_link", "c1_router", "c1_c2", "c2_host")  # the util_<segment>_ratio columns


@workload("converter", runner="protolab.workloads.converter_runner:ConverterRunner")
class ConverterTask(TaskModel):
    kind: Literal["converter"]
    router: str = Field("r1", description="the WAN router: runs the outside message source and sink")
    load: str | None = Field(
        None,
        pattern=r"^\d+(\.\d+)?k?/\d+(\.\d+)?k?$",
        description="the thesis's notation (sec. 4.4.1): messages/s each host originates / messages/s from the WAN, "
        "e.g. '250/1k' (instead of the two fields below)",
    )
    host_messages_per_second: float | None = Field(
        None, ge=0, le=1e5, description="inside messages each host originates"
    )
    wan_messages_per_second: float | None = Field(None, ge=0, le=1e6, description="outside messages from the WAN")
    size: Bytes = Field(150, description="bytes per message: the 2-byte message address + payload (thesis: 150)")
    arrival: Literal["constant", "poisson"] = Field(
        "poisson", description="inter-arrival times (the COMNET model's are exponential: poisson)"
    )
    to: int = Field(2, ge=1, le=15, description="random other hosts each host message is addressed to")
    wan_groups: int = Field(8, ge=1, le=4096, description="IP multicast groups of the WAN traffic (all hosts want all)")
    interval: Seconds = Field(0.005, description="bundling interval of C_1, C_2 and the host interfaces")
    mtu: Bytes = Field(150, description="C_1's packets toward the router: one message each at 150 B, as the model")
    max_bundle: Bytes | None = Field(None, description="C_2's largest bundle (default: the converter's)")
    priority: float = Field(
        0.1, ge=0, le=1, description="share of the messages (hosts' and the WAN's) sent with the priority flag"
    )
    reliable: bool = Field(
        False,
        description="acknowledged delivery of priority messages between C_2 and the hosts (sec. 3.4.2): a bundle "
        "with priority messages is numbered, acknowledged, resent to the hosts that did not acknowledge it",
    )
    port: int = Field(4000, ge=1024, le=65000, description="UDP port of the converters and hosts (+1, +2 in use)")
    base: str = Field(
        "239.193.0.0", pattern=r"^2(2[4-9]|3[0-9])\.\d+\.\d+\.\d+$", description="first IP multicast group"
    )
    tail: Seconds = Field(1.0, description="the receiving side runs this much longer than the sources")

    @model_validator(mode="after")
    def _fits(self) -> ConverterTask:
        if self.load is not None:
            host, wan = (parse_load(x) for x in self.load.split("/"))
            for field, value in (("host_messages_per_second", host), ("wan_messages_per_second", wan)):
                given = getattr(self, field)
                if given is not None and given != value:
                    raise ValueError(f"load {self.load!r} says {field} {value:g}, the task says {given:g}")
                setattr(self, field, value)
        if self.host_messages_per_second is None or self.wan_messages_per_second is None:
            raise ValueError("give the load: `load: 250/1k`, or host_messages_per_second and wan_messages_per_second")
        if not 8 <= self.size <= 1400:
            raise ValueError(f"size {self.size} B: a message is 8..1400 bytes (2-byte address, timestamp, payload)")
        if self.mtu < self.size:
            raise ValueError(f"mtu {self.mtu} B is smaller than a message ({self.size} B)")
        if self.max_bundle is not None and self.max_bundle < self.size + 3:
            raise ValueError(f"max_bundle {self.max_bundle} B cannot hold one {self.size} B message and its trailer")
        return self

    def nodes(self) -> list[str]:
        return [self.router]

    def scrape_ports(self) -> dict[str, list[int]]:
        """Prometheus targets while the task runs: every node of the lab runs one converter process (router,
        hosts, converters), each serving /metrics on naming.CONVERTER_PORT ("*": every node of the lab)."""
        return {"*": [naming.CONVERTER_PORT]}

    def columns(self) -> list[str]:
        return [f"{self.name}_{c}" for c in COLUMNS]
