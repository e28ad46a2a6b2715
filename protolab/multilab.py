"""A lab over several testbed hosts (issue 18): placement splits the topology, and each host's part is deployed
and held by a lab keeper of its own on that host (protolab.labctl's, given the part as JSON), with its own state
directory (lock, ledger, socket) and Docker engine.

An emulated host (protolab.emuhost, inventory variable protolab_netns) gets its keeper here, in the host's network
namespace with `nsenter --net`; any other host gets it over the host's SSH session (protolab.hostlink), started
and asked there (`python -m protolab.labctl --client/--state` on the host), its engine reached through a socket
the session forwards. Either way the keeper runs in a mount namespace of its own where /sys is its network
namespace's (Mininet and the counters read /sys/class/net), the cgroup hierarchies bound back under it. An
emulated host with an sshd (emuhost.start(ssh=True)) stands for a remote one on this machine.

At deploy, what the run's figures need to know about the hosts is measured: each stitch's underlay round trip and
its sd (the delay and jitter the tunnel's path adds to the link's own), and each host's clock offset from this
machine with its uncertainty (a ping-pong over the host's command channel), in state() for the manifest.

    lab = multilab.deploy(topology, inventory)       # parts deployed, keepers ready, stitches and clocks measured
    lab.exec("h1", ["ping", "-c", "1", "10.0.3.2"])  # through the node's own engine
    lab.destroy()                                     # every keeper tears its part down
"""

from __future__ import annotations

