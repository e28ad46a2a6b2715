"""A bulk transfer of seed 002's workload (Colella et al.): `tsdus` TSDUs of `tsdu_size` octets from `sender` to
`receiver`, over `stack`:

- `tp4`: the class-4-like transport of agents/tp4 over UDP (`protolab-tp4 recv` on the receiver, `send` on the
  sender), its parameters from the paper's Table 2 or 3 (`table`), one-for-one or selective acknowledgement
  (`ack`), ISO or NBS expedited data (`expedited`) at `expedited_rate` expedited TSDUs per normal one;
- `tcp` and `quic`: a SPIMS bulk_get of `tsdus` units of `tsdu_size` bytes (protolab-spims; the receiver is the
  initiator, the sender the responder). SACK, D-SACK, timestamps and the congestion control are the hosts'
  sysctls (the task's `sysctls`, e.g. {net.ipv4.tcp_sack: '0'}); `congestion` sets the sender's congestion control
  on its socket instead (TCP_CONGESTION), which reaches algorithms the machine has but does not allow as a
  namespace's default (tcp_available_congestion_control but not tcp_allowed_congestion_control: EPERM for the
  sysctl in a namespace; a socket of a process with CAP_NET_ADMIN may still choose them). With `expedited_rate`
  > 0 the responder sends a 16-octet expedited message after every 1/rate-th unit (the rate rounded as tp4 does)
  over `expedited_via`:
  `urgent` (tcp: in the bulk's own stream, its last byte TCP urgent data, MSG_OOB; the initiator keeps urgent
  bytes inline, SO_OOBINLINE. TCP urgent data is one out-of-band byte and a pointer: the message still waits
  behind every unit queued before it, only the urgent pointer goes ahead, and a Go receiver cannot see that),
  `connection` (tcp: a second TCP connection to the same responder carrying only those messages) or `stream`
  (quic: a second QUIC stream of the same connection). Delays are on one clock, CLOCK_MONOTONIC, since both ends
  run on one kernel (protolab-spims checks the boot_id and refuses otherwise), as tp4's stamps are: a unit's from
  the return of the responder's write of it (all of it in the transport's hands, as tp4's sender stamps a TSDU
  when its send buffer takes it whole) to the initiator's read; an expedited message's from the responder's
  asking to send it (a write waiting for room in the socket buffer counts) to its read.

    - {kind: transfer, name: xfer, sender: h1, receiver: h2, stack: tp4, table: 3, ack: selective, tsdus: 20,
       duration: 120s}

`duration` is the transfer's time limit: a transfer that does not complete in it (or at all: TCP at a BER of
1e-3) is recorded with `completed_ratio` 0 and what it did deliver, never stopped with an error, so a long sweep
goes on. A `duration` shorter than the transfer's bytes on the wire at `link_rate` is refused at validation.

Columns (`<task>_`, the paper's Table 1 measures): `efficiency_ratio` (user octets per second over the link's
octets per second; expedited octets are not user octets), `transfer_seconds` (tp4: first TSDU submitted to last
delivered; tcp/quic: the request sent to the last unit read, so one one-way trip more), `delivered_bytes`,
`completed_ratio` (1: every octet arrived, in order and intact, and both ends closed cleanly),
`per_octet_delay_seconds` (mean TSDU delay / TSDU size; tp4: hand-over to delivery; tcp/quic: as above, complete
transfers only), `expedited_delay_seconds`,
`expedited_delay_max_seconds` and `expedited_total` (with expedited data: the expedited messages' mean and largest
delay, hand-over to delivery, and how many arrived), `retransmissions_total` (tp4: DT and ED TPDUs sent again; tcp:
the sender's retransmitted segments; quic: packets the responder's quic-go declared lost, their frames sent again),
`spurious_retransmissions_total` (tp4: duplicate DT/ED TPDUs the receiver got; tcp: D-SACK'd duplicates, None
without SACK), `recv_buffer_avg_bytes` and `recv_buffer_max_bytes` (tp4: user octets held, time-weighted; tcp: the
receiving socket's memory, `ss -m` r, sampled every 0.1 s, truesize rather than octets; quic: stream octets
received, each once, and not yet read by the application, counted from quic-go's tracer, time-weighted),
`send_buffer_max_bytes` (tp4: unacknowledged user octets; tcp: queued send memory, `ss -m` w; of two sockets, the
bulk's), `csum_errors_total` (UDP and TCP InCsumErrors on both hosts: the bit errors the checksums caught),
`dropped_total` (TPDUs the tp4 ends dropped, malformed ones included); and the parameters in force, echoed for the
seed table: `tpdu_bytes` (tcp: the MSS), `window_bytes`, `retransmit_seconds`, `window_timer_seconds`,
`send_buffer_bytes`, `recv_buffer_bytes` (tp4 only), `tsdu_bytes`, `tsdus_total`, `expedited_rate_ratio`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from ..units import BitsPerSecond, Bytes, Seconds, format_duration
from .base import TaskModel, workload

COLUMNS = (
    "efficiency_ratio",
    "transfer_seconds",
    "delivered_bytes",
    "completed_ratio",
    "per_octet_delay_seconds",
    "expedited_delay_seconds",
    "expedited_delay_max_seconds",
    "expedited_total",
    "retransmissions_total",
    "spurious_retransmissions_total",
    "recv_buffer_avg_bytes",
    "recv_buffer_max_bytes",
    "send_buffer_max_bytes",
    "csum_errors_total",
    "dropped_total",
    # the parameters in force
    "tpdu_bytes",
    "window_bytes",
    "retransmit_seconds",
    "window_timer_seconds",
    "send_buffer_bytes",
    "recv_buffer_bytes",
    "tsdu_bytes",
    "tsdus_total",
    "expedited_rate_ratio",
)

TABLE_TPDU_BYTES = {2: 1024, 3: 128}  # agents/tp4 DefaultConfig (Table 2) and Table3Config
TP4_DT_HEADER = 8  # octets of a DT TPDU's header (agents/tp4 DTHeader)
# below the transport, per datagram on the shaped link: UDP 8 + IPv4 20 + Ethernet 14 (HTB shapes frames)
FRAME_OVERHEAD = 42
TCP_WIRE_RATIO = 1514 / 1448  # a full frame per MSS with timestamps
QUIC_WIRE_RATIO = 1.08  # quic-go's packets: headers, frames and its ACK-eliciting padding, roughly
TP4_FIELDS = ("tpdu_size", "window", "retransmit", "window_timer")  # overrides of the table's parameters
MIN_TSDU_BYTES = 12  # agents/tp4 MinTSDUSize: the sender's stamp
EXPEDITED_BYTES = 16  # an expedited TSDU's user data (agents/tp4 MaxExpedited); tcp/quic: the message's payload
EXPEDITED_VIA = {"urgent": "tcp", "connection": "tcp", "stream": "quic"}


@workload("transfer", runner="protolab.workloads.transfer_runner:TransferRunner")
class TransferTask(TaskModel):
    kind: Literal["transfer"]
    sender: str = Field(..., description="host the data leaves (tp4: `protolab-tp4 send`; tcp/quic: the responder)")
    receiver: str = Field(..., description="host the data goes to (tp4: `protolab-tp4 recv`; tcp/quic: initiator)")
    stack: Literal["tp4", "tcp", "quic"] = Field("tp4", description="the transport carrying the transfer")
    tsdus: int = Field(20, ge=1, le=100000, description="TSDUs (tcp/quic: units) to transfer")
    tsdu_size: Bytes = Field(10240, description="octets per TSDU, e.g. 10KiB or 10240")
    link_rate: BitsPerSecond = Field(
        64e3, description="the bottleneck link's rate, e.g. '64kbit': the efficiency's denominator and tp4's pace"
    )
    table: Literal[2, 3] = Field(2, description="tp4: the paper's table whose transport parameters are the defaults")
    ack: Literal["one-for-one", "selective"] = Field("one-for-one", description="tp4: acknowledgement scheme")
    expedited: Literal["iso", "nbs"] = Field("iso", description="tp4: expedited data mechanism (ISO or NBS)")
    expedited_rate: float = Field(
        0.0,
        ge=0,
        le=1,
        description="expedited TSDUs (tcp/quic: messages) per normal TSDU (.33 .14 .08 .0588 .0455 .037 .03; 0: none)",
    )
    expedited_via: Literal["urgent", "connection", "stream"] | None = Field(
        None,
        description="tcp/quic: how expedited messages travel: urgent (tcp urgent data in the bulk's stream), "
        "connection (tcp: a second connection), stream (quic: a second stream); needed with expedited_rate > 0",
    )
    max_transmissions: int = Field(32, ge=1, le=1000, description="tp4: sends of one TPDU before giving up (N)")
    tpdu_size: Bytes | None = Field(None, description="tp4: largest TPDU, header included (default: the table's)")
    window: Bytes | None = Field(None, description="tp4: window in octets (default: the table's)")
    retransmit: Seconds | None = Field(None, description="tp4: retransmission timer (default: the table's)")
    window_timer: Seconds | None = Field(None, description="tp4: window timer (default: the table's)")
    congestion: str | None = Field(
        None,
        pattern=r"^[a-z][a-z0-9_]{0,15}$",
        description="tcp: the sender's congestion control, set on its socket (TCP_CONGESTION), e.g. cubic; "
        "default: the host's net.ipv4.tcp_congestion_control",
    )
    port: int = Field(7400, ge=1024, le=65000, description="UDP (tp4, quic) or TCP port on the listening host")

    @model_validator(mode="after")
    def _runnable(self) -> TransferTask:
        if self.sender == self.receiver:
            raise ValueError("sender and receiver are the same host")
        if self.stack == "tp4" and self.expedited_via is not None:
            raise ValueError(f"expedited_via {self.expedited_via}: tcp's and quic's; tp4's expedited data is chosen "
                             "by `expedited` (iso or nbs)")  # fmt: skip
        if self.congestion is not None and self.stack != "tcp":
            raise ValueError(f"congestion {self.congestion}: tcp's (TCP_CONGESTION on the sender's socket), "
                             f"not {self.stack}'s")  # fmt: skip
        if self.stack != "tp4":
            via = self.expedited_via
            if via is not None and EXPEDITED_VIA[via] != self.stack:
                ways = ", ".join(v for v, s in EXPEDITED_VIA.items() if s == self.stack)
                raise ValueError(f"expedited_via {via} is {EXPEDITED_VIA[via]}'s; {self.stack} sends expedited "
                                 f"data via {ways}")  # fmt: skip
            if self.expedited_rate > 0 and via is None:
                ways = " or ".join(v for v, s in EXPEDITED_VIA.items() if s == self.stack)
                raise ValueError(f"expedited_rate {self.expedited_rate:g} over {self.stack}: say how the messages "
                                 f"travel, expedited_via {ways}")  # fmt: skip
            if self.ack != "one-for-one":
                raise ValueError(f"ack {self.ack}: {self.stack} has no such choice (TCP's SACK is the sysctl "
                                 "net.ipv4.tcp_sack; QUIC always acknowledges selectively)")  # fmt: skip
            tp4_only = [f for f in TP4_FIELDS if getattr(self, f) is not None]
            if tp4_only:
                raise ValueError(f"{', '.join(tp4_only)}: tp4's parameters, not {self.stack}'s")
        if self.tsdu_size < MIN_TSDU_BYTES:
            raise ValueError(f"tsdu_size {self.tsdu_size} B: at least {MIN_TSDU_BYTES} (the sender's stamp)")
        if self.tpdu_size is not None and (self.tpdu_size & (self.tpdu_size - 1) or not 128 <= self.tpdu_size <= 8192):
            raise ValueError(f"tpdu_size {self.tpdu_size} B: a power of two, 128..8192")
        if not self.link_rate > 0:
            raise ValueError("link_rate must be more than 0 bit/s, e.g. '64kbit'")
        need = self.min_seconds()
        if self.duration < need:
            raise ValueError(
                f"duration {format_duration(self.duration)} is shorter than the transfer itself: {self.tsdus} x "
                f"{self.tsdu_size} B over {self.stack} take {need:.1f} s on the wire at {self.link_rate / 1e3:g} "
                f"kbit/s (x{self.wire_ratio():.3f} for headers), before any round trip or loss; give a longer "
                "duration, fewer TSDUs or a faster link"
            )
        return self

    @property
    def tpdu_bytes(self) -> int:
        return self.tpdu_size or TABLE_TPDU_BYTES[self.table]

    def wire_ratio(self) -> float:
        """Bytes on the shaped link per user octet."""
        if self.stack == "tp4":
            return (self.tpdu_bytes + FRAME_OVERHEAD) / (self.tpdu_bytes - TP4_DT_HEADER)
        return TCP_WIRE_RATIO if self.stack == "tcp" else QUIC_WIRE_RATIO

    def min_seconds(self) -> float:
        """The transfer's serialization time at link_rate: a lower bound on how long it takes."""
        return self.tsdus * self.tsdu_size * self.wire_ratio() * 8 / self.link_rate

    def total_bytes(self) -> int:
        return self.tsdus * self.tsdu_size

    def nodes(self) -> list[str]:
        return [self.sender, self.receiver]

    def columns(self) -> list[str]:
        return [f"{self.name}_{c}" for c in COLUMNS]
