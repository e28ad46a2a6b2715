"""A command run on a node for the phase: background load, a tool protolab has no workload for, a probe.

The command runs inside the node's container (its filesystem and cgroup) with `docker exec`; it is expected
to end within the phase (give it its own limit, e.g. `timeout 5 ...`). One that does not is what the run's
watchdog is for: past the phase's duration plus the margin the run stops as INVALID naming the task.
Columns: `<task>_exit_code_total` (the command's exit status; a name that ends in a unit the results read)
and `<task>_elapsed_seconds`.
"""

from __future__ import annotations

import time
from typing import Any, Literal

from pydantic import Field

from .base import LabAPI, TaskModel, WorkloadError, WorkloadRunner, workload


@workload("command", runner="protolab.workloads.command:CommandRunner")
class CommandTask(TaskModel):
    kind: Literal["command"]
    node: str = Field(..., description="host the command runs on")
    command: list[str] = Field(..., min_length=1, description="argv, e.g. ['stress-ng', '--cpu', '1', '-t', '5s']")
    check: bool = Field(True, description="a non-zero exit status fails the phase")

    def nodes(self) -> list[str]:
        return [self.node]

    def columns(self) -> list[str]:
        return [f"{self.name}_exit_code_total", f"{self.name}_elapsed_seconds"]


class CommandRunner(WorkloadRunner[CommandTask]):
    def __init__(self, task: CommandTask, lab: LabAPI) -> None:
        super().__init__(task, lab)
        self.code: int | None = None
        self.elapsed: float | None = None
        self.output: dict[str, str] = {}

    def run(self) -> None:
        t = self.task
        t0 = time.monotonic()
        self.code, out, err = self.lab.exec(t.node, t.command)
        self.output = {"stdout": out[-20000:], "stderr": err[-20000:]}
        self.elapsed = time.monotonic() - t0
        if t.check and self.code != 0:
            raise WorkloadError(f"task {t.name}: `{' '.join(t.command)}` on {t.node} exited {self.code}: "
                               f"{(err or out).strip()[-300:]}")  # fmt: skip

    def raw(self) -> dict[str, Any]:
        return self.output

    def result(self) -> dict[str, float | None]:
        n = self.task.name
        return {f"{n}_exit_code_total": self.code, f"{n}_elapsed_seconds": self.elapsed}
