"""Running a converter task: every node's `protolab-converter` process, their JSON summaries, and the counters.

Order: C_2, then the C_1s (each joins its share of the WAN groups with real IGMP and listens for C_2's bundles),
each started with the phase's duration plus a lead and the tail, and waited for until their /metrics answers;
then, together, the router's outside source/sink (`wan`) and every simulation host (`h` behind the converter,
`host` in the baseline) for the phase's duration. Every process serves its metrics on naming.CONVERTER_PORT
and prints one JSON summary line when it ends.

CPU and link counters are read from the machine, not from inside the containers (a `docker exec` would run in
the node's cgroup and be counted as its CPU): each node's cgroup CPU (cpuacct.usage, or cpu.stat on cgroup v2,
found through /proc/<container pid>/cgroup), each node's interface counters (/proc/net/dev of its network
namespace, through nsenter), and each hub's medium (the transmit counters of its IFB, `plab-<switch>-ifb`).
Both snapshots lie inside the sources' sending: they wait START_DELAY before sending (every host has joined its
groups, behind the converter acknowledged by C_2 once a C_1 has joined them) and keep receiving `tail` after; the
first snapshot is taken `settle` into the sending, the second just before it stops, so start-up and drain are
left out.
"""

from __future__ import annotations

import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import naming
from ..counters import cgroup_cpu_seconds, parse_proc_net_dev
from ..shell import run as sh
from ..topo import Topology
from ..units import format_rate
from .base import LabAPI, WorkloadError, WorkloadRunner, json_report
from .converter import COLUMNS, SEGMENTS, ConverterTask

LEAD = 3.0  # C_1/C_2 run this much longer than the sources: their start-up, before the sources begin
READY_TIMEOUT = 20.0
WINDOW_EDGE = 0.3  # the second snapshot is taken this long before the sources' end
START_DELAY = 1.0  # sources wait this long before sending, so every receiver (and C_2's joins) is in place


# -- what the topology says ----------------------------------------------------------------------------------
@dataclass
class Roles:
    hosts: list[str]
    c1s: list[str]
    c2: str | None
    router: str

    @classmethod
    def of(cls, topology: Topology, router: str) -> Roles:
        by_role: dict[str, list[str]] = {}
        for h in topology.hosts:
            by_role.setdefault(h.role, []).append(h.name)
        c2 = by_role.get("converter-c2", [])
        if len(c2) > 1:
            raise ValueError(f"converter task: one C_2 per topology, found {c2}")
        if not by_role.get("host"):
            raise ValueError(f"converter task: topology {topology.kind} has no simulation hosts (role host)")
        c1s = by_role.get("converter-c1", [])
        if bool(c1s) != bool(c2):
            raise ValueError(f"converter task: C_1s {c1s} and C_2 {c2} go together")
        return cls(by_role["host"], c1s, c2[0] if c2 else None, router)

    @property
    def converter(self) -> bool:
        return self.c2 is not None

    def all(self) -> list[str]:
        return [*self.hosts, *self.c1s, *([self.c2] if self.c2 else []), self.router]


def segment_links(topology: Topology) -> dict[str, list[tuple[str, str, float | None]]]:
    """segment -> [(node, switch, link rate)] for every node-to-switch link."""
    switches = {s.name for s in topology.switches}
    out: dict[str, list[tuple[str, str, float | None]]] = {}
    for lk in topology.links:
        if lk.node2 in switches and lk.node1 not in switches:
            out.setdefault(lk.segment, []).append((lk.node1, lk.node2, lk.rate_bps))
        elif lk.node1 in switches and lk.node2 not in switches:
            out.setdefault(lk.segment, []).append((lk.node2, lk.node1, lk.rate_bps))
    return out


def node_interfaces(topology: Topology) -> dict[tuple[str, str], str]:
    """(node, switch) -> the node's interface on that switch (`<node>-eth<N>`, Mininet's order)."""
    intfs = topology.interfaces()
    seen: dict[str, int] = {}
    out: dict[tuple[str, str], str] = {}
    for lk in topology.links:
        for a, b in ((lk.node1, lk.node2), (lk.node2, lk.node1)):
            i = seen.get(a, 0)
            seen[a] = i + 1
            out[(a, b)] = intfs[a][i]
    return out


