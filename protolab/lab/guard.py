"""The self-saturation guard: was the machine itself the bottleneck during a measurement?

A 2-core laptop must not pass off its own limits as the protocol's. Around every measurement we read the
host's CPU time split (/proc/stat), the softnet backlog drops and time squeezes (/proc/net/softnet_stat),
and the drop counters of qdiscs nobody configured (the lab's unshaped interfaces). Findings above the
bounds below mark the run invalid in summary.json, naming the point and the reason.

The helpers that shape or measure a measurement are watched through it (helpers_down): a link emulator or NIC
filter that ended or stopped answering (protolab.lab.helperproc's watcher), a node's metrics agent none of whose
scrapes succeeded for AGENT_SILENT_SECONDS, a keeper serving the lab that is gone: the measurement is invalid
with the helper and the node named (a dead link emulator lets the traffic cross its link unimpaired).

A measurement the machine's surroundings disturbed (`disturbed`: the hypervisor withheld cores, or processes outside
the lab ran) says nothing of the lab; the orchestrator measures it again once the hypervisor gives the cores back
(`wait_for_cores`). An idle virtual machine shows no steal whatever its neighbours do (a halted core asks for
nothing), so the wait asks: every core is kept busy for PROBE_SECONDS and the steal over that time is the figure.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import psutil

from .. import naming
from ..counters import cgroup_cpu_seconds, softnet
from ..shell import run
from .helperproc import WATCH

if TYPE_CHECKING:
    from .api import RunningLab

MAX_CPU_BUSY_RATIO = 0.95  # both cores nearly saturated: the workload competes with the emulation itself
MAX_SOFTIRQ_RATIO = 0.5  # half of all CPU time in softirq: packet processing is the bottleneck
MAX_FOREIGN_CORES = 0.5  # CPU used by neither the lab (containers, engine, orchestrator) nor interrupts
MAX_STEAL_CORES = 0.5  # CPU a virtual machine's hypervisor withheld (steal): as much a disturbance as foreign load
REMEASURE_DISTURBED = 3  # a measurement (or self-check) disturbed from outside the lab is made again up to this often
PROBE_SECONDS = 0.5  # every core kept busy this long to see what the hypervisor withholds (wait_for_cores)
QUIET_STEAL_CORES = MAX_STEAL_CORES / 2  # a probe that loses no more than this is quiet
# the cores are back after this many quiet probes in a row: a neighbour's burst has lulls; in one, a lone quiet probe
# was followed by a measurement that lost 0.51 cores, three times in a row (CI, 2026-12-02)
QUIET_PROBES = 3
# a fault event whose carrying out lost this much CPU time to the hypervisor (one 10 ms tick of /proc/stat, half the
# schedule's 20 ms timing bound; a link step takes 3-11 ms on a quiet machine) was late for its neighbours' sake
MAX_EVENT_STEAL_SECONDS = 0.01
# steal is also judged over each second of a measurement (StealWatch): a whole measurement's mean hides a burst. On
# a 2-core VM a fidelity point that lost 0.26 cores on average measured 2 ms too much on a 10 ms link, its unimpaired
# path's p99 RTT 9.7 ms against 0.8-1.6 ms at quiet points, and a self-check at 0.12 cores missed by 0.76 ms
# (a rehearsal, 2026-12-02)
STEAL_WINDOW_SECONDS = 1.0
STEAL_SAMPLE_SECONDS = 0.25  # the window slides this far at a time
CORES_WAIT_SECONDS = 120.0  # a neighbour's burst seen on these machines lasted up to 81 s
CORES_POLL_SECONDS = 2.0
AGENT_SILENT_SECONDS = 3.0  # a node's agent whose scrapes (every 1 s) all failed this long stopped answering


@dataclass
class Snapshot:
    cpu: dict[str, float]
    softnet_dropped: int
    softnet_squeezed: int
    qdisc_drops: dict[str, int] = field(default_factory=dict)
    lab_cpu_seconds: float = 0.0  # the lab's containers (their cgroups) + the engine and orchestrator serving them
    at: float = 0.0  # time.monotonic()
    lab_cpu: dict[str, float] = field(default_factory=dict)  # the same per cgroup / process, for lab_cpu_delta

    def lab_cpu_delta(self, before: Snapshot) -> float:
        """CPU the lab used since `before`, over what exists in both (a container or engine process that went
        away between the two, e.g. the previous lab's containerd-shims, would subtract its whole lifetime's CPU:
        17 'foreign' cores once); falls back to the totals when either snapshot has no breakdown."""
        if not self.lab_cpu or not before.lab_cpu:
            return self.lab_cpu_seconds - before.lab_cpu_seconds
        return sum(max(0.0, v - before.lab_cpu.get(k, 0.0)) for k, v in self.lab_cpu.items())


def qdisc_drops(devices: set[str], netns_pid: int | None = None) -> dict[str, int]:
    cmd = ["tc", "-s", "-j", "qdisc", "show"]
    if netns_pid:
        cmd = ["nsenter", "-t", str(netns_pid), "-n", *cmd]
    out = run(cmd, check=False) or "[]"
    drops: dict[str, int] = {}
    for q in json.loads(out):
        if q.get("dev") in devices:
            drops[q["dev"]] = drops.get(q["dev"], 0) + int(q.get("drops", 0))
    return drops


INFRASTRUCTURE = {"dockerd", "containerd", "containerd-shim", "containerd-shim-runc-v2", "runc", "docker-proxy"}


def infrastructure_cpu() -> dict[str, float]:
    """CPU of what serves the lab from outside its containers, per process: the container engine (docker exec,
    netns, networking) and this orchestrator with the tc/ip/nsenter commands it ran (reaped children included)."""
    out: dict[str, float] = {}
    for p in psutil.process_iter(["name", "create_time"]):
        if p.info["name"] in INFRASTRUCTURE:
            try:
                t = p.cpu_times()
                out[f"{p.pid}@{p.info['create_time']}"] = t.user + t.system + t.children_user + t.children_system
            except psutil.Error:
                continue
    own = os.times()
    threads = sum(t.user_time + t.system_time for t in psutil.Process().threads())  # includes this process
    out["self"] = threads + own.children_user + own.children_system
    return out


def process_cpu(pids: list[int]) -> dict[str, float]:
    """CPU seconds of each process with its reaped children, keyed by pid and start time."""
    out = {}
    for pid in pids:
        try:
            p = psutil.Process(pid)
            t = p.cpu_times()
            out[f"proc:{pid}@{p.create_time()}"] = t.user + t.system + t.children_user + t.children_system
        except psutil.Error:
            continue
    return out


def snapshot(unshaped: dict[int | None, set[str]] | None = None, lab_pids: list[int] | None = None,
             procs: list[int] | None = None) -> Snapshot:  # fmt: skip
    """unshaped: netns pid (None = root namespace) -> lab interfaces that have no configured shaper;
    lab_pids: one process of each lab container (its CPU is the lab's, not foreign load);
    procs: processes outside any lab container that serve the lab (a lab over several hosts: its keepers)."""
    d, s = softnet()
    drops: dict[str, int] = {}
    for pid, devs in (unshaped or {}).items():
        drops.update(qdisc_drops(devs, pid))
    parts = {f"cgroup:{p}": cgroup_cpu_seconds(p) or 0.0 for p in lab_pids or []} | infrastructure_cpu()
    parts |= process_cpu(procs or [])
    return Snapshot(psutil.cpu_times()._asdict(), d, s, drops, sum(parts.values()), time.monotonic(), parts)


def assess_hosts(before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]]
                 ) -> tuple[dict[str, dict[str, float]], list[str]]:  # fmt: skip
    """assess() of each testbed host's own snapshots (as their keepers took them); the reasons name the host."""
    figures, reasons = {}, []
    for host in sorted(set(before) & set(after)):
        f, r = assess(from_json(before[host]), from_json(after[host]))
        figures[host] = f
        reasons += [f"on {host}: {x}" for x in r]
    reasons += [f"on {h}: no guard reading after the measurement" for h in sorted(set(before) - set(after))]
    return figures, reasons


def from_json(d: dict[str, Any]) -> Snapshot:
    """A Snapshot sent as JSON (dataclasses.asdict)."""
    return Snapshot(**{k: v for k, v in d.items() if k in Snapshot.__dataclass_fields__})


def assess(before: Snapshot, after: Snapshot, steal_peak: float | None = None) -> tuple[dict[str, float], list[str]]:
    """Figures for the interval, and the reasons (if any) it cannot be trusted. steal_peak: the most cores the
    hypervisor withheld over any STEAL_WINDOW_SECONDS of it (StealWatch), when it was watched."""
    delta = {k: after.cpu[k] - before.cpu.get(k, 0.0) for k in after.cpu}
    total = sum(delta.values()) or 1e-9
    idle = delta.get("idle", 0.0) + delta.get("iowait", 0.0)
    figures = {
        "host_cpu_busy_ratio": 1 - idle / total,
        "host_softirq_ratio": delta.get("softirq", 0.0) / total,
        "softnet_dropped_total": float(after.softnet_dropped - before.softnet_dropped),
        "softnet_squeezed_total": float(after.softnet_squeezed - before.softnet_squeezed),
        "unconfigured_qdisc_drops_total": float(
            sum(max(0, v - before.qdisc_drops.get(k, 0)) for k, v in after.qdisc_drops.items())
        ),
    }
    wall = after.at - before.at
    if wall > 0:
        # steal is time no process of this machine ran: the hypervisor gave the core to another machine
        steal = max(0.0, delta.get("steal", 0.0))
        busy = total - idle - delta.get("softirq", 0.0) - delta.get("irq", 0.0) - steal
        figures["foreign_cpu_cores"] = max(0.0, busy - after.lab_cpu_delta(before)) / wall
        figures["host_cpu_steal_cores"] = steal / wall
    if steal_peak is not None:
        figures["host_cpu_steal_cores_peak"] = steal_peak
    reasons = []
    outside = disturbed(figures)
    if "foreign" in outside:
        reasons.append(
            f"processes outside the lab used {figures['foreign_cpu_cores']:.2f} cores (> {MAX_FOREIGN_CORES})"
        )
    if "steal" in outside:
        reasons.append(
            f"the hypervisor withheld {figures['host_cpu_steal_cores']:.2f} cores from this virtual machine "
            f"(CPU steal, > {MAX_STEAL_CORES})"
        )
    if "steal in a second of it" in outside:
        reasons.append(
            f"the hypervisor withheld {figures['host_cpu_steal_cores_peak']:.2f} cores from this virtual machine over "
            f"{STEAL_WINDOW_SECONDS:.0f} s of the measurement (CPU steal, > {MAX_STEAL_CORES})"
        )
    if figures["host_cpu_busy_ratio"] > MAX_CPU_BUSY_RATIO:
        reasons.append(f"host CPU {figures['host_cpu_busy_ratio']:.0%} busy (> {MAX_CPU_BUSY_RATIO:.0%})")
    if figures["host_softirq_ratio"] > MAX_SOFTIRQ_RATIO:
        reasons.append(f"softirq took {figures['host_softirq_ratio']:.0%} of CPU (> {MAX_SOFTIRQ_RATIO:.0%})")
    if figures["softnet_dropped_total"] > 0:
        reasons.append(f"{figures['softnet_dropped_total']:.0f} packets dropped from the softnet backlog")
    if figures["unconfigured_qdisc_drops_total"] > 0:
        reasons.append(f"{figures['unconfigured_qdisc_drops_total']:.0f} drops at qdiscs nobody configured")
    return figures, reasons


def disturbed(figures: dict[str, float]) -> list[str]:
    """What outside the lab disturbed a measurement (its figures from assess): the hypervisor's steal over the whole
    measurement or over any STEAL_WINDOW_SECONDS of it (host_cpu_steal_cores_peak) and processes outside the lab over
    their bounds, and a fault event the hypervisor held up (fault_event_stolen_max_seconds, which the orchestrator
    adds to the figures). The lab's own load (busy, softirq, drops) is not in it: measured again, it would load the
    machine the same way."""
    out = []
    if figures.get("host_cpu_steal_cores", 0.0) > MAX_STEAL_CORES:
        out.append("steal")
    elif figures.get("host_cpu_steal_cores_peak", 0.0) > MAX_STEAL_CORES:
        out.append("steal in a second of it")
    if figures.get("foreign_cpu_cores", 0.0) > MAX_FOREIGN_CORES:
        out.append("foreign")
    if (figures.get("fault_event_stolen_max_seconds") or 0.0) >= MAX_EVENT_STEAL_SECONDS:
        out.append("steal at a fault event")
    return out


def steal_seconds() -> float:
    """The CPU time this machine's hypervisor has withheld since boot (/proc/stat's steal; 0 where there is none)."""
    return float(getattr(psutil.cpu_times(), "steal", 0.0))


def peak_rate(samples: list[tuple[float, float]], window: float = STEAL_WINDOW_SECONDS) -> float:
    """The highest rate of a counter over any stretch of at least `window` seconds between two of its samples
    (time, value), in time order: each sample to the first one `window` or more after it. Over the whole span when
    it is shorter than `window`; 0 with fewer than two samples."""
    if len(samples) < 2:
        return 0.0
    if samples[-1][0] - samples[0][0] < window:
        (t0, v0), (t1, v1) = samples[0], samples[-1]
        return max(0.0, (v1 - v0) / (t1 - t0)) if t1 > t0 else 0.0
    best, j = 0.0, 1
    for t0, v0 in samples:
        while j < len(samples) and samples[j][0] - t0 < window:
            j += 1
        if j == len(samples):
            break
        t1, v1 = samples[j]
        best = max(best, (v1 - v0) / (t1 - t0))
    return max(0.0, best)


class StealWatch:
    """The hypervisor's steal (steal_seconds) read every STEAL_SAMPLE_SECONDS in a thread while an interval lasts:
    `peak` is the most cores it withheld over any STEAL_WINDOW_SECONDS (peak_rate). The interval's mean hides a short
    burst, and a burst of a second or two is enough to stretch a 10 ms link's RTTs past their bound.
    read, clock: guard.steal_seconds and time.monotonic (replaced in unit tests)."""

    def __init__(self, read: Callable[[], float] = steal_seconds, clock: Callable[[], float] = time.monotonic,
                 every: float | None = None, window: float | None = None) -> None:  # fmt: skip
        self._read, self._clock = read, clock
        self._every, self.window = every or STEAL_SAMPLE_SECONDS, window or STEAL_WINDOW_SECONDS
        self.samples: list[tuple[float, float]] = []
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="steal-watch", daemon=True)
        self._lock = threading.Lock()

    def _sample(self) -> None:
        with self._lock:
            self.samples.append((self._clock(), self._read()))

    def _run(self) -> None:
        while not self._done.wait(self._every):
            self._sample()

    def start(self) -> StealWatch:
        self._sample()
        self._thread.start()
        return self

    def stop(self) -> float:
        """Ends the watch (idempotent) and returns its peak."""
        if not self._done.is_set():
            self._done.set()
            self._thread.join()
            self._sample()
        return self.peak

    def __enter__(self) -> StealWatch:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    @property
    def peak(self) -> float:
        with self._lock:
            return peak_rate(list(self.samples), self.window)


