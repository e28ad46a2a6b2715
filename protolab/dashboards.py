"""Grafana dashboards as code (grafanalib): `protolab dashboards` writes dashboards/*.json, `--check` fails
when the committed JSON differs from what this module generates.

Every panel reads the recording rules of images/monitor/rules/protolab.rules.yml. Every dashboard has
the template variables `run` (newest first) and `node`, and the fault annotation: while
`link:protolab_fault_active:max` is 1 (a link is down, or a step change is in force), every time panel
shows a red region labelled with the link and the fault.

Each panel carries `"protolab": {"family": ...}`: which workload produces its data. `lab`: any lab (the
agents); `faults`: a phase with a fault schedule (the orchestrator's exporter); `messages`: a DIS host or a
converter (protolab_messages_*_total, protolab_message_delay_seconds). The integration test
(tests/integration/test_monitoring.py) runs every panel's query against a real Prometheus per family.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grafanalib._gen import DashboardEncoder
from grafanalib.core import (
    Annotations,
    Dashboard,
    GridPos,
    RowPanel,
    StateTimeline,
    Target,
    Template,
    Templating,
    Time,
    TimeSeries,
)

REPO = Path(__file__).resolve().parent.parent
DASHBOARDS_DIR = REPO / "dashboards"
DATASOURCE = {"type": "prometheus", "uid": "protolab-prometheus"}  # compose/grafana/provisioning
SEL = 'run=~"$run", node=~"$node"'
FAMILIES = ("lab", "faults", "messages")


@dataclass(frozen=True)
class P:
    """One panel: title, queries (expr, legend), unit, the family of workload that produces its data."""

    title: str
    queries: Sequence[tuple[str, str]]
    unit: str = "short"
    family: str = "lab"
    description: str = ""
    kind: str = "timeseries"


def _q(expr: str, legend: str) -> tuple[str, str]:
    return expr, legend


# --------------------------------------------------------------------------------------------------
# panels, shared by the dashboards

CPU_RATIO = P(
    "CPU per node (share of its budget)",
    [_q(f"node:protolab_cpu_ratio:rate5s{{{SEL}}}", "{{node}}")],
    "percentunit",
    description="CPU time of the node's container over its CPU budget (over one core when it has none).",
)
CPU_CORES = P("CPU per node (cores)", [_q(f"node:protolab_cpu_cores:rate5s{{{SEL}}}", "{{node}}")], "none")
CPU_ROLE = P("CPU per role (cores, summed)", [_q('role:protolab_cpu_cores:rate5s{run=~"$run"}', "{{role}}")], "none")
PPS = P(
    "Packets/s per node",
    [_q(f"node:protolab_packets_per_second:rate5s{{{SEL}}}", "{{node}} {{direction}}")],
    "pps",
)
BPS = P(
    "Wire rate per node",
    [_q(f"node:protolab_bits_per_second:rate5s{{{SEL}}}", "{{node}} {{direction}}")],
    "bps",
)
MESSAGES = P(
    "Messages/s per node",
    [_q(f"node:protolab_messages_per_second:rate5s{{{SEL}}}", "{{node}} {{direction}}")],
    "short",
    "messages",
    "Application messages (DIS PDUs, bundles) sent and received, from the DIS hosts and converters.",
)
DELAY = P(
    "One-way message delay p50 / p99",
    [
        _q(f"node:protolab_message_delay_seconds:p50_rate5s{{{SEL}}}", "{{node}} p50"),
        _q(f"node:protolab_message_delay_seconds:p99_rate5s{{{SEL}}}", "{{node}} p99"),
    ],
    "s",
    "messages",
    "Percentiles of the receivers' delay histogram over 5 s windows (linear within a bucket).",
)
DROPS = P(
    "Drops/s per node",
    [_q(f"node:protolab_drops_per_second:rate5s{{{SEL}}}", "{{node}} {{direction}}")],
    "pps",
)
DROP_RATIO = P(
    "Drop ratio per node",
    [_q(f"node:protolab_drop_ratio:rate5s{{{SEL}}}", "{{node}} {{direction}}")],
    "percentunit",
    description="Dropped / (passed + dropped) at the node's interfaces; absent while nothing moves.",
)
FAULTS = P(
    "Active faults per link",
    [_q("link:protolab_fault_active:max", "{{link}} {{fault}}")],
    "none",
    "faults",
    "1 while a fault of the schedule is in force on the link (down, or a step change).",
    "state",
)
IF_BPS = P(
    "Wire rate per interface",
    [_q(f"8 * interface:protolab_bytes_per_second:rate5s{{{SEL}}}", "{{interface}} {{direction}}")],
    "bps",
)
IF_PPS = P(
    "Packets/s per interface",
    [_q(f"interface:protolab_packets_per_second:rate5s{{{SEL}}}", "{{interface}} {{direction}}")],
    "pps",
)
IF_DROPS = P(
    "Drops and errors/s per interface",
    [
        _q(f"interface:protolab_drops_per_second:rate5s{{{SEL}}}", "{{interface}} {{direction}} drops"),
        _q(f"interface:protolab_errors_per_second:rate5s{{{SEL}}}", "{{interface}} {{direction}} errors"),
    ],
    "pps",
)
FAULT_EVENTS = P(
    "Fault events (last minute)",
    [_q("link:protolab_fault_events:increase1m", "{{link}} {{action}}")],
    "none",
    "faults",
)
FAULT_TIMING = P(
    "Fault timing error (actual - planned, last event)",
    [_q("protolab_fault_timing_error_seconds", "{{link}}")],
    "s",
    "faults",
    "The orchestrator's gauge; the planned-vs-actual table is the run's faults.csv.",
)
CONVERTER_CPU = P(
    "Converter CPU (share of its budget)",
    [_q('node:protolab_cpu_ratio:rate5s{run=~"$run", role=~"converter.*"}', "{{node}}")],
    "percentunit",
    "messages",
    "Nodes whose role starts with 'converter' (the bundle converter, issue 5).",
)
CONVERTER_MSGS = P(
    "Converter messages/s in and out",
    [_q('node:protolab_messages_per_second:rate5s{run=~"$run", role=~"converter.*"}', "{{node}} {{direction}}")],
    "short",
    "messages",
)
CONVERTER_PRIORITY = P(
    "Priority messages/s: sent, received, resent, repeats set aside",
    [_q(f"node:protolab_priority_messages_per_second:rate5s{{{SEL}}}", "{{node}} {{direction}}")],
    "short",
    "messages",
    "Reliable delivery between C_2 and the hosts (reliable: true): resent = not acknowledged in time.",
)

# dashboard uid -> (title, tags, description, rows of panels)
DASHBOARDS: dict[str, tuple[str, list[str], str, list[tuple[str, list[P]]]]] = {
    "protolab-overview": (
        "protolab overview",
        ["protolab"],
        "Every lab: CPU, packets/s, messages/s, delay, drops, active faults. Red regions: faults in force.",
        [
            ("CPU", [CPU_RATIO, CPU_ROLE]),
            ("Traffic", [PPS, BPS]),
            ("Messages", [MESSAGES, DELAY]),
            ("Drops and faults", [DROPS, FAULTS]),
        ],
    ),
    "protolab-host-studies": (
        "protolab host studies (DIS hosts)",
        ["protolab", "host-studies"],
        "CPU of hosts vs the multicast load they receive (thesis tables 4-1 ff.), packets/s vs packet size.",
        [
            ("Host CPU", [CPU_RATIO, CPU_CORES]),
            ("Load", [MESSAGES, IF_PPS]),
            ("Delay and loss", [DELAY, DROP_RATIO]),
        ],
    ),
    "protolab-bundle-converter": (
        "protolab bundle converter",
        ["protolab", "converter"],
        "The DIS bundle converter: its CPU and message rates in and out, end-to-end delay, the WAN link.",
        [
            ("Converter", [CONVERTER_CPU, CONVERTER_MSGS]),
            ("End to end", [DELAY, IF_BPS]),
            ("Loss", [DROP_RATIO, DROPS]),
            ("Priority", [CONVERTER_PRIORITY]),
        ],
    ),
    "protolab-link-fidelity": (
        "protolab link fidelity",
        ["protolab", "link-fidelity"],
        "Configured vs delivered link behaviour under impairments and fault schedules.",
        [
            ("Links", [IF_BPS, IF_PPS]),
            ("Loss", [IF_DROPS, DROP_RATIO]),
            ("Faults", [FAULTS, FAULT_EVENTS, FAULT_TIMING]),
        ],
    ),
}

FAULT_ANNOTATION = {
    "name": "faults",
    "datasource": DATASOURCE,
    "enable": True,
    "iconColor": "rgba(214, 39, 40, 0.9)",
    "expr": "link:protolab_fault_active:max > 0",
    "step": "1s",
    "titleFormat": "fault: {{fault}}",
    "textFormat": "link {{link}}",
    "tagKeys": "link,fault",
    "useValueForTime": False,
}


def _panel(p: P, grid: GridPos) -> Any:
    targets = [
        Target(expr=e, legendFormat=legend, refId=chr(ord("A") + i), datasource=DATASOURCE, interval="1s")
        for i, (e, legend) in enumerate(p.queries)
    ]
    common = {
        "title": p.title,
        "dataSource": DATASOURCE,
        "targets": targets,
        "gridPos": grid,
        "description": p.description or None,
        "extraJson": {"protolab": {"family": p.family}},
    }
    if p.kind == "state":
        return StateTimeline(**common, mappings=[], mergeValues=True)
    return TimeSeries(**common, unit=p.unit, lineWidth=2, fillOpacity=8, showPoints="never", spanNulls=False)


def _templating() -> Templating:
    run = Template(
        name="run",
        label="run",
        query="label_values(protolab_cpu_seconds_total, run)",
        dataSource=DATASOURCE,
        sort=2,  # alphabetical descending: run ids start with their UTC start time, so the newest is first
        refresh=2,  # on time range change: a new run shows up without reloading
    )
    node = Template(
        name="node",
        label="node",
        query='label_values(protolab_cpu_seconds_total{run=~"$run"}, node)',
        dataSource=DATASOURCE,
        includeAll=True,
        multi=True,
        allValue=".*",
        default="$__all",
        refresh=2,
    )
    return Templating(list=[run, node])


def build(uid: str) -> Dashboard:
    title, tags, description, rows = DASHBOARDS[uid]
    panels: list[Any] = []
    y = 0
    for row_title, row_panels in rows:
        panels.append(RowPanel(title=row_title, gridPos=GridPos(h=1, w=24, x=0, y=y)))
        y += 1
        w = 24 // len(row_panels)
        for i, p in enumerate(row_panels):
            panels.append(_panel(p, GridPos(h=8, w=w, x=i * w, y=y)))
        y += 8
    return Dashboard(
        title=title,
        uid=uid,
        description=description,
        tags=tags,
        panels=panels,
        templating=_templating(),
        annotations=Annotations(list=[FAULT_ANNOTATION]),
        time=Time("now-15m", "now"),
        refresh="5s",
        timezone="utc",
        graphTooltip=1,  # shared crosshair
    ).auto_panel_ids()


def render(uid: str) -> str:
    return json.dumps(build(uid).to_json_data(), cls=DashboardEncoder, sort_keys=True, indent=2) + "\n"


def generated() -> dict[str, str]:
    """File name -> JSON text of every dashboard."""
    return {f"{uid.removeprefix('protolab-')}.json": render(uid) for uid in DASHBOARDS}


def write(directory: Path = DASHBOARDS_DIR) -> list[Path]:
    out = []
    for name, text in generated().items():
        path = directory / name
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
        out.append(path)
    return out


def check(directory: Path = DASHBOARDS_DIR) -> list[str]:
    """Problems: committed JSON that differs from the generator's, missing, or not generated at all."""
    want = generated()
    problems = []
    for name, text in want.items():
        path = directory / name
        if not path.exists():
            problems.append(f"{path} is missing")
        elif path.read_text() != text:
            problems.append(f"{path} differs from the generator's output")
    for path in sorted(directory.glob("*.json")):
        if path.name not in want:
            problems.append(f"{path} is not generated by protolab.dashboards (remove it or add it there)")
    return problems


def panel_queries(dashboard_json: dict[str, Any]) -> list[dict[str, str]]:
    """Every query of a dashboard's JSON: panels' targets and annotations, with the panel's family."""
    out = []
    for panel in dashboard_json.get("panels", []):
        family = (panel.get("protolab") or {}).get("family", "lab")
        for t in panel.get("targets", []):
            out.append({"panel": panel["title"], "ref": t.get("refId", ""), "expr": t["expr"], "family": family})
    for a in dashboard_json.get("annotations", {}).get("list", []):
        if a.get("expr"):
            out.append({"panel": f"annotation {a['name']}", "ref": "", "expr": a["expr"], "family": "faults"})
    return out
