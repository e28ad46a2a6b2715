"""A lab over several testbed hosts (issue 18): placement splits the topology, and each host's part is deployed
and held by a lab keeper of its own on that host (protolab.labctl's, given the part as JSON), with its own state
directory (lock, ledger, socket) and Docker engine.

So far the hosts must be emulated ones (protolab.emuhost, inventory variable protolab_netns): the keeper starts
in the host's network namespace with `nsenter --net`, in a mount namespace of its own where /sys is the
namespace's (Mininet and the counters read /sys/class/net) and the cgroup hierarchies are bound back under it.
A remote host would take the same keeper over SSH: not built yet, and said so.

At deploy, what the run's figures need to know about the hosts is measured: each stitch's underlay round trip and
its sd (the delay and jitter the tunnel's path adds to the link's own), and each host's clock offset from this
machine with its uncertainty (a ping-pong over the host's command channel), in state() for the manifest.

    lab = multilab.deploy(topology, inventory)       # parts deployed, keepers ready, stitches and clocks measured
    lab.exec("h1", ["ping", "-c", "1", "10.0.3.2"])  # through the node's own engine
    lab.destroy()                                     # every keeper tears its part down
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import labctl, naming, placement
from .errors import LabError
from .shell import in_netns
from .topo import Topology

STATE_ROOT = Path("/run/protolab-hosts")
READY_TIMEOUT = 600.0
UNDERLAY_PINGS = 50  # echoes per stitch at 20 ms: 1 s
CLOCK_PROBES = 5
# in the keeper's own mount namespace: /sys for its network namespace, the cgroup tree bound back under it
SYSFS = ('set -e; cg=$(mktemp -d); mount --rbind /sys/fs/cgroup "$cg"; mount -t sysfs sysfs /sys; '
         'mount --move "$cg" /sys/fs/cgroup; rmdir "$cg" 2>/dev/null || true; exec "$@"')  # fmt: skip


@dataclass
class Part:
    host: placement.TestbedHost
    topology: Topology
    state_dir: Path
    proc: subprocess.Popen[bytes] | None = None

    @contextlib.contextmanager
    def env(self) -> Iterator[None]:
        """labctl's functions (state, socket, log) pointed at this host's keeper for the block."""
        saved = {k: os.environ.get(k) for k in ("PROTOLAB_STATE_DIR", "DOCKER_HOST")}
        os.environ["PROTOLAB_STATE_DIR"], os.environ["DOCKER_HOST"] = str(self.state_dir), self.host.engine
        try:
            yield
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


@dataclass
class MultiLab:
    placement: placement.Placement
    parts: dict[str, Part] = field(default_factory=dict)
    underlay: list[dict[str, Any]] = field(default_factory=list)  # measure_underlay(): per stitch
    clocks: dict[str, dict[str, Any]] = field(default_factory=dict)  # measure_clocks(): per host

    def host_of(self, node: str) -> Part:
        return self.parts[self.placement.node_host[node]]

    def exec(self, node: str, cmd: list[str], timeout: float = 60) -> tuple[int, str, str]:
        """A command in a node's container, through its host's engine."""
        part = self.host_of(node)
        p = subprocess.run(["docker", "-H", part.host.engine, "exec", naming.container_name(node), *cmd],
                           capture_output=True, text=True, timeout=timeout)  # fmt: skip
        return p.returncode, p.stdout, p.stderr

    def state(self) -> dict[str, Any]:
        """Placement, stitches and each host's keeper state (for the manifest and inspect)."""
        out: dict[str, Any] = {"placement": self.placement.to_json(), "underlay": self.underlay,
                               "clocks": self.clocks, "hosts": {}}  # fmt: skip
        for name, part in self.parts.items():
            with part.env():
                out["hosts"][name] = labctl.load_state()
        return out

    def destroy(self) -> list[str]:
        failures = []
        for name, part in self.parts.items():
            with part.env():
                if labctl.load_state() is None:
                    continue
                try:  # not labctl.destroy(): the keeper is this process's child, reaped below, not waited for
                    failures += [f"{name}: {f}" for f in labctl.request("destroy").get("failures") or []]
                except LabError as exc:
                    failures.append(f"{name}: {exc}")
            if part.proc is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    part.proc.wait(timeout=60)
            if not failures:
                shutil.rmtree(part.state_dir, ignore_errors=True)  # its lock, ledger and log: nothing left held
        with contextlib.suppress(OSError):
            STATE_ROOT.rmdir()
        return failures


