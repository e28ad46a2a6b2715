"""Timed faults as data: on links (down/up, flap patterns, step changes of impairments) and on nodes (kill,
restart, pause, unpause, CPU stress, a changed CPU budget).

Times are relative to the start of the phase that lists them. A flap expands into down/up events; a node
fault with `for` into its start and its end (kill -> restart, pause -> unpause, stress -> stress_stop,
cpu -> cpu_restore) when the end falls inside the phase (else the phase's restore ends it). A phase's faults
expand to at most MAX_FAULT_EVENTS_PER_PHASE events (checked when a spec is validated and again when a
schedule is expanded). An `Event` carries its planned time and, once protolab.lab.faults has run it, its actual
time, error and what it did (`detail`). Its `name` is what it acts on, a link's "h1-s1" or a node's "h2": the
`link` label of the orchestrator's gauges and the `link` column of faults.csv, so the recording rules and
dashboards that group by link show node faults too (protolab.lab.chaos runs node events).
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from ..units import Bytes, Seconds, format_duration
from .base import Strict
from .impairment import Impairment
from .types import SafeName

MAX_FAULT_EVENTS_PER_PHASE = 10_000  # every event is a timed `ip link` or tc change; more is a typo, not a test
LINK_ACTIONS = ("down", "up")
NODE_ACTIONS = ("kill", "restart", "pause", "unpause")
NODE_KINDS = (*NODE_ACTIONS, "stress", "cpu")
# what `for` ends a node fault with
ENDS = {"kill": "restart", "pause": "unpause", "stress": "stress_stop", "cpu": "cpu_restore"}
MIN_CPU_CORES = 0.01  # Docker's smallest CPU budget (a 1 ms quota over its 100 ms period)
MAX_STRESS_CORES = 256.0  # a typo guard: more busy loops than any machine here has cores
KIND_FIELDS = ("action", "set", "flap", "stress", "cpu")
ONE_KIND = (
    "a fault is exactly one of: on a link, `action: down|up`, `set: {impairment}` or `flap: {down, up}`;"
    " on a node, `action: kill|restart|pause|unpause`, `stress: {cpu, memory}` or `cpu: cores`"
)


class Flap(Strict):
    down: Seconds = Field(..., description="how long the link stays down each cycle, e.g. '4s'")
    up: Seconds = Field(..., description="how long it stays up between outages, e.g. '12s'")
    offset: Seconds = Field(0.0, description="first outage starts this long after `start` (phase shift)")

    @field_validator("down", "up")
    @classmethod
    def _positive(cls, v: float, info: ValidationInfo) -> float:
        if not v > 0 or not math.isfinite(v):
            raise ValueError(f"{info.field_name} must be longer than 0s (a flap alternates outages and up times)")
        return v

    @field_validator("offset")
    @classmethod
    def _finite(cls, v: float) -> float:
        if not math.isfinite(v):
            raise ValueError("offset must be a finite duration")
        return v


class Stress(Strict):
    """Load put on a node, charged to its cgroup: busy CPU loops and memory held resident."""

    cpu: float = Field(0.0, description="cores kept busy: 1 = one busy loop, 0.5 = one loop running half the time")
    memory: Bytes | None = Field(None, description="memory held resident while the stress lasts, e.g. '64MiB'")

    @field_validator("cpu")
    @classmethod
    def _cores(cls, v: float) -> float:
        if not (math.isfinite(v) and 0 <= v <= MAX_STRESS_CORES):
            raise ValueError(f"cpu must be a number of cores from 0 to {MAX_STRESS_CORES:g}, e.g. 1 or 0.5")
        return v

    @field_validator("memory")
    @classmethod
    def _bytes(cls, v: int | None) -> int | None:
        if v is not None and v <= 0:
            raise ValueError("memory must be more than 0B, e.g. '64MiB'")
        return v

    @model_validator(mode="after")
    def _some_load(self) -> Stress:
        if self.cpu == 0 and self.memory is None:
            raise ValueError(
                "a stress needs `cpu` (cores kept busy, e.g. 1 or 0.5) or `memory` (e.g. '64MiB'), or both"
            )
        return self

    def describe(self) -> str:
        """'cpu 1.5, memory 64MiB'."""
        parts = [f"cpu {self.cpu:g}"] if self.cpu else []
        if self.memory is not None:
            parts.append(f"memory {self.memory / 2**20:g}MiB")
        return ", ".join(parts)


class Fault(Strict):
    """One timed action on a link or a node, a flap pattern (expanded into down/up events), a stress or a
    changed CPU budget of a node."""

    link: tuple[SafeName, SafeName] | None = Field(None, description="the link a link fault acts on, e.g. [h1, s1]")
    node: SafeName | None = Field(None, description="the host a node fault acts on (its container), e.g. h2")
    at: Seconds | None = Field(None, description="when (after the phase start) a single action happens")
    action: Literal["down", "up", "kill", "restart", "pause", "unpause"] | None = Field(
        None, description="a link's down|up; a node's kill|restart (its processes), pause|unpause (the freezer)"
    )
    set: Impairment | None = Field(None, description="step change: the link direction's impairment from `at` on")
    direction: Literal["both", "forward", "reverse"] = "both"
    flap: Flap | None = None
    start: Seconds = Field(0.0, description="flap: pattern start")
    stop: Seconds | None = Field(None, description="flap: pattern end (default: the phase's end)")
    stress: Stress | None = Field(None, description="node: CPU and memory load inside its container from `at` on")
    cpu: float | None = Field(None, description="node: its CPU budget in cores from `at` on (restored after the phase)")
    for_: Seconds | None = Field(
        None, alias="for", description="node: how long a kill, pause, stress or cpu change lasts (default: the phase)"
    )

    @field_validator("cpu")
    @classmethod
    def _budget(cls, v: float | None) -> float | None:
        if v is not None and not (math.isfinite(v) and v >= MIN_CPU_CORES):
            raise ValueError(f"cpu must be a budget of at least {MIN_CPU_CORES:g} cores (Docker's smallest), e.g. 0.25")
        return v

    @model_validator(mode="after")
    def _one_kind(self) -> Fault:
        if self.link is not None and self.node is not None:
            raise ValueError("a fault acts on a `link: [a, b]` or on a `node: name`, not on both")
        if self.link is None and self.node is None:
            raise ValueError("a fault needs what it acts on: `link: [a, b]` or `node: name`")
        given = [k for k in KIND_FIELDS if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(f"{ONE_KIND}; this one has {' and '.join(f'`{k}`' for k in given) or 'none'}")
        if self.node is not None:
            self._node_fault(given[0])
        else:
            self._link_fault(given[0])
        for name in ("at", "start", "stop", "for_"):
            if (v := getattr(self, name)) is not None and not math.isfinite(v):
                raise ValueError(f"{name.rstrip('_')} must be a finite duration")
        if self.stop is not None and self.stop <= self.start:
            raise ValueError(f"stop ({format_duration(self.stop)}) must be after start ({format_duration(self.start)})")
        return self

    def _link_fault(self, kind: str) -> None:
        if kind in ("stress", "cpu"):
            raise ValueError(f"`{kind}` is a node fault: give `node: name` instead of `link`")
        if self.action is not None and self.action not in LINK_ACTIONS:
            raise ValueError(f"action {self.action} is a node's (with `node: name`); a link's actions are down and up")
        if self.for_ is not None:
            raise ValueError("`for` belongs to node faults; a link's outage ends with `action: up`, or use a flap")
        if self.flap is None and self.at is None:
            raise ValueError("`at` is required for down/up and set")
        if self.flap is not None and self.at is not None:
            raise ValueError("a flap has `start`/`stop`, not `at`")
        if self.flap is None and self.model_fields_set & {"start", "stop"}:
            raise ValueError("`start`/`stop` belong to a flap; a single action or step change has `at`")

    def _node_fault(self, kind: str) -> None:
        if kind in ("set", "flap"):
            raise ValueError(f"`{kind}` is a link fault: give `link: [a, b]` instead of `node`")
        if self.action is not None and self.action not in NODE_ACTIONS:
            raise ValueError(
                f"action {self.action} is a link's (with `link: [a, b]`); a node's actions are kill, restart, pause"
                " and unpause"
            )
        if extra := sorted(self.model_fields_set & {"direction", "start", "stop"}):
            raise ValueError(f"{', '.join(f'`{k}`' for k in extra)}: link faults only; a node fault has `at` and `for`")
        if self.at is None:
            raise ValueError(f"`at` is required: when (after the phase start) the {self.kind} on {self.node} happens")
        if self.for_ is not None:
            if self.kind not in ENDS:
                raise ValueError(
                    f"`for` ends a kill (with a restart), a pause, a stress or a cpu change; {self.kind} has none"
                )
            if not self.for_ > 0:
                raise ValueError("for must be longer than 0s")

    @property
    def kind(self) -> str:
        """down | up | set | flap | kill | restart | pause | unpause | stress | cpu."""
        if self.action is not None:
            return self.action
        return next((k for k in ("set", "flap", "stress", "cpu") if getattr(self, k) is not None), "set")

    @property
    def name(self) -> str:
        """What it acts on: 'h1-s1' (a link) or 'h2' (a node)."""
        if self.node is not None:
            return self.node
        assert self.link is not None
        return f"{self.link[0]}-{self.link[1]}"

    def _span(self, phase_seconds: float) -> tuple[float, float]:
        """A flap's first outage and the end of its pattern."""
        offset = self.flap.offset if self.flap is not None else 0.0
        return self.start + offset, self.stop if self.stop is not None else phase_seconds

    def _end(self, phase_seconds: float) -> float | None:
        """When a node fault with `for` ends, if that is inside the phase (else the phase's restore ends it)."""
        if self.for_ is None or self.at is None:
            return None
        end = self.at + self.for_
        return end if end < phase_seconds else None

    def event_count(self, phase_seconds: float) -> int:
        """How many events `events(phase_seconds)` makes, computed without making them."""
        if self.node is not None:
            return 1 + (self._end(phase_seconds) is not None)
        if self.flap is None:
            return 1
        first, stop = self._span(phase_seconds)
        if first >= stop:
            return 0
        period = self.flap.down + self.flap.up
        cycles = (stop - first) / period
        if not math.isfinite(cycles):
            raise ValueError(f"{self.describe()} from {first}s to {stop}s has no finite number of events")
        n = max(1, math.ceil(cycles))  # outages k = 0..n-1 start at first + k * period < stop, as in events()
        while n > 1 and first + (n - 1) * period >= stop:
            n -= 1
        while first + n * period < stop:
            n += 1
        return 2 * n - (0 if first + (n - 1) * period + self.flap.down < stop else 1)

    def describe(self) -> str:
        """'flap on h1-s1 (down 1ms, up 1ms)', 'down on h1-s1 at 2s', 'pause on h2 at 1s': for error messages."""
        if self.flap is None:
            return f"{self.kind} on {self.name} at {format_duration(self.at or 0.0)}"
        f = self.flap
        return f"flap on {self.name} (down {format_duration(f.down)}, up {format_duration(f.up)})"

    def check(self, phase_seconds: float) -> None:
        """Raise ValueError if this fault does not fit a phase of `phase_seconds` (the longest task)."""
        end = format_duration(phase_seconds)
        if self.flap is None:
            if self.at is not None and self.at >= phase_seconds:
                raise ValueError(
                    f"at {format_duration(self.at)} is not before the phase's end ({end}, its longest task):"
                    " the action would never happen"
                )
            return
        first, stop = self._span(phase_seconds)
        if self.stop is not None and self.stop > phase_seconds:
            raise ValueError(f"stop {format_duration(self.stop)} is after the phase's end ({end})")
        if first >= stop:
            raise ValueError(
                f"the first outage (start + offset = {format_duration(first)}) is not before the pattern's end"
                f" ({format_duration(stop)}): the flap never happens"
            )
        if (n := self.event_count(phase_seconds)) > MAX_FAULT_EVENTS_PER_PHASE:
            raise ValueError(self._too_many(n, phase_seconds))

    def _too_many(self, n: int, phase_seconds: float) -> str:
        first, stop = self._span(phase_seconds)
        return (
            f"{self.describe()} from {format_duration(first)} to {format_duration(stop)} of a"
            f" {format_duration(phase_seconds)} phase makes {n} events, more than the limit of"
            f" {MAX_FAULT_EVENTS_PER_PHASE} per phase"
        )

    def _node_events(self, phase_seconds: float) -> list[Event]:
        assert self.node is not None
        at, node, kind = float(self.at or 0.0), self.node, self.kind
        end = self._end(phase_seconds)
        ev = Event(at, node, (), kind, node=node)
        if self.stress is not None:
            ev.cores, ev.memory = self.stress.cpu, self.stress.memory
            ev.until = end if end is not None else float(phase_seconds)
            ev.detail = f"{self.stress.describe()} until {format_duration(ev.until)}"
        elif self.cpu is not None:
            ev.cores, ev.detail = self.cpu, f"{self.cpu:g} cores"
        out = [ev]
        if end is not None:
            out.append(Event(end, node, (), ENDS[kind], node=node))
        return out

    def events(self, phase_seconds: float) -> list[Event]:
        name = self.name
        if self.node is not None:
            return self._node_events(phase_seconds)
        assert self.link is not None
        if self.flap is None:
            kind = self.action or "set"
            return [Event(float(self.at or 0.0), name, self.link, kind, self.set, self.direction)]
        f = self.flap
        if not (f.down > 0 and f.up > 0):  # a model built without validation
            raise ValueError(f"{self.describe()}: down and up must be longer than 0s")
        if (n := self.event_count(phase_seconds)) > MAX_FAULT_EVENTS_PER_PHASE:
            raise ValueError(self._too_many(n, phase_seconds))
        out: list[Event] = []
        first, stop = self._span(phase_seconds)
        for k in range(MAX_FAULT_EVENTS_PER_PHASE):  # bounded whatever the arithmetic does
            t = first + k * (f.down + f.up)
            if t >= stop:
                return out
            out.append(Event(t, name, self.link, "down"))
            if t + f.down < stop:
                out.append(Event(t + f.down, name, self.link, "up"))
        raise ValueError(self._too_many(self.event_count(phase_seconds), phase_seconds))


