"""Monitoring a lab over several testbed hosts (issue 18, item 4): a Prometheus on each host scrapes that host's
nodes, and the run's Prometheus federates them, so recording rules, dashboards and a run's measurements read one
Prometheus as on one machine.

- Each host's Prometheus is the monitor image (protolab/monitor, the same configuration and rules) run on the
  host's engine in the host's network namespace (`network_mode: host`), listening on its underlay address at
  `protolab_prometheus_port` (9190). It scrapes its nodes' agents at their management addresses (no Docker DNS on
  the host network) from a file_sd file this process writes.
- The run's Prometheus has a `federate` job (images/monitor/prometheus.yml) whose targets are the hosts'
  Prometheus, read from targets/federate/*.json: a subdirectory, so the agent job's targets/*.json glob never
  reads it. It asks /federate for the agent job's series with honor_labels, so a node's series keep their own
  labels (job, instance, node, role, run) and every query of the one-machine case holds.
- Emulated hosts (protolab.testbed.emulation) sit behind an underlay bridge in a namespace of their own; this machine's
  namespace, where the run's Prometheus's packets leave Docker's bridge, reaches them through the emulation's
  control veth into that bridge.

    proms = [federation.start(h, run_id, ledger) for h in inventory.hosts]
    federation.write_federation(proms)                                # the run's Prometheus scrapes their /federate
    proms[0].write_targets(groups)                                 # that host's nodes
    federation.wait_federated(Prometheus(), {"h1", "h3"})
"""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import naming, ownership
from ..errors import LabError, MonitoringError
from ..jsonio import write_json
from . import placement, reach

IMAGE = "protolab/monitor:latest"
HOSTS_DIR = "hosts"  # <state dir>/hosts/<host>/: an emulated host's Prometheus's targets, mounted into it
REMOTE_ROOT = Path("/run/protolab-hostmon")  # on a host reached over SSH: <root>/<host>/, the same


def remote_root() -> Path:
    """This instance's REMOTE_ROOT (naming.scoped_path)."""
    return naming.scoped_path(REMOTE_ROOT)


FEDERATE_FILE = "hosts.json"  # in <run's targets>/federate/
FEDERATED_JOB = "protolab-agent"
# least privilege (issue "Trust"): the image's user `prometheus` needs no capability (its port is above 1024, its
# storage its own); peak here 43 MiB and 9 tasks (the run's own Prometheus in a smoke run)
PRIVILEGES: dict[str, Any] = dict(cap_drop=["ALL"], security_opt=["no-new-privileges"], pids_limit=512,
                                  mem_limit=2 << 30, memswap_limit=2 << 30)  # fmt: skip
WRITE_SCRIPT = 'cat > "$1.tmp" && mv -f -- "$1.tmp" "$1"'  # stdin to file $1, whole (the path: an argument, not code)


@dataclass
class HostPrometheus:
    host: placement.TestbedHost
    container: str
    targets_dir: Path

    @property
    def address(self) -> str:
        """host:port where the run's Prometheus reaches this one."""
        return f"{self.host.underlay}:{self.host.prometheus_port}"

    @property
    def remote(self) -> bool:
        return self.host.netns is None

    def write_targets(self, groups: list[dict[str, Any]]) -> None:
        """This host's nodes as file_sd target groups (written whole, then moved in place; on a host reached over
        SSH, through its session)."""
        if not self.remote:
            write_json(self.targets_dir / "lab.json", groups)
            return
        path = self.targets_dir / "lab.json"
        p = subprocess.run(reach.command(self.host, ["sh", "-c", WRITE_SCRIPT, "sh", str(path)]),
                           input=json.dumps(groups), capture_output=True, text=True, timeout=60)  # fmt: skip
        if p.returncode != 0:
            raise MonitoringError(f"testbed host {self.host.name}: its Prometheus's targets not written: "
                                  f"{p.stderr.strip()[-200:]}")  # fmt: skip

    def remove(self) -> list[str]:
        """A remote host's Prometheus and its targets folder (an emulated host's go with its engine and the run's
        state); what could not be removed."""
        import docker
        import docker.errors

        if not self.remote:
            return []
        failures = []
        try:
            docker.DockerClient(base_url=reach.engine(self.host)).containers.get(self.container).remove(force=True)
        except docker.errors.NotFound:
            pass
        except Exception as exc:  # noqa: BLE001 (reported: the run's teardown lists what it left)
            failures.append(f"{self.host.name}: container {self.container}: {exc}")
        rm = subprocess.run(reach.command(self.host, ["rm", "-rf", str(self.targets_dir)]), capture_output=True,
                            text=True, timeout=60)  # fmt: skip
        if rm.returncode != 0:
            failures.append(f"{self.host.name}: {self.targets_dir}: {rm.stderr.strip()[-200:]}")
        return failures


