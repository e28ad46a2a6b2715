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

import logging
import os
import pty
import select
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import docker
import docker.errors

from . import firewall, impair, naming
from .impair import Endpoint, Impairment, LinkImpairment
from .shell import CommandError, run
from .topo import Topology
from .units import format_rate

log = logging.getLogger(__name__)

CAPABILITIES = ["NET_ADMIN", "NET_RAW", "SYS_NICE"]
HUB_QUEUE_PACKETS = 100
MULTICAST_PREFIX = "224.0.0.0/4"


def _mininet():
    """Import Mininet lazily: it needs Debian's python3-mininet and is only needed to deploy."""
    try:
        from mininet import link, net, node, nodelib  # noqa: F401
    except ImportError as exc:
        raise RuntimeError(f"Mininet is not importable ({exc}); run `make setup`") from None
    return link, net, node, nodelib


def _shell_start(self: Any, prefix: list[str], new_session: bool) -> None:
    """Mininet's Node.startShell, with our own namespace-entering prefix and a marker for `clean`."""
    cmd = [*prefix, "env", "PS1=" + chr(127), f"{naming.PROCESS_ENV}={self.name}",
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
            raise RuntimeError(f"{self.name}: node shell did not start ({' '.join(cmd)}): {data!r}")
        self.pollOut.poll(100)
    self.waiting = False
    self.cmd("unset HISTFILE; stty -echo; set +m")


def node_classes():
    """The Mininet node classes, built on first use (Mininet imported lazily)."""
    link, _net, node, nodelib = _mininet()

    class ContainerHost(node.Host):
        """A Mininet host living in a running container's network namespace."""

        def __init__(self, name: str, container_pid: int, **params: Any) -> None:
            self.container_pid = container_pid
            super().__init__(name, inNamespace=True, **params)

        def startShell(self, mnopts: Any = None) -> None:  # noqa: N802 (Mininet's name)
            _shell_start(self, ["nsenter", "-t", str(self.container_pid), "-n"], new_session=True)

        def popen(self, *args: Any, **kwargs: Any) -> Any:
            kwargs.setdefault("mncmd", ["nsenter", "-t", str(self.container_pid), "-n"])
            return super().popen(*args, **kwargs)

    class Bridge(nodelib.LinuxBridge):
        """A Linux bridge in the root namespace: learning switch, or shared-capacity hub."""

        def __init__(self, name: str, mode: str = "switch", capacity_bps: float | None = None,
                     multicast_snooping: bool = False, **params: Any) -> None:  # fmt: skip
            self.mode, self.capacity_bps, self.multicast_snooping = mode, capacity_bps, multicast_snooping
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
            run(["ip", "link", "set", "dev", br, "up"])
            if hub:
                self._start_medium(ports)

        def _start_medium(self, ports: list[str]) -> None:
            """One HTB on an IFB; every frame entering the hub from any port is redirected through it."""
            if not self.capacity_bps:
                raise ValueError(f"hub {self.name} needs a capacity")
            medium = Endpoint(self.ifb)
            impair.redirect_ingress([Endpoint(p) for p in ports], medium)
            capacity = Impairment(rate=format_rate(self.capacity_bps), limit=HUB_QUEUE_PACKETS)
            impair.Backend().shape(medium, capacity)  # HTB at the capacity, pfifo of HUB_QUEUE_PACKETS

        def stop(self, deleteIntfs: bool = True) -> None:  # noqa: N803
            run(["ip", "link", "del", self.ifb], check=False)
            run(["ip", "link", "del", self.name], check=False)
            node.Switch.stop(self, deleteIntfs)

    return ContainerHost, Bridge, link.Link, link.TCLink


OFFLOADS = ["tso", "gso", "gro", "lro"]


def _frames_not_superpackets(intf: str, node: Any = None) -> None:
    """Segmentation offloads off: every frame is counted, shaped and queued as one frame, as on a wire."""
    args = []
    for o in OFFLOADS:
        args += [o, "off"]
    if node is not None:
        node.cmd("ethtool -K " + intf + " " + " ".join(args) + " 2>/dev/null")
    else:
        run(["ethtool", "-K", intf, *args], check=False)


def _disable_ipv6(intf: str, netns_pid: int | None = None) -> None:
    """Keep the data plane quiet: no IPv6 router solicitations or MLD reports on lab links."""
    cmd = ["sysctl", "-qw", f"net.ipv6.conf.{intf}.disable_ipv6=1"]
    if netns_pid:
        cmd = ["nsenter", "-t", str(netns_pid), "-n", *cmd]
    run(cmd, check=False)


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
    client: Any = None
    nodes: dict[str, NodeRuntime] = field(default_factory=dict)
    net: Any = None
    shaped_interfaces: set[str] = field(default_factory=set)
    actions: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    owned: dict[str, bool] = field(default_factory=dict)  # shared things this lab created and so removes
    impairments: list[LinkImpairment] = field(default_factory=list)  # from the spec, beyond the link rates
    backend: impair.Backend | None = None  # None: probe and choose at deploy ('auto')
    backend_probe: dict[str, tuple[bool, str]] = field(default_factory=dict)
    link_ends: dict[tuple[str, str], tuple[Endpoint, Endpoint]] = field(default_factory=dict)
    applied: list[dict[str, Any]] = field(default_factory=list)  # what each direction of each link got
    current: dict[tuple[str, str], tuple[Impairment, str]] = field(default_factory=dict)
    configured: dict[tuple[str, str], tuple[Impairment, str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.client = self.client or docker.from_env()

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
        fixed = firewall.ensure_bridged_forwarding()
        self.actions += fixed
        self.owned["firewall"] = bool(fixed)
        self.owned["network"] = ensure_mgmt_network(self.client, created=True)
        self._remove_stale()
        self._start_containers()
        t1 = time.monotonic()
        self._build_network()
        self._configure_hosts()
        self._impair()
        self.timings = {"containers_seconds": t1 - t0, "network_seconds": time.monotonic() - t1}

    def teardown(self) -> None:
        t0 = time.monotonic()
        if self.net is not None:
            try:
                self.net.stop()
            except Exception as exc:  # keep tearing down; `clean` removes what is left
                log.warning("mininet stop: %s", exc)
            self.net = None
        for sw in self.topology.switches:
            run(["ip", "link", "del", naming.bridge_name(sw.name) + "-ifb"], check=False)
            run(["ip", "link", "del", naming.bridge_name(sw.name)], check=False)
        impair.Linkem.stop_all()
        for ends in self.link_ends.values():  # IFBs taking a bridge port's ingress, in the root namespace
            for ep in ends:
                if ep.pid is None:
                    run(["ip", "link", "del", impair.ifb_for(ep).intf], check=False)
        if self.applied:
            firewall.remove_rules(naming.IMPAIR_COMMENT)
        self.link_ends.clear()
        remove_containers(self.client, [naming.container_name(n) for n in self.nodes])
        self.nodes.clear()
        if self.owned.pop("firewall", False):
            firewall.remove_rules()
        if self.owned.pop("network", False):
            try:
                self.client.networks.get(naming.MGMT_NETWORK).remove()
            except docker.errors.APIError as exc:
                log.warning("removing %s: %s", naming.MGMT_NETWORK, exc)
        self.timings["teardown_seconds"] = time.monotonic() - t0

    # -- steps -----------------------------------------------------------------------------------
    def _remove_stale(self) -> None:
        """A deploy over a previous run's leftovers succeeds: same-named containers and links go first."""
        from .cleanup import kill, marked_processes

        names = {h.name for h in self.topology.hosts} | {naming.bridge_name(s.name) for s in self.topology.switches}
        shells = marked_processes(names)
        kill(shells)
        stale = remove_containers(self.client, [naming.container_name(h.name) for h in self.topology.hosts])
        if stale or shells:
            self.actions.append(f"removed stale containers {stale} and {len(shells)} node shell(s) of an earlier run")
        for sw in self.topology.switches:
            br = naming.bridge_name(sw.name)
            for name in _links_with_prefix(br):
                run(["ip", "link", "del", name], check=False)

    def _start_containers(self) -> None:
        def start(host) -> NodeRuntime:
            image = self.images[host.name]
            name = naming.container_name(host.name)
            kwargs: dict[str, Any] = dict(
                name=name, hostname=host.name, detach=True, init=True, network=naming.MGMT_NETWORK,
                cap_add=CAPABILITIES,
                labels={naming.LABEL: "true", naming.RUN_LABEL: self.run_id, naming.NODE_LABEL: host.name,
                        naming.ROLE_LABEL: host.role},
                sysctls={"net.ipv6.conf.all.disable_ipv6": "1", "net.ipv6.conf.default.disable_ipv6": "1",
                         "net.ipv4.ip_forward": "1" if host.forwarding else "0"},
            )  # fmt: skip
            cpus = self.cpus.get(host.name)
            if cpus:
                kwargs["nano_cpus"] = int(cpus * 1e9)
            if self.commands.get(host.name):
                kwargs["command"] = self.commands[host.name]
            try:
                c = self.client.containers.run(image, **kwargs)
            except docker.errors.ImageNotFound:
                raise RuntimeError(f"{host.name}: image {image} not found; run `make images`") from None
            c.reload()
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
            raise RuntimeError("starting containers failed: " + "; ".join(errors))

    def _build_network(self) -> None:
        _link, net_mod, _node, _nodelib = _mininet()
        container_host, bridge, plain_link, _tc_link = node_classes()
        net = net_mod.Mininet(topo=None, build=False, controller=None, autoSetMacs=False, waitConnected=False)
        self.net = net
        for h in self.topology.hosts:
            net.addHost(h.name, cls=container_host, container_pid=self.nodes[h.name].pid, ip=None)
        names = {h.name: h.name for h in self.topology.hosts}
        for sw in self.topology.switches:
            names[sw.name] = naming.bridge_name(sw.name)
            net.addSwitch(names[sw.name], cls=bridge, mode=sw.mode, capacity_bps=sw.capacity_bps,
                          multicast_snooping=sw.multicast_snooping)  # fmt: skip
        for lk in self.topology.links:
            params: dict[str, Any] = {}
            if lk.ip1:
                params["params1"] = {"ip": lk.ip1}
            if lk.ip2:
                params["params2"] = {"ip": lk.ip2}
            link = net.addLink(names[lk.node1], names[lk.node2], cls=plain_link, **params)
            ends = tuple(Endpoint(i.name, self.nodes[n].pid if n in self.nodes else None)
                         for n, i in ((lk.node1, link.intf1), (lk.node2, link.intf2)))  # fmt: skip
            self.link_ends[(lk.node1, lk.node2)] = ends  # type: ignore[assignment]
        net.build()
        net.start()

    def _impair(self) -> None:
        """Shape every link's rate and apply the spec's impairments, per direction, with one backend."""
        wanted: dict[tuple[str, str], tuple[Impairment, str]] = {}
        for lk in self.topology.links:
            if lk.rate_bps:
                base = Impairment(rate=format_rate(lk.rate_bps))
                wanted[(lk.node1, lk.node2)] = (base, "sender")
                wanted[(lk.node2, lk.node1)] = (base, "sender")
        pairs = set(self.link_ends) | {(b, a) for a, b in self.link_ends}
        hubs = {sw.name for sw in self.topology.switches if sw.mode == "hub"}
        for item in self.impairments:
            if why := item.hub_conflict(hubs):
                raise ValueError(f"impairment on {list(item.link)}: {why}")
            given = {k: getattr(item, k) for k in item.model_fields_set if k not in ("link", "direction", "at")}
            for d in item.directions():
                if d not in pairs:
                    raise ValueError(f"impairment on {list(item.link)}: no link between {d[0]} and {d[1]}")
                base = wanted.get(d, (Impairment(), item.at))[0]
                wanted[d] = (base.model_copy(update=given), item.at)
        self.configured = dict(wanted)
        if self.backend is None:
            self.backend, self.backend_probe = impair.choose("auto")
        with ThreadPoolExecutor(max_workers=8) as pool:  # independent interfaces: in parallel
            for f in [pool.submit(self._apply_direction, a, b, imp, at) for (a, b), (imp, at) in wanted.items()]:
                f.result()

    def _ends(self, a: str, b: str) -> tuple[Endpoint, Endpoint]:
        """(sender, receiver) endpoints of the direction a -> b."""
        if (a, b) in self.link_ends:
            return self.link_ends[(a, b)]
        receiver, sender = self.link_ends[(b, a)]
        return sender, receiver

    def set_impairment(self, link: tuple[str, str], direction: str, change: Impairment | None) -> None:
        """A step change: the given fields replace the current ones of that link's direction(s)."""
        a, b = link
        dirs = {"both": [(a, b), (b, a)], "forward": [(a, b)], "reverse": [(b, a)]}[direction]
        given = {k: getattr(change, k) for k in (change.model_fields_set if change else set())}
        for d in dirs:
            imp, at = self.current.get(d, (Impairment(), "sender"))
            self._apply_direction(*d, imp.model_copy(update=given), at)

    def reset_impairments(self) -> None:
        """Back to the configured impairments (after a phase's step changes)."""
        for d in set(self.current) - set(self.configured):
            impair.clear(*self._ends(*d))
            del self.current[d]
        for d, (imp, at) in self.configured.items():
            if self.current.get(d) != (imp, at):
                self._apply_direction(*d, imp, at)

    def _apply_direction(self, a: str, b: str, imp: Impairment, at: str) -> None:
        if self.backend is None:
            self.backend, self.backend_probe = impair.choose("auto")
        sender, receiver = self._ends(a, b)
        prev = self.current.get((a, b))
        if prev is not None:
            if prev[1] == at and self.backend.change(sender, receiver, prev[0], imp, at):
                self.current[(a, b)] = (imp, at)
                return
            impair.clear(sender, receiver)
        self.current[(a, b)] = (imp, at)
        if not imp.shaping_only() or imp.rate:
            done = self.backend.apply(sender, receiver, imp, at)
            self.shaped_interfaces.update({sender.intf, receiver.intf})
            config = imp.model_dump(mode="json", exclude_defaults=True)
            self.applied.append({"from": a, "to": b, "at": at, "backend": self.backend.name, "impairment": config,
                                 "commands": done})  # fmt: skip

    def _configure_hosts(self) -> None:
        for h in self.topology.hosts:
            mn = self.net.get(h.name)
            data = [i.name for i in mn.intfList() if i.name != "lo"]
            for intf in data:
                _frames_not_superpackets(intf, mn)
            cmds = ["ip route del default 2>/dev/null"]  # lab traffic can never leave through management
            for dst, gw in h.routes:
                cmds.append(f"ip route replace {dst} via {gw}")
            if data:
                cmds.append(f"ip route replace {MULTICAST_PREFIX} dev {data[0]}")
            for c in cmds:
                mn.cmd(c)
            if h.routes:
                out = mn.cmd("ip route show")
                for dst, _gw in h.routes:
                    if dst not in out:
                        raise RuntimeError(f"{h.name}: route to {dst} missing after configuration:\n{out}")

    # -- use -------------------------------------------------------------------------------------
    def ip(self, node: str, intf: int = 0) -> str:
        return self.net.get(node).intfList()[intf].IP()

    def exec(self, node: str, cmd: list[str], timeout: float | None = None) -> tuple[int, str, str]:
        """Run a command inside the node's container (its filesystem and cgroup); wait for it."""
        c = self.nodes[node].container
        res = c.exec_run(cmd, demux=True)
        out, err = res.output if res.output else (b"", b"")
        return res.exit_code, (out or b"").decode(errors="replace"), (err or b"").decode(errors="replace")

    def targets(self, extra_ports: dict[str, list[int]] | None = None) -> list[dict[str, Any]]:
        """Prometheus file_sd targets for this lab's agents, plus `extra_ports` per node (workload processes
        with their own /metrics, e.g. a DIS host while its task runs; node "*": every node), with the node's
        labels."""
        extra = extra_ports or {}
        name = naming.container_name

        def ports(node: str) -> list[int]:
            return sorted({*extra.get(node, []), *extra.get("*", [])})

        return [
            {
                "targets": [f"{name(n.name)}:{p}" for p in [naming.AGENT_PORT, *ports(n.name)]],
                "labels": {"node": n.name, "role": n.role, "run": self.run_id},
            }
            for n in self.nodes.values()
        ]


def _links_with_prefix(prefix: str) -> list[str]:
    out = run(["ip", "-o", "link", "show"], check=False)
    names = []
    for line in out.splitlines():
        parts = line.split(":", 2)
        if len(parts) > 1:
            name = parts[1].strip().split("@")[0]
            if name.startswith(prefix):
                names.append(name)
    return names


def ensure_mgmt_network(client: Any, created: bool = False) -> Any:
    """The management network: internal (no route out), labelled, shared by the agents and Prometheus.

    Returns the network, or with created=True whether this call created it."""
    try:
        net = client.networks.get(naming.MGMT_NETWORK)
        return False if created else net
    except docker.errors.NotFound:
        net = client.networks.create(naming.MGMT_NETWORK, driver="bridge", internal=True,
                                     labels={naming.LABEL: "true"})  # fmt: skip
        return True if created else net


def remove_containers(client: Any, names: list[str]) -> list[str]:
    """Force-remove the named containers (in parallel); return those that existed."""

    def rm(name: str) -> str | None:
        try:
            client.containers.get(name).remove(force=True)
            return name
        except docker.errors.NotFound:
            return None
        except docker.errors.APIError as exc:
            if "already in progress" in str(exc):
                return name
            raise

    if not names:
        return []
    with ThreadPoolExecutor(max_workers=8) as pool:
        return [n for n in pool.map(rm, names) if n]


__all__ = ["Lab", "CommandError", "ensure_mgmt_network", "remove_containers", "node_classes"]
