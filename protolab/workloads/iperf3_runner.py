"""Running an iperf3 task in a lab: server in the receiver's container, client in the sender's.

Receive-side figures come from the server's JSON report (what was delivered); TCP retransmits from the
client's. A failing iperf3 raises with its own error text.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from . import RUNNERS
from .iperf3 import Iperf3Task


class Iperf3Runner:
    def __init__(self, task: Iperf3Task, lab: Any) -> None:
        self.task, self.lab = task, lab
        self._server_out: tuple[int, str, str] | None = None
        self._server_thread: threading.Thread | None = None
        self.client_report: dict[str, Any] = {}
        self.server_report: dict[str, Any] = {}

    def prepare(self) -> None:
        t = self.task

        def serve() -> None:
            self._server_out = self.lab.exec(t.server, ["iperf3", "-s", "-1", "-J", "-p", str(t.port)])

        self._server_thread = threading.Thread(target=serve, daemon=True)
        self._server_thread.start()
        wait = f"for i in $(seq 100); do ss -Hltn 'sport = :{t.port}' | grep -q . && exit 0; sleep 0.05; done; exit 1"
        code, _, _ = self.lab.exec(t.server, ["sh", "-c", wait])
        if code != 0:
            raise RuntimeError(f"iperf3 task {t.name}: server on {t.server} did not listen on port {t.port}")

    def run(self) -> None:
        t = self.task
        cmd = ["iperf3", "-c", self.lab.ip(t.server), "-p", str(t.port), "-t", f"{t.duration:g}", "-J"]
        if t.protocol == "udp":
            cmd += ["-u"]
        if t.rate is not None:
            cmd += ["-b", f"{int(t.rate)}"]
        if t.length is not None:
            cmd += ["-l", str(t.length)]
        code, out, err = self.lab.exec(t.client, cmd)
        self.client_report = _parse(out, f"iperf3 client {t.name} on {t.client}", code, err)
        assert self._server_thread is not None
        self._server_thread.join(timeout=t.duration + 30)
        if self._server_out is None:
            raise RuntimeError(f"iperf3 task {t.name}: server on {t.server} did not finish")
        scode, sout, serr = self._server_out
        self.server_report = _parse(sout, f"iperf3 server {t.name} on {t.server}", scode, serr)

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
            }
        sent = self.client_report.get("end", {}).get("sum_sent", {})
        return {
            f"{t.name}_goodput_bits_per_second": received.get("bits_per_second"),
            f"{t.name}_retransmits_total": sent.get("retransmits"),
        }


def _parse(out: str, what: str, code: int, err: str) -> dict[str, Any]:
    try:
        report = json.loads(out)
    except json.JSONDecodeError:
        raise RuntimeError(f"{what}: exit {code}, no JSON report: {(err or out).strip()[:300]}") from None
    if report.get("error"):
        raise RuntimeError(f"{what}: {report['error']}")
    return report


RUNNERS.register("iperf3", Iperf3Runner)
