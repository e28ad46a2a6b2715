"""The NIC receive-filter model: one protolab-nicfilter process for a list of host interfaces.

Each host interface's NIC filter (`perfect`, `hash64` or `promiscuous`, agents/nicfilter) is modelled by an
eBPF program at the egress of the bridge port toward the host, in the root namespace. The process keeps the
attachments (unpinned: they go when it exits), follows each host's joined groups, and serves its counters as
JSON on GET /stats of its control socket `<state dir>/nicfilter/<our pid>-<name>.sock`. Its environment names
it `PROTOLAB_NODE=nicfilter-<name>`.
"""

from __future__ import annotations

import collections
import collections.abc
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import monitor, naming
from .helperproc import HelperProcess

NICFILTER = Path(__file__).resolve().parents[2] / "images" / "node" / "bin" / "protolab-nicfilter"
MODES = ("perfect", "hash64", "promiscuous")
VERDICTS = ("passed", "dropped_unicast", "dropped_multicast")
START_TIMEOUT = 10.0  # seconds until its "ready" line, and per filtered interface:
START_PER_INTERFACE = 0.05  # it attaches them one by one (measured: 13 ms each on a 2-core VM, 128 in 1.7 s)
STOP_TIMEOUT = 5.0  # seconds from SIGTERM to its exit, and per filtered interface: it detaches and closes them
STOP_PER_INTERFACE = 0.05  # one by one (measured: 0.82 s for 64, 3.39 s for 256, about 13 ms each)
TAIL_LINES = 50  # last lines of its stderr and stdout kept for error messages
POLL = "100ms"  # how often it reads the hosts' multicast lists

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class FilteredInterface:
    """One host interface whose NIC filter is modelled."""

    port: str  # the bridge port toward the host, in the root namespace (the veth peer of `ifname`)
    pid: int  # a process in the host's network namespace
    ifname: str  # the host's interface, in its namespace, e.g. h1-eth0
    mode: str = "perfect"

    def check(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"NIC filter mode {self.mode!r} of {self.port}: want one of {', '.join(MODES)}")
        if not self.port or not self.ifname:
            raise ValueError(f"NIC filter {self}: port and ifname must not be empty")
        if isinstance(self.pid, bool) or not isinstance(self.pid, int) or self.pid <= 0:
            raise ValueError(f"NIC filter of {self.port}: pid {self.pid!r} is not a process id")


def control_dir() -> Path:
    """The 0700 directory of the filters' control sockets, under the state directory."""
    d = monitor.state_dir() / "nicfilter"
    d.mkdir(mode=0o700, parents=True, exist_ok=True)
    d.chmod(0o700)
    return d


def command(interfaces: collections.abc.Sequence[FilteredInterface], control: Path) -> list[str]:
    """The process's command line for these interfaces."""
    if not interfaces:
        raise ValueError("NIC filter: no interface to filter")
    ports = [i.port for i in interfaces]
    if len(set(ports)) != len(ports):
        raise ValueError(f"NIC filter: a bridge port given twice in {ports}")
    args = [str(NICFILTER), "run", "--control", str(control), "--poll", POLL, "--log-level", "warn"]
    for i in interfaces:
        i.check()
        args += ["--port", i.port, "--pid", str(i.pid), "--ifname", i.ifname, "--mode", i.mode]
    return args


class NicFilter(HelperProcess):
    """One protolab-nicfilter process modelling the NIC filters of some host interfaces (usually one LAN's)."""

    def __init__(self, name: str, interfaces: collections.abc.Sequence[FilteredInterface], run_id: str = "") -> None:
        if not NICFILTER.exists():
            raise RuntimeError(f"{NICFILTER} is missing: run `make images` (it builds the NIC filter model)")
        if not name or "/" in name or name.startswith("."):
            raise ValueError(f"NIC filter name {name!r}: want a plain name (it names the control socket)")
        self.name, self.interfaces = name, tuple(interfaces)
        self.serves = "the NIC filters of " + ", ".join(i.ifname for i in self.interfaces)
        self.control = control_dir() / f"{os.getpid()}-{name}.sock"
        args = command(self.interfaces, self.control)
        self.control.unlink(missing_ok=True)  # a killed earlier process of this pid's
        env = {**os.environ, naming.PROCESS_ENV: f"nicfilter-{name}", "PROTOLAB_RUN": run_id}
        timeout = START_TIMEOUT + START_PER_INTERFACE * len(self.interfaces)
        self._start(args, env, "ready", f"protolab-nicfilter {name}", timeout, TAIL_LINES)

    def stats(self) -> dict[str, dict[str, Any]]:
        """Per bridge port: mode, mac, joined, mask and counters {verdict: {packets, bytes}} (GET /stats)."""
        return self._hosts("GET", "/stats")

    def refresh(self) -> dict[str, dict[str, Any]]:
        """Read the hosts' joins now and program the filters with them (POST /refresh); then as stats(). A real
        NIC's filter is programmed as its host joins; the model's poll lags a join by up to POLL."""
        return self._hosts("POST", "/refresh")

    def _hosts(self, method: str, path: str) -> dict[str, dict[str, Any]]:
        """The per-host answer of a control request, by bridge port."""
        if self.proc.poll() is not None:
            raise RuntimeError(f"protolab-nicfilter {self.name} exited ({self.proc.returncode}){self.output()}")
        status, text = self._request(method, path)
        if status != 200:
            raise RuntimeError(f"protolab-nicfilter {self.name}: {path} answered {status}: {text[:300]}")
        return {h["port"]: h for h in json.loads(text)["hosts"]}

    def stop(self) -> None:
        """Stop the process: its attachments go with it. Raises if it fails on the way out (exit code other than
        0); one that had ended before is the watcher's to report (helperproc.WATCH: the measurements it was out
        for are invalid), and leaves nothing to remove."""
        ended = self.proc.poll() is not None
        self._end(STOP_TIMEOUT + STOP_PER_INTERFACE * len(self.interfaces))
        code = self.proc.returncode
        if ended:
            log.warning("protolab-nicfilter %s had ended (%s)%s", self.name, code, self.output())
        elif code not in (0, -15):  # -15: killed by our SIGTERM before its handler was installed
            raise RuntimeError(f"protolab-nicfilter {self.name} exited with {code}{self.output()}")
