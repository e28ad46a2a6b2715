"""Whose CPU a node's kernel receive work is charged to.

This kernel has no IRQ time accounting (CONFIG_IRQ_TIME_ACCOUNTING unset), so softirq time is charged to whatever
task was running when the softirq ran. On a veth without NAPI, a frame sent to a node is queued on the per-CPU
backlog and processed (bridge, IP, UDP, socket wake-up) in the softirq the *sender's* transmit raised: the sender's
cgroup pays for the receiver's stack, and the receiver's own figure misses it.

`node` (the default) moves that work into the receiving node: each node data interface gets NAPI (GRO on, which is
what turns veth NAPI on; the bridge ports already have TSO off, the other condition for a frame to take the NAPI
path), NAPI threaded (`/sys/class/net/<if>/threaded`: one kthread per receive queue, `napi/<if>-<id>`), and that
kthread is moved into the node's container cgroup (cpu,cpuacct on cgroup v1, the unified group on v2). The
receiving node's cgroup then holds its whole receive path, and its CPU quota throttles it as a 1997 host's single
CPU throttled its interrupt and protocol work. The sender keeps its own transmit path, the bridge included (the
wire's work). The kthreads go back to the root cgroup before the containers are removed.

`in_context` leaves the kernel's default (no NAPI, softirq charged to whoever runs), for comparison.

Measured (docs/ARCHITECTURE.md, "CPU attribution"; the integration test test_rxcpu proves it on a real lab): a
sender's cgroup CPU is the same whether its receiver processes the packets or drops them at ingress, and the
receiver's rises with the packet rate. GRO on the node side merges a TCP flow's segments before the stack (as a
NIC today does); UDP datagrams are not merged.
"""

from __future__ import annotations

import errno
import gzip
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..shell import CommandError, run

# the interfaces are arguments, never code: GRO and threaded NAPI on each, in a sysfs of their network namespace
THREADED_SCRIPT = ('mount -t sysfs sysfs /sys && mount -o remount,rw /sys || exit 1; for i; do '
                   'ethtool -K "$i" gro on >/dev/null && echo 1 > "/sys/class/net/$i/threaded" || exit 1; done; '
                   'mount -o remount,ro /sys')  # fmt: skip

log = logging.getLogger(__name__)

MODES = ("node", "in_context")
PROC = Path("/proc")
CGROUP = Path("/sys/fs/cgroup")
KTHREAD_READY_SECONDS = 5.0  # how long a new kthread's first run is waited for before the kernel's EINVAL stands
KTHREAD_POLL_SECONDS = 0.01


def napi_threads(proc: Path = PROC) -> dict[int, str]:
    """Every NAPI kthread now: pid -> its name (`napi/<if>-<id>`, cut to 15 characters by the kernel)."""
    out = {}
    for d in proc.iterdir():
        if not d.name.isdigit():
            continue
        try:
            comm = (d / "comm").read_text().strip()
        except OSError:
            continue  # gone meanwhile
        if comm.startswith("napi/"):
            out[int(d.name)] = comm
    return out


def cpu_cgroups(pid: int, proc: Path = PROC, root: Path = CGROUP) -> list[tuple[Path, Path]]:
    """The cgroups holding `pid`'s CPU quota and accounting, as (hierarchy root, directory) pairs: each v1
    hierarchy with the cpu or cpuacct controller (one `cpu,cpuacct` or two separate ones), else the unified one."""
    v1, unified = [], None
    for line in (proc / str(pid) / "cgroup").read_text().splitlines():
        hid, controllers, path = line.split(":", 2)
        names = controllers.split(",")
        if "cpu" in names or "cpuacct" in names:
            mount = root / controllers
            if not mount.is_dir():
                mount = root / ("cpuacct" if "cpuacct" in names else "cpu")
            v1.append((mount, mount / path.lstrip("/")))
        elif hid == "0" and controllers == "":
            unified = path
    if v1:
        return v1
    if unified is None or not (root / "cgroup.controllers").exists():
        raise ValueError(f"pid {pid}: no cpu/cpuacct or unified cgroup in {proc / str(pid) / 'cgroup'}")
    return [(root, root / unified.lstrip("/"))]


def move(pid: int, directory: Path) -> None:
    """A task into a cgroup (v1 `tasks`, v2 `cgroup.procs`: a kthread is a process of its own)."""
    f = directory / "tasks"
    (f if f.exists() else directory / "cgroup.procs").write_text(f"{pid}\n")


