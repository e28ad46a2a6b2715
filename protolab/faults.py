"""Timed fault schedules: running link down/up, flap patterns and step changes of impairments.

The faults and the events they expand to are data (protolab.model.faults); this module runs them. A link
goes down the way a cable is pulled at the switch: the end in the root namespace (a bridge port; for a
node-to-node link, the second node's end) is set down (protolab.linkstate), so the other end loses carrier
and keeps its addresses and routes, as a host does when its cable is unplugged. Every event is executed from one thread
against the monotonic clock and recorded with its planned and actual time; the recorded error is what the
timing bound (20 ms) checks. Active faults are exported as Prometheus gauges
(`protolab_fault_active{link,fault}`) by the orchestrator.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from .model.faults import Event


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
        """Through the lab's link state (protolab.linkstate), which restores it all after the phase."""
        if ev.action in ("down", "up"):
            self.lab.links.set_cable(ev.link, ev.action)
        else:
            self.lab.links.step(ev.link, ev.direction, ev.impairment)
