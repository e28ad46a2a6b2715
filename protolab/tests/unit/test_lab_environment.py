"""What a lab records about its interfaces for the manifest (SPIMS sec. 5): offloads read back with ethtool in
each interface's namespace (a captured `ethtool -k` at the command boundary)."""

from __future__ import annotations

from pathlib import Path

import pytest

from protolab import lab as labmod
from protolab.impair import Endpoint
from protolab.lab import Lab, parse_offloads
from protolab.shell import CommandError

FIXTURES = Path(__file__).parent / "fixtures" / "lab"
ETHTOOL_K = (FIXTURES / "ethtool-k-eth0.txt").read_text()  # `ethtool -k eth0` on the development VM


def test_offloads_as_ethtool_prints_them():
    assert parse_offloads(ETHTOOL_K) == {"tso": "on", "gso": "on", "gro": "on", "lro": "off [fixed]"}


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
