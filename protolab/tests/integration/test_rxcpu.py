"""Kernel receive work charged to the receiving node (issue 21, item 1), proved by a controlled experiment on a
real lab: h1 sends UDP to h2 at a fixed packet rate; h2's cgroup CPU must rise with the rate, and h1's must be what
h1 spends sending -- about what it spends sending the same packets into a blackhole (a MAC no node has: the bridge
floods them and every receiver's kernel drops them at once, before IP).

A plain UDP receive stack costs a few microseconds a packet, the same order as the scheduling noise of a
two-core machine (CI once saw the sender's CPU 21 % above its blackhole figure with receive work attributed
correctly). So h2's IP input is made costly on purpose: NFT_RULES non-matching rules in an nftables input chain in
h2's namespace, 7..13 us a packet per 1,000 rules measured here (it varies from day to day). That work runs in
the softirq that receives the frame: in the receiver's NAPI thread under `receive_cpu: node`, in the sender's
context under `in_context`
(measured with 3,000 rules, 24,000 packets a phase: h1's excess over the blackhole phase was +0.97 s in context and
+0.02 s with `node`, where h2's was +0.91 s).
Each figure is the median of interleaved repetitions; the bounds are ratios or shares of a core, not times."""

from __future__ import annotations

import statistics
import subprocess
import time

import pytest

from protolab import counters
from protolab.lab import Lab, rxcpu
from protolab.spec import TopologySpec

pytestmark = pytest.mark.integration
IMAGE = "protolab/node:latest"
RATE = 6000  # packets/s: well under what one core sends, far above the receiver's idle floor
SECONDS = 4
REPS = 3
BLACKHOLE = ("10.0.1.99", "02:00:00:00:00:99")
NFT_RULES = 3000


def _costly_input(lab: Lab, node: str) -> None:
    """NFT_RULES rules in `node`'s IP input that match nothing (TEST-NET-1 sources): pure receive-stack work."""
    rules = "\n".join(f"    ip saddr 192.0.2.{i % 250 + 1} udp dport {1000 + i} drop" for i in range(NFT_RULES))
    hook = "type filter hook input priority 0; policy accept;"
    ruleset = f"table ip rxload {{\n  chain input {{\n    {hook}\n{rules}\n  }}\n}}\n"
    p = subprocess.run(["nsenter", "-t", str(lab.nodes[node].pid), "-n", "nft", "-f", "-"], input=ruleset,
                       capture_output=True, text=True, timeout=60)  # fmt: skip
    assert p.returncode == 0, p.stderr


def _lab(mode: str) -> Lab:
    t = TopologySpec(kind="switched", params={"hosts": 2, "rate": "100Mbit"}, receive_cpu=mode).build()
    return Lab(t, f"rxcpu-{mode.replace('_', '')}", {h.name: IMAGE for h in t.hosts})


def _cpu(lab: Lab, node: str) -> float:
    v = counters.cgroup_cpu_seconds(lab.nodes[node].pid)
    assert v is not None, f"{node}: no cgroup CPU figure"
    return v


def _phase(lab: Lab, rate: int, dest: str) -> tuple[float, float]:
    """(h1, h2) CPU seconds over one phase of SECONDS: h1 sending `rate` packets/s of 100 B to `dest` (0: idle)."""
    a0, b0 = _cpu(lab, "h1"), _cpu(lab, "h2")
    if rate:
        code, out, err = lab.exec(
            "h1",
            [
                "protolab-dishost",
                "send",
                "--dest",
                dest,
                "--rate",
                str(rate),
                "--size",
                "100",
                "--duration",
                f"{SECONDS}s",
            ],  # fmt: skip
            timeout=SECONDS + 20,
        )
        assert code == 0, out + err
    else:
        time.sleep(SECONDS)
    return _cpu(lab, "h1") - a0, _cpu(lab, "h2") - b0


def _measure(lab: Lab) -> dict[str, tuple[float, float]]:
    lab.nodes["h2"].container.exec_run(
        ["protolab-dishost", "recv", "--local", "--duration", f"{SECONDS * 4 * REPS + 30}s"], detach=True
    )
    code, out, err = lab.exec("h1", ["ip", "neigh", "replace", BLACKHOLE[0], "lladdr", BLACKHOLE[1], "dev", "h1-eth0"])
    assert code == 0, out + err
    _costly_input(lab, "h2")  # the namespace, and these rules, end with the lab
    time.sleep(1)
    runs: dict[str, list[tuple[float, float]]] = {"idle": [], "quarter": [], "full": [], "blackhole": []}
    for _ in range(REPS):
        runs["idle"].append(_phase(lab, 0, ""))
        runs["quarter"].append(_phase(lab, RATE // 4, "10.0.1.2"))
        runs["full"].append(_phase(lab, RATE, "10.0.1.2"))
        runs["blackhole"].append(_phase(lab, RATE, BLACKHOLE[0]))
    return {k: (statistics.median(a for a, _ in v), statistics.median(b for _, b in v)) for k, v in runs.items()}


def test_receive_work_is_charged_to_the_receiver(no_leftovers):
    with _lab("node") as lab:
        m = lab.receive_cpu.manifest()
        assert m["mode"] == "node" and all(len(p) == 1 for p in m["napi_threads"].values()), m
        # the kthread is in the container's cgroup, and threaded NAPI is on in the node's namespace
        pid = m["napi_threads"]["h2"][0]
        assert any(str(d).endswith(c) for _, d in rxcpu.cpu_cgroups(pid)
                   for c in (lab.nodes["h2"].container.id,)), rxcpu.cpu_cgroups(pid)  # fmt: skip
        fig = _measure(lab)
        threads = dict(m["napi_threads"])
    print(
        f"\nreceive_cpu=node, {NFT_RULES} nft rules in h2, {RATE} packets/s of 100 B,"
        f" median of {REPS} x {SECONDS} s (h1, h2 CPU s): {fig}"
    )
    (_, idle_b), (_, quarter_b), (full_a, full_b), (hole_a, hole_b) = (
        fig["idle"],
        fig["quarter"],
        fig["full"],
        fig["blackhole"],  # fmt: skip
    )
    # the receiver pays for what it receives, more for more
    assert full_b > quarter_b > idle_b, fig
    assert full_b - idle_b > 0.01 * SECONDS, fig  # at least 1 % of a core for 6,000 packets/s
    # the receiver's stack is its own: h2 pays for the rules, at least 5 % of a core over the phase (24,000
    # packets). What the rules cost depends on the machine: +0.91 s on 2026-11-25, +0.49..0.54 s on 2026-11-27
    # (~21 us a packet), when the old bound of 0.5 s failed a rehearsal. A plain UDP stack costs a few us a
    # packet, well under this bound; which node pays is the ratio below, not this floor.
    assert full_b - hole_b > 0.05 * SECONDS, fig
    # and the sender pays for sending, not for its receiver: what h1 spends beyond sending into a blackhole is
    # a small part of what h2's stack cost (in context h1 pays the rules: +0.97 s to h2's +0.55 s, see above)
    assert full_a - hole_a < 0.4 * (full_b - hole_b), fig
    # teardown moved the kthreads back (they end with their interfaces): none is left in a container's cgroup
    for pids in threads.values():
        for p in pids:
            if (rxcpu.PROC / str(p)).exists():
                assert all(d == root for root, d in rxcpu.cpu_cgroups(p)), p
