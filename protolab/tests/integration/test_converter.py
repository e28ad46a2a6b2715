"""The bundle converter on a real lab: protolab-converter's c2, c1, h, host and wan roles over real links.

The converter_100_100 layout with 3 hosts (C_1a, C_1b and C_2 on a 100 Mbit switch with the router, the hosts on
a 100 Mbit hub), and the hub baseline with 3 hosts, each under a light constant load (40 messages/s per host,
each to 2 others; 1000 messages/s from the WAN over 4 groups) for 3 s. Nothing may be lost on these unloaded
links: every host must receive exactly every WAN message and exactly the messages addressed to it, never one
of its own (no reflection), with a measured one-way delay; behind the converter each host's interface sees
bundles, far fewer packets than messages. Every node's process is scraped by the lab's Prometheus.
"""

from __future__ import annotations

import time

import docker
import pytest
from pydantic import TypeAdapter

from protolab import cleanup, monitor, naming, topo
from protolab.lab import Lab
from protolab.model.impairment import LinkImpairment
from protolab.spec import Task
from protolab.workloads.converter_runner import ConverterRunner

pytestmark = pytest.mark.integration
RUN_ID = "itest-converter"
HOSTS, HOST_RATE, WAN_RATE, SECONDS = 3, 40, 1000, 3


@pytest.fixture(scope="module")
def prom():
    client = docker.from_env()
    try:
        monitor.up(client)
        yield monitor.Prometheus()
    finally:
        monitor.down()
        try:
            client.networks.get(naming.MGMT_NETWORK).remove()
        except docker.errors.NotFound:
            pass
        left = cleanup.leftovers()
        if left:
            cleanup.clean(verbose=False)
        assert left == [], f"left behind: {left}"


def _task(**more):
    return TypeAdapter(Task).validate_python(
        {"kind": "converter", "name": "cv", "host_messages_per_second": HOST_RATE,
         "wan_messages_per_second": WAN_RATE, "arrival": "constant", "wan_groups": 4, "duration": f"{SECONDS}s",
         **more}
    )  # fmt: skip


@pytest.mark.parametrize("layout", ["converter_100_100", "baseline"])
def test_every_host_gets_exactly_its_messages_and_never_its_own(prom, layout):
    t0 = time.monotonic()
    t = topo.build("converter_lan", {"layout": layout, "hosts": HOSTS})
    task = _task()
    with Lab(t, RUN_ID, {h.name: "protolab/node:latest" for h in t.hosts}) as lab:
        runner = ConverterRunner(task, lab)
        monitor.write_targets(lab.targets(runner.scrape_ports()))
        prom.wait_targets({h.name for h in t.hosts})
        start = time.time()
        runner.prepare()
        runner.run()
        cols = runner.result()
        time.sleep(2)  # the last scrapes
        received = prom.query_range(f'protolab_messages_received_total{{run="{RUN_ID}"}}', start, time.time())
        monitor.write_targets([])
    reps = runner.reports
    hosts = [f"h{i}" for i in range(1, HOSTS + 1)]
    wan_sent = int(reps["r1"]["sent"])
    assert wan_sent >= 0.9 * WAN_RATE * SECONDS, reps["r1"]
    addressed = {h: 0 for h in hosts}
    for h in hosts:
        sent = int(reps[h]["sent"])
        assert sent >= 0.9 * HOST_RATE * SECONDS, reps[h]
        to = {str(k): int(v) for k, v in (reps[h].get("sent_to") or {}).items()}
        assert sum(to.values()) == task.to * sent, reps[h]  # each message to two others
        assert str(hosts.index(h) + 1) not in to, reps[h]  # never to itself
        for k, v in to.items():
            addressed[hosts[int(k) - 1]] += v
    for h in hosts:
        r = reps[h]
        assert int(r["received"]) == wan_sent + addressed[h], (h, r, wan_sent, addressed)
        assert int(r.get("reflected") or 0) == 0, r
        assert 0 < r["delay_mean_seconds"] <= r["delay_p99_seconds"] < 0.1, r
    assert cols["cv_loss_ratio"] == 0 and cols["cv_reflected_total"] == 0
    assert cols["cv_host_cpu_ratio"] > 0
    if layout == "baseline":
        # one message per packet: a host's interface sees at least every message it received
        assert cols["cv_host_rx_packets_per_second"] >= 0.9 * (WAN_RATE + HOST_RATE * task.to)
        assert cols["cv_c2_cpu_ratio"] is None
    else:
        # bundles of 5 ms: at most ~200 packets/s from C_2 (+ the few of the node's own), far fewer than messages
        msgs = WAN_RATE + (HOSTS - 1) * HOST_RATE
        assert cols["cv_host_rx_packets_per_second"] < 0.5 * msgs, cols
        assert cols["cv_c1_cpu_ratio"] > 0 and cols["cv_c2_cpu_ratio"] > 0
        assert 0 < cols["cv_util_c1_router_ratio"] < 0.05 and 0 < cols["cv_util_c1_c2_ratio"] < 0.05
    assert 0 < cols["cv_util_host_link_ratio"] < 0.5
    scraped = {s["metric"].get("node") for s in received}
    assert set(hosts) <= scraped, scraped
    assert time.monotonic() - t0 < 60


