"""Workload kinds: a task model (what the spec says) and a runner (how it runs in a lab).

Each kind registers its pydantic task model in TASK_MODELS (used by the spec's discriminated union) and
its runner in RUNNERS. A task yields tidy columns named `<task>_<quantity>_<unit>`.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..registry import Registry
from ..units import Seconds

TASK_MODELS: dict[str, type[TaskModel]] = {}
RUNNERS: Registry[Any] = Registry("workload")


class TaskModel(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(..., pattern=r"^[a-z][a-z0-9_]*$", description="column prefix for its results")
    duration: Seconds

    def nodes(self) -> list[str]:
        """Hosts the task runs on (validated against the topology)."""
        raise NotImplementedError

    def columns(self) -> list[str]:
        """Tidy columns this task produces."""
        raise NotImplementedError


def task_model(kind: str):
    def deco(cls: type[TaskModel]) -> type[TaskModel]:
        TASK_MODELS[kind] = cls
        return cls

    return deco


from . import command, converter, converter_runner, dis, dis_runner, iperf3, iperf3_runner, ping, ping_runner  # noqa: E402,F401  (register themselves)
