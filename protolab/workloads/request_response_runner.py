"""Running a request_response task: the hosts' MPTCP path manager and route options set for the phase and put
back after it, one responder, one initiator that runs until the phase's duration, and `ip mptcp monitor` on the
client while it runs (the subflows' events, in raw/)."""

from __future__ import annotations

import re
import threading
import time
from datetime import UTC, datetime
from typing import Any

from .base import LabAPI, WorkloadError, WorkloadRunner, wait_in_node
from .request_response import RequestResponseTask
from .spims_agent import Responder, TransportUnavailableError, initiate, target

MPTCP_SYSCTLS = ("net.mptcp.enabled", "net.mptcp.path_manager", "net.mptcp.scheduler", "net.mptcp.stale_loss_cnt")


def failover(
    late: list[tuple[float, float]], timeouts: list[float], timeout: float, edges: list[float]
) -> float | None:
    """The longest time from a link going down (unix seconds) to the first reply after it: the exchange in flight
    at the edge completes late (start, seconds), or times out (start) after `timeout` and the next one is in
    flight then, and so on; an instant with nothing late or timed out in flight answers within the late bound
    (counted as answered then). None without edges."""
    if not edges:
        return None
    worst, slack = 0.0, 0.01  # the next exchange starts within `slack` of the last one's end
    for edge in edges:
        t = edge
        for _ in range(len(timeouts) + 1):
            gone = [s + timeout for s in timeouts if s <= t + slack and t < s + timeout]
            if not gone:
                break
            t = max(gone)
        done = [s + rtt for s, rtt in late if s <= t + slack and t <= s + rtt]
        worst = max(worst, (max(done) if done else t) - edge)
    return worst


MONITOR_RE = re.compile(r"^\[(?P<ts>[0-9T:.\-]+)\]\s+\[\s*(?P<event>[A-Z_]+)\]\s*(?P<rest>.*)$")


def monitor_events(text: str) -> list[tuple[float, str, dict[str, str]]]:
    """`ip -ts mptcp monitor` lines as (unix time, event, fields); lines of another shape are left out. The
    timestamps are the host's local time (UTC in lab containers)."""
    out = []
    for line in text.splitlines():
        m = MONITOR_RE.match(line.strip())
        if not m:
            continue
        try:
            at = datetime.fromisoformat(m["ts"]).replace(tzinfo=UTC).timestamp()
        except ValueError:
            continue
        fields = dict(kv.split("=", 1) for kv in m["rest"].split() if "=" in kv)
        out.append((at, m["event"], fields))
    return out


def subflow_series(text: str, name: str) -> list[tuple[str, float, float, dict[str, str]]]:
    """The number of established subflows after each subflow event (a step series named `name`), labelled with
    the event and the subflow (saddr:sport->daddr:dport): the MPTCP connection's own timeline. The initial
    subflow counts from ESTABLISHED; CLOSED ends them all."""
    up: set[str] = set()
    out = []
    for at, event, f in monitor_events(text):
        saddr, daddr = (f.get(f"{k}4") or f.get(f"{k}6") or "?" for k in ("saddr", "daddr"))
        sf = f"{saddr}:{f.get('sport', '?')}->{daddr}:{f.get('dport', '?')}"
        if event in ("ESTABLISHED", "SF_ESTABLISHED"):
            up.add(sf)
        elif event == "SF_CLOSED":
            up.discard(sf)
        elif event == "CLOSED":
            up.clear()
        elif event != "SF_PRIORITY":
            continue  # CREATED, ANNOUNCED, REMOVED, LISTENER_*: not a subflow changing state
        labels = {"event": event} | ({"subflow": sf} if event != "CLOSED" else {})
        if "backup" in f:
            labels["backup"] = f["backup"]
        out.append((name, at, float(len(up)), labels))
    return out


def rtt_max(result: dict[str, Any]) -> float | None:
    """The longest round trip, a timed-out one counted as the timeout (it took at least that)."""
    top = (result.get("seconds") or {}).get("max")
    if result.get("timeouts"):
        top = max(top or 0.0, result.get("timeout_seconds") or 0.0)
    return top


