"""A lab over several testbed hosts (issue 18): placement splits the topology, and each host's part is deployed
and held by a lab keeper of its own on that host (protolab.lab.keeper's, given the part as JSON), with its own state
directory (lock, ledger, socket) and Docker engine.

An emulated host (protolab.testbed.emulation, inventory variable protolab_netns) gets its keeper here, in the host's
network namespace with `nsenter --net`; any other host gets it over the host's SSH session (protolab.testbed.reach),
started and asked there (`python -m protolab.lab.keeper --client/--state` on the host), its engine reached through a
socket the session forwards. Either way the keeper runs in a mount namespace of its own where /sys is its network
namespace's (Mininet and the counters read /sys/class/net), the cgroup hierarchies bound back under it. An emulated
host with an sshd (emulation.start(ssh=True)) stands for a remote one on this machine.

At deploy, what the run's figures need to know about the hosts is measured: each stitch's underlay round trip and
its sd (the delay and jitter the tunnel's path adds to the link's own), and each host's clock offset from this
machine with its uncertainty (a ping-pong over the host's command channel), in state() for the manifest.

    lab = parts.deploy(topology, inventory)          # parts deployed, keepers ready, stitches and clocks measured
    lab.exec("h1", ["ping", "-c", "1", "10.0.3.2"])  # through the node's own engine
    lab.destroy()                                     # every keeper tears its part down

What uses the parts: protolab.lab.testbed's TestbedLab (the lab contract over them, for runs and the self-check
across stitches) and protolab.lab.supervise (`protolab deploy ... --emulate-hosts`).
"""

from __future__ import annotations

import contextlib
import dataclasses
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

from .. import naming
from ..errors import LabError
from ..jsonio import write_json
from ..testbed import placement
from ..topo import Topology
from . import keeper

STATE_ROOT = Path("/run/protolab-hosts")
READY_TIMEOUT = 600.0
UNDERLAY_PINGS = 50  # echoes per stitch at 20 ms: 1 s
CLOCK_PROBES = 5
CLOCK_TIMEOUT = 30.0  # seconds for all of a host's clock probes
# in the keeper's own mount namespace: /sys for its network namespace, the cgroup tree bound back under it
SYSFS = ('set -e; cg=$(mktemp -d); mount --rbind /sys/fs/cgroup "$cg"; mount -t sysfs sysfs /sys; '
         'mount --move "$cg" /sys/fs/cgroup; rmdir "$cg" 2>/dev/null || true; exec "$@"')  # fmt: skip


REMOTE_STATE_ROOT = Path("/run/protolab-keepers")  # on a host reached over SSH: each keeper's state directory


def state_root() -> Path:
    """This instance's folder of keepers' state here (naming.scoped_path of STATE_ROOT)."""
    return naming.scoped_path(STATE_ROOT)


def remote_state_root() -> Path:
    """This instance's folder of keepers' state on a host reached over SSH."""
    return naming.scoped_path(REMOTE_STATE_ROOT)