def host_cmd(host: placement.TestbedHost, cmd: list[str]) -> list[str]:
    """`cmd` as it runs on a testbed host: in an emulated host's network namespace. A remote host (over SSH) is not
    built yet, and says so."""
    if host.netns is None:
        raise LabError(f"testbed host {host.name}: commands on a remote host (over SSH) are not built yet; "
                       "only emulated hosts (protolab_netns, protolab.emuhost) are")  # fmt: skip
    return in_netns(cmd, host.netns)


def measure_underlay(lab: MultiLab, inventory: placement.Inventory, count: int = UNDERLAY_PINGS) -> None:
    """What each stitch adds to its link: the round trip between its two hosts' underlay addresses, the path its
    VXLAN packets take (ICMP echo from the first host, `count` at 20 ms), as mean, sd (the jitter), min and max in
    seconds, into lab.underlay (the manifest's and `inspect`'s placement)."""
    from .workloads.ping_runner import parse

    lab.underlay = []
    for st in lab.placement.stitches:
        a, b = (inventory.get(h) for h in st.hosts)
        rec: dict[str, Any] = {"link": list(st.link), "from": a.name, "to": b.name, "to_address": b.underlay}
        ping = ["ping", "-D", "-n", "-c", str(count), "-i", "0.02", "-W", "1", str(b.underlay)]
        p = subprocess.run(host_cmd(a, ping), capture_output=True, text=True, timeout=count * 0.02 + 30)
        try:
            sent, echoes = parse(p.stdout)
        except ValueError as exc:
            rec["error"] = str(exc)
            lab.underlay.append(rec)
            continue
        rtts = [e.rtt for e in echoes]
        rec |= {"sent": sent, "received": len(rtts)}
        if rtts:
            rec |= {"rtt_mean_seconds": statistics.fmean(rtts), "rtt_min_seconds": min(rtts),
                    "rtt_max_seconds": max(rtts),
                    "rtt_sd_seconds": statistics.stdev(rtts) if len(rtts) > 1 else 0.0}  # fmt: skip
        lab.underlay.append(rec)


def measure_clocks(lab: MultiLab, inventory: placement.Inventory, probes: int = CLOCK_PROBES) -> None:
    """Each host's clock against this machine's, by a ping-pong: this machine's time t1, the host's wall clock read
    by a command run there, this machine's time t4; offset = t_host - (t1 + t4) / 2, within +-(t4 - t1) / 2. Of
    `probes` tries the one with the shortest round trip is kept (NTP's clock filter). One-way delays measured
    across hosts carry that uncertainty; into lab.clocks."""
    lab.clocks = {}
    for name in lab.parts:
        host = inventory.get(name)
        best: tuple[float, float] | None = None  # (round trip, offset) in seconds
        for _ in range(probes):
            t1 = time.time_ns()
            p = subprocess.run(host_cmd(host, ["date", "+%s%N"]), capture_output=True, text=True, timeout=30)
            t4 = time.time_ns()
            if p.returncode != 0 or not p.stdout.strip().isdigit():
                continue
            rtt, offset = (t4 - t1) / 1e9, (int(p.stdout.strip()) - (t1 + t4) / 2) / 1e9
            if best is None or rtt < best[0]:
                best = (rtt, offset)
        lab.clocks[name] = ({"offset_seconds": best[1], "uncertainty_seconds": best[0] / 2, "probes": probes,
                             "method": "ping-pong over the host's command channel, shortest of the probes"}
                            if best else {"error": f"no clock reading from {name} in {probes} tries"})  # fmt: skip


