"""Counters read from this machine: a process's cgroup CPU time, interface counters (/proc/net/dev) and the
kernel's softnet drops. One reader each, shared by the load guard and the workloads."""

from __future__ import annotations

from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
V1_CPU_MOUNTS = ("cpuacct", "cpu,cpuacct", "cpuacct,cpu")


def cgroup_file(pid: int, controller: str, v1_file: str, v2_file: str, root: Path = CGROUP_ROOT,
                proc: Path = Path("/proc"), v1_mounts: tuple[str, ...] = ()) -> Path | None:  # fmt: skip
    """The file of the cgroup a process is in that a controller keeps: cgroup v1's `v1_file` in the hierarchy with
    `controller` (mounted under its controllers' names, or one of `v1_mounts`), else cgroup v2's `v2_file` in its
    unified cgroup. None when the process or both files are not found."""
    try:
        lines = (proc / str(pid) / "cgroup").read_text().splitlines()
    except OSError:
        return None
    unified = None
    for line in lines:
        hid, controllers, path = line.split(":", 2)
        if controller in controllers.split(","):
            for mount in dict.fromkeys((controllers, *v1_mounts)):
                if (f := root / mount / path.lstrip("/") / v1_file).is_file():
                    return f
        elif hid == "0" and controllers == "":
            unified = path
    if unified is not None and (f := root / unified.lstrip("/") / v2_file).is_file():
        return f
    return None


def cgroup_cpu_seconds(pid: int, root: Path = CGROUP_ROOT) -> float | None:
    """CPU time of the cgroup a process is in (cgroup v1 cpuacct.usage, or v2 cpu.stat usage_usec), seconds;
    None when the process or its accounting is not found."""
    f = cgroup_file(pid, "cpuacct", "cpuacct.usage", "cpu.stat", root, v1_mounts=V1_CPU_MOUNTS)
    if f is None:
        return None
    if f.name == "cpuacct.usage":
        return int(f.read_text()) / 1e9
    for stat in f.read_text().splitlines():
        if stat.startswith("usage_usec "):
            return int(stat.split()[1]) / 1e6
    return None


def parse_snmp(text: str) -> dict[str, dict[str, int]]:
    """/proc/net/snmp -> protocol (Ip, Icmp, Tcp, Udp, ...) -> counter: each protocol's header line, then its
    values line."""
    out: dict[str, dict[str, int]] = {}
    header: dict[str, list[str]] = {}
    for line in text.splitlines():
        proto, _, rest = line.partition(":")
        words = rest.split()
        if proto not in header:
            header[proto] = words
        else:
            out[proto] = dict(zip(header[proto], map(int, words), strict=True))
    return out


def parse_proc_net_dev(text: str) -> dict[str, dict[str, int]]:
    """/proc/net/dev -> interface -> rx_bytes, rx_packets, tx_bytes, tx_packets."""
    out = {}
    for line in text.splitlines()[2:]:
        if ":" not in line:
            continue
        name, rest = line.split(":", 1)
        f = [int(x) for x in rest.split()]
        out[name.strip()] = {"rx_bytes": f[0], "rx_packets": f[1], "tx_bytes": f[8], "tx_packets": f[9]}
    return out


def softnet(path: Path = Path("/proc/net/softnet_stat")) -> tuple[int, int]:
    """Sum over CPUs of (dropped, time_squeeze): columns 2 and 3, hexadecimal."""
    dropped = squeezed = 0
    for line in path.read_text().splitlines():
        cols = line.split()
        if len(cols) >= 3:
            dropped += int(cols[1], 16)
            squeezed += int(cols[2], 16)
    return dropped, squeezed
