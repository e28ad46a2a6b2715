"""Benchmark: deploy and teardown time of a 16-host switched lab, amortized per node (a figure, not a gate).

Target from the platform issue: 0.15 s per node or better (containerlab: ~0.13 s/node on 16 cores).
Writes results/bench/deploy-<UTC time>.json with the machine it ran on.

    python -m bench.deploy [--hosts 16] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import pydantic

from bench import write_result
from protolab import cleanup, topo
from protolab.lab import Lab
from protolab.topo import Topology

TARGET_SECONDS_PER_NODE = 0.15
IMAGE = "protolab/node:latest"
RATE = "100Mbit"


def switched_topology(hosts: int) -> Topology:
    """The benchmark's lab: topo.build("switched", {"hosts": hosts, "rate": RATE}). Past the LAN topologies' bound
    of 64 hosts (a spec's limit, not the lab's) the validated parameters are copied with more hosts; past the
    generator's /24 (253 hosts) the hosts are numbered into one /16 instead, 10.0.1.1 ... 10.0.1.250, 10.0.2.1 ...
    (a bridge takes up to 1024 ports; `plab-s1-eth1023` still fits IFNAMSIZ)."""
    try:
        return topo.build("switched", {"hosts": hosts, "rate": RATE})
    except pydantic.ValidationError:
        if not 2 <= hosts <= MAX_HOSTS:
            raise
    kind = topo.load_all().get("switched")
    params = kind.params.model_validate({"hosts": 2, "rate": RATE}).model_copy(update={"hosts": hosts})
    t = kind.build(params)
    if hosts > 253:
        for i, lk in enumerate(t.links):
            lk.ip1 = wide_ip(i + 1)
    t.validate()
    return t


MAX_HOSTS = 1023  # a Linux bridge's ports (BR_MAX_PORTS 1024) less one spare


def wide_ip(n: int) -> str:
    """The n-th host's address (n from 1) in the /16 of a lab too large for a /24: 250 hosts per third octet."""
    return f"10.0.{1 + (n - 1) // 250}.{1 + (n - 1) % 250}/16"


def host_ip(t: Topology, host: str) -> str:
    """The address of a host's first lab interface, without the prefix length."""
    for lk in t.links:
        for node, ip in ((lk.node1, lk.ip1), (lk.node2, lk.ip2)):
            if node == host and ip:
                return ip.split("/")[0]
    raise KeyError(f"{host} has no address in topology {t.kind}")


def deploy_once(t: Topology, run_id: str = "bench") -> dict[str, Any]:
    """Deploy `t` with protolab.lab.Lab, ping the last host from the first, tear it down (also when deploy fails or
    is interrupted); the run's figures. The ping is timed by neither."""
    lab = Lab(t, run_id, {h.name: IMAGE for h in t.hosts})
    first, last = t.hosts[0].name, t.hosts[-1].name
    try:
        t0 = time.monotonic()
        lab.deploy()
        t1 = time.monotonic()
        code, _, _ = lab.exec(first, ["ping", "-c", "1", "-W", "2", host_ip(t, last)])
    except BaseException:
        lab.teardown()
        raise
    t2 = time.monotonic()
    lab.teardown()
    t3 = time.monotonic()
    return {**lab.timings, "deploy_seconds": t1 - t0, "teardown_seconds": t3 - t2, "reachable": code == 0,
            "teardown_failures": lab.teardown_failures}  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hosts", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    from mininet.log import setLogLevel

    setLogLevel("critical")
    cleanup.clean(verbose=False)
    t = switched_topology(a.hosts)
    nodes = len(t.hosts) + len(t.switches)
    runs = []
    for i in range(a.repeat):
        r = deploy_once(t)
        runs.append(r)
        ping = "ok" if r["reachable"] else "FAILED"
        print(f"run {i + 1}: deploy {r['deploy_seconds']:.2f}s, teardown {r['teardown_seconds']:.2f}s, "
              f"{(r['deploy_seconds'] + r['teardown_seconds']) / nodes:.3f} s/node (deploy+teardown), "
              f"h1->h{a.hosts} ping {ping}")  # fmt: skip
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
    }
    path = write_result("deploy", result)
    print(f"{nodes} nodes ({a.hosts} hosts + switch) on {result['machine']['cpu_count']} cores: "
          f"deploy {deploy / nodes:.3f} s/node, teardown {teardown / nodes:.3f} s/node, "
          f"total {(deploy + teardown) / nodes:.3f} s/node (aim: {TARGET_SECONDS_PER_NODE} s/node)")  # fmt: skip
    print(f"-> {path}")
    return 0 if all(r["reachable"] for r in runs) else 1


if __name__ == "__main__":
    raise SystemExit(main())
