"""Run a planned experiment: monitoring up, each lab deployed once, every point x repetition measured,
everything torn down (also on SIGINT, SIGTERM, SIGHUP and exceptions), and a results folder written.

The run holds the machine's lab-state lock throughout (a second run or `clean` is refused at once) and records
everything it makes in its ledger before making it (protolab.ownership). Each measured row is appended to
rows.jsonl (fsynced) as it is measured, each task's figures to raw/tasks/, each fault event to
raw/faults.jsonl, so nothing measured is lost whatever happens to the process; tidy.csv and summary.json are
always written at the end, INVALID with the reason when anything went wrong. A phase's tasks get a watchdog:
past the phase's duration + the margin, the run stops as INVALID naming the task.

A run reads as its steps: open (results folder, ledger, manifest, signals), backend, monitoring, then per
lab: deploy, targets, self-check, measure, destroy; and always: teardown, finish (results, summary).
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import random
import time
from pathlib import Path
from typing import Any

import requests

from .. import calibration, engine, environment, kernelstate, monitor, naming, ownership
from ..errors import EXIT_INTERRUPTED, EXIT_INVALID, EXIT_OK, ImageError, LabError, MonitoringError, ProtolabError
from ..exporter import FaultExporter
from ..killpoint import killpoint
from ..lab import Lab, guard, impair, parts, quiesce, selfcheck
from ..lab.api import RunningLab
from ..lab.testbed import TestbedLab
from ..live import LiveView, http_query, progress_line
from ..results.display import axis_str
from ..results.store import MANIFEST
from ..spec import NodeSpec, Plan, Point, node_limits, node_settings
from ..testbed import federation
from ..testbed.hosts import Hosts, open_hosts
from . import collect, session, summary
from .phase import PhaseOutcome, run_phase
from .session import Interrupted, Progress, Signals

log = logging.getLogger(__name__)
RESULTS = Path(__file__).resolve().parent.parent.parent / "results"
SCRAPE_SETTLE_SECONDS = 1.5  # the longest wait after a phase for its last counters to be in Prometheus
# spec keys read only when the rows are evaluated and rendered: --resume carries on a run whose spec changed in
# these alone (a new check, a table, the discussion), and the results read the current ones
REPORT_KEYS = ("description", "discussion", "tables", "knees", "plots", "checks", "derived")
TASK_TIMEOUT_MARGIN_SECONDS = 60.0  # a phase's tasks still running this long after its duration: hung


def scrape_ports(points: list[Point]) -> dict[str, list[int]]:
    """Ports of workload processes with their own /metrics (DIS hosts) per node, over all tasks of a lab's
    points: in Prometheus's targets from the deploy on, because it applies new targets only every 5 s."""
    out: dict[str, list[int]] = {}
    for p in points:
        for phase in p.experiment.phases:
            for t in phase.tasks:
                for node, ports in t.scrape_ports().items():
                    out[node] = sorted({*out.get(node, []), *ports})
    return out


def measurement_order(points: list[Point], mode: str, seed: int) -> list[list[tuple[Point, int]]]:
    """Measurements (point, repetition) grouped by lab (each lab deployed once, labs in the order the plan
    first names them); within a lab in sweep order, or shuffled with `seed` (Flent's default: a drift of the
    machine then does not alias with a sweep axis)."""
    groups: dict[str, list[tuple[Point, int]]] = {}
    for p in points:
        groups.setdefault(p.topology_key(), []).extend((p, rep) for rep in range(p.experiment.initial_repetitions()))
    out = list(groups.values())
    if mode == "shuffled":
        rng = random.Random(seed)
        for g in out:
            rng.shuffle(g)
    return out


