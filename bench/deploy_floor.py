"""Benchmark: protolab's deploy and teardown time against a floor, side by side in one run (figures, not gates).

For each number of hosts N (a switched lab: N hosts on one bridge, every port 100 Mbit/s each way), on the same
machine, in rounds (each round runs the three one after another, so a drift in the machine's load hits all three
alike), medians over the rounds reported:

1. floor: the same end state built with nothing but the Docker Engine API and iproute2, as a careful script would;
2. Mininet alone: Mininet's own SingleSwitchTopo(N) on one LinuxBridge with TCLink at the same rate, no
   containers, no controller (for context: what the layer protolab builds on costs by itself);
3. protolab: protolab.lab.Lab deploy + teardown of topo "switched", exactly as bench/deploy.py does.

Each is checked to work (one ping from the first host to the last, untimed). Reported per N: seconds per node
(hosts + the switch, as bench/deploy.py counts) for deploy and teardown of each, the figure the platform issue
asks for, protolab / floor (deploy, teardown, together), and Mininet alone; then a least-squares fit of
deploy (and teardown) seconds = a + b * N per method: a the fixed cost, b the cost per host. Writes
results/bench/deploy-floor-<UTC time>.json with the machine it ran on.

The floor. The same N containers as Lab starts (image protolab/node:latest, init, the management network
plab-mgmt, NET_ADMIN + NET_RAW, the same sysctls and labels), each created, started and inspected (for its PID)
through the Engine API on a pool of 8 threads, the pool Lab uses (docker-py's containers.run, which Lab calls,
inspects once more, and Lab reloads). Then in the root namespace: one `ip -batch` creating the bridge (Lab's
options) and every veth pair with its far end made directly in its container's namespace (`ip link add ... type
veth peer name hI-eth0 netns <pid>`); IPv6 off on the bridge and its ports (written to /proc/sys: it has to be off
before a link comes up, hence a second `ip -batch` enslaving the ports and setting everything up); one
`tc -batch` with HTB at the rate and a pfifo leaf on every bridge port. Per container, on the same pool: ethtool
on its bridge port, and one `nsenter -t <pid> -n sh` running an `ip -batch` (address, up, the multicast route),
a `tc -batch` (HTB + pfifo on its end), ethtool (segmentation offloads off) and the default route removed. That
is everything Lab's deploy leaves behind, with the same HTB parameters (protolab.lab.impair's), including what Lab
makes around the lab: the management network when it is missing and the bridged-forwarding accept rule where
Docker's FORWARD policy would drop bridged frames. Teardown: one `ip -batch` deleting every bridge port (so the
veth pairs) and the bridge, each container disconnected from the management network one after the other and
then all force-removed on the pool (as Lab does: removed in parallel while still attached, Docker's endpoint
bookkeeping can race and leave the network counting endpoints nobody has), then the rule and the network.

Why it is a fair floor: it reaches the same end state, proven by the same ping, on the same machine in the same
run, with the same degree of parallelism and the same tools underneath (Engine API, iproute2, tc, ethtool). It
leaves out only what protolab adds on top of that end state: the ownership ledger (the floor's records are
written before its timer starts and confirmed after it stops), the lab-state lock, the sweep of dead runs and
the check for foreign objects, the backend probe, Mininet's per-node shells and its one-command-at-a-time
configuration, docker-py's extra inspects, and its ledger sweep verifying each removal. So protolab / floor is
the factor protolab's own machinery costs. It is a floor for this way of building a lab, not an absolute bound: netlink
without processes, or more threads, could go lower still.

Every method's run has its own ownership ledger (run `bench-floor-<method>`, swept and deleted after each run, so
no method is timed reading another's records): everything it makes is recorded there before it is made (Lab's
way), so `protolab clean` removes it if this process is killed; otherwise try/finally removes it (Ctrl-C and
SIGTERM included). The bench holds the lab-state lock throughout. Past 64 hosts (the LAN topologies' bound) the
switched topology is built by bench.deploy.switched_topology with more hosts.

Before each N the free memory (MemAvailable) is checked against N containers of the size measured at the largest
N so far (cgroup memory.current, or the drop in MemAvailable per container if larger; 30 MiB when nothing was
measured yet), times 1.2, plus 256 MiB; an N that would not fit is skipped with the reason printed.

    python -m bench.deploy_floor [--hosts 16 64 128] [--repeat 3] [--skip-mn]
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import signal
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import docker.errors

from bench import OUT
from bench.deploy import IMAGE, RATE, deploy_once, switched_topology
from protolab import cleanup, engine, environment, naming, ownership
from protolab.errors import LabError, ProtolabError
from protolab.lab import CAPABILITIES, MULTICAST_PREFIX, OFFLOADS, exec_in, firewall
from protolab.lab.impair import _rate_args
from protolab.model.impairment import Impairment
from protolab.ownership import Context, Ledger
from protolab.shell import run as sh
from protolab.topo import Topology

RUN_ID = "bench-floor"
POOL = 8  # threads, as protolab.lab.Lab._start_containers
FLOOR_SWITCH = "f1"  # the floor's bridge: plab-f1, ports plab-f1-eth<i> (plab-: protolab's bridged-forwarding rule)
MN_SWITCH = "m1"  # Mininet alone: plab-m1
ASSUMED_MIB_PER_CONTAINER = 30.0
MEMORY_MARGIN = 1.2  # the estimate times this ...
MEMORY_RESERVE_MIB = 256.0  # ... plus this (the engine, the node shells, the rest of the machine) must be available
MIB = 1024 * 1024
METHODS = ("floor", "mininet", "protolab")

T = TypeVar("T")
R = TypeVar("R")


# -- helpers -------------------------------------------------------------------------------------------------


def parallel(fn: Callable[[T], R], items: Sequence[T], workers: int = POOL) -> list[R]:
    """fn over items on a pool of `workers` threads, results in order. On the first error (or Ctrl-C) the calls not
    yet started are cancelled and the running ones waited for, then it is raised: nothing is still being made when
    the caller cleans up."""
    pool = ThreadPoolExecutor(max_workers=workers)
    try:
        futures = [pool.submit(fn, i) for i in items]
        return [f.result() for f in futures]
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def batch(tool: str, lines: list[str]) -> None:
    """`ip -batch -` or `tc -batch -` in the root namespace; stops at (and raises) the first failing line."""
    if lines:
        sh([tool, "-batch", "-"], input="\n".join(lines) + "\n")


def htb_lines(intf: str, rate_bps: float, limit: int) -> list[str]:
    """HTB at the rate and a pfifo leaf: what protolab.lab.impair.Backend.shape installs for a rate-only link."""
    return [
        f"qdisc add dev {intf} root handle 1: htb default 1",
        f"class add dev {intf} parent 1: classid 1:1 htb {' '.join(_rate_args(rate_bps))}",
        f"qdisc add dev {intf} parent 1:1 handle 10: pfifo limit {limit}",
    ]


def mem_available_mib() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("/proc/meminfo has no MemAvailable")


def cgroup_memory_mib(pid: int) -> float | None:
    """Memory charged to the cgroup of process `pid` (cgroup v2 memory.current, or v1 memory.usage_in_bytes)."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        hierarchy, controllers, path = line.split(":", 2)
        if hierarchy == "0" and not controllers:
            f = Path("/sys/fs/cgroup") / path.lstrip("/") / "memory.current"
        elif "memory" in controllers.split(","):
            f = Path("/sys/fs/cgroup/memory") / path.lstrip("/") / "memory.usage_in_bytes"
        else:
            continue
        try:
            return int(f.read_text()) / MIB
        except (OSError, ValueError):
            continue
    return None


