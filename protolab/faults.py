"""Timed fault schedules: link down/up, flap patterns and step changes of impairments.

Times are relative to the start of the phase that lists them. A link goes down the way a cable is pulled
at the switch: the end in the root namespace (a bridge port; for a node-to-node link, the second node's
end) is set down, so the other end loses carrier and keeps its addresses and routes, as a host does
when its cable is unplugged. Every event is executed from one thread against the monotonic clock and
recorded with its planned and actual time; the recorded error is what the timing bound (20 ms) checks.
Active faults are exported as Prometheus gauges (`protolab_fault_active{link,fault}`) by the orchestrator.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .impair import Endpoint, Impairment
from .shell import run
from .units import Seconds


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Flap(Strict):
    down: Seconds = Field(..., description="how long the link stays down each cycle, e.g. '4s'")
    up: Seconds = Field(..., description="how long it stays up between outages, e.g. '12s'")
    offset: Seconds = Field(0.0, description="first outage starts this long after `start` (phase shift)")


class Fault(Strict):
    """One timed action on a link, or a flap pattern (expanded into down/up events)."""

    link: tuple[str, str]
    at: Seconds | None = Field(None, description="when (after the phase start) a single action happens")
    action: Literal["down", "up"] | None = None
    set: Impairment | None = Field(None, description="step change: the link direction's impairment from `at` on")
    direction: Literal["both", "forward", "reverse"] = "both"
    flap: Flap | None = None
    start: Seconds = Field(0.0, description="flap: pattern start")
    stop: Seconds | None = Field(None, description="flap: pattern end (default: the phase's end)")

    @model_validator(mode="after")
    def _one_kind(self) -> Fault:
        kinds = [self.action is not None, self.set is not None, self.flap is not None]
        if sum(kinds) != 1:
            raise ValueError("a fault is one of: `action: down|up`, `set: {impairment}`, or `flap: {down, up}`")
        if self.flap is None and self.at is None:
            raise ValueError("`at` is required for down/up and set")
        if self.flap is not None and self.at is not None:
            raise ValueError("a flap has `start`/`stop`, not `at`")
        return self

    def events(self, phase_seconds: float) -> list[Event]:
        name = f"{self.link[0]}-{self.link[1]}"
        if self.flap is None:
            kind = self.action or "set"
            return [Event(float(self.at or 0.0), name, self.link, kind, self.set, self.direction)]
        out, f = [], self.flap
        t, stop = self.start + f.offset, self.stop if self.stop is not None else phase_seconds
        while t < stop:
            out.append(Event(t, name, self.link, "down"))
            if t + f.down < stop:
                out.append(Event(t + f.down, name, self.link, "up"))
            t += f.down + f.up
        return out


@dataclass(order=True)
class Event:
    at: float
    name: str = field(compare=False)
    link: tuple[str, str] = field(compare=False)
    action: str = field(compare=False)  # down | up | set
    impairment: Impairment | None = field(default=None, compare=False)
    direction: str = field(default="both", compare=False)
    actual: float | None = field(default=None, compare=False)  # seconds after the phase start
    wall: float | None = field(default=None, compare=False)  # unix time when it took effect
    error: str | None = field(default=None, compare=False)

    def record(self) -> dict[str, Any]:
        return {
            "link": self.name,
            "action": self.action,
            "planned_seconds": self.at,
            "actual_seconds": self.actual,
            "timing_error_seconds": None if self.actual is None else self.actual - self.at,
            "unix_time_seconds": self.wall,
            "error": self.error,
        }


def cut_end(ends: tuple[Endpoint, Endpoint]) -> Endpoint:
    """Which end to set down: the bridge port (root namespace) if there is one, else the second node's."""
    return next((e for e in ends if e.pid is None), ends[1])


class Schedule:
    """Runs a phase's events in a thread; `start(t0)` with the phase's monotonic start time."""

    def __init__(self, events: list[Event], lab: Any, on_event: Any = None) -> None:
        self.events, self.lab, self.on_event = sorted(events), lab, on_event
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    def start(self, t0: float) -> None:
        if self.events:
            self._thread = threading.Thread(target=self._run, args=(t0,), daemon=True, name="fault-schedule")
            self._thread.start()

    def stop(self) -> list[Event]:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=10)
        return self.events

    def _run(self, t0: float) -> None:
        for ev in self.events:
            due = t0 + ev.at
            while not self._stop.is_set():
                left = due - time.monotonic()
                if left <= 0:
                    break
                if left > 0.002:
                    time.sleep(min(left - 0.002, 0.5))  # coarse sleep, then spin the last 2 ms
            if self._stop.is_set():
                return
            try:
                self._apply(ev)
            except Exception as exc:  # recorded in the results; the run is flagged by the timing/fault checks
                ev.error = str(exc)
            ev.actual, ev.wall = time.monotonic() - t0, time.time()
            if self.on_event:
                self.on_event(ev)

    def _apply(self, ev: Event) -> None:
        ends = self.lab.link_ends.get(ev.link) or self.lab.link_ends.get(ev.link[::-1])
        if ends is None:
            raise ValueError(f"no link between {ev.link[0]} and {ev.link[1]}")
        if ev.action in ("down", "up"):
            end = cut_end(ends)
            run(end.cmd("ip", "link", "set", "dev", end.intf, ev.action))
        else:
            self.lab.set_impairment(ev.link, ev.direction, ev.impairment)