class ExperimentRun:
    """One `protolab run`: see the module docstring. run() returns the exit status (protolab.errors)."""

    def __init__(self, plan: Plan, results_root: Path = RESULTS, keep: bool = False,
                 task_timeout_margin: float = TASK_TIMEOUT_MARGIN_SECONDS,
                 resume: Path | None = None, references: Path | None = None, live: bool = False,
                 emulate_hosts: list[str] | None = None, inventory: Path | None = None,
                 host_cpus: float = 1.0, over_ssh: bool = False) -> None:  # fmt: skip
        self.plan, self.keep, self.resume = plan, keep, resume
        # over several testbed hosts (testbed.hosts): emulated here, or those of an inventory; None: this machine
        self.over_hosts = (emulate_hosts, inventory) if emulate_hosts or inventory else None
        self.host_cpus = host_cpus  # with emulate_hosts: what each gives to nodes (placement's balance)
        self.over_ssh = over_ssh  # with emulate_hosts: each reached over SSH as a remote host is
        self.hosts: Hosts | None = None
        self.report_changed: list[str] = []  # --resume: REPORT_KEYS whose spec changed since the run began
        self.live = live  # --live: a LiveView on stderr while Prometheus is up
        self.view: LiveView | None = None
        self.references = references  # where the run's reference is looked up (None: experiments/references)
        self.task_timeout_margin = task_timeout_margin
        self.results_root = results_root
        self.rows: list[dict[str, Any]] = []
        self.guard: dict[str, Any] = {}
        self.invalid: list[str] = []
        self.skipped: list[str] = []  # tasks that measured nothing, and why
        self.deployments: list[dict[str, Any]] = []
        self.actions: list[str] = []
        self.monitor_pids: list[int] = []
        self.backend: impair.Backend | None = None
        self.exporter = FaultExporter()
        self.exporter_target: dict[str, Any] | None = None
        self.self_checks: list[dict[str, Any]] = []
        self.fault_rows: list[dict[str, Any]] = []
        self._pending_raw: list[tuple[Any, ...]] = []  # the measurement being attempted's (_measure keeps them)
        self._pending_faults: list[dict[str, Any]] = []
        self._pending_remake: list[str] = []  # why its tasks ask for it to be made again (WorkloadRunner.remake)
        self.repetitions: dict[str, dict[str, Any]] = {}  # per point under RepeatUntil: n, converged, nsd
        self.teardown_failures: list[str] = []
        self.closing_failures: list[str] = []  # steps of _close that failed (a full disk, a read-only folder)
        self.cross_host: dict[str, Any] = {}  # tasks whose ends are on two testbed hosts: their clocks' uncertainty
        self.status = EXIT_OK

    def run(self) -> int:
        """Hold the lab-state lock, run, and return the exit status (EXIT_OK only for a VALID run)."""
        with ownership.lab_lock("run", hint="`protolab clean --force` removes its lab under it"):
            return self._run()

    # -- the steps --------------------------------------------------------------------------------------
    def _run(self) -> int:
        self._open()
        signals = Signals(self.rundir.path)
        signals.install()
        lab: RunningLab | None = None
        error: BaseException | None = None
        try:
            self._removed_leftovers()
            self._choose_backend()
            prom = self._monitoring_up()
            self._hosts_up()
            self.view = self._live_view(prom)
            groups = measurement_order(self.plan.points, self.plan.base.order, self.plan.base.random_seed)
            done = {(r["point"], r["repetition"]) for r in self.rows}  # measured before a --resume
            groups = [g for g in ([(p, rep) for p, rep in g if (p.id, rep) not in done] for g in groups) if g]
            self.manifest["order"] = {"mode": self.plan.base.order, "seed": self.plan.base.random_seed,
                                      "measurements": [f"{p.id}/{rep}" for g in groups for p, rep in g]}  # fmt: skip
            progress = Progress(sum(p.experiment.initial_repetitions() for p in self.plan.points), len(done))
            for gi, group in enumerate(groups):
                points = list({p.id: p for p, _rep in group}.values())
                print(f"deploying lab {gi + 1}/{len(groups)}: {points[0].experiment.topology.describe()}",
                      flush=True)  # fmt: skip
                lab = self._lab(points, f"lab{gi + 1}")
                local = self.hosts is None  # a lab on this machine names its targets before it is up
                if local:
                    self._announce(lab, points)
                self._deploy(lab, f"lab{gi + 1}")
                up_at = time.time()
                signals.check()
                if not local:
                    self._announce(lab, points)
                counters, since = session.best_effort(lab.interface_counters, {}), time.monotonic()
                checked = self._self_check(lab, points[0].experiment)
                self._await_targets(lab, prom, up_at)  # Prometheus found them while the self-check ran
                deployment = {"topology": points[0].experiment.topology.model_dump(mode="json"), **lab.timings,
                              "links": lab.applied, "self_check": checked, "node_sysctls": lab.node_sysctls(),
                              "offloads": session.best_effort(lab.offloads, {}),
                              "receive_cpu": lab.receive_cpu.manifest(), "nic_filters": lab.nic_filters,
                              "containers": lab.containers}  # fmt: skip
                self.deployments.append(deployment)
                rng = random.Random(self.plan.base.random_seed + gi)
                while group:
                    for point, rep in group:
                        what = f"{point.id} {point.label()} rep {rep + 1}"
                        signals.check()  # a signal the last step dropped (raised in a finalizer) stops it here
                        progress.step(what)
                        if self.view:
                            self.view.update(progress_line(progress, what))
                        row = self._measure(point, rep, lab, prom)
                        self.rows_log.append(row)  # on disk whole (or an error) before it counts as measured
                        killpoint("row")  # test hook (protolab.killpoint): after each measured row
                        self.rows.append(row)
                        progress.finish()
                    group = self._another_round(points, rng)  # points repeated until stable (RepeatUntil)
                    progress.total += len(group)
                # the load each lab interface carried while this lab was up (self-check and workloads included)
                deployment["interface_traffic"] = environment.traffic(
                    counters, session.best_effort(lab.interface_counters, {}), time.monotonic() - since
                )
                if not local or gi == len(groups) - 1:  # else the next lab's, announced before its deploy
                    monitor.write_targets([])
                    lab.clear_targets()
                if not (self.keep and gi == len(groups) - 1):
                    self._destroy(lab)
                    lab = None
            signals.check()  # one dropped during the last steps: the run was still stopped, not finished
        except (Interrupted, KeyboardInterrupt) as exc:
            signals.delivered()  # later signals are said, not raised
            error = exc
            self.status = EXIT_INTERRUPTED
            self.invalid.append(f"interrupted ({exc or 'SIGINT'}) after {len(self.rows)} measurement(s)")
            session.say(f"\ninterrupted ({exc or 'SIGINT'}): tearing down")
        except Exception as exc:
            signals.delivered()
            error = exc
            self.status = EXIT_INVALID
            self.invalid.append(f"aborted: {type(exc).__name__}: {exc}")
            session.say(f"\naborted: {exc}\ntearing down")
            log.debug("aborted", exc_info=True)
        finally:
            signals.delivered()  # from here on, teardown and the results are not interrupted
            if self.view:
                self.view.stop()
            try:
                self._close(lab, error, signals)
            finally:
                signals.restore()
        return self.status

    def _another_round(self, points: list[Point], rng: random.Random) -> list[tuple[Point, int]]:
        """One more repetition of each point whose mean is not yet stable (RepeatUntil), in shuffled order;
        each point's count and convergence are recorded in self.repetitions."""
        out = []
        for p in points:
            until = p.experiment.repetitions
            if isinstance(until, int):
                continue
            rows = [r for r in self.rows if r["point"] == p.id]
            watched = until.columns or p.experiment.columns()
            each = {c: until.nsd_of_mean([float(r[c]) for r in rows if r.get(c) is not None]) for c in watched}
            nsd = {c: v for c, v in each.items() if v is not None}
            converged = bool(nsd) and all(v < until.until_nsd for v in nsd.values())
            self.repetitions[p.id] = {"n": len(rows), "converged": converged, "nsd_of_mean": nsd}
            if not converged and len(rows) < until.max:
                out.append((p, len(rows)))
        if self.plan.base.order == "shuffled":
            rng.shuffle(out)
        return out

    def _open(self) -> None:
        """The results folder (new, or the one resumed), the ledger, the logs that keep every measured row, and
        the manifest."""
        from ..results.store import FAULTS_LOG, ROWS, JsonLog, RunDir

        self.client = engine.client()
        images = {n: _image_id(self.client, n)
                  for n in {s.image for p in self.plan.points for s in p.experiment.nodes.values()}}  # fmt: skip
        self.image_refs = set(images) | {NodeSpec().image}
        self.rundir = RunDir(self.resume) if self.resume else RunDir.create(self.results_root, self.plan.base.name)
        if self.resume:
            self._check_resumable()
            killpoint("resume")  # test hook (protolab.killpoint), at each step of --resume
            ownership.sweep_dead()  # what the interrupted process left (its ledger), before a new one opens
            killpoint("resume")
        ownership.LOCK.acquire("run", self.rundir.run_id)  # names the run in the lock's holder record
        ownership.LOCK.release()
        self.ledger = ownership.begin_run(self.rundir.run_id, self.rundir.path, keep=self.keep)
        self.rows_log, self.faults_log = JsonLog(self.rundir.path / ROWS), JsonLog(self.rundir.path / FAULTS_LOG)
        if self.resume:
            killpoint("resume")
            self._carry_on(images)
            killpoint("resume")
        else:
            started = dt.datetime.now(dt.UTC).isoformat()
            self.manifest = session.manifest(self.plan, self.rundir.run_id, started, images)
            self.manifest["calibration"] = {"start": calibration.measure()}  # before anything of the run is up
        self.manifest["host_state"] = {"before": ownership.record_host(self.ledger)}
        self.rundir.write_json(MANIFEST, self.manifest)
        self.raw = self.rundir.raw_writer()
        reserve_space(self.rundir.path)
        resumed = f" (resumed with {len(self.rows)} measured row(s))" if self.resume else ""
        print(f"results -> {self.rundir.path}{resumed}", flush=True)

    def _check_resumable(self) -> None:
        """--resume only carries on a run of the same spec (profile applied)."""
        old = self.rundir.manifest()
        if (old["experiment"], old.get("profile")) != (self.plan.base.name, self.plan.profile):
            raise LabError(f"--resume {self.resume}: a run of {old['experiment']}/{old.get('profile')}, not "
                           f"{self.plan.base.name}/{self.plan.profile}")  # fmt: skip
        measured = {k for k in {*old["spec"], *self.plan.raw} if k not in REPORT_KEYS}
        if changed := sorted(k for k in measured if old["spec"].get(k) != self.plan.raw.get(k)):
            raise LabError(f"--resume {self.resume}: the spec changed since that run ({', '.join(changed)}); "
                           "start a new run")  # fmt: skip
        self.report_changed = sorted(k for k in REPORT_KEYS if old["spec"].get(k) != self.plan.raw.get(k))

    def _carry_on(self, images: dict[str, str]) -> None:
        """--resume: the interrupted run's rows and fault events carried on; its invalid reasons kept but the
        interruption's or abort's; the manifest records the resume."""
        from ..results.store import SUMMARY, load_json

        self.rows, self.fault_rows = self.rows_log.read(), self.faults_log.read()
        remeasure: list[str] = []
        if (self.rundir.path / SUMMARY).exists():
            before = load_json(self.rundir.path / SUMMARY)
            # measurements the run guard invalidated (the machine was busy) are measured again
            remeasure = sorted(k for k, g in (before.get("guard") or {}).items() if g.get("reasons"))
            # an abort (a workload's error) left its measurement without a row: the resume measures it and the
            # ones after it, and says so again if it aborts again
            undone = ("interrupted", "the run's process", "nothing was measured", "aborted:",
                      *(f"{k.replace('/', ' rep ')} (" for k in remeasure))  # fmt: skip
            self.invalid += [r for r in before.get("invalid_reasons", []) if not r.startswith(undone)]
            self.guard |= {k: g for k, g in (before.get("guard") or {}).items() if k not in remeasure}
        if remeasure:
            killpoint("resume")
            self._forget(set(remeasure))
        self.manifest = self.rundir.manifest()
        self.manifest["spec"] = self.plan.raw  # differs at most in REPORT_KEYS: the results read today's
        self.manifest.setdefault("resumed", []).append({
            "at": dt.datetime.now(dt.UTC).isoformat(), "rows_before": len(self.rows), "images": images,
            "git_commit": environment.git_commit(), "report_keys_changed": self.report_changed,
            "remeasured": remeasure})  # fmt: skip

    def _forget(self, measurements: set[str]) -> None:
        """Drop `point/repetition` measurements from the rows, rows.jsonl and the raw series, so that the resumed
        run measures them again."""
        import csv
        import json

        from ..results.store import RAW, atomic_open

        def gone(point: Any, rep: Any) -> bool:
            return f"{point}/{rep}" in measurements

        self.rows = [r for r in self.rows if not gone(r["point"], r["repetition"])]
        with atomic_open(self.rows_log.path) as f:
            f.writelines(json.dumps(r) + "\n" for r in self.rows)
        raw = self.rundir.path / RAW
        if raw.exists():
            with raw.open(newline="") as f, atomic_open(raw, newline="") as g:
                rd, wr = csv.reader(f), csv.writer(g, lineterminator="\n")
                wr.writerow(next(rd, []))
                wr.writerows(row for row in rd if not (len(row) > 1 and gone(row[0], row[1])))
        for k in measurements:
            point, rep = k.split("/")
            for task_file in (self.rundir.path / "raw" / "tasks").glob(f"{point}-r{rep}-*.json"):
                task_file.unlink()

    def _removed_leftovers(self) -> None:
        """What killed runs left (swept by their ledgers before anything is made) goes into the manifest."""
        removed, failures = ownership.sweep_dead()
        self.manifest["removed_leftovers"] = removed
        for f in failures:
            raise LabError(f"cannot remove what an earlier run left: {f} (try `protolab clean`)")

    def _choose_backend(self) -> None:
        e = self.plan.base
        self.backend, probe = impair.choose(e.impairment_backend)
        self.manifest["impairment_backend"] = {
            "chosen": self.backend.name,
            "requested": e.impairment_backend,
            "probe": {k: {"available": ok, "why": why} for k, (ok, why) in probe.items()},
        }
        print(f"impairment backend: {self.backend.name} ({probe[self.backend.name][1]})", flush=True)

    def _monitoring_up(self) -> monitor.Prometheus:
        monitor.up(self.client, ledger=self.ledger)
        self.exporter_target = self.exporter.serve(self.client)
        self.monitor_pids = [c.attrs["State"]["Pid"] for c in self.client.containers.list(
            filters={"label": f"com.docker.compose.project={naming.COMPOSE_PROJECT}"})]  # fmt: skip
        return monitor.Prometheus()

    def _hosts_up(self) -> None:
        """--emulate-hosts / --inventory: the testbed hosts, each with a Prometheus the run's federates."""
        if self.over_hosts is None:
            return
        emulate, inventory = self.over_hosts
        self.hosts = open_hosts(emulate, inventory, self.image_refs, self.rundir.run_id, self.ledger,
                                        monitor.state_dir(), self.rundir.path / "testbed-inventory.yml",
                                        cpus=self.host_cpus, ssh=self.over_ssh,
                                        log=lambda line: print(line, flush=True))  # fmt: skip
        self.manifest["testbed"] = self.hosts.manifest()
        self.rundir.write_json(MANIFEST, self.manifest)

    def _live_view(self, prom: monitor.Prometheus) -> LiveView | None:
        """--live: the terminal view of the run (protolab.live), started now that Prometheus is up."""
        if not self.live:
            return None
        view = LiveView(self.plan.base.name, self.rundir.run_id, http_query(prom.url))
        return view if view.start() else None

    def _lab(self, points: list[Point], scope: str) -> RunningLab:
        """The lab of these points, not deployed yet: the caller holds it before deploy() so that a deploy that
        fails or is interrupted part way is torn down by the lab that made it (link emulators stopped and their
        sockets removed, Mininet stopped), not only swept by the ledger."""
        ex = points[0].experiment
        topology = ex.topology.build()
        images, cpus, commands = node_settings(topology, ex.nodes)
        lab: Lab | TestbedLab
        if self.hosts is not None:
            whole = parts.whole(topology, images, cpus, commands, topology.impairments + ex.impairments)
            lab = TestbedLab(whole, self.hosts, self.rundir.run_id, ledger=self.ledger.scoped(scope))
        else:
            lab = Lab(topology, self.rundir.run_id, images, cpus, commands=commands,
                      limits=node_limits(topology, ex.nodes), client=self.client,
                      impairments=topology.impairments + ex.impairments, backend=self.backend,
                      ledger=self.ledger.scoped(scope))  # fmt: skip
        return lab

    def _deploy(self, lab: RunningLab, scope: str) -> None:
        lab.deploy()
        self.actions += lab.actions
        self._draw(lab, scope)

    def _draw(self, lab: RunningLab, scope: str) -> None:
        """labs/<scope>.dot and .svg: the lab as deployed (rates, configured impairments), for the report."""
        from .. import graph

        out = self.rundir.path / "labs"
        out.mkdir(exist_ok=True)
        dot = graph.to_dot(lab.topology, lab.configured, title=f"{lab.topology.kind} ({scope})")
        (out / f"{scope}.dot").write_text(dot)
        try:
            (out / f"{scope}.svg").write_bytes(graph.render(dot, "svg"))
        except ProtolabError as exc:  # no graphviz here: the .dot stays, the report goes without the drawing
            log.warning("drawing the lab: %s", exc)

    def _announce(self, lab: RunningLab, points: list[Point]) -> None:
        """The lab's agents as the run's Prometheus's targets; over several hosts each host's Prometheus gets its
        own nodes and the run's reads them through federation. Prometheus applies a changed target set only
        every 5 s, so a lab on this machine announces its (the topology's names) before its deploy: the wait
        runs beside the deploy and the self-check instead of after them."""
        extra = scrape_ports(points)  # DIS hosts' /metrics
        monitor.write_targets(lab.targets(extra) + ([self.exporter_target] if self.exporter_target else []))

    def _await_targets(self, lab: RunningLab, prom: monitor.Prometheus, up_at: float) -> None:
        """Until every node's agent has been scraped since the lab was up (`up_at`, a time.time())."""
        nodes = {h.name for h in lab.topology.hosts}
        if self.hosts is not None:
            federation.wait_federated(prom, nodes)
        else:
            prom.wait_targets(nodes, since=up_at)

    def _self_check(self, lab: RunningLab, ex: Any) -> list[dict[str, Any]] | None:
        """Measure the impaired links before any workload; every miss makes the run invalid."""
        if not ex.self_check or not lab.impairments:
            return None
        t0 = time.monotonic()
        results = selfcheck.run_all(lab, log=lambda line: print(f"  {line}", flush=True))
        for r in results:
            self.self_checks.append(r)
            for f in r["failures"]:
                self.invalid.append(f"self-check {r['from']}->{r['to']} ({ex.topology.name}): {f}")
        print(f"  self-check took {time.monotonic() - t0:.1f}s", flush=True)
        return results

    def _measure(self, point: Point, rep: int, lab: RunningLab, prom: monitor.Prometheus) -> dict[str, Any]:
        """One measurement. One the machine's surroundings disturbed (guard.disturbed: the hypervisor withheld cores
        or held up a fault event, or processes outside the lab ran) is measured again once the cores are back
        (guard.wait_for_cores), up to guard.REMEASURE_DISTURBED times: its invalid reasons, fault events and raw
        series are dropped, its guard figures kept under the measurement's `disturbed_attempts`. So is one a task
        spoilt by a chance event outside what the spec measures (a runner's `remake`: an iperf3 UDP sender held up
        by a lost control message or by the machine, that then caught up in a burst). The last attempt stands
        whatever it shows."""
        key = f"{point.id}/{rep}"
        attempts: list[dict[str, Any]] = []
        for attempt in range(guard.REMEASURE_DISTURBED + 1):
            marks = len(self.invalid)
            self._pending_raw, self._pending_faults, self._pending_remake = [], [], []
            try:
                row = self._attempt(point, rep, lab, prom)
            except BaseException:
                self._keep_pending()  # an attempt that failed keeps what it did (its faults' events above all)
                raise
            outside = guard.disturbed(self.guard[key]["figures"])
            if not (outside or self._pending_remake) or attempt == guard.REMEASURE_DISTURBED:
                break
            dropped = self.invalid[marks:]
            del self.invalid[marks:]
            why = list(self.guard[key]["reasons"]) if outside else []
            if stolen := self.guard[key]["figures"].get("fault_event_stolen_max_seconds"):
                why.append(f"a fault event lost {stolen * 1e3:.0f} ms of CPU time to the hypervisor")
            what = "disturbed from outside the lab" if outside else "spoilt by chance outside what it measures"
            print(f"  {point.id} rep {rep + 1} was {what} ({'; '.join(why + self._pending_remake)}): "
                  "measuring it again", flush=True)  # fmt: skip
            wait = guard.wait_for_cores(lambda line: print(line, flush=True))
            attempts.append({**self.guard[key], "invalid_reasons": dropped, "cores_wait": wait})
        if attempts:
            self.guard[key]["disturbed_attempts"] = attempts
        self._keep_pending()
        return row

    def _settle_scrapes(self, lab: RunningLab, prom: monitor.Prometheus, end: float) -> None:
        """Until the counters at the end of the measurement (`end`, a time.time()) are in Prometheus: a lab on this
        machine, until every node's agent (and the run's exporter) was scraped by a scrape that began after it, so
        every scrape before it is stored (a scrape's samples carry its start time), at most SCRAPE_SETTLE_SECONDS; an
        agent that is down (the guard names it) does not hold it longer. Over testbed hosts the samples come through
        each host's Prometheus and federation, two scrapes: the whole SCRAPE_SETTLE_SECONDS."""
        if self.hosts is not None:
            time.sleep(SCRAPE_SETTLE_SECONDS)
            return
        exporter = {self.exporter_target["labels"]["node"]} if self.exporter_target else set()
        nodes = {h.name for h in lab.topology.hosts} | exporter
        t0 = time.monotonic()
        try:
            prom.wait_scraped(nodes, since=end, timeout=SCRAPE_SETTLE_SECONDS, poll=0.1)
        except (MonitoringError, requests.RequestException):  # Prometheus not answering: the reads below say so
            time.sleep(max(0.0, SCRAPE_SETTLE_SECONDS - (time.monotonic() - t0)))

    def _keep_pending(self) -> None:
        """The attempt's raw series and fault events into the run's."""
        self.raw.write_rows(self._pending_raw)
        for rec in self._pending_faults:
            self.fault_rows.append(rec)
            self.faults_log.append(rec)
        self._pending_raw, self._pending_faults = [], []

    def _attempt(self, point: Point, rep: int, lab: RunningLab, prom: monitor.Prometheus) -> dict[str, Any]:
        """One attempt at a measurement: its row; its raw series and fault events held in _pending_raw and
        _pending_faults until _measure keeps them."""
        ex = point.experiment
        row: dict[str, Any] = {"point": point.id, "repetition": rep, **{k: _cell(v) for k, v in point.values.items()}}
        # the last measurement's queues, flows and fragments gone from the lab, or this one is invalid
        idle = quiesce.wait(quiesce.probes(lab), say=lambda line: print(line, flush=True))
        self.invalid += [f"{point.id} rep {rep} ({point.label()}): {r}" for r in quiesce.describe(idle)]
        time.sleep(ex.settle)
        unshaped = lab.unshaped()
        lab_pids = [n.pid for n in lab.nodes.values()] + self.monitor_pids + lab.cgroup_pids()
        procs = lab.service_pids()
        steal = guard.StealWatch().start()  # the steal in each second of it, beside the whole's
        try:
            before = guard.snapshot(unshaped, lab_pids, procs)
            hosts_before = lab.host_guards()  # testbed hosts with kernels of their own: their keepers' snapshots
            windows: list[collect.Window] = []
            for phase in ex.phases:
                where = f"{point.id} rep {rep} phase {phase.name}"
                if self.view:
                    self.view.update(phase=phase.name)
                out = run_phase(phase, lab, ex.warmup, self.task_timeout_margin, self.exporter, where)
                self._record_phase(point, rep, out, row, lab)
                windows.append((phase.name, *out.window))
            if down := guard.helpers_down(lab, prom, before.at, ex.phases):  # emulator, NIC filter, agent, keeper
                self.invalid.append(f"{point.id} rep {rep} ({point.label()}): " + "; ".join(down))
            after = guard.snapshot(unshaped, lab_pids, procs)
        finally:
            peak = steal.stop()
        figures, reasons = guard.assess(before, after, steal_peak=round(peak, 3))
        if stolen := [r["stolen_seconds"] for r in self._pending_faults if r.get("stolen_seconds") is not None]:
            figures["fault_event_stolen_max_seconds"] = max(stolen)
        self.guard[f"{point.id}/{rep}"] = {"figures": figures, "reasons": reasons, "idle_at_start": idle}
        if hosts_before:  # any host's saturation invalidates the measurement too
            host_figures, host_reasons = guard.assess_hosts(hosts_before, lab.host_guards())
            reasons = reasons + host_reasons
            self.guard[f"{point.id}/{rep}"] |= {"hosts": host_figures, "reasons": reasons}
        if reasons:
            self.invalid.append(f"{point.id} rep {rep} ({point.label()}): " + "; ".join(reasons))
        self._settle_scrapes(lab, prom, max((we for _n, _ws, we in windows), default=time.time()))

        def keep(phase_name: str, series: str, labels: dict[str, str], ts: float, value: float) -> None:
            self._pending_raw.append((point.id, rep, phase_name, series, labels, ts, value))

        if any(phase.faults for phase in ex.phases) and self.exporter_target:
            collect.fault_timeline(windows, ex.warmup, prom, keep)
        for m in ex.measurements:
            row[m.column] = collect.column(m, windows, prom, keep)
        return row

    def _record_phase(self, point: Point, rep: int, out: PhaseOutcome, row: dict[str, Any], lab: RunningLab) -> None:
        """The phase's fault events and link restore first (kept even when a task failed), then its figures."""
        if out.events:
            errors = []
            for ev in out.events:
                rec = {"point": point.id, "repetition": rep, "phase": out.name, **ev.record()}
                self._pending_faults.append(rec)  # kept by _measure with the attempt
                if rec["timing_error_seconds"] is not None:
                    errors.append(abs(rec["timing_error_seconds"]))
                if ev.error:
                    self.invalid.append(f"{point.id} rep {rep}: fault {ev.action} on {ev.name} failed: {ev.error}")
            row["fault_timing_error_max_seconds"] = max(errors) if errors else None
        for f in out.restore_failures:
            self.invalid.append(f"{point.id} rep {rep}: after the faults: {f}")
        if out.error is not None:
            raise out.error
        for t, r in out.tasks:
            figures = dict.fromkeys(t.columns()) if r.skipped else r.result()
            ends = t.nodes()
            clock = lab.clock_note(ends[0], ends[-1]) if len(ends) > 1 else None  # its ends on two hosts
            self.rundir.write_json(f"raw/tasks/{point.id}-r{rep}-{out.name}-{t.name}.json",
                                   {"point": point.id, "repetition": rep, "phase": out.name, "task": t.name,
                                    "kind": t.kind, "figures": figures, "tool": r.raw(),
                                    "sysctls": r.sysctls_set, "skipped": r.skipped, "clock": clock})  # fmt: skip
            if clock is not None:
                self.cross_host.setdefault(f"{t.name}: {ends[0]} -> {ends[-1]}", clock)
            if r.skipped:
                line = f"{point.id} ({point.label()}) task {t.name}: {r.skipped}"
                if line not in self.skipped:
                    self.skipped.append(line)
                    print(f"  skipped: {line}", flush=True)
            row.update(figures)
            self.invalid += [f"{point.id} rep {rep} ({point.label()}): task {t.name}: {why}" for why in r.invalid]
            self._pending_remake += [f"task {t.name}: {why}" for why in r.remake]
            if r.skipped:
                continue
            row.update(r.fault_edges(out.events))  # probes that can see outages compare them with the events
            for series, ts, value, *labels in r.series():
                self._pending_raw.append((point.id, rep, out.name, series, labels[0] if labels else {}, ts, value))

    def _destroy(self, lab: RunningLab) -> None:
        killpoint("teardown")  # test hook (protolab.killpoint), before each step of a teardown
        lab.teardown()
        self.teardown_failures += lab.teardown_failures

    def _close(self, lab: RunningLab | None, error: BaseException | None, signals: Signals) -> None:
        """Teardown first (unless --keep on success), then each later step on its own: the raw series and the
        exporter closed, the manifest's end, the results, the ledger's last sweep. A step that fails (a full disk,
        a read-only results folder) is recorded and said, and the steps after it still run; results that cannot
        be written leave the run record in the ledger, so that `protolab clean` finishes the folder later."""
        killpoint("teardown")
        self._teardown(lab, error)
        for f in self.teardown_failures:
            self.invalid.append(f"teardown: {f}")
        self._closing_step("closing raw/series.csv", self.raw.close)
        self._closing_step("closing the fault exporter", self.exporter.close)
        release_space(self.rundir.path)  # on a full disk, room for the manifest, tidy.csv and summary.json
        killpoint("teardown")
        self._closing_step(
            "writing manifest.json", lambda: self.rundir.write_json(MANIFEST, self._manifest_end(signals))
        )
        killpoint("teardown")
        valid = self._closing_step("writing the results", lambda: summary.finish(
            self.rundir, self.plan, self.rows, self.fault_rows, self.invalid, self.guard, self.self_checks,
            self.repetitions, self.references, self.skipped))  # fmt: skip
        if valid is None:  # no summary.json: this run is not valid, whatever was measured
            self.status = self.status if self.status != EXIT_OK else EXIT_INVALID
            print(f"INVALID run {self.rundir.run_id}: " + "; ".join(self.invalid), flush=True)
        elif self.status == EXIT_OK and not valid:
            self.status = EXIT_INVALID
        if not self.teardown_failures and not self.keep and valid is not None:
            killpoint("teardown")
            self._closing_step("the ledger's last sweep", self.ledger.sweep)  # the run record (and anything left)

    def _closing_step(self, what: str, step: Any) -> Any:
        """Run one step of _close; its failure is recorded as a reason the run is invalid and printed, not raised
        (None returned)."""
        try:
            return step()
        except Exception as exc:
            reason = f"{what} failed: {type(exc).__name__}: {exc}"
            self.invalid.append(reason)
            self.closing_failures.append(reason)
            if self.status == EXIT_OK:
                self.status = EXIT_INVALID
            session.say(reason)
            log.debug("%s", what, exc_info=True)
            return None

    def _teardown(self, lab: RunningLab | None, error: BaseException | None) -> None:
        """The lab, the testbed hosts' parts, monitoring and whatever the ledger lists (unless --keep on success);
        an exception of its own is a teardown failure too (recorded, not raised: the ledger then stays for
        `protolab clean`)."""
        if self.keep and error is None:
            print("--keep: the lab and monitoring stay up; `make clean` removes them", flush=True)
            return
        try:
            if self.hosts is not None:  # the lab's parts, then the hosts' Prometheus and sessions, while they answer
                if lab is not None:
                    killpoint("teardown")
                    lab.teardown()
                    self.teardown_failures += lab.teardown_failures
                    lab = None
                killpoint("teardown")
                self.teardown_failures += session.best_effort(self.hosts.close, [])
            killpoint("teardown")
            self.teardown_failures += session.teardown(lab, self.ledger)
        except Exception as exc:
            self.teardown_failures.append(f"{type(exc).__name__}: {exc}")
            session.say(f"teardown: {type(exc).__name__}: {exc}")

    def _manifest_end(self, signals: Signals) -> dict[str, Any]:
        m = self.manifest
        m["finished_at"] = dt.datetime.now(dt.UTC).isoformat()
        m["environment"]["dynamic_end"] = session.best_effort(environment.dynamic, {})
        m["environment"]["over_run"] = session.best_effort(
            lambda: environment.over_run(m["environment"]["dynamic"], m["environment"]["dynamic_end"]), {}
        )
        m["deployments"] = self.deployments
        if self.hosts is not None:
            m["testbed"]["cross_host_tasks"] = self.cross_host
        m["preflight_actions"] = self.actions
        m["host_state"]["after"] = session.best_effort(kernelstate.snapshot, {})
        m["signals"] = signals.received
        m["repetitions"] = self.repetitions
        m["closing_failures"] = self.closing_failures  # steps of _close before this one that failed
        return m