def capacity(topology: Topology, node: str, switch: str) -> float | None:
    """The capacity a node has toward a switch: the hub's medium, or its link's rate."""
    sw = next(s for s in topology.switches if s.name == switch)
    if sw.mode == "hub":
        return sw.capacity_bps
    for lk in topology.links:
        if {lk.node1, lk.node2} == {node, switch}:
            return lk.rate_bps
    return None


def _switches_of(topology: Topology, node: str) -> list[str]:
    """The switches a node is linked to, in link order (its eth0's first)."""
    names = {s.name for s in topology.switches}
    out = []
    for lk in topology.links:
        if lk.node1 == node and lk.node2 in names:
            out.append(lk.node2)
        elif lk.node2 == node and lk.node1 in names:
            out.append(lk.node1)
    return out


def _ip(topology: Topology, node: str, switch: str) -> str:
    for lk in topology.links:
        if lk.node1 == node and lk.node2 == switch and lk.ip1:
            return lk.ip1.split("/")[0]
        if lk.node2 == node and lk.node1 == switch and lk.ip2:
            return lk.ip2.split("/")[0]
    raise ValueError(f"{node} has no address on {switch}")


def _broadcast(ip: str) -> str:
    return ".".join(ip.split(".")[:3] + ["255"])  # the lab's LANs are /24s


# -- the commands ---------------------------------------------------------------------------------------------
def commands(t: ConverterTask, topology: Topology, roles: Roles) -> dict[str, list[str]]:
    """node -> protolab-converter arguments (durations: the converters get LEAD + tail more than the sources)."""
    load = ["--size", str(int(t.size)), "--hosts", str(len(roles.hosts)), "--to", str(t.to),
            "--wan-groups", str(t.wan_groups), f"--priority={t.priority:g}"]  # fmt: skip
    metrics = ["--listen", f":{naming.CONVERTER_PORT}"]
    src = [f"--duration={t.duration:g}s", f"--start-delay={START_DELAY:g}s", f"--drain={t.tail:g}s"]
    srv = [f"--duration={t.duration + LEAD + t.tail:g}s"]
    rate = f"{t.host_messages_per_second:g}"
    iv = f"--interval={t.interval * 1000:g}ms"
    c2_port, c1_port, h_port = t.port, t.port + 1, t.port + 2
    out: dict[str, list[str]] = {}
    r_sw = _switches_of(topology, roles.router)[0]
    ifaces = node_interfaces(topology)
    out[roles.router] = ["wan", "--iface", ifaces[(roles.router, r_sw)], "--base", t.base,
                         "--rate", f"{t.wan_messages_per_second:g}", "--arrival", t.arrival, *load, *metrics,
                         *src]  # fmt: skip
    if not roles.converter:
        for i, h in enumerate(roles.hosts, 1):
            sw = _switches_of(topology, h)[0]
            out[h] = ["host", "--id", str(i), "--iface", ifaces[(h, sw)], "--base", t.base, "--rate", rate,
                      "--arrival", t.arrival, *load, *metrics, *src]  # fmt: skip
        return out
    assert roles.c2 is not None
    c2_sws = _switches_of(topology, roles.c2)
    host_sw, c1_sw = c2_sws[0], c2_sws[-1]  # c2-eth0 faces the hosts; the last link the C_1s (one hub: the same)
    c2_to_hosts, c2_to_c1s = _ip(topology, roles.c2, host_sw), _ip(topology, roles.c2, c1_sw)
    c1_addrs = [f"{_ip(topology, c, _switches_of(topology, c)[0])}:{c1_port}" for c in roles.c1s]
    out[roles.c2] = ["c2", "--port", str(c2_port), "--c1", ",".join(c1_addrs),
                     "--hosts", f"{_broadcast(c2_to_hosts)}:{h_port}",
                     "--host-capacity", format_rate(capacity(topology, roles.c2, host_sw) or 10e6),
                     "--c1-capacity", format_rate(capacity(topology, roles.c2, c1_sw) or 100e6),
                     iv, *metrics, *srv]  # fmt: skip
    if t.max_bundle is not None:
        out[roles.c2] += ["--max-bundle", str(int(t.max_bundle))]
    if t.reliable:
        out[roles.c2].append("--reliable")
    for i, c in enumerate(roles.c1s, 1):
        sw = _switches_of(topology, c)[0]
        out[c] = ["c1", "--id", str(i), "--c2", f"{c2_to_c1s}:{c2_port}", "--port", str(c1_port),
                  "--iface", ifaces[(c, sw)], "--base", t.base, iv, "--mtu", str(int(t.mtu)),
                  "--wan-groups", str(t.wan_groups), *metrics, *srv]  # fmt: skip
    for i, h in enumerate(roles.hosts, 1):
        out[h] = ["h", "--id", str(i), "--c2", f"{c2_to_hosts}:{c2_port}", "--port", str(h_port), "--rate", rate,
                  "--arrival", t.arrival, iv, *load, *metrics, *src]  # fmt: skip
        if t.reliable:
            out[h].append("--reliable")
    return out


