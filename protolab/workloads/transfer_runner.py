"""Running a transfer task: tp4 with `protolab-tp4 recv`/`send`, tcp and quic with a SPIMS bulk_get.

tp4: the receiver starts first (in a thread) and is seen listening (`ss -Hlnu`), then the sender runs; each
prints one JSON summary, read here whether or not the transfer completed (exit 1: it did not). Both get
`--overhead 42` (UDP, IPv4 and the Ethernet header: HTB shapes whole frames) so the sender paces at the link's
rate, not 9 % above it with the tool's default 28.

tcp/quic: `protolab-spims serve` on the sender, `protolab-spims run` of one bulk_get on the receiver, interrupted
(SIGINT: it reports what it got) at the task's duration; the job asks for each unit's delay, the responder's
counters and any expedited messages (`bulk_job`). For TCP one shell loop per host samples `ss -tmi` every 0.1 s
until told to stop (a file): the receiving socket's memory, the sending socket's retransmissions, D-SACKs and send
queue (of the bulk's socket: with expedited data via a second connection, the busier of the two). The hosts' UDP
and TCP InCsumErrors are read before and after.
"""

from __future__ import annotations

import json
import re
import threading
from typing import Any

from ..counters import parse_snmp
from .base import LabAPI, WorkloadError, WorkloadRunner, wait_in_node
from .spims_agent import Responder, TransportUnavailableError, initiate, interrupt, target
from .transfer import COLUMNS, EXPEDITED_BYTES, FRAME_OVERHEAD, TransferTask

BIN = "protolab-tp4"  # in the node image (images/node/Dockerfile), built by protolab.images.build_agent
SAMPLE_SECONDS = 0.1
LISTEN_POLLS = 100  # x 50 ms: how long the receiver has to bind its port


def _report(out: str) -> dict[str, Any] | None:
    """The last JSON object line of a tool's output (None: none)."""
    for line in reversed(out.splitlines()):
        if line.startswith("{"):
            try:
                v = json.loads(line)
            except json.JSONDecodeError:
                continue
            return v if isinstance(v, dict) else None
    return None


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def tp4_columns(t: TransferTask, sent: dict[str, Any], recv: dict[str, Any]) -> dict[str, float | None]:
    """The columns from the two protolab-tp4 summaries (either may be {} when its end gave none)."""
    completed = bool(sent.get("completed")) and bool(recv.get("completed"))
    expedited = int(recv.get("user_expedited") or 0)
    eff = _num(recv.get("throughput_efficiency"))
    dropped = sum((recv.get("dropped") or {}).values()) + sum((sent.get("dropped") or {}).values())
    retrans = [_num(sent.get(k)) for k in ("dt_retransmissions", "ed_retransmissions")]
    dups = [_num(recv.get(k)) for k in ("dt_duplicates", "ed_duplicates")]
    head = sent or recv  # the parameters as the sender ran them (the receiver does not know tsdus or the rate)
    delivered = _num(recv.get("user_octets"))
    vals: dict[str, float | None] = {
        "efficiency_ratio": eff if delivered else (0.0 if recv else None),
        "transfer_seconds": _num(recv.get("transfer_seconds")) if delivered else None,
        "delivered_bytes": delivered,
        "completed_ratio": 1.0 if completed else 0.0,
        "per_octet_delay_seconds": _num(recv.get("per_octet_delay_seconds")) if delivered else None,
        "expedited_delay_seconds": _num(recv.get("user_expedited_delay_seconds")) if expedited else None,
        "expedited_delay_max_seconds": _num(recv.get("user_expedited_delay_max_seconds")) if expedited else None,
        "expedited_total": float(expedited) if t.expedited_rate > 0 else None,
        "retransmissions_total": sum(r for r in retrans if r is not None) if sent else None,
        "spurious_retransmissions_total": sum(d for d in dups if d is not None) if recv else None,
        "recv_buffer_avg_bytes": _num(recv.get("receive_buffer_avg_octets")),
        "recv_buffer_max_bytes": _num(recv.get("receive_buffer_max_octets")),
        "send_buffer_max_bytes": _num(sent.get("send_buffer_max_octets")),
        "csum_errors_total": None,  # the runner's, from /proc
        "dropped_total": float(dropped) if sent or recv else None,
        "tpdu_bytes": _num(head.get("tpdu_size_octets")),
        "window_bytes": _num(head.get("window_octets")),
        "retransmit_seconds": _num(head.get("retransmit_seconds")),
        "window_timer_seconds": _num(head.get("window_timer_seconds")),
        "send_buffer_bytes": _num(head.get("send_buffer_octets")),
        "recv_buffer_bytes": _num(head.get("recv_buffer_octets")),
        "tsdu_bytes": float(t.tsdu_size),
        "tsdus_total": float(t.tsdus),
        "expedited_rate_ratio": t.expedited_rate,
    }
    return vals


