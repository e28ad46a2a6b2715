"""A lab over several testbed hosts (issue 18): placement splits the topology, and each host's part is deployed
and held by a lab keeper of its own on that host (protolab.labctl's, given the part as JSON), with its own state
directory (lock, ledger, socket) and Docker engine.

So far the hosts must be emulated ones (protolab.emuhost, inventory variable protolab_netns): the keeper starts
in the host's network namespace with `nsenter --net`, in a mount namespace of its own where /sys is the
namespace's (Mininet and the counters read /sys/class/net) and the cgroup hierarchies are bound back under it.
A remote host would take the same keeper over SSH: not built yet, and said so.

    lab = multilab.deploy(topology, inventory)       # parts deployed, keepers ready
    lab.exec("h1", ["ping", "-c", "1", "10.0.3.2"])  # through the node's own engine
    lab.destroy()                                     # every keeper tears its part down
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import labctl, naming, placement
from .errors import LabError
from .topo import Topology

STATE_ROOT = Path("/run/protolab-hosts")
READY_TIMEOUT = 600.0
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
        out: dict[str, Any] = {"placement": self.placement.to_json(), "hosts": {}}
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


def _keeper_cmd(part: Part, req: labctl.Request) -> list[str]:
    ns = part.host.netns
    if ns is None:
        raise LabError(f"testbed host {part.host.name}: deploying on a remote host (over SSH) is not built yet; "
                       "only emulated hosts (protolab_netns, protolab.emuhost) are")  # fmt: skip
    return ["nsenter", f"--net=/run/netns/{ns}", "unshare", "--mount", "--propagation", "private", "--",
            "sh", "-c", SYSFS, "sh", sys.executable, "-m", "protolab.labctl", json.dumps(req.__dict__)]  # fmt: skip


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
