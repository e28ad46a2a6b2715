"""What ran where: the static and dynamic environment of a run (SPIMS sec. 5), for manifest.json."""

from __future__ import annotations

import os
import platform
import time
from pathlib import Path
from typing import Any

import psutil

from . import mnlog
from .counters import parse_proc_net_dev
from .shell import run

REPO = Path(__file__).resolve().parent.parent
SYSCTLS = [
    "net.core.rmem_max", "net.core.wmem_max", "net.core.netdev_max_backlog", "net.ipv4.tcp_congestion_control",
    "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem", "net.bridge.bridge-nf-call-iptables",
]  # fmt: skip


def git_commit() -> dict[str, Any]:
    commit = run(["git", "-C", str(REPO), "rev-parse", "HEAD"], check=False).strip() or "unknown"
    dirty = bool(run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"], check=False).strip())
    return {"commit": commit, "dirty": dirty}


def _first_line(cmd: list[str]) -> str:
    out = run(cmd, check=False).strip().splitlines()
    return out[0] if out else "not found"


def tool_versions() -> dict[str, str]:
    try:
        import mininet.net

        mnlog.standard_loggers()
        mn = getattr(mininet.net, "VERSION", "?")
    except ImportError:
        mn = "not installed"
    return {
        "python": platform.python_version(),
        "mininet": mn,
        "docker": _first_line(["docker", "version", "--format", "{{.Server.Version}}"]),
        "iproute2": _first_line(["ip", "-V"]),
        "iptables": _first_line(["iptables", "-V"]),
    }


def static() -> dict[str, Any]:
    """What does not change during a run: machine, kernel, configuration."""
    cpu_model = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    sysctls = {}
    for s in SYSCTLS:
        p = Path("/proc/sys") / s.replace(".", "/")
        try:
            sysctls[s] = p.read_text().strip()
        except OSError:
            sysctls[s] = None
    return {
        "hostname": platform.node(),
        "kernel": platform.release(),
        "os": platform.freedesktop_os_release().get("PRETTY_NAME", "?")
        if hasattr(platform, "freedesktop_os_release")
        else "?",
        "cpu_model": cpu_model,
        "cpu_count": os.cpu_count(),
        "memory_bytes": psutil.virtual_memory().total,
        "sysctls": sysctls,
        "transports": transports(),
        "lab_interfaces": "segmentation offloads (tso, gso, gro, lro, tx-udp-segmentation) turned off on every lab "
        "interface (one frame is one frame to the counters), GRO back on at node ends when receive work is charged "
        "to the node (it merges a TCP flow's frames, as a NIC does); every shaper cuts a merged packet back into "
        "frames before it paces them; each interface's state as `ethtool -k` read it back after the deploy: "
        "deployments[].offloads",
    }


SPIMS = REPO / "images" / "node" / "bin" / "protolab-spims"


def transports() -> dict[str, str]:
    """The protocol implementations protolab-spims has, and whether this kernel has each (SPIMS sec. 5's
    "protocol implementation"): name -> 'available: ...' or 'unavailable: why'."""
    out = run([str(SPIMS), "transports"], check=False) if SPIMS.exists() else ""
    rows = [line.split(None, 2) for line in out.splitlines() if line.strip()]
    return {r[0]: f"{r[1]}: {r[2] if len(r) > 2 else ''}".strip() for r in rows if len(r) >= 2}


def dynamic() -> dict[str, Any]:
    """What does change (SPIMS sec. 5's dynamic factors): load, memory in use, processes, and the counters two
    readings turn into the load over the run (over_run()): the host's CPU time split, its interfaces' bytes and
    packets (/proc/net/dev of the root namespace) and the bytes swapped, all since boot."""
    swap = psutil.swap_memory()
    return {
        "at_unix_seconds": time.time(),
        "loadavg": list(os.getloadavg()),
        "memory_available_bytes": psutil.virtual_memory().available,
        "processes": len(psutil.pids()),
        "cpu_seconds": psutil.cpu_times()._asdict(),
        "interfaces": parse_proc_net_dev(Path("/proc/net/dev").read_text()),
        "swapped_in_bytes": swap.sin,
        "swapped_out_bytes": swap.sout,
    }


CPU_COUNTED_TWICE = ("guest", "guest_nice")  # Linux counts them in user and nice as well


def traffic(before: dict[str, dict[str, int]], after: dict[str, dict[str, int]], seconds: float) -> dict[str, Any]:
    """Per interface in both readings: bytes and packets each way between them, and bytes/s. An interface whose
    counters went back (made anew in between) is left out."""
    out: dict[str, Any] = {}
    for name, c1 in after.items():
        c0 = before.get(name)
        if c0 is None or any(c1[k] < c0.get(k, 0) for k in c1):
            continue
        d: dict[str, float] = {k: c1[k] - c0.get(k, 0) for k in c1}
        if seconds > 0:
            d |= {f"{k}_per_second": d[k] / seconds for k in ("rx_bytes", "tx_bytes") if k in d}
        out[name] = d
    return out


def over_run(start: dict[str, Any], end: dict[str, Any]) -> dict[str, Any]:
    """The background load between two dynamic() readings: the host CPU's busy and softirq shares (all cores),
    each interface's traffic (traffic()) and the bytes swapped in and out."""
    seconds = end["at_unix_seconds"] - start["at_unix_seconds"]
    c0, c1 = start["cpu_seconds"], end["cpu_seconds"]
    delta = {k: c1[k] - c0.get(k, 0.0) for k in c1 if k not in CPU_COUNTED_TWICE}
    total = sum(delta.values())
    idle = delta.get("idle", 0.0) + delta.get("iowait", 0.0)
    return {
        "seconds": seconds,
        "cpu_busy_ratio": 1 - idle / total if total > 0 else None,
        "cpu_softirq_ratio": delta.get("softirq", 0.0) / total if total > 0 else None,
        "interfaces": traffic(start["interfaces"], end["interfaces"], seconds),
        "swapped_in_bytes": end["swapped_in_bytes"] - start["swapped_in_bytes"],
        "swapped_out_bytes": end["swapped_out_bytes"] - start["swapped_out_bytes"],
    }
