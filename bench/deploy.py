"""Benchmark: deploy and teardown time of a 16-host switched lab, amortized per node (a figure, not a gate).

Target from the platform issue: 0.15 s per node or better (containerlab: ~0.13 s/node on 16 cores).
Writes results/bench/deploy-<UTC time>.json with the machine it ran on.

    python -m bench.deploy [--hosts 16] [--repeat 3]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import time
from pathlib import Path

from protolab import cleanup, environment, topo
from protolab.lab import Lab

TARGET_SECONDS_PER_NODE = 0.15


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hosts", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    from mininet.log import setLogLevel

    setLogLevel("critical")
    cleanup.clean(verbose=False)
    t = topo.build("switched", {"hosts": a.hosts, "rate": "100Mbit"})
    nodes = len(t.hosts) + len(t.switches)
    runs = []
    for i in range(a.repeat):
        lab = Lab(t, "bench", {h.name: "protolab/node:latest" for h in t.hosts})
        t0 = time.monotonic()
        lab.deploy()
        t1 = time.monotonic()
        code, _, _ = lab.exec("h1", ["ping", "-c", "1", "-W", "2", f"10.0.1.{a.hosts}"])
        lab.teardown()
        t2 = time.monotonic()
        runs.append({"deploy_seconds": t1 - t0, "teardown_seconds": t2 - t1, "reachable": code == 0, **lab.timings})
        ping = "ok" if code == 0 else "FAILED"
        print(f"run {i + 1}: deploy {t1 - t0:.2f}s, teardown {t2 - t1:.2f}s, "
              f"{(t2 - t0) / nodes:.3f} s/node (deploy+teardown), h1->h{a.hosts} ping {ping}")  # fmt: skip
    deploy = statistics.median(r["deploy_seconds"] for r in runs)
    teardown = statistics.median(r["teardown_seconds"] for r in runs)
    result = {
        "benchmark": "deploy",
        "hosts": a.hosts,
        "nodes": nodes,
        "runs": runs,
        "median_deploy_seconds_per_node": deploy / nodes,
        "median_teardown_seconds_per_node": teardown / nodes,
        "median_total_seconds_per_node": (deploy + teardown) / nodes,
        "target_seconds_per_node": TARGET_SECONDS_PER_NODE,
        "machine": environment.static(),
        "at": dt.datetime.now(dt.UTC).isoformat(),
    }
    out = Path(__file__).resolve().parent.parent / "results" / "bench"
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"deploy-{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%SZ}.json"
    path.write_text(json.dumps(result, indent=2))
    print(f"{nodes} nodes ({a.hosts} hosts + switch) on {result['machine']['cpu_count']} cores: "
          f"deploy {deploy / nodes:.3f} s/node, teardown {teardown / nodes:.3f} s/node, "
          f"total {(deploy + teardown) / nodes:.3f} s/node (aim: {TARGET_SECONDS_PER_NODE} s/node)")  # fmt: skip
    print(f"-> {path}")
    return 0 if all(r["reachable"] for r in runs) else 1


if __name__ == "__main__":
    raise SystemExit(main())