# --- ss -tmi ---------------------------------------------------------------------------------------------------

_SKMEM = re.compile(r"skmem:\(([^)]*)\)")
_RETRANS = re.compile(r"\bretrans:\d+/(\d+)")
_DSACK = re.compile(r"\bdsack_dups:(\d+)")
_MSS = re.compile(r"\bmss:(\d+)")


def skmem(line: str) -> dict[str, int]:
    """`skmem:(r0,rb131072,t0,tb46080,f0,w0,o0,bl0,d0)` -> {"r": 0, "rb": 131072, ...}."""
    m = _SKMEM.search(line)
    out: dict[str, int] = {}
    for part in m.group(1).split(",") if m else []:
        k = part.rstrip("0123456789")
        if k and part[len(k) :].isdigit():
            out[k] = int(part[len(k) :])
    return out


_BYTES = re.compile(r"\bbytes_(?:sent|received):(\d+)")


def _busiest(sockets: list[str]) -> str:
    """The socket that moved the most bytes (sent or received): the bulk's, not a second connection's that carries
    only expedited messages (the first of equals)."""
    return max(sockets, key=lambda s: max((int(v) for v in _BYTES.findall(s)), default=0))


def parse_samples(text: str) -> list[tuple[float, str]]:
    """The sampler's output: `T <unix time>` lines, each followed by the `ss -Htmi` text of that moment (a socket's
    line and its indented detail line) -> (time, socket text, its lines joined) per sample that saw a socket; of
    several sockets, the busiest."""
    out: list[tuple[float, str]] = []
    now: float | None = None
    sockets: list[list[str]] = []

    def flush() -> None:
        if now is not None and sockets:
            out.append((now, _busiest([" ".join(lines) for lines in sockets])))

    for raw in text.splitlines():
        if raw.startswith("T "):
            flush()
            try:
                now = float(raw[2:])
            except ValueError:
                now = None
            sockets = []
        elif raw.strip():
            if raw[0].isspace() and sockets:
                sockets[-1].append(raw.strip())
            else:
                sockets.append([raw.strip()])
    flush()
    return out


def time_weighted(samples: list[tuple[float, float]]) -> float | None:
    """Mean of a sampled quantity held from each sample to the next (the last sample has no weight unless it is
    the only one)."""
    if not samples:
        return None
    if len(samples) == 1:
        return samples[0][1]
    span = samples[-1][0] - samples[0][0]
    if span <= 0:
        return sum(v for _, v in samples) / len(samples)
    return sum(v * (samples[i + 1][0] - t) for i, (t, v) in enumerate(samples[:-1])) / span


def tcp_receiver_figures(samples: list[tuple[float, str]]) -> dict[str, float | None]:
    """Receive-buffer use of the receiving socket: time-weighted average and maximum of skmem r."""
    r = [(t, float(skmem(s).get("r", 0))) for t, s in samples if _SKMEM.search(s)]
    return {"recv_buffer_avg_bytes": time_weighted(r), "recv_buffer_max_bytes": max((v for _, v in r), default=None)}


