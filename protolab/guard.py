"""The self-saturation guard: was the machine itself the bottleneck during a measurement?

A 2-core laptop must not pass off its own limits as the protocol's. Around every measurement we read the
host's CPU time split (/proc/stat), the softnet backlog drops and time squeezes (/proc/net/softnet_stat),
and the drop counters of qdiscs nobody configured (the lab's unshaped interfaces). Findings above the
bounds below mark the run invalid in summary.json, naming the point and the reason.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from .shell import run

MAX_CPU_BUSY_RATIO = 0.95  # both cores nearly saturated: the workload competes with the emulation itself
MAX_SOFTIRQ_RATIO = 0.5  # half of all CPU time in softirq: packet processing is the bottleneck


@dataclass
class Snapshot:
    cpu: dict[str, float]
    softnet_dropped: int
    softnet_squeezed: int
    qdisc_drops: dict[str, int] = field(default_factory=dict)


def softnet(path: Path = Path("/proc/net/softnet_stat")) -> tuple[int, int]:
    """Sum over CPUs of (dropped, time_squeeze): columns 2 and 3, hexadecimal."""
    dropped = squeezed = 0
    for line in path.read_text().splitlines():
        cols = line.split()
        if len(cols) >= 3:
            dropped += int(cols[1], 16)
            squeezed += int(cols[2], 16)
    return dropped, squeezed


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


def snapshot(unshaped: dict[int | None, set[str]] | None = None) -> Snapshot:
    """unshaped: netns pid (None = root namespace) -> lab interfaces that have no configured shaper."""
    d, s = softnet()
    drops: dict[str, int] = {}
    for pid, devs in (unshaped or {}).items():
        drops.update(qdisc_drops(devs, pid))
    return Snapshot(psutil.cpu_times()._asdict(), d, s, drops)


def assess(before: Snapshot, after: Snapshot) -> tuple[dict[str, float], list[str]]:
    """Figures for the interval, and the reasons (if any) it cannot be trusted."""
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
    reasons = []
    if figures["host_cpu_busy_ratio"] > MAX_CPU_BUSY_RATIO:
        reasons.append(f"host CPU {figures['host_cpu_busy_ratio']:.0%} busy (> {MAX_CPU_BUSY_RATIO:.0%})")
    if figures["host_softirq_ratio"] > MAX_SOFTIRQ_RATIO:
        reasons.append(f"softirq took {figures['host_softirq_ratio']:.0%} of CPU (> {MAX_SOFTIRQ_RATIO:.0%})")
    if figures["softnet_dropped_total"] > 0:
        reasons.append(f"{figures['softnet_dropped_total']:.0f} packets dropped from the softnet backlog")
    if figures["unconfigured_qdisc_drops_total"] > 0:
        reasons.append(f"{figures['unconfigured_qdisc_drops_total']:.0f} drops at qdiscs nobody configured")
    return figures, reasons
