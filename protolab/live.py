"""A live terminal view of a run (`protolab run --live`), for machines where Grafana cannot run.

Once a second a background thread asks Prometheus what the overview dashboard shows, with the same
expressions (protolab.dashboards, `$run` set to the run's id): per node its CPU in cores, packets/s received
and sent, message delay p99 where the node has it, and the faults in force (`link:protolab_fault_active:max`).
rich's Live draws it on stderr under a header with the run's progress; lines printed meanwhile go above it.

`snapshot(query, run_id)` and `table(data)` are pure: a query is any callable expr -> Prometheus vector result,
as `monitor.Prometheus.query` returns. A query that fails or times out is named in the header and the view
goes on; nothing here raises into the run (the thread is a daemon, `stop` joins it with a timeout).
"""

from __future__ import annotations

import json
import logging
import math
import re
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import requests
from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.table import Table
from rich.text import Text

from . import dashboards
from .errors import MonitoringError

log = logging.getLogger(__name__)

Query = Callable[[str], list[dict[str, Any]]]
REFRESH_SECONDS = 1.0
QUERY_TIMEOUT_SECONDS = 2.0  # per query: the view is a second behind at most a few times over
STOP_TIMEOUT_SECONDS = 3.0
MISSING = "—"

# name -> the dashboards' expression (with $run and $node of their template variables)
EXPRESSIONS: dict[str, str] = {
    "cpu_cores": dashboards.CPU_CORES.queries[0][0],
    "packets_per_second": dashboards.PPS.queries[0][0],
    "delay_p99": next(e for e, legend in dashboards.DELAY.queries if legend.endswith("p99")),
    "faults": dashboards.FAULT_ANNOTATION["expr"],  # link:protolab_fault_active:max > 0
}


def queries(run_id: str | None) -> dict[str, str]:
    """EXPRESSIONS for one run (every run when None) and every node."""
    run = f"run={json.dumps(run_id)}" if run_id else 'run=~".+"'
    out = {k: e.replace('run=~"$run"', run).replace(', node=~"$node"', "") for k, e in EXPRESSIONS.items()}
    for k, e in out.items():
        if "$" in e:
            raise ValueError(f"live query {k}: a template variable is left in {e!r} (protolab.dashboards changed)")
    return out


def http_query(url: str, timeout: float = QUERY_TIMEOUT_SECONDS) -> Query:
    """An instant query against Prometheus at `url` with its own session (the view's thread only) and timeout."""
    session = requests.Session()

    def query(expr: str) -> list[dict[str, Any]]:
        r = session.get(f"{url}/api/v1/query", params={"query": expr}, timeout=timeout)
        body = r.json() if r.headers.get("content-type", "").startswith("application/json") else {}
        if r.status_code != 200 or body.get("status") != "success":
            raise MonitoringError(f"HTTP {r.status_code}: {body.get('error', r.text[:120])}")
        return body["data"]["result"]

    return query


@dataclass(frozen=True)
class NodeRow:
    node: str
    role: str = ""
    cpu_cores: float | None = None
    rx_pps: float | None = None
    tx_pps: float | None = None
    delay_p99: float | None = None  # seconds


@dataclass(frozen=True)
class LiveData:
    nodes: list[NodeRow] = field(default_factory=list)
    faults: list[tuple[str, str]] = field(default_factory=list)  # (link or node, fault kind)
    errors: list[str] = field(default_factory=list)  # "query name: why", one per failed query
    at: float = 0.0  # time.time() of the snapshot

    @property
    def unreachable(self) -> bool:
        """Every query failed: Prometheus is down or not answering."""
        return len(self.errors) >= len(EXPRESSIONS)


def _value(sample: dict[str, Any]) -> float | None:
    v = float(sample["value"][1])
    return None if math.isnan(v) else v


def _natural(name: str) -> list[Any]:
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]


def snapshot(query: Query, run_id: str | None = None, now: Callable[[], float] = time.time) -> LiveData:
    """What the view shows, from one instant query per expression; a failing query is recorded, never raised."""
    nodes: dict[str, dict[str, Any]] = {}
    faults: list[tuple[str, str]] = []
    errors: list[str] = []

    def node(metric: dict[str, str]) -> dict[str, Any]:
        n = nodes.setdefault(metric.get("node", "?"), {"role": ""})
        n["role"] = n["role"] or metric.get("role", "")
        return n

    for name, expr in queries(run_id).items():
        try:
            for s in query(expr):
                metric = s.get("metric", {})
                if name == "faults":
                    if (_value(s) or 0) > 0:
                        faults.append((metric.get("link", "?"), metric.get("fault", "?")))
                elif name == "packets_per_second":
                    key = {"receive": "rx_pps", "transmit": "tx_pps"}.get(metric.get("direction", ""))
                    if key:
                        node(metric)[key] = _value(s)
                else:
                    node(metric)[name] = _value(s)
        except Exception as exc:
            errors.append(f"{name}: {type(exc).__name__}: {str(exc)[:160]}")
    rows = [NodeRow(node=n, **fields) for n, fields in sorted(nodes.items(), key=lambda kv: _natural(kv[0]))]
    return LiveData(rows, sorted(faults), errors, now())


def _cores(v: float | None) -> str:
    return MISSING if v is None else f"{v:.2f}"


def _pps(v: float | None) -> str:
    return MISSING if v is None else f"{v:,.0f}" if abs(v) >= 100 else f"{v:,.1f}"


def _delay(v: float | None) -> str:
    """Seconds shown as results.display shows them: ms below 1 s."""
    if v is None or math.isinf(v):
        return MISSING
    if abs(v) >= 1:
        return f"{v:.3f} s" if abs(v) < 10 else f"{v:.2f} s"
    ms = v * 1e3
    return f"{ms:.3f} ms" if abs(ms) < 10 else f"{ms:.2f} ms"


