"""What a run records about its environment for the manifest (SPIMS sec. 5): the lab interfaces' offloads read
back with ethtool and their counters, each in the interface's namespace (captured `ethtool -k` and /proc/net/dev
at the command boundary), and the host's load over the run from two dynamic() readings."""

from __future__ import annotations

from pathlib import Path

import pytest

from protolab import environment
from protolab.lab import Lab, parse_offloads
from protolab.lab import local as labmod
from protolab.lab.impair import Endpoint
from protolab.shell import CommandError

FIXTURES = Path(__file__).parent / "fixtures" / "lab"
ETHTOOL_K = (FIXTURES / "ethtool-k-eth0.txt").read_text()  # `ethtool -k eth0` on the development VM
NET_DEV = (FIXTURES / "proc-net-dev.txt").read_text()  # its /proc/net/dev


def test_offloads_as_ethtool_prints_them():
    assert parse_offloads(ETHTOOL_K) == {
        "tso": "on",
        "gso": "on",
        "gro": "on",
        "lro": "off [fixed]",
        "tx-udp-segmentation": "off [fixed]",
    }


def test_nothing_listed_is_nothing_claimed():
    assert parse_offloads("Features for x:\nrx-checksumming: on\n") == {}


def _lab() -> Lab:
    lab = object.__new__(Lab)  # no docker client: only the link ends are needed
    lab.link_ends = {("h1", "s1"): (Endpoint("h1-eth0", 4242), Endpoint("br-s1-eth1", None))}
    return lab


def test_every_link_end_is_read_back_in_its_own_namespace(monkeypatch: pytest.MonkeyPatch):
    calls: list[list[str]] = []

    def run(cmd, check=True, timeout=120, input=None):
        calls.append(list(cmd))
        if cmd[-1] == "br-s1-eth1":
            raise CommandError(cmd, 1, "Cannot get device features")
        return ETHTOOL_K

    monkeypatch.setattr(labmod, "run", run)
    got = _lab().offloads()
    assert calls[0] == ["nsenter", "-t", "4242", "-n", "ethtool", "-k", "h1-eth0"]
    assert calls[1] == ["ethtool", "-k", "br-s1-eth1"]  # a bridge port: the root namespace
    assert got["h1:h1-eth0"]["tso"] == "on"
    assert "Cannot get device features" in got["s1:br-s1-eth1"]["error"], "a failed read says why, not 'off'"


def test_counters_are_read_once_per_namespace(monkeypatch: pytest.MonkeyPatch):
    calls: list[list[str]] = []

    def run(cmd, check=True, timeout=120, input=None):
        calls.append(list(cmd))
        return NET_DEV

    monkeypatch.setattr(labmod, "run", run)
    lab = object.__new__(Lab)
    lab.link_ends = {("h1", "s1"): (Endpoint("eth0", 4242), Endpoint("docker0", None)),
                     ("h2", "s1"): (Endpoint("lo", 4343), Endpoint("ifb0", None))}  # fmt: skip
    got = lab.interface_counters()
    assert calls == [["nsenter", "-t", "4242", "-n", "cat", "/proc/net/dev"], ["cat", "/proc/net/dev"],
                     ["nsenter", "-t", "4343", "-n", "cat", "/proc/net/dev"]]  # fmt: skip
    assert got["h1:eth0"] == {"rx_bytes": 759779285, "rx_packets": 23666, "tx_bytes": 1489524, "tx_packets": 15588}
    assert got["s1:docker0"]["tx_bytes"] == 47362270
    assert set(got) == {"h1:eth0", "s1:docker0", "h2:lo", "s1:ifb0"}


def _reading(at: float, busy: float, idle: float, eth0_rx: int, swapped: int = 0) -> dict:
    # guest time is also counted in user
    cpu = {"user": busy, "nice": 0.0, "system": 0.0, "idle": idle, "iowait": 0.0, "softirq": busy / 4, "guest": busy}
    eth0 = {"rx_bytes": eth0_rx, "rx_packets": eth0_rx // 100, "tx_bytes": 0, "tx_packets": 0}
    docker0 = {"rx_bytes": 10**9 - eth0_rx, "rx_packets": 1, "tx_bytes": 0, "tx_packets": 0}
    return {
        "at_unix_seconds": at,
        "cpu_seconds": cpu,
        "swapped_in_bytes": swapped,
        "swapped_out_bytes": 0,
        "interfaces": {"eth0": eth0, "docker0": docker0},
    }


def test_load_over_the_run_from_two_readings():
    # over 10 s: user 4 s, softirq 1 s, idle 16 s (and guest 4 s, which Linux also counts in user)
    out = environment.over_run(_reading(100.0, 0.0, 0.0, 1000), _reading(110.0, 4.0, 16.0, 21000, swapped=4096))
    assert out["seconds"] == 10.0
    assert out["cpu_busy_ratio"] == pytest.approx(5 / 21)  # user 4 + softirq 1 of 21; guest not counted twice
    assert out["cpu_softirq_ratio"] == pytest.approx(1 / 21)
    assert out["interfaces"]["eth0"]["rx_bytes"] == 20000
    assert out["interfaces"]["eth0"]["rx_bytes_per_second"] == 2000.0
    assert "docker0" not in out["interfaces"], "counters that went back (an interface made anew) say nothing"
    assert out["swapped_in_bytes"] == 4096


def test_a_reading_of_this_machine_has_what_over_run_needs():
    a = environment.dynamic()
    out = environment.over_run(a, a | {"at_unix_seconds": a["at_unix_seconds"] + 1})
    assert "lo" in out["interfaces"] and out["interfaces"]["lo"]["rx_bytes"] == 0
    assert out["cpu_busy_ratio"] is None  # no CPU time between two equal readings
