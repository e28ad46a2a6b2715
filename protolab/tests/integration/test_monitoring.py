"""Live monitoring on a real lab: every dashboard panel's query runs against the real Prometheus (with the
recording rules of the monitor image) and returns data.

One small lab (the thesis's 100/100 converter layout with 3 hosts: h1..h3 and C_2 on a 100 Mbit hub, C_1a,
C_1b and the router r1 on a 100 Mbit switch) runs pings at 100/s between the hosts for a few seconds while a
fault schedule pulls h3's cable (the orchestrator's real FaultExporter, scraped like in a run), a DIS host h1
sends 500 messages/s over 4 multicast groups to a DIS host on h2 (the dis workload's runner, both scraped on
their own ports as in a run), and the bundle converter carries 40 messages/s per host and 500/s from the WAN
(the converter workload's runner, every node's process scraped), so panels of every family, the converter's
included, must return data.
"""

from __future__ import annotations

import json
import math
import threading
import time

import docker
import pytest
from pydantic import TypeAdapter

from protolab import cleanup, dashboards, monitor, topo
from protolab.exporter import FaultExporter
from protolab.lab import Lab
from protolab.lab.faults import Schedule
from protolab.model.faults import Fault
from protolab.spec import Task
from protolab.workloads.converter_runner import ConverterRunner
from protolab.workloads.dis_runner import DisRunner

pytestmark = pytest.mark.integration
RUN_ID = "itest-monitoring"
WORKLOAD_SECONDS = 8.0
DIS_TASK = {"kind": "dis", "name": "dis", "sender": "h1", "receiver": "h2", "messages_per_second": 500,
            "duration": f"{WORKLOAD_SECONDS:g}s", "groups": 4, "share": 1.0, "busy_loop": False}  # fmt: skip
CONVERTER_TASK = {"kind": "converter", "name": "cv", "host_messages_per_second": 40, "wan_messages_per_second": 500,
                  "arrival": "constant", "wan_groups": 4, "duration": f"{WORKLOAD_SECONDS - 2:g}s"}  # fmt: skip
DOWN_AT, UP_AT = 2.0, 5.0


def _queries() -> list[tuple[str, dict[str, str]]]:
    out = []
    for path in sorted(dashboards.DASHBOARDS_DIR.glob("*.json")):  # the committed JSON, as Grafana loads it
        for q in dashboards.panel_queries(json.loads(path.read_text())):
            out.append((path.stem, q))
    return out


QUERIES = _queries()


def substitute(expr: str) -> str:
    """Grafana's template variables as a user picks them: this run, all nodes."""
    return expr.replace("$run", RUN_ID).replace("$node", ".*")


@pytest.fixture(scope="module")
def live():
    """Lab + stack + faults + traffic; yields (Prometheus, start, end) of the workload window."""
    client = docker.from_env()
    t = topo.build("converter_lan", {"layout": "converter_100_100", "hosts": 3})
    exporter = FaultExporter()
    try:
        with Lab(t, RUN_ID, {h.name: "protolab/node:latest" for h in t.hosts}) as lab:
            monitor.up(client)
            target = exporter.serve(client)
            assert target is not None, "the fault exporter could not listen on the management gateway"
            dis = DisRunner(TypeAdapter(Task).validate_python(DIS_TASK), lab)
            conv = ConverterRunner(TypeAdapter(Task).validate_python(CONVERTER_TASK), lab)
            monitor.write_targets(lab.targets({**dis.scrape_ports(), **conv.scrape_ports()}) + [target])
            prom = monitor.Prometheus()
            prom.wait_targets({h.name for h in t.hosts} | {"orchestrator"})
            events = [
                *Fault.model_validate({"link": ["h3", "s1"], "at": f"{DOWN_AT}s", "action": "down"}).events(9),
                *Fault.model_validate({"link": ["h3", "s1"], "at": f"{UP_AT}s", "action": "up"}).events(9),
            ]
            pairs = [(f"h{i}", topo.lan_ip(1, i % 3 + 1).split("/")[0]) for i in (1, 2, 3)]
            threads = [
                threading.Thread(
                    target=lab.exec, args=(src, ["ping", "-q", "-i", "0.01", "-w", str(int(WORKLOAD_SECONDS)), dst])
                )
                for src, dst in pairs
            ]
            dis.prepare()  # the receiver has joined its groups
            conv.prepare()  # C_2 and the C_1s listen
            threads += [threading.Thread(target=dis.run), threading.Thread(target=conv.run)]
            start = time.time()
            schedule = Schedule(events, lab, on_event=exporter.on_event)
            for th in threads:
                th.start()
            schedule.start(time.monotonic())
            for th in threads:
                th.join()
            assert dis.receiver_report.get("messages", 0) > 0, (dis.sender_report, dis.receiver_report)
            assert all(int(r.get("received") or 0) > 0 for n, r in conv.reports.items() if n.startswith("h")), (
                conv.reports
            )
            done = schedule.stop()
            assert [e.action for e in done] == ["down", "up"], done
            time.sleep(3)  # the last scrapes and rule evaluations
            yield prom, start, time.time()
    finally:
        exporter.close()
        monitor.down()
        left = cleanup.leftovers()
        if left:
            cleanup.clean(verbose=False)
        assert left == [], f"left behind: {left}"


