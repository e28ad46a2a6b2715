"""Running a SPIMS task in a lab: one `protolab-spims serve` per initiator on its responder's host, one
`protolab-spims run` per initiator on its own; statements one after another, each statement's parts at once.

Each initiator does all of its job's runs back to back in one process (a run is `count` consecutive samples;
bulk_get: one transfer), so runs of parallel parts overlap in time as the paper's lockstep runs did, without a
barrier between them. A transport the kernel lacks stops the task with the agent's one line (TransportUnavailableError;
`protolab-spims transports` says which this machine has). The agent's plumbing is protolab.workloads.spims_agent.
"""

from __future__ import annotations

import math
import statistics
import threading
import time
from typing import Any

from ..counters import cgroup_cpu_seconds
from ..spims import Dist, Job
from ..stats import describe
from .base import LabAPI, WorkloadError, WorkloadRunner
from .spims import QUANTITY, SpimsTask, aggregate_composer
from .spims_agent import Responder, TransportUnavailableError, initiate, interrupt, target


def dist_json(d: Dist, seconds: bool = False) -> dict[str, Any]:
    """A SPIMS distribution as protolab-spims reads it (times as durations with their unit)."""
    names = {"constant": ("value",), "uniform": ("min", "max"), "normal": ("mean", "sd"),
             "exponential": ("mean",), "bivalue": ("value", "value2", "p")}  # fmt: skip
    out: dict[str, Any] = {"dist": d.name}
    for i, (key, v) in enumerate(zip(names[d.name], d.params, strict=True)):
        out[key] = f"{v:.9g}s" if seconds and not (d.name == "bivalue" and i == 2) else v
    return out


def agent_job(job: Job, t: SpimsTask, target: str, seed: int, duration: float) -> dict[str, Any]:
    """The `protolab-spims run` job of one SPIMS job: all its runs in one process."""
    count = (
        job.count if job.count is not None else math.ceil((job.amount_bytes or 0) / max(1, job.size_bytes.params[0]))
    )
    out: dict[str, Any] = {"procedure": job.type, "transport": t.transport, "target": target, "seed": seed,
                           "size": dist_json(job.size_bytes), "timeout": f"{t.timeout:g}s",
                           "late_bound": f"{t.late_bound:g}s", "samples": True}  # fmt: skip
    if job.type == "bulk_get":
        out |= {"iterations": job.runs, "count": count}
    else:
        out["iterations"] = job.runs * count
    for key, end in (("source_data", job.source), ("destination_data", job.destination)):
        if end.access != "memory":
            out[key] = {"access": end.access, **({"path": end.path} if end.path else {})}
    options = dict(t.options)
    if t.dscp is not None and job.role == "measured":
        options["dscp"] = str(t.dscp)
    if options:
        out["options"] = options
    if job.reply_size_bytes is not None:
        out["response_size"] = dist_json(job.reply_size_bytes)
    if job.inter_send_delay_s is not None:
        out["delay"] = dist_json(job.inter_send_delay_s, seconds=True)
    if job.role == "background":
        out["iterations"] = 10**9 if job.type != "bulk_get" else 10**6  # until the measured part ends
        out["time_limit"] = f"{duration:g}s"
    elif job.time_limit_s is not None:
        out["time_limit"] = f"{job.time_limit_s * job.runs:g}s"
    return out


def _stats(values: list[float]) -> dict[str, float | None]:
    """Over the runs: mean, sd, min, max, normalized sd and the half-width of the mean's 95 % interval."""
    d = describe(values)
    half = None if d["ci95_high"] is None else d["ci95_high"] - d["mean"]
    return {k: d[k] for k in ("mean", "sd", "min", "max", "nsd")} | {"ci95": half}


def run_values(job: Job, result: dict[str, Any]) -> list[float]:
    """One value per run: the mean time of its `count` samples, or a bulk transfer's receiver throughput."""
    samples = result.get("samples_seconds") or []
    if job.type == "bulk_get":
        size = (result.get("bulk") or {}).get("transfer_bytes") or 0
        return [size / s for s in samples if s > 0]
    count = job.count or 1
    return [statistics.fmean(samples[i : i + count]) for i in range(0, len(samples) - count + 1, count)]


