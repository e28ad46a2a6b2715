"""One table of every benchmark's figures: each figure, its target, met or not, and the figure of the last result
committed for this kind of machine (bench/results/<machine kind>.json).

    python -m bench.summary [--since ISO-TIME] [--save]

Reads the newest result of each benchmark in results/bench/ (or PROTOLAB_BENCH_OUT) written at or after --since
(`make bench` passes its start). --save writes the figures as this machine kind's committed result, with the
commit they were measured at; commit it to keep it as the reference the next run is compared with.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import OUT

COMMITTED = Path(__file__).resolve().parent / "results"


@dataclass
class Figure:
    key: str  # stable name, the key into the committed result
    value: float
    unit: str
    target: float | None = None
    higher_is_better: bool = False

    @property
    def met(self) -> bool | None:
        if self.target is None:
            return None
        return self.value >= self.target if self.higher_is_better else self.value <= self.target

    def target_text(self) -> str:
        if self.target is None:
            return "-"
        return f"{'>=' if self.higher_is_better else '<='} {fmt(self.target)}"


def fmt(v: float) -> str:
    """3 significant digits; whole numbers with thousands separators from 100 up."""
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"


def machine_kind(machine: dict[str, Any]) -> str:
    """A file-name-safe kind of machine: cores and CPU model (e.g. 2cpu-amd-epyc-7b13)."""
    model = re.sub(r"\(r\)|\(tm\)|processor|\d+-core|cpu @.*", "", str(machine.get("cpu_model", "unknown")).lower())
    slug = re.sub(r"[^a-z0-9]+", "-", model).strip("-")[:40] or "unknown"
    return f"{machine.get('cpu_count', 0)}cpu-{slug}"


# -- figures per benchmark -------------------------------------------------------------------------------------


def deploy(r: dict[str, Any]) -> Iterator[Figure]:
    yield Figure("deploy.total_s_per_node", r["median_total_seconds_per_node"], "s/node",
                 r.get("target_seconds_per_node"))  # fmt: skip


def deploy_floor(r: dict[str, Any]) -> Iterator[Figure]:
    for res in r["results"]:
        n, ratio = res["hosts"], res["protolab_over_floor"]
        yield Figure(f"deploy_floor.{n}.total_over_floor", ratio["total"], "x floor", 1.2)
        yield Figure(f"deploy_floor.{n}.teardown_over_floor", ratio["teardown"], "x floor", 1.3)
    for s in r.get("skipped", []):
        print(f"deploy-floor: {s['hosts']} hosts skipped: {s['reason']}")


def multihost(r: dict[str, Any]) -> Iterator[Figure]:
    yield Figure("multihost.stitch_ms", r["stitch_seconds_median"] * 1e3, "ms")


def impair(r: dict[str, Any]) -> Iterator[Figure]:
    for ac in r.get("apply_clear", []):
        if "skipped" in ac:
            continue
        b = ac["backend"]
        yield Figure(f"impair.{b}.apply_s", ac["median_apply_seconds"], f"s/{ac['directions']} dirs")
        yield Figure(f"impair.{b}.restore_s", ac["median_restore_seconds"], f"s/{ac['directions']} dirs")
    for key in ("linkem", "linkem_busy_poll"):
        lk = r.get(key)
        if not lk:
            continue
        for tp in lk["throughput"]:
            ratio = tp["with_linkem_pps"] / tp["without_linkem_pps"] if tp["without_linkem_pps"] else 0.0
            yield Figure(f"{key}.{tp['payload_bytes']}B.pps_ratio", ratio, "x no linkem", 0.9, higher_is_better=True)
        yield Figure(f"{key}.added_p99_us", lk["added_p99_us"], "us", 100.0)


def spims(r: dict[str, Any]) -> Iterator[Figure]:
    for b in r["bulk_get"]:
        yield Figure(f"spims.bulk_get.{b['unit']}.ratio", b["ratio"], "x iperf3", 0.9, higher_is_better=True)
    rr = r["request_response"]
    if "skipped" in rr:
        return
    if "placements" not in rr:  # a result from before the ends were pinned: one unpinned figure
        yield Figure("spims.request_response.p50_ratio", rr["ratio_to_pingpong_2proc"], "x ping-pong", 1.2)
        return
    for name in rr["placements"]:
        yield Figure(f"spims.request_response.{name}.p50_ratio", rr[name]["ratio"], "x ping-pong", 1.2)


GO_FIGURES: dict[str, tuple[str, str, float | None]] = {
    # benchmark name -> (metric unit, figure unit, target (higher is better))
    "BenchmarkReceiveLoopback": ("PDUs/s", "PDUs/s", 200_000.0),
    "BenchmarkSendLoopback": ("PDUs/s", "PDUs/s", 200_000.0),
    "BenchmarkCentral": ("msgs/s", "msgs/s", None),
}


def go(r: dict[str, Any]) -> Iterator[Figure]:
    for suite in r["suites"]:
        for b in suite["benchmarks"]:
            want = GO_FIGURES.get(b["name"])
            if want and want[0] in b["metrics"]:
                yield Figure(f"go.{b['name'].removeprefix('Benchmark')}", b["metrics"][want[0]], want[1], want[2],
                             higher_is_better=True)  # fmt: skip


def large(r: dict[str, Any]) -> Iterator[Figure]:
    for lab in r["labs"]:
        n = lab["hosts"]
        yield Figure(f"large.{n}.deploy_s_per_node", lab["deploy_seconds_per_node"], "s/node")
        yield Figure(f"large.{n}.teardown_s_per_node", lab["teardown_seconds_per_node"], "s/node")
        yield Figure(f"large.{n}.mib_per_node", lab["available_drop_mib_per_node"], "MiB/node")
    yield Figure("large.nodes_limit", r["nodes_limit"], f"nodes ({r['limited_by']})", higher_is_better=True)


FIGURES: dict[str, Callable[[dict[str, Any]], Iterator[Figure]]] = {
    "deploy": deploy, "deploy-floor": deploy_floor, "multihost": multihost, "impair": impair, "spims": spims,
    "go": go, "large": large,
}  # fmt: skip


# -- reading and printing --------------------------------------------------------------------------------------


def newest(out: Path, since: dt.datetime | None) -> dict[str, tuple[Path, dict[str, Any]]]:
    """The newest result file of each benchmark in `out` (at or after `since`, by the time in its name)."""
    found: dict[str, tuple[dt.datetime, Path]] = {}
    for f in out.glob("*.json"):
        m = re.fullmatch(r"(.+)-(\d{8}T\d{6}Z)\.json", f.name)
        if not m or m.group(1) not in FIGURES:  # a result file is named after its benchmark
            continue
        at = dt.datetime.strptime(m.group(2), "%Y%m%dT%H%M%SZ").replace(tzinfo=dt.UTC)
        if since and at < since.replace(microsecond=0):
            continue
        name = m.group(1)
        if name not in found or at > found[name][0]:
            found[name] = (at, f)
    return {name: (f, json.loads(f.read_text())) for name, (_, f) in found.items()}


def collect(results: dict[str, tuple[Path, dict[str, Any]]]) -> tuple[list[Figure], dict[str, Any]]:
    figures: list[Figure] = []
    machine: dict[str, Any] = {}
    for name in FIGURES:
        if name in results:
            r = results[name][1]
            machine = machine or r.get("machine", {})
            figures.extend(FIGURES[name](r))
    return figures, machine


def table(figures: list[Figure], previous: dict[str, Any], missing: list[str]) -> str:
    prev = previous.get("figures", {})
    head = ("figure", "value", "unit", "target", "met", "previous", "change")
    rows = []
    for f in figures:
        met = {True: "met", False: "NOT MET", None: "-"}[f.met]
        p = prev.get(f.key)
        change = f"{(f.value / p - 1):+.0%}" if isinstance(p, (int, float)) and p else "-"
        rows.append((f.key, fmt(f.value), f.unit, f.target_text(), met, fmt(p) if p is not None else "-", change))
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows, strict=False)]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in [head, *rows]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    for name in missing:
        lines.append(f"{name}: no result (did it run?)")
    if previous:
        lines.append(f"previous: {previous.get('at', '?')} at commit {str(previous.get('commit', '?'))[:12]}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--since", type=dt.datetime.fromisoformat, help="only results written at or after (ISO time, UTC)")
    ap.add_argument("--save", action="store_true", help="write the figures as this machine kind's committed result")
    a = ap.parse_args(argv)
    since = a.since.replace(tzinfo=a.since.tzinfo or dt.UTC) if a.since else None
    results = newest(OUT, since)
    if not results:
        print(f"no benchmark result in {OUT}" + (f" since {since.isoformat()}" if since else ""))
        return 1
    figures, machine = collect(results)
    kind = machine_kind(machine)
    ref = COMMITTED / f"{kind}.json"
    previous = json.loads(ref.read_text()) if ref.exists() else {}
    print(f"\nbenchmarks on {kind} ({machine.get('cpu_model', '?')}, kernel {machine.get('kernel', '?')}):")
    print(table(figures, previous, [n for n in FIGURES if n not in results]))
    if a.save:
        from protolab import environment

        COMMITTED.mkdir(parents=True, exist_ok=True)
        ref.write_text(json.dumps({
            "machine_kind": kind, "machine": machine, "at": dt.datetime.now(dt.UTC).isoformat(),
            "commit": environment.git_commit()["commit"], "sources": {n: p.name for n, (p, _) in results.items()},
            "figures": {f.key: f.value for f in figures},
        }, indent=2) + "\n")  # fmt: skip
        print(f"-> {ref} (commit it to compare the next run with it)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
