"""Run a planned experiment: monitoring up, each lab deployed once, every point x repetition measured,
everything torn down (also on SIGINT, SIGTERM, SIGHUP and exceptions), and a results folder written.

The run holds the machine's lab-state lock throughout (a second run or `clean` is refused at once) and records
everything it makes in its ledger before making it (protolab.ownership). Each measured row is appended to
rows.jsonl (fsynced) as it is measured, each task's figures to raw/tasks/, each fault event to
raw/faults.jsonl, so nothing measured is lost whatever happens to the process; tidy.csv and summary.json are
always written at the end, INVALID with the reason when anything went wrong. A phase's tasks get a watchdog:
past the phase's duration + the margin, the run stops as INVALID naming the task.

Progress goes to the terminal as one line per measurement with an ETA. Measurement windows run from the
phase start + warmup to the phase end; interface rates and CPU come from Prometheus's raw samples in that
window; task figures from the workloads' own reports.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import logging
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from . import dockerhost, environment, faults, guard, impair, monitor, naming, ownership, selfcheck, topo
from .errors import EXIT_INTERRUPTED, EXIT_INVALID, EXIT_OK, TaskHungError
from .exporter import FaultExporter
from .lab import Lab
from .spec import Measurement, NodeSpec, Plan, Point
from .workloads import runner_for

log = logging.getLogger(__name__)
RESULTS = Path(__file__).resolve().parent.parent / "results"
SCRAPE_SETTLE_SECONDS = 1.5  # one more scrape after a phase so its last counters are in Prometheus
LATE_START_NOTICE_SECONDS = 0.5  # a task starting later than this after its phase is said in the log
TASK_TIMEOUT_MARGIN_SECONDS = 60.0  # a phase's tasks still running this long after its duration: hung

_SERIES = {
    ("interface_rate", "rx", "bits"): "protolab_interface_receive_bytes_total",
    ("interface_rate", "tx", "bits"): "protolab_interface_transmit_bytes_total",
    ("interface_rate", "rx", "packets"): "protolab_interface_receive_packets_total",
    ("interface_rate", "tx", "packets"): "protolab_interface_transmit_packets_total",
}


def phase_window(t0: float, runners: list[Any], warmup: float, seconds: float) -> tuple[float, float]:
    """The wall-clock window a phase's counters are measured over: from `warmup` after its traffic began to its
    end. A task whose traffic began late says so with `started` (an iperf3 UDP test restarted after its one-datagram
    handshake was lost on a lossy link: seconds late, so a window from the phase's start saw no traffic at all);
    the latest such start moves the window with it."""
    late = max([r.started - t0 for r in runners if r.started is not None] + [0.0])
    return t0 + late + warmup, t0 + late + seconds


class Progress:
    def __init__(self, total: int) -> None:
        self.total, self.done, self.t0 = total, 0, time.monotonic()

    def step(self, what: str) -> None:
        elapsed = time.monotonic() - self.t0
        eta = "?" if not self.done else f"{elapsed / self.done * (self.total - self.done):.0f}s"
        pct = 100 * self.done / self.total
        print(f"[{self.done + 1}/{self.total} {pct:3.0f}% elapsed {elapsed:.0f}s ETA {eta}] {what}", flush=True)

    def finish(self) -> None:
        self.done += 1


def _selector(m: Measurement) -> tuple[str, float]:
    """PromQL selector for a measurement, and the factor from counter units to the column's unit."""
    if m.kind == "cpu":
        return f'protolab_cpu_seconds_total{{node="{m.node}"}}', 1.0
    metric = _SERIES[(m.kind, m.direction, m.unit)]
    factor = 8.0 if m.unit == "bits" else 1.0
    return f'{metric}{{node="{m.node}",interface="{m.interface}"}}', factor


def _scrape_ports(points: list[Point]) -> dict[str, list[int]]:
    """Ports of workload processes with their own /metrics (DIS hosts) per node, over all tasks of a lab's
    points: their targets are in Prometheus from the deploy on (down while nothing listens), because Prometheus
    applies new targets only every 5 s, and a sender that lives a few seconds would otherwise never be scraped."""
    out: dict[str, list[int]] = {}
    for p in points:
        for phase in p.experiment.phases:
            for t in phase.tasks:
                for node, ports in t.scrape_ports().items():
                    out[node] = sorted({*out.get(node, []), *ports})
    return out


class Interrupted(BaseException):  # noqa: N818 (like KeyboardInterrupt: not an error of the run's own)
    pass


class Signals:
    """SIGINT, SIGTERM and SIGHUP alike: the first stops the run where it is (Interrupted); while tearing down,
    later ones are said and otherwise ignored, so teardown and the results always finish. After SIGHUP (the
    terminal is gone) output goes to console.log in the results folder."""

    HANDLED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

    def __init__(self, log_dir: Path) -> None:
        self.log_dir, self.received, self.finishing = log_dir, [], False
        self.old: dict[int, Any] = {}

    def install(self) -> None:
        if threading.current_thread() is threading.main_thread():
            for s in self.HANDLED:
                self.old[s] = signal.signal(s, self._handle)

    def restore(self) -> None:
        for s, h in self.old.items():
            signal.signal(s, h)

    def _handle(self, signum: int, _frame: Any) -> None:
        name = signal.Signals(signum).name
        self.received.append(name)
        if signum == signal.SIGHUP:
            sys.stdout = sys.stderr = (self.log_dir / "console.log").open("a", buffering=1)
        if self.finishing:
            print(f"\n{name}: still tearing down and writing the results (measured rows are on disk already)",
                  flush=True)  # fmt: skip
            return
        raise Interrupted(name)


class ExperimentRun:
    """One `protolab run`: see the module docstring. run() returns the exit status (protolab.errors)."""

    def __init__(self, plan: Plan, results_root: Path = RESULTS, keep: bool = False,
                 task_timeout_margin: float = TASK_TIMEOUT_MARGIN_SECONDS) -> None:  # fmt: skip
        self.plan, self.keep = plan, keep
        self.task_timeout_margin = task_timeout_margin
        self.results_root = results_root
        self.rows: list[dict[str, Any]] = []
        self.guard: dict[str, Any] = {}
        self.invalid: list[str] = []
        self.deployments: list[dict[str, Any]] = []
        self.actions: list[str] = []
        self.monitor_pids: list[int] = []
        self.backend: impair.Backend | None = None
        self.exporter = FaultExporter()
        self.exporter_target: dict[str, Any] | None = None
        self.self_checks: list[dict[str, Any]] = []
        self.fault_rows: list[dict[str, Any]] = []  # the monitoring stack's CPU is ours too, not foreign load
        self.teardown_failures: list[str] = []
        self.status = EXIT_OK

    def run(self) -> int:
        """Hold the lab-state lock, run, and return the exit status (EXIT_OK only for a VALID run)."""
        with ownership.lab_lock("run", hint="`protolab clean --force` removes its lab under it"):
            return self._run()

    def _run(self) -> int:
        from .results.store import FAULTS_LOG, ROWS, JsonLog, RunDir

        e = self.plan.base
        client = dockerhost.client()
        images = {
            n: _image_id(client, n) for n in {s.image for p in self.plan.points for s in p.experiment.nodes.values()}
        }
        self.rundir = RunDir.create(self.results_root, e.name)
        ownership.LOCK.acquire("run", self.rundir.run_id)  # names the run in the lock's holder record
        ownership.LOCK.release()
        self.ledger = ownership.begin_run(self.rundir.run_id, self.rundir.path, keep=self.keep)
        self.rows_log, self.faults_log = JsonLog(self.rundir.path / ROWS), JsonLog(self.rundir.path / FAULTS_LOG)
        started = dt.datetime.now(dt.UTC).isoformat()
        manifest = self._manifest(started, images)
        host_before = ownership.record_host(self.ledger)
        manifest["host_state"] = {"before": host_before}
        self.rundir.write_json("manifest.json", manifest)
        print(f"results -> {self.rundir.path}", flush=True)
        signals = Signals(self.rundir.path)
        signals.install()
        raw = self.rundir.raw_writer()
        progress = Progress(sum(p.experiment.repetitions for p in self.plan.points))
        lab: Lab | None = None
        error: BaseException | None = None
        try:
            self._removed_leftovers(manifest)
            self.backend, probe = impair.choose(e.impairment_backend)
            manifest["impairment_backend"] = {
                "chosen": self.backend.name,
                "requested": e.impairment_backend,
                "probe": {k: {"available": ok, "why": why} for k, (ok, why) in probe.items()},
            }
            print(f"impairment backend: {self.backend.name} ({probe[self.backend.name][1]})", flush=True)
            monitor.up(client, ledger=self.ledger)
            self.exporter_target = self.exporter.serve(client)
            prom = monitor.Prometheus()
            self.monitor_pids = [c.attrs["State"]["Pid"] for c in client.containers.list(
                filters={"label": f"com.docker.compose.project={naming.COMPOSE_PROJECT}"})]  # fmt: skip
            groups: dict[str, list[Point]] = {}
            for p in self.plan.points:
                groups.setdefault(p.topology_key(), []).append(p)
            for gi, points in enumerate(groups.values()):
                ex = points[0].experiment
                topology = topo.build(ex.topology.kind, ex.topology.params)
                specs = {h.name: ex.nodes.get(h.name) or ex.nodes.get("default") or NodeSpec() for h in topology.hosts}
                node_images = {n: s.image for n, s in specs.items()}
                cpus = {n: s.cpus for n, s in specs.items()}
                commands = {n: s.command for n, s in specs.items()}
                print(f"deploying lab {gi + 1}/{len(groups)}: {ex.topology.kind} {ex.topology.params}", flush=True)
                lab = Lab(topology, self.rundir.run_id, node_images, cpus, commands=commands, client=client,
                          impairments=ex.impairments, backend=self.backend,
                          ledger=self.ledger.scoped(f"lab{gi + 1}"))  # fmt: skip
                lab.deploy()
                self.actions += lab.actions
                extra = _scrape_ports(points)  # DIS hosts' /metrics
                monitor.write_targets(lab.targets(extra) + ([self.exporter_target] if self.exporter_target else []))
                prom.wait_targets({h.name for h in topology.hosts})
                checked = self._self_check(lab, ex)
                self.deployments.append(
                    {
                        "topology": ex.topology.model_dump(mode="json"),
                        **lab.timings,
                        "links": lab.applied,
                        "self_check": checked,
                    }  # fmt: skip
                )
                for point in points:
                    for rep in range(point.experiment.repetitions):
                        progress.step(f"{point.id} {point.label()} rep {rep + 1}/{point.experiment.repetitions}")
                        row = self._measure(point, rep, lab, prom, raw)
                        self.rows.append(row)
                        self.rows_log.append(row)
                        progress.finish()
                monitor.write_targets([])
                if not (self.keep and gi == len(groups) - 1):
                    self._teardown_lab(lab)
                    lab = None
        except (Interrupted, KeyboardInterrupt) as exc:
            error = exc
            self.status = EXIT_INTERRUPTED
            self.invalid.append(f"interrupted ({exc or 'SIGINT'}) after {len(self.rows)} measurement(s)")
            print(f"\ninterrupted ({exc or 'SIGINT'}): tearing down", flush=True)
        except Exception as exc:
            error = exc
            self.status = EXIT_INVALID
            self.invalid.append(f"aborted: {type(exc).__name__}: {exc}")
            print(f"\naborted: {exc}\ntearing down", flush=True)
            log.debug("aborted", exc_info=True)
        finally:
            signals.finishing = True
            try:
                raw.close()
                self.exporter.close()
                if self.keep and error is None:
                    print("--keep: the lab and monitoring stay up; `make clean` removes them", flush=True)
                else:
                    self._teardown(lab)
                for f in self.teardown_failures:
                    self.invalid.append(f"teardown: {f}")
                manifest["finished_at"] = dt.datetime.now(dt.UTC).isoformat()
                manifest["environment"]["dynamic_end"] = _best_effort(environment.dynamic, {})
                manifest["deployments"] = self.deployments
                manifest["preflight_actions"] = self.actions
                manifest["host_state"]["after"] = _best_effort(ownership.hoststate.snapshot, {})
                manifest["signals"] = signals.received
                self.rundir.write_json("manifest.json", manifest)
                valid = self._finish()
                if self.status == EXIT_OK and not valid:
                    self.status = EXIT_INVALID
                if not self.teardown_failures and not self.keep:
                    self.ledger.sweep()  # the run record (and anything left) last
            finally:
                signals.restore()
        return self.status

    def _removed_leftovers(self, manifest: dict[str, Any]) -> None:
        """What killed runs left (swept by their ledgers before anything is made) goes into the manifest."""
        removed, failures = ownership.sweep_dead()
        manifest["removed_leftovers"] = removed
        for f in failures:
            raise RuntimeError(f"cannot remove what an earlier run left: {f} (try `protolab clean`)")

    def _self_check(self, lab: Lab, ex: Any) -> list[dict[str, Any]] | None:
        """Measure the impaired links before any workload; every miss makes the run invalid."""
        if not ex.self_check or not lab.impairments:
            return None
        t0 = time.monotonic()
        results = selfcheck.run_all(lab, log=lambda line: print(f"  {line}", flush=True))
        for r in results:
            self.self_checks.append(r)
            for f in r["failures"]:
                self.invalid.append(f"self-check {r['from']}->{r['to']} ({ex.topology.kind}): {f}")
        print(f"  self-check took {time.monotonic() - t0:.1f}s", flush=True)
        return results

    def _teardown_lab(self, lab: Lab) -> None:
        lab.teardown()
        self.teardown_failures += lab.teardown_failures

    def _teardown(self, lab: Lab | None) -> None:
        """Best effort, object by object: the lab, the monitoring stack, then whatever the ledger still lists
        but the run record; every failure is kept (reported as an invalid reason) and left for `clean`."""
        if lab is not None:
            self._teardown_lab(lab)
        try:
            monitor.down()
        except Exception as exc:
            log.warning("teardown: monitoring: %s", exc)  # the ledger sweep below removes it by its labels
        for f in self.ledger.sweep("session"):
            self.teardown_failures.append(f)
        for scope in {e.get("scope") for e in self.ledger.entries()} - {"session", None}:
            self.teardown_failures += self.ledger.sweep(scope)

    def _measure(self, point: Point, rep: int, lab: Lab, prom: monitor.Prometheus, raw: Any) -> dict[str, Any]:
        ex = point.experiment
        row: dict[str, Any] = {"point": point.id, "repetition": rep, **{k: _cell(v) for k, v in point.values.items()}}
        time.sleep(ex.settle)
        unshaped = _unshaped(lab)
        lab_pids = [n.pid for n in lab.nodes.values()] + self.monitor_pids
        before = guard.snapshot(unshaped, lab_pids)
        windows = []
        for phase in ex.phases:
            runners = [runner_for(t, lab) for t in phase.tasks]
            for r in runners:
                r.prepare()
            phase_seconds = max(t.duration for t in phase.tasks)
            events = [e for f in phase.faults for e in f.events(phase_seconds)]
            schedule = faults.Schedule(events, lab, on_event=self.exporter.on_event)
            schedule.start(time.monotonic())
            t0 = time.time()
            errors: list[str] = []
            threads = [threading.Thread(target=_run_task, args=(r, errors), daemon=True) for r in runners]
            for th in threads:
                th.start()
            deadline = time.monotonic() + phase_seconds + self.task_timeout_margin
            for th in threads:
                th.join(max(0.0, deadline - time.monotonic()))
            hung = [t for t, th in zip(phase.tasks, threads, strict=True) if th.is_alive()]
            done = self._end_faults(point, rep, phase.name, schedule, lab, row) if events else []
            if hung:
                names = ", ".join(f"{t.name} ({t.kind} on {', '.join(t.nodes())})" for t in hung)
                raise TaskHungError(f"{point.id} rep {rep} phase {phase.name}: task {names} still running "
                               f"{self.task_timeout_margin:g}s after the phase's {phase_seconds:g}s; "
                               "the run stops")  # fmt: skip
            if errors:
                raise RuntimeError(f"{point.id} phase {phase.name}: " + "; ".join(errors))
            for r, t in zip(runners, phase.tasks, strict=True):
                figures = r.result()
                self.rundir.write_json(f"raw/tasks/{point.id}-r{rep}-{phase.name}-{t.name}.json",
                                       {"point": point.id, "repetition": rep, "phase": phase.name, "task": t.name,
                                        "kind": t.kind, "figures": figures})  # fmt: skip
                row.update(figures)
                row.update(r.fault_edges(done))  # probes that can see outages compare them with the events
                for series, ts, value in r.series():
                    raw.write(point.id, rep, phase.name, series, {}, ts, value)
            # a task that began late (an iperf3 handshake retried on a lossy link: seconds) moves the window with it
            late = max([r.started - t0 for r in runners if getattr(r, "started", None) is not None] + [0.0])
            if late > LATE_START_NOTICE_SECONDS:
                log.info(
                    "%s rep %d phase %s: traffic began %.1fs late; measured from then", point.id, rep, phase.name, late
                )
            windows.append((phase.name, t0 + late + ex.warmup, t0 + late + phase_seconds))
        after = guard.snapshot(unshaped, lab_pids)
        figures, reasons = guard.assess(before, after)
        self.guard[f"{point.id}/{rep}"] = {"figures": figures, "reasons": reasons}
        if reasons:
            self.invalid.append(f"{point.id} rep {rep} ({point.label()}): " + "; ".join(reasons))
        time.sleep(SCRAPE_SETTLE_SECONDS)
        if any(phase.faults for phase in ex.phases) and self.exporter_target:
            # the fault timeline as Prometheus saw it (what dashboards overlay), kept with the raw series
            for phase_name, ws, we in windows:
                for labels, samples in prom.samples("protolab_fault_active", ws - ex.warmup - 1, we + 1):
                    for s in samples:
                        raw.write(point.id, rep, phase_name, "fault_active", labels, s.timestamp, s.value)
        for m in ex.measurements:
            expr, factor = _selector(m)
            values = []
            for phase_name, ws, we in windows:
                if m.phase is not None and m.phase != phase_name:
                    continue
                for labels, samples in prom.samples(expr, ws - 1, we + 1):
                    for s in samples:
                        raw.write(point.id, rep, phase_name, m.column, labels, s.timestamp, s.value)
                    inside = [s for s in samples if ws <= s.timestamp <= we]
                    rate = monitor.counter_rate(inside)
                    if rate is not None:
                        values.append(rate * factor)
            row[m.column] = sum(values) / len(values) if values else None
        return row

    def _end_faults(self, point: Point, rep: int, phase: str, schedule: Any, lab: Lab, row: dict[str, Any]) -> list:
        """Stop the schedule, put every link back as configured, and record what happened when."""
        events = schedule.stop()
        for f in lab.links.restore():
            self.invalid.append(f"{point.id} rep {rep}: after the faults: {f}")
        self.exporter.clear()
        errors = []
        for ev in events:
            rec = {"point": point.id, "repetition": rep, "phase": phase, **ev.record()}
            self.fault_rows.append(rec)
            self.faults_log.append(rec)
            if rec["timing_error_seconds"] is not None:
                errors.append(abs(rec["timing_error_seconds"]))
            if ev.error:
                self.invalid.append(f"{point.id} rep {rep}: fault {ev.action} on {ev.name} failed: {ev.error}")
        row["fault_timing_error_max_seconds"] = max(errors) if errors else None
        return events

    def _manifest(self, started: str, images: dict[str, str]) -> dict[str, Any]:
        e = self.plan.base
        return {
            "schema_version": 1,
            "experiment": e.name,
            "run_id": self.rundir.run_id,
            "profile": self.plan.profile,
            "spec_file": str(self.plan.source),
            "spec": self.plan.raw,
            "points": [{"id": p.id, "values": p.values, "label": p.label()} for p in self.plan.points],
            "git_commit": environment.git_commit(),
            "images": images,
            "kernel": environment.static()["kernel"],
            "host": environment.static(),
            "tool_versions": environment.tool_versions(),
            "impairment_backend": None,  # set once probed
            "random_seed": e.random_seed,
            "started_at": started,
            "finished_at": None,
            "environment": {"static": environment.static(), "dynamic": environment.dynamic()},
            "axes": list(e.sweep),
            "columns": list(dict.fromkeys(c for p in self.plan.points for c in p.experiment.columns())),
        }

    def _finish(self) -> bool:
        """tidy.csv, faults.csv, summary.json and the report from what was measured; returns validity."""
        from .results import checks, render

        e = self.plan.base
        columns = list(dict.fromkeys(c for p in self.plan.points for c in p.experiment.columns()))
        self.rundir.write_tidy(self.rows, list(e.sweep), columns)
        if self.fault_rows:
            with (self.rundir.path / "faults.csv").open("w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=list(self.fault_rows[0]))
                w.writeheader()
                w.writerows(self.fault_rows)
        measured = {r["point"] for r in self.rows}
        reasons = self.invalid + ([] if self.rows else ["nothing was measured"])
        points = [p for p in self.plan.points if p.id in measured]
        summary = checks.build_summary(e.name, self.rundir.run_id, points, self.rows, columns, reasons, self.guard)
        summary["self_check"] = {
            "directions": len(self.self_checks),
            "passed": all(r["passed"] for r in self.self_checks),
            "failures": [f"{r['from']}->{r['to']}: {f}" for r in self.self_checks for f in r["failures"]],
        }
        self.rundir.write_json("summary.json", summary)
        try:
            render.render_all(self.rundir.path)
        except Exception as exc:  # the measured data is safe; say how to regenerate
            print(f"rendering the report failed ({exc}); rerun `protolab report {self.rundir.path}`", flush=True)
        _print_summary(summary, self.rundir.path)
        return bool(summary["valid"])


def _print_summary(summary: dict[str, Any], path: Path) -> None:
    print(f"\n{'VALID' if summary['valid'] else 'INVALID'} run {summary['run_id']}: "
          f"{summary['checks_passed']} check(s) passed, {summary['checks_failed']} failed")  # fmt: skip
    for c in summary["checks"]:
        if not c["passed"]:
            where = json.dumps(c["values"])
            print(f"  FAILED {c['name']} at {c['point']} ({where}): measured {c['measured']}, bound {c['bound']}")
    for r in summary["invalid_reasons"]:
        print(f"  invalid: {r}")
    print(f"results: {path}\nreport:  {path / 'report.html'}", flush=True)


def _run_task(runner: Any, errors: list[str]) -> None:
    try:
        runner.run()
    except Exception as exc:
        errors.append(str(exc))


def _unshaped(lab: Lab) -> dict[int | None, set[str]]:
    out: dict[int | None, set[str]] = {}
    for name in lab.net.keys() if lab.net else []:
        node = lab.net.get(name)
        intfs = {i.name for i in node.intfList() if i.name != "lo" and i.name not in lab.shaped_interfaces}
        pid = lab.nodes[name].pid if name in lab.nodes else None
        if intfs:
            out.setdefault(pid, set()).update(intfs)
    return out


def _best_effort(fn: Any, default: Any) -> Any:
    try:
        return fn()
    except Exception as exc:
        log.warning("%s: %s", getattr(fn, "__name__", fn), exc)
        return default


def _cell(v: Any) -> Any:
    """An axis value in a tidy row, written as results.axis_str writes it (a null axis value as 'null')."""
    return json.dumps(v, sort_keys=True) if isinstance(v, (dict, list)) or v is None else v


def _image_id(client: Any, ref: str) -> str:
    try:
        return client.images.get(ref).id
    except Exception:
        raise RuntimeError(f"image {ref} is not built; run `make images`") from None