import contextlib
import dataclasses
import ipaddress
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
from .errors import LabError, ProtolabError
from .impair import Endpoint
from .jsonio import write_json
from .model.impairment import Impairment
from .topo import Topology, v6_address

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
    state directory here (labctl's functions read it under env()); a remote host's keeper runs on the host,
    started and asked over the host's SSH session (`python -m protolab.labctl --client/--state` there), its state
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
                return labctl.request(op, **args)
        answer = self._on_host("--client", json.dumps({"op": op, **args}))
        if not isinstance(answer, dict) or not answer.get("ok"):
            why = answer.get("error") if isinstance(answer, dict) else answer
            raise LabError(f"{op} on {self.host.name}: {why or 'no answer from the lab keeper'}")
        return answer

    def load_state(self) -> dict[str, Any] | None:
        """The keeper's state (None: no keeper running)."""
        if not self.remote:
            with self.env():
                return labctl.load_state()
        st = self._on_host("--state")
        return st if isinstance(st, dict) else None

    def _on_host(self, *args: str) -> Any:
        from . import hostlink

        cmd = ["env", f"PROTOLAB_STATE_DIR={self.remote_dir}", naming.instance_env(),
               self.host.python or sys.executable, "-m", "protolab.labctl", *args]  # fmt: skip
        p = subprocess.run(hostlink.command(self.host, cmd), capture_output=True, text=True,
                           timeout=labctl.REQUEST_TIMEOUT + 30)  # fmt: skip
        try:
            return json.loads(p.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            raise LabError(f"the lab keeper's client on {self.host.name}: exit {p.returncode}: "
                           f"{(p.stderr or p.stdout).strip()[-300:]}") from None  # fmt: skip

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

    def exec(self, node: str, cmd: list[str], timeout: float | None = None) -> tuple[int, str, str]:
        """A command in a node's container through its host's engine, as Lab.exec runs one: no deadline unless
        given (a workload's server runs for its phase), killed and ExecTimeoutError past it."""
        from .lab import exec_in

        return exec_in(self.container(node), cmd, timeout, where=f"{node} on {self.host_of(node).host.name}")

    def container(self, node: str) -> Any:
        """A node's container, a handle on its host's engine (docker-py)."""
        from . import hostlink

        return docker_client(hostlink.engine(self.host_of(node).host)).containers.get(naming.container_name(node))

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
        from . import hostlink

        failures = []
        for name, part in self.parts.items():
            try:
                if part.load_state() is None:
                    continue
                # not labctl.destroy(): the keeper is this process's child, reaped below, not waited for
                failures += [f"{name}: {f}" for f in part.request("destroy").get("failures") or []]
            except LabError as exc:
                failures.append(f"{name}: {exc}")
            if part.proc is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    part.proc.wait(timeout=60)
            if part.remote and not failures:  # the keeper's own state on the host, then the session
                failures += [f"{name}: {f}" for f in _clean_remote(part.host) if f.startswith("its keeper")]
                hostlink.close(part.host)
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
    """`cmd` as it runs on a testbed host (protolab.hostlink: an emulated host's namespace, or over SSH)."""
    from . import hostlink

    return hostlink.command(host, cmd)


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


class _View:
    """A lab over several hosts as protolab.selfcheck sees a lab: the whole topology and its impairments, commands
    in a node through its host's engine, a direction's two interfaces (found in the parts' keeper states; a
    bridge's in its host's namespace, entered by its keeper's pid) and its impairment replaced through the keeper
    that applies it (placement.split's rule: at sender on the sending node's host, at receiver on the
    receiving node's; a stitched link's far end is that host's stitch bridge)."""

    def __init__(self, lab: MultiLab, topology: Topology) -> None:
        from .linkstate import wanted_settings

        self.lab, self.topology, self.impairments = lab, topology, list(topology.impairments)
        self.configured = wanted_settings(topology, self.impairments)  # the links' rates too, as each keeper has them
        self.current = dict(self.configured)
        self.links = self
        self.states: dict[str, dict[str, Any]] = {}
        for name, part in lab.parts.items():
            self.states[name] = part.load_state() or {}
        self.stitched = {frozenset(s.link): s for s in lab.placement.stitches}

    def exec(self, node: str, cmd: list[str], timeout: float | None = None) -> tuple[int, str, str]:
        return self.lab.exec(node, cmd, timeout=timeout)

    def data_interfaces(self, node: str) -> list[str]:
        """A node's interfaces in link order: the whole topology's, which each host's part keeps (a stitched link
        ends at the host's stitch bridge in the same place)."""
        return self.topology.interfaces()[node]

    def ip(self, node: str, intf: int = 0, family: int = 4) -> str:
        """A node's address on its intf-th data interface, as Lab.ip gives it: IPv4, or (family 6) its twin."""
        links = [lk for lk in self.topology.links if node in (lk.node1, lk.node2)]
        if not 0 <= intf < len(links):
            raise LabError(f"{node}: no data interface {intf} (it has {len(links)})")
        cidr = links[intf].ip1 if links[intf].node1 == node else links[intf].ip2
        if cidr is None:
            raise LabError(f"{node}: its data interface {intf} has no address")
        if family == 4:
            return str(ipaddress.ip_interface(cidr).ip)
        if not self.topology.ipv6:
            raise LabError(f"{node}: this lab has no IPv6 (its topology says ipv6: false)")
        return str(ipaddress.ip_interface(v6_address(cidr)).ip)

    def node_shell(self, node: str, script: str) -> str:
        """A root shell command in the node's network namespace, run by the keeper of its host (Lab.node_shell)."""
        return str(self.lab.host_of(node).request("sh", node=node, script=script)["output"])

    # -- what a run reads of its lab (Lab's members of the same names), from the keepers' states --------------
    @property
    def nodes(self) -> dict[str, Any]:
        """Each node's runtime as Lab.nodes has it: name, role, image, pid, mgmt_ip, and its container (a handle on
        its host's engine)."""
        from .lab import NodeRuntime

        out = {}
        for h, st in self.states.items():
            remote = not self.lab.parts[h].local  # a pid there is not a process here: none (no CPU read here)
            for n in st.get("nodes", []):
                out[n["name"]] = NodeRuntime(n["name"], n.get("role", "host"), n.get("image", ""),
                                             pid=None if remote else n["pid"],  # type: ignore[arg-type]
                                             mgmt_ip=n.get("mgmt_ip", ""),
                                             container=_LazyContainer(self.lab, n["name"]))  # fmt: skip
        return out

    def _ends(self, local: bool = False) -> list[tuple[str, Endpoint]]:
        """Every link end of every part (with `local`, of the parts on this machine: emulated hosts): (node or
        bridge, its Endpoint), a bridge's on its host's side."""
        return [x for h, st in self.states.items() if not (local and not self.lab.parts[h].local) for x in _ends_of(st)]

    def ends_here(self) -> list[tuple[str, Endpoint]]:
        """The link ends in namespaces on this machine: the emulated hosts' parts (node or bridge, Endpoint)."""
        return self._ends(local=True)

    def namespace_host(self, pid: int | None) -> str | None:
        """The testbed host whose part has a link end in the namespace of `pid` (a keeper's: its bridges), else
        None."""
        for h, st in self.states.items():
            if pid is not None and any(e.pid == pid for _n, e in _ends_of(st)):
                return str(h)
        return None

    def interface_counters(self) -> dict[str, dict[str, int]]:
        """Every link end's counters: an emulated part's read here in its namespaces, a remote part's by its keeper."""
        from .lab import counters_of

        return counters_of(self._ends(local=True)) | self._read_remote("counters")

    def offloads(self) -> dict[str, dict[str, str]]:
        from .lab import read_offloads

        local = {f"{node}:{end.intf}": read_offloads(end) for node, end in self._ends(local=True)}
        return local | self._read_remote("offloads")

    def linkem_sockets(self) -> list[tuple[str, Path]]:
        """The control sockets of the link emulators of the parts on this machine (emulated hosts): in each
        keeper's state directory, named "<host> <socket>" (protolab.quiesce reads them)."""
        return [(f"{h} {p.name}", p) for h, part in sorted(self.lab.parts.items()) if not part.remote
                for p in sorted((part.state_dir / "linkem").glob("*.sock"))]  # fmt: skip

    def keepers_helpers_down(self, since: float) -> list[str]:
        """Each keeper's watch of the helpers it runs (its link emulators and NIC filters: helperproc.WATCH in the
        keeper's process, here or on its host) since `since` (this process's time.monotonic()), one line each
        naming the host; a keeper that does not answer is a line too (its helpers cannot be shown up)."""
        ago = max(0.0, time.monotonic() - since)
        out = []
        for h, part in sorted(self.lab.parts.items()):
            try:
                reasons = part.request("helpers", ago=ago)["reasons"]
            except (ProtolabError, OSError, subprocess.SubprocessError, ValueError) as exc:
                out.append(f"the helpers on host {h} could not be watched: its keeper did not answer ({exc})")
                continue
            out += [f"{r} (on host {h})" for r in reasons]
        return out

    def remote_held(self) -> dict[str, tuple[int, str]]:
        """What the link emulators of the parts on hosts reached over SSH hold, asked of their keepers (a part
        here is read on its sockets: protolab.quiesce): {"<host> <emulator>": (bytes, what)}; a keeper that does
        not answer is an entry too, with 0 bytes and why."""
        out: dict[str, tuple[int, str]] = {}
        for h, part in sorted(self.lab.parts.items()):
            if not part.remote:
                continue
            try:
                held = part.request("read", what="held")["value"]
            except (ProtolabError, OSError, subprocess.SubprocessError, ValueError) as exc:
                out[f"{h} link emulators"] = (0, f"not readable: its keeper did not answer ({exc})")
                continue
            out |= {f"{h} {name}": (int(n), str(what)) for name, (n, what) in held.items()}
        return out

    def emulator_drops(self) -> dict[str, dict[str, int]]:
        """The link emulators' losses by cause (impair.parse_drops): a part's here read on its sockets, a part's on
        a host reached over SSH asked of its keeper."""
        from .impair import linkem_drops

        out = linkem_drops(self.linkem_sockets())
        for part in self.lab.parts.values():
            if part.remote:
                out |= part.request("read", what="drops")["value"]
        return out

    def sync_nic_filters(self) -> dict[str, list[str]]:
        """Lab.sync_nic_filters over hosts: each part's keeper (emulated or remote) brings its NIC filters' model
        up to its nodes' joins; 'node:interface' -> its joined link-layer groups."""
        out: dict[str, list[str]] = {}
        for part in self.lab.parts.values():
            out |= part.request("nic_sync")["joined"]
        return out

    def _read_remote(self, what: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for part in self.lab.parts.values():
            if not part.local:
                out |= part.request("read", what=what)["value"]
        return out

    @property
    def shaped_interfaces(self) -> set[str]:
        return {i for st in self.states.values() for i in st.get("shaped_interfaces", [])}

    @property
    def applied(self) -> list[dict[str, Any]]:
        return [{"host": h, **a} for h, st in sorted(self.states.items()) for a in st.get("applied", [])]

    @property
    def nic_filters(self) -> dict[str, str]:
        return {k: v for st in self.states.values() for k, v in (st.get("nic_filters") or {}).items()}

    def unshaped(self) -> dict[int | None, set[str]]:
        """Lab.unshaped over hosts: the data interfaces no shaper is on, by the namespace they are in (a node's pid,
        or the keeper's for its host's bridges)."""
        out: dict[int | None, set[str]] = {}
        for h, st in self.states.items():
            if not self.lab.parts[h].local:
                continue  # read on its host, by a guard there: not built yet
            shaped = set(st.get("shaped_interfaces", []))
            for _node, end in _ends_of(st):
                if end.intf not in shaped:
                    out.setdefault(end.pid, set()).add(end.intf)
        return out

    def step(self, link: tuple[str, str], direction: str, change: Impairment | None) -> None:
        """LinkState.step over hosts: the fields given in `change` replace the current ones of the direction(s),
        each changed by the keeper that applies it."""
        from .linkstate import step_changes

        for d, imp, at in step_changes(self.current, link, direction, change):
            self.replace(*d, imp, at)

    def set_cable(self, link: tuple[str, str], state: str) -> None:
        """Pull ("down") or plug ("up") a link's cable. A stitched link is one cable between two hosts: each host
        pulls its end (the node's port on its stitch bridge), so both nodes lose carrier as with one cable."""
        a, b = link
        st = self.stitched.get(frozenset(link))
        if st is None:
            hosts = {self.lab.placement.node_host[n] for n in link if n in self.lab.placement.node_host}
            ends = {h: [a, b] for h in hosts}
        else:
            x = placement.stitch_bridge(st.vni)
            ends = {self.lab.placement.node_host[n]: [n, x] for n in link}
        for host, local in sorted(ends.items()):
            self.lab.parts[host].request("links", method="set_cable", link=local, state=state)

    def restore(self) -> list[str]:
        """Every cable in and every direction as configured, on every host; what could not be, by host."""
        failures = []
        for host, part in sorted(self.lab.parts.items()):
            try:
                failures += [f"{host}: {f}" for f in part.request("links", method="restore")["failures"]]
            except LabError as exc:
                failures.append(f"{host}: {exc}")
        self.current = dict(self.configured)
        return failures

    def _local(self, a: str, b: str, at: str) -> tuple[str, list[str]]:
        """(host, link in that host's part) of direction a -> b's impairment."""
        st = self.stitched.get(frozenset((a, b)))
        host = self.lab.placement.node_host[a if at == "sender" else b]
        if st is None:
            return host, [a, b]
        x = placement.stitch_bridge(st.vni)
        return host, ([a, x] if at == "sender" else [x, b])

    def _end(self, node: str, other: str) -> Endpoint:
        host = self.lab.placement.node_host[node]
        st = self.stitched.get(frozenset((node, other)))
        peer = placement.stitch_bridge(st.vni) if st else other
        state = self.states[host]
        for row in state.get("links", []):
            names = [e["node"] for e in row["ends"]]
            if set(names) == {node, peer}:
                return _endpoint(state, node, row["ends"][names.index(node)]["interface"])
        raise LabError(f"no link {node}-{peer} in the part on {host}")

    def ends(self, a: str, b: str) -> tuple[Endpoint, Endpoint]:
        return self._end(a, b), self._end(b, a)

    def replace(self, a: str, b: str, imp: Impairment, at: str) -> None:
        host, link = self._local(a, b, at)
        # what is in force; the keeper's configured impairments stay the spec's
        self.lab.parts[host].request(
            "links", method="replace", link=link, at=at, impairment=imp.model_dump(mode="json")
        )
        self.current[(a, b)] = (imp, at)


def _endpoint(state: dict[str, Any], node: str, intf: str) -> Endpoint:
    """An interface of a keeper's part: a node's in its namespace (its pid), a bridge's on the host's side (the
    keeper's pid)."""
    pid = next((n["pid"] for n in state.get("nodes", []) if n["name"] == node), None)
    return Endpoint(intf, pid) if pid is not None else Endpoint(intf, state.get("pid"), host_side=True)


def _ends_of(state: dict[str, Any]) -> list[tuple[str, Endpoint]]:
    """A keeper state's link ends, each as _endpoint has it."""
    return [(e["node"], _endpoint(state, e["node"], e["interface"])) for row in state.get("links", [])
            for e in row["ends"]]  # fmt: skip


class _LazyContainer:
    """A node's container on its host's engine, looked up on first use (a run asks for few of them)."""

    def __init__(self, lab: MultiLab, node: str) -> None:
        self._lab, self._node = lab, node
        self._c: Any = None

    def __getattr__(self, name: str) -> Any:
        if self._c is None:
            self._c = self._lab.container(self._node)
        return getattr(self._c, name)


def check_stitches(lab: MultiLab, topology: Topology, log: Any = print) -> list[dict[str, Any]]:
    """protolab.selfcheck across every impaired direction of a stitched link, before any workload: a probe pair
    whose path crosses it (end to end through both hosts' shapers and the tunnel), RTT over the path's own base
    (its delays set to 1 us through the keepers, then put back), loss, and the rate at the shaping interface,
    against selfcheck's bounds; one result per direction."""
    from . import selfcheck

    view = _View(lab, topology)
    crossing = {d for s in lab.placement.stitches for d in (tuple(s.link), tuple(reversed(s.link)))}
    dirs = [d for d in dict.fromkeys(d for item in topology.impairments for d in item.directions()) if d in crossing]
    spec_rated = {d for item in topology.impairments if item.rate for d in item.directions()}
    results = []
    for d in dirs:
        p = selfcheck.plan(topology, d, set(dirs))
        if isinstance(p, str):
            results.append({"from": d[0], "to": d[1], "passed": True, "skipped": p, "failures": []})
            log(f"self-check across {d[0]}->{d[1]}: not probed ({p})")
            continue
        res = selfcheck.check_direction(view, p, selfcheck.expected(p, view.configured, spec_rated))
        results.append(res)
        log(f"self-check across {d[0]}->{d[1]} via {p.src}->{p.dst}: " + selfcheck.summarize(res))
    return results


def _keeper_cmd(part: Part, req: labctl.Request) -> list[str]:
    """The keeper of a part: in its own mount namespace where /sys is the host's network namespace's (Mininet and
    the counters read /sys/class/net); here in an emulated host's namespace, or on a remote host over its SSH
    session, with its state directory and engine there."""
    from . import hostlink

    keeper = ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", SYSFS, "sh",
              part.host.python or sys.executable, "-m", "protolab.labctl", json.dumps(req.__dict__)]  # fmt: skip
    if part.remote:
        keeper = ["env", f"PROTOLAB_STATE_DIR={part.remote_dir}", f"DOCKER_HOST={part.host.engine}",
                  naming.instance_env(), *keeper]  # fmt: skip
    return hostlink.command(part.host, keeper)


def deploy(topology: Topology, inventory: placement.Inventory, out: Any = sys.stderr, ledger: Any = None) -> MultiLab:
    """Place, split, and deploy every part at once (one keeper per host); ready when all are. With a `ledger`,
    each keeper's process is recorded in it (a run's: its sweep stops a keeper that a dead run left)."""
    p = placement.place(topology, inventory)
    parts = placement.split(topology, p, inventory)
    lab = MultiLab(p)
    for name, t in parts.items():
        part = Part(inventory.get(name), t, state_root() / name)
        part.state_dir.mkdir(parents=True, exist_ok=True)
        req = labctl.Request(source=f"{topology.kind}@{name}", part=t.to_json())
        env = os.environ | {"PROTOLAB_STATE_DIR": str(part.state_dir), "DOCKER_HOST": part.host.engine}
        write_json(part.state_dir / "part.json", part.host.model_dump(mode="json"))  # for `clean`: where it runs
        if part.remote:  # the keeper's state directory on the host
            subprocess.run(host_cmd(part.host, ["mkdir", "-p", str(part.remote_dir)]), check=True, capture_output=True,
                           timeout=60)  # fmt: skip
        part.proc = labctl.spawn_logged(_keeper_cmd(part, req), part.state_dir / "lab.log", env)
        if ledger is not None:
            ledger.process(part.proc.pid)
        lab.parts[name] = part
        print(f"deploying {len(t.hosts)} node(s) of {topology.kind} on {name}", file=out, flush=True)
    try:
        labctl.await_ready({n: (pt.proc, pt.state_dir / "lab.log") for n, pt in lab.parts.items()}, READY_TIMEOUT)
    except labctl.NotReadyError as e:
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
    the remote hosts' Prometheus that runs' ledgers record, over live sessions (hostmon.sweep_remote); the SSH
    sessions last. What could not be reached goes to `failures` (left on its host), not to what was done."""
    import signal

    from . import hostlink, hostmon, ownership

    failures = [] if failures is None else failures
    done: list[str] = []
    if not state_root().is_dir():  # no keeper left here; a run's remote Prometheus may be
        return hostmon.sweep_remote(failures) + hostlink.close_all()
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
        if d != hostlink.CONTROL_DIR:
            done += clean_part_dir(d)
    done += hostmon.sweep_remote(failures)  # over the sessions still open (or opened again)
    done += hostlink.close_all()  # kept-open SSH sessions to testbed hosts, last (the remote cleanups used them)
    with contextlib.suppress(OSError):
        state_root().rmdir()
    return done


def clean_hosted_parts() -> list[str]:
    """This machine as a testbed host reached over SSH: the keepers' parts a controller left here (its own
    clean reaches them over SSH; one that never reached them, or is gone, leaves them to this machine's)."""
    from .ownership import lock_holder

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

    from . import ownership

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
    '[ -d "$1" ] || exit 0; "$2" -m protolab.multilab --clean-part "$1" || exit; rmdir -- "$3" 2>/dev/null; true'
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


# -- a lab over several hosts from the command line (`protolab deploy ... --inventory FILE | --emulate-hosts a,b`) --
# A supervisor process holds it: it takes this machine's lab lock (so no run, deploy or clean interleaves), starts
# emulated hosts when asked (their engines and namespaces in its ledger), deploys the parts, writes multilab.json
# and waits; SIGTERM (`protolab destroy`) tears the parts down, then the emulated hosts.


def supervisor_state() -> Path:
    return state_root() / "multilab.json"


def supervisor_log() -> Path:
    return state_root() / "multilab.log"


def load_supervised() -> dict[str, Any] | None:
    """The state of a lab over several hosts held by a live supervisor, else None."""
    from . import ownership

    try:
        st = json.loads(supervisor_state().read_text())
    except (FileNotFoundError, ValueError):
        return None
    return st if ownership.alive(st["pid"], st.get("start")) else None


def supervise(request: dict[str, Any]) -> int:
    """The supervisor process (`python -m protolab.multilab REQUEST_JSON`); prints READY once the lab is up."""
    import signal

    from . import emuhost, ownership
    from .jsonio import new_run_id

    stop = {"now": False}

    def on_signal(_sig: int, _frm: Any) -> None:
        stop["now"] = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    run_id = "multilab-" + new_run_id()
    try:
        ownership.LOCK.acquire("deploy", run_id, hint="`protolab destroy` tears the lab over several hosts down")
    except ProtolabError as exc:  # another run, deploy or clean holds this machine's lab state
        print(f"FAILED: {exc}", flush=True)
        return 1
    ledger = ownership.begin_run(run_id, None)
    lab: MultiLab | None = None
    failures: list[str] = []
    try:
        req = labctl.Request(request["source"], request.get("params") or {}, request.get("node_filter") or [])
        p = labctl.prepare(req)
        whole = whole_topology(p)
        inventory_path = Path(request["inventory"]) if request.get("inventory") else None
        emulated = request.get("emulate") or []
        if emulated:
            hosts = emuhost.start(emulated, ledger, ssh=bool(request.get("ssh")))
            for ref in sorted(set(p.images.values())):
                emuhost.load_image(hosts, ref)
            inventory_path = emuhost.write_inventory(hosts, state_root() / "emulated-inventory.yml",
                                                     cpus=float(request.get("cpus") or 1.0))  # fmt: skip
        inv = placement.load_inventory(inventory_path or placement.DEFAULT_INVENTORY)
        t0 = time.monotonic()
        lab = deploy(whole, inv, out=sys.stdout)
        checks = check_stitches(lab, whole, log=lambda line: print(line, flush=True))
        state = {"pid": os.getpid(), "start": ownership.start_time(os.getpid()), "run": run_id,
                 "name": p.topology.kind, "source": req.source, "params": req.params, "node_filter": req.node_filter,
                 "inventory": inv.source, "emulated": emulated,
                 "deployed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                 "deploy_seconds": round(time.monotonic() - t0, 1),
                 "parts": {n: {"engine": x.host.engine, "state_dir": str(x.state_dir),
                               "host": x.host.model_dump(mode="json")} for n, x in lab.parts.items()},
                 "checks": checks, **{k: v for k, v in lab.state().items() if k != "hosts"}}  # fmt: skip
        write_json(supervisor_state(), state)
        print("READY", flush=True)
        while not stop["now"]:
            time.sleep(0.5)
    except BaseException as exc:  # noqa: BLE001 (reported, then torn down)
        print(f"FAILED: {exc}", flush=True)
        failures.append(str(exc))
    finally:
        if lab is not None:
            for f in lab.destroy():
                print(f"left: {f}", flush=True)
                failures.append(f)
        for f in ledger.sweep():
            print(f"left: {f}", flush=True)
            failures.append(f)
        with contextlib.suppress(FileNotFoundError):
            supervisor_state().unlink()
        ownership.LOCK.release()
        print("DONE", flush=True)
    return 1 if failures else 0


def whole_topology(p: labctl.Prepared) -> Topology:
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


def start_supervised(request: dict[str, Any], out: Any = sys.stderr) -> dict[str, Any]:
    """`protolab deploy ... --inventory/--emulate-hosts`: start the supervisor, follow its log until READY."""
    if (st := load_supervised()) is not None:
        raise LabError(f"lab {st['name']} over {', '.join(st['parts'])} is deployed already: `protolab destroy` first")
    if labctl.load_state() is not None:
        raise LabError("a lab is deployed on this machine already: `protolab destroy` first")
    whole_topology(labctl.prepare(labctl.Request(request["source"], request.get("params") or {},
                                                 request.get("node_filter") or [])))  # fmt: skip
    if request.get("inventory"):
        placement.load_inventory(request["inventory"])  # a broken inventory fails here, before anything starts
    state_root().mkdir(parents=True, exist_ok=True)
    proc = labctl.spawn_logged([sys.executable, "-m", "protolab.multilab", json.dumps(request)], supervisor_log())

    def echo(_: str, line: str) -> None:
        if line not in ("READY", "DONE") and not line.startswith("FAILED"):
            print(f"  {line}", file=out, flush=True)

    try:
        labctl.await_ready({"supervisor": (proc, supervisor_log())}, READY_TIMEOUT + 120, echo=echo)
    except labctl.NotReadyError as e:
        if e.returncode is None:
            proc.terminate()
            raise LabError(f"deploy over several hosts took too long; stopped (log: {supervisor_log()})") from None
        lines = supervisor_log().read_text(errors="replace").splitlines()
        why = next((ln.removeprefix("FAILED: ") for ln in lines if ln.startswith("FAILED: ")), f"exit {e.returncode}")
        raise LabError(f"deploy over several hosts failed: {why} (log: {supervisor_log()})") from None
    if (st := load_supervised()) is None:
        raise LabError(f"the supervisor said READY but wrote no state (log: {supervisor_log()})")
    return st


def stop_supervised(timeout: float = 300) -> list[str]:
    """`protolab destroy` of a lab over several hosts: SIGTERM to the supervisor, then wait for it to be done;
    what it could not remove (its `left:` lines)."""
    import signal

    from . import ownership

    st = load_supervised()
    if st is None:
        raise LabError("no lab over several hosts is deployed")
    os.kill(st["pid"], signal.SIGTERM)
    t0 = time.monotonic()
    while ownership.alive(st["pid"], st.get("start")) and time.monotonic() - t0 < timeout:
        time.sleep(0.2)
    if ownership.alive(st["pid"], st.get("start")):
        return [
            f"the supervisor (pid {st['pid']}) is still tearing down after {timeout:.0f} s (log: {supervisor_log()})"
        ]
    text = supervisor_log().read_text(errors="replace") if supervisor_log().exists() else ""
    left = [ln.removeprefix("left: ") for ln in text.splitlines() if ln.startswith("left: ")]
    if not left:  # nothing to look into: the log and the emulated hosts' inventory go too
        for f in (supervisor_log(), state_root() / "emulated-inventory.yml"):
            with contextlib.suppress(FileNotFoundError):
                f.unlink()
        with contextlib.suppress(OSError):
            state_root().rmdir()
    return left


def attach(st: dict[str, Any]) -> MultiLab:
    """The lab a supervisor holds, from its state, for commands run beside it (exec, check)."""
    lab = MultiLab(placement.Placement.from_json(st["placement"]), underlay=list(st.get("underlay") or []),
                   clocks=dict(st.get("clocks") or {}))  # fmt: skip
    for host, part in st["parts"].items():
        lab.parts[host] = _part_of(host, part)
    return lab


def _part_of(host: str, part: dict[str, Any]) -> Part:
    """A part as a supervisor's state records it: its host as the inventory had it, and its state directory."""
    return Part(placement.TestbedHost.model_validate(part["host"]), Topology(host), Path(part["state_dir"]))


def recheck(st: dict[str, Any], log: Any = print) -> list[dict[str, Any]]:
    """`protolab check` of a lab over several hosts: the self-check across its stitched links again, recorded in
    its state."""
    req = labctl.Request(st["source"], st.get("params") or {}, st.get("node_filter") or [])
    results = check_stitches(attach(st), whole_topology(labctl.prepare(req)), log=log)
    fresh = load_supervised()
    if fresh is not None and fresh.get("run") == st.get("run"):
        fresh["checks"] = results
        write_json(supervisor_state(), fresh)
    return results


def supervised_exec(st: dict[str, Any], node: str, cmd: list[str], tty: bool = False) -> int:
    """docker exec in a node of a lab over several hosts, through its host's engine."""
    host = st["placement"]["nodes"].get(node)
    if host is None:
        raise LabError(f"{node}: not a node of the deployed lab {st['name']} (its nodes: "
                       f"{', '.join(st['placement']['nodes'])})")  # fmt: skip
    from . import hostlink

    engine = hostlink.engine(_part_of(host, st["parts"][host]).host)  # a remote host's through its session
    return subprocess.call(["docker", "-H", engine, "exec", *(["-it"] if tty else []), naming.container_name(node),
                            *cmd])  # fmt: skip


def supervised_text(st: dict[str, Any]) -> str:
    """`protolab inspect` of a lab over several hosts: where each node runs, the stitches and what was measured
    about them, the hosts' clocks, then each host's part as a lab of its own."""
    lines = [f"lab {st['name']} ({st['run']}) over {len(st['parts'])} testbed hosts of {st['inventory']}"
             f"{' (emulated)' if st.get('emulated') else ''}, up since {st['deployed_at']} (deployed in "
             f"{st['deploy_seconds']} s), supervisor pid {st['pid']}", "", "placement:"]  # fmt: skip
    for host, part in st["parts"].items():
        nodes = [n for n, h in st["placement"]["nodes"].items() if h == host]
        lines.append(f"  {host:<10} engine {part['engine']}: {', '.join(nodes)}")
    for s, u in zip(st["placement"]["stitches"], st.get("underlay") or [], strict=False):
        rtt = (f"underlay RTT {u['rtt_mean_seconds'] * 1e3:.3f} ms, sd {u['rtt_sd_seconds'] * 1e6:.0f} us"
               if "rtt_mean_seconds" in u else u.get("error", "not measured"))  # fmt: skip
        lines.append(f"  stitched {'-'.join(s['link'])}: VNI {s['vni']}, MTU {s['mtu']}, {rtt}")
    from .selfcheck import summarize

    for c in st.get("checks") or []:
        lines.append(f"  self-check across {c['from']}->{c['to']}: " + (c.get("skipped") or summarize(c)))
    for host, c in (st.get("clocks") or {}).items():
        what = (f"offset {c['offset_seconds'] * 1e6:+.0f} us +- {c['uncertainty_seconds'] * 1e6:.0f} us"
                if "offset_seconds" in c else c.get("error", "?"))  # fmt: skip
        lines.append(f"  clock of {host}: {what}")
    for host, part in st["parts"].items():
        sub = _part_of(host, part).load_state()
        lines += ["", f"== {host} ==", labctl.inspect_text(sub) if sub else "(its keeper is not running)"]
    return "\n".join(lines)


if __name__ == "__main__":
    if sys.argv[1] == "--clean-part":  # on a remote host, over its SSH session (clean_parts)
        print("\n".join(clean_part_dir(Path(sys.argv[2]))))
        sys.exit(0)
    sys.exit(supervise(json.loads(sys.argv[1])))