def refuse_foreign(prefixes: list[str]) -> None:
    """Stop before making anything when a link this bench would make exists already (cleanup.clean removed what
    protolab's ledgers list, so it is not ours: deleting it by name would delete someone else's link)."""
    taken = [name for p in prefixes for name in engine.links_with_prefix(p)]
    if taken:
        raise ProtolabError(f"links {', '.join(taken)} exist and no protolab ledger lists them: remove or rename them")


@contextlib.contextmanager
def marked_children(run_id: str) -> Iterator[None]:
    """Processes started in the block carry RUN_ENV=run_id, as a lab's node shells do: the run's sweep ends them,
    and `protolab clean` if this process is killed."""
    old = os.environ.get(ownership.RUN_ENV)
    os.environ[ownership.RUN_ENV] = run_id
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(ownership.RUN_ENV, None)
        else:
            os.environ[ownership.RUN_ENV] = old


@dataclass
class Run:
    """One method's run: its own ownership ledger (so no method reads another's records while timed), opened with
    a run record; what could not be removed at its end."""

    run_id: str
    ledger: Ledger
    failures: list[str] = field(default_factory=list)


@contextlib.contextmanager
def fresh_run(method: str, client: Any) -> Iterator[Run]:
    """A run of `method` under run id bench-floor-<method>: everything it makes is recorded in the run's ledger
    before it is made; at the end of the block (exception, Ctrl-C and SIGTERM included) the whole ledger is swept:
    what the method removed itself is marked gone, anything else removed (processes carrying the run id too), the
    ledger file deleted. What cannot be removed is printed and stays listed for `protolab clean`."""
    r = Run(f"{RUN_ID}-{method}", ownership.begin_run(f"{RUN_ID}-{method}", None))
    try:
        yield r
    finally:
        r.failures += r.ledger.sweep(None, Context(client))
        for f in r.failures:
            print(f"  could not remove: {f} (`protolab clean` will retry)")