@dataclass
class Part:
    """A host's part of the lab and its keeper. An emulated host's keeper runs here in the host's namespace, its
    state directory here (keeper's functions read it under env()); a remote host's keeper runs on the host,
    started and asked over the host's SSH session (`python -m protolab.lab.keeper --client/--state` there), its state
    directory there (remote_dir), and only its log (the session's output) here."""

    host: placement.TestbedHost
    topology: Topology
    state_dir: Path
    proc: subprocess.Popen[bytes] | None = None
    same_kernel: bool = False  # a remote host whose boot_id is this machine's (emulated with an sshd): one kernel

    @property
    def remote(self) -> bool:
        return self.host.netns is None

    @property
    def local(self) -> bool:
        """Its processes and namespaces are this machine's: an emulated host, or one that shares this kernel."""
        return not self.remote or self.same_kernel

    @property
    def remote_dir(self) -> Path:
        return remote_state_root() / self.host.name

    def request(self, op: str, **args: Any) -> dict[str, Any]:
        """One request to the part's keeper, its answer (LabError with the keeper's words when it refuses)."""
        if not self.remote:
            with self.env():
                return keeper.request(op, **args)
        answer = self._on_host("--client", json.dumps({"op": op, **args}))
        if not isinstance(answer, dict) or not answer.get("ok"):
            why = answer.get("error") if isinstance(answer, dict) else answer
            raise LabError(f"{op} on {self.host.name}: {why or 'no answer from the lab keeper'}")
        return answer

    def load_state(self) -> dict[str, Any] | None:
        """The keeper's state (None: no keeper running)."""
        if not self.remote:
            with self.env():
                return keeper.load_state()
        st = self._on_host("--state")
        return st if isinstance(st, dict) else None

    def _on_host(self, *args: str) -> Any:
        from ..testbed import reach

        cmd = ["env", f"PROTOLAB_STATE_DIR={self.remote_dir}", naming.instance_env(),
               self.host.python or sys.executable, "-m", "protolab.lab.keeper", *args]  # fmt: skip
        p = subprocess.run(reach.command(self.host, cmd), capture_output=True, text=True,
                           timeout=keeper.REQUEST_TIMEOUT + 30)  # fmt: skip
        try:
            return json.loads(p.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            raise LabError(f"the lab keeper's client on {self.host.name}: exit {p.returncode}: "
                           f"{(p.stderr or p.stdout).strip()[-300:]}") from None  # fmt: skip

    @contextlib.contextmanager
    def env(self) -> Iterator[None]:
        """keeper's functions (state, socket, log) pointed at this host's keeper for the block."""
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

    def exec(self, node: str, cmd: list[str], timeout: float | None = None) -> tuple[int, str, str]:
        """A command in a node's container through its host's engine, as Lab.exec runs one: no deadline unless
        given (a workload's server runs for its phase), killed and ExecTimeoutError past it."""
        from . import exec_in

        return exec_in(self.container(node), cmd, timeout, where=f"{node} on {self.host_of(node).host.name}")

    def container(self, node: str) -> Any:
        """A node's container, a handle on its host's engine (docker-py)."""
        from ..testbed import reach

        return docker_client(reach.engine(self.host_of(node).host)).containers.get(naming.container_name(node))

    def state(self) -> dict[str, Any]:
        """Placement, stitches and each host's keeper state (for the manifest and inspect)."""
        out: dict[str, Any] = {"placement": self.placement.to_json(), "underlay": self.underlay,
                               "clocks": self.clocks, "hosts": {},
                               "reached": {n: ("here, in its namespace" if not p.remote else "over SSH"
                                               + (", the same kernel as this machine's" if p.same_kernel else ""))
                                           for n, p in self.parts.items()}}  # fmt: skip
        for name, part in self.parts.items():
            out["hosts"][name] = part.load_state()
        return out

    def destroy(self) -> list[str]:
        from ..testbed import reach

        failures = []
        for name, part in self.parts.items():
            try:
                if part.load_state() is None:
                    continue
                # not keeper.destroy(): the keeper is this process's child, reaped below, not waited for
                failures += [f"{name}: {f}" for f in part.request("destroy").get("failures") or []]
            except LabError as exc:
                failures.append(f"{name}: {exc}")
            if part.proc is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    part.proc.wait(timeout=60)
            if part.remote and not failures:  # the keeper's own state on the host, then the session
                failures += [f"{name}: {f}" for f in _clean_remote(part.host) if f.startswith("its keeper")]
                reach.close(part.host)
            if not failures:
                shutil.rmtree(part.state_dir, ignore_errors=True)  # its lock, ledger and log: nothing left held
        with contextlib.suppress(OSError):
            state_root().rmdir()
        return failures


_CLIENTS: dict[str, Any] = {}


def docker_client(engine: str) -> Any:
    """A docker-py client of a host's engine, made on first use and kept."""
    if engine not in _CLIENTS:
        import docker

        _CLIENTS[engine] = docker.DockerClient(base_url=engine)
    return _CLIENTS[engine]


def host_cmd(host: placement.TestbedHost, cmd: list[str]) -> list[str]:
    """`cmd` as it runs on a testbed host (protolab.testbed.reach: an emulated host's namespace, or over SSH)."""
    from ..testbed import reach

    return reach.command(host, cmd)


def measure_underlay(lab: MultiLab, inventory: placement.Inventory, count: int = UNDERLAY_PINGS) -> None:
    """What each stitch adds to its link: the round trip between its two hosts' underlay addresses, the path its
    VXLAN packets take (ICMP echo from the first host, `count` at 20 ms), as mean, sd (the jitter), min and max in
    seconds, into lab.underlay (the manifest's and `inspect`'s placement)."""
    from ..workloads.ping_runner import parse

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


BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


def measure_kernels(lab: MultiLab) -> None:
    """Which remote hosts run on this very kernel (the same boot_id): their pids, namespaces and cgroups are this
    machine's, so what a run reads of processes here holds for them too (the guard counts their nodes as the lab's
    and not as foreign load). An emulated host reached over SSH is one; a real remote host never is."""
    here = BOOT_ID.read_text().strip()
    for part in lab.parts.values():
        if part.remote:
            p = subprocess.run(host_cmd(part.host, ["cat", str(BOOT_ID)]), capture_output=True, text=True, timeout=60)
            part.same_kernel = p.returncode == 0 and p.stdout.strip() == here


# the host's side of the clock probe: its wall clock once per line read (a shell loop kept running, so that a
# probe's round trip is the channel's, not a command's start: over SSH a new command takes ~0.1 s, a line ~1 ms)
CLOCK_LOOP = "while read -r _; do date +%s%N; done"


def measure_clocks(lab: MultiLab, inventory: placement.Inventory, probes: int = CLOCK_PROBES) -> None:
    """Each host's clock against this machine's, by a ping-pong over one command kept open on the host: this
    machine's time t1, a line sent, the host's wall clock read back, this machine's time t4; offset = t_host -
    (t1 + t4) / 2, within +-(t4 - t1) / 2. Of `probes` tries the one with the shortest round trip is kept (NTP's
    clock filter). One-way delays measured across hosts carry that uncertainty; into lab.clocks."""
    lab.clocks = {}
    for name in lab.parts:
        best = clock_offset(inventory.get(name), probes)
        lab.clocks[name] = ({"offset_seconds": best[1], "uncertainty_seconds": best[0] / 2, "probes": probes,
                             "method": "ping-pong over a command kept open on the host, shortest of the probes"}
                            if best else {"error": f"no clock reading from {name} in {probes} tries"})  # fmt: skip


def clock_offset(host: placement.TestbedHost, probes: int) -> tuple[float, float] | None:
    """(round trip, offset) in seconds of the probe with the shortest round trip; None: no reading."""
    import threading

    best: tuple[float, float] | None = None
    with subprocess.Popen(host_cmd(host, ["sh", "-c", CLOCK_LOOP]), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True) as p:  # fmt: skip
        assert p.stdin is not None and p.stdout is not None
        deadline = threading.Timer(CLOCK_TIMEOUT, p.kill)  # a host that stops answering ends the probe, not us
        deadline.start()
        try:
            for i in range(probes + 1):  # the first answer also waits for the channel to open: not a probe
                t1 = time.time_ns()
                p.stdin.write("\n")
                p.stdin.flush()
                line = p.stdout.readline().strip()
                t4 = time.time_ns()
                if not line.isdigit():
                    break
                sample = ((t4 - t1) / 1e9, (int(line) - (t1 + t4) / 2) / 1e9)
                if i and (best is None or sample[0] < best[0]):
                    best = sample
        except (BrokenPipeError, OSError):
            pass  # killed past the deadline, or the host went away: what was read stands
        finally:
            deadline.cancel()
            with contextlib.suppress(BrokenPipeError, OSError):
                p.stdin.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(timeout=10)
    return best


def _keeper_cmd(part: Part, req: keeper.Request) -> list[str]:
    """The keeper of a part: in its own mount namespace where /sys is the host's network namespace's (Mininet and
    the counters read /sys/class/net); here in an emulated host's namespace, or on a remote host over its SSH
    session, with its state directory and engine there."""
    from ..testbed import reach

    argv = ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", SYSFS, "sh",
            part.host.python or sys.executable, "-m", "protolab.lab.keeper", json.dumps(req.__dict__)]  # fmt: skip
    if part.remote:
        argv = ["env", f"PROTOLAB_STATE_DIR={part.remote_dir}", f"DOCKER_HOST={part.host.engine}",
                naming.instance_env(), *argv]  # fmt: skip
    return reach.command(part.host, argv)


