"""Errors protolab raises for users, each mapped once by the CLI to a message and an exit status.

Exit statuses of `protolab` (documented in `protolab --help` and the README):
0 success (for `run`: a VALID run), 1 an operational error, 2 a bad spec or bad arguments, 3 the run finished
but is INVALID (summary.json says why), 75 the machine's lab state is held by another protolab process,
130 interrupted (SIGINT, SIGTERM or SIGHUP; the run is INVALID and its rows are on disk).
"""

from __future__ import annotations

from typing import Any

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_SPEC = 2
EXIT_INVALID = 3
EXIT_REGRESSED = 4  # `protolab compare`: a significant change beyond its threshold
EXIT_BUSY = 75  # sysexits' EX_TEMPFAIL: try again when the other run is done
EXIT_INTERRUPTED = 130


class ProtolabError(RuntimeError):
    """An error a user can act on; its message says what and where. `exit_status` is what the CLI returns."""

    exit_status = EXIT_ERROR


class SpecError(ProtolabError):
    """A spec that cannot run: names the file, the field and why."""

    exit_status = EXIT_SPEC


class LabBusyError(ProtolabError):
    """Another live protolab process holds the machine's lab state."""

    exit_status = EXIT_BUSY

    def __init__(self, holder: dict[str, Any], hint: str = "") -> None:
        self.holder = holder
        what = holder.get("command") or "a protolab process"
        run = f", run {holder['run_id']}" if holder.get("run_id") else ""
        since = f", since {holder['since']}" if holder.get("since") else ""
        msg = (f"the lab state of this machine is held by PID {holder.get('pid', '?')} ({what}{run}{since}); "
               "wait for it to finish or stop it")  # fmt: skip
        super().__init__(msg + (f"; {hint}" if hint else ""))


class DockerUnreachableError(ProtolabError):
    """The Docker engine does not answer."""

    def __init__(self, why: str) -> None:
        super().__init__(f"the Docker engine does not answer ({why}); start dockerd (`make setup` does) and retry")


class TaskHungError(ProtolabError):
    """A workload task ran past its phase's watchdog."""


class ExecTimeoutError(ProtolabError):
    """A command inside a node ran past its timeout (and was killed)."""


class LabError(ProtolabError):
    """Deploying or using a lab failed (containers, Mininet, routes, leftovers of earlier runs)."""


class MonitoringError(ProtolabError):
    """Prometheus or Grafana did not come up, answer or scrape as needed."""


class ImageError(ProtolabError):
    """A container image is missing or could not be built."""