@dataclass(order=True)
class Event:
    at: float
    name: str = field(compare=False)  # what it acts on: 'h1-s1' or 'h2' (the `link` label and column)
    link: tuple[str, ...] = field(compare=False)  # (a, b) for a link event, () for a node event
    action: str = field(
        compare=False
    )  # down | up | set; kill | restart | pause | unpause | stress | stress_stop | cpu | cpu_restore
    impairment: Impairment | None = field(default=None, compare=False)
    direction: str = field(default="both", compare=False)
    node: str | None = field(default=None, compare=False)  # a node event's host
    cores: float | None = field(default=None, compare=False)  # stress: cores kept busy; cpu: the new budget
    memory: int | None = field(default=None, compare=False)  # stress: bytes held resident
    until: float | None = field(default=None, compare=False)  # stress: when it ends (seconds after the phase start)
    detail: str | None = field(default=None, compare=False)  # the setting, and what the event did (chaos)
    actual: float | None = field(default=None, compare=False)  # seconds after the phase start
    wall: float | None = field(default=None, compare=False)  # unix time when it took effect
    error: str | None = field(default=None, compare=False)
    stolen: float | None = field(default=None, compare=False)  # CPU seconds the hypervisor withheld while carried out

    def record(self) -> dict[str, Any]:
        """A row of faults.csv (and raw/faults.jsonl); columns added later come last."""
        return {
            "link": self.name,
            "action": self.action,
            "planned_seconds": self.at,
            "actual_seconds": self.actual,
            "timing_error_seconds": None if self.actual is None else self.actual - self.at,
            "unix_time_seconds": self.wall,
            "error": self.error,
            "target": "node" if self.node is not None else "link",
            "detail": self.detail,
            "stolen_seconds": self.stolen,
        }