def deploy(topology: Topology, inventory: placement.Inventory, out: Any = sys.stderr, ledger: Any = None) -> MultiLab:
    """Place, split, and deploy every part at once (one keeper per host); ready when all are. With a `ledger`,
    each keeper's process is recorded in it (a run's: its sweep stops a keeper that a dead run left)."""
    p = placement.place(topology, inventory)
    parts = placement.split(topology, p, inventory)
    lab = MultiLab(p)
    keepers: dict[str, tuple[subprocess.Popen[bytes], Path]] = {}
    for name, t in parts.items():
        part = Part(inventory.get(name), t, state_root() / name)
        part.state_dir.mkdir(parents=True, exist_ok=True)
        req = keeper.Request(source=f"{topology.kind}@{name}", part=t.to_json())
        env = os.environ | {"PROTOLAB_STATE_DIR": str(part.state_dir), "DOCKER_HOST": part.host.engine}
        write_json(part.state_dir / "part.json", part.host.model_dump(mode="json"))  # for `clean`: where it runs
        if part.remote:  # the keeper's state directory on the host
            subprocess.run(host_cmd(part.host, ["mkdir", "-p", str(part.remote_dir)]), check=True, capture_output=True,
                           timeout=60)  # fmt: skip
        part.proc = keeper.spawn_logged(_keeper_cmd(part, req), part.state_dir / "lab.log", env)
        if ledger is not None:
            ledger.process(part.proc.pid)
        lab.parts[name] = part
        keepers[name] = (part.proc, part.state_dir / "lab.log")
        print(f"deploying {len(t.hosts)} node(s) of {topology.kind} on {name}", file=out, flush=True)
    try:
        keeper.await_ready(keepers, READY_TIMEOUT)
    except keeper.NotReadyError as e:
        lab.destroy()
        if e.returncode is None:
            raise LabError(f"deploy over several hosts: {e}") from None
        raise LabError(f"deploy on {e.name} failed (exit {e.returncode}):\n" + "\n".join(e.lines)) from None
    measure_kernels(lab)
    measure_clocks(lab, inventory)
    measure_underlay(lab, inventory)
    for u in lab.underlay:
        what = (f"RTT {u['rtt_mean_seconds'] * 1e3:.3f} ms, sd {u['rtt_sd_seconds'] * 1e6:.0f} us" if "rtt_mean_seconds"
                in u else u.get("error", "no reply"))  # fmt: skip
        print(f"stitch {'-'.join(u['link'])}: underlay {u['from']} -> {u['to']} {what}", file=out, flush=True)
    return lab


