"""How this machine reaches a testbed host's shell (issue 18, item 3).

An emulated host (protolab.testbed.emulation, inventory variable protolab_netns) is a network namespace here: a command
runs in it with `nsenter --net`. Any other host is reached over SSH, through one OpenSSH session per host kept
open (ControlMaster, its socket under /run/protolab-hosts/ssh/): the first command opens it, the next ones reuse
it (no new handshake per command), and close() ends it. The login, port, key and known_hosts file come from the
inventory (ansible_user, ansible_port, ansible_ssh_private_key_file, protolab_known_hosts); BatchMode, so a
missing key fails at once instead of asking for a password.

    argv = reach.command(host, ["ip", "-br", "addr"])   # a command on the host, as subprocess argv
    reach.close(host)                                    # its SSH session, if one was opened
"""

from __future__ import annotations

import contextlib
import shlex
import subprocess
from pathlib import Path
from typing import Any

from ..errors import LabError
from ..shell import in_netns
from . import placement
from .placement import TestbedHost

CONTROL_DIR = Path("/run/protolab-hosts/ssh")
PERSIST_SECONDS = 600  # an idle session stays open this long (a run's phases ask again within seconds)
CONNECT_TIMEOUT = 10


def control_path(host: TestbedHost) -> Path:
    return CONTROL_DIR / f"{host.name}.ctl"


def ssh(host: TestbedHost) -> list[str]:
    """ssh's argv up to the command: the kept-open session, the inventory's login, port, key and host keys."""
    if not host.address:
        raise LabError(f"testbed host {host.name}: no ansible_host to reach it at over SSH")
    argv = ["ssh", "-o", "BatchMode=yes", "-o", f"ConnectTimeout={CONNECT_TIMEOUT}", "-o", "ServerAliveInterval=10",
            "-o", "ControlMaster=auto", "-o", f"ControlPath={control_path(host)}",
            "-o", f"ControlPersist={PERSIST_SECONDS}", "-p", str(host.ssh_port)]  # fmt: skip
    if host.ssh_key:
        argv += ["-i", host.ssh_key, "-o", "IdentitiesOnly=yes"]
    if host.known_hosts:
        argv += ["-o", f"UserKnownHostsFile={host.known_hosts}", "-o", "StrictHostKeyChecking=yes"]
    return [*argv, destination(host), "--"]


def destination(host: TestbedHost) -> str:
    """ssh's `user@address`, checked again here (placement types both): a word that ssh could take for an option
    never reaches its argv."""
    dest = f"{host.user}@{host.address}"
    if dest.startswith("-") or any(c.isspace() for c in dest) or placement.USER_RE.fullmatch(host.user) is None:
        raise LabError(f"testbed host {host.name}: {dest!r} is not a login at an address")
    return dest


def command(host: TestbedHost, cmd: list[str]) -> list[str]:
    """`cmd` as it runs on the host: in an emulated host's network namespace, else over its SSH session (the
    words quoted for the remote shell, so each arrives as one argument)."""
    if host.netns is not None:
        return in_netns(cmd, host.netns)
    argv = ssh(host)  # refused before anything is made, for a host with no address
    CONTROL_DIR.mkdir(parents=True, exist_ok=True)
    return [*argv, shlex.join(cmd)]