def tcp_sender_figures(samples: list[tuple[float, str]], sack: bool) -> dict[str, float | None]:
    """From the sending socket's last sample: retransmitted segments, D-SACK'd ones (None without SACK on both
    hosts: no D-SACK tells a spurious retransmission then), the MSS; the largest send queue (skmem w) of all
    samples."""
    if not samples:
        return {"retransmissions_total": None, "spurious_retransmissions_total": None, "tpdu_bytes": None,
                "send_buffer_max_bytes": None}  # fmt: skip
    last = samples[-1][1]
    m, d, mss = _RETRANS.search(last), _DSACK.search(last), _MSS.search(last)
    return {
        "retransmissions_total": float(m.group(1)) if m else 0.0,
        "spurious_retransmissions_total": (float(d.group(1)) if d else 0.0) if sack else None,
        "tpdu_bytes": float(mss.group(1)) if mss else None,
        "send_buffer_max_bytes": max((float(skmem(s).get("w", 0)) for _, s in samples), default=None),
    }


_CC = re.compile(r"(?:^|\s)([a-z][a-z0-9_]*)\s+(?:wscale:|rto:)")


def congestion_of(ss_info: str | None) -> str | None:
    """The congestion control `ss -i` names for a socket (the word before its wscale/rto); None: no sample."""
    m = _CC.search(ss_info or "")
    return m.group(1) if m else None


def csum_errors(snmp: str) -> int:
    """InCsumErrors of the Udp and Tcp lines of /proc/net/snmp."""
    counters = parse_snmp(snmp)
    return sum(counters.get(proto, {}).get("InCsumErrors", 0) for proto in ("Udp", "Tcp"))


def quic_receiver_figures(result: dict[str, Any]) -> dict[str, float | None]:
    """quic: the stream octets the receiving connection held for its reader (received, each once, not yet read;
    protolab-spims counts them from quic-go's tracer), its time average and maximum from the initiator's path
    counters (None when the connection reported none)."""
    paths = result.get("paths") or [{}]
    c = paths[0].get("counters") or {}
    area, span, top = (_num(c.get(k)) for k in ("rx_held_octet_microseconds", "rx_held_microseconds",
                                                 "rx_held_max_octets"))  # fmt: skip
    return {"recv_buffer_avg_bytes": area / span if area is not None and span else None,
            "recv_buffer_max_bytes": top}  # fmt: skip


def bulk_columns(t: TransferTask, result: dict[str, Any]) -> dict[str, float | None]:
    """tcp/quic: delivered bytes, completion and efficiency from the bulk_get's result; per-octet delay and the
    expedited messages' delays from its `bulk` figures (protolab-spims with delays: stamped on one kernel's clock);
    quic's retransmissions as the packets the responder's quic-go declared lost (their frames go again), and its
    receive buffer (quic_receiver_figures)."""
    got = float(result.get("received_bytes") or 0)
    samples = result.get("samples_seconds") or []
    completed = result.get("stopped") == "iterations" and not result.get("error") and got == t.total_bytes()
    secs = samples[0] if completed and samples else _num(result.get("elapsed_seconds"))
    eff = got / secs / (t.link_rate / 8) if secs else None
    bulk = result.get("bulk") or {}
    exp = bulk.get("expedited") or {}
    delays = exp.get("delay_seconds") or {}
    received = int(exp.get("received") or 0)
    counters = bulk.get("sender_counters") or {}
    lost = _num(counters.get("packets_lost")) if t.stack == "quic" else None
    held = quic_receiver_figures(result) if t.stack == "quic" else {}
    return held | {"efficiency_ratio": eff if got else 0.0, "transfer_seconds": secs if got else None,
            "delivered_bytes": got, "completed_ratio": 1.0 if completed else 0.0,
            "per_octet_delay_seconds": _num(bulk.get("per_octet_delay_seconds")) if got else None,
            "expedited_delay_seconds": _num(delays.get("mean")) if received else None,
            "expedited_delay_max_seconds": _num(delays.get("max")) if received else None,
            "expedited_total": float(received) if t.expedited_rate > 0 else None,
            "retransmissions_total": lost}  # fmt: skip


