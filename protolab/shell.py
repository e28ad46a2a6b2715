"""Running host commands with errors that say what failed (command, exit code, stderr).

`ok` is for probes whose caller treats "no" and "could not ask" alike (is an image pullable?). A remover must
not: `probe` says yes or no only when the command answered, and raises CannotTellError when it did not (not
installed, timed out, or an answer that is neither yes nor no, such as a held xtables lock).
"""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Collection, Mapping, Sequence


class CommandError(RuntimeError):
    def __init__(self, cmd: Sequence[str], code: int, stderr: str) -> None:
        self.cmd, self.code, self.stderr = list(cmd), code, stderr
        super().__init__(f"`{shlex.join(cmd)}` exited {code}: {stderr.strip() or '(no output)'}")


class CannotTellError(CommandError):
    """A probe that did not answer yes or no: whether the object exists is unknown."""


def run(cmd: Sequence[str], check: bool = True, timeout: float = 120, input: str | None = None,
        env: Mapping[str, str] | None = None) -> str:  # fmt: skip
    """Run a command, return stdout; raise CommandError with stderr when it fails and check is set."""
    try:
        p = subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout, input=input,
                           env=dict(env) if env is not None else None)  # fmt: skip
    except FileNotFoundError:
        raise CommandError(cmd, 127, f"{cmd[0]}: not installed (run `make setup`)") from None
    except subprocess.TimeoutExpired:
        raise CommandError(cmd, -1, f"timed out after {timeout:g}s") from None
    if check and p.returncode != 0:
        raise CommandError(cmd, p.returncode, p.stderr or p.stdout)
    return p.stdout


def ok(cmd: Sequence[str], timeout: float = 60) -> bool:
    """True when the command exits 0; False otherwise, also when it is missing or times out (never for removers:
    see probe)."""
    try:
        return subprocess.run(list(cmd), capture_output=True, timeout=timeout).returncode == 0
    except (FileNotFoundError, subprocess.TimeoutExpired):
        return False


def probe(cmd: Sequence[str], absent: Collection[str], timeout: float = 30, no_codes: Collection[int] = (1,)) -> bool:
    """Whether what `cmd` asks about exists: True on exit 0, False on an exit in `no_codes` whose output says one
    of `absent` (e.g. "No such file or directory"); CannotTellError otherwise: missing tool, timeout, any other exit."""
    try:
        p = subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        raise CannotTellError(cmd, 127, f"{cmd[0]}: not installed, so whether it exists is unknown") from None
    except subprocess.TimeoutExpired:
        raise CannotTellError(cmd, -1, f"no answer within {timeout:g}s") from None
    if p.returncode == 0:
        return True
    said = (p.stderr or "") + (p.stdout or "")
    if p.returncode in no_codes and any(a in said for a in absent):
        return False
    raise CannotTellError(cmd, p.returncode, said)


def in_netns(cmd: Sequence[str], ns: str | None = None, pid: int | None = None) -> list[str]:
    """`cmd` in a network namespace: a named one (/run/netns/NS), or a process's (`pid`, e.g. a container's);
    neither: as it is. `nsenter --net` rather than `ip netns exec`, which remounts /sys for the namespace and so
    hides the cgroup v1 hierarchies from what runs in it (a Docker engine refuses to start)."""
    if pid is not None:
        return ["nsenter", "-t", str(pid), "-n", *cmd]
    return ["nsenter", f"--net=/run/netns/{ns}", *cmd] if ns else list(cmd)
