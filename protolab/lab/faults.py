"""Timed fault schedules: running link down/up, flap patterns and step changes of impairments, and node
events (kill, restart, pause, unpause, stress, CPU budget: protolab.lab.chaos).

The faults and the events they expand to are data (protolab.model.faults); this module runs them. A link
goes down the way a cable is pulled at the switch: the end in the root namespace (a bridge port; for a
node-to-node link, the second node's end) is set down (protolab.lab.linkstate), so the other end loses carrier
and keeps its addresses and routes, as a host does when its cable is unplugged. Every event is executed from one thread
against the monotonic clock and recorded with its planned and actual time; the recorded error is what the
timing bound (20 ms) checks; a node event's actual time is when its Docker call took effect. Beside it is the CPU
time the hypervisor withheld while the event was carried out (/proc/stat's steal, in 10 ms ticks), which a late
event on a virtual machine may owe to its neighbours rather than to the schedule. Active faults
are exported as Prometheus gauges (`protolab_fault_active{link,fault}`, a node's name in `link`) by the
orchestrator. After the phase the lab's links are restored by `lab.links.restore()` and what node events
changed by `Schedule.restore()`.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

from ..model.faults import Event
from . import chaos, guard

if TYPE_CHECKING:
    from .api import RunningLab


class Schedule:
    """Runs a phase's events in a thread; `start(t0)` with the phase's monotonic start time."""

    def __init__(self, events: list[Event], lab: RunningLab, on_event: Any = None) -> None:
        self.events, self.lab, self.on_event = sorted(events), lab, on_event
        self.chaos = chaos.Chaos(lab)
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
            effect, stolen = None, guard.steal_seconds()
            try:
                effect = self._apply(ev)
            except Exception as exc:  # recorded in the results; the run is flagged by the timing/fault checks
                ev.error = str(exc)
            now, wall = time.monotonic(), time.time()
            at = effect if effect is not None else now
            ev.actual, ev.wall = at - t0, wall - (now - at)
            ev.stolen = round(max(0.0, guard.steal_seconds() - stolen), 3)
            if self.on_event:
                self.on_event(ev)

    def _apply(self, ev: Event) -> float | None:
        """Through the lab's link state (protolab.lab.linkstate), which restores it all after the phase, or for a
        node event through protolab.lab.chaos; returns when a node event took effect."""
        if ev.node is not None:
            outcome, effect = self.chaos.apply(ev)
            ev.detail = "; ".join(d for d in (ev.detail, outcome) if d) or None
            return effect
        if ev.action in ("down", "up"):
            self.lab.links.set_cable(ev.link, ev.action)
        else:
            self.lab.links.step(ev.link, ev.direction, ev.impairment)
        return None

    def restore(self) -> list[str]:
        """What the node events changed, put back (protolab.lab.chaos; the links are `lab.links.restore()`);
        returns what could not be."""
        return self.chaos.restore()