# -- 1. the floor ----------------------------------------------------------------------------------------------


@dataclass
class FloorHost:
    name: str
    role: str
    forwarding: bool
    ip: str  # with its prefix length
    port: str  # the root-namespace end, on the bridge
    intf: str  # the end in the container's namespace
    id: str = ""
    pid: int = 0


def floor_hosts(t: Topology, bridge: str) -> list[FloorHost]:
    """Every host of the switched topology with its one link to the switch (ports numbered in link order)."""
    switch = t.switches[0].name
    out = []
    for i, lk in enumerate(t.links, 1):
        if lk.node2 != switch or not lk.ip1:
            raise ValueError(f"the floor builds one switch with addressed hosts; link {lk.node1}-{lk.node2} is not")
        h = t.host(lk.node1)
        out.append(FloorHost(h.name, h.role, h.forwarding, lk.ip1, f"{bridge}-eth{i}", f"{h.name}-eth0"))
    return out


def namespace_script(h: FloorHost, rate_bps: float, limit: int) -> str:
    """What one container's namespace needs, in one shell: address, up, multicast route (one `ip -batch`), HTB
    (one `tc -batch`), offloads off and no default route (as Lab's host configuration)."""
    ip_lines = [f"addr add {h.ip} dev {h.intf}", f"link set dev {h.intf} up",
                f"route replace {MULTICAST_PREFIX} dev {h.intf}"]  # fmt: skip
    offloads = " ".join(f"{o} off" for o in OFFLOADS)
    return "\n".join([
        "ip -batch - <<'EOF'", *ip_lines, "EOF",
        "tc -batch - <<'EOF'", *htb_lines(h.intf, rate_bps, limit), "EOF",
        f"ethtool -K {h.intf} {offloads} 2>/dev/null || true",
        "ip route del default 2>/dev/null || true",
    ])  # fmt: skip