Link = tuple[str, str]


def no_path_spans(
    faults: list[Fault], paths: list[list[Link]], phase_seconds: float, out_from_start: Collection[frozenset[str]] = ()
) -> list[tuple[float, float]]:
    """The spans (seconds after the phase start) in which every one of `paths` (each a list of links, all needed)
    has a link out: cut (`down` until `up`) or black-holed (`set` to 100 % loss in either direction until a `set`
    of less). Links match in either order; a link no fault touches is out only if in `out_from_start` (a 100 %
    loss configured for the whole phase). No paths: no span."""
    if not paths:
        return []
    keys = {frozenset(lk) for p in paths for lk in p}
    edges: list[tuple[float, int, frozenset[str], bool]] = []
    for f in faults:
        if f.link is None or frozenset(f.link) not in keys:
            continue
        for ev in f.events(phase_seconds):
            if ev.action in ("down", "up"):
                edges.append((ev.at, len(edges), frozenset(ev.link), ev.action == "down"))
            elif ev.action == "set" and ev.impairment is not None and ev.impairment.loss is not None:
                edges.append((ev.at, len(edges), frozenset(ev.link), ev.impairment.loss >= 1.0))
    edges.sort()
    out = {k: k in out_from_start for k in keys}
    path_keys = [[frozenset(lk) for lk in p] for p in paths]

    def none_up() -> bool:
        return all(any(out[k] for k in p) for p in path_keys)

    spans: list[tuple[float, float]] = []
    start: float | None = 0.0 if none_up() else None
    i = 0
    while i < len(edges):
        t = edges[i][0]
        while i < len(edges) and edges[i][0] == t:  # every change at one instant, in schedule order
            out[edges[i][2]] = edges[i][3]
            i += 1
        if t >= phase_seconds:
            break
        if none_up() and start is None:
            start = t
        elif not none_up() and start is not None:
            if t > start:
                spans.append((start, t))
            start = None
    if start is not None and phase_seconds > start:
        spans.append((start, phase_seconds))
    return spans


def all_out(faults: list[Fault], links: list[Link], phase_seconds: float) -> list[tuple[float, float]]:
    """The spans in which every one of `links` is out (each link a path of its own: no_path_spans)."""
    return no_path_spans(faults, [[lk] for lk in links], phase_seconds)