def bulk_job(t: TransferTask, address: str) -> dict[str, Any]:
    """The protolab-spims job of a tcp/quic transfer from `address`: one bulk_get of the TSDUs, each unit's delay
    stamped, the responder's counters, and expedited messages when the task has a rate."""
    job: dict[str, Any] = {
        "procedure": "bulk_get", "transport": t.stack, "target": target(address, t.port),
        "size": {"dist": "constant", "value": t.tsdu_size}, "count": t.tsdus, "iterations": 1,
        "timeout": f"{t.duration:g}s", "samples": True, "delays": True, "sender_counters": True,
    }  # fmt: skip
    if t.expedited_rate > 0:
        job["expedited"] = {"via": t.expedited_via, "rate": t.expedited_rate, "size": EXPEDITED_BYTES}
    return job


# $1 the stop file, $2 seconds at most, $3 ss's filter, $4 seconds between samples (arguments, never code)
SAMPLER_SCRIPT = ('rm -f -- "$1"; end=$(( $(date +%s) + $2 )); '
                  'while [ ! -e "$1" ] && [ $(date +%s) -lt $end ]; do echo T $(date +%s.%N); '
                  'ss -Htmin state established "$3"; sleep "$4"; done; rm -f -- "$1"')  # fmt: skip


class _Sampler:
    """One shell loop on a host printing `T <time>` and the matching sockets of `ss -Htmi` every 0.1 s until a
    stop file appears (or `limit` seconds pass)."""

    def __init__(self, lab: LabAPI, host: str, ss_filter: str, marker: str, limit: float) -> None:
        self.lab, self.host = lab, host
        if "/" in marker or any(c.isspace() for c in marker):
            raise WorkloadError(f"transfer sampler on {host}: {marker!r} cannot name a file")
        self.stop_file = f"/tmp/protolab-xfer-{marker}.stop"
        argv = ["sh", "-c", SAMPLER_SCRIPT, "sh", self.stop_file, str(int(limit) + 1), ss_filter, f"{SAMPLE_SECONDS:g}"]
        self.out = ""
        self._thread = threading.Thread(target=self._run, args=(argv,), daemon=True)

    def _run(self, cmd: list[str]) -> None:
        self.out = self.lab.exec(self.host, cmd)[1]

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> list[tuple[float, str]]:
        self.lab.exec(self.host, ["touch", self.stop_file])
        self._thread.join(timeout=10)
        return parse_samples(self.out)