def floor_once(client: Any, run: Run, t: Topology) -> dict[str, Any]:
    """Deploy the floor (timed), ping, tear it down (timed); what is left on an error, the run's sweep removes."""
    api = client.api
    fl = run.ledger.scoped("floor")
    bridge = naming.bridge_name(FLOOR_SWITCH)
    hosts = floor_hosts(t, bridge)
    shaping = Impairment(rate=RATE)
    assert shaping.rate is not None
    rate_bps, limit = shaping.rate, shaping.queue_limit()
    offloads = [w for o in OFFLOADS for w in (o, "off")]
    refuse_foreign([bridge])
    # recorded before anything is made (and before the timer: the ledger is protolab's cost, not the floor's)
    for h in hosts:
        fl.add("container", name=naming.container_name(h.name))
    for name in [bridge, *(h.port for h in hosts)]:
        fl.link(name)
    labels = {naming.LABEL: "true", naming.RUN_LABEL: run.run_id}

    def start(h: FloorHost) -> None:
        host_config = api.create_host_config(
            init=True, cap_add=CAPABILITIES, network_mode=naming.MGMT_NETWORK,
            sysctls={"net.ipv6.conf.all.disable_ipv6": "1", "net.ipv6.conf.default.disable_ipv6": "1",
                     "net.ipv4.ip_forward": "1" if h.forwarding else "0"},
        )  # fmt: skip
        networking = api.create_networking_config({naming.MGMT_NETWORK: api.create_endpoint_config()})
        try:
            h.id = api.create_container(
                IMAGE, name=naming.container_name(h.name), hostname=h.name, detach=True, host_config=host_config,
                labels={**labels, naming.NODE_LABEL: h.name, naming.ROLE_LABEL: h.role}, networking_config=networking,
            )["Id"]  # fmt: skip
        except docker.errors.ImageNotFound:
            raise LabError(f"image {IMAGE} not found; run `make images`") from None
        api.start(h.id)
        h.pid = api.inspect_container(h.id)["State"]["Pid"]

    def configure(h: FloorHost) -> None:
        sh(["ethtool", "-K", h.port, *offloads], check=False)
        sh(["nsenter", "-t", str(h.pid), "-n", "sh", "-ec", namespace_script(h, rate_bps, limit)])

    mem_before = mem_available_mib()
    t0 = time.monotonic()
    firewall.ensure_bridged_forwarding(fl)
    engine.ensure_mgmt_network(client, ledger=fl)
    parallel(start, hosts)
    t1 = time.monotonic()
    batch("ip", [f"link add name {bridge} type bridge stp_state 0 ageing_time 30000 mcast_snooping 0 "
                 "mcast_querier 0"]
                + [f"link add name {h.port} type veth peer name {h.intf} netns {h.pid}" for h in hosts])  # fmt: skip
    for name in [bridge, *(h.port for h in hosts)]:
        with contextlib.suppress(FileNotFoundError):  # a kernel without IPv6
            Path(f"/proc/sys/net/ipv6/conf/{name}/disable_ipv6").write_text("1")
    batch("ip", [f"link set dev {h.port} master {bridge} up" for h in hosts] + [f"link set dev {bridge} up"])
    batch("tc", [line for h in hosts for line in htb_lines(h.port, rate_bps, limit)])
    parallel(configure, hosts)
    t2 = time.monotonic()
    # untimed: identities into the ledger, what the method made around the lab, memory, the ping
    fl.confirm_links()
    around = [e for e in fl.entries(fl.scope) if e["kind"] in ("rule", "network")]
    cgroup = [m for m in (cgroup_memory_mib(h.pid) for h in hosts) if m is not None]
    result: dict[str, Any] = {}
    result["memory"] = {
        "cgroup_mib_per_container": statistics.mean(cgroup) if cgroup else None,
        "available_drop_mib_per_container": max(0.0, mem_before - mem_available_mib()) / len(hosts),
    }
    first = client.containers.get(hosts[0].id)
    code, _, _ = exec_in(first, ["ping", "-c", "1", "-W", "2", hosts[-1].ip.split("/")[0]], 15, hosts[0].name)
    t3 = time.monotonic()
    batch("ip", [f"link del dev {h.port}" for h in hosts] + [f"link del dev {bridge}"])
    for h in hosts:  # one after the other, then removed in parallel: as the lab does (Lab._remove_containers)
        api.disconnect_container_from_network(h.id, naming.MGMT_NETWORK, force=True)
    parallel(lambda h: api.remove_container(h.id, force=True), hosts)
    for e in around:
        if e["kind"] == "rule":
            sh([e["tool"], "-w", "-t", e["table"], "-D", *e["rule"]])
        else:  # engine's: Docker's stale-endpoint state is said with its fix, not as a bare API error
            engine.remove_network(client, e["name"])
    t4 = time.monotonic()
    result.update({"deploy_seconds": t2 - t0, "teardown_seconds": t4 - t3, "reachable": code == 0,
                   "containers_seconds": t1 - t0, "network_seconds": t2 - t1,
                   "made_mgmt_network": any(e["kind"] == "network" for e in around)})  # fmt: skip
    return result


