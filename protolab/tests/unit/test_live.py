"""protolab.live: the snapshot from Prometheus's answers, the table in display units, and a view that never
takes the run down (failing or slow queries, start/update/stop)."""

from __future__ import annotations

import io
import re
import threading
import time
from types import SimpleNamespace
from typing import Any

import pytest
from rich.console import Console

from protolab import dashboards, live

RUN = "20261122T031500Z-ab12"
# the exact expressions the view issues: a renamed metric or label in the dashboards breaks these
CPU = 'node:protolab_cpu_cores:rate5s{run="20261122T031500Z-ab12"}'
PPS = 'node:protolab_packets_per_second:rate5s{run="20261122T031500Z-ab12"}'
DELAY_P99 = 'node:protolab_message_delay_seconds:p99_rate5s{run="20261122T031500Z-ab12"}'
FAULTS = "link:protolab_fault_active:max > 0"
RULES = (dashboards.REPO / "images" / "monitor" / "rules" / "protolab.rules.yml").read_text()


def sample(value: str, **labels: str) -> dict[str, Any]:
    """One element of an instant vector as /api/v1/query returns it."""
    return {"metric": labels, "value": [1764000000.123, value]}


def node(name: str, **labels: str) -> dict[str, str]:
    return {"__name__": "x", "run": RUN, "node": name, **labels}


ANSWERS: dict[str, list[dict[str, Any]]] = {
    CPU: [
        sample("0.4213", **node("h10", role="dis-host")),
        sample("1.5", **node("h2", role="dis-host")),
        sample("0.031", **node("s1", role="switch")),
    ],
    PPS: [
        sample("12345.6", **node("h2", role="dis-host", direction="receive")),
        sample("42.25", **node("h2", role="dis-host", direction="transmit")),
        sample("0", **node("h10", role="dis-host", direction="receive")),
        sample("980", **node("h10", role="dis-host", direction="transmit")),
    ],
    DELAY_P99: [
        sample("0.0123", **node("h2", role="dis-host")),
        sample("NaN", **node("h10", role="dis-host")),  # histogram_quantile with no messages in the window
    ],
    FAULTS: [sample("1", link="s1-s2", fault="down"), sample("1", link="h2", fault="impairment_change")],
}


def fake_query(answers: dict[str, Any]) -> tuple[live.Query, list[str]]:
    asked: list[str] = []

    def query(expr: str) -> list[dict[str, Any]]:
        asked.append(expr)
        answer = answers[expr]  # an expression the test does not know: KeyError, a failed query
        if isinstance(answer, Exception):
            raise answer
        return answer

    return query, asked


