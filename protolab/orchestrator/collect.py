"""Collection: a measurement's counters from Prometheus's raw samples in the phases' windows -> one column."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import monitor
from ..spec import Measurement

SERIES = {
    ("interface_rate", "rx", "bits"): "protolab_interface_receive_bytes_total",
    ("interface_rate", "tx", "bits"): "protolab_interface_transmit_bytes_total",
    ("interface_rate", "rx", "packets"): "protolab_interface_receive_packets_total",
    ("interface_rate", "tx", "packets"): "protolab_interface_transmit_packets_total",
}
Window = tuple[str, float, float]  # phase name, start, end (unix time)
Keep = Callable[[str, str, dict[str, str], float, float], None]  # (phase, series, labels, time, value) -> raw/


def selector(m: Measurement) -> tuple[str, float]:
    """PromQL selector for a measurement, and the factor from counter units to the column's unit."""
    if m.kind == "cpu":
        return f'protolab_cpu_seconds_total{{node="{m.node}"}}', 1.0
    metric = SERIES[(m.kind, m.direction, m.unit)]
    factor = 8.0 if m.unit == "bits" else 1.0
    return f'{metric}{{node="{m.node}",interface="{m.interface}"}}', factor


MIN_COVER = 0.25  # the samples inside a window must span at least this share of it for a rate


def column(m: Measurement, windows: list[Window], prom: Any, keep: Keep) -> float | None:
    """The mean over the measured phases of the counter's rate inside each window; every sample kept raw. A
    window whose samples inside span less than a quarter of it (a phase of a second or two against a scrape a second)
    gives no rate: the counters' steps would be those of the scrape, not of the work. (A quarter: link-fidelity's
    2.5 s windows of a steady flow hold one or two scrape intervals, and one is a fair sample of it.)"""
    expr, factor = selector(m)
    values = []
    for phase_name, ws, we in windows:
        if m.phase is not None and m.phase != phase_name:
            continue
        for labels, samples in prom.samples(expr, ws - 1, we + 1):
            for s in samples:
                keep(phase_name, m.column, labels, s.timestamp, s.value)
            inside = [s for s in samples if ws <= s.timestamp <= we]
            if len(inside) < 2 or inside[-1].timestamp - inside[0].timestamp < MIN_COVER * (we - ws):
                continue
            rate = monitor.counter_rate(inside)
            if rate is not None:
                values.append(rate * factor)
    return sum(values) / len(values) if values else None


def fault_timeline(windows: list[Window], warmup: float, prom: Any, keep: Keep) -> None:
    """The fault timeline as Prometheus saw it (what dashboards overlay), kept with the raw series."""
    for phase_name, ws, we in windows:
        for labels, samples in prom.samples("protolab_fault_active", ws - warmup - 1, we + 1):
            for s in samples:
                keep(phase_name, "fault_active", labels, s.timestamp, s.value)