# -- 2. Mininet alone -------------------------------------------------------------------------------------------


def mininet_once(run: Run, hosts: int) -> dict[str, Any]:
    """Mininet's SingleSwitchTopo(hosts) on a LinuxBridge with TCLink at RATE: build + start (timed), ping,
    stop (timed). The switch is named plab-m1, not s1: protolab's bridged-forwarding rule then covers it, and its
    links are recognisably ours. What is left on an error (links, the hosts' shells), the run's sweep removes."""
    from mininet.link import TCLink
    from mininet.net import Mininet
    from mininet.nodelib import LinuxBridge
    from mininet.topo import SingleSwitchTopo
    from mininet.util import irange

    switch = naming.bridge_name(MN_SWITCH)

    class Topo(SingleSwitchTopo):
        def build(self, k: int = 2, **_opts: Any) -> None:  # SingleSwitchTopo's, with our switch name
            self.k = k
            sw = self.addSwitch(switch)
            for h in irange(1, k):
                self.addLink(self.addHost(f"h{h}"), sw)

    ml = run.ledger.scoped("mininet")
    refuse_foreign([switch])
    for name in [switch, *(f"{switch}-eth{i}" for i in range(1, hosts + 1))]:
        ml.link(name)
    firewall.ensure_bridged_forwarding(ml)  # untimed: Mininet alone would not need it off a Docker machine
    bw_mbit = (Impairment(rate=RATE).rate or 0) / 1e6
    net = None
    try:
        with marked_children(run.run_id):
            t0 = time.monotonic()
            net = Mininet(topo=Topo(hosts, lopts={"bw": bw_mbit}), switch=LinuxBridge, controller=None, link=TCLink)
            net.start()
            t1 = time.monotonic()
        ml.confirm_links()
        for node in [*net.hosts, *net.switches]:
            if node.shell is not None:
                ml.process(node.shell.pid)
        last = net.get(f"h{hosts}")
        out = net.get("h1").cmd(f"ping -c 1 -W 2 {last.IP()} >/dev/null 2>&1; echo $?")
        t2 = time.monotonic()
        net.stop()
        net = None
        t3 = time.monotonic()
    finally:
        if net is not None:  # an error or Ctrl-C between start and stop
            with contextlib.suppress(Exception):
                net.stop()
    return {"deploy_seconds": t1 - t0, "teardown_seconds": t3 - t2, "reachable": out.strip().splitlines()[-1:] == ["0"]}


# -- 3. protolab, and the report ---------------------------------------------------------------------------------


def summarize(runs: list[dict[str, Any]], nodes: int) -> dict[str, Any]:
    deploy = statistics.median(r["deploy_seconds"] for r in runs)
    teardown = statistics.median(r["teardown_seconds"] for r in runs)
    return {
        "runs": runs,
        "median_deploy_seconds": deploy,
        "median_teardown_seconds": teardown,
        "deploy_seconds_per_node": deploy / nodes,
        "teardown_seconds_per_node": teardown / nodes,
        "total_seconds_per_node": (deploy + teardown) / nodes,
        "reachable": sum(bool(r["reachable"]) for r in runs),
    }