def render(renderable: Any) -> str:
    console = Console(file=io.StringIO(), width=140, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def test_the_view_asks_the_dashboards_expressions_of_recorded_rules():
    query, asked = fake_query(ANSWERS)
    live.snapshot(query, RUN)
    assert asked == [CPU, PPS, DELAY_P99, FAULTS]
    for expr in asked:
        for name in re.findall(r"[a-z_]+:[a-z_0-9]+:[a-z_0-9]+", expr):
            assert f"record: {name}" in RULES, name


def test_snapshot_reads_nodes_directions_and_active_faults():
    query, _ = fake_query(ANSWERS)
    data = live.snapshot(query, RUN, now=lambda: 100.0)
    assert data.errors == [] and data.at == 100.0
    assert [r.node for r in data.nodes] == ["h2", "h10", "s1"]  # natural order
    h2, h10, s1 = data.nodes
    assert h2 == live.NodeRow("h2", "dis-host", 1.5, 12345.6, 42.25, 0.0123)
    assert h10 == live.NodeRow("h10", "dis-host", 0.4213, 0.0, 980.0, None)  # NaN p99: no value
    assert s1 == live.NodeRow("s1", "switch", 0.031)
    assert data.faults == [("h2", "impairment_change"), ("s1-s2", "down")]


def test_a_failing_query_is_recorded_and_an_empty_result_is_no_data():
    answers = {**ANSWERS, PPS: [], FAULTS: ConnectionError("connection refused")}
    query, _ = fake_query(answers)
    data = live.snapshot(query, RUN)
    assert data.errors == ["faults: ConnectionError: connection refused"]
    assert not data.unreachable and data.faults == []
    assert [(r.node, r.rx_pps, r.tx_pps) for r in data.nodes] == [("h2", None, None), ("h10", None, None),
                                                                  ("s1", None, None)]  # fmt: skip
    head = render(live.header("quick-test", RUN, "[1/2 0% ...] p000", None, data, data.at))
    assert "1 query failed: faults: ConnectionError: connection refused" in head


def test_prometheus_unreachable_says_so_in_the_header():
    def down(_expr: str) -> list[dict[str, Any]]:
        raise ConnectionError("127.0.0.1:9090 refused")

    data = live.snapshot(down, RUN)
    assert data.unreachable and data.nodes == [] and len(data.errors) == 4
    text = render(live.header("quick-test", RUN, "", None, data, data.at + 10))
    assert "Prometheus unreachable (cpu_cores: ConnectionError: 127.0.0.1:9090 refused); the run goes on" in text
    assert "data 10s old" in text
    assert "no node data yet" in render(live.table(data))


def test_table_shows_nodes_in_display_units_and_the_active_faults():
    query, _ = fake_query(ANSWERS)
    text = render(live.table(live.snapshot(query, RUN)))
    lines = text.splitlines()
    h2 = next(line for line in lines if line.startswith("h2 "))
    assert h2.split() == ["h2", "dis-host", "1.50", "12,346", "42.2", "12.30", "ms"]
    h10 = next(line for line in lines if line.startswith("h10 "))
    assert h10.split() == ["h10", "dis-host", "0.42", "0.0", "980", "—"]
    assert "CPU (cores)" in text and "rx (pkt/s)" in text and "delay p99" in text
    assert "active faults: 2" in text
    assert next(line for line in lines if line.startswith("s1-s2")).split() == ["s1-s2", "down"]


def test_no_faults_is_said_plainly():
    query, _ = fake_query({**ANSWERS, FAULTS: []})
    assert "no active faults" in render(live.table(live.snapshot(query, RUN)))


def test_progress_line_is_the_one_the_run_prints():
    counters = SimpleNamespace(total=12, done=3, t0=time.monotonic() - 40)
    assert (
        live.progress_line(counters, "p003 rate=10Mbit rep 1")
        == "[4/12  25% elapsed 40s ETA 120s] p003 rate=10Mbit rep 1"
    )


def view(query: live.Query) -> tuple[live.LiveView, io.StringIO]:
    out = io.StringIO()
    console = Console(file=out, width=120, force_terminal=True, color_system=None)
    return live.LiveView("quick-test", RUN, query, console=console, interval=0.05), out


def test_view_starts_updates_and_stops_quickly():
    query, asked = fake_query(ANSWERS)
    v, out = view(query)
    assert v.start()
    v.update("[1/2   0% elapsed 0s ETA ?] p000 rate=1Mbit rep 1")
    v.update(phase="load")
    deadline = time.monotonic() + 2
    while v.data is None and time.monotonic() < deadline:
        time.sleep(0.01)
    text = render(v.render())
    t0 = time.monotonic()
    v.stop()
    assert time.monotonic() - t0 < 1
    v.stop()  # idempotent
    assert asked[:4] == [CPU, PPS, DELAY_P99, FAULTS]
    assert "quick-test" in text and "p000 rate=1Mbit rep 1" in text and "phase load" in text
    assert "h2" in text and "s1-s2" in text
    assert not any(t.name == "protolab-live" for t in threading.enumerate())
    assert out.getvalue()  # it drew on its console


@pytest.mark.parametrize("exc", [ConnectionError("refused"), TimeoutError("read timed out"), ValueError("bad json")])
def test_view_survives_queries_that_raise(exc):
    def broken(_expr: str) -> list[dict[str, Any]]:
        raise exc

    v, _ = view(broken)
    assert v.start()
    v.update("[1/1   0% elapsed 0s ETA ?] p000 rep 1")
    time.sleep(0.15)
    assert v.data is not None and v.data.unreachable
    assert "Prometheus unreachable" in render(v.render())
    v.stop()


def test_stop_does_not_wait_for_a_hung_query():
    release = threading.Event()

    def hung(_expr: str) -> list[dict[str, Any]]:
        release.wait(5)
        return []

    v, _ = view(hung)
    assert v.start()
    t0 = time.monotonic()
    v.stop(timeout=0.2)
    assert time.monotonic() - t0 < 1
    release.set()