def pooled(summaries: list[dict[str, Any] | None]) -> dict[str, float | None]:
    """mean, sd, min, max and nsd over the union of the values several agents summarized (their count, mean,
    sd, min, max): the moments combined exactly, as if the values were pooled."""
    parts = [s for s in summaries if s and s.get("count") and s.get("mean") is not None]
    n = sum(s["count"] for s in parts)
    if not n:
        return dict.fromkeys(("mean", "sd", "min", "max", "nsd"))
    mean = math.fsum(s["count"] * s["mean"] for s in parts) / n
    m2 = math.fsum((s["count"] - 1) * (s.get("sd") or 0.0) ** 2 + s["count"] * (s["mean"] - mean) ** 2 for s in parts)
    sd = math.sqrt(m2 / (n - 1)) if n > 1 else 0.0
    return {"mean": mean, "sd": sd, "min": min(s["min"] for s in parts), "max": max(s["max"] for s in parts),
            "nsd": sd / abs(mean) if mean else None}  # fmt: skip


def sender_stats(results: list[dict[str, Any]]) -> dict[str, float | None]:
    """bulk_get's throughput at the sender over the runs of every result (the agent's summary of its runs)."""
    return pooled([(r.get("bulk") or {}).get("sender_bytes_per_second") for r in results])


def aggregate_rate(results: list[dict[str, Any]]) -> float | None:
    """Bytes all initiators received over the span from the first start to the last end. The replicas' runs are
    not held in lockstep, so a per-run sum would add runs that did not overlap (one replica's run alone on the
    link counted at the full rate beside another's)."""
    spans = [(r["start_unix_ns"] / 1e9, r["start_unix_ns"] / 1e9 + r["elapsed_seconds"]) for r in results
             if r.get("start_unix_ns") and r.get("elapsed_seconds")]  # fmt: skip
    if len(spans) != len(results):
        return None
    span = max(e for _s, e in spans) - min(s for s, _e in spans)
    return sum(r.get("received_bytes", 0) for r in results) / span if span > 0 else None


def cores(before: float | None, after: float | None, wall: float) -> float | None:
    """CPU seconds over a wall interval, in cores; None without both readings."""
    return (after - before) / wall if before is not None and after is not None and wall > 0 else None