def stolen_cores(seconds: float = PROBE_SECONDS) -> float:
    """The cores the hypervisor withholds while every core asks for one: each core kept busy for `seconds` (an empty
    shell loop under timeout), /proc/stat's steal over that time. 0 on a machine of its own."""
    before, t0 = steal_seconds(), time.monotonic()
    loops = [subprocess.Popen(["timeout", f"{seconds:.3f}", "sh", "-c", "while :; do :; done"])
             for _ in range(os.cpu_count() or 1)]  # fmt: skip
    for p in loops:
        p.wait()
    wall = time.monotonic() - t0
    return max(0.0, steal_seconds() - before) / max(wall, 1e-9)


def wait_for_cores(say: Callable[[str], None], probe: Callable[[], float] = stolen_cores,
                   sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic,
                   max_wait: float = CORES_WAIT_SECONDS, quiet_cores: float = QUIET_STEAL_CORES
                   ) -> dict[str, float]:  # fmt: skip
    """No wait when a probe loses no more than `quiet_cores` to the hypervisor. When it loses more, the machine
    is in a neighbour's burst, which has lulls: then until QUIET_PROBES probes in a row (CORES_POLL_SECONDS apart)
    are quiet, or max_wait has passed (the caller's guard then judges the measurement as usual). Returns the seconds
    waited and the last probe's stolen cores."""
    t0 = clock()
    stolen = probe()
    if stolen > quiet_cores:
        say(f"  the hypervisor withholds {stolen:.2f} cores: waiting (up to {max_wait:.0f} s) until {QUIET_PROBES}"
            f" probes in a row find them back")  # fmt: skip
        quiet = 0
        while quiet < QUIET_PROBES and clock() - t0 < max_wait:
            sleep(CORES_POLL_SECONDS)
            stolen = probe()
            quiet = quiet + 1 if stolen <= quiet_cores else 0
    return {"waited_seconds": round(clock() - t0, 3), "stolen_cores": round(stolen, 3)}


