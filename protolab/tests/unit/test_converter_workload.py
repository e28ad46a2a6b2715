"""The converter_lan topologies, the converter task, its commands and the columns from summaries and counters."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from pydantic import TypeAdapter, ValidationError

from protolab import naming, topo
from protolab.counters import parse_proc_net_dev
from protolab.spec import Task
from protolab.workloads.converter import COLUMNS
from protolab.workloads.converter_runner import (
    Roles,
    Snapshot,
    columns,
    commands,
    expected_total,
    segment_links,
)

BASE = {"kind": "converter", "name": "cv", "load": "250/1k", "duration": "6s"}
LAYOUTS = ["baseline", "switched", "converter_hub", "converter_100_10", "converter_100_100"]


def task(**kw):
    return TypeAdapter(Task).validate_python({**BASE, **kw})


def lan(layout: str, **kw):
    return topo.build("converter_lan", {"layout": layout, **kw})


# -- topologies ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("layout", LAYOUTS)
def test_every_layout_has_six_hosts_and_the_router(layout):
    t = lan(layout)
    roles = {h.name: h.role for h in t.hosts}
    assert [n for n, r in roles.items() if r == "host"] == [f"h{i}" for i in range(1, 7)]
    assert roles["r1"] == "router"
    converters = {n: r for n, r in roles.items() if r.startswith("converter")}
    if layout.startswith("converter"):
        assert converters == {"c2": "converter-c2", "c1a": "converter-c1", "c1b": "converter-c1"}
    else:
        assert converters == {}


def test_the_five_media():
    def media(layout):
        return [(s.name, s.mode, s.capacity_bps) for s in lan(layout).switches]

    assert media("baseline") == [("s1", "hub", 10e6)]
    assert media("switched") == [("s1", "switch", None)]
    assert media("converter_hub") == [("s1", "hub", 10e6)]
    assert media("converter_100_10") == [("s1", "hub", 10e6), ("s2", "switch", None)]
    assert media("converter_100_100") == [("s1", "hub", 100e6), ("s2", "switch", None)]
    # switch ports carry the rate; hub ports none (the medium is the limit)
    assert {lk.rate_bps for lk in lan("switched").links} == {100e6}
    t = lan("converter_100_10")
    assert {lk.rate_bps for lk in t.links if lk.node2 == "s2"} == {100e6}
    assert {lk.rate_bps for lk in t.links if lk.node2 == "s1"} == {None}


def test_c2_is_dual_homed_with_eth0_toward_the_hosts():
    t = lan("converter_100_10")
    assert t.interfaces()["c2"] == ["c2-eth0", "c2-eth1"]
    c2_links = [(lk.node2, lk.ip1, lk.segment) for lk in t.links if lk.node1 == "c2"]
    assert c2_links == [("s1", "10.0.1.100/24", "c2_host"), ("s2", "10.0.2.100/24", "c1_c2")]
    assert [lk.ip1 for lk in t.links if lk.node1 == "r1"] == ["10.0.2.254/24"]
    assert lan("converter_hub").interfaces()["c2"] == ["c2-eth0"]


def test_segments_name_the_thesis_table_rows():
    assert {s: [n for n, _, _ in v] for s, v in segment_links(lan("converter_100_100")).items()} == {
        "host_link": [f"h{i}" for i in range(1, 7)],
        "c2_host": ["c2"],
        "c1_c2": ["c2"],
        "c1_link": ["c1a", "c1b"],
        "c1_router": ["r1"],
    }
    assert set(segment_links(lan("converter_hub"))) == {"host_link", "c2_host", "c1_c2", "c1_router"}
    assert set(segment_links(lan("baseline"))) == {"host_link", "router_link"}


def test_bad_parameters_are_refused():
    with pytest.raises(ValidationError):
        lan("ring")
    with pytest.raises(ValueError, match="hub"):
        lan("baseline", multicast="snooping")
    with pytest.raises(ValidationError):
        lan("converter_hub", hosts=17)
    assert len([h for h in lan("converter_hub", c1=6).hosts if h.role == "converter-c1"]) == 6


# -- the task ---------------------------------------------------------------------------------------------
def test_load_notation_and_defaults():
    t = task(load="450/7k")
    assert (t.host_messages_per_second, t.wan_messages_per_second) == (450, 7000)
    assert t.size == 150 and t.to == 2 and t.interval == 0.005 and t.arrival == "poisson"
    t = task(load=None, host_messages_per_second=200, wan_messages_per_second=1500)
    assert (t.host_messages_per_second, t.wan_messages_per_second) == (200, 1500)
    assert t.columns() == [f"cv_{c}" for c in COLUMNS]
    assert t.scrape_ports() == {"*": [naming.CONVERTER_PORT]}


@pytest.mark.parametrize(
    "bad",
    [
        {"load": "250-1k"},
        {"load": None},
        {"load": "250/1k", "host_messages_per_second": 200},
        {"size": "4B"},
        {"mtu": "100B"},
        {"max_bundle": "100B"},
        {"base": "10.0.0.1"},
    ],
)
def test_bad_tasks_are_refused(bad):
    with pytest.raises(ValidationError):
        task(**bad)


def test_commands_for_the_100_10_converter():
    t = lan("converter_100_10")
    cmds = commands(task(load="450/5k", max_bundle="1400B"), t, Roles.of(t, "r1"))
    assert set(cmds) == {"h1", "h2", "h3", "h4", "h5", "h6", "c1a", "c1b", "c2", "r1"}
    c2 = cmds["c2"]
    assert c2[0] == "c2" and c2[c2.index("--c1") + 1] == "10.0.2.101:4001,10.0.2.102:4001"
    assert c2[c2.index("--hosts") + 1] == "10.0.1.255:4002"
    assert c2[c2.index("--host-capacity") + 1] == "10Mbit" and c2[c2.index("--c1-capacity") + 1] == "100Mbit"
    assert c2[c2.index("--max-bundle") + 1] == "1400" and "--duration=10s" in c2  # 6 s + lead 3 s + tail 1 s
    c1 = cmds["c1b"]
    assert c1[:3] == ["c1", "--id", "2"] and c1[c1.index("--c2") + 1] == "10.0.2.100:4000"
    assert c1[c1.index("--iface") + 1] == "c1b-eth0" and c1[c1.index("--mtu") + 1] == "150"
    h = cmds["h3"]
    assert h[:3] == ["h", "--id", "3"] and h[h.index("--c2") + 1] == "10.0.1.100:4000"
    assert h[h.index("--rate") + 1] == "450" and h[h.index("--to") + 1] == "2" and "--duration=6s" in h
    assert f":{naming.CONVERTER_PORT}" in h
    r = cmds["r1"]
    assert r[0] == "wan" and r[r.index("--rate") + 1] == "5000" and r[r.index("--iface") + 1] == "r1-eth0"
    assert all("--priority=0.1" in c for c in (h, r)) and "--reliable" not in c2 + h
    rel = commands(task(load="450/5k", reliable=True, priority=0.5), t, Roles.of(t, "r1"))
    assert "--reliable" in rel["c2"] and "--reliable" in rel["h1"] and "--reliable" not in rel["c1a"] + rel["r1"]
    assert "--priority=0.5" in rel["h1"] and "--priority=0.5" in rel["r1"]


def test_commands_for_the_baseline_and_the_hub_converter():
    t = lan("baseline")
    cmds = commands(task(), t, Roles.of(t, "r1"))
    assert set(cmds) == {"h1", "h2", "h3", "h4", "h5", "h6", "r1"}
    assert cmds["h2"][:3] == ["host", "--id", "2"] and cmds["h2"][cmds["h2"].index("--iface") + 1] == "h2-eth0"
    t = lan("converter_hub")
    c2 = commands(task(), t, Roles.of(t, "r1"))["c2"]
    assert c2[c2.index("--c1") + 1] == "10.0.1.101:4001,10.0.1.102:4001"
    assert c2[c2.index("--host-capacity") + 1] == c2[c2.index("--c1-capacity") + 1] == "10Mbit"


# -- columns ----------------------------------------------------------------------------------------------
PROC_NET_DEV = Path(__file__).parent / "fixtures" / "converter" / "proc_net_dev.txt"  # a lab node's, captured


def test_proc_net_dev():
    counters = parse_proc_net_dev(PROC_NET_DEV.read_text())
    assert set(counters) == {"lo", "h1-eth0", "eth0"}
    assert counters["h1-eth0"] == {"rx_bytes": 846, "rx_packets": 15, "tx_bytes": 21676954, "tx_packets": 36009}


def _counters(t, seconds: float, per_node: dict[str, tuple[float, int, int, int]], medium: dict[str, int]):
    """Two snapshots `seconds` apart: node -> (cpu seconds, rx bytes, tx bytes, rx packets) used between them."""
    before, after = Snapshot(), Snapshot()
    intfs = t.interfaces()
    for node, (cpu, rxb, txb, rxp) in per_node.items():
        before.at[node], after.at[node] = 100.0, 100.0 + seconds
        before.cpu[node], after.cpu[node] = 50.0, 50.0 + cpu
        zero = {"rx_bytes": 0, "rx_packets": 0, "tx_bytes": 0, "tx_packets": 0}
        before.net[node] = {i: dict(zero) for i in intfs[node]}
        after.net[node] = {i: dict(zero) for i in intfs[node]}
        after.net[node][intfs[node][-1]] = {"rx_bytes": rxb, "rx_packets": rxp, "tx_bytes": txb, "tx_packets": 0}
    for hub, b in medium.items():
        before.at[hub], after.at[hub] = 100.0, 100.0 + seconds
        before.medium[hub], after.medium[hub] = 1000, 1000 + b
    return before, after


def test_columns_of_the_100_100_converter():
    t = lan("converter_100_100")
    roles = Roles.of(t, "r1")
    secs = 4.0
    hosts = {f"h{i}": (0.04 * secs, 0, 0, 200 * 4) for i in range(1, 7)}  # 0.04 cores, 200 bundles/s each
    nodes = {**hosts, "c1a": (0.5 * secs, 0, 0, 0), "c1b": (0.3 * secs, 0, 0, 0)}
    # c2's last interface is its switch port: 2.5 Mbit/s each way; r1: 4 Mbit/s in all
    nodes["c2"] = (0.2 * secs, 312_500 * 4, 312_500 * 4, 0)
    nodes["r1"] = (0.1 * secs, 250_000 * 4, 250_000 * 4, 0)
    before, after = _counters(t, secs, nodes, {"s1": 625_000 * 4})  # 5 Mbit/s through the 100 Mbit hub
    reports = {f"h{i}": {"received": 4950, "sent": 1000, "sent_to": {"a": 1000, "b": 1000}, "elapsed_seconds": 4.0,
                         "delay_mean_seconds": 0.010 + 0.001 * i, "delay_p99_seconds": 0.02 + 0.001 * i}
               for i in range(1, 7)}  # fmt: skip
    reports["h6"]["reflected"] = 1
    for i in range(1, 7):  # 100 priority messages to each of two others; 440 priority ones received (of 2 x 40 + 400)
        reports[f"h{i}"] |= {"sent_priority_to": {"a": 40, "b": 40}, "received_priority": 440, "duplicates": 1}
    reports["r1"] = {"sent": 3990, "received": 6000, "elapsed_seconds": 3.99, "sent_priority": 400}
    reports["c2"] = {"dropped": {"malformed": 2, "congestion": 3}, "retransmitted": 7}
    budgets = {f"h{i}": 0.05 for i in range(1, 7)}
    c = columns(task(), t, roles, reports, before, after, budgets)
    assert set(c) == set(task().columns())
    assert c["cv_host_cpu_ratio"] == pytest.approx(0.04) and c["cv_host_cpu_share_ratio"] == pytest.approx(0.8)
    assert c["cv_c1_cpu_ratio"] == pytest.approx(0.4) and c["cv_c1_cpu_share_ratio"] == pytest.approx(0.4)
    assert c["cv_c2_cpu_share_ratio"] == pytest.approx(0.2)
    # every host expects all 3990 WAN messages; 6 hosts x 2000 addressed to others
    assert c["cv_expected_total"] == 6 * 3990 + 12000
    assert c["cv_lost_total"] == 6 * 3990 + 12000 - 6 * 4950
    assert c["cv_loss_ratio"] == pytest.approx(c["cv_lost_total"] / c["cv_expected_total"])
    assert c["cv_delay_mean_seconds"] == pytest.approx(0.0135) and c["cv_delay_p99_seconds"] == pytest.approx(0.026)
    assert c["cv_reflected_total"] == 1 and c["cv_dropped_total"] == 5
    assert c["cv_host_rx_packets_per_second"] == pytest.approx(200)
    assert c["cv_wan_sent_messages_per_second"] == pytest.approx(1000)
    assert c["cv_delivered_messages_per_second"] == pytest.approx(4950 / 4)
    assert c["cv_util_c2_host_ratio"] == pytest.approx(0.05) and c["cv_util_host_link_ratio"] == pytest.approx(0.05)
    assert c["cv_util_c1_c2_ratio"] == pytest.approx(0.05)  # 2 x 2.5 Mbit/s over 100 Mbit/s
    assert c["cv_util_c1_router_ratio"] == pytest.approx(0.04)
    # priority: 400 WAN at each of 6 hosts + 6 x 80 addressed, 6 x 440 received
    assert c["cv_priority_loss_ratio"] == pytest.approx((6 * 400 + 480 - 6 * 440) / (6 * 400 + 480))
    assert c["cv_retransmitted_total"] == 7 and c["cv_duplicates_total"] == 6


def test_columns_of_the_baselines():
    t = lan("switched")
    roles = Roles.of(t, "r1")
    nodes = {f"h{i}": (0.2, 1_250_000 * i, 0, 3000) for i in range(1, 7)}  # 1 s: i x 10 Mbit/s in
    nodes["r1"] = (0.1, 0, 0, 0)
    before, after = _counters(t, 1.0, nodes, {})
    reports = {f"h{i}": {"received": 10, "sent": 5, "sent_to": {}, "elapsed_seconds": 1.0} for i in range(1, 7)}
    reports["r1"] = {"sent": 0}
    c = columns(task(), t, roles, reports, before, after, {})
    assert c["cv_util_host_link_ratio"] == pytest.approx(0.35)  # mean of 0.1 .. 0.6
    assert c["cv_util_c1_router_ratio"] is None and c["cv_util_c2_host_ratio"] is None
    assert c["cv_c1_cpu_ratio"] is None and c["cv_c2_cpu_ratio"] is None
    assert c["cv_host_cpu_share_ratio"] == pytest.approx(0.2)  # no budget: share of one core
    assert c["cv_expected_total"] == 0 and c["cv_loss_ratio"] is None
    assert c["cv_delay_mean_seconds"] is None and c["cv_priority_loss_ratio"] is None


def test_roles_must_be_complete():
    t = lan("converter_hub")
    t.hosts = [h for h in t.hosts if h.name != "c2"]
    with pytest.raises(ValueError, match="go together"):
        Roles.of(t, "r1")
    roles = Roles.of(lan("baseline"), "r1")
    reports = {"r1": {"sent": 10}, **{h: {"sent_to": {"1": 3}} for h in roles.hosts}}
    assert expected_total(roles, reports) == 6 * 10 + 6 * 3


def test_lab_targets_add_wildcard_ports_to_every_node():
    from protolab.lab import Lab

    hosts = [SimpleNamespace(name=n, role="host") for n in ("h1", "c2")]
    lab = SimpleNamespace(run_id="r", topology=SimpleNamespace(hosts=hosts))
    groups = Lab.targets(lab, {"*": [naming.CONVERTER_PORT], "h1": [naming.DIS_PORT]})  # type: ignore[arg-type]
    assert [g["targets"] for g in groups] == [
        ["plab-h1:9100", f"plab-h1:{naming.DIS_PORT}", f"plab-h1:{naming.CONVERTER_PORT}"],
        ["plab-c2:9100", f"plab-c2:{naming.CONVERTER_PORT}"],
    ]
