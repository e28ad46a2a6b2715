"""Benchmark: a large lab on this machine: deploy N hosts on one switch, ping across, tear down (a figure, not a gate).

For each N (default 256 and 512): a switched lab (bench.deploy.switched_topology, every port 100 Mbit/s each way,
past 253 hosts numbered into one /16) deployed with protolab.lab.Lab; a ping from h1 to hN and from hN to h1; torn
down; then protolab's own inventory (cleanup.leftovers) must find nothing. Recorded per N: deploy and teardown time
(and per node), memory per node while deployed (the drop of MemAvailable, which counts everything a node costs:
its container, Docker's shim, Mininet's shell, the kernel's veths and qdiscs; and the containers' own cgroups
alone), and the limits that bound a larger lab here: the memory left divided by the memory per node, and the
bridge's port limit.

    python -m bench.large [--hosts 256 512]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from bench import write_result
from bench.deploy import IMAGE, MAX_HOSTS, host_ip, switched_topology
from bench.deploy_floor import cgroup_memory_mib, mem_available_mib
from protolab import cleanup
from protolab.lab import Lab


def ping(lab: Lab, src: str, dst_ip: str) -> bool:
    code, _, _ = lab.exec(src, ["ping", "-c", "1", "-W", "3", dst_ip])
    return code == 0


def one_lab(hosts: int) -> dict[str, Any]:
    """Deploy, measure, ping both ways, tear down one lab of `hosts` hosts; its figures."""
    t = switched_topology(hosts)
    nodes = len(t.hosts) + len(t.switches)
    first, last = t.hosts[0].name, t.hosts[-1].name
    lab = Lab(t, f"large{hosts}", {h.name: IMAGE for h in t.hosts})
    before = mem_available_mib()
    print(f"{hosts} hosts: deploying ({gib(before)} available)...", flush=True)
    try:
        t0 = time.monotonic()
        lab.deploy()
        deploy = time.monotonic() - t0
        after = mem_available_mib()
        cgroups = [m for m in (cgroup_memory_mib(n.pid) for n in lab.nodes.values() if n.pid) if m is not None]
        reachable = {f"{first}->{last}": ping(lab, first, host_ip(t, last)),
                     f"{last}->{first}": ping(lab, last, host_ip(t, first))}  # fmt: skip
    except BaseException:
        lab.teardown()
        raise
    print(f"{hosts} hosts: deployed in {deploy:.1f} s, tearing down...", flush=True)
    t1 = time.monotonic()
    lab.teardown()
    teardown = time.monotonic() - t1
    left = cleanup.leftovers()
    per_node = max(0.0, before - after) / nodes
    result = {
        "hosts": hosts,
        "nodes": nodes,
        "deploy_seconds": deploy,
        "teardown_seconds": teardown,
        "deploy_seconds_per_node": deploy / nodes,
        "teardown_seconds_per_node": teardown / nodes,
        "timings": lab.timings,
        "available_before_mib": before,
        "available_deployed_mib": after,
        "available_drop_mib_per_node": per_node,
        "container_cgroup_mib_median": statistics.median(cgroups) if cgroups else None,
        "reachable": reachable,
        "teardown_failures": lab.teardown_failures,
        "leftovers": left,
        "nodes_memory_allows": int(before / per_node) if per_node else None,
        "nodes_bridge_allows": MAX_HOSTS + 1,
    }
    print(f"{hosts} hosts: deploy {deploy:.1f} s ({deploy / nodes:.3f} s/node), teardown {teardown:.1f} s "
          f"({teardown / nodes:.3f} s/node), {per_node:.1f} MiB/node (MemAvailable drop; container cgroup median "
          f"{result['container_cgroup_mib_median'] or 0:.1f} MiB), ping "
          + ", ".join(f"{k} {'ok' if v else 'FAILED'}" for k, v in reachable.items())
          + (f", LEFT BEHIND: {left}" if left else ", nothing left behind")
          + (f", TEARDOWN FAILED: {'; '.join(lab.teardown_failures)}" if lab.teardown_failures else ""),
          flush=True)  # fmt: skip
    return result


def gib(mib: float) -> str:
    return f"{mib / 1024:.1f} GiB"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hosts", type=int, nargs="+", default=[256, 512], help=f"lab sizes (2..{MAX_HOSTS} hosts)")
    a = ap.parse_args()
    if bad := [h for h in a.hosts if not 2 <= h <= MAX_HOSTS]:
        ap.error(f"--hosts {bad}: a lab here has 2..{MAX_HOSTS} hosts (one bridge's ports)")
    from mininet.log import setLogLevel

    setLogLevel("critical")
    cleanup.clean(verbose=False)
    labs = [one_lab(h) for h in a.hosts]
    per_node = max((r["available_drop_mib_per_node"] for r in labs), default=0.0)
    limit = min(r["nodes_memory_allows"] or MAX_HOSTS + 1 for r in labs)
    result = {"benchmark": "large", "labs": labs, "max_available_drop_mib_per_node": per_node,
              "nodes_limit": min(limit, MAX_HOSTS + 1),
              "limited_by": "memory" if limit < MAX_HOSTS + 1 else "the bridge's 1024 ports"}  # fmt: skip
    path = write_result("large", result)
    print(f"limit here: about {result['nodes_limit']} nodes ({result['limited_by']}; {per_node:.1f} MiB per node)")
    print(f"-> {path}")
    ok = all(all(r["reachable"].values()) and not r["leftovers"] and not r["teardown_failures"] for r in labs)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
