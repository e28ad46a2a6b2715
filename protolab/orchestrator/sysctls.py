"""A task's `sysctls`: network sysctls set in the namespaces of its hosts for one phase and put back after it.

They are written from the host into the node's network namespace (Mininet's shell for the node: nsenter -n),
because a container's own /proc/sys is read-only; net.* sysctls are per namespace, so nothing outside the lab
changes. The node's shell takes a script: keys and values are typed by the task model (net.* keys, plain values)
and quoted here as well, as is every value read back from the kernel."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any

from ..workloads import WorkloadError

if TYPE_CHECKING:
    from ..lab.api import RunningLab


def _script(*argv: str) -> str:
    """A command line for the node's shell: every word quoted."""
    return shlex.join(argv)


class PhaseSysctls:
    def __init__(self, lab: RunningLab) -> None:
        self.lab = lab
        self._undo: list[tuple[str, str, str]] = []  # (node, key, value before)

    def _sh(self, node: str, script: str) -> str:
        out = self.lab.node_shell(node, f'{{ {script} ; }} 2>&1; echo "rc=$?"')
        body, _, rc = out.rstrip().rpartition("rc=")
        if rc.strip() != "0":
            raise WorkloadError(f"sysctl on {node}: `{script}`: {body.strip()[-300:]}")
        return body.strip()

    def apply(self, tasks: list[tuple[Any, Any]]) -> None:
        """Every (task, runner) with sysctls: set them on the task's hosts and keep what was read back in the
        runner's `sysctls_set`. A key the kernel does not have (e.g. net.sctp.* without the sctp module), or a
        value it refuses (e.g. a congestion control a namespace may not choose: EPERM), skips that task, saying
        so in `runner.skipped`, as a transport the kernel lacks does: the task's own writes are put back and
        the sweep goes on."""
        for task, runner in tasks:
            if not task.sysctls:
                continue
            if missing := self._missing(task):
                runner.skipped = missing
                continue
            mark = len(self._undo)
            try:
                for node in dict.fromkeys(task.nodes()):
                    for key, value in task.sysctls.items():
                        was = self._sh(node, _script("sysctl", "-n", key))
                        self._sh(node, _script("sysctl", "-qw", f"{key}={value}"))
                        self._undo.append((node, key, was))
                    runner.sysctls_set[node] = {k: self._sh(node, _script("sysctl", "-n", k)) for k in task.sysctls}
            except WorkloadError as exc:
                mine, self._undo = self._undo[mark:], self._undo[:mark]
                failures = self._put_back(mine)
                runner.sysctls_set = {}
                runner.skipped = f"{exc} (the kernel refuses it here)" + (
                    f" (and putting back: {'; '.join(failures)})" if failures else ""
                )

    def _missing(self, task: Any) -> str | None:
        """Why the task cannot run here when one of its sysctls does not exist on one of its hosts."""
        for node in dict.fromkeys(task.nodes()):
            for key in task.sysctls:
                path = "/proc/sys/" + key.replace(".", "/")
                if "rc=0" not in self.lab.node_shell(node, _script("test", "-e", path) + '; echo "rc=$?"'):
                    return f"sysctl {key} does not exist on {node} (this kernel lacks that part: no {path})"
        return None

    def restore(self) -> list[str]:
        """Put every sysctl back, last set first; the failures (the run goes on and reports them)."""
        failures = self._put_back(self._undo)
        self._undo = []
        return failures

    def _put_back(self, undo: list[tuple[str, str, str]]) -> list[str]:
        failures = []
        for node, key, was in reversed(undo):
            try:
                self._sh(node, _script("sysctl", "-qw", f"{key}={was}"))
            except (WorkloadError, KeyError) as exc:
                failures.append(str(exc))
        return failures