def reserve_space(run_dir: Path) -> None:
    """Hold RESERVE_BYTES of the results folder's disk (a hidden file) until the run's end, where
    release_space frees it first: a disk that fills during the run still takes the summary saying so."""
    from ..results.store import RESERVE, RESERVE_BYTES

    try:
        fd = os.open(run_dir / RESERVE, os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            os.posix_fallocate(fd, 0, RESERVE_BYTES)
        finally:
            os.close(fd)
    except OSError as exc:  # no room for it: the run goes on, its end may find no room either
        log.warning("%s: cannot reserve %d bytes for the run's end: %s", run_dir, RESERVE_BYTES, exc)


def release_space(run_dir: Path) -> None:
    from ..results.store import RESERVE

    try:
        (run_dir / RESERVE).unlink(missing_ok=True)
    except OSError as exc:  # a read-only folder: nothing can be written there anyway
        log.warning("%s: %s", run_dir / RESERVE, exc)


def _cell(v: Any) -> Any:
    """An axis value in a tidy row, written as results.axis_str writes it (a null axis value as 'null'; numbers
    stay numbers)."""
    return axis_str(v) if isinstance(v, (dict, list)) or v is None else v


def _image_id(client: Any, ref: str) -> str:
    try:
        return client.images.get(ref).id
    except Exception:
        raise ImageError(f"image {ref} is not built; run `make images`") from None