def ratio(num: dict[str, Any], den: dict[str, Any]) -> dict[str, float]:
    d, t = "median_deploy_seconds", "median_teardown_seconds"
    return {"deploy": num[d] / den[d], "teardown": num[t] / den[t], "total": (num[d] + num[t]) / (den[d] + den[t])}


def fit(points: list[tuple[int, float]]) -> dict[str, float] | None:
    """seconds = a + b * N by least squares (None with fewer than two distinct N)."""
    if len({n for n, _ in points}) < 2:
        return None
    mn = statistics.mean(n for n, _ in points)
    my = statistics.mean(y for _, y in points)
    b = sum((n - mn) * (y - my) for n, y in points) / sum((n - mn) ** 2 for n, _ in points)
    return {"a_seconds": my - b * mn, "b_seconds_per_host": b}


def memory_shortfall(hosts: int, per_container: float, source: str) -> str | None:
    """Why `hosts` containers would not fit in the memory available now (None: they fit)."""
    need = hosts * per_container * MEMORY_MARGIN + MEMORY_RESERVE_MIB
    available = mem_available_mib()
    if need <= available:
        return None
    return (f"needs ~{need:.0f} MiB ({hosts} x {per_container:.1f} MiB per container ({source}) x {MEMORY_MARGIN} "
            f"+ {MEMORY_RESERVE_MIB:.0f} MiB reserve), {available:.0f} MiB available")  # fmt: skip


def print_table(results: list[dict[str, Any]]) -> None:
    """Seconds per node of each method, then the factors protolab / floor and Mininet alone / floor."""
    row = "{:>5}  {:<15} {:>13} {:>15} {:>12}  {}"
    print("\n" + row.format("hosts", "method", "deploy s/node", "teardown s/node", "total s/node", "ping"))
    for res in results:
        n, m = res["hosts"], res["methods"]
        for name in METHODS:
            if name in m:
                s = m[name]
                figures = (f"{s[k]:.4f}" for k in ("deploy_seconds_per_node", "teardown_seconds_per_node",
                                                   "total_seconds_per_node"))  # fmt: skip
                print(row.format(n, name, *figures, f"{s['reachable']}/{len(s['runs'])}"))
        for name, key in (("protolab/floor", "protolab_over_floor"), ("mininet/floor", "mininet_over_floor")):
            if key in res:
                print(row.format(n, name, *(f"x{res[key][k]:.2f}" for k in ("deploy", "teardown", "total")), ""))


def measure(client: Any, hosts: int, repeat: int, skip_mn: bool) -> dict[str, Any]:
    t = switched_topology(hosts)
    nodes = len(t.hosts) + len(t.switches)
    runs: dict[str, list[dict[str, Any]]] = {m: [] for m in METHODS if not (skip_mn and m == "mininet")}
    for i in range(repeat):
        for method in runs:
            with fresh_run(method, client) as run:
                if method == "floor":
                    r = floor_once(client, run, t)
                elif method == "mininet":
                    r = mininet_once(run, hosts)
                else:
                    r = deploy_once(t, run.run_id)
            r["sweep_failures"] = run.failures
            runs[method].append(r)
            print(f"N={hosts} round {i + 1}: {method:<8} deploy {r['deploy_seconds']:6.2f}s, teardown "
                  f"{r['teardown_seconds']:6.2f}s, h1->h{hosts} ping {'ok' if r['reachable'] else 'FAILED'}",
                  flush=True)  # fmt: skip
    res: dict[str, Any] = {
        "hosts": hosts,
        "nodes": nodes,
        "methods": {m: summarize(rs, nodes) for m, rs in runs.items()},
    }
    m = res["methods"]
    res["protolab_over_floor"] = ratio(m["protolab"], m["floor"])
    if "mininet" in m:
        res["mininet_over_floor"] = ratio(m["mininet"], m["floor"])
    per = [max(v for v in r["memory"].values() if v is not None) for r in runs["floor"] if r.get("memory")]
    res["memory_mib_per_container"] = max(per) if per else None
    return res


