"""A running lab: one container per topology host, made a Mininet host; Linux bridges as switches.

Each host is a container of its image (PID 1: the protolab agent) on the management network `plab-mgmt`,
which only Prometheus and the orchestrator use. `ContainerHost` enters the container's network namespace
with `nsenter -t PID -n` (Mininet's `mnexec -a` does not attach here), so Mininet adds and configures the
data-plane interfaces from outside; workloads run inside with `docker exec`, in the container's own
filesystem and cgroup, so its CPU is the container's.

Switches are `Bridge`s named `plab-<switch>`: a learning bridge, or a hub (learning off, every frame
flooded, and every frame entering the bridge shaped by one HTB on an IFB, `plab-<switch>-ifb`, so a single
capacity is shared by all ports and both directions).
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import os
import pty
import select
import signal
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import docker
import docker.errors

from .. import engine, mnlog, naming, ownership, topo
from ..counters import parse_proc_net_dev
from ..errors import ExecTimeoutError, LabError, ProtolabError
from ..model.impairment import Impairment, LinkImpairment
from ..ownership import Ledger
from ..shell import CommandError, in_netns, run
from ..topo import Topology
from ..units import format_rate
from . import firewall, impair, nicfilter, rxcpu, stitch
from .impair import Endpoint
from .linkstate import LinkState, wanted_settings

log = logging.getLogger(__name__)

# Least privilege (issue "Trust"): a node container drops every capability and gets back only these, with
# no-new-privileges and pids and memory limits (a spec's `nodes:` entry may raise the limits). Measured, not
# guessed: with only these two, the capability:cap_capable tracepoint saw no node process refused anything it
# did not do without (iputils ping's own privilege drop, the kernel's overcommit probe) over smoke, ipmc-groups,
# bundle-converter, spims and satellite; NET_ADMIN: addresses, routes, qdiscs, multicast routing; NET_RAW: ping.
CAPABILITIES = ["NET_ADMIN", "NET_RAW"]
SECURITY_OPT = ["no-new-privileges"]
PIDS_LIMIT = 1024  # tasks (threads count); peak seen over those runs: 23
MEMORY_LIMIT = 1 << 30  # bytes (page cache included; socket buffers too on cgroup v2); peak seen: 109 MiB
MULTICAST_PREFIX = "224.0.0.0/4"


def container_privileges(limits: dict[str, int | None]) -> dict[str, Any]:
    """docker-py's run() options for a node: every capability dropped but CAPABILITIES, no new privileges, and
    the pids and memory limits (`limits`: the spec's memory and pids, None for the default)."""
    memory = limits.get("memory") or MEMORY_LIMIT
    return dict(cap_drop=["ALL"], cap_add=CAPABILITIES, security_opt=SECURITY_OPT,
                pids_limit=limits.get("pids") or PIDS_LIMIT, mem_limit=memory, memswap_limit=memory)  # fmt: skip


def granted(host_config: dict[str, Any]) -> dict[str, Any]:
    """What the engine says a container got (for the manifest): capabilities, security options, limits."""
    return {"cap_drop": host_config.get("CapDrop"), "cap_add": host_config.get("CapAdd"),
            "security_opt": host_config.get("SecurityOpt"), "pids_limit": host_config.get("PidsLimit"),
            "memory_bytes": host_config.get("Memory")}  # fmt: skip


def _mininet():
    """Import Mininet lazily: it needs Debian's python3-mininet and is only needed to deploy."""
    try:
        from mininet import link, net, node, nodelib  # noqa: F401
    except ImportError as exc:
        raise LabError(f"Mininet is not importable ({exc}); run `make setup`") from None
    mnlog.standard_loggers()
    return link, net, node, nodelib


def _shell_start(self: Any, prefix: list[str], new_session: bool) -> None:
    """Mininet's Node.startShell, with our own namespace-entering prefix and a marker for `clean`."""
    cmd = [*prefix, "env", "PS1=" + chr(127), f"{naming.PROCESS_ENV}={self.name}",
           f"{ownership.RUN_ENV}={self.run_id}",
           "bash", "--norc", "--noediting", "-is", "mininet:" + self.name]  # fmt: skip
    self.master, self.slave = pty.openpty()
    self.shell = self._popen(cmd, stdin=self.slave, stdout=self.slave, stderr=self.slave, close_fds=False,
                             start_new_session=new_session)  # fmt: skip
    self.stdin = os.fdopen(self.master, "r")
    self.stdout = self.stdin
    self.pid = self.shell.pid
    self.pollOut = select.poll()
    self.pollOut.register(self.stdout)
    self.outToNode[self.stdout.fileno()] = self
    self.inToNode[self.stdin.fileno()] = self
    self.execed = False
    self.lastCmd = None
    self.lastPid = None
    self.readbuf = ""
    deadline = time.monotonic() + 10
    while True:
        data = self.read(1024)
        if data and data[-1] == chr(127):
            break
        if self.shell.poll() is not None or time.monotonic() > deadline:
            raise LabError(f"{self.name}: node shell did not start ({' '.join(cmd)}): {data!r}")
        self.pollOut.poll(100)
    self.waiting = False
    self.cmd("unset HISTFILE; stty -echo; set +m")


def node_classes():
    """The Mininet node classes, built on first use (Mininet imported lazily)."""
    link, _net, node, nodelib = _mininet()

    class ContainerHost(node.Host):
        """A Mininet host living in a running container's network namespace."""

        def __init__(self, name: str, container_pid: int, run_id: str, **params: Any) -> None:
            self.container_pid, self.run_id = container_pid, run_id
            super().__init__(name, inNamespace=True, **params)

        def startShell(self, mnopts: Any = None) -> None:  # noqa: N802 (Mininet's name)
            _shell_start(self, ["nsenter", "-t", str(self.container_pid), "-n"], new_session=True)

        def popen(self, *args: Any, **kwargs: Any) -> Any:
            kwargs.setdefault("mncmd", ["nsenter", "-t", str(self.container_pid), "-n"])
            return super().popen(*args, **kwargs)

    class Bridge(nodelib.LinuxBridge):
        """A Linux bridge in the root namespace: learning switch, or shared-capacity hub."""

        def __init__(self, name: str, run_id: str, mode: str = "switch", capacity_bps: float | None = None,
                     multicast_snooping: bool = False, queue_frames: int = 100, vxlan: Any = None,
                     **params: Any) -> None:  # fmt: skip
            self.mode, self.capacity_bps, self.multicast_snooping = mode, capacity_bps, multicast_snooping
            self.queue_frames = queue_frames
            self.vxlan = vxlan  # a stitch bridge: its half of a link to another testbed host (protolab.lab.stitch)
            self.run_id = run_id
            super().__init__(name, stp=False, **params)

        def startShell(self, mnopts: Any = None) -> None:  # noqa: N802
            _shell_start(self, ["mnexec", "-cd"], new_session=False)  # mnexec -d makes the session

        @property
        def ifb(self) -> str:
            return f"{self.name}-ifb"

        def start(self, _controllers: Any) -> None:
            br, hub = self.name, self.mode == "hub"
            snoop = "1" if self.multicast_snooping else "0"
            run(["ip", "link", "add", "name", br, "type", "bridge", "stp_state", "0",
                 "ageing_time", "0" if hub else "30000", "mcast_snooping", snoop, "mcast_querier", snoop])  # fmt: skip
            _disable_ipv6(br)
            ports = [i.name for i in self.intfList() if i.name.startswith(br + "-eth")]
            for port in ports:
                _disable_ipv6(port)
                _frames_not_superpackets(port)
                run(["ip", "link", "set", "dev", port, "master", br, "up"])
            if self.vxlan is not None:
                stitch.set_mtu(ports, self.vxlan.mtu)
                stitch.attach(br, self.vxlan)
            run(["ip", "link", "set", "dev", br, "up"])
            if hub:
                self._start_medium(ports)

        def _start_medium(self, ports: list[str]) -> None:
            """One HTB on an IFB; every frame entering the hub from any port is redirected through it."""
            if not self.capacity_bps:
                raise ValueError(f"hub {self.name} needs a capacity")
            medium = Endpoint(self.ifb)
            impair.redirect_ingress([Endpoint(p) for p in ports], medium)
            capacity = Impairment(rate=format_rate(self.capacity_bps), limit=self.queue_frames)
            impair.Backend().shape(medium, capacity)  # HTB at the capacity, pfifo of queue_frames (topo.HUB_QUEUE_DOC)

        def stop(self, deleteIntfs: bool = True) -> None:  # noqa: N803
            run(["ip", "link", "del", self.ifb], check=False)
            run(["ip", "link", "del", self.name], check=False)
            node.Switch.stop(self, deleteIntfs)

    return ContainerHost, Bridge, link.Link, link.TCLink


# tx-udp-segmentation: a UDP GSO send (QUIC's) stays one packet to a device that has it, however many datagrams
OFFLOADS = ["tso", "gso", "gro", "lro", "tx-udp-segmentation"]
# ethtool -k's names for them
OFFLOAD_FEATURES = {"tcp-segmentation-offload": "tso", "generic-segmentation-offload": "gso",
                    "generic-receive-offload": "gro", "large-receive-offload": "lro",
                    "tx-udp-segmentation": "tx-udp-segmentation"}  # fmt: skip


def _frames_not_superpackets(intf: str, pid: int | None = None) -> None:
    """Segmentation offloads off: every frame is counted, shaped and queued as one frame, as on a wire. Not
    checked here (a driver may refuse one); Lab.offloads() reads back what is in force, for the manifest. `pid`: a
    node's interface, in that process's network namespace."""
    args = []
    for o in OFFLOADS:
        args += [o, "off"]
    run(in_netns(["ethtool", "-K", intf, *args], pid=pid), check=False)


def parse_offloads(text: str) -> dict[str, str]:
    """`ethtool -k` output -> each of OFFLOADS -> its state as ethtool prints it ('off', 'on', 'off [fixed]')."""
    out = {}
    for line in text.splitlines():
        name, sep, state = line.strip().partition(":")
        if sep and name in OFFLOAD_FEATURES:
            out[OFFLOAD_FEATURES[name]] = state.strip()
    return out


def counters_of(ends: list[tuple[str, Endpoint]]) -> dict[str, dict[str, int]]:
    """Link ends' counters now (/proc/net/dev read in each end's namespace, once per namespace): 'node:interface'
    -> rx_bytes, rx_packets, tx_bytes, tx_packets."""
    tables: dict[int | None, dict[str, dict[str, int]]] = {}
    out = {}
    for node, end in ends:
        if end.pid not in tables:
            tables[end.pid] = parse_proc_net_dev(run(end.cmd("cat", "/proc/net/dev"), timeout=10))
        if end.intf in tables[end.pid]:
            out[f"{node}:{end.intf}"] = tables[end.pid][end.intf]
    return out


def read_offloads(end: Endpoint) -> dict[str, str]:
    """One interface's segmentation offloads read back with `ethtool -k` in its namespace ({'error': why} if not)."""
    try:
        found = parse_offloads(run(end.cmd("ethtool", "-k", end.intf), timeout=10))
    except CommandError as exc:
        return {"error": str(exc)}
    return found or {"error": f"ethtool -k {end.intf}: none of {', '.join(OFFLOAD_FEATURES)} listed"}


def _disable_ipv6(intf: str, netns_pid: int | None = None) -> None:
    """Keep the data plane quiet: no IPv6 router solicitations or MLD reports on lab links."""
    cmd = ["sysctl", "-qw", f"net.ipv6.conf.{intf}.disable_ipv6=1"]
    if netns_pid:
        cmd = ["nsenter", "-t", str(netns_pid), "-n", *cmd]
    run(cmd, check=False)


def _node_sysctls(forwarding: bool, ipv6: bool) -> dict[str, str]:
    """A node's IP settings (recorded with the lab in manifest.json). With IPv6 on, addresses are static (no DAD,
    RAs or solicitations: the data plane carries only what workloads send, and MLD when groups are joined); off,
    IPv6 is disabled outright."""
    fwd = "1" if forwarding else "0"
    # many short connections (SPIMS connect_disconnect: 20 runs of 1000) would run out of ephemeral ports held
    # in TIME_WAIT: the whole range, and reuse of a TIME_WAIT port for a new outgoing connection after 1 s
    out = {"net.ipv4.ip_forward": fwd, "net.ipv4.ip_local_port_range": "1024 65535", "net.ipv4.tcp_tw_reuse": "1"}
    for scope in ("all", "default"):
        out[f"net.ipv6.conf.{scope}.disable_ipv6"] = "0" if ipv6 else "1"
        if ipv6:
            for key, value in (("accept_dad", "0"), ("accept_ra", "0"), ("router_solicitations", "0"),
                               ("forwarding", fwd)):  # fmt: skip
                out[f"net.ipv6.conf.{scope}.{key}"] = value
    return out


@dataclass
class NodeRuntime:
    name: str
    role: str
    image: str
    container: Any = None
    pid: int = 0
    mgmt_ip: str = ""


@dataclass
class Lab:
    """Deploy a Topology as containers + Mininet, and always tear it down (use as a context manager)."""

    topology: Topology
    run_id: str
    images: dict[str, str]  # node -> image
    cpus: dict[str, float | None] = field(default_factory=dict)
    commands: dict[str, list[str] | None] = field(default_factory=dict)
    limits: dict[str, dict[str, int | None]] = field(default_factory=dict)  # node -> {memory, pids} (None: default)
    client: Any = None
    nodes: dict[str, NodeRuntime] = field(default_factory=dict)
    net: Any = None
    actions: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    owned: dict[str, bool] = field(default_factory=dict)  # shared things this lab created and so removes
    impairments: list[LinkImpairment] = field(default_factory=list)  # from the spec, beyond the link rates
    ledger: Ledger | None = None  # what this lab makes is recorded here before it is made (ownership)
    teardown_failures: list[str] = field(default_factory=list)  # objects teardown could not remove, one line each
    backend: impair.Backend | None = None  # None: probe and choose at deploy ('auto')
    backend_probe: dict[str, tuple[bool, str]] = field(default_factory=dict)
    link_ends: dict[tuple[str, str], tuple[Endpoint, Endpoint]] = field(default_factory=dict)
    links: LinkState | None = None  # each link's impairments and cable, once deployed
    receive_cpu: rxcpu.ReceiveCpu = field(init=False)  # whose cgroup kernel receive work is charged to
    nic_filter: nicfilter.NicFilter | None = None  # the NIC receive filters' model, once deployed
    nic_filters: dict[str, str] = field(default_factory=dict)  # 'node:interface' -> mode (bridge ports only)
    containers: dict[str, dict[str, Any]] = field(default_factory=dict)  # node -> its privileges and limits

    def __post_init__(self) -> None:
        self.receive_cpu = rxcpu.ReceiveCpu(self.topology.receive_cpu)
        self.client = self.client or docker.from_env()
        self.ledger = self.ledger or Ledger(self.run_id, "lab")
        self._locked = False

    # -- lifecycle -------------------------------------------------------------------------------
    def __enter__(self) -> Lab:
        try:
            self.deploy()
        except BaseException:
            self.teardown()
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        self.teardown()

    def deploy(self) -> None:
        t0 = time.monotonic()
        assert self.ledger is not None
        ownership.LOCK.acquire("deploy", self.run_id, hint="`protolab clean --force` removes its lab under it")
        self._locked = True
        if not any(e["kind"] == "run" for e in self.ledger.entries()):
            ownership.begin_run(self.run_id, None)  # a lab outside `protolab run` (tests, tools): owned alike
        impair.set_ledger(self.ledger)
        removed, failures = ownership.sweep_dead()  # leftovers of killed runs, exactly as their ledgers say
        if removed:
            self.actions.append(f"removed what killed runs left: {', '.join(removed)}")
        if failures:
            raise ProtolabError("cannot remove what an earlier run left: " + "; ".join(failures))
        self._refuse_untyped()
        self._refuse_foreign()
        self.actions += firewall.ensure_bridged_forwarding(self.ledger)
        self.actions += firewall.untrack_bridged(f"{self.run_id}_{self.ledger.scope}", self.ledger)
        engine.ensure_mgmt_network(self.client, ledger=self.ledger)
        self._start_containers()
        t1 = time.monotonic()
        self._build_network()
        self._configure_hosts()
        self._charge_receive_work()
        self._filter_nics()
        self._resolve_neighbors()
        self._impair()
        self.timings = {"containers_seconds": t1 - t0, "network_seconds": time.monotonic() - t1}

    def teardown(self) -> None:
        """Remove everything this lab made, each object on its own (best effort): Mininet's stop, the link
        emulators, then whatever the ledger still lists. What could not be removed is in teardown_failures
        (and stays in the ledger for `protolab clean`); this never raises."""
        t0 = time.monotonic()
        assert self.ledger is not None
        self.teardown_failures += self.receive_cpu.detach()  # before the containers' cgroups go
        if self.nic_filter is not None:
            try:
                self.nic_filter.stop()  # its attachments go with it
            except RuntimeError as exc:
                self.teardown_failures.append(f"NIC filter: {exc}")
            self.nic_filter = None
        if self.net is not None:
            try:
                self.net.stop()
            except Exception as exc:  # the ledger sweep below removes what Mininet left
                log.warning("mininet stop: %s", exc)
            self.net = None
        try:
            impair.Linkem.stop_all()
        except Exception as exc:
            self.teardown_failures.append(f"stopping the link emulators: {exc}")
        self._remove_containers()
        self.teardown_failures += self.ledger.sweep(self.ledger.scope, ownership.Context(self.client))
        self.link_ends.clear()
        self.nodes.clear()
        if self._locked:
            self._locked = False
            impair.set_ledger(None)
            ownership.LOCK.release()
        self.timings["teardown_seconds"] = time.monotonic() - t0

    def _remove_containers(self) -> None:
        """The lab's containers, in parallel and without corrupting the engine: first each one disconnected from
        the management network, one after the other (Docker's endpoint bookkeeping races when containers on one
        network are removed in parallel and can then count endpoints nobody has; see engine.remove_network),
        then all removed in parallel. The ledger sweep that follows closes their entries (it finds them gone) and
        removes any that a failure here left."""
        nodes = [n for n in self.nodes.values() if n.container is not None]
        if not nodes:
            return
        try:
            net = self.client.networks.get(naming.MGMT_NETWORK)
        except docker.errors.DockerException:
            net = None
        if net is not None:
            for n in nodes:
                with contextlib.suppress(docker.errors.DockerException):
                    net.disconnect(n.container.id, force=True)

        def remove(n: NodeRuntime) -> None:
            with contextlib.suppress(docker.errors.DockerException):
                n.container.remove(force=True)

        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(remove, nodes))

    # -- steps -----------------------------------------------------------------------------------
    def _refuse_untyped(self) -> None:
        """Stop before making anything when a name or address is not of its type (Topology.type_problems): Mininet
        still configures link interfaces through a node's shell (`ifconfig <intf> <address>`)."""
        if problems := self.topology.type_problems():
            raise LabError(f"topology {self.topology.kind}: cannot deploy\n  " + "\n  ".join(problems))

    def _in_node(self, node: str, cmd: list[str], check: bool = True) -> str:
        """`cmd` (an argv list, never a shell line) run in the node's network namespace from outside its
        container (whose /proc/sys is read-only); its output. A failure raises LabError naming the node."""
        try:
            return run(in_netns(cmd, pid=self.nodes[node].pid), check=check, timeout=30)
        except CommandError as exc:
            raise LabError(f"{node}: {exc}") from None

    def _refuse_foreign(self) -> None:
        """Stop before making anything when a name this lab needs is taken by something protolab did not make
        (killed runs' leftovers were swept already, exactly as their ledgers say)."""
        taken = []
        for h in self.topology.hosts:
            try:
                c = self.client.containers.get(naming.container_name(h.name))
                taken.append(f"container {c.name} (labels {c.labels or 'none'})")
            except docker.errors.NotFound:
                pass
        for sw in self.topology.switches:
            taken += [f"link {n}" for n in engine.links_with_prefix(naming.bridge_name(sw.name))]
        if taken:
            raise ProtolabError(
                f"cannot deploy: {', '.join(taken)} exist(s) and no dead run's ledger lists them (another tool's, "
                "or a lab kept with --keep: `protolab clean` removes a kept lab; anything else, remove or rename it)"
            )

    def _start_containers(self) -> None:
        def start(host) -> NodeRuntime:
            image = self.images[host.name]
            name = naming.container_name(host.name)
            assert self.ledger is not None
            entry = self.ledger.add("container", name=name)
            kwargs: dict[str, Any] = dict(
                name=name, hostname=host.name, detach=True, init=True, network=naming.MGMT_NETWORK,
                **container_privileges(self.limits.get(host.name) or {}),
                labels={naming.LABEL: "true", naming.RUN_LABEL: self.run_id, naming.NODE_LABEL: host.name,
                        naming.ROLE_LABEL: host.role},
                sysctls=_node_sysctls(host.forwarding, self.topology.ipv6),
            )  # fmt: skip
            cpus = self.cpus.get(host.name)
            if cpus:
                kwargs["nano_cpus"] = int(cpus * 1e9)
            if self.commands.get(host.name):
                kwargs["command"] = self.commands[host.name]
            try:
                c = self.client.containers.run(image, **kwargs)
            except docker.errors.ImageNotFound:
                self.ledger.gone(entry)
                raise LabError(f"{host.name}: image {image} not found; run `make images`") from None
            c.reload()
            self.containers[host.name] = granted(c.attrs["HostConfig"])
            ip = c.attrs["NetworkSettings"]["Networks"][naming.MGMT_NETWORK]["IPAddress"]
            return NodeRuntime(host.name, host.role, image, c, c.attrs["State"]["Pid"], ip)

        with ThreadPoolExecutor(max_workers=8) as pool:
            futures = [pool.submit(start, h) for h in self.topology.hosts]
            errors = []
            for f in futures:
                try:
                    n = f.result()
                    self.nodes[n.name] = n
                except Exception as exc:
                    errors.append(str(exc))
        if errors:
            raise LabError("starting containers failed: " + "; ".join(errors))

    def _build_network(self) -> None:
        _link, net_mod, _node, _nodelib = _mininet()
        container_host, bridge, plain_link, _tc_link = node_classes()
        net = net_mod.Mininet(topo=None, build=False, controller=None, autoSetMacs=False, waitConnected=False)
        self.net = net
        for h in self.topology.hosts:
            net.addHost(h.name, cls=container_host, container_pid=self.nodes[h.name].pid, run_id=self.run_id, ip=None)
        names = {h.name: h.name for h in self.topology.hosts}
        assert self.ledger is not None
        for i, sw in enumerate(self.topology.switches, start=1):
            names[sw.name] = naming.bridge_name(sw.name)
            self.ledger.link(names[sw.name])
            if sw.mode == "hub":
                self.ledger.link(names[sw.name] + "-ifb")
            if sw.vxlan is not None:
                self.ledger.link(stitch.vxlan_name(sw.vxlan.vni))
            net.addSwitch(
                names[sw.name],
                cls=bridge,
                run_id=self.run_id,
                mode=sw.mode,
                capacity_bps=sw.capacity_bps,
                multicast_snooping=sw.multicast_snooping,
                queue_frames=sw.queue_frames,
                vxlan=sw.vxlan,
                dpid=f"{i:016x}",
            )  # fmt: skip (dpid: any name)
        for lk in self.topology.links:
            params: dict[str, Any] = {}
            if lk.ip1:
                params["params1"] = {"ip": lk.ip1}
            if lk.ip2:
                params["params2"] = {"ip": lk.ip2}
            for n in (names[lk.node1], names[lk.node2]):  # both ends are made in the root namespace first
                self.ledger.link(f"{n}-eth{net.get(n).newPort()}")
            link = net.addLink(names[lk.node1], names[lk.node2], cls=plain_link, **params)
            ends = tuple(Endpoint(i.name, self.nodes[n].pid if n in self.nodes else None)
                         for n, i in ((lk.node1, link.intf1), (lk.node2, link.intf2)))  # fmt: skip
            self.link_ends[(lk.node1, lk.node2)] = ends  # type: ignore[assignment]
        net.build()
        net.start()
        self._stitch_mtus()
        self.ledger.confirm_links()
        for node in [*net.hosts, *net.switches]:
            if node.shell is not None:
                self.ledger.process(node.shell.pid)

    def _stitch_mtus(self) -> None:
        """A node's interface on a link stitched to another host gets the tunnel's MTU (its bridge port got it
        when the bridge started), so that a larger frame is refused at the sender, not lost in the tunnel."""
        stitched = {sw.name: sw.vxlan for sw in self.topology.switches if sw.vxlan is not None}
        for lk in self.topology.links:
            for end, (node, other) in enumerate(((lk.node1, lk.node2), (lk.node2, lk.node1))):
                if other in stitched and node in self.nodes:
                    intf = self.link_ends[(lk.node1, lk.node2)][end].intf
                    stitch.set_mtu([intf], stitched[other].mtu, ns=None, pid=self.nodes[node].pid)

    def _impair(self) -> None:
        """Shape every link's rate and apply the spec's impairments (validated by the spec) per direction."""
        wanted = wanted_settings(self.topology, self.impairments)
        if self.backend is None:
            self.backend, self.backend_probe = impair.choose("auto")
        self.links = LinkState(self.link_ends, self.backend, self.ledger)
        self.links.configure(wanted)

    # read-only views of the link state (protolab.lab.linkstate owns it)
    @property
    def configured(self) -> dict[tuple[str, str], tuple[Impairment, str]]:
        return self.links.configured if self.links else {}

    @property
    def current(self) -> dict[tuple[str, str], tuple[Impairment, str]]:
        return self.links.current if self.links else {}

    @property
    def applied(self) -> list[dict[str, Any]]:
        return self.links.applied if self.links else []

    @property
    def shaped_interfaces(self) -> set[str]:
        return self.links.shaped_interfaces if self.links else set()

    def unshaped(self) -> dict[int | None, set[str]]:
        """The data interfaces no shaper of this lab is on, by the network namespace they are in (a node's pid;
        None: this machine's, the bridges' ends): where the guard reads queue drops."""
        out: dict[int | None, set[str]] = {}
        for name in self.net.keys() if self.net else []:
            intfs = {i for i in self.data_interfaces(name) if i not in self.shaped_interfaces}
            pid = self.nodes[name].pid if name in self.nodes else None
            if intfs:
                out.setdefault(pid, set()).update(intfs)
        return out

    def _configure_hosts(self) -> None:
        """Each node's offloads, extra interfaces, IPv6 twins and routes, by argv commands in its namespace (no
        value of the topology passes through a shell), then read back."""
        t = self.topology
        v6: dict[str, list[tuple[str, str]]] = {h.name: [] for h in t.hosts}  # node -> (address/len, interface)
        if t.ipv6:
            for lk in t.links:
                for end, (n, ip) in enumerate(((lk.node1, lk.ip1), (lk.node2, lk.ip2))):
                    if ip and n in v6:
                        v6[n].append((topo.v6_address(ip), self.link_ends[(lk.node1, lk.node2)][end].intf))
        for h in t.hosts:
            pid = self.nodes[h.name].pid
            data = self.data_interfaces(h.name)
            for intf in data:
                _frames_not_superpackets(intf, pid)
            self._add_interfaces(h)
            v6[h.name] += [(topo.v6_address(x.address), x.name) for x in h.interfaces if x.address and t.ipv6]
            for family in ("-4", "-6"):  # never via the management network
                self._in_node(h.name, ["ip", family, "route", "del", "default"], check=False)
            cmds = [["ip", "-4", "route", "replace", dst, "via", gw] for dst, gw in h.routes]
            if data:
                cmds.append(["ip", "-4", "route", "replace", MULTICAST_PREFIX, "dev", data[0]])
            routes6 = t.routes6(h) if t.ipv6 else []
            cmds += [["ip", "-6", "addr", "add", addr, "dev", intf, "nodad"] for addr, intf in v6[h.name]]
            cmds += [["ip", "-6", "route", "replace", dst, "via", gw] for dst, gw in routes6]
            for c in cmds:
                self._in_node(h.name, c)
            for family, wanted in (("-4", h.routes), ("-6", routes6)):
                out = self._in_node(h.name, ["ip", family, "route", "show"]) if wanted else ""
                present = _route_destinations(out)
                for dst, _gw in wanted:
                    if ipaddress.ip_network(dst, strict=False) not in present:
                        raise LabError(f"{h.name}: route to {dst} missing after configuration:\n{out}")
            if v6[h.name]:
                out = self._in_node(h.name, ["ip", "-6", "addr", "show", "scope", "global"])
                for addr, _intf in v6[h.name]:
                    if addr.split("/")[0] not in out:
                        raise LabError(f"{h.name}: address {addr} missing after configuration:\n{out}")

    def _charge_receive_work(self) -> None:
        """Each node's kernel receive work charged to the node's own cgroup (protolab.lab.rxcpu; mode `node`)."""
        if self.receive_cpu.mode != "node":
            self.actions.append("receive work charged in context (topology receive_cpu: in_context)")
            return
        for h in self.topology.hosts:
            data = [i.name for i in self.net.get(h.name).intfList() if i.name != "lo"]
            try:
                self.receive_cpu.attach(h.name, self.nodes[h.name].pid, data)
            except (RuntimeError, OSError, ValueError) as exc:
                raise LabError(f"charging receive work to its node: {exc}") from None

    def _filter_nics(self) -> None:
        """Each host's NIC receive filter (topo.Host.nic_filter) at the bridge port toward it: one
        protolab-nicfilter process for the lab, unless every node's is promiscuous (nothing to model)."""
        bridges = {sw.name for sw in self.topology.switches}
        hosts = {h.name: h for h in self.topology.hosts}
        wanted = []
        for (a, b), ends in self.link_ends.items():
            for (node, end), (other, port) in (((a, ends[0]), (b, ends[1])), ((b, ends[1]), (a, ends[0]))):
                if node in hosts and other in bridges:
                    wanted.append(nicfilter.FilteredInterface(port.intf, self.nodes[node].pid, end.intf,
                                                              hosts[node].nic_filter))  # fmt: skip
                    self.nic_filters[f"{node}:{end.intf}"] = hosts[node].nic_filter
        if not wanted or all(w.mode == "promiscuous" for w in wanted):
            return
        assert self.ledger is not None
        try:
            self.nic_filter = nicfilter.NicFilter("lab", wanted, run_id=self.run_id)
        except (RuntimeError, ValueError) as exc:
            raise LabError(f"NIC filters: {exc}") from None
        self.ledger.process(self.nic_filter.proc.pid)

    def sync_nic_filters(self) -> dict[str, list[str]]:
        """Bring the NIC filters' model up to the hosts' joins now (a runner calls it once its receivers have
        joined, before their traffic starts): 'node:interface' -> its joined link-layer groups ({} if no model)."""
        if self.nic_filter is None:
            return {}
        try:
            by_port = self.nic_filter.refresh()
        except RuntimeError as exc:
            raise LabError(f"NIC filters: {exc}") from None
        return {k: h["joined"] for k, h in self._by_host_interface(by_port).items()}

    def nic_filter_counters(self) -> dict[str, dict[str, int]]:
        """'node:interface' -> frames the NIC filter passed and dropped (unicast, multicast) so far ({} if none)."""
        if self.nic_filter is None:
            return {}
        return {k: {v: int(h["counters"][v]["packets"]) for v in nicfilter.VERDICTS}
                for k, h in self._by_host_interface(self.nic_filter.stats()).items()}  # fmt: skip

    def _by_host_interface(self, by_port: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        """The NIC filter's per-port answers keyed 'node:interface' (the host's end of the port's link)."""
        out = {}
        for (a, b), ends in self.link_ends.items():
            for node, end, port in ((a, ends[0], ends[1]), (b, ends[1], ends[0])):
                if port.intf in by_port:
                    out[f"{node}:{end.intf}"] = by_port[port.intf]
        return out

    def _add_interfaces(self, h: topo.Host) -> None:
        """A node's extra interfaces, made inside its network namespace (so they go with the container): dummy
        interfaces, or an IFB in their place where the kernel has no dummy driver (it also holds addresses and
        sends nothing on)."""
        for x in h.interfaces:
            try:
                self._in_node(h.name, ["ip", "link", "add", "name", x.name, "type", "dummy"])
            except LabError as no_dummy:
                try:
                    self._in_node(h.name, ["ip", "link", "add", "name", x.name, "type", "ifb"])
                except LabError as exc:
                    raise LabError(f"{h.name}: cannot make interface {x.name}: {no_dummy}; {exc}") from None
                self.actions.append(f"{h.name}: {x.name} is an IFB (this kernel has no dummy interfaces)")
            self._in_node(h.name, ["ip", "link", "set", "dev", x.name, "up"])
            if x.address:
                self._in_node(h.name, ["ip", "addr", "add", x.address, "dev", x.name])
            out = self._in_node(h.name, ["ip", "-o", "-4", "addr", "show", "dev", x.name])
            if x.address and f" {x.address} " not in out:
                raise LabError(f"{h.name}: address {x.address} missing on {x.name} after configuration:\n{out}")

    def _resolve_neighbors(self) -> None:
        """Before any impairment, each node pings once (IPv4 and IPv6) the neighbors it would reach across a link
        the spec impairs: its subnets' peers when its own link there is impaired, and any peer whose link is. The
        ARP and neighbor caches then hold them as on a network already running. Otherwise the first packet of a
        workload waits for resolution across the impaired link, and a lost neighbor solicitation holds it (and all
        queued behind it) for the kernel's 1 s retransmit (seen: an IPv6 echo averaging 96 ms over a 10 ms link).
        Entries only go stale afterwards, and a stale entry still sends at once. Only impaired links: resolving
        every pair of a large LAN is O(N^2) pings and overflows the kernel's neighbor table, which all namespaces
        share (IPv6 gc_thresh3 is 1024: a 64-host LAN would need 4032 entries per family)."""
        t = self.topology
        impaired = {frozenset(item.link) for item in self.impairments}
        ends = [
            (n, ipaddress.ip_interface(ip), frozenset((lk.node1, lk.node2)) in impaired)
            for lk in t.links
            for n, ip in ((lk.node1, lk.ip1), (lk.node2, lk.ip2))
            if ip and n in self.net
        ]
        for h in t.hosts:
            if h.name not in self.net:
                continue
            mine = {i.network: hot for n, i, hot in ends if n == h.name}  # subnet -> my link there is impaired
            peers = sorted({i for n, i, hot in ends if n != h.name and i.network in mine and (hot or mine[i.network])})
            targets = [("-4", str(i.ip)) for i in peers]
            if t.ipv6:
                targets += [("-6", str(ipaddress.ip_interface(topo.v6_address(str(i))).ip)) for i in peers]
            pid = self.nodes[h.name].pid
            quiet: dict[str, Any] = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
            pings = [subprocess.Popen(in_netns(["ping", f, "-c", "1", "-W", "1", "-q", a], pid=pid), **quiet)
                     for f, a in targets]  # fmt: skip
            for p in pings:  # an answer or not: only the caches matter (ping -W 1 gives up after a second)
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()

    def offloads(self) -> dict[str, dict[str, str]]:
        """Every lab link end's segmentation offloads as the kernel has them now (`ethtool -k` read back, not what
        was asked): 'node:interface' -> each of OFFLOADS -> 'off', 'on', 'off [fixed]' ... (for the manifest)."""
        return {f"{node}:{end.intf}": read_offloads(end) for node, end in self._ends()}

    def emulator_drops(self) -> dict[str, dict[str, int]]:
        """This process's link emulators' losses by cause (impair.parse_drops): what the self-check sets beside
        the requests it saw go unanswered."""
        return impair.linkem_drops(self.linkem_sockets())

    def linkem_sockets(self) -> list[tuple[str, Path]]:
        """The control sockets of this lab's link emulators (this process runs them): (name, socket)."""
        return [(lk.name, lk.control) for lk in list(impair.Linkem._running.values())]

    def remote_held(self) -> dict[str, tuple[int, str]]:
        """What link emulators on hosts reached over SSH hold: none, the whole lab runs here."""
        return {}

    def keepers_helpers_down(self, since: float) -> list[str]:
        """What keepers' watches saw of their helpers: no keepers, this process watches its own (helperproc)."""
        return []

    def ends_here(self) -> list[tuple[str, Endpoint]]:
        """Every link end in a namespace on this machine: all of them."""
        return self._ends()

    def namespace_host(self, pid: int | None) -> str | None:
        """The testbed host whose keeper's namespace `pid` is: none here (one machine, its root namespace)."""
        return None

    def interface_counters(self) -> dict[str, dict[str, int]]:
        """Every lab link end's counters now: 'node:interface' -> rx_bytes, rx_packets, tx_bytes, tx_packets."""
        return counters_of(self._ends())

    def _ends(self) -> list[tuple[str, Endpoint]]:
        return [(n, e) for (a, b), ends in self.link_ends.items() for n, e in zip((a, b), ends, strict=True)]

    def node_sysctls(self) -> dict[str, dict[str, str]]:
        """Each node's kernel settings as its container was started with them (for the manifest)."""
        return {h.name: _node_sysctls(h.forwarding, self.topology.ipv6) for h in self.topology.hosts}

    # -- use -------------------------------------------------------------------------------------
    def data_interfaces(self, node: str) -> list[str]:
        """A node's (or a bridge's) data interfaces in link order, as named in its namespace."""
        return [i.name for i in self.net.get(node).intfList() if i.name != "lo"]

    def node_shell(self, node: str, script: str) -> str:
        """A root shell command in the node's network namespace (outside its container, whose /proc/sys is
        read-only), its output."""
        return self.net.get(node).cmd(script)

    def ip(self, node: str, intf: int = 0, family: int = 4) -> str:
        """A node's address on its intf-th data interface: IPv4, or (family 6) its IPv6 twin."""
        i = self.net.get(node).intfList()[intf]
        if family == 4:
            return i.IP()
        if not self.topology.ipv6:
            raise LabError(f"{node}: this lab has no IPv6 (its topology says ipv6: false)")
        return str(ipaddress.ip_interface(topo.v6_address(f"{i.IP()}/{i.prefixLen}")).ip)

    def exec(self, node: str, cmd: list[str], timeout: float | None = None) -> tuple[int, str, str]:
        """Run a command inside the node's container (its filesystem and cgroup); wait for it, at most
        `timeout` seconds: past that the command is killed and ExecTimeoutError raised."""
        return exec_in(self.nodes[node].container, cmd, timeout, where=node)

    # one machine: its run's Prometheus scrapes the nodes itself, no process outside a container serves them, and
    # every one-way delay is on one clock (lab.testbed.TestbedLab answers these over several hosts)
    def clear_targets(self) -> None:
        """Nothing: the run's own targets file is the lab's (monitor.write_targets)."""

    def service_pids(self) -> list[int]:
        return []

    def cgroup_pids(self) -> list[int]:
        return []

    def clock_note(self, _sender: str, _receiver: str) -> dict[str, Any] | None:
        return None

    def host_guards(self) -> dict[str, dict[str, Any]]:
        return {}

    def targets(self, extra_ports: dict[str, list[int]] | None = None) -> list[dict[str, Any]]:
        """Prometheus file_sd targets for this lab's agents, plus `extra_ports` per node (workload processes
        with their own /metrics, e.g. a DIS host while its task runs; node "*": every node), with the node's
        labels. Known before the deploy (the containers' names and roles are the topology's), so a run can
        announce them while the lab comes up."""
        extra = extra_ports or {}
        name = naming.container_name

        def ports(node: str) -> list[int]:
            return sorted({*extra.get(node, []), *extra.get("*", [])})

        return [
            {
                "targets": [f"{name(n.name)}:{p}" for p in [naming.AGENT_PORT, *ports(n.name)]],
                "labels": {"node": n.name, "role": n.role, "run": self.run_id},
            }
            for n in self.topology.hosts
        ]


def exec_in(container: Any, cmd: list[str], timeout: float | None, where: str = "") -> tuple[int, str, str]:
    """`docker exec` through the engine's API with a deadline: on timeout the process is killed by its host PID
    (what `docker exec` started keeps running when only the client gives up)."""
    api = container.client.api
    exec_id = api.exec_create(container.id, cmd)["Id"]
    box: dict[str, Any] = {}

    def start() -> None:
        try:
            box["out"] = api.exec_start(exec_id, demux=True)
        except Exception as exc:
            box["error"] = exc

    th = threading.Thread(target=start, daemon=True)
    th.start()
    th.join(timeout)
    if th.is_alive():
        pid = api.exec_inspect(exec_id).get("Pid") or 0
        if pid > 0:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        th.join(5)
        raise ExecTimeoutError(f"{where}: `{' '.join(cmd)}` still running after {timeout:g}s; killed it")
    if "error" in box:
        raise box["error"]
    out, err = box.get("out") or (b"", b"")
    code = api.exec_inspect(exec_id).get("ExitCode")
    return (
        (code if code is not None else -1),
        (out or b"").decode(errors="replace"),
        (err or b"").decode(errors="replace"),
    )


__all__ = ["Lab", "CommandError", "node_classes"]


def _route_destinations(out: str) -> set:
    """The destinations `ip route show` lists, as networks (a host route prints without its /32 or /128)."""
    found = set()
    for line in out.splitlines():
        first = line.split(maxsplit=1)[0] if line.strip() else ""
        try:
            found.add(ipaddress.ip_network(first, strict=False))
        except ValueError:
            continue  # default, unreachable, multicast keywords
    return found