def table(data: LiveData) -> RenderableType:
    """The nodes' table and the active faults."""
    nodes = Table(box=None, header_style="bold", pad_edge=False, expand=False)
    nodes.add_column("node")
    nodes.add_column("role")
    for title in ("CPU (cores)", "rx (pkt/s)", "tx (pkt/s)", "delay p99"):
        nodes.add_column(title, justify="right")
    for r in data.nodes:
        nodes.add_row(r.node, r.role, _cores(r.cpu_cores), _pps(r.rx_pps), _pps(r.tx_pps), _delay(r.delay_p99))
    if not data.nodes:
        nodes.add_row(Text("no node data yet", style="dim"), "", "", "", "", "")
    if not data.faults:
        return Group(nodes, Text("no active faults", style="dim"))
    faults = Table(box=None, header_style="bold red", pad_edge=False, title=None)
    faults.add_column("link/node")
    faults.add_column("fault")
    for where, kind in data.faults:
        faults.add_row(where, kind, style="red")
    return Group(nodes, Text(f"active faults: {len(data.faults)}", style="bold red"), faults)


def header(experiment: str, run_id: str | None, progress: str, phase: str | None, data: LiveData | None,
           now: float) -> Text:  # fmt: skip
    """Experiment and run, the progress line and phase, and what is wrong with Prometheus if anything."""
    t = Text()
    t.append(f"{experiment}", style="bold")
    if run_id:
        t.append(f"  run {run_id}", style="dim")
    t.append("\n" + (progress or "starting"))
    if phase:
        t.append(f"  phase {phase}", style="cyan")
    if data is None:
        t.append("\nPrometheus: waiting for the first answer", style="yellow")
    elif data.unreachable:
        t.append(f"\nPrometheus unreachable ({data.errors[0]}); the run goes on", style="bold red")
    elif data.errors:
        t.append(f"\nPrometheus: {len(data.errors)} quer{'y' if len(data.errors) == 1 else 'ies'} failed: "
                 + "; ".join(data.errors), style="red")  # fmt: skip
    if data is not None and now - data.at > 3 * REFRESH_SECONDS:
        t.append(f"\ndata {now - data.at:.0f}s old", style="yellow")
    return t


class Counters(Protocol):
    """What orchestrator.session.Progress counts."""

    total: int
    done: int
    t0: float


def progress_line(progress: Counters, what: str) -> str:
    """The line Progress.step prints: '[3/12  17% elapsed 40s ETA 200s] p002 rate=10Mbit rep 1'."""
    elapsed = time.monotonic() - progress.t0
    eta = "?" if not progress.done else f"{elapsed / progress.done * (progress.total - progress.done):.0f}s"
    pct = 100 * progress.done / progress.total if progress.total else 0
    return f"[{progress.done + 1}/{progress.total} {pct:3.0f}% elapsed {elapsed:.0f}s ETA {eta}] {what}"


class LiveView:
    """The live display: start(), update(progress) as the run goes, stop(). Never raises into the run."""

    def __init__(self, experiment: str, run_id: str | None, query: Query, console: Console | None = None,
                 interval: float = REFRESH_SECONDS) -> None:  # fmt: skip
        self.experiment, self.run_id, self.query, self.interval = experiment, run_id, query, interval
        self.console = console or Console(stderr=True)
        self.progress, self.phase = "", ""
        self.data: LiveData | None = None
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._live: Live | None = None

    def render(self) -> RenderableType:
        data = self.data
        top = header(self.experiment, self.run_id, self.progress, self.phase, data, time.time())
        return Group(top, table(data)) if data is not None else top

    def _safe_render(self) -> RenderableType:
        try:
            return self.render()
        except Exception as exc:  # a bug here must not take the run down
            return Text(f"live view: {type(exc).__name__}: {exc}", style="red")

    def _poll(self) -> None:
        while not self._stopping.is_set():
            t0 = time.monotonic()
            try:
                self.data = snapshot(self.query, self.run_id)
            except Exception as exc:
                self.data = LiveData(errors=[f"live view: {type(exc).__name__}: {exc}"], at=time.time())
            self._stopping.wait(max(0.05, self.interval - (time.monotonic() - t0)))

    def start(self) -> bool:
        """Begin polling and drawing; False (and nothing running) when the display cannot start."""
        try:
            # plain lines printed to a terminal go above the live area; a piped stdout is left alone
            self._live = Live(get_renderable=self._safe_render, console=self.console, transient=True,
                              refresh_per_second=1 / self.interval, redirect_stdout=sys.stdout.isatty(),
                              redirect_stderr=True)  # fmt: skip
            self._live.start()
            self._thread = threading.Thread(target=self._poll, name="protolab-live", daemon=True)
            self._thread.start()
            return True
        except Exception:
            log.debug("live view did not start", exc_info=True)
            self.stop()
            return False

    def update(self, progress: str | None = None, phase: str | None = None) -> None:
        """A new progress line (its phase cleared), and/or the phase now running."""
        if progress is not None:
            self.progress, self.phase = progress, ""
        if phase is not None:
            self.phase = phase
        try:
            if self._live is not None:
                self._live.refresh()
        except Exception:
            log.debug("live view refresh failed", exc_info=True)

    def stop(self, timeout: float = STOP_TIMEOUT_SECONDS) -> None:
        """Stop polling (waiting `timeout` at most for a query under way) and clear the display; idempotent."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
        live, self._live = self._live, None
        if live is not None:
            try:
                live.stop()
            except Exception:
                log.debug("live view stop failed", exc_info=True)