def _has_values(result: list[dict]) -> bool:
    return any(not math.isnan(float(v)) for series in result for _, v in series.get("values", []))


@pytest.mark.parametrize(("dashboard", "query"), QUERIES, ids=[f"{d}:{q['panel']}:{q['ref']}" for d, q in QUERIES])
def test_panel_query_returns_data(live, dashboard, query):
    prom, start, end = live
    expr = substitute(query["expr"])
    assert "$" not in expr, f"unsubstituted variable in {expr}"
    result = prom.query_range(expr, start, end, step=1)  # raises on a parse error, with Prometheus's message
    assert _has_values(result), f"{dashboard} / {query['panel']}: no data for {expr}"


def _converter_only(query: dict[str, str]) -> bool:
    return 'role=~"converter' in query["expr"]


def test_every_dashboard_was_queried_and_the_converters_panels_among_them():
    """Guards the parametrization itself: the dashboards exist, and the messages and converter panels are among
    those that must return data."""
    assert {d for d, _ in QUERIES} == {"overview", "host-studies", "bundle-converter", "link-fidelity"}
    assert len([q for _, q in QUERIES if _converter_only(q)]) >= 2
    assert sum(q["family"] == "messages" for _, q in QUERIES) >= 8


def test_fault_annotation_marks_the_outage(live):
    """The annotation's query is 1 exactly while h3's cable was out (within a scrape and a 5 s rule)."""
    prom, start, end = live
    result = prom.query_range(dashboards.FAULT_ANNOTATION["expr"], start, end, step=1)
    series = [s for s in result if s["metric"].get("link") == "h3-s1"]
    assert series, result
    times = [float(t) - start for t, _ in series[0]["values"]]
    assert DOWN_AT - 0.5 <= min(times) <= DOWN_AT + 2.5, times
    assert UP_AT - 0.5 <= max(times) <= UP_AT + 2.5, times


def test_dashboard_url_or_one_line_without_grafana(capsys):
    """`up` prints the dashboard URL when Grafana's image is here, else exactly one line saying it is not."""
    if monitor.grafana_available():
        pytest.skip("covered by test_grafana_serves_the_dashboards (the Grafana image is here)")
    client = docker.from_env()
    try:
        assert monitor.up(client) is False
        lines = [line for line in capsys.readouterr().out.splitlines() if line.strip()]
        assert lines == [
            f"Grafana image {monitor.grafana_image()} is not on this machine (nothing is pulled): "
            f"monitoring with Prometheus alone at {monitor.prometheus_url()}"
        ]
        names = {c.name for c in client.containers.list()}
        assert "plab-prometheus" in names and "plab-grafana" not in names
    finally:
        monitor.down()


def test_grafana_serves_the_dashboards(capsys):
    if not monitor.grafana_available():
        pytest.skip(f"{monitor.grafana_image()} is not on this machine and no registry is reachable here")
    import requests

    try:
        assert monitor.up(docker.from_env()) is True
        assert f"{monitor.grafana_url()}{monitor.GRAFANA_HOME}" in capsys.readouterr().out
        deadline = time.monotonic() + 60
        found: list[str] = []
        while time.monotonic() < deadline and len(found) < len(dashboards.DASHBOARDS):
            try:
                r = requests.get(f"{monitor.grafana_url()}/api/search", params={"type": "dash-db"}, timeout=2)
                found = sorted(d["uid"] for d in r.json()) if r.ok else []
            except requests.RequestException:
                pass
            time.sleep(1)
        assert found == sorted(dashboards.DASHBOARDS)
    finally:
        monitor.down()
