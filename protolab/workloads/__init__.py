"""Workload kinds. Each registers once (protolab.workloads.base.workload): its task model, and the runner
that a phase imports when it first needs it. A task yields tidy columns named `<task>_<quantity>_<unit>`."""

from __future__ import annotations

from . import command, converter, dis, iperf3, ping, request_response, spims, transfer  # noqa: E402,F401,I001  (task models register themselves)
from .base import TASK_MODELS, WORKLOADS, TaskModel, WorkloadError, WorkloadRunner, runner_for, workload

__all__ = ["TASK_MODELS", "WORKLOADS", "TaskModel", "WorkloadError", "WorkloadRunner", "runner_for", "workload"]
