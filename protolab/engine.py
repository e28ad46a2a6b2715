"""The Docker engine and the host's links as protolab uses them: a client that answers, the management
network, labelled objects, and link names and indexes. Imported by lab, monitor, ownership and cleanup
(none of which import each other for these)."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from . import naming
from .shell import run


def client() -> Any:
    """A Docker client that answers, or DockerUnreachableError."""
    import docker

    from .errors import DockerUnreachableError

    try:
        c = docker.from_env(timeout=20)
        c.ping()
        return c
    except Exception as exc:  # docker.errors.DockerException, requests' ConnectionError, ...
        raise DockerUnreachableError(str(exc).splitlines()[0][:200]) from None


def ensure_mgmt_network(docker_client: Any, ledger: Any = None) -> Any:
    """The management network: internal (no route out), labelled, shared by the agents and Prometheus;
    recorded in `ledger` (an ownership.Ledger) when this call makes it."""
    import docker.errors

    try:
        return docker_client.networks.get(naming.MGMT_NETWORK)
    except docker.errors.NotFound:
        entry = ledger.add("network", name=naming.MGMT_NETWORK) if ledger else None
        try:
            return docker_client.networks.create(naming.MGMT_NETWORK, driver="bridge", internal=True,
                                                 labels={naming.LABEL: "true"})  # fmt: skip
        except docker.errors.APIError:
            if ledger and entry:
                ledger.gone(entry)
            raise


STALE_ENDPOINTS_RETRY_SECONDS = 1.0  # one more try after this: an endpoint being deleted may just be late


def remove_network(docker_client: Any, name: str, remove: bool = True) -> bool:
    """Whether our (labelled) network `name` exists; with remove, disconnect everything from it and remove it.

    Docker can count endpoints on a network that no container has any more (its libnetwork store raced when
    containers on the network were removed in parallel): removal then fails with "has active endpoints" while
    inspect lists none. That is tried once more after a second (an endpoint still being deleted is then gone),
    then said as a LabError naming the network and the fix, a dockerd restart, never as a bare API error."""
    import time

    import docker.errors

    from .errors import LabError

    try:
        net = docker_client.networks.get(name)
    except docker.errors.NotFound:
        return False
    if net.attrs.get("Labels", {}).get(naming.LABEL) != "true":
        return False
    if not remove:
        return True
    for attempt in (1, 2):
        net.reload()
        listed = list(net.attrs.get("Containers") or {})
        for cid in listed:
            with contextlib.suppress(docker.errors.APIError):
                net.disconnect(cid, force=True)
        try:
            net.remove()
            return True
        except docker.errors.NotFound:
            return True  # removed meanwhile (another clean)
        except docker.errors.APIError as exc:
            if "active endpoints" not in str(exc):
                raise
            if attempt == 1:
                time.sleep(STALE_ENDPOINTS_RETRY_SECONDS)
                continue
            raise LabError(
                f"docker network {name} cannot be removed: Docker still counts endpoints on it"
                + (f" ({len(listed)} listed and force-disconnected)" if listed else ", though it lists none")
                + ". That is Docker's own bookkeeping gone wrong (containers on one network removed in parallel "
                "can leave it so); only restarting dockerd clears it: restart it (`systemctl restart docker`, or "
                "stop and start dockerd), then run `protolab clean` again"
            ) from None
    return True


def labelled(docker_client: Any, labels: list[str], remove: bool = False) -> list[str]:
    """Containers and networks carrying all of `labels` ("key=value"), one line each; removed with remove."""
    found = []
    for c in docker_client.containers.list(all=True, filters={"label": labels}):
        found.append(f"container {c.name}")
        if remove:
            c.remove(force=True)
    for n in docker_client.networks.list(filters={"label": labels}):
        found.append(f"docker network {n.name}")
        if remove:
            remove_network(docker_client, n.name)
    return found


def ifindex(name: str, netns_pid: int | None = None) -> int | None:
    """The interface's index (in the namespace of netns_pid; None: the root namespace), None if absent."""
    path = Path(f"/sys/class/net/{name}/ifindex")
    if netns_pid is None:
        try:
            return int(path.read_text())
        except (OSError, ValueError):
            return None
    out = run(["nsenter", "-t", str(netns_pid), "-n", "cat", str(path)], check=False).strip()
    return int(out) if out.isdigit() else None


def links_with_prefix(prefix: str) -> list[str]:
    """Names of the root namespace's links that start with prefix."""
    out = run(["ip", "-o", "link", "show"], check=False)
    names = []
    for line in out.splitlines():
        parts = line.split(":", 2)
        if len(parts) > 1:
            name = parts[1].strip().split("@")[0]
            if name.startswith(prefix):
                names.append(name)
    return names