def move_new_kthread(pid: int, directory: Path, sleep: Callable[[float], None] = time.sleep,
                     clock: Callable[[], float] = time.monotonic) -> None:  # fmt: skip
    """move() of a kthread just made. The kernel refuses (EINVAL) to move a kthread into a cgroup until it has run
    once after its creator woke it (the task's no_cgroup_migration, cleared by cgroup_kthread_ready: kernel commit
    77f88796cee8); on a machine whose cores are busy or withheld by a hypervisor that first run can come late. The
    move is tried again until the kthread has run, up to KTHREAD_READY_SECONDS; then the kernel's refusal stands."""
    deadline = clock() + KTHREAD_READY_SECONDS
    while True:
        try:
            move(pid, directory)
            return
        except OSError as exc:
            if exc.errno != errno.EINVAL or clock() >= deadline:
                raise OSError(exc.errno, f"napi kthread {pid} into {directory}: {exc.strerror}") from None
        sleep(KTHREAD_POLL_SECONDS)


@dataclass
class ReceiveCpu:
    """Threaded NAPI per node interface, its kthreads in the node's cgroup (mode `node`), and their way back."""

    mode: str = "node"
    threads: dict[str, list[int]] = field(default_factory=dict)  # node -> napi kthread pids moved into it
    proc: Path = PROC
    root: Path = CGROUP

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"receive_cpu {self.mode!r}: one of {', '.join(MODES)}")

    def attach(self, node: str, pid: int, intfs: list[str]) -> list[int]:
        """Turn NAPI on and threaded on `intfs` (in `pid`'s network namespace) and move their kthreads into the
        cgroup of `pid` (the container's init). Returns the kthreads' pids; raises with the reason when the kernel
        refuses (a node left half-charged would make the figures wrong without saying so)."""
        if self.mode != "node" or not intfs:
            return []
        before = set(napi_threads(self.proc))
        try:
            run(
                ["nsenter", "-t", str(pid), "-n", "unshare", "-m", "sh", "-c", THREADED_SCRIPT, "sh", *intfs],
                timeout=30,
            )
        except CommandError as exc:
            raise RuntimeError(f"{node}: threaded NAPI on {', '.join(intfs)}: {exc}") from None
        made = {p: c for p, c in napi_threads(self.proc).items() if p not in before}
        mine = sorted(p for p, c in made.items() if any(c.startswith(f"napi/{i}"[:15]) for i in intfs))
        if len(mine) < len(intfs):
            raise RuntimeError(
                f"{node}: expected a NAPI kthread per interface ({', '.join(intfs)}), found {sorted(made.values())}"
            )
        for _, directory in cpu_cgroups(pid, self.proc, self.root):
            for p in mine:
                move_new_kthread(p, directory)
        self.threads[node] = mine
        return mine

    def detach(self) -> list[str]:
        """Every kthread back to the root cgroup (before the containers go, so their cgroups can be removed).
        Returns what failed, one line each (a kthread gone already is not a failure)."""
        failures = []
        for node, pids in self.threads.items():
            for p in pids:
                if not (self.proc / str(p)).exists():
                    continue
                try:
                    for root, _ in cpu_cgroups(p, self.proc, self.root):
                        move(p, root)
                except (OSError, ValueError) as exc:
                    if (self.proc / str(p)).exists():
                        failures.append(f"{node}: napi kthread {p} back to the root cgroup: {exc}")
        self.threads.clear()
        return failures

    def manifest(self) -> dict[str, object]:
        return {
            "mode": self.mode,
            "mechanism": (
                "threaded NAPI per node interface, kthread in the node's cgroup"
                if self.mode == "node"
                else "kernel default: softirq charged to the running task (often the sender)"
            ),
            "irq_time_accounting": irq_time_accounting(),
            "napi_threads": {n: list(p) for n, p in self.threads.items()},
        }


def irq_time_accounting(config: Path = Path("/proc/config.gz")) -> bool | None:
    """Whether the kernel accounts IRQ/softirq time apart (CONFIG_IRQ_TIME_ACCOUNTING), None if unknown."""
    try:
        text = gzip.decompress(config.read_bytes()).decode(errors="replace")
    except (OSError, EOFError, gzip.BadGzipFile):
        return None
    return "\nCONFIG_IRQ_TIME_ACCOUNTING=y" in text


def release_orphans(proc: Path = PROC, root: Path = CGROUP) -> list[int]:
    """For `protolab clean`: every NAPI kthread still in a non-root CPU cgroup (a killed run's) back to the root.
    Returns the pids moved."""
    moved = []
    for p in napi_threads(proc):
        try:
            for hroot, directory in cpu_cgroups(p, proc, root):
                if directory != hroot:
                    move(p, hroot)
                    moved.append(p)
        except (OSError, ValueError) as exc:
            log.debug("napi kthread %s: %s", p, exc)
    return sorted(set(moved))