LOSS = 0.05


def test_reliable_delivery_gets_every_priority_message_through_lossy_host_links(prom):
    """converter_100_100, 3 hosts, the hub losing 5 % of what it sends toward each host (each host loses C_2's
    broadcast bundles on its own) and toward C_2 (the hosts' bundles); a fifth of the messages priority and
    `reliable: true`: every priority message addressed to a host reaches it exactly once (a message is lost only
    if all 6 sendings are: ~1e-8), while the others are lost with their bundles."""
    t = topo.build("converter_lan", {"layout": "converter_100_100", "hosts": HOSTS})
    task = _task(priority=0.2, reliable=True)
    lossy = [LinkImpairment(link=("s1", n), direction="forward", loss=f"{LOSS:.0%}")
             for n in [*(f"h{i}" for i in range(1, HOSTS + 1)), "c2"]]  # fmt: skip
    with Lab(t, RUN_ID, {h.name: "protolab/node:latest" for h in t.hosts}, impairments=lossy) as lab:
        runner = ConverterRunner(task, lab)
        runner.prepare()
        runner.run()
        cols = runner.result()
    reps = runner.reports
    hosts = [f"h{i}" for i in range(1, HOSTS + 1)]
    wan_prio = int(reps["r1"]["sent_priority"])
    assert wan_prio >= 0.15 * WAN_RATE * SECONDS, reps["r1"]
    owed = {h: wan_prio for h in hosts}
    for h in hosts:
        for k, v in (reps[h].get("sent_priority_to") or {}).items():
            owed[hosts[int(k) - 1]] += int(v)
    for h in hosts:
        assert int(reps[h]["received_priority"]) == owed[h], (h, reps[h], owed)
        assert int(reps[h].get("reflected") or 0) == 0, reps[h]
    assert cols["cv_priority_loss_ratio"] == 0
    # the loss was real: low-priority messages went missing, and the priority ones needed resending
    assert 0.01 < cols["cv_loss_ratio"] < 0.3, cols
    assert cols["cv_retransmitted_total"] > 0 and int(reps["c2"].get("retransmitted") or 0) > 0, reps["c2"]
    assert sum(int(reps[h].get("retransmitted") or 0) for h in hosts) > 0, [reps[h] for h in hosts]
    # a give-up means 6 sendings over ~1.1 s (the timeout doubling from 20 ms) all went unacknowledged
    gave_up = {n: int((reps[n].get("dropped") or {}).get("gave_up") or 0) for n in ["c2", *hosts]}
    tries = {n: reps[n].get("acked_after_sendings") for n in ["c2", *hosts]}
    assert not any(gave_up.values()), f"gave up {gave_up}; acknowledged after sendings {tries}"
    assert all(tries.values()), tries