def start(host: placement.TestbedHost, run_id: str, ledger: ownership.Ledger, state_dir: Path) -> HostPrometheus:
    """The host's Prometheus on its engine, in its network namespace, listening on its underlay address; its
    targets file in <state_dir>/hosts/<host>/ (an emulated host shares this machine's files)."""
    import docker
    import docker.errors

    if not host.underlay:
        raise LabError(f"testbed host {host.name}: no underlay address for its Prometheus to listen on")
    name = f"plab-prometheus-{host.name}"
    engine = reach.engine(host)  # a remote host's through its SSH session
    if host.netns is None:  # its targets folder on the host
        d = remote_root() / host.name
        subprocess.run(reach.command(host, ["mkdir", "-p", str(d)]), check=True, capture_output=True, timeout=60)
    else:
        d = state_dir / HOSTS_DIR / host.name
        d.mkdir(parents=True, exist_ok=True)
    HostPrometheus(host, name, d).write_targets([])
    client = docker.DockerClient(base_url=engine)
    # a remote host's with the host itself: `clean` reaches it again over a session of its own (sweep_remote)
    remote = {"host": host.model_dump(mode="json")} if host.netns is None else {}
    ledger.add("container", name=name, engine=engine, **remote)
    try:
        client.containers.run(
            IMAGE, name=name, detach=True, network_mode="host",
            labels={naming.LABEL: "true", naming.RUN_LABEL: run_id, "protolab.role": "host-prometheus"}, **PRIVILEGES,
            volumes={str(d): {"bind": "/etc/prometheus/targets", "mode": "ro"}},
            command=["--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.path=/prometheus",
                     "--storage.tsdb.retention.time=2d",
                     f"--web.listen-address={host.underlay}:{host.prometheus_port}"],
        )  # fmt: skip
    except docker.errors.ImageNotFound:
        raise LabError(f"testbed host {host.name}: no image {IMAGE} on its engine ({host.engine})") from None
    except docker.errors.APIError as exc:
        raise LabError(f"testbed host {host.name}: its Prometheus did not start: {exc.explanation or exc}") from None
    return HostPrometheus(host, name, d)


def wait_ready(proms: list[HostPrometheus], timeout: float = 60) -> None:
    """Until each host's Prometheus answers /-/ready from this machine (through the control link)."""
    import requests

    deadline, waiting = time.monotonic() + timeout, list(proms)
    while waiting and time.monotonic() < deadline:
        for p in list(waiting):
            try:
                if requests.get(f"http://{p.address}/-/ready", timeout=2).status_code == 200:
                    waiting.remove(p)
            except requests.RequestException:
                pass
        if waiting:
            time.sleep(0.3)
    if waiting:
        names = ", ".join(f"{p.host.name} ({p.address})" for p in waiting)
        raise MonitoringError(f"the Prometheus of {names} did not answer within {timeout:g}s")


def federation_groups(proms: list[HostPrometheus]) -> list[dict[str, Any]]:
    """The run's federate job's file_sd groups: one target per host, labelled with the host's name."""
    return [{"targets": [p.address], "labels": {"testbed_host": p.host.name}} for p in proms]


