"""Running a ping task in a lab, and reading `ping -D -n` output (iputils) into figures."""

from __future__ import annotations

import math
import re
import statistics
from dataclasses import dataclass
from typing import Any

from .base import LabAPI, WorkloadError, WorkloadRunner
from .ping import PingTask

_REPLY = re.compile(r"^\[(\d+\.\d+)\] \d+ bytes from \S+: icmp_seq=(\d+) ttl=\d+ time=([\d.]+) ms(.*)$", re.M)
_SENT = re.compile(r"^(\d+) packets transmitted", re.M)
_SUMMARY = re.compile(r"^rtt min/avg/max/mdev = [\d.]+/([\d.]+)/[\d.]+/([\d.]+) ms", re.M)


@dataclass
class Echo:
    seq: int
    sent: float  # unix time the request left (reply time minus RTT)
    rtt: float  # seconds


@dataclass
class Outage:
    start: float
    end: float | None  # None: still out when the probes stopped
    lost: int


def parse(out: str) -> tuple[int, list[Echo]]:
    """(requests sent, first reply of each answered request). Duplicates (DUP!) are left out."""
    m = _SENT.search(out)
    if not m:
        raise ValueError(f"no ping statistics in output: {out.strip()[-300:]!r}")
    echoes: dict[int, Echo] = {}
    for ts, seq, ms, rest in _REPLY.findall(out):
        if "DUP!" in rest or int(seq) in echoes:
            continue
        rtt = float(ms) / 1000
        echoes[int(seq)] = Echo(int(seq), float(ts) - rtt, rtt)
    return int(m.group(1)), sorted(echoes.values(), key=lambda e: e.seq)


def summary(out: str) -> tuple[float, float] | None:
    """(mean, standard deviation) of the RTT in seconds from ping's closing line, or None without replies.

    Each reply's RTT is printed to three significant digits (whole milliseconds from 100 ms up, so a steady
    270.3 ms path prints 270 every time); the closing line's mean and deviation are to the microsecond."""
    m = _SUMMARY.search(out)
    return (float(m.group(1)) / 1000, float(m.group(2)) / 1000) if m else None


def send_times(sent: int, echoes: list[Echo], interval: float) -> dict[int, float]:
    """Send time of every request 1..sent: measured for answered ones, interpolated for the others."""
    known = {e.seq: e.sent for e in echoes}
    if not known:
        return {}
    seqs = sorted(known)
    out: dict[int, float] = {}
    j = 0
    for s in range(1, sent + 1):
        if s in known:
            out[s] = known[s]
            continue
        while j + 1 < len(seqs) and seqs[j + 1] < s:
            j += 1
        lo = seqs[j] if seqs[j] < s else None
        hi = next((q for q in seqs[j:] if q > s), None)
        if lo is not None and hi is not None:
            out[s] = known[lo] + (known[hi] - known[lo]) * (s - lo) / (hi - lo)
        elif lo is not None:
            out[s] = known[lo] + (s - lo) * interval
        else:
            assert hi is not None
            out[s] = known[hi] - (hi - s) * interval
    return out


def unanswered_runs(sent: int, echoes: list[Echo]) -> list[tuple[int, int]]:
    """The unanswered requests among 1..sent as runs of consecutive numbers: (first, last) each."""
    answered = {e.seq for e in echoes}
    runs: list[tuple[int, int]] = []
    for seq in range(1, sent + 1):
        if seq in answered:
            continue
        if runs and runs[-1][1] == seq - 1:
            runs[-1] = (runs[-1][0], seq)
        else:
            runs.append((seq, seq))
    return runs


def outages(sent: int, echoes: list[Echo], interval: float, min_lost: int = 3) -> list[Outage]:
    """Runs of at least `min_lost` consecutive unanswered requests (shorter runs are ordinary loss)."""
    answered = {e.seq for e in echoes}
    times = send_times(sent, echoes, interval)
    out: list[Outage] = []
    for first, last in unanswered_runs(sent, echoes):
        if last - first + 1 < min_lost or first not in times:
            continue
        start = (times[first - 1] + times[first]) / 2 if first - 1 in times else times[first]
        end = (times[last] + times[last + 1]) / 2 if last + 1 in times and last + 1 in answered else None
        out.append(Outage(start, end, last - first + 1))
    return out


