"""The workload contract: a task model (what the spec says) and a runner (how it runs in a lab).

A kind is registered once, on its task model: `@workload("ping", runner="protolab.workloads.ping_runner:PingRunner")`.
The spec imports task models only; the runner's module is imported when a phase first needs it.
"""

from __future__ import annotations

import importlib
import json
import re
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..errors import ProtolabError
from ..lab.api import NodeAccess
from ..registry import Registry
from ..units import Seconds

if TYPE_CHECKING:
    from ..topo import Topology

Link = tuple[str, str]


class WorkloadError(ProtolabError):
    """A workload's tool failed or gave no report; the phase (and the run) stops with this message."""


class TaskModel(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(..., pattern=r"^[a-z][a-z0-9_]*$", description="column prefix for its results")
    duration: Seconds
    sysctls: dict[str, str] = Field(
        default_factory=dict,
        description="network sysctls in the namespaces of the task's hosts for its phase, put back after it, "
        "e.g. {net.ipv4.tcp_sack: '0'} or {net.mptcp.stale_loss_cnt: '1'}",
    )

    @field_validator("sysctls", mode="before")
    @classmethod
    def _net_sysctls(cls, v: Any) -> Any:
        for key, value in (v or {}).items():
            if not re.fullmatch(r"net(\.[a-z0-9_]+)+", str(key)) or not re.fullmatch(r"[A-Za-z0-9_. -]+", str(value)):
                raise ValueError(f"{key}={value!r}: only net.* keys (the hosts' own namespaces) and plain values")
        return {str(k): str(x) for k, x in (v or {}).items()}

    def nodes(self) -> list[str]:
        """Hosts the task runs on (validated against the topology)."""
        raise NotImplementedError

    def columns(self) -> list[str]:
        """Tidy columns this task produces (`<task>_<quantity>_<unit>`)."""
        raise NotImplementedError

    def paths(self, topology: Topology) -> dict[str, list[list[Link]]]:
        """For each pair of hosts the task carries traffic between ('h1->h2'), its paths: each a list of links,
        all needed; one whole path is enough. The plan flags a fault schedule that leaves a pair no path for
        longer than the phase's `max_no_path`. Default: none (the task's traffic has no fixed path)."""
        return {}

    def address_family(self) -> int:
        """4 or 6: which of the lab's addresses the task sends to (a lab without IPv6 refuses 6)."""
        return 4

    def scrape_ports(self) -> dict[str, list[int]]:
        """Ports of the task's processes with their own /metrics, per node ("*": every node)."""
        return {}


class ClientServerTask(TaskModel):
    """A task between two hosts: a client that starts the traffic and a server that answers or receives it, sent to
    the server's IPv4 address or its IPv6 twin over one path (a task with more overrides `paths`). A task model
    redeclares `client`, `server` and `family` to describe them in its own words."""

    client: str = Field(..., description="host that starts the traffic")
    server: str = Field(..., description="host that answers or receives it")
    family: Literal["ipv4", "ipv6"] = Field("ipv4", description="send to the server's IPv4 address or its IPv6 twin")

    @model_validator(mode="after")
    def _two_hosts(self) -> ClientServerTask:
        if self.client == self.server:
            raise ValueError("client and server are the same host")
        return self

    def address_family(self) -> int:
        return 6 if self.family == "ipv6" else 4

    def nodes(self) -> list[str]:
        return [self.client, self.server]

    def paths(self, topology: Topology) -> dict[str, list[list[Link]]]:
        return {f"{self.client}->{self.server}": host_paths(topology, self.client, self.server)}


def host_paths(topology: Topology, client: str, server: str, interfaces: tuple[int, ...] = (0,)) -> list[list[Link]]:
    """The paths from `client` to each of `server`'s interfaces (by index, its links in order, as `lab.ip(server,
    i)` addresses them): the shortest way to the far end of that link through switches and forwarding nodes, then
    the link. An interface the server lacks, or one the client cannot reach, gives no path (the plan then has
    nothing to flag for it)."""
    own = [lk for lk in topology.links if server in (lk.node1, lk.node2)]
    transit = {s.name for s in topology.switches} | {h.name for h in topology.hosts if h.forwarding}
    out: list[list[Link]] = []
    for i in interfaces:
        if i >= len(own):
            continue
        last = own[i]
        far = last.node2 if last.node1 == server else last.node1
        if far != client and far not in transit:
            continue  # a host that does not forward
        way = _shortest(topology, client, far, transit - {server})
        if way is not None and (path := [*way, (last.node1, last.node2)]) not in out:
            out.append(path)
    return out


def _shortest(topology: Topology, a: str, b: str, transit: set[str]) -> list[Link] | None:
    """Links of a shortest way from a to b passing only through `transit` nodes (breadth first)."""
    if a == b:
        return []
    came: dict[str, tuple[str, Link]] = {}
    queue = deque([a])
    while queue:
        n = queue.popleft()
        for lk in topology.links:
            if n not in (lk.node1, lk.node2):
                continue
            m = lk.node2 if lk.node1 == n else lk.node1
            if m == a or m in came:
                continue
            came[m] = (n, (lk.node1, lk.node2))
            if m == b:
                way = []
                while m != a:
                    m, link = came[m]
                    way.append(link)
                return way[::-1]
            if m in transit:
                queue.append(m)
    return None


LabAPI = NodeAccess  # what a runner may use of a running lab (protolab.lab.api, both labs keep it)


T = TypeVar("T", bound=TaskModel)


def wait_in_node(lab: LabAPI, host: str, check: str, tries: int = 100) -> bool:
    """Poll the shell condition `check` inside `host` every 50 ms, `tries` times at most; whether it came true (a
    server seen listening, a monitor seen running)."""
    script = f"for i in $(seq {tries}); do {check} && exit 0; sleep 0.05; done; exit 1"
    return lab.exec(host, ["sh", "-c", script])[0] == 0


class WorkloadRunner(Generic[T]):
    """prepare() before the phase starts, run() in its own thread for the phase, result() after it."""

    def __init__(self, task: T, lab: LabAPI) -> None:
        self.task, self.lab = task, lab
        self.started: float | None = None  # unix time traffic began, when later than the phase's start
        # why the task measured nothing (e.g. a transport this kernel lacks): its columns are None, the run stays
        # valid and says so in one line (summary.json "skipped")
        self.skipped: str | None = None
        # why the task's measurement is not of what the spec asked for (e.g. a sender that fell behind its rate and
        # caught up in a burst): each makes the measurement invalid, named with the point
        self.invalid: list[str] = []
        # of those, the ones a chance event of the tool's own caused (e.g. a control message lost on a lossy link):
        # the measurement is made again, like one the machine's surroundings disturbed
        self.remake: list[str] = []
        self.sysctls_set: dict[str, dict[str, str]] = {}  # the task's sysctls per node, as read back (the phase's)

    def prepare(self) -> None:
        """Start servers and listeners; returns when they are ready."""

    def run(self) -> None:
        raise NotImplementedError

    def result(self) -> dict[str, float | None]:
        """The task's columns (TaskModel.columns) with their values."""
        raise NotImplementedError

    def fault_edges(self, events: list[Any]) -> dict[str, float | None]:
        """Columns comparing what the task saw with the phase's fault events (e.g. outage edges)."""
        return {}

    def series(self) -> list[tuple[Any, ...]]:
        """Raw samples for timeline and raw plots: (series, unix time, value), or (series, unix time, value,
        labels) with a dict of labels (a histogram's cumulative `<name>_bucket` rows carry `le`)."""
        return []

    def raw(self) -> dict[str, Any]:
        """The tools' own reports (JSON objects or text) by name, kept with the task's figures in raw/tasks/."""
        return {}


@dataclass(frozen=True)
class Workload:
    kind: str
    model: type[TaskModel]
    runner: str  # "module:Class", imported on first use

    def runner_class(self) -> type[WorkloadRunner[Any]]:
        module, _, name = self.runner.partition(":")
        return getattr(importlib.import_module(module), name)


WORKLOADS: Registry[Workload] = Registry("workload")
TASK_MODELS: dict[str, type[TaskModel]] = {}  # kind -> task model, for the spec's discriminated union


def workload(kind: str, runner: str):
    """Register a task model and (by name) its runner as the workload `kind`."""

    def deco(cls: type[TaskModel]) -> type[TaskModel]:
        WORKLOADS.register(kind, Workload(kind, cls, runner))
        TASK_MODELS[kind] = cls
        return cls

    return deco


def runner_for(task: TaskModel, lab: LabAPI) -> WorkloadRunner[Any]:
    return WORKLOADS.get(task.kind).runner_class()(task, lab)  # type: ignore[attr-defined]


def json_report(out: str, what: str, code: int, err: str, check_exit: bool = True) -> dict[str, Any]:
    """A tool's JSON report: its whole output (iperf3 -J), else its last line that is a JSON object (agents
    log before it). A report with an "error" field, no report, or (with check_exit) a non-zero exit status
    raise WorkloadError with the tool's last words."""
    report: Any = None
    try:
        report = json.loads(out)
    except json.JSONDecodeError:
        lines = [ln for ln in out.splitlines() if ln.startswith("{")]
        if lines:
            try:
                report = json.loads(lines[-1])
            except json.JSONDecodeError:
                report = None
    if isinstance(report, dict) and report.get("error"):
        raise WorkloadError(f"{what}: {report['error']}")
    if not isinstance(report, dict) or (check_exit and code != 0):
        raise WorkloadError(f"{what}: exit {code}, no JSON report: {(err or out).strip()[-400:]}")
    return report
