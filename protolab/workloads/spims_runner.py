"""Running a SPIMS task in a lab: one `protolab-spims serve` per initiator on its responder's host, one
`protolab-spims run` per initiator on its own; statements one after another, each statement's parts at once.

Each initiator does all of its job's runs back to back in one process (a run is `count` consecutive samples;
bulk_get: one transfer), so runs of parallel parts overlap in time as the paper's lockstep runs did, without a
barrier between them. A transport the kernel lacks (exit 3) stops the task with the agent's one line (the
experiment's plan says which transports this machine has: `protolab-spims transports`).
"""

from __future__ import annotations

import json
import math
import shlex
import statistics
import threading
import time
from typing import Any

from ..spims import Dist, Job
from .base import WorkloadError, WorkloadRunner
from .spims import QUANTITY, SpimsTask

BIN = "protolab-spims"
UNAVAILABLE = 3  # protolab-spims run: the transport is not available here


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
    if not values:
        return dict.fromkeys(("mean", "sd", "min", "max", "nsd"))
    mean = statistics.fmean(values)
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return {"mean": mean, "sd": sd, "min": min(values), "max": max(values), "nsd": sd / mean if mean else None}


def run_values(job: Job, result: dict[str, Any]) -> list[float]:
    """One value per run: the mean time of its `count` samples, or a bulk transfer's receiver throughput."""
    samples = result.get("samples_seconds") or []
    if job.type == "bulk_get":
        size = (result.get("bulk") or {}).get("transfer_bytes") or 0
        return [size / s for s in samples if s > 0]
    count = job.count or 1
    return [statistics.fmean(samples[i : i + count]) for i in range(0, len(samples) - count + 1, count)]


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


