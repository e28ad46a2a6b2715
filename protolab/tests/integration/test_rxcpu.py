"""Kernel receive work charged to the receiving node (issue 21, item 1), proved by a controlled experiment on a
real lab: h1 sends UDP to h2 at a fixed packet rate; h2's cgroup CPU must rise with the rate, and h1's must be what
h1 spends sending -- the same as when it sends the same packets into a blackhole (a MAC no node has: the bridge
floods them and every receiver's kernel drops them at once). Each figure is the median of interleaved repetitions;
the machine has two cores and other work, so the bounds are ratios, not times."""

from __future__ import annotations

import statistics
import time

import pytest

from protolab import hoststats, rxcpu
from protolab.lab import Lab
from protolab.spec import TopologySpec

pytestmark = pytest.mark.integration
IMAGE = "protolab/node:latest"
RATE = 6000  # packets/s: well under what one core sends, far above the receiver's idle floor
SECONDS = 4
REPS = 3
BLACKHOLE = ("10.0.1.99", "02:00:00:00:00:99")


def _lab(mode: str) -> Lab:
    t = TopologySpec(kind="switched", params={"hosts": 2, "rate": "100Mbit"}, receive_cpu=mode).build()
    return Lab(t, f"rxcpu-{mode.replace('_', '')}", {h.name: IMAGE for h in t.hosts})


def _cpu(lab: Lab, node: str) -> float:
    v = hoststats.cgroup_cpu_seconds(lab.nodes[node].pid)
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
    print(f"\nreceive_cpu=node, {RATE} packets/s of 100 B, median of {REPS} x {SECONDS} s (h1, h2 CPU s): {fig}")
    (_, idle_b), (_, quarter_b), (full_a, full_b), (hole_a, hole_b) = (
        fig["idle"],
        fig["quarter"],
        fig["full"],
        fig["blackhole"],  # fmt: skip
    )
    # the receiver pays for what it receives, more for more
    assert full_b > quarter_b > idle_b, fig
    assert full_b - idle_b > 0.01 * SECONDS, fig  # at least 1 % of a core for 6,000 packets/s
    # the sender pays for sending, not for its receiver: the same as into a blackhole (within 15 %)
    assert 0.85 <= full_a / hole_a <= 1.15, fig
    # and the receiver's stack is not the sender's: h2's extra over the blackhole phase is its own
    assert full_b - hole_b > 0.5 * (full_b - idle_b), fig
    # teardown moved the kthreads back (they end with their interfaces): none is left in a container's cgroup
    for pids in threads.values():
        for p in pids:
            if (rxcpu.PROC / str(p)).exists():
                assert all(d == root for root, d in rxcpu.cpu_cgroups(p)), p