class SpimsRunner(WorkloadRunner[SpimsTask]):
    def __init__(self, task: SpimsTask, lab: LabAPI) -> None:
        super().__init__(task, lab)
        self.jobs = task.jobs()
        self.ports = {j.id: task.port + i for i, j in enumerate(self.jobs)}
        self.results: dict[str, dict[str, Any]] = {}
        self.responders: list[Responder] = []
        self.cpu: dict[str, float | None] = {}  # host -> cores its container used over run()

    def _nice(self, job: Job) -> list[str]:
        low = job.role == "background" and any(j.high_priority for j in self.jobs if j.group == job.group)
        return ["nice", "-n", str(self.task.background_nice)] if low else []

    def prepare(self) -> None:
        for job in self.jobs:
            assert job.responder_host is not None
            r = Responder(self.lab, job.responder_host, self.task.transport, self.ports[job.id], self._nice(job))
            self.responders.append(r)
            try:
                r.start()
            except TransportUnavailableError as exc:
                self.skipped = str(exc)
                return

    def _initiate(self, job: Job, index: int) -> None:
        t = self.task
        assert job.initiator_host is not None and job.responder_host is not None
        address = self.lab.ip(job.responder_host, family=t.address_family())
        spec = agent_job(job, t, target(address, self.ports[job.id]), t.seed + index, t.duration)
        code, self.results[job.id] = initiate(self.lab, job.initiator_host, spec, f"{t.name}-{job.id}", self._nice(job))
        if code != 0 and job.role == "measured":
            raise WorkloadError(f"spims task {t.name}: initiator {job.id} on {job.initiator_host} exit {code}: "
                                f"{self.results[job.id].get('error', '')}")  # fmt: skip

    def _start(self, job: Job, index: int, failures: list[BaseException]) -> threading.Thread:
        def body() -> None:
            try:
                self._initiate(job, index)
            except BaseException as exc:  # raised by run()
                failures.append(exc)

        th = threading.Thread(target=body, daemon=True, name=f"spims-run-{job.id}")
        th.start()
        return th

    def _cpu_seconds(self) -> dict[str, float | None]:
        return {h: cgroup_cpu_seconds(self.lab.nodes[h].pid) for h in self.task.nodes()}

    def run(self) -> None:
        """The statements in order; each host's container CPU (its cgroup) read at the first one's start and the
        last one's end, so a run of a second or less has its CPU figure too (a scraped series has none)."""
        before, t0 = self._cpu_seconds(), time.monotonic()
        try:
            for g in sorted({j.group for j in self.jobs}) if not self.skipped else []:
                self._statement(g)
        finally:
            for r in self.responders:
                r.stop()
        after, wall = self._cpu_seconds(), time.monotonic() - t0
        self.cpu = {h: cores(b, after[h], wall) for h, b in before.items()}

    def _statement(self, g: int) -> None:
        """One statement: its background load first, then its measured parts at once; the load ended after."""
        failures: list[BaseException] = []
        group = [(i, j) for i, j in enumerate(self.jobs) if j.group == g]
        load = [(j, self._start(j, i, failures)) for i, j in group if j.role == "background"]
        if load:
            time.sleep(self.task.background_lead)  # the load is flowing when the measurement starts
        for th in [self._start(j, i, failures) for i, j in group if j.role == "measured"]:
            th.join()
        for j, th in load:
            interrupt(self.lab, j.initiator_host or "", f"{self.task.name}-{j.id}")
            th.join(timeout=30)
        if failures:
            raise failures[0]

    def raw(self) -> dict[str, Any]:
        trimmed = {
            k: {**v, "samples_seconds": (v.get("samples_seconds") or [])[:20000]} for k, v in self.results.items()
        }
        errors = [r.error for r in self.responders if r.error]
        return {"jobs": [j.as_dict() for j in self.jobs], "results": trimmed, "responder_errors": errors}

    def result(self) -> dict[str, float | None]:
        t = self.task
        out: dict[str, float | None] = {}
        if self.skipped:
            return dict.fromkeys(t.columns())
        for g in sorted({j.group for j in self.jobs}):
            p = t.prefix(g)
            measured = [j for j in self.jobs if j.group == g and j.role == "measured" and j.id in self.results]
            for kind in dict.fromkeys(j.type for j in measured):
                q, unit = QUANTITY[kind]
                values = [v for j in measured if j.type == kind for v in run_values(j, self.results[j.id])]
                st = _stats(values)
                out |= {f"{p}_{q}_{s}_{unit}": st[s] for s in ("mean", "sd", "min", "max")}
                out[f"{p}_{q}_nsd_ratio"] = st["nsd"]
                out[f"{p}_{q}_ci95_{unit}"] = st["ci95"]
                if kind == "request_response":
                    p99 = [self.results[j.id]["seconds"]["p99"] for j in measured if j.type == kind]
                    out[f"{p}_response_p99_seconds"] = max(p99) if p99 else None
            out[f"{p}_runs_total"] = float(sum(len(run_values(j, self.results[j.id])) for j in measured))
            out[f"{p}_timeouts_total"] = float(sum(self.results[j.id].get("timeouts", 0) for j in measured))
            timed = [j for j in measured if j.type != "bulk_get"]  # a transfer is not late, it is slow
            out[f"{p}_late_total"] = float(sum(self.results[j.id].get("late", 0) for j in timed))
            bulk = [self.results[j.id] for j in measured if j.type == "bulk_get"]
            if bulk:
                sent = sender_stats(bulk)
                q, unit = QUANTITY["bulk_get"]
                out |= {f"{p}_sender_{q}_{s}_{unit}": sent[s] for s in ("mean", "sd", "min", "max")}
                out[f"{p}_sender_{q}_nsd_ratio"] = sent["nsd"]
            if bulk and aggregate_composer([j for j in measured if j.type == "bulk_get"]):
                out[f"{p}_aggregate_throughput_mean_bytes_per_second"] = aggregate_rate(bulk)
            load = [self.results[j.id] for j in self.jobs if j.group == g and j.role == "background"
                    and j.id in self.results]  # fmt: skip
            if any(j.group == g and j.role == "background" for j in self.jobs):
                out[f"{p}_background_throughput_bytes_per_second"] = (aggregate_rate(load) or 0.0) if load else 0.0
        return out | {f"{t.name}_{h}_cpu_ratio": self.cpu.get(h) for h in t.nodes()}