def clean_parts(failures: list[str] | None = None) -> list[str]:
    """`protolab clean`: what keepers of host parts left here (their emulated hosts' engines and namespaces are
    the main ledger's): the keepers and every process of their labs killed, their state directories removed; then
    the remote hosts' Prometheus that runs' ledgers record, over live sessions (federation.sweep_remote); the SSH
    sessions last. What could not be reached goes to `failures` (left on its host), not to what was done."""
    import signal

    from .. import ownership
    from ..testbed import federation, reach

    failures = [] if failures is None else failures
    done: list[str] = []
    if not state_root().is_dir():  # no keeper left here; a run's remote Prometheus may be
        return federation.sweep_remote(failures) + reach.close_all()
    with contextlib.suppress(OSError, ValueError, KeyError):  # a supervisor of a lab over several hosts
        st = json.loads(supervisor_state().read_text())
        if ownership.alive(st["pid"], st.get("start")):
            os.kill(st["pid"], signal.SIGKILL)
            done.append(f"killed the supervisor {st['pid']} of the lab over several hosts")
    for f in (supervisor_state(), supervisor_log(), state_root() / "emulated-inventory.yml"):
        with contextlib.suppress(FileNotFoundError):
            f.unlink()
    for d in sorted(p for p in state_root().iterdir() if p.is_dir()):
        host: placement.TestbedHost | None = None
        try:  # a remote host's keeper: its own state on the host
            host = placement.TestbedHost.model_validate_json((d / "part.json").read_text())
        except FileNotFoundError:
            pass  # the sessions' folder, or a part that never started
        except (OSError, ValueError) as exc:
            failures.append(f"lab part {d.name}: {d / 'part.json'} does not read, so its host was not reached "
                            f"(a keeper may be left there): {str(exc)[:200]}")  # fmt: skip
        if host is not None and host.netns is None:
            lines = _clean_remote(host)
            left = [f"{host.name}: {line}" for line in lines if line.startswith("its keeper's state")]
            failures += left
            done += [f"{host.name}: {line}" for line in lines if f"{host.name}: {line}" not in left]
        if d != reach.CONTROL_DIR:
            done += clean_part_dir(d)
    done += federation.sweep_remote(failures)  # over the sessions still open (or opened again)
    done += reach.close_all()  # kept-open SSH sessions to testbed hosts, last (the remote cleanups used them)
    with contextlib.suppress(OSError):
        state_root().rmdir()
    return done