def helpers_down(lab: RunningLab, prom: Any, since: float, phases: list[Any]) -> list[str]:
    """Why the measurement that began at `since` (time.monotonic()) and ends now cannot be trusted because a helper
    was out during it, one reason each naming the helper and its node: link emulators and NIC filters
    (helperproc.WATCH), the nodes' metrics agents (Prometheus's scrapes; nodes a node fault of `phases` acts on are
    left out: a pause freezes their agent on purpose), the keepers serving the lab from this machine, and (a lab
    over hosts) the helpers each keeper runs, by its own watch."""
    reasons = WATCH.reasons(since)
    reasons += lab.keepers_helpers_down(since)  # a lab over hosts: each keeper watches its own
    faulted = {f.node for ph in phases for f in ph.faults if f.node}
    now = time.time()
    reasons += agents_silent(prom, sorted(set(lab.nodes) - faulted), now - (time.monotonic() - since), now)
    for pid in lab.service_pids():
        try:
            alive = psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
        except psutil.Error:
            alive = False
        if not alive:
            reasons.append(f"the keeper serving the lab (pid {pid}) has ended")
    return reasons


def agents_silent(prom: Any, nodes: list[str], start: float, end: float) -> list[str]:
    """The nodes whose metrics agent answered none of Prometheus's scrapes for AGENT_SILENT_SECONDS or more
    between `start` and `end` (unix time): from its first failed scrape to its next good one (or `end`). A stretch
    with no scrape at all (Prometheus itself held up) is no agent's fault."""
    if not nodes or end - start < AGENT_SILENT_SECONDS:
        return []
    try:
        series = prom.samples(f'up{{instance=~".+:{naming.AGENT_PORT}"}}', start, end)
    except Exception as exc:
        return [f"the nodes' metrics agents could not be watched: Prometheus did not answer ({exc})"]
    by_node = {labels.get("node"): sorted((p.timestamp, p.value) for p in pts) for labels, pts in series}
    out = []
    for node in nodes:
        worst, at = silence(by_node.get(node, []), end)
        if worst >= AGENT_SILENT_SECONDS:
            where = f"{naming.container_name(node)}:{naming.AGENT_PORT}"
            out.append(f"the metrics agent of node {node} ({where}) answered no scrape for {worst:.1f} s from "
                       f"{at - start:.1f} s into the measurement")  # fmt: skip
    return out


def silence(samples: list[tuple[float, float]], end: float) -> tuple[float, float]:
    """The longest stretch (seconds, and its start) from a failed scrape (up 0) to the next good one, or to `end`
    if none came; (0, 0) without a failed scrape."""
    worst, at, failed = 0.0, 0.0, None
    for t, v in samples:
        if v == 0 and failed is None:
            failed = t
        elif v == 1 and failed is not None:
            if t - failed > worst:
                worst, at = t - failed, failed
            failed = None
    if failed is not None and end - failed > worst:
        worst, at = end - failed, failed
    return worst, at
