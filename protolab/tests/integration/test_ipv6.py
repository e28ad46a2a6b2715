"""IPv6 on lab links: every interface has the IPv6 twin of its IPv4 address, routes through routers have theirs,
impairments act on IPv6 as on IPv4 (netem, or the fallback's ip6tables rules), the self-check probes either
family, workloads send over either; `ipv6: false` leaves IPv6 off."""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys

import pytest

from .conftest import run_spec

pytestmark = pytest.mark.integration
PROTOLAB = [sys.executable, "-m", "protolab.cli"]
TOPOLOGY = """
name: v6sites
nodes: {h1: {}, h2: {}, r1: {kind: router}, h3: {}}
segments:
  - {name: lan, kind: switch, members: [h1, h2, r1], capacity: 100Mbit}
links:
  - {endpoints: [r1, h3], rate: 10Mbit, impairments: {forward: {delay: 20ms}}}
"""


def protolab(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*PROTOLAB, *args], capture_output=True, text=True, timeout=timeout)


def _ping(node: str, address: str, count: int = 5, interval: str = "0.2") -> tuple[float, float]:
    """(loss ratio, mean RTT in ms) of `ping` from a node of the deployed lab."""
    out = protolab("exec", node, "--", "ping", "-c", str(count), "-i", interval, "-q", "-W", "1", address).stdout
    loss = re.search(r"([\d.]+)% packet loss", out)
    rtt = re.search(r"= [\d.]+/([\d.]+)/", out)
    assert loss, out
    return float(loss.group(1)) / 100, float(rtt.group(1)) if rtt else float("nan")


def test_a_lab_has_ipv6_twins_routes_impairments_and_a_v6_self_check(tmp_path, no_leftovers):
    path = tmp_path / "v6sites.yaml"
    path.write_text(TOPOLOGY)
    up = protolab("deploy", str(path))
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        st = json.loads(protolab("inspect", "--format", "json").stdout)
        ends = {e["node"]: e for row in st["links"] for e in row["ends"] if e["address"]}
        assert ends["h3"]["address"] == "10.0.2.2/24" and ends["h3"]["address6"] == "fd00:10:0:2::2/80"
        h1 = next(n for n in st["nodes"] if n["name"] == "h1")
        assert ["fd00:10:0:2::/80", "fd00:10:0:1::3"] in h1["routes6"], h1
        addrs = protolab("exec", "h3", "--", "ip", "-6", "-br", "addr", "show", "scope", "global").stdout
        assert "fd00:10:0:2::2/80" in addrs, addrs
        # before any traffic, the router already knows h3 on both families (resolved before the impairments)
        for family, addr in (("-4", "10.0.2.2"), ("-6", "fd00:10:0:2::2")):
            neigh = protolab("exec", "r1", "--", "ip", family, "neigh", "show", addr).stdout
            assert "lladdr" in neigh, (family, neigh)

        # across the router over IPv6, with the file's 20 ms on r1 -> h3
        loss, rtt = _ping("h1", "fd00:10:0:2::2")
        assert loss == 0 and 19.5 < rtt < 30, (loss, rtt)

        # a loss set on the running lab drops IPv6 as it drops IPv4 (fallback: ip6tables beside iptables)
        s = protolab("impair", "set", "r1-h3", "--direction", "forward", "--delay", "20ms", "--loss", "30%")
        assert s.returncode == 0, s.stdout + s.stderr
        loss6, _ = _ping("h1", "fd00:10:0:2::2", count=200, interval="0.01")
        loss4, _ = _ping("h1", "10.0.2.2", count=200, interval="0.01")
        assert 0.18 < loss6 < 0.42 and 0.18 < loss4 < 0.42, (loss6, loss4)  # 30 % +- 3.7 sd of 200 draws

        chk = protolab("check", "--family", "ipv6")
        assert chk.returncode == 0, chk.stdout + chk.stderr
        assert "fd00:10:0:2::2" in json.dumps(json.loads(protolab("inspect", "--format", "json").stdout)["checks"])
        assert "r1->h3" in chk.stdout and "ok" in chk.stdout, chk.stdout
    finally:
        down = protolab("destroy")
    assert down.returncode == 0, down.stdout + down.stderr


def test_ipv6_false_leaves_ipv6_off(tmp_path, no_leftovers):
    path = tmp_path / "v4only.yaml"
    path.write_text(TOPOLOGY.replace("name: v6sites", "name: v4only\nipv6: false"))
    up = protolab("deploy", str(path))
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        st = json.loads(protolab("inspect", "--format", "json").stdout)
        assert not st["topology"]["ipv6"] and not any(e["address6"] for row in st["links"] for e in row["ends"])
        v6 = protolab("exec", "h1", "--", "cat", "/proc/sys/net/ipv6/conf/h1-eth0/disable_ipv6").stdout.strip()
        assert v6 == "1"
        assert _ping("h1", "10.0.2.2")[0] == 0
    finally:
        assert protolab("destroy").returncode == 0


def test_workloads_run_over_ipv6_through_the_runner(tmp_path, no_leftovers):
    run, _summary = run_spec("ipv6", tmp_path)
    sent_to = json.loads((run / "raw" / "tasks" / "p000-r0-echo-p6.json").read_text())
    assert "fd00:10:0:2::2" in json.dumps(sent_to), "the ping went to h2's IPv6 twin"
    rows = list(csv.DictReader((run / "tidy.csv").open()))
    assert rows and float(rows[0]["t6_sent_total"]) > 2000