class TransferRunner(WorkloadRunner[TransferTask]):
    def __init__(self, task: TransferTask, lab: LabAPI) -> None:
        super().__init__(task, lab)
        self.sender_report: dict[str, Any] = {}
        self.receiver_report: dict[str, Any] = {}
        self.bulk: dict[str, Any] = {}
        self.figures: dict[str, float | None] = {}
        self.ss_last: dict[str, str | None] = {}
        self.sack = False  # tcp: net.ipv4.tcp_sack on at both ends
        self.csum: dict[str, int] = {}  # host -> InCsumErrors before
        self.csum_after: dict[str, int] = {}
        self.notes: list[str] = []
        self._recv_out: tuple[int, str, str] | None = None
        self._thread: threading.Thread | None = None
        self._responder: Responder | None = None

    def _csum(self) -> dict[str, int]:
        out = {}
        for h in (self.task.sender, self.task.receiver):
            code, text, _err = self.lab.exec(h, ["cat", "/proc/net/snmp"])
            if code == 0:
                out[h] = csum_errors(text)
        return out

    # -- tp4 --------------------------------------------------------------------------------------------------
    def _tp4_args(self) -> list[str]:
        t = self.task
        args = ["--table", str(t.table), "--ack", t.ack, "--tsdus", str(t.tsdus), "--tsdu-size", str(t.tsdu_size),
                "--link-kbit", f"{t.link_rate / 1e3:g}", "--overhead", str(FRAME_OVERHEAD),
                "--max-transmissions", str(t.max_transmissions)]  # fmt: skip
        for flag, v in (("--tpdu-size", t.tpdu_size), ("--window", t.window)):
            if v is not None:
                args += [flag, str(v)]
        for flag, s in (("--retransmit", t.retransmit), ("--window-timer", t.window_timer)):
            if s is not None:
                args += [flag, f"{s * 1e3:.0f}ms"]
        return args

    def _prepare_tp4(self) -> None:
        t = self.task
        # the receiver outlives the sender by its linger (2 x the retransmission timer) and a margin
        limit = t.duration + 2 * (t.retransmit or (2.0 if t.table == 2 else 0.65)) + 5
        cmd = [BIN, "recv", "--addr", f":{t.port}", *self._tp4_args(), "--time-limit", f"{limit:.0f}s"]

        def receive() -> None:
            self._recv_out = self.lab.exec(t.receiver, cmd)

        self._thread = threading.Thread(target=receive, daemon=True, name=f"tp4-recv-{t.name}")
        self._thread.start()
        if not wait_in_node(self.lab, t.receiver, f"ss -Hlnu 'sport = :{t.port}' | grep -q .", tries=LISTEN_POLLS):
            self._thread.join(timeout=2)
            code, out, err = self._recv_out or (None, "", "")
            said = f": exit {code}: {(err or out).strip()[-300:]}" if code is not None else ""
            raise WorkloadError(f"transfer {t.name}: {BIN} recv on {t.receiver} did not listen on UDP {t.port}{said}")

    def _run_tp4(self) -> None:
        t = self.task
        address = self.lab.ip(t.receiver)
        cmd = [BIN, "send", "--addr", f"{address}:{t.port}", *self._tp4_args(), "--expedited", t.expedited,
               "--expedited-rate", f"{t.expedited_rate:g}", "--time-limit", f"{t.duration:g}s"]  # fmt: skip
        code, out, err = self.lab.exec(t.sender, cmd)
        self.sender_report = self._tool_report("send", t.sender, code, out, err)
        assert self._thread is not None
        self._thread.join(timeout=t.duration + 30)
        if self._recv_out is None:
            raise WorkloadError(f"transfer {t.name}: {BIN} recv on {t.receiver} did not finish")
        self.receiver_report = self._tool_report("recv", t.receiver, *self._recv_out)

    def _tool_report(self, role: str, host: str, code: int, out: str, err: str) -> dict[str, Any]:
        """A summary, complete or not; exit 2 (bad usage) or no summary at all is the runner's fault: raised."""
        report = _report(out)
        if report is None or code == 2:
            raise WorkloadError(f"transfer {self.task.name}: {BIN} {role} on {host}: exit {code}, no summary: "
                                f"{(err or out).strip()[-300:]}")  # fmt: skip
        if report.get("error"):
            self.notes.append(f"{role} on {host}: {report['error']}")
        return report

    # -- tcp, quic --------------------------------------------------------------------------------------------
    def _prepare_bulk(self) -> None:
        t = self.task
        if t.stack == "tcp":  # the phase has set the task's sysctls by now
            on = [self.lab.exec(h, ["cat", "/proc/sys/net/ipv4/tcp_sack"])[1].strip() for h in t.nodes()]
            self.sack = all(v not in ("", "0") for v in on)
        options = {"congestion": t.congestion} if t.congestion else None
        self._responder = Responder(self.lab, t.sender, t.stack, t.port, options=options)
        try:
            self._responder.start()
        except TransportUnavailableError as exc:
            self.skipped = str(exc)

    def _run_bulk(self) -> None:
        t = self.task
        job = bulk_job(t, self.lab.ip(t.sender))
        samplers = []
        if t.stack == "tcp":
            limit = t.duration + 10
            samplers = [_Sampler(self.lab, t.receiver, f"( dport = :{t.port} )", f"{t.name}-r", limit),
                        _Sampler(self.lab, t.sender, f"( sport = :{t.port} )", f"{t.name}-s", limit)]  # fmt: skip
            for s in samplers:
                s.start()
        box: dict[str, Any] = {}

        def get() -> None:
            try:
                box["result"] = initiate(self.lab, t.receiver, job, f"xfer-{t.name}", timeout=t.duration + 30)
            except Exception as exc:  # raised below, after the samplers are stopped
                box["error"] = exc

        th = threading.Thread(target=get, daemon=True, name=f"xfer-get-{t.name}")
        th.start()
        th.join(t.duration)
        if th.is_alive():  # past the time limit: the initiator reports what it got
            self.notes.append(f"interrupted at the duration, {t.duration:g}s")
            interrupt(self.lab, t.receiver, f"xfer-{t.name}")
            th.join(30)
        try:
            if samplers:
                rx, tx = (s.stop() for s in samplers)
                self.figures |= tcp_receiver_figures(rx) | tcp_sender_figures(tx, self.sack)
                # what was in force (sack, timestamps, the congestion control) as ss saw the sockets last
                self.ss_last = {"receiver": rx[-1][1] if rx else None, "sender": tx[-1][1] if tx else None}
                in_force = congestion_of(self.ss_last["sender"])
                if t.congestion and in_force not in (None, t.congestion):
                    raise WorkloadError(f"transfer {t.name}: asked the sender for congestion control "
                                        f"{t.congestion}, its socket ran {in_force}")  # fmt: skip
        finally:
            assert self._responder is not None
            self._responder.stop()
        if "error" in box:
            raise box["error"]
        if "result" not in box:
            raise WorkloadError(f"transfer {t.name}: the initiator on {t.receiver} did not return")
        _code, self.bulk = box["result"]
        if self.bulk.get("error"):
            self.notes.append(f"bulk_get: {self.bulk['error']}")

    # -- the contract -----------------------------------------------------------------------------------------
    def prepare(self) -> None:
        self.csum = self._csum()
        if self.task.stack == "tp4":
            self._prepare_tp4()
        else:
            self._prepare_bulk()

    def run(self) -> None:
        if self.skipped:
            return
        if self.task.stack == "tp4":
            self._run_tp4()
        else:
            self._run_bulk()
        self.csum_after = self._csum()

    def raw(self) -> dict[str, Any]:
        out: dict[str, Any] = {"notes": self.notes}
        if self.task.stack == "tp4":
            return out | {"sender": self.sender_report, "receiver": self.receiver_report}
        trimmed = {k: v for k, v in self.bulk.items() if k not in ("histogram", "samples_seconds")}
        cc = {k: congestion_of(v) for k, v in self.ss_last.items()}
        return out | {"bulk_get": trimmed, "ss_figures": self.figures, "ss_last": self.ss_last, "sack": self.sack,
                      "congestion_in_force": cc}  # fmt: skip

    def result(self) -> dict[str, float | None]:
        t = self.task
        vals: dict[str, float | None] = dict.fromkeys(COLUMNS)
        if self.skipped:
            return {f"{t.name}_{k}": v for k, v in vals.items()}
        if t.stack == "tp4":
            vals |= tp4_columns(t, self.sender_report, self.receiver_report)
        else:
            vals |= bulk_columns(t, self.bulk)
            vals |= {k: v for k, v in self.figures.items() if k in vals}
            vals |= {"tsdu_bytes": float(t.tsdu_size), "tsdus_total": float(t.tsdus),
                     "expedited_rate_ratio": t.expedited_rate}  # fmt: skip
        if self.csum_after and set(self.csum) == set(self.csum_after):
            vals["csum_errors_total"] = float(sum(self.csum_after[h] - self.csum[h] for h in self.csum))
        assert set(vals) == set(COLUMNS)
        return {f"{t.name}_{k}": v for k, v in vals.items()}