# -- counters read from the machine -----------------------------------------------------------------------------
@dataclass
class Snapshot:
    at: dict[str, float] = field(default_factory=dict)  # node or medium -> monotonic time read
    cpu: dict[str, float] = field(default_factory=dict)  # node -> cgroup CPU seconds
    net: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)  # node -> interface -> counters
    medium: dict[str, int] = field(default_factory=dict)  # hub -> bytes through its medium


def snapshot(pids: dict[str, int], hubs: list[str]) -> Snapshot:
    s = Snapshot()
    for node, pid in pids.items():
        cpu = cgroup_cpu_seconds(pid)
        if cpu is None:
            raise WorkloadError(f"{node}: no CPU accounting found for pid {pid} (/proc/{pid}/cgroup)")
        s.cpu[node] = cpu
        s.net[node] = parse_proc_net_dev(sh(["nsenter", "-t", str(pid), "-n", "cat", "/proc/net/dev"]))
        s.at[node] = time.monotonic()
    for hub in hubs:
        ifb = naming.bridge_name(hub) + "-ifb"
        s.medium[hub] = int(Path(f"/sys/class/net/{ifb}/statistics/tx_bytes").read_text())
        s.at[hub] = time.monotonic()
    return s


# -- columns ------------------------------------------------------------------------------------------------
def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def utilisation(topology: Topology, before: Snapshot, after: Snapshot) -> dict[str, float | None]:
    """util_<segment>_ratio for the task's segments (see the converter module's docstring)."""
    hubs = {s.name: s for s in topology.switches if s.mode == "hub"}
    ifaces = node_interfaces(topology)
    links = segment_links(topology)
    out: dict[str, float | None] = {}
    for seg in SEGMENTS:
        vals = []
        for node, sw, rate in links.get(seg, []):
            if sw in hubs:
                dt = after.at[sw] - before.at[sw]
                bits = 8 * (after.medium[sw] - before.medium[sw])
                vals.append(bits / dt / (hubs[sw].capacity_bps or float("nan")))
            elif rate:
                intf = ifaces[(node, sw)]
                a, b = after.net[node][intf], before.net[node][intf]
                bits = 8 * (a["rx_bytes"] - b["rx_bytes"] + a["tx_bytes"] - b["tx_bytes"])
                vals.append(bits / (after.at[node] - before.at[node]) / rate)
        out[f"util_{seg}_ratio"] = _mean(vals)
    return out


