"""Timed link faults as data: link down/up, flap patterns and step changes of impairments.

Times are relative to the start of the phase that lists them. A flap expands into down/up events; a
phase's faults expand to at most MAX_FAULT_EVENTS_PER_PHASE events (checked when a spec is validated and
again when a schedule is expanded). An `Event` carries its planned time and, once protolab.faults has run
it, its actual time and error.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from ..units import Seconds, format_duration
from .base import Strict
from .impairment import Impairment

MAX_FAULT_EVENTS_PER_PHASE = 10_000  # every event is a timed `ip link` or tc change; more is a typo, not a test


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
        if self.flap is None and self.model_fields_set & {"start", "stop"}:
            raise ValueError("`start`/`stop` belong to a flap; a single action or step change has `at`")
        for name in ("at", "start", "stop"):
            if (v := getattr(self, name)) is not None and not math.isfinite(v):
                raise ValueError(f"{name} must be a finite duration")
        if self.stop is not None and self.stop <= self.start:
            raise ValueError(f"stop ({format_duration(self.stop)}) must be after start ({format_duration(self.start)})")
        return self

    @property
    def name(self) -> str:
        return f"{self.link[0]}-{self.link[1]}"

    def _span(self, phase_seconds: float) -> tuple[float, float]:
        """A flap's first outage and the end of its pattern."""
        offset = self.flap.offset if self.flap is not None else 0.0
        return self.start + offset, self.stop if self.stop is not None else phase_seconds

    def event_count(self, phase_seconds: float) -> int:
        """How many events `events(phase_seconds)` makes, computed without making them."""
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
        """'flap on h1-s1 (down 1ms, up 1ms)', 'down on h1-s1 at 2s': for error messages."""
        if self.flap is None:
            return f"{self.action or 'set'} on {self.name} at {format_duration(self.at or 0.0)}"
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

    def events(self, phase_seconds: float) -> list[Event]:
        name = self.name
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