class SpimsRunner(WorkloadRunner[SpimsTask]):
    def __init__(self, task: SpimsTask, lab: Any) -> None:
        super().__init__(task, lab)
        self.jobs = task.jobs()
        self.ports = {j.id: task.port + i for i, j in enumerate(self.jobs)}
        self.results: dict[str, dict[str, Any]] = {}
        self.errors: list[str] = []
        self._servers: list[threading.Thread] = []

    def _nice(self, job: Job) -> list[str]:
        low = job.role == "background" and any(j.high_priority for j in self.jobs if j.group == job.group)
        return ["nice", "-n", str(self.task.background_nice)] if low else []

    def prepare(self) -> None:
        for job in self.jobs:
            port, host = self.ports[job.id], job.responder_host
            assert host is not None
            cmd = [*self._nice(job), BIN, "serve", "--transport", self.task.transport, "--listen", f":{port}"]

            def serve(host: str = host, cmd: list[str] = cmd) -> None:
                code, out, err = self.lab.exec(host, cmd)
                if code not in (0, 143, -15):
                    self.errors.append(f"responder on {host} ({' '.join(cmd)}): exit {code}: {(err or out)[-300:]}")

            th = threading.Thread(target=serve, daemon=True, name=f"spims-serve-{job.id}")
            th.start()
            self._servers.append(th)
            wait = (f"for i in $(seq 100); do ss -Hlntu 'sport = :{port}' | grep -q . && exit 0; sleep 0.05; done; "
                    "exit 1")  # fmt: skip
            if self.lab.exec(host, ["sh", "-c", wait])[0] != 0:
                raise WorkloadError(f"spims task {self.task.name}: responder {job.id} on {host} did not listen on "
                                    f"port {port}{': ' + self.errors[-1] if self.errors else ''}")  # fmt: skip

    def _target(self, job: Job) -> str:
        assert job.responder_host is not None
        addr = self.lab.ip(job.responder_host, family=self.task.address_family())
        return f"[{addr}]:{self.ports[job.id]}" if ":" in addr else f"{addr}:{self.ports[job.id]}"

    def _initiate(self, job: Job, index: int) -> None:
        t = self.task
        spec = agent_job(job, t, self._target(job), t.seed + index, t.duration)
        path = f"/tmp/spims-{t.name}-{job.id}.json"
        host = job.initiator_host
        assert host is not None
        run = " ".join([*self._nice(job), BIN, "run", "--job", path])
        script = f"printf %s {shlex.quote(json.dumps(spec))} > {path} && exec {run}"
        code, out, err = self.lab.exec(host, ["sh", "-c", script])
        if code == UNAVAILABLE:
            raise WorkloadError(f"spims task {t.name}: transport {t.transport} is not available on {host}: "
                                f"{err.strip()[-300:]}")  # fmt: skip
        try:
            self.results[job.id] = json.loads(out.strip().splitlines()[-1])
        except (ValueError, IndexError):
            raise WorkloadError(f"spims task {t.name}: initiator {job.id} on {host} exit {code}, no result: "
                                f"{(err or out).strip()[-300:]}") from None  # fmt: skip
        if code != 0 and job.role == "measured":
            raise WorkloadError(f"spims task {t.name}: initiator {job.id} on {host} exit {code}: {err.strip()[-300:]}")

    def _start(self, job: Job, index: int, failures: list[BaseException]) -> threading.Thread:
        def body() -> None:
            try:
                self._initiate(job, index)
            except BaseException as exc:  # raised by run()
                failures.append(exc)

        th = threading.Thread(target=body, daemon=True, name=f"spims-run-{job.id}")
        th.start()
        return th

    def run(self) -> None:
        try:
            for g in sorted({j.group for j in self.jobs}):
                self._statement(g)
        finally:
            self._stop_responders()

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
            self.lab.exec(j.initiator_host or "", ["pkill", "-INT", "-f", f"spims-{self.task.name}-{j.id}.json"])
            th.join(timeout=30)
        if failures:
            raise failures[0]

    def _stop_responders(self) -> None:
        for job in self.jobs:
            self.lab.exec(job.responder_host or "", ["pkill", "-TERM", "-f", f"{BIN} serve .*:{self.ports[job.id]}$"])
        for th in self._servers:
            th.join(timeout=10)
        self._servers = []

    def raw(self) -> dict[str, Any]:
        trimmed = {
            k: {**v, "samples_seconds": (v.get("samples_seconds") or [])[:20000]} for k, v in self.results.items()
        }
        return {"jobs": [j.as_dict() for j in self.jobs], "results": trimmed, "responder_errors": self.errors}

    def result(self) -> dict[str, float | None]:
        t, out = self.task, {}
        for g in sorted({j.group for j in self.jobs}):
            p = t.prefix(g)
            measured = [j for j in self.jobs if j.group == g and j.role == "measured" and j.id in self.results]
            for kind in dict.fromkeys(j.type for j in measured):
                q, unit = QUANTITY[kind]
                values = [v for j in measured if j.type == kind for v in run_values(j, self.results[j.id])]
                st = _stats(values)
                out |= {f"{p}_{q}_{s}_{unit}": st[s] for s in ("mean", "sd", "min", "max")}
                out[f"{p}_{q}_nsd_ratio"] = st["nsd"]
                if kind == "request_response":
                    p99 = [self.results[j.id]["seconds"]["p99"] for j in measured if j.type == kind]
                    out[f"{p}_response_p99_seconds"] = max(p99) if p99 else None
            out[f"{p}_runs_total"] = float(sum(len(run_values(j, self.results[j.id])) for j in measured))
            out[f"{p}_timeouts_total"] = float(sum(self.results[j.id].get("timeouts", 0) for j in measured))
            timed = [j for j in measured if j.type != "bulk_get"]  # a transfer is not late, it is slow
            out[f"{p}_late_total"] = float(sum(self.results[j.id].get("late", 0) for j in timed))
            bulk = [self.results[j.id] for j in measured if j.type == "bulk_get"]
            if len(bulk) > 1:
                out[f"{p}_aggregate_throughput_mean_bytes_per_second"] = aggregate_rate(bulk)
            load = [self.results[j.id] for j in self.jobs if j.group == g and j.role == "background"
                    and j.id in self.results]  # fmt: skip
            if any(j.group == g and j.role == "background" for j in self.jobs):
                moved = sum(r.get("received_bytes", 0) for r in load)
                secs = max((r.get("elapsed_seconds") or 0 for r in load), default=0)
                out[f"{p}_background_throughput_bytes_per_second"] = moved / secs if secs else 0.0
        return out