def columns(
    t: ConverterTask,
    topology: Topology,
    roles: Roles,
    reports: dict[str, dict[str, Any]],
    before: Snapshot,
    after: Snapshot,
    budgets: dict[str, float | None],
) -> dict[str, float | None]:
    """The task's tidy columns from the processes' JSON summaries and the two counter snapshots."""

    def cores(node: str) -> float:
        return (after.cpu[node] - before.cpu[node]) / (after.at[node] - before.at[node])

    def share(node: str) -> float:
        return cores(node) / (budgets.get(node) or 1.0)

    ifaces = node_interfaces(topology)
    rx_pps = []
    for h in roles.hosts:
        intf = ifaces[(h, _switches_of(topology, h)[0])]
        rx_pps.append((after.net[h][intf]["rx_packets"] - before.net[h][intf]["rx_packets"])
                      / (after.at[h] - before.at[h]))  # fmt: skip
    host_reps = [reports[h] for h in roles.hosts]
    wan = reports[roles.router]
    received = sum(int(r.get("received") or 0) for r in host_reps)
    expected = expected_total(roles, reports)
    lost = max(0, expected - received)
    counts = [int(r.get("received") or 0) for r in host_reps]
    delays = [(r.get("delay_mean_seconds"), c) for r, c in zip(host_reps, counts, strict=True)]
    weighted = [(d, c) for d, c in delays if d is not None and c > 0]
    p99s = [r["delay_p99_seconds"] for r in host_reps if r.get("delay_p99_seconds") is not None]
    secs = [float(r.get("elapsed_seconds") or t.duration) for r in host_reps]
    dropped = 0
    for r in reports.values():
        dropped += sum(int(v) for v in (r.get("dropped") or {}).values())
    vals: dict[str, float | None] = {
        "host_cpu_ratio": _mean([cores(h) for h in roles.hosts]),
        "host_cpu_max_ratio": max(cores(h) for h in roles.hosts),
        "host_cpu_share_ratio": _mean([share(h) for h in roles.hosts]),
        "c1_cpu_ratio": _mean([cores(c) for c in roles.c1s]),
        "c1_cpu_share_ratio": _mean([share(c) for c in roles.c1s]),
        "c2_cpu_ratio": cores(roles.c2) if roles.c2 else None,
        "c2_cpu_share_ratio": share(roles.c2) if roles.c2 else None,
        "delay_mean_seconds": sum(d * c for d, c in weighted) / sum(c for _, c in weighted) if weighted else None,
        "delay_p99_seconds": max(p99s) if p99s else None,
        "delivered_messages_per_second": _mean([c / s for c, s in zip(counts, secs, strict=True)]),
        "loss_ratio": lost / expected if expected else None,
        "expected_total": expected,
        "lost_total": lost,
        "reflected_total": sum(int(r.get("reflected") or 0) for r in host_reps),
        "host_rx_packets_per_second": _mean(rx_pps),
        "wan_sent_messages_per_second": int(wan.get("sent") or 0) / float(wan.get("elapsed_seconds") or t.duration),
        "host_sent_messages_per_second": _mean(
            [int(r.get("sent") or 0) / s for r, s in zip(host_reps, secs, strict=True)]
        ),
        **utilisation(topology, before, after),
        "dropped_total": dropped,
        "priority_loss_ratio": priority_loss(roles, reports),
        "retransmitted_total": sum(int(r.get("retransmitted") or 0) for r in reports.values()),
        "duplicates_total": sum(int(r.get("duplicates") or 0) for r in reports.values()),
    }
    assert set(vals) == set(COLUMNS), set(vals) ^ set(COLUMNS)
    return {f"{t.name}_{k}": v for k, v in vals.items()}


def expected_total(roles: Roles, reports: dict[str, dict[str, Any]]) -> int:
    """Messages the hosts should have received: every WAN message at every host, and each host message at each of
    the hosts it was addressed to (the senders' `sent_to`: host id -> count)."""
    wan_sent = int(reports[roles.router].get("sent") or 0)
    total = wan_sent * len(roles.hosts)
    for h in roles.hosts:
        total += sum(int(v) for v in (reports[h].get("sent_to") or {}).values())
    return total


def priority_loss(roles: Roles, reports: dict[str, dict[str, Any]]) -> float | None:
    """Share of the priority messages addressed to the hosts that did not reach them (the WAN's at every host,
    each host's at the hosts it addressed), as expected_total counts all messages; None when none was sent."""
    expected = int(reports[roles.router].get("sent_priority") or 0) * len(roles.hosts)
    for h in roles.hosts:
        expected += sum(int(v) for v in (reports[h].get("sent_priority_to") or {}).values())
    received = sum(int(reports[h].get("received_priority") or 0) for h in roles.hosts)
    return max(0, expected - received) / expected if expected else None