def _keeper_cmd(part: Part, req: labctl.Request) -> list[str]:
    ns = part.host.netns
    if ns is None:
        raise LabError(f"testbed host {part.host.name}: deploying on a remote host (over SSH) is not built yet; "
                       "only emulated hosts (protolab_netns, protolab.emuhost) are")  # fmt: skip
    return in_netns(["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", SYSFS, "sh", sys.executable,
                     "-m", "protolab.labctl", json.dumps(req.__dict__)], ns)  # fmt: skip


def deploy(topology: Topology, inventory: placement.Inventory, out: Any = sys.stderr) -> MultiLab:
    """Place, split, and deploy every part at once (one keeper per host); ready when all are."""
    p = placement.place(topology, inventory)
    parts = placement.split(topology, p, inventory)
    lab = MultiLab(p)
    for name, t in parts.items():
        part = Part(inventory.get(name), t, STATE_ROOT / name)
        part.state_dir.mkdir(parents=True, exist_ok=True)
        req = labctl.Request(source=f"{topology.kind}@{name}", part=t.to_json())
        log = (part.state_dir / "lab.log").open("w")
        env = os.environ | {"PYTHONUNBUFFERED": "1", "PROTOLAB_STATE_DIR": str(part.state_dir),
                            "DOCKER_HOST": part.host.engine}  # fmt: skip
        part.proc = subprocess.Popen(_keeper_cmd(part, req), stdout=log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True, env=env)  # fmt: skip
        log.close()
        lab.parts[name] = part
        print(f"deploying {len(t.hosts)} node(s) of {topology.kind} on {name}", file=out, flush=True)
    t0 = time.monotonic()
    waiting = set(lab.parts)
    while waiting and time.monotonic() - t0 < READY_TIMEOUT:
        for name in sorted(waiting):
            part = lab.parts[name]
            text = (part.state_dir / "lab.log").read_text(errors="replace")
            if "READY" in text.splitlines():
                waiting.discard(name)
            elif part.proc is not None and part.proc.poll() is not None:
                tail = "\n".join(ln for ln in text.splitlines()[-12:] if "bridge-nf-call" not in ln)
                lab.destroy()
                raise LabError(f"deploy on {name} failed (exit {part.proc.returncode}):\n{tail}")
        time.sleep(0.3)
    if waiting:
        lab.destroy()
        raise LabError(f"deploy on {', '.join(sorted(waiting))} took longer than {READY_TIMEOUT:.0f} s")
    measure_clocks(lab, inventory)
    measure_underlay(lab, inventory)
    for u in lab.underlay:
        what = (f"RTT {u['rtt_mean_seconds'] * 1e3:.3f} ms, sd {u['rtt_sd_seconds'] * 1e6:.0f} us" if "rtt_mean_seconds"
                in u else u.get("error", "no reply"))  # fmt: skip
        print(f"stitch {'-'.join(u['link'])}: underlay {u['from']} -> {u['to']} {what}", file=out, flush=True)
    return lab


def clean_parts() -> list[str]:
    """`protolab clean`: what keepers of host parts left here (their emulated hosts' engines and namespaces are
    the main ledger's): the keepers and every process of their labs killed, their state directories removed."""
    import signal

    from . import ownership

    done: list[str] = []
    if not STATE_ROOT.is_dir():
        return done
    for d in sorted(p for p in STATE_ROOT.iterdir() if p.is_dir()):
        pids: list[int] = []
        with contextlib.suppress(OSError, ValueError, KeyError):
            pids.append(int(json.loads((d / "lab.json").read_text())["pid"]))
        for ledger in (d / "owned").glob("*.jsonl"):
            pids += ownership.processes_of_run(ledger.stem)
        for pid in dict.fromkeys(pids):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
                done.append(f"killed process {pid} of the lab part on {d.name}")
        shutil.rmtree(d, ignore_errors=True)
        done.append(f"removed the state of the lab part on {d.name} ({d})")
    with contextlib.suppress(OSError):
        STATE_ROOT.rmdir()
    return done