def edge_errors(found: list[Outage], events: list[Any]) -> list[float]:
    """For every link down/up event: signed seconds from the event to the nearest outage edge."""
    errs: list[float] = []
    starts = [o.start for o in found]
    ends = [o.end for o in found if o.end is not None]
    for ev in events:
        if ev.wall is None or ev.action not in ("down", "up"):
            continue
        edges = starts if ev.action == "down" else ends
        if not edges:
            errs.append(math.inf)  # the probes never saw this edge
            continue
        errs.append(min((t - ev.wall for t in edges), key=abs))
    return errs


def _quantile(sorted_values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    pos = (len(sorted_values) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


class PingRunner(WorkloadRunner[PingTask]):
    def __init__(self, task: PingTask, lab: LabAPI) -> None:
        super().__init__(task, lab)
        self.sent = 0
        self.echoes: list[Echo] = []
        self.summary: tuple[float, float] | None = None
        self.output = ""

    def run(self) -> None:
        t = self.task
        # -U: user-to-user RTT. The kernel's receive timestamp is taken before netfilter, so a delay the
        # fallback emulates where packets arrive (NFQUEUE) would be invisible to it.
        cmd = ["ping", "-U", "-D", "-n", "-c", str(t.count()), "-i", f"{t.interval:g}"]
        server = self.lab.ip(t.server, family=t.address_family())
        cmd += ["-s", str(t.size), "-W", f"{max(1, math.ceil(t.timeout))}", server]
        code, out, err = self.lab.exec(t.client, cmd)
        self.output = out
        if code not in (0, 1):  # 1: some requests unanswered, which is a measurement, not an error
            raise WorkloadError(f"ping task {t.name} on {t.client}: exit {code}: {(err or out).strip()[-300:]}")
        self.sent, self.echoes = parse(out)
        self.summary = summary(out)

    def raw(self) -> dict[str, Any]:
        return {"ping": self.output}

    def result(self) -> dict[str, float | None]:
        n, t = self.task.name, self.task
        rtts = sorted(e.rtt for e in self.echoes)
        lost = self.sent - len(self.echoes)
        found = outages(self.sent, self.echoes, t.interval)
        mean, sd = self.summary or (statistics.fmean(rtts) if rtts else None, None)
        if sd is None and len(rtts) > 1:
            sd = statistics.pstdev(rtts)
        return {
            f"{n}_rtt_mean_seconds": mean,
            f"{n}_rtt_p50_seconds": _quantile(rtts, 0.5) if rtts else None,
            f"{n}_rtt_p99_seconds": _quantile(rtts, 0.99) if rtts else None,
            f"{n}_rtt_stddev_seconds": sd,
            f"{n}_sent_total": float(self.sent),
            f"{n}_received_total": float(len(rtts)),  # the samples behind the mean and deviation
            f"{n}_lost_total": float(lost),
            f"{n}_loss_ratio": lost / self.sent if self.sent else None,
            f"{n}_outages_total": float(len(found)),
            f"{n}_outage_seconds": sum(o.end - o.start for o in found if o.end is not None) if found else 0.0,
        }

    def fault_edges(self, events: list[Any]) -> dict[str, float | None]:
        """Edge error of the outages against the phase's link down/up events (None without such events)."""
        errs = edge_errors(outages(self.sent, self.echoes, self.task.interval), events)
        worst = max(map(abs, errs)) if errs else None  # an edge the probes never saw: not measured (None)
        return {f"{self.task.name}_outage_edge_error_max_seconds": worst if worst != math.inf else None}

    def series(self) -> list[tuple[str, float, float]]:
        """(series name, unix time, value): every answered request's RTT at its send time."""
        return [(f"{self.task.name}_rtt_seconds", e.sent, e.rtt) for e in self.echoes]
