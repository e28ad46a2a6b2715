"""Running host commands with errors that say what failed (command, exit code, stderr)."""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Sequence


class CommandError(RuntimeError):
    def __init__(self, cmd: Sequence[str], code: int, stderr: str) -> None:
        self.cmd, self.code, self.stderr = list(cmd), code, stderr
        super().__init__(f"`{shlex.join(cmd)}` exited {code}: {stderr.strip() or '(no output)'}")


def run(cmd: Sequence[str], check: bool = True, timeout: float = 120, input: str | None = None) -> str:
    """Run a command, return stdout; raise CommandError with stderr when it fails and check is set."""
    try:
        p = subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout, input=input)
    except FileNotFoundError:
        raise CommandError(cmd, 127, f"{cmd[0]}: not installed (run `make setup`)") from None
    except subprocess.TimeoutExpired:
        raise CommandError(cmd, -1, f"timed out after {timeout:g}s") from None
    if check and p.returncode != 0:
        raise CommandError(cmd, p.returncode, p.stderr or p.stdout)
    return p.stdout


def ok(cmd: Sequence[str], timeout: float = 60) -> bool:
    """True when the command exits 0 (for probes)."""
    try:
        return subprocess.run(list(cmd), capture_output=True, timeout=timeout).returncode == 0
    except (FileNotFoundError, subprocess.TimeoutExpired):
        return False


def in_netns(cmd: Sequence[str], ns: str | None = None, pid: int | None = None) -> list[str]:
    """`cmd` in a network namespace: a named one (/run/netns/NS), or a process's (`pid`, e.g. a container's);
    neither: as it is. `nsenter --net` rather than `ip netns exec`, which remounts /sys for the namespace and so
    hides the cgroup v1 hierarchies from what runs in it (a Docker engine refuses to start)."""
    if pid is not None:
        return ["nsenter", "-t", str(pid), "-n", *cmd]
    return ["nsenter", f"--net=/run/netns/{ns}", *cmd] if ns else list(cmd)
