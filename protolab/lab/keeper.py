"""A lab a user deploys and works in: `protolab deploy | destroy | inspect | exec | graph | capture | impair | check`.

`deploy` starts a lab keeper: a process of its own session that deploys the lab (the same `Lab` a run uses, so
the same ownership ledger, lock, impairment backends and self-check) and then holds it, because the lab's link
emulators and Mininet's node shells live in that process. It answers the other commands on a Unix socket
(`<state dir>/lab.sock`, one JSON request and one JSON answer per connection) and writes what it holds to
`<state dir>/lab.json`. `destroy` asks it to tear the lab down; if the keeper was killed, its ledger makes the
lab a dead run's leftovers, which the next deploy, run or `protolab clean` removes.

`exec` and `capture` do not need the keeper: they enter the node's container (docker exec) or network
namespace (nsenter + tcpdump) from the state file. Only one lab exists at a time in a protolab instance (a state
folder; container names are `plab-<node>` in the default one, protolab.naming): a second deploy, or a `protolab
run`, while one is up is refused naming the holder.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import fnmatch
import ipaddress
import json
import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from .. import naming, ownership, topo, topofile
from ..errors import LabError, ProtolabError, SpecError
from ..jsonio import new_run_id, write_json
from ..model.impairment import Impairment, LinkImpairment, percents_as_written
from ..spec import EXPERIMENTS_DIR, NodeSpec, TopologySpec, node_settings
from ..topo import Topology

READY_TIMEOUT = 600.0  # deploying 128 containers on 2 cores takes minutes
REQUEST_TIMEOUT = 300.0  # a self-check of many links
NOTES_SHOWN = 8  # deploy's lines about what a node filter dropped


def state_path() -> Path:
    return ownership.state_dir() / "lab.json"


def socket_path() -> Path:
    return ownership.state_dir() / "lab.sock"


def log_path() -> Path:
    return ownership.state_dir() / "lab.log"


# -- processes that announce READY in their log -----------------------------------------------------------
def spawn_logged(cmd: list[str], log: Path, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """Start cmd in a session of its own (it outlives its caller), its output to log (truncated first)."""
    env = (env or dict(os.environ)) | {"PYTHONUNBUFFERED": "1"}
    with log.open("w") as f:
        return subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, env=env)  # fmt: skip


class NotReadyError(LabError):
    """A process followed by await_ready exited before READY (name, returncode, the log's last lines) or the
    time ran out (returncode None)."""

    def __init__(self, message: str, name: str, returncode: int | None, lines: list[str]) -> None:
        super().__init__(message)
        self.name, self.returncode, self.lines = name, returncode, lines


def _noise(line: str) -> bool:
    return "bridge-nf-call" in line  # Mininet's sysctl probe on a kernel without br_netfilter


def await_ready(procs: dict[str, tuple[subprocess.Popen[bytes], Path]], timeout: float,
                echo: Any = None, tick: Any = None) -> None:  # fmt: skip
    """Wait until every process's log has a line READY. echo(name, line) sees each new log line as it comes;
    tick(elapsed seconds) is called a few times a second. Raises NotReadyError when one exits first (the others go on
    running: the caller decides) or when timeout passes (none is stopped)."""
    shown = dict.fromkeys(procs, 0)
    waiting = set(procs)
    t0 = time.monotonic()
    while waiting:
        for name in sorted(waiting):
            proc, log = procs[name]
            lines = log.read_text(errors="replace").splitlines() if log.exists() else []
            if echo is not None:
                for line in lines[shown[name] :]:
                    if not _noise(line):
                        echo(name, line)
                shown[name] = len(lines)
            if "READY" in lines:
                waiting.discard(name)
            elif proc.poll() is not None:
                tail = [ln for ln in lines[-12:] if not _noise(ln)]
                raise NotReadyError(f"{name} exited {proc.returncode} before it was ready", name, proc.returncode, tail)
        if not waiting:
            return
        if time.monotonic() - t0 >= timeout:
            name = sorted(waiting)[0]
            raise NotReadyError(f"{', '.join(sorted(waiting))} not ready after {timeout:g} s", name, None, [])
        if tick is not None:
            tick(time.monotonic() - t0)
        time.sleep(0.2)


# -- what to deploy ---------------------------------------------------------------------------------------
@dataclass
class Request:
    """What `deploy` was asked: a topology file or name (or an experiment's topology), and a node filter."""

    source: str
    params: dict[str, Any] = field(default_factory=dict)
    node_filter: list[str] = field(default_factory=list)
    backend: str = "auto"
    part: dict[str, Any] | None = None  # a resolved Topology (to_json): one testbed host's part (protolab.lab.parts)


@dataclass
class Prepared:
    name: str
    topology: Topology
    images: dict[str, str]
    cpus: dict[str, float | None]
    commands: dict[str, list[str] | None]
    impairments: list[LinkImpairment]
    described: str
    notes: list[str] = field(default_factory=list)  # what a node filter left out beyond nodes and links


def prepare(req: Request) -> Prepared:
    """Resolve and validate everything before anything is created (errors name the file, field and reason)."""
    nodes: dict[str, NodeSpec] = {"default": NodeSpec()}
    impairments: list[LinkImpairment] = []
    if req.part is not None:  # addresses, routes and impairments were resolved on the whole lab before the split
        t = Topology.from_json(req.part)
        images, cpus, commands = node_settings(t, nodes)
        return Prepared(t.kind, t, images, cpus, commands, list(t.impairments), f"{req.source} (a part of {t.kind})")
    path = Path(req.source)
    experiment = EXPERIMENTS_DIR / f"{req.source}.yaml"
    if not path.exists() and experiment.exists() and req.source not in topofile.builtin_files():
        from .. import spec

        ex = spec.load(experiment).points[0].experiment
        ts, nodes, impairments = ex.topology, ex.nodes, list(ex.impairments)
        if req.params:
            raise SpecError(f"{req.source}: an experiment's topology takes no --param (edit the spec's sweep instead)")
    elif path.suffix in (".yaml", ".yml") or path.exists():
        if req.params:
            raise SpecError(f"{req.source}: a topology file takes no --param; it is the topology")
        ts = _topology_spec({"file": req.source}, req.source)
    elif req.source in topofile.builtin_files() or req.source in topo.load_all().names():
        ts = _topology_spec({"kind": req.source, "params": req.params}, req.source)
    else:
        known = sorted(set(topofile.builtin_files()) | set(topo.load_all().names()))
        raise SpecError(f"{req.source}: not a topology file, topology or experiment (topologies: {', '.join(known)};"
                        f" experiments: experiments/*.yaml)")  # fmt: skip
    t = ts.build()
    imps = t.impairments + impairments
    notes: list[str] = []
    if req.node_filter:
        t, imps, notes = filter_nodes(t, imps, req.node_filter)
    images, cpus, commands = node_settings(t, nodes)
    return Prepared(t.kind, t, images, cpus, commands, imps, ts.describe(), notes)


def _topology_spec(data: dict[str, Any], where: str) -> TopologySpec:
    try:
        return TopologySpec.model_validate(data, context={"spec_dir": Path.cwd()})
    except ValidationError as exc:
        raise SpecError("\n".join(e["msg"].removeprefix("Value error, ") for e in exc.errors())) from None


def filter_nodes(t: Topology, imps: list[LinkImpairment], patterns: list[str]) -> tuple[Topology, list[LinkImpairment],
                                                                                        list[str]]:  # fmt: skip
    """Only the containers matching a pattern (name or glob); the bridges that still have members, the links
    between what is kept, the impairments on those links and the routes whose next hop is still reachable (a
    gateway on a subnet a kept interface is on, and a kept node's). Every other attribute of the topology is kept.
    Also returns one line per route dropped."""
    names = [h.name for h in t.hosts]
    keep = {n for n in names if any(fnmatch.fnmatchcase(n, p) for p in patterns)}
    unmatched = [p for p in patterns if not any(fnmatch.fnmatchcase(n, p) for n in names)]
    if not keep or unmatched:
        raise SpecError(f"--node-filter {','.join(unmatched or patterns)} matches no node of {t.kind} "
                        f"(its nodes: {', '.join(names)})")  # fmt: skip
    bridges = {s.name for s in t.switches}
    links = [lk for lk in t.links if all(n in keep or n in bridges for n in (lk.node1, lk.node2))]
    used = {n for lk in links for n in (lk.node1, lk.node2)}
    kept = {frozenset((lk.node1, lk.node2)) for lk in links}
    hosts = [dataclasses.replace(h, routes=list(h.routes)) for h in t.hosts if h.name in keep]
    out = dataclasses.replace(t, hosts=hosts, switches=[s for s in t.switches if s.name in used], links=links,
                              impairments=[i for i in t.impairments if frozenset(i.link) in kept])  # fmt: skip
    owner = {str(ipaddress.ip_interface(ip).ip): n for lk in t.links for n, ip in ((lk.node1, lk.ip1),
             (lk.node2, lk.ip2)) if ip}  # fmt: skip
    dropped = []
    for h in out.hosts:
        routes = []
        for dst, gw in h.routes:
            if why := out.unreachable_route(h.name, gw):
                gone = owner.get(gw) not in keep | {None}
                dropped.append(
                    f"{h.name}: route to {dst} via {gw} dropped: "
                    + (f"{owner[gw]}, whose address it is, is filtered out" if gone else why)
                )
            else:
                routes.append((dst, gw))
        h.routes = routes
    out.validate(f"{t.kind} filtered to {','.join(patterns)}")
    return out, [i for i in imps if frozenset(i.link) in kept], dropped


# -- the keeper -------------------------------------------------------------------------------------------
def _link_rows(t: Topology) -> list[dict[str, Any]]:
    intfs = t.interfaces()
    count: dict[str, int] = {}
    rows = []
    for lk in t.links:
        ends = []
        for n, ip in ((lk.node1, lk.ip1), (lk.node2, lk.ip2)):
            k = count.get(n, 0)
            count[n] = k + 1
            v6 = topo.v6_address(ip) if ip and t.ipv6 else None
            ends.append({"node": n, "interface": intfs[n][k], "address": ip, "address6": v6})
        rows.append({"link": [lk.node1, lk.node2], "rate_bps": lk.rate_bps, "segment": lk.segment, "ends": ends})
    return rows


class Keeper:
    """Deploys the lab, holds it and answers requests until `destroy` (or SIGTERM)."""

    def __init__(self, req: Request) -> None:
        self.req = req
        self.lab: Any = None
        self.checks: list[dict[str, Any]] = []
        self.events: list[dict[str, Any]] = []
        self.done = False

    def state(self, status: str = "up") -> dict[str, Any]:
        lab = self.lab
        t: Topology = lab.topology
        return {
            "lab": lab.run_id, "name": t.kind, "status": status, "pid": os.getpid(), "source": self.req.source,
            "node_filter": self.req.node_filter, "backend": lab.backend.name if lab.backend else None,
            "deployed_at": self.deployed_at, "deploy_seconds": self.deploy_seconds,
            "nodes": [{"name": h.name, "role": h.role, "image": lab.images[h.name], "cpus": lab.cpus.get(h.name),
                       "container": naming.container_name(h.name), "pid": lab.nodes[h.name].pid,
                       "mgmt_ip": lab.nodes[h.name].mgmt_ip, "routes": [list(r) for r in h.routes],
                       "routes6": [list(r) for r in t.routes6(h)] if t.ipv6 else [],
                       "interfaces": [{"name": x.name, "kind": x.kind, "address": x.address,
                                       "address6": topo.v6_address(x.address) if x.address and t.ipv6 else None}
                                      for x in h.interfaces]}
                      for h in t.hosts],
            "bridges": [{"name": s.name, "mode": s.mode, "capacity_bps": s.capacity_bps} for s in t.switches],
            "links": _link_rows(t),
            "impairments": [{"from": a, "to": b, "at": at,
                             "impairment": imp.model_dump(mode="json", exclude_defaults=True)}
                            for (a, b), (imp, at) in sorted(lab.configured.items())],
            "cut": [list(k) for k in sorted(lab.links.cut)] if lab.links else [],
            "applied": lab.applied, "shaped_interfaces": sorted(lab.shaped_interfaces),
            "nic_filters": dict(lab.nic_filters), "receive_cpu": lab.receive_cpu.manifest(),
            "checks": self.checks, "events": self.events,
            "topology": {"kind": t.kind, "source": t.source, "ipv6": t.ipv6},
        }  # fmt: skip

    def write_state(self, status: str = "up") -> None:
        write_json(state_path(), self.state(status))

    def deploy(self) -> None:
        from . import Lab

        p = prepare(self.req)
        # unique even for keepers started in the same second (a lab over several hosts starts one per host, and a
        # run's processes are found by this id when it is torn down)
        run_id = "lab-" + new_run_id()
        ledger = ownership.begin_run(run_id, None)
        backend = None
        if self.req.backend != "auto":
            from . import impair

            backend, _probe = impair.choose(self.req.backend)
        self.lab = Lab(p.topology, run_id, p.images, p.cpus, commands=p.commands, impairments=p.impairments,
                       ledger=ledger.scoped("lab"), backend=backend)  # fmt: skip
        t0 = time.monotonic()
        self.deployed_at = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        self.lab.deploy()
        self.deploy_seconds = round(time.monotonic() - t0, 3)
        self.write_state()

    def teardown(self) -> list[str]:
        if self.lab is None:
            return []
        self.lab.teardown()
        failures = list(self.lab.teardown_failures)
        ledger = ownership.Ledger(self.lab.run_id)
        failures += ledger.sweep(None, ownership.Context(self.lab.client))
        self.lab = None
        with contextlib.suppress(FileNotFoundError):
            state_path().unlink()
        return failures

    # -- requests ---------------------------------------------------------------------------------------
    def handle(self, req: dict[str, Any]) -> dict[str, Any]:
        op = req.get("op")
        try:
            if op == "inspect":
                return {"ok": True, "state": self.state()}
            if op == "impair":
                return self._impair(req)
            if op == "links":
                return self._links(req)
            if op == "sh":
                if req.get("node") not in self.lab.nodes:
                    nodes = ", ".join(self.lab.nodes)
                    raise LabError(f"sh: no node {req.get('node')!r} in this lab (its nodes: {nodes})")
                return {"ok": True, "output": self.lab.node_shell(req["node"], str(req["script"]))}
            if op == "check":
                return self._check(int(req.get("family", 4)))
            if op == "read":  # what a run reads of the lab here, for a machine that cannot read this host itself
                what = {"counters": self.lab.interface_counters, "offloads": self.lab.offloads, "guard": self._guard,
                        "held": self._held, "drops": self.lab.emulator_drops}  # fmt: skip
                if req.get("what") not in what:
                    raise LabError(f"read: {req.get('what')!r} is not one of {', '.join(what)}")
                return {"ok": True, "value": what[req["what"]]()}
            if op == "nic_sync":  # the NIC filters' model up to the nodes' joins (a runner's receivers joined)
                return {"ok": True, "joined": self.lab.sync_nic_filters()}
            if op == "helpers":  # this keeper's watch of its link emulators and NIC filters, `ago` seconds back
                from .helperproc import WATCH

                ago = float(req.get("ago", 0.0))
                if not 0 <= ago <= 7 * 86400:
                    raise LabError(f"helpers: ago={ago!r} is not a number of seconds within a week")
                return {"ok": True, "reasons": WATCH.reasons(time.monotonic() - ago)}
            if op == "destroy":
                self.done = True
                return {"ok": True, "failures": self.teardown()}
            return {"ok": False, "error": f"unknown request {op!r}"}
        except (ProtolabError, ValueError, KeyError) as exc:
            return {"ok": False, "error": str(exc).strip("'\"")}

    def _held(self) -> dict[str, list[Any]]:
        """The packets this keeper's link emulators hold (protolab.lab.quiesce's wait), as {name: [bytes, what]}."""
        from .impair import Linkem, held_entry, held_packets

        held = {lk.name: held_packets(lk.control, 2.0) for lk in list(Linkem._running.values())}
        return {name: list(held_entry(n)) for name, n in held.items() if n}

    def _guard(self) -> dict[str, Any]:
        """This host's self-saturation snapshot (protolab.lab.guard): its CPU, softnet and unconfigured queues' drops,
        its nodes and this keeper counted as the lab's."""
        from . import guard

        snap = guard.snapshot(self.lab.unshaped(), [n.pid for n in self.lab.nodes.values()], [os.getpid()])
        return dataclasses.asdict(snap)

    def _impair(self, req: dict[str, Any]) -> dict[str, Any]:
        lab = self.lab
        a, b = req["link"]
        if (a, b) not in lab.links.link_ends and (b, a) not in lab.links.link_ends:
            links = ", ".join(f"{x}-{y}" for x, y in lab.links.link_ends)
            raise LabError(f"no link {a}-{b} in lab {lab.topology.kind} (its links: {links})")
        direction = req.get("direction", "both")
        if req.get("clear"):
            rate = next((lk.rate_bps for lk in lab.topology.links if {lk.node1, lk.node2} == {a, b}), None)
            base = Impairment.model_validate({"rate": f"{rate:.0f}bit"}) if rate else Impairment()
            dirs = {"both": [(a, b), (b, a)], "forward": [(a, b)], "reverse": [(b, a)]}[direction]
            for d in dirs:
                lab.links.replace(*d, base, "sender")
                lab.links.configured[d] = (base, "sender")
            lab.impairments = [i for i in lab.impairments if set(i.directions()).isdisjoint(dirs)]
            what = "cleared"
        else:
            item = LinkImpairment.model_validate({**req["set"], "link": [a, b], "direction": direction,
                                                  "at": req.get("at", "sender")})  # fmt: skip
            hubs = {s.name for s in lab.topology.switches if s.mode == "hub"}
            if why := item.hub_conflict(hubs):
                raise ValueError(why)
            for d in item.directions():
                imp, at = lab.links.current.get(d, (Impairment(), item.at))
                given = {k: getattr(item, k) for k in item.model_fields_set if k not in ("link", "direction", "at")}
                new = imp.model_copy(update=given)
                lab.links.replace(*d, new, item.at)
                lab.links.configured[d] = (new, item.at)
            lab.impairments.append(item)
            what = "set " + json.dumps(req["set"])
        self.events.append({"at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "link": [a, b],
                            "direction": direction, "what": what})  # fmt: skip
        self.write_state()
        return {"ok": True, "configured": self.state()["impairments"]}

    def _links(self, req: dict[str, Any]) -> dict[str, Any]:
        """The link state's own operations, as a fault schedule or a self-check drives them from another process
        (a run over several hosts): what is in force changes, the configured impairments do not (`impair` changes
        those; `restore` goes back to them). Impairments come as JSON with their shares written as percentages
        (model.impairment.percents_as_written); `step` changes only the fields it is given."""
        links = self.lab.links
        method = req.get("method")

        def imp(d: dict[str, Any] | None) -> Impairment | None:
            return None if d is None else Impairment.model_validate(percents_as_written(d))

        if method == "replace":
            a, b = req["link"]
            links.replace(a, b, imp(req["impairment"]), req.get("at", "sender"))
        elif method == "step":
            links.step(tuple(req["link"]), req.get("direction", "forward"), imp(req.get("change")))
        elif method == "set_cable":
            if req.get("state") not in ("up", "down"):
                raise ValueError(f"links set_cable: state {req.get('state')!r}, want up or down")
            links.set_cable(tuple(req["link"]), req["state"])
        elif method == "restore":
            failures = links.restore()
            self.write_state()
            return {"ok": True, "failures": failures}
        else:
            raise ValueError(f"links: method {method!r}, want replace, step, set_cable or restore")
        self.write_state()  # its cut cables
        current = [{"from": a, "to": b, "at": at, "impairment": i.model_dump(mode="json", exclude_defaults=True)}
                   for (a, b), (i, at) in sorted(links.current.items())]  # fmt: skip
        return {"ok": True, "current": current, "cut": [list(k) for k in sorted(links.cut)]}

    def _check(self, family: int = 4) -> dict[str, Any]:
        from . import selfcheck

        lines: list[str] = []
        results = selfcheck.run_all(self.lab, log=lines.append, family=family)
        self.checks = [{"at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), **r} for r in results]
        self.write_state()
        return {"ok": True, "results": results, "lines": lines, "passed": all(r["passed"] for r in results)}

    def serve(self) -> None:
        path = socket_path()
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        srv.bind(str(path))
        os.chmod(path, 0o600)
        srv.listen(4)
        srv.settimeout(1.0)
        try:
            while not self.done:
                try:
                    conn, _ = srv.accept()
                except TimeoutError:
                    continue
                with conn:
                    conn.settimeout(REQUEST_TIMEOUT)
                    data = b""
                    while not data.endswith(b"\n"):
                        chunk = conn.recv(65536)
                        if not chunk:
                            break
                        data += chunk
                    try:
                        answer = self.handle(json.loads(data or b"{}"))
                    except ValueError as exc:
                        answer = {"ok": False, "error": f"bad request: {exc}"}
                    conn.sendall(json.dumps(answer).encode() + b"\n")
        finally:
            srv.close()
            with contextlib.suppress(FileNotFoundError):
                path.unlink()


def keeper_main(req_json: str) -> int:
    """The keeper process: deploy, say so on stdout (the log), serve, tear down on destroy or SIGTERM."""
    import signal

    from .. import mnlog

    mnlog.quiet()
    k = Keeper(Request(**json.loads(req_json)))

    def stop(_sig: int, _frm: Any) -> None:
        k.done = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        k.deploy()
        print("READY", flush=True)
        k.serve()
    except BaseException as exc:
        print(f"FAILED: {exc}", flush=True)
        for f in k.teardown():
            print(f"left: {f}", flush=True)
        return 1
    failures = k.teardown()
    for f in failures:
        print(f"left: {f}", flush=True)
    return 1 if failures else 0


# -- the commands -----------------------------------------------------------------------------------------
def load_state() -> dict[str, Any] | None:
    try:
        st = json.loads(state_path().read_text())
    except (FileNotFoundError, ValueError):
        return None
    return st if ownership.alive(st["pid"], ownership.start_time(st["pid"])) else None


def need_state() -> dict[str, Any]:
    st = load_state()
    if st is None:
        raise LabError("no lab is deployed on this machine (`protolab deploy FILE|NAME` deploys one)")
    return st


def request(op: str, timeout: float = REQUEST_TIMEOUT, **args: Any) -> dict[str, Any]:
    need_state()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        try:
            s.connect(str(socket_path()))
        except OSError as exc:
            raise LabError(f"the lab keeper does not answer on {socket_path()}: {exc.strerror}") from None
        s.sendall(json.dumps({"op": op, **args}).encode() + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            chunk = s.recv(1 << 20)
            if not chunk:
                break
            data += chunk
    answer = json.loads(data or b"{}")
    if not answer.get("ok"):
        raise LabError(f"{op}: {answer.get('error', 'no answer from the lab keeper')}")
    return answer


def deploy(req: Request, out: Any = sys.stderr) -> dict[str, Any]:
    """Validate, start the keeper in its own session and wait until the lab is up; the state of the lab."""
    p = prepare(req)  # errors now, before anything is started
    if (st := load_state()) is not None:
        raise LabError(f"lab {st['name']} ({st['lab']}) is deployed already: `protolab destroy` first")
    ownership.ensure_state_dir()
    hosts = len(p.topology.hosts)
    bridges, links = len(p.topology.switches), len(p.topology.links)
    print(f"deploying {p.described}: {hosts} container{'s' * (hosts != 1)}, {bridges} bridge{'s' * (bridges != 1)}, "
          f"{links} link{'s' * (links != 1)} (log: {log_path()})", file=out, flush=True)  # fmt: skip
    for note in p.notes[:NOTES_SHOWN]:
        print(f"  --node-filter: {note}", file=out, flush=True)
    if len(p.notes) > NOTES_SHOWN:
        print(f"  --node-filter: and {len(p.notes) - NOTES_SHOWN} more routes dropped", file=out, flush=True)
    proc = spawn_logged([sys.executable, "-m", "protolab.lab.keeper", json.dumps(req.__dict__)], log_path())
    shown = [0]

    def progress(elapsed: float) -> None:
        if int(elapsed) // 5 > shown[0]:
            shown[0] = int(elapsed) // 5
            print(f"  deploying: {elapsed:.0f}s", file=out, flush=True)

    try:
        await_ready({"lab": (proc, log_path())}, READY_TIMEOUT, tick=progress)
    except NotReadyError as e:
        if e.returncode is None:
            proc.terminate()
            raise LabError(f"deploy took longer than {READY_TIMEOUT:.0f}s; stopped (log: {log_path()})") from None
        raise LabError(f"deploy failed (exit {e.returncode}):\n" + "\n".join(e.lines)) from None
    return need_state()


def destroy() -> list[str]:
    st = need_state()
    answer = request("destroy")
    deadline = time.monotonic() + 60
    while ownership.alive(st["pid"], ownership.start_time(st["pid"])) and time.monotonic() < deadline:
        time.sleep(0.1)
    return list(answer.get("failures") or [])


def node_state(st: dict[str, Any], node: str) -> dict[str, Any]:
    for n in st["nodes"]:
        if n["name"] == node:
            return n
    raise LabError(f"{node}: not a node of the deployed lab {st['name']} (its nodes: "
                   f"{', '.join(n['name'] for n in st['nodes'])})")  # fmt: skip


def exec_cmd(node: str | None, cmd: list[str], all_nodes: bool = False) -> int:
    """docker exec in one node (or every node, each prefixed with its name); the worst exit status."""
    st = load_state()
    if st is None:
        raise LabError(f"{node or '--all'}: no lab is deployed on this machine, so no node to run in "
                       "(`protolab deploy FILE|NAME` deploys one; `protolab inspect` lists its nodes)")  # fmt: skip
    targets = [n["name"] for n in st["nodes"]] if all_nodes else [node_state(st, node or "")["name"]]
    worst = 0
    for name in targets:
        argv = ["docker", "exec", *(["-it"] if sys.stdin.isatty() and not all_nodes else []),
                naming.container_name(name), *cmd]  # fmt: skip
        if all_nodes:
            r = subprocess.run(argv, capture_output=True, text=True)
            for line in (r.stdout + r.stderr).splitlines():
                print(f"{name}: {line}")
            worst = max(worst, r.returncode)
        else:
            worst = subprocess.call(argv)
    return worst


def link_end(st: dict[str, Any], spec: str) -> tuple[dict[str, Any], int]:
    """`a-b`, `a:b` or `node:interface` -> (the node, its namespace pid) of the container end of that link."""
    pids = {n["name"]: n["pid"] for n in st["nodes"]}
    a, sep, b = spec.partition(":") if ":" in spec else spec.partition("-")
    for row in st["links"]:
        for end in row["ends"]:
            if sep == ":" and end["node"] == a and end["interface"] == b:
                return end, pids[a]
        names = [e["node"] for e in row["ends"]]
        if sep and sorted(names) == sorted([a, b]):
            end = next(e for e in row["ends"] if e["node"] in pids)
            return end, pids[end["node"]]
    links = ", ".join("-".join(e["node"] for e in r["ends"]) for r in st["links"])
    raise LabError(f"{spec}: no such link in lab {st['name']} (links: {links}; or NODE:INTERFACE)")


def capture(spec: str, write: str, count: int | None, seconds: float | None, expr: list[str]) -> int:
    """tcpdump on the container end of a link, into a pcap file (or '-' for a pipe to wireshark -k -i -)."""
    st = need_state()
    end, pid = link_end(st, spec)
    argv = ["nsenter", "-t", str(pid), "-n", "tcpdump", "-i", end["interface"], "-U", "-w", write, "-n"]
    if count:
        argv += ["-c", str(count)]
    argv += expr
    print(f"capturing on {end['node']}:{end['interface']} -> {write}", file=sys.stderr, flush=True)
    try:
        return subprocess.run(argv, timeout=seconds).returncode
    except subprocess.TimeoutExpired:
        return 0
    except FileNotFoundError:
        raise LabError("tcpdump is not installed (apt-get install tcpdump; `make setup` installs it)") from None


def graph_source(what: str | None, params: dict[str, Any]) -> tuple[Topology, list[Any]]:
    """The deployed lab's topology and configured impairments, or a file/name's without deploying."""
    if what is None:
        st = need_state()
        t = prepare(Request(st["source"], node_filter=st["node_filter"])).topology
        imps = [{"from": i["from"], "to": i["to"], "at": i["at"], "impairment": i["impairment"]}
                for i in st["impairments"]]  # fmt: skip
        return t, imps
    p = prepare(Request(what, params))
    return p.topology, list(p.impairments)


def parse_params(items: list[str]) -> dict[str, Any]:
    out = {}
    for it in items:
        k, sep, v = it.partition("=")
        if not sep:
            raise SpecError(f"--param {it}: write KEY=VALUE, e.g. hosts=4")
        out[k] = yaml.safe_load(v)
    return out


def impairment_args(items: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in items.items() if v is not None}


def inspect_text(st: dict[str, Any]) -> str:
    lines = [f"lab {st['name']} ({st['lab']}), up since {st['deployed_at']} (deployed in {st['deploy_seconds']} s), "
             f"keeper pid {st['pid']}, impairment backend {st['backend']}", "", "nodes:"]  # fmt: skip
    addrs: dict[str, list[str]] = {}
    for row in st["links"]:
        for e in row["ends"]:
            if e["address"]:
                v6 = f" {e['address6']}" if e.get("address6") else ""
                addrs.setdefault(e["node"], []).append(f"{e['interface']} {e['address']}{v6}")
    for n in st["nodes"]:
        for x in n.get("interfaces", []):
            v6 = f" {x['address6']}" if x.get("address6") else ""
            addrs.setdefault(n["name"], []).append(f"{x['name']} {x['address'] or '(no address)'}{v6}")
        cpu = f", {n['cpus']} cores" if n["cpus"] else ""
        lines.append(f"  {n['name']:<10} {n['role']:<8} {n['image']}{cpu}  {'; '.join(addrs.get(n['name'], []))}")
    lines += ["", "links:"]
    imps: dict[tuple[str, str], str] = {(i["from"], i["to"]): json.dumps(i["impairment"]) for i in st["impairments"]}
    cut = {tuple(c) for c in st["cut"]}
    for row in st["links"]:
        a, b = row["link"]
        rate = f"{row['rate_bps'] / 1e6:g} Mbit/s" if row["rate_bps"] else "unshaped"
        state = "DOWN" if (a, b) in cut else "up"
        lines.append(f"  {a}-{b:<10} {rate:<14} {state}  segment {row['segment']}")
        for d in ((a, b), (b, a)):
            if d in imps:
                lines.append(f"      {d[0]}->{d[1]}: {imps[d]}")
    if st["checks"]:
        lines += ["", f"last self-check ({st['checks'][0]['at']}):"]
        for r in st["checks"]:
            from .selfcheck import summarize

            lines.append(f"  {r['from']}->{r['to']}: " + (r.get("skipped") or summarize(r)))
    return "\n".join(lines)


def client_main(argv: list[str]) -> int:
    """A keeper's client on its own host, for a machine that reaches the host over SSH (lab.parts.Part): `--state`
    prints the keeper's state (null: none running), `--client REQUEST_JSON` one request's answer, as JSON."""
    if argv[0] == "--state":
        print(json.dumps(load_state()))
        return 0
    req = json.loads(argv[1])
    try:
        print(json.dumps(request(req.pop("op"), **req)))
    except LabError as exc:
        print(json.dumps({"ok": False, "error": str(exc)}))
    return 0


if __name__ == "__main__":
    sys.exit(client_main(sys.argv[1:]) if sys.argv[1].startswith("--") else keeper_main(sys.argv[1]))
