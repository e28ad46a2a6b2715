"""Remove everything the tool ever created on this machine, and list what is left.

Works from names and labels alone (see `protolab.naming`), so it also cleans up after a runner that was
killed with SIGKILL: containers and networks labelled `protolab.managed`, the compose project, root-
namespace links named `plab-*`, iptables/ip6tables rules commented `protolab`, nftables tables named
`protolab*`, node shells marked with PROTOLAB_NODE, and the state directory's lab targets.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

from . import firewall, naming
from .shell import CommandError, run


def _docker():
    import docker

    try:
        client = docker.from_env()
        client.ping()
        return client
    except Exception:
        return None


def marked_processes(nodes: set[str] | None = None) -> list[int]:
    """PIDs of node shells the tool started (all, or those of the named nodes)."""
    pids = []
    marker = f"{naming.PROCESS_ENV}=".encode()
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            env = (d / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        for var in env:
            if var.startswith(marker) and (nodes is None or var[len(marker) :].decode(errors="replace") in nodes):
                pids.append(int(d.name))
    return pids


def kill(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def lab_links() -> list[str]:
    out = run(["ip", "-o", "link", "show"], check=False)
    names = []
    for line in out.splitlines():
        parts = line.split(":", 2)
        if len(parts) > 1:
            name = parts[1].strip().split("@")[0]
            if name.startswith(naming.PREFIX):
                names.append(name)
    return names


def nft_tables() -> list[str]:
    try:
        out = run(["nft", "list", "tables"])
    except CommandError:
        return []
    return [" ".join(line.split()[1:3]) for line in out.splitlines()
            if len(line.split()) == 3 and line.split()[2].startswith(naming.NFT_TABLE_PREFIX)]  # fmt: skip


def iptables_rules() -> list[str]:
    return [f"{tool} -t {table} {rule}" for tool, table, rule in firewall.our_rules()]


def leftovers() -> list[str]:
    """Everything of ours still on the machine, one line each (empty = clean)."""
    found = []
    client = _docker()
    if client is not None:
        for c in client.containers.list(all=True, filters={"label": f"{naming.LABEL}=true"}):
            found.append(f"container {c.name}")
        for c in client.containers.list(
            all=True, filters={"label": f"com.docker.compose.project={naming.COMPOSE_PROJECT}"}
        ):
            found.append(f"container {c.name}")
        for n in client.networks.list(filters={"label": f"{naming.LABEL}=true"}):
            found.append(f"docker network {n.name}")
    found += [f"link {n}" for n in lab_links()]
    found += [f"rule {r}" for r in iptables_rules()]
    found += [f"nft table {t}" for t in nft_tables()]
    found += [f"process {p}" for p in marked_processes()]
    return sorted(set(found))


def clean(verbose: bool = True) -> list[str]:
    """Remove it all; return what was removed."""
    from .monitor import down

    done: list[str] = []
    for pid in marked_processes():
        try:
            os.kill(pid, signal.SIGKILL)
            done.append(f"killed node shell {pid}")
        except ProcessLookupError:
            pass
    client = _docker()
    if client is not None:
        try:
            down()
        except Exception as exc:  # compose missing or broken: the label sweep below still removes it
            done.append(f"(compose down failed: {str(exc)[:120]})")
        for label in (f"{naming.LABEL}=true", f"com.docker.compose.project={naming.COMPOSE_PROJECT}"):
            for c in client.containers.list(all=True, filters={"label": label}):
                c.remove(force=True)
                done.append(f"removed container {c.name}")
        for n in client.networks.list(filters={"label": f"{naming.LABEL}=true"}):
            n.reload()
            for cid in n.attrs.get("Containers") or {}:
                try:
                    n.disconnect(cid, force=True)
                except Exception:
                    pass
            n.remove()
            done.append(f"removed docker network {n.name}")
    # Bridges first (their IFBs and ports go with them or after).
    links = lab_links()
    for name in sorted(links, key=lambda n: ("-eth" in n, n)):
        if run(["ip", "link", "del", name], check=False) == "" and name not in lab_links():
            done.append(f"deleted link {name}")
    n = firewall.remove_rules()
    if n:
        done.append(f"removed {n} iptables rule(s)")
    for t in nft_tables():
        run(["nft", "delete", "table", *t.split()], check=False)
        done.append(f"deleted nft table {t}")
    targets = Path(os.environ.get("PROTOLAB_STATE_DIR", naming.STATE_DIR)) / "targets" / "lab.json"
    if targets.exists():
        targets.unlink()
    if verbose:
        for line in done:
            print(line)
    return done