def forget(state_dir: Path, proms: list[HostPrometheus] | None = None) -> list[str]:
    """The run's end: nothing federated, the hosts' targets files gone, and a remote host's Prometheus removed
    (an emulated host's goes with its engine); what could not be removed."""
    import shutil

    write_federation([], state_dir)
    shutil.rmtree(state_dir / HOSTS_DIR, ignore_errors=True)
    return [f for p in proms or [] for f in p.remove()]


def write_federation(proms: list[HostPrometheus], state_dir: Path) -> Path:
    """<state_dir>/targets/federate/hosts.json, which the run's Prometheus reads (an empty list stops it)."""
    return write_json(state_dir / "targets" / "federate" / FEDERATE_FILE, federation_groups(proms))


def wait_federated(prom: Any, nodes: set[str], timeout: float = 60) -> None:
    """Until the run's Prometheus has each node's agent `up` through federation (honor_labels keeps `node`)."""
    deadline, missing = time.monotonic() + timeout, set(nodes)
    while time.monotonic() < deadline:
        got = {r["metric"].get("node") for r in prom.query(f'up{{job="{FEDERATED_JOB}"}} == 1')}
        missing = nodes - got
        if not missing:
            return
        time.sleep(0.5)
    raise MonitoringError(f"the run's Prometheus has no federated agent of {sorted(missing)} within {timeout:g}s "
                          "(each host's Prometheus scrapes its nodes; the run's federates them)")  # fmt: skip


def node_groups(nodes: list[dict[str, Any]], run_id: str, extra_ports: dict[str, list[int]] | None = None
                ) -> list[dict[str, Any]]:  # fmt: skip
    """A host's file_sd groups from its keeper's nodes (name, role, mgmt_ip): the labels Lab.targets gives, the
    agent's port and `extra_ports` per node ("*": every node), at the management address."""
    extra = extra_ports or {}
    out = []
    for n in nodes:
        ports = sorted({naming.AGENT_PORT, *extra.get(n["name"], []), *extra.get("*", [])})
        out.append({"targets": [f"{n['mgmt_ip']}:{p}" for p in ports],
                    "labels": {"node": n["name"], "role": n.get("role", "host"), "run": run_id}})  # fmt: skip
    return out


def sweep_remote(failures: list[str]) -> list[str]:
    """`protolab clean`, before any SSH session ends: the Prometheus of every remote host that a run's ledger
    records (a run killed before its teardown), removed over a live session (reopened when the kept-open one is
    gone), with its targets folder there. A host that cannot be reached goes to `failures` (its Prometheus left
    running there), never to what was removed. Returns what was done."""
    import docker
    import docker.errors

    done = []
    for ledger in ownership.ledgers():
        for e in ledger.entries():
            if e["kind"] != "container" or not e.get("host"):
                continue
            try:
                host = placement.TestbedHost.model_validate(e["host"])
            except ValueError as exc:
                failures.append(f"container {e['name']} (run {ledger.run_id}): its host record does not read: {exc}")
                continue
            where = f"testbed host {host.name}: container {e['name']} (run {ledger.run_id})"
            try:
                c = docker.DockerClient(base_url=reach.engine(host, fresh=True)).containers.get(e["name"])
                if c.labels.get(naming.RUN_LABEL) == e["run"]:
                    c.remove(force=True)
                    done.append(f"removed {where}")
            except docker.errors.NotFound:
                pass
            except Exception as exc:  # noqa: BLE001 (not reached: left there, and said so)
                failures.append(f"{where}: not reached, left on the host: {str(exc)[-200:]}")
                continue
            d = remote_root() / host.name
            try:
                rm = subprocess.run(reach.command(host, ["rm", "-rf", "--", str(d)]), capture_output=True,
                                    text=True, timeout=60)  # fmt: skip
                if rm.returncode != 0:
                    failures.append(f"testbed host {host.name}: {d}: {rm.stderr.strip()[-200:]}")
            except subprocess.TimeoutExpired:
                failures.append(f"testbed host {host.name}: {d}: not removed within 60 s (left on the host)")
    return done