def copy_images(engines: dict[str, str], refs: set[str], log: Any = print) -> None:
    """Each image an engine lacks, copied from this machine's (nothing is pulled): `docker save` here once per
    image, then `docker load` into every engine that lacks it at the same time. `engines` maps a host's name to
    its engine as this machine reaches it (engine())."""
    import tempfile

    for ref in sorted(refs):
        inspect = {n: subprocess.run(["docker", "-H", e, "image", "inspect", ref], capture_output=True)
                   for n, e in engines.items()}  # fmt: skip
        lacking = {n: engines[n] for n, p in inspect.items() if p.returncode != 0}
        if not lacking:
            continue
        log(f"copying image {ref} to {', '.join(sorted(lacking))}")
        with tempfile.NamedTemporaryFile(prefix="plab-image-", suffix=".tar") as tar:
            save = subprocess.run(["docker", "save", "-o", tar.name, ref], capture_output=True, text=True)
            if save.returncode != 0:
                raise LabError(f"could not save image {ref}: {save.stderr.strip()}")
            loads = [(n, subprocess.Popen(["docker", "-H", e, "load", "-q", "-i", tar.name],
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
                     for n, e in sorted(lacking.items())]  # fmt: skip
            failed = []
            for n, p in loads:
                _out, err = p.communicate()
                if p.returncode != 0:
                    failed.append(f"{n}: {err.strip()[-200:]}")
        if failed:
            raise LabError(f"image {ref} not copied to testbed host(s): " + "; ".join(failed))


def engine(host: TestbedHost, fresh: bool = False) -> str:
    """The host's Docker engine as this machine reaches it: an emulated host's own socket; a remote host's
    `unix://` engine through its SSH session (the socket forwarded to one here, OpenSSH's -O forward on the open
    session); a `tcp://` endpoint as it is. `fresh`: the kept-open session checked first (`ssh -O check`), and
    opened again with its forward when it is gone (a socket a dead session left answers nothing)."""
    if host.netns is not None or not host.engine.startswith("unix://"):
        return host.engine
    local = CONTROL_DIR / f"{host.name}.docker.sock"
    if fresh and local.exists():
        check = subprocess.run([*ssh(host)[:-2], "-O", "check", "--", destination(host)], capture_output=True,
                               timeout=30)  # fmt: skip
        if check.returncode != 0:
            for stale in (local, control_path(host)):
                with contextlib.suppress(FileNotFoundError):
                    stale.unlink()
    if not local.exists():
        subprocess.run(command(host, ["true"]), check=True, capture_output=True, timeout=60)  # the session, open
        p = subprocess.run([*ssh(host)[:-2], "-O", "forward", "-L", f"{local}:{host.engine.removeprefix('unix://')}",
                            "--", destination(host)], capture_output=True, text=True, timeout=30)  # fmt: skip
        if p.returncode != 0:
            raise LabError(f"testbed host {host.name}: cannot forward its engine {host.engine}: {p.stderr.strip()}")
    return f"unix://{local}"


def close(host: TestbedHost) -> None:
    """End the host's kept-open SSH session (nothing when none is open, or for an emulated host)."""
    if host.netns is not None or not control_path(host).exists():
        return
    subprocess.run([*ssh(host)[:-2], "-O", "exit", "--", destination(host)], capture_output=True, timeout=30)
    with contextlib.suppress(FileNotFoundError):
        (CONTROL_DIR / f"{host.name}.docker.sock").unlink()  # its engine's forward ended with the session
    _tidy()


def close_all() -> list[str]:
    """`protolab clean`: every kept-open session ended (by its control socket alone), their folder removed."""
    done = []
    for ctl in sorted(CONTROL_DIR.glob("*.ctl")) if CONTROL_DIR.is_dir() else []:
        subprocess.run(["ssh", "-o", f"ControlPath={ctl}", "-O", "exit", "x"], capture_output=True, timeout=30)
        with contextlib.suppress(FileNotFoundError):
            ctl.unlink()  # a master that was gone already leaves its socket file
        with contextlib.suppress(FileNotFoundError):
            (CONTROL_DIR / f"{ctl.stem}.docker.sock").unlink()
        done.append(f"ended the SSH session to testbed host {ctl.stem}")
    _tidy()
    return done


def _tidy() -> None:
    """The sessions' folder, and the hosts' state root above it, removed once empty."""
    for d in (CONTROL_DIR, CONTROL_DIR.parent):
        with contextlib.suppress(OSError):
            d.rmdir()
