"""protolab-spims in a lab's containers: responders started and stopped, initiators run with a JSON job and their
one-line result read. Shared by the SPIMS workload and the request/response workload (one procedure, one
transport registry: agents/spims, agents/transport).

A responder is `protolab-spims serve --transport T --listen :PORT` on its host, running until SIGTERM; an
initiator writes its job to /tmp/spims-<marker>.json in its container and runs `protolab-spims run --job` on
it (the file name is also how a running initiator is found to stop it). Exit 3 is "transport not available on
this kernel": TransportUnavailableError, whose message is the agent's one line.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from .base import LabAPI, WorkloadError, wait_in_node

BIN = "protolab-spims"
UNAVAILABLE = 3  # protolab-spims: the transport is not available here


class TransportUnavailableError(WorkloadError):
    """The kernel (or the node) lacks the transport; the message says why, in the agent's words."""


class Responder:
    """One `protolab-spims serve` on a host, run in a thread until stop()."""

    def __init__(self, lab: LabAPI, host: str, transport: str, port: int, prefix: list[str] | None = None,
                 options: dict[str, str] | None = None) -> None:  # fmt: skip
        self.lab, self.host, self.transport, self.port = lab, host, transport, port
        knobs = [a for k, v in (options or {}).items() for a in ("--option", f"{k}={v}")]
        self.cmd = [*(prefix or []), BIN, "serve", "--transport", transport, *knobs, "--listen", f":{port}"]
        self.error: str | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        def serve() -> None:
            code, out, err = self.lab.exec(self.host, self.cmd)
            if code == UNAVAILABLE:
                self.error = f"transport {self.transport} is not available on {self.host}: {err.strip()[-300:]}"
            elif code not in (0, 143, -15):
                self.error = f"responder on {self.host} ({' '.join(self.cmd)}): exit {code}: {(err or out)[-300:]}"

        self._thread = threading.Thread(target=serve, daemon=True, name=f"spims-serve-{self.host}-{self.port}")
        self._thread.start()
        # ss lists SCTP sockets only with the sctp_diag module; the sctp module's own table always has them
        listening = (f"awk -v p={self.port} '$6 == p {{f = 1}} END {{exit !f}}' /proc/net/sctp/eps 2>/dev/null"
                     if self.transport == "sctp" else f"ss -Hlntu 'sport = :{self.port}' | grep -q .")  # fmt: skip
        if not wait_in_node(self.lab, self.host, listening):
            self._thread.join(timeout=2)
            if self.error and "not available" in self.error:
                raise TransportUnavailableError(self.error)
            raise WorkloadError(f"responder on {self.host} did not listen on port {self.port}"
                                f"{': ' + self.error if self.error else ''}")  # fmt: skip

    def stop(self) -> None:
        self.lab.exec(self.host, ["pkill", "-TERM", "-f", f"{BIN} serve .*:{self.port}$"])
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None


INITIATE_SCRIPT = 'printf %s "$1" > "$2" && shift 2 && exec "$@"'  # $1 the job, $2 its file, then the command


def initiate(lab: LabAPI, host: str, job: dict[str, Any], marker: str, prefix: list[str] | None = None,
             timeout: float | None = None) -> tuple[int, dict[str, Any]]:  # fmt: skip
    """Run one initiator with `job`; its exit status and result. A missing result raises with the agent's words."""
    path = f"/tmp/spims-{marker}.json"
    if "/" in marker or marker.startswith(".") or any(c.isspace() for c in marker):
        raise WorkloadError(f"initiator on {host}: {marker!r} cannot name a file")
    # the job and the path are arguments of a constant script, never part of it
    argv = ["sh", "-c", INITIATE_SCRIPT, "sh", json.dumps(job), path, *(prefix or []), BIN, "run", "--job", path]
    code, out, err = lab.exec(host, argv, timeout=timeout)
    if code == UNAVAILABLE:
        raise TransportUnavailableError(f"transport {job.get('transport')} is not available on {host}: "
                                   f"{err.strip()[-300:]}")  # fmt: skip
    try:
        return code, json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise WorkloadError(f"initiator {marker} on {host}: exit {code}, no result: "
                            f"{(err or out).strip()[-300:]}") from None  # fmt: skip


def interrupt(lab: LabAPI, host: str, marker: str) -> None:
    """SIGINT to a running initiator: it stops and prints what it measured ("stopped": "interrupted")."""
    lab.exec(host, ["pkill", "-INT", "-f", f"spims-{marker}.json"])


def target(address: str, port: int) -> str:
    return f"[{address}]:{port}" if ":" in address else f"{address}:{port}"
