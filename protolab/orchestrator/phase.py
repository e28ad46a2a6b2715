"""One phase of one measurement: its tasks (under a watchdog), its fault schedule, the nodes and links put back
as configured afterwards, and the wall-clock window its counters are measured over."""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import TaskHungError
from ..lab import faults
from ..workloads import WorkloadError, WorkloadRunner, runner_for
from .sysctls import PhaseSysctls

if TYPE_CHECKING:
    from ..lab.api import RunningLab

log = logging.getLogger(__name__)
LATE_START_NOTICE_SECONDS = 0.5  # a task starting later than this after its phase is said in the log


def phase_window(t0: float, runners: list[Any], warmup: float, seconds: float,
                 ended: float | None = None) -> tuple[float, float]:  # fmt: skip
    """The wall-clock window a phase's counters are measured over: from `warmup` after its traffic began to its
    end: its duration, or when its last task ended if that came first (a duration that is a time limit, as a
    SPIMS procedure's, must not stretch the window over idle seconds). A task whose traffic began late says so
    with `started` (an iperf3 UDP handshake retried on a lossy link); the latest such start moves the window
    with it. A phase shorter than its warmup has an empty window (start == end): nothing is measured."""
    late = max([r.started - t0 for r in runners if r.started is not None] + [0.0])
    start, end = t0 + late + warmup, t0 + late + seconds
    if ended is not None:
        end = min(end, ended)
    return start, max(start, end)


@dataclass
class PhaseOutcome:
    name: str
    window: tuple[float, float] = (0.0, 0.0)
    tasks: list[tuple[Any, WorkloadRunner[Any]]] = field(default_factory=list)  # (task model, its runner)
    events: list[Any] = field(default_factory=list)  # the fault events as executed
    restore_failures: list[str] = field(default_factory=list)
    error: Exception | None = None  # a hung or failed task: recorded what happened, then the run stops


def run_phase(phase: Any, lab: RunningLab, warmup: float, margin: float, exporter: Any, where: str) -> PhaseOutcome:
    """Run the phase's tasks and faults; the nodes and links are put back even when a task hangs or fails."""
    out = PhaseOutcome(phase.name)
    runners = [runner_for(t, lab) for t in phase.tasks]
    out.tasks = list(zip(phase.tasks, runners, strict=True))
    sysctls = PhaseSysctls(lab)
    sysctls.apply(out.tasks)
    live = [(t, r) for t, r in out.tasks if not r.skipped]  # the others need a sysctl this kernel lacks
    started = [r for _, r in live]
    try:
        for r in started:
            r.prepare()
    except BaseException:
        sysctls.restore()
        raise
    seconds = max(t.duration for t in phase.tasks)
    events = [e for f in phase.faults for e in f.events(seconds)]
    schedule = faults.Schedule(events, lab, on_event=exporter.on_event)
    schedule.start(time.monotonic())
    t0 = time.time()
    errors: list[str] = []
    threads = [threading.Thread(target=_run_task, args=(r, errors), daemon=True) for r in started]
    for th in threads:
        th.start()
    deadline = time.monotonic() + seconds + margin
    for th in threads:
        th.join(max(0.0, deadline - time.monotonic()))
    ended = time.time()  # the tasks' end, before the faults and sysctls are put back
    hung = [t for (t, _), th in zip(live, threads, strict=True) if th.is_alive()]
    if events:
        out.events = schedule.stop()
        out.restore_failures = schedule.restore() + lab.links.restore()  # the nodes (unpaused first), then links
        exporter.clear()
    out.restore_failures += sysctls.restore()
    if hung:
        names = ", ".join(f"{t.name} ({t.kind} on {', '.join(t.nodes())})" for t in hung)
        out.error = TaskHungError(f"{where}: task {names} still running {margin:g}s after the phase's "
                                  f"{seconds:g}s; the run stops")  # fmt: skip
    elif errors:
        out.error = WorkloadError(f"{where}: " + "; ".join(errors))
    out.window = phase_window(t0, runners, warmup, seconds, ended=None if hung else ended)
    late = out.window[0] - warmup - t0
    if late > LATE_START_NOTICE_SECONDS:
        log.info("%s: traffic began %.1fs late; measured from then", where, late)
    return out


def _run_task(runner: WorkloadRunner[Any], errors: list[str]) -> None:
    try:
        runner.run()
    except Exception as exc:
        errors.append(str(exc))
