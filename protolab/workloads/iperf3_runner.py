"""Running an iperf3 task in a lab: server in the receiver's container, client in the sender's.

Receive-side figures come from the server's JSON report (what was delivered); TCP retransmits from the
client's. A failing iperf3 raises with its own error text.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from .base import LabAPI, WorkloadError, WorkloadRunner, json_report, wait_in_node
from .iperf3 import Iperf3Task

HANDSHAKE_ERROR = "unable to read from stream socket"
UDP_HANDSHAKE_RETRIES = 2
# A UDP sender's schedule is read in its own report, at iperf3's finest interval.
UDP_REPORT_INTERVAL_S = 0.1
# How far ahead of its rate a UDP sender may run over any stretch of its test, beyond two datagrams (the report
# counts whole datagrams): iperf3 paces on a 1 ms timer. Measured here, iperf3 3.12 over a lab link, 8 s tests
# (2026-11-28, 2-core Xeon VM): at most 6.5 ms at 1.4 Mbit/s over 15 tests (under one 1400 B datagram's 8 ms),
# 3.5 ms at 50 Mbit/s over 12 and 3.1 ms at 200 Mbit/s over 5; a start held up by a lost control message (TCP's
# retransmission on a 270 ms path with loss on the way back): 0.65-1.06 s.
SENDER_AHEAD_BOUND_S = 0.02


class Iperf3Runner(WorkloadRunner[Iperf3Task]):
    def __init__(self, task: Iperf3Task, lab: LabAPI, address: str | None = None) -> None:
        super().__init__(task, lab)
        self.address = address  # the server's address to use (default: its first interface's)
        self._server_out: tuple[int, str, str] | None = None
        self._server_thread: threading.Thread | None = None
        self.client_report: dict[str, Any] = {}
        self.server_report: dict[str, Any] = {}
        self.retries = 0
        self.ahead: float | None = None  # UDP: the most the sender ran ahead of its rate (sender_ahead_seconds)

    def prepare(self) -> None:
        t = self.task

        def serve() -> None:
            self._server_out = self.lab.exec(t.server, ["iperf3", "-s", "-1", "-J", "-p", str(t.port)])

        self._server_thread = threading.Thread(target=serve, daemon=True)
        self._server_thread.start()
        if not wait_in_node(self.lab, t.server, f"ss -Hltn 'sport = :{t.port}' | grep -q ."):
            raise WorkloadError(f"iperf3 task {t.name}: server on {t.server} did not listen on port {t.port}")

    def _restart_server(self) -> None:
        if self._server_thread is not None:
            self._server_thread.join(timeout=3)
        if self._server_thread is None or self._server_thread.is_alive():
            self.lab.exec(self.task.server, ["pkill", "-f", f"iperf3 -s -1 -J -p {self.task.port}"])
        self._server_out = None
        self.prepare()

    def _watch_start(self, limit: float) -> threading.Event:
        """Set `started` to when the data began to flow: the client's interfaces (its network namespace's
        /proc/<pid>/net/dev, read from the host every 10 ms) have sent more than the control exchange would. On a
        lossy long link the TCP control connection alone can take seconds (a lost SYN waits 1 s, each exchange an
        RTT): at 270 ms and 5 % loss the UDP data began 2.9 s after the client, and a window from the client's
        start saw 65 of 100 Mbit/s. Returns the event that stops the watch."""
        stop = threading.Event()
        node = getattr(self.lab, "nodes", {}).get(self.task.client)
        if node is None or not getattr(node, "pid", None):
            return stop
        path = f"/proc/{node.pid}/net/dev"
        rate = (self.task.rate or 1e9) * self.task.overdrive
        threshold = max(20 * (self.task.length or 1400), rate / 8 * 0.02)  # ~20 ms of data, beyond any handshake

        def sent() -> int:
            with open(path) as f:
                rows = [ln.split(":", 1) for ln in f.read().splitlines()[2:] if ":" in ln]
            return sum(int(rest.split()[8]) for name, rest in rows if name.strip() != "lo")

        def watch() -> None:
            try:
                base, t_end = sent(), time.monotonic() + limit
                while not stop.wait(0.01) and time.monotonic() < t_end:
                    moved = sent() - base
                    if moved > threshold:
                        self.started = time.time() - moved * 8 / rate  # back to its first byte at the offered rate
                        return
            except OSError:
                return  # the node went away: keep the client's start

        threading.Thread(target=watch, daemon=True, name=f"iperf3-start-{self.task.name}").start()
        return stop

    def run(self) -> None:
        t = self.task
        server = self.address or self.lab.ip(t.server, family=t.address_family())
        cmd = ["iperf3", "-c", server, "-p", str(t.port), "-t", f"{t.duration:g}", "-J"]
        if t.protocol == "udp":
            cmd += ["-u"]
        if t.rate is not None:
            cmd += ["-b", f"{int(t.rate * t.overdrive)}"]
        if t.length is not None:
            cmd += ["-l", str(t.length)]
        if t.protocol == "udp":
            cmd += ["-i", f"{UDP_REPORT_INTERVAL_S:g}"]
        for attempt in range(UDP_HANDSHAKE_RETRIES + 1):
            self.started = time.time()
            watch = self._watch_start(t.duration + 30)
            code, out, err = self.lab.exec(t.client, cmd)
            watch.set()
            try:
                what = f"iperf3 client {t.name} on {t.client}"
                self.client_report = json_report(out, what, code, err, check_exit=False)
                break
            except WorkloadError as exc:
                # iperf3 3.12 opens a UDP test with one datagram each way and no retry: on a lossy link that
                # exchange itself can be lost. Start again (counted), rather than lose the measurement.
                if t.protocol != "udp" or attempt == UDP_HANDSHAKE_RETRIES or HANDSHAKE_ERROR not in str(exc):
                    raise
                self.retries += 1
                self._restart_server()
        assert self._server_thread is not None
        self._server_thread.join(timeout=t.duration + 30)
        if self._server_out is None:
            raise WorkloadError(f"iperf3 task {t.name}: server on {t.server} did not finish")
        scode, sout, serr = self._server_out
        self.server_report = json_report(sout, f"iperf3 server {t.name} on {t.server}", scode, serr, check_exit=False)
        if t.protocol == "udp":
            self._check_schedule()

    def _check_schedule(self) -> None:
        """A UDP sender that ran ahead of its rate by more than noise makes the measurement invalid: the load it
        offered was not the one asked for. It asks for the measurement to be made again (`remake`): what held the
        sender up is not what the spec measures (a control message lost at the start, or the machine not running
        the sender for a while: 64 ms in mid-test once on a 2-core VM), and a cause that stays, made again a bounded
        number of times, stays invalid."""
        t = self.task
        rate = (t.rate or 0) * t.overdrive
        burst = sender_burst(self.client_report, rate)
        self.ahead = burst[0] if burst else None
        bound = 2 * 8 * (t.length or 1400) / rate + SENDER_AHEAD_BOUND_S if rate else 0.0
        if burst is None or burst[0] <= bound:
            return
        ahead, behind_at, caught_up_at = burst
        held = start_held_seconds(self.client_report)
        if held > bound:  # nothing sent until then: the control exchange held the start up, a lost message's luck
            when = f"it sent nothing for its first {held:.2f} s"
        else:
            when = f"it fell behind until {behind_at:.1f} s into the test and caught up by {caught_up_at:.1f} s"
        why = (
            f"the UDP sender on {t.client} ran {ahead:.3f} s ahead of its {rate / 1e3:g} kbit/s (bound {bound:.3f} "
            f"s; {when}): iperf3 keeps its average rate from the test's start, so a sender held up (by a control "
            "message lost on a lossy path, or by the machine not running it) sends what it missed in one burst, and "
            "the offered load was not constant"
        )
        self.invalid.append(why)
        self.remake.append(why)

    def raw(self) -> dict[str, Any]:
        return {"client": self.client_report, "server": self.server_report, "handshake_retries": self.retries}

    def result(self) -> dict[str, float | None]:
        t, end = self.task, self.server_report.get("end", {})
        received = end.get("sum_received", {})
        if t.protocol == "udp":
            s = end.get("sum", {})  # iperf3 3.12's server puts packet counts here, bytes in sum_received
            secs = s.get("seconds") or t.duration
            delivered = s.get("packets", 0) - s.get("lost_packets", 0)
            return {
                f"{t.name}_goodput_bits_per_second": received.get("bits_per_second"),
                f"{t.name}_packets_per_second": delivered / secs if secs else None,
                f"{t.name}_loss_ratio": (s.get("lost_percent") or 0.0) / 100,
                f"{t.name}_sent_total": s.get("packets"),
                f"{t.name}_lost_total": s.get("lost_packets"),
                f"{t.name}_handshake_retries_total": self.retries,
                f"{t.name}_sender_ahead_seconds": self.ahead,
            }
        sent = self.client_report.get("end", {}).get("sum_sent", {})
        return {
            f"{t.name}_goodput_bits_per_second": received.get("bits_per_second"),
            f"{t.name}_retransmits_total": sent.get("retransmits"),
        }


def sender_burst(report: dict[str, Any], rate_bps: float) -> tuple[float, float, float] | None:
    """The most a sender sent above `rate_bps` over any stretch of its report's intervals, in seconds of data at
    that rate: max over j < k of (bytes sent in (t_j, t_k]) - rate * (t_k - t_j). A sender that keeps its average
    since the start sends what a hold-up cost it at once, and this is that burst. With it, where its stretch was:
    (seconds ahead, t_j, t_k) in seconds into the test, t_j where the sender was furthest behind before the burst
    and t_k where it had sent nine tenths of what it ran ahead (the rest can be the rounding of whole datagrams,
    spread over the test). None without intervals or rate."""
    intervals = report.get("intervals") or []
    if not intervals or rate_bps <= 0:
        return None
    per_second = rate_bps / 8
    sent, behind_most, ahead = 0, 0.0, 0.0  # behind_most: the most it was behind its schedule so far (bytes)
    most_at, behind_at = 0.0, 0.0
    trail: list[tuple[float, float]] = []  # (interval end, bytes behind)
    for iv in intervals:
        s = iv.get("sum", {})
        sent += int(s.get("bytes", 0))
        end = float(s.get("end", 0.0))
        behind = per_second * end - sent
        trail.append((end, behind))
        if behind_most - behind > ahead:
            ahead, behind_at = behind_most - behind, most_at
        if behind > behind_most:
            behind_most, most_at = behind, end
    top = max((b for e, b in trail if e <= behind_at), default=0.0)
    caught_up_at = next((e for e, b in trail if e > behind_at and top - b >= 0.9 * ahead), behind_at)
    return ahead / per_second, behind_at, caught_up_at


def start_held_seconds(report: dict[str, Any]) -> float:
    """How long a sender's report begins with intervals in which it sent nothing: iperf3 3.12 starts the clock of its
    rate at TEST_START and sends at TEST_RUNNING, so a control message lost between them (TCP's retransmission, 1 s
    on a long path) holds the data up while the clock runs. 0 without intervals."""
    held = 0.0
    for iv in report.get("intervals") or []:
        s = iv.get("sum", {})
        if int(s.get("bytes", 0)) > 0:
            break
        held = float(s.get("end", held))
    return held