# -- the runner -----------------------------------------------------------------------------------------------
class ConverterRunner(WorkloadRunner[ConverterTask]):
    def __init__(self, task: ConverterTask, lab: LabAPI) -> None:
        super().__init__(task, lab)
        self.topology: Topology = lab.topology
        self.roles = Roles.of(self.topology, task.router)
        self.reports: dict[str, dict[str, Any]] = {}
        self._outs: dict[str, tuple[int, str, str]] = {}
        self._threads: dict[str, threading.Thread] = {}
        self.before: Snapshot | None = None
        self.after: Snapshot | None = None
        self.cmds: dict[str, list[str]] = {}

    def scrape_ports(self) -> dict[str, list[int]]:
        return self.task.scrape_ports()

    def _start(self, node: str) -> None:
        cmd = ["protolab-converter", *self.cmds[node]]

        def go() -> None:
            self._outs[node] = self.lab.exec(node, cmd)

        th = threading.Thread(target=go, daemon=True, name=f"converter-{node}")
        self._threads[node] = th
        th.start()

    def _wait_ready(self, nodes: list[str]) -> None:
        """Until each process's /metrics answers (it listens once it is set up), or it exited."""
        deadline = time.monotonic() + READY_TIMEOUT
        pending = list(nodes)
        while pending and time.monotonic() < deadline:
            for node in list(pending):
                if node in self._outs:
                    code, out, err = self._outs[node]
                    raise WorkloadError(f"converter task {self.task.name}: {node} exited {code}: {(err or out)[-400:]}")
                url = f"http://{self.lab.nodes[node].mgmt_ip}:{naming.CONVERTER_PORT}/metrics"
                try:
                    with urllib.request.urlopen(url, timeout=0.5):
                        pending.remove(node)
                except OSError:
                    pass
            time.sleep(0.1)
        if pending:
            raise WorkloadError(f"converter task {self.task.name}: {pending} did not come up in {READY_TIMEOUT:g}s")

    def prepare(self) -> None:
        far = sorted(n for n in self.roles.all() if self.lab.nodes[n].pid is None)
        if far:
            raise WorkloadError(f"converter task {self.task.name}: {', '.join(far)} on a testbed host with a kernel of "
                                "its own, whose CPU is read by pid and metrics by management address from this "
                                "machine: not built for such a host")  # fmt: skip
        self.cmds = commands(self.task, self.topology, self.roles)
        servers = [*([self.roles.c2] if self.roles.c2 else []), *self.roles.c1s]
        for node in servers:
            self._start(node)
        self._wait_ready(servers)
        self.lab.sync_nic_filters()  # the converters' joins in the NIC filters' model before the sources start

    def run(self) -> None:
        t = self.task
        pids = {n: self.lab.nodes[n].pid for n in self.roles.all()}
        hubs = [s.name for s in self.topology.switches if s.mode == "hub"]
        sources = [self.roles.router, *self.roles.hosts]
        t0 = time.monotonic()
        for node in sources:
            self._start(node)
        settle = min(1.0, t.duration / 4)
        time.sleep(max(0.0, t0 + START_DELAY + settle - time.monotonic()))
        self.before = snapshot(pids, hubs)
        time.sleep(max(0.0, t0 + START_DELAY + t.duration - WINDOW_EDGE - time.monotonic()))
        self.after = snapshot(pids, hubs)
        for node in self.roles.all():
            self._threads[node].join(timeout=t.duration + LEAD + t.tail + 30)
            if node not in self._outs:
                raise WorkloadError(f"converter task {t.name}: {node} did not finish")
        for node in self.roles.all():
            code, out, err = self._outs[node]
            self.reports[node] = json_report(out, f"converter task {t.name}: {self.cmds[node][0]} on {node}", code, err)

    def raw(self) -> dict[str, Any]:
        return {f"{node} {self.cmds[node][0]}": report for node, report in self.reports.items()}

    def result(self) -> dict[str, float | None]:
        assert self.roles is not None and self.before is not None and self.after is not None
        return columns(self.task, self.topology, self.roles, self.reports, self.before, self.after, self.lab.cpus)
