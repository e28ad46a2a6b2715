"""A UDP sender held up mid-test (its iperf3 SIGSTOPped for 0.6 s, as a start held up by a lost control message
would be) sends what it missed in one burst: the runner measures how far it ran ahead of its rate and makes the
measurement invalid, naming the sender. The same test left alone stays valid."""

from __future__ import annotations

import threading
import time

import pytest

from protolab import topo
from protolab.lab import Lab
from protolab.workloads.iperf3 import Iperf3Task
from protolab.workloads.iperf3_runner import Iperf3Runner

pytestmark = pytest.mark.integration
IMAGE = "protolab/node:latest"
HOLD_S = 0.6


def _udp(lab: Lab, hold: bool) -> tuple[Iperf3Runner, tuple[float, float]]:
    """The runner after a 3 s UDP test, and how long its sender was stopped: at least, at most (the stop and the
    continue each take a `docker exec`)."""
    task = Iperf3Task(kind="iperf3", name="u", client="h1", server="h2", protocol="udp", rate="2Mbit",
                      length="1200B", duration="3s")  # fmt: skip
    r = Iperf3Runner(task, lab)
    r.prepare()
    t = threading.Thread(target=r.run)
    t.start()
    stopped = (0.0, 0.0)
    if hold:
        time.sleep(1.0)
        t0 = time.monotonic()
        lab.exec("h1", ["pkill", "-STOP", "-x", "iperf3"])
        t1 = time.monotonic()
        time.sleep(HOLD_S)
        t2 = time.monotonic()
        lab.exec("h1", ["pkill", "-CONT", "-x", "iperf3"])
        stopped = (t2 - t1, time.monotonic() - t0)
    t.join(timeout=30)
    assert not t.is_alive()
    return r, stopped


def test_a_held_up_udp_sender_makes_its_measurement_invalid(no_leftovers):
    t = topo.build("switched", {"hosts": 2, "rate": "10Mbit"})
    with Lab(t, "itest", {h.name: IMAGE for h in t.hosts}) as lab:
        alone, _ = _udp(lab, hold=False)
        held, (least, most) = _udp(lab, hold=True)
    print(f"ahead: alone {alone.ahead}, held {held.ahead} (stopped {least:.3f}..{most:.3f} s); {held.invalid}")
    assert alone.invalid == [] and alone.ahead is not None and alone.ahead < 0.05, alone.ahead
    # the catch-up is the time stopped, less up to the report's interval it is sent in (0.1 s)
    assert held.ahead is not None and least - 0.1 <= held.ahead <= most + 0.01, (held.ahead, least, most)
    assert len(held.invalid) == 1 and "on h1" in held.invalid[0], held.invalid
