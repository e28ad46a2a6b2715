"""The orchestrator's own metrics: which fault is active on which link or node, and fault events.

Served on the management network's gateway address (the host side of `plab-mgmt`), so Prometheus scrapes
it like any node (target labels node="orchestrator", role="orchestrator") and dashboards can overlay the
faults on every time panel.

A node fault is labelled like a link fault, with the node's name in `link` (`link="h2"`, `fault="paused"`):
the series already carry the scrape target's `node="orchestrator"`, so a `node` label of their own would be
renamed `exported_node` by Prometheus, and the recording rules and dashboards group by `link, fault`.
"""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server

from . import naming

PORT = 9109
# a node event -> (the `fault` label, the gauge's value): 1 from the start of a node fault, 0 from its end
NODE_FAULTS = {"kill": ("killed", 1), "restart": ("killed", 0), "pause": ("paused", 1), "unpause": ("paused", 0),
               "stress": ("stress", 1), "stress_stop": ("stress", 0), "cpu": ("cpu_budget", 1),
               "cpu_restore": ("cpu_budget", 0)}  # fmt: skip


class FaultExporter:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.active = Gauge("protolab_fault_active", "1 while a fault is active on a link or a node (link: its name)",
                            ["link", "fault"], registry=self.registry)  # fmt: skip
        self.events = Counter("protolab_fault_events_total", "Fault events executed, by link and action",
                              ["link", "action"], registry=self.registry)  # fmt: skip
        self.timing = Gauge("protolab_fault_timing_error_seconds", "Actual minus planned time of the last event",
                            ["link"], registry=self.registry)  # fmt: skip
        self.address: str | None = None
        self._server: Any = None

    def serve(self, client: Any) -> dict[str, Any] | None:
        """Listen on the management gateway; return the Prometheus target group (None if it cannot)."""
        try:
            net = client.networks.get(naming.MGMT_NETWORK)
            gateway = net.attrs["IPAM"]["Config"][0]["Gateway"]
            self._server, _thread = start_http_server(PORT, addr=gateway, registry=self.registry)
        except Exception:
            return None
        self.address = f"{gateway}:{PORT}"
        return {"targets": [self.address], "labels": {"node": "orchestrator", "role": "orchestrator"}}

    def on_event(self, ev: Any) -> None:
        self.events.labels(ev.name, ev.action).inc()
        if ev.actual is not None:
            self.timing.labels(ev.name).set(ev.actual - ev.at)
        if ev.action in NODE_FAULTS:
            fault, value = NODE_FAULTS[ev.action]
            if not ev.error:  # a pause that failed is not a paused node
                self.active.labels(ev.name, fault).set(value)
        elif ev.action in ("down", "up"):
            self.active.labels(ev.name, "down").set(1 if ev.action == "down" else 0)
        else:
            self.active.labels(ev.name, "impairment_change").set(1)

    def clear(self) -> None:
        for metric in (self.active,):
            metric.clear()

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server = None
