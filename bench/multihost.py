"""Benchmark (issue 18's scale figure; figures, not gates): how deploying a lab divides over k testbed hosts.

One machine cannot show k hosts' cores, so the table is a model built from figures measured here, each stated:

- deploy seconds = a + b * N for N hosts of a switched lab on this machine: the fit bench.deploy_floor wrote last
  (results/bench/deploy-floor-*.json, protolab's method; run it first, `make bench` does);
- memory per node container at the largest N it measured, and the memory available now: N_max, the nodes one
  such host holds (as deploy_floor's own check: per container x 1.2, plus 256 MiB kept);
- c, the seconds one stitched link takes to set up on its two hosts, measured here: two network namespaces for the
  hosts joined by a veth underlay, and per round the stitch bridge, the VXLAN end (protolab.lab.stitch.attach) and
  the MTU on both sides, timed, then removed (median of the rounds).

Model for k hosts, each like this one: lab.parts deploys them at once (a keeper per host), so a lab of N nodes
split evenly takes a + b * N / k + c * s, s the stitched links (k - 1 for a chain of parts, the fewest that join k
hosts); a host holds at most N_max nodes, so N > k * N_max does not fit. A shared medium stays on one host, so a
single LAN of N nodes does not split: the model is for labs of several LANs or of point-to-point links.

    python -m bench.multihost [--rounds 20]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

from bench import OUT, write_result
from bench.deploy_floor import MEMORY_MARGIN, MEMORY_RESERVE_MIB, mem_available_mib
from protolab.lab import stitch
from protolab.shell import in_netns, run
from protolab.testbed import placement
from protolab.topo import VxlanEnd

HOSTS_K = (1, 2, 4, 8)
NODES_N = (64, 256, 1024, 4096)
NS = ("plabb-host-a", "plabb-host-b")
UNDERLAY = ("10.255.97.1", "10.255.97.2")


def latest_floor() -> tuple[Path, dict[str, Any]]:
    files = sorted(OUT.glob("deploy-floor-*.json"))
    for f in reversed(files):
        d = json.loads(f.read_text())
        if (d.get("fit_seconds_a_plus_b_n") or {}).get("protolab", {}).get("deploy"):
            return f, d
    raise SystemExit("no deploy-floor result with a fit over two or more N: run `python -m bench.deploy_floor` first")


def stitch_seconds(rounds: int) -> list[float]:
    """Seconds to set up one stitched link on both of its hosts (bridge, VXLAN end, MTU), per round."""
    for ns in NS:
        run(["ip", "netns", "add", ns])
    out = []
    try:
        run(["ip", "link", "add", "plabb-ua", "netns", NS[0], "type", "veth", "peer", "name", "plabb-ub", "netns",
             NS[1]])  # fmt: skip
        for ns, dev, addr in zip(NS, ("plabb-ua", "plabb-ub"), UNDERLAY, strict=True):
            run(in_netns(["ip", "addr", "add", f"{addr}/30", "dev", dev], ns))
            run(in_netns(["ip", "link", "set", dev, "up"], ns))
        vni = placement.VNI_BASE
        bridge = placement.stitch_bridge(vni)
        ends = [VxlanEnd(vni, UNDERLAY[i], UNDERLAY[1 - i], 4789, 1450) for i in (0, 1)]
        for _ in range(rounds):
            t0 = time.monotonic()
            for ns, end in zip(NS, ends, strict=True):
                run(in_netns(["ip", "link", "add", bridge, "type", "bridge"], ns))
                run(in_netns(["ip", "link", "set", bridge, "up"], ns))
                stitch.attach(bridge, end, ns)
                stitch.set_mtu([bridge], end.mtu, ns)
            out.append(time.monotonic() - t0)
            for ns, end in zip(NS, ends, strict=True):
                stitch.detach(end, ns)
                run(in_netns(["ip", "link", "del", bridge], ns))
    finally:
        for ns in NS:
            run(["ip", "netns", "del", ns], check=False)
    return out


def model(a: float, b: float, c: float, n_max: float) -> list[dict[str, Any]]:
    rows = []
    for n in NODES_N:
        for k in HOSTS_K:
            rows.append({"nodes": n, "hosts": k, "deploy_seconds": a + b * n / k + c * (k - 1),
                         "fits_in_memory": n <= k * n_max})  # fmt: skip
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=20, help="stitch set-ups timed (median reported)")
    a = ap.parse_args()
    src, floor = latest_floor()
    f = floor["fit_seconds_a_plus_b_n"]["protolab"]["deploy"]
    fa, fb = f["a_seconds"], f["b_seconds_per_host"]
    measured = [r for r in floor["results"] if r.get("memory_mib_per_container")]
    per = max(measured, key=lambda r: r["hosts"])["memory_mib_per_container"] if measured else None
    available = mem_available_mib()
    n_max = (available - MEMORY_RESERVE_MIB) / (per * MEMORY_MARGIN) if per else float("inf")
    times = stitch_seconds(a.rounds)
    c = statistics.median(times)
    rows = model(fa, fb, c, n_max)
    result = {
        "benchmark": "multihost", "deploy_floor": str(src), "fit_a_seconds": fa, "fit_b_seconds_per_host": fb,
        "fit_over_hosts": [r["hosts"] for r in floor["results"]], "memory_mib_per_container": per,
        "memory_available_mib": available, "nodes_per_host_max": n_max, "stitch_seconds": times,
        "stitch_seconds_median": c, "model": rows,
    }  # fmt: skip
    path = write_result("multihost", result)
    print(f"measured: deploy = {fa:.2f} s + {fb * 1e3:.1f} ms x N (fit over N = {result['fit_over_hosts']}, "
          f"{src.name}); {per or float('nan'):.1f} MiB per node container, {available:.0f} MiB available: about "
          f"{n_max:.0f} nodes per host; a stitched link {c * 1e3:.1f} ms to set up (median of {a.rounds})")  # fmt: skip
    print("model: deploy seconds = a + b*N/k + c*(k-1) over k hosts like this one (* : more nodes than k hosts hold)")
    print(f"{'N':>6}" + "".join(f"{f'k={k}':>12}" for k in HOSTS_K))
    for n in NODES_N:
        cells = [r for r in rows if r["nodes"] == n]
        print(f"{n:>6}" + "".join(f"{r['deploy_seconds']:>11.1f}{' ' if r['fits_in_memory'] else '*'}" for r in cells))
    print(f"-> {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
