"""The dis workload on a real lab: protolab-dishost sender -> receiver over IP multicast with real IGMP joins.

A switched LAN of 3 hosts at 100 Mbit/s, once with the bridge flooding multicast and once with IGMP snooping.
h1 sends 2000 messages/s spread over 8 groups for 3 s; h2 joins half of them. On this unloaded link nothing
may be lost: h2 must count exactly what h1 sent to the joined groups, and none of the rest (which, with the
bridge flooding, demonstrably reached h2's interface). h3 throws malformed datagrams at h2's port (on a joined
group and by unicast) and at a group h2 did not join: the first are counted as drops, the last never reach the
receiver, and the receiver still reports normally. Both processes are scraped by the lab's Prometheus
(Lab.targets with the runner's scrape ports), so their messages and delay metrics must be there.
"""

from __future__ import annotations

import threading
import time

import docker
import pytest
from pydantic import TypeAdapter

from protolab import cleanup, monitor, naming, topo
from protolab.lab import Lab
from protolab.lab.linkstate import cut_end
from protolab.shell import run as sh
from protolab.spec import Task
from protolab.workloads.dis_runner import DisRunner

pytestmark = pytest.mark.integration
RUN_ID = "itest-dis"
GROUPS, SHARE, RATE, SECONDS, PORT = 8, 0.5, 2000, 3, 3000
SHORT, JUNK, UNICAST_JUNK, OFF_GROUP_JUNK = 5, 5, 3, 4  # malformed datagrams h3 sends


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


def _rx_packets(lab: Lab, node: str) -> int:
    return int(lab.exec(node, ["cat", f"/sys/class/net/{node}-eth0/statistics/rx_packets"])[1])


def _malformed(lab: Lab, h2_ip: str) -> None:
    """From h3: 1-byte datagrams and 40 bytes of text on joined group 0, text by unicast to h2, and text on
    group 7, which h2 did not join (bash's /dev/udp: connect + write, TTL 1)."""
    g0, g7 = "239.192.0.0", f"239.192.0.{GROUPS - 1}"
    script = (
        f"for i in $(seq {SHORT}); do printf x > /dev/udp/{g0}/{PORT}; done; "
        f"for i in $(seq {JUNK}); do printf '%040d' $i > /dev/udp/{g0}/{PORT}; done; "
        f"for i in $(seq {UNICAST_JUNK}); do printf '%040d' $i > /dev/udp/{h2_ip}/{PORT}; done; "
        f"for i in $(seq {OFF_GROUP_JUNK}); do printf '%040d' $i > /dev/udp/{g7}/{PORT}; done"
    )
    code, out, err = lab.exec("h3", ["bash", "-c", script])
    assert code == 0, (out, err)


@pytest.mark.parametrize("multicast", ["off", "snooping"])
def test_receiver_counts_exactly_its_groups_and_drops_malformed_datagrams(prom, multicast):
    t0 = time.monotonic()
    # promiscuous NICs: the kernel's own filtering of the flooded groups is what is tested here (test_nicfilter)
    t = topo.build("switched", {"hosts": 3, "rate": "100Mbit", "multicast": multicast, "nic_filter": "promiscuous"})
    task = TypeAdapter(Task).validate_python(
        {
            "kind": "dis",
            "name": "rx",
            "sender": "h1",
            "receiver": "h2",
            "messages_per_second": RATE,
            "duration": f"{SECONDS}s",
            "groups": GROUPS,
            "share": SHARE,
            "size": "150B",
            "busy_loop": False,
            "port": PORT,
        }  # fmt: skip
    )
    with Lab(t, RUN_ID, {h.name: "protolab/node:latest" for h in t.hosts}) as lab:
        runner = DisRunner(task, lab)
        monitor.write_targets(lab.targets(runner.scrape_ports()))
        prom.wait_targets({h.name for h in t.hosts})  # discovered with the agents (Prometheus applies every 5 s)
        rx0 = _rx_packets(lab, "h2")
        start = time.time()
        runner.prepare()  # h2 has joined when this returns
        mdb = sh(["bridge", "mdb", "show", "dev", "plab-s1"], check=False) if multicast == "snooping" else ""
        ends = lab.link_ends.get(("h2", "s1")) or lab.link_ends[("s1", "h2")]
        h2_port = cut_end(ends).intf  # h2's bridge port
        junk = threading.Thread(target=lambda: (time.sleep(1), _malformed(lab, lab.ip("h2"))))
        junk.start()
        runner.run()
        junk.join()
        rx = _rx_packets(lab, "h2") - rx0
        time.sleep(2)  # the last scrapes
        received = prom.query_range(f'protolab_messages_received_total{{run="{RUN_ID}",node="h2"}}', start, time.time())
        sent_prom = prom.query_range(f'protolab_messages_sent_total{{run="{RUN_ID}",node="h1"}}', start, time.time())
        delay = prom.query_range(
            f'protolab_message_delay_seconds_bucket{{run="{RUN_ID}",node="h2",le="+Inf"}}', start, time.time()
        )
        monitor.write_targets([])
    s, r = runner.sender_report, runner.receiver_report
    by_group = s["sent_by_group"]
    joined = r["joined_groups"]
    assert joined == GROUPS // 2 == task.joined
    expected = sum(by_group[:joined])
    others = sum(by_group[joined:])
    assert min(by_group) > 0.8 * RATE * SECONDS / GROUPS, by_group  # every group carried its share
    # nothing lost on an unloaded 100 Mbit/s link, nothing of the other groups counted
    assert r["messages"] == expected, (r, by_group)
    assert r["dropped"].get("unwanted", 0) == 0, r["dropped"]
    # malformed datagrams on the joined group and by unicast reach the socket and are dropped, counted;
    # those on group 7 (not joined) never reach it
    delivered_junk = SHORT + JUNK + UNICAST_JUNK
    assert r["packets"] == expected + delivered_junk, r
    assert sum(r["dropped"].values()) == delivered_junk, r["dropped"]
    assert r["dropped"].get("short") == SHORT, r["dropped"]
    # one-way delay from the DIS timestamp: positive, well under 50 ms on this link
    assert 0 < r["delay_p50_seconds"] <= r["delay_p99_seconds"] < 0.05, r
    if multicast == "off":
        # the bridge flooded every group to h2's interface: the other groups' traffic was there and not counted
        assert rx >= expected + others + delivered_junk + OFF_GROUP_JUNK, (rx, expected, others)
    else:
        # h2's IGMP joins are in the bridge's multicast database, on h2's port, for exactly the joined groups
        # (IPv4 groups: with IPv6 on, h2's MLD reports put its solicited-node groups, ff02::1:ff.., there too)
        in_mdb = {ln.split(" grp ")[1].split()[0] for ln in mdb.splitlines() if f" port {h2_port} " in ln}
        assert {g for g in in_mdb if ":" not in g} == {f"239.192.0.{g}" for g in range(joined)}, mdb
    # Prometheus scraped both DIS hosts while they ran
    top = max((float(v) for series in received for _, v in series["values"]), default=0)
    assert 0 < top <= r["messages"], received
    assert max((float(v) for series in sent_prom for _, v in series["values"]), default=0) > 0, sent_prom
    assert max((float(v) for series in delay for _, v in series["values"]), default=0) > 0, delay
    assert {series["metric"]["instance"] for series in received} == {f"plab-h2:{naming.DIS_PORT}"}
    assert time.monotonic() - t0 < 45