def _terminate(_signum: int, _frame: Any) -> None:
    raise SystemExit(143)  # unwinds through every finally: what the bench made is removed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hosts", type=int, nargs="+", default=[16, 64, 128], help="numbers of hosts (default 16 64 128)")
    ap.add_argument("--repeat", type=int, default=3, help="rounds per number of hosts (median reported)")
    ap.add_argument("--skip-mn", action="store_true", help="leave out Mininet alone")
    a = ap.parse_args()
    if a.repeat < 1 or not all(2 <= n <= 253 for n in a.hosts):
        ap.error("--repeat must be at least 1 and every --hosts from 2 to 253 (one /24)")
    from mininet.log import setLogLevel
    from mininet.net import Mininet

    setLogLevel("critical")
    signal.signal(signal.SIGTERM, _terminate)
    ownership.LOCK.acquire("bench.deploy_floor", RUN_ID, hint="the deploy-floor benchmark is running")
    try:
        cleanup.clean(verbose=False)  # what earlier runs left (under the lock, which it takes again)
        Mininet.init()  # once, untimed: Mininet raises limits and sysctls the first time a network is made
    except BaseException:
        ownership.LOCK.release()
        raise
    results: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    failures: list[str] = []
    try:
        refuse_foreign([naming.bridge_name(FLOOR_SWITCH), naming.bridge_name(MN_SWITCH)])
        client = engine.client()
        measured: tuple[int, float] | None = None  # (hosts, MiB per container) at the largest N so far
        for hosts in sorted(set(a.hosts)):
            per, source = ASSUMED_MIB_PER_CONTAINER, "assumed"
            if measured:
                per, source = measured[1], f"measured at N={measured[0]}"
            reason = memory_shortfall(hosts, per, source)
            if reason:
                print(f"N={hosts}: skipped: {reason}")
                skipped.append({"hosts": hosts, "reason": reason})
                continue
            res = measure(client, hosts, a.repeat, a.skip_mn)
            results.append(res)
            if res["memory_mib_per_container"]:
                measured = (hosts, res["memory_mib_per_container"])
    finally:
        try:  # every run swept its own ledger already; this finds only what they could not remove
            for m in METHODS:
                failures += Ledger(f"{RUN_ID}-{m}").sweep(None, Context())
        finally:
            ownership.LOCK.release()
    if not results:
        print("nothing measured")
        return 1
    fits = {
        m: {
            k: fit([(r["hosts"], r["methods"][m][f"median_{k}_seconds"]) for r in results])
            for k in ("deploy", "teardown")
        }
        for m in METHODS
        if m in results[0]["methods"]
    }
    machine = environment.static()
    out = {
        "benchmark": "deploy-floor",
        "rate": RATE,
        "image": IMAGE,
        "pool_threads": POOL,
        "repeat": a.repeat,
        "results": results,
        "skipped": skipped,
        "fit_seconds_a_plus_b_n": fits,
        "cleanup_failures": failures,
        "machine": machine,
        "at": dt.datetime.now(dt.UTC).isoformat(),
    }
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"deploy-floor-{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%SZ}.json"
    path.write_text(json.dumps(out, indent=2))
    print_table(results)
    for s in skipped:
        print(f"{s['hosts']:>5}  skipped: {s['reason']}")
    ns = ", ".join(str(r["hosts"]) for r in results)
    print(f"\nfit over N = {ns} on {machine['cpu_count']} cores: seconds = a + b*N (a: fixed, b: per host)")
    for m, f in fits.items():
        parts = [f"{k} a={v['a_seconds']:.3f} s, b={v['b_seconds_per_host']:.4f} s/host" if v else f"{k}: one N, no fit"
                 for k, v in f.items()]  # fmt: skip
        print(f"  {m:<9} " + "; ".join(parts))
    print(f"-> {path}")
    ok = all(s["reachable"] == len(s["runs"]) for r in results for s in r["methods"].values())
    return 0 if ok and not failures else 1


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    except KeyboardInterrupt:
        print("interrupted: what the bench made was removed (else `protolab clean` removes it)")
        raise SystemExit(130) from None
