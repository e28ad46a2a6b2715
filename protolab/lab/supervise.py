"""A lab over several testbed hosts from the command line: `protolab deploy ... --inventory FILE | --emulate-hosts
a,b`, then `inspect`, `exec`, `check` and `destroy` beside it.

A supervisor process holds it: it takes this machine's lab lock (so no run, deploy or clean interleaves), starts
emulated hosts when asked (their engines and namespaces in its ledger), deploys the parts (protolab.lab.parts),
checks the stitches (protolab.lab.testbed.check_stitches), writes multilab.json and waits; SIGTERM (`protolab
destroy`) tears the parts down, then the emulated hosts.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from .. import naming
from ..errors import LabError, ProtolabError
from ..jsonio import write_json
from ..testbed import placement
from ..topo import Topology
from . import keeper
from .parts import (
    READY_TIMEOUT,
    MultiLab,
    Part,
    deploy,
    state_root,
    supervisor_log,
    supervisor_state,
    whole_topology,  # fmt: skip
)
from .testbed import check_stitches


def load_supervised() -> dict[str, Any] | None:
    """The state of a lab over several hosts held by a live supervisor, else None."""
    from .. import ownership

    try:
        st = json.loads(supervisor_state().read_text())
    except (FileNotFoundError, ValueError):
        return None
    return st if ownership.alive(st["pid"], st.get("start")) else None


def supervise(request: dict[str, Any]) -> int:
    """The supervisor process (`python -m protolab.lab.supervise REQUEST_JSON`); prints READY once the lab is up."""
    import signal

    from .. import ownership
    from ..jsonio import new_run_id
    from ..testbed import emulation

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
        req = keeper.Request(request["source"], request.get("params") or {}, request.get("node_filter") or [])
        p = keeper.prepare(req)
        whole = whole_topology(p)
        inventory_path = Path(request["inventory"]) if request.get("inventory") else None
        emulated = request.get("emulate") or []
        if emulated:
            hosts = emulation.start(emulated, ledger, ssh=bool(request.get("ssh")))
            for ref in sorted(set(p.images.values())):
                emulation.load_image(hosts, ref)
            inventory_path = emulation.write_inventory(hosts, state_root() / "emulated-inventory.yml",
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


def start_supervised(request: dict[str, Any], out: Any = sys.stderr) -> dict[str, Any]:
    """`protolab deploy ... --inventory/--emulate-hosts`: start the supervisor, follow its log until READY."""
    if (st := load_supervised()) is not None:
        raise LabError(f"lab {st['name']} over {', '.join(st['parts'])} is deployed already: `protolab destroy` first")
    if keeper.load_state() is not None:
        raise LabError("a lab is deployed on this machine already: `protolab destroy` first")
    whole_topology(keeper.prepare(keeper.Request(request["source"], request.get("params") or {},
                                                 request.get("node_filter") or [])))  # fmt: skip
    if request.get("inventory"):
        placement.load_inventory(request["inventory"])  # a broken inventory fails here, before anything starts
    state_root().mkdir(parents=True, exist_ok=True)
    proc = keeper.spawn_logged([sys.executable, "-m", "protolab.lab.supervise", json.dumps(request)], supervisor_log())

    def echo(_: str, line: str) -> None:
        if line not in ("READY", "DONE") and not line.startswith("FAILED"):
            print(f"  {line}", file=out, flush=True)

    try:
        keeper.await_ready({"supervisor": (proc, supervisor_log())}, READY_TIMEOUT + 120, echo=echo)
    except keeper.NotReadyError as e:
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

    from .. import ownership

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
    req = keeper.Request(st["source"], st.get("params") or {}, st.get("node_filter") or [])
    results = check_stitches(attach(st), whole_topology(keeper.prepare(req)), log=log)
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
    from ..testbed import reach

    engine = reach.engine(_part_of(host, st["parts"][host]).host)  # a remote host's through its session
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
        lines += ["", f"== {host} ==", keeper.inspect_text(sub) if sub else "(its keeper is not running)"]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(supervise(json.loads(sys.argv[1])))