class RequestResponseRunner(WorkloadRunner[RequestResponseTask]):
    def __init__(self, task: RequestResponseTask, lab: LabAPI) -> None:
        super().__init__(task, lab)
        self.result_json: dict[str, Any] = {}
        self.responder: Responder | None = None
        self.setup: dict[str, Any] = {}
        self.monitor: dict[str, str] = {}
        self._undo: list[tuple[str, list[str]]] = []
        self._monitor_thread: threading.Thread | None = None

    def _sh(self, node: str, script: str, undo: str | None = None) -> str:
        """A constant script (no value interpolated: those go through _run)."""
        return self._run(node, ["sh", "-c", script], ["sh", "-c", undo] if undo else None)

    def _run(self, node: str, argv: list[str], undo: list[str] | None = None) -> str:
        code, out, err = self.lab.exec(node, argv)
        if code != 0:
            what = argv[2] if argv[:2] == ["sh", "-c"] else " ".join(argv)
            raise WorkloadError(f"request_response task {self.task.name} on {node}: `{what}`: {(err or out)[-300:]}")
        if undo:
            self._undo.append((node, undo))
        return out

    def _intf(self, node: str, index: int) -> str:
        return self.lab.data_interfaces(node)[index]

    def _address(self, node: str, index: int) -> str:
        return self.lab.ip(node, index, family=self.task.address_family())

    def prepare(self) -> None:
        t = self.task
        if t.two_paths():
            for node in (t.client, t.server):
                if len(self.lab.data_interfaces(node)) < 2:
                    raise WorkloadError(f"request_response task {t.name}: {node} has one interface; mptcp and "
                                        "redundant need two (a dual_homed topology)")  # fmt: skip
        if t.mptcp:
            for node in (t.client, t.server):
                limits = "ip mptcp limits set subflows {0} add_addr_accepted {0}"
                self._sh(node, "ip mptcp endpoint flush && " + limits.format(2),
                         undo="ip mptcp endpoint flush; " + limits.format(0))  # fmt: skip
            self._run(t.server, ["ip", "mptcp", "endpoint", "add", self._address(t.server, 1), "dev",
                                 self._intf(t.server, 1), "signal"])  # fmt: skip
            flag = "backup" if t.mptcp == "backup" else "fullmesh"
            self._run(t.client, ["ip", "mptcp", "endpoint", "add", self._address(t.client, 1), "dev",
                                 self._intf(t.client, 1), "subflow", flag])  # fmt: skip
            for node in (t.client, t.server):
                self.setup[node] = {
                    "endpoints": self._sh(node, "ip mptcp endpoint show").strip(),
                    "limits": self._sh(node, "ip mptcp limits show").strip(),
                    "sysctls": self._sh(node, "sysctl " + " ".join(MPTCP_SYSCTLS) + " 2>/dev/null || true").strip(),
                }  # fmt: skip
        if t.rto_min is not None:
            for node in (t.client, t.server):
                routes = [r for r in self._sh(node, "ip -o route show").splitlines() if r and "rto_min" not in r
                          and not r.startswith(("224.", "multicast"))]  # fmt: skip
                for r in routes:  # `ip -o route` words, each one argument again (a lone backslash: its line breaks)
                    words = [w for w in r.split() if w != "\\"]
                    self._run(node, ["ip", "route", "change", *words, "rto_min", f"{t.rto_min * 1e3:g}ms"],
                              undo=["ip", "route", "replace", *words])  # fmt: skip
                self.setup.setdefault(node, {})["routes"] = self._sh(node, "ip route show").strip()
        self.setup["tuning"] = self.tuning()
        self.responder = Responder(self.lab, t.server, t.transport, t.port)
        try:
            self.responder.start()
        except TransportUnavailableError as exc:
            self.skipped = str(exc)
            self._restore()
            return
        if t.transport == "mptcp":
            self._monitor_thread = threading.Thread(target=self._monitor, daemon=True, name=f"mptcp-{t.name}")
            self._monitor_thread.start()
            # listening before the first connection: its CREATED and SF_ESTABLISHED events are the timeline's start
            if wait_in_node(self.lab, t.client, "pgrep -f 'ip -ts mptcp monitor' >/dev/null", tries=40):
                time.sleep(0.2)  # from the process to its netlink subscription

    def tuning(self) -> dict[str, Any]:
        """The task's TCP tuning in one place: rto_min on the hosts' routes (their routes as set are under each
        host), the sysctls as read back from each host, and the initiator's socket knobs as asked (`options`);
        after the run `socket` adds what each connection had in force (the agent's getsockopt)."""
        t = self.task
        return {
            "rto_min": None if t.rto_min is None else f"{t.rto_min * 1e3:g}ms",
            "sysctls": {node: dict(v) for node, v in self.sysctls_set.items()},
            "options": dict(t.options),
        }

    def _monitor(self) -> None:
        """`ip -ts mptcp monitor` on the client until run() ends it (its lines are the subflows' timeline)."""
        code, out, err = self.lab.exec(self.task.client, ["timeout", "-s", "INT", f"{self.task.duration + 30:g}",
                                                          "ip", "-ts", "mptcp", "monitor"])  # fmt: skip
        self.monitor = {"stdout": out[-200000:], "stderr": err[-2000:]}

    def job(self) -> dict[str, Any]:
        t = self.task
        job: dict[str, Any] = {
            "procedure": "request_response", "transport": t.transport, "iterations": 0,
            "target": target(self._address(t.server, 0), t.port), "time_limit": f"{t.duration:g}s",
            "size": {"dist": "constant", "value": t.size}, "timeout": f"{t.timeout:g}s",
            "late_bound": f"{t.late_bound:g}s", "block": t.block,
        }  # fmt: skip
        if t.interval:
            job["delay"] = {"dist": "constant", "value": f"{t.interval:g}s"}
        if t.redundant:
            job |= {"source": self._address(t.client, 0), "source2": self._address(t.client, 1),
                    "target2": target(self._address(t.server, 1), t.port)}  # fmt: skip
        if t.options:
            job["options"] = dict(t.options)
        return job

    def run(self) -> None:
        t = self.task
        if self.skipped:
            return
        try:
            code, self.result_json = initiate(self.lab, t.client, self.job(), t.name)
            self.setup.setdefault("tuning", self.tuning())["socket"] = [
                p.get("tuning") or {} for p in self.result_json.get("paths") or []
            ]
            if code != 0:
                raise WorkloadError(f"request_response task {t.name}: exit {code}: {self.result_json.get('error')}")
        finally:
            if self.responder is not None:
                self.responder.stop()
            if self._monitor_thread is not None:
                self.lab.exec(t.client, ["pkill", "-INT", "-f", "ip -ts mptcp monitor"])
                self._monitor_thread.join(timeout=10)
            self._restore()

    def _restore(self) -> None:
        """The hosts' MPTCP endpoints and routes as they were before the task."""
        for node, cmd in reversed(self._undo):
            self.lab.exec(node, cmd)
        self._undo = []

    def fault_edges(self, events: list[Any]) -> dict[str, float | None]:
        """Failover after every link that went down: cut (`down`) or black-holed (`set` to 100 % loss)."""
        edges = [e.wall for e in events if e.wall is not None and (e.action == "down" or (
            e.action == "set" and e.impairment is not None and (e.impairment.loss or 0) >= 1.0))]  # fmt: skip
        r = self.result_json
        late = [(s / 1e9, v) for s, v in zip(r.get("late_at_unix_ns") or [], r.get("late_seconds") or [], strict=False)]
        timeouts = [s / 1e9 for s in r.get("timeout_at_unix_ns") or []]
        worst = failover(late, timeouts, r.get("timeout_seconds") or self.task.timeout, edges)
        return {f"{self.task.name}_failover_max_seconds": worst}

    def series(self) -> list[tuple[Any, ...]]:
        r, n = self.result_json, self.task.name
        late = [(f"{n}_late_rtt_seconds", s / 1e9, v)
                for s, v in zip(r.get("late_at_unix_ns") or [], r.get("late_seconds") or [], strict=False)]  # fmt: skip
        start, blocks = (r.get("start_unix_ns") or 0) / 1e9, r.get("block_max_seconds") or []
        span = (r.get("elapsed_seconds") or 0) / max(1, len(blocks))
        end = start + (r.get("elapsed_seconds") or 0)
        cum, hist = 0, []
        for b in r.get("histogram") or []:  # every round trip, Prometheus style: cumulative counts per upper edge
            cum += int(b["count"])
            hist.append((f"{n}_rtt_seconds_bucket", end, float(cum), {"le": f"{b['le']:.6g}"}))
        blocks_s = [(f"{n}_block_max_seconds", start + i * span, v) for i, v in enumerate(blocks)]
        return [*late, *blocks_s, *hist, *subflow_series(self.monitor.get("stdout", ""), f"{n}_subflows")]

    def raw(self) -> dict[str, Any]:
        return {"result": self.result_json, "setup": self.setup, "mptcp_monitor": self.monitor}

    def result(self) -> dict[str, float | None]:
        r, n = self.result_json, self.task.name
        if self.skipped:
            return dict.fromkeys(self.task.columns())
        s = r.get("seconds") or {}
        done, late = r.get("completed") or 0, r.get("late") or 0
        return {
            f"{n}_rtt_mean_seconds": s.get("mean"), f"{n}_rtt_p50_seconds": s.get("p50"),
            f"{n}_rtt_p99_seconds": s.get("p99"), f"{n}_rtt_p999_seconds": s.get("p999"),
            f"{n}_rtt_max_seconds": rtt_max(r), f"{n}_exchanges_total": float(done),
            f"{n}_late_total": float(late), f"{n}_late_ratio": late / done if done else None,
            f"{n}_timeouts_total": float(r.get("timeouts") or 0), f"{n}_failover_max_seconds": None,
        }  # fmt: skip