def clean_hosted_parts() -> list[str]:
    """This machine as a testbed host reached over SSH: the keepers' parts a controller left here (its own
    clean reaches them over SSH; one that never reached them, or is gone, leaves them to this machine's)."""
    from ..ownership import lock_holder

    root = remote_state_root()
    if not root.is_dir():
        return []
    done = []
    for d in sorted(p for p in root.iterdir() if p.is_dir()):
        if live := lock_holder(d / "lock"):  # its keeper runs a lab that a controller elsewhere drives
            done.append(f"kept the lab part on {d.name}: its keeper (pid {live.get('pid')}) is running a lab")
            continue
        done += clean_part_dir(d)
    with contextlib.suppress(OSError):
        root.rmdir()
    return done


def clean_part_dir(d: Path) -> list[str]:
    """A keeper's state directory: the keeper and every process of its lab killed, the directory removed."""
    import signal

    from .. import ownership

    done, pids = [], []
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
    return done


# $1 the keeper's state directory, $2 protolab's Python there, $3 the keepers' root (arguments, never code)
CLEAN_REMOTE_SCRIPT = (
    '[ -d "$1" ] || exit 0; "$2" -m protolab.lab.parts --clean-part "$1" || exit; rmdir -- "$3" 2>/dev/null; true'
)


def _clean_remote(host: placement.TestbedHost) -> list[str]:
    """clean_part_dir of the keeper's directory on a remote host, run there over its SSH session."""
    remote, root = remote_state_root() / host.name, remote_state_root()
    cmd = ["env", naming.instance_env(), "sh", "-c", CLEAN_REMOTE_SCRIPT, "sh", str(remote),
           host.python or sys.executable, str(root)]  # fmt: skip
    try:
        p = subprocess.run(host_cmd(host, cmd), capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return [f"its keeper's state {remote} not reached within 120 s (left on the host)"]
    if p.returncode != 0:
        return [f"its keeper's state {remote} not cleaned: {(p.stderr or p.stdout).strip()[-200:]}"]
    return [line for line in p.stdout.splitlines() if line]


# -- the state of a lab over several hosts held by a supervisor (protolab.lab.supervise): where clean finds it --
def supervisor_state() -> Path:
    return state_root() / "multilab.json"


def supervisor_log() -> Path:
    return state_root() / "multilab.log"


def whole_topology(p: keeper.Prepared) -> Topology:
    """whole(), of what `protolab deploy` prepared."""
    return whole(p.topology, p.images, p.cpus, p.commands, p.impairments)


def whole(topology: Topology, images: dict[str, str], cpus: dict[str, float | None],
          commands: dict[str, list[str] | None], impairments: list[Any]) -> Topology:  # fmt: skip
    """The topology a lab over several hosts splits: each node's image and CPU budget as the spec sets them, and
    every impairment (the experiment's too), so that each part carries its share to its keeper. A node command
    has nowhere to travel in a part yet: refused."""
    given = sorted(n for n, c in commands.items() if c)
    if given:
        raise LabError(f"node command(s) of {', '.join(given)}: a lab over several hosts does not carry them yet")
    hosts = [dataclasses.replace(h, image=images[h.name], cpus=cpus[h.name]) for h in topology.hosts]
    return dataclasses.replace(topology, hosts=hosts, impairments=list(impairments))


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "--clean-part":
        sys.exit("usage: python -m protolab.lab.parts --clean-part STATE_DIR  (on a testbed host, over its session)")
    print("\n".join(clean_part_dir(Path(sys.argv[2]))))
