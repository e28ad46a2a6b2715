"""The NIC receive-filter model on a real hub (issue 21, item 2): a frame a host's NIC would have dropped in
hardware never reaches its namespace (its receive counter does not move), yet it crossed the shared medium (the
bystander with a promiscuous NIC sees it). Groups are joined at the link layer (`ip maddr add`), exactly what a
driver programs into its NIC when a socket joins a group."""

from __future__ import annotations

import time
import zlib

import pytest

from protolab.lab import Lab
from protolab.spec import TopologySpec

pytestmark = pytest.mark.integration
IMAGE = "protolab/node:latest"
JOINED = "01:00:5e:00:00:fb"  # 224.0.0.251: hash bin 33 (agents/nicfilter)
SAME_BIN = "239.255.0.1"  # 01:00:5e:7f:00:01: bin 33 as well
N = 200


def _bin(mac: str) -> int:
    """A group's bin in a 64-bin hash filter (agents/nicfilter Bin: the top 6 bits of the Ethernet CRC)."""
    return (~zlib.crc32(bytes.fromhex(mac.replace(":", ""))) & 0xFFFFFFFF) >> 26


def _other_bin(joined: list[str]) -> str:
    """A group in 239.255.0.0/24 whose bin no joined group has. A host also joins groups of its own addresses (the
    IPv6 solicited-node group of its link-local address comes from its random MAC), so a fixed choice would share
    a bin with one of them in about 1 deploy in 64."""
    taken = {_bin(m) for m in joined}
    for k in range(2, 256):
        if _bin(f"01:00:5e:7f:00:{k:02x}") not in taken:
            return f"239.255.0.{k}"
    raise AssertionError(f"every group of 239.255.0.0/24 shares a bin with {joined}")


def _lab() -> Lab:
    # h1 sends; h2 hash64 (the thesis's hosts), h3 perfect (today's), h4 promiscuous (sees the medium)
    topology = {
        "nodes": {"h1": {}, "h2": {"nic_filter": "hash64"}, "h3": {}, "h4": {"nic_filter": "promiscuous"},
                  "hb": {"kind": "hub", "capacity": "10Mbit"}},
        "links": [{"endpoints": [h, "hb"]} for h in ("h1", "h2", "h3", "h4")],
    }  # fmt: skip
    t = TopologySpec(**topology).build()
    return Lab(t, "nicfilter", {h.name: IMAGE for h in t.hosts})


def _rx(lab: Lab, node: str) -> int:
    return int(lab.exec(node, ["cat", f"/sys/class/net/{node}-eth0/statistics/rx_packets"])[1])


def _send(lab: Lab, dest: str) -> dict[str, int]:
    """N datagrams from h1 to `dest`; each receiver's rx_packets increase."""
    before = {n: _rx(lab, n) for n in ("h2", "h3", "h4")}
    code, out, err = lab.exec(
        "h1", ["protolab-dishost", "send", "--dest", dest, "--rate", str(N * 2), "--duration", "0.5s", "--size", "64"]
    )
    assert code == 0, out + err
    time.sleep(0.3)
    return {n: _rx(lab, n) - before[n] for n in before}


def test_nic_filters_drop_what_the_hardware_would_and_the_medium_still_carries_it(no_leftovers):
    with _lab() as lab:
        assert lab.nic_filters == {"h1:h1-eth0": "perfect", "h2:h2-eth0": "hash64", "h3:h3-eth0": "perfect",
                                   "h4:h4-eth0": "promiscuous"}  # fmt: skip
        for n in ("h2", "h3"):
            code, out, err = lab.exec(n, ["ip", "maddr", "add", JOINED, "dev", f"{n}-eth0"])
            assert code == 0, out + err
        # no waiting for the model's 100 ms poll: the sync programs the joins at once, as a driver would
        joined = lab.sync_nic_filters()
        assert JOINED in joined["h2:h2-eth0"] and JOINED in joined["h3:h3-eth0"], joined
        assert JOINED not in joined["h1:h1-eth0"], joined
        other_bin = _other_bin(joined["h2:h2-eth0"])
        c0 = lab.nic_filter_counters()
        assert lab.exec("h1", ["ping", "-c", "1", "-W", "1", lab.ip("h4")])[0] == 0  # ARP resolved first
        same, other, unicast = _send(lab, SAME_BIN), _send(lab, other_bin), _send(lab, lab.ip("h4"))
        c1 = lab.nic_filter_counters()
    print(f"\nh2 joined {joined['h2:h2-eth0']}; another bin: {other_bin}")
    print(f"rx increases: same bin {same}, other bin {other}, unicast to h4 {unicast}; filters {c0} -> {c1}")
    sent = N  # 0.5 s at 2N/s
    # the bystander's promiscuous NIC: every frame crossed the medium
    for got in (same, other):
        assert got["h4"] >= 0.95 * sent, (same, other)
    # hash64 passes a group sharing a joined group's bin (the kernel filters it then); perfect does not
    assert same["h2"] >= 0.95 * sent and same["h3"] < 0.05 * sent, same
    # a bin nobody joined: dropped by both, at the port
    assert other["h2"] < 0.05 * sent and other["h3"] < 0.05 * sent, other
    dropped = {k: c1[k]["dropped_multicast"] - c0[k]["dropped_multicast"] for k in ("h2:h2-eth0", "h3:h3-eth0")}
    assert dropped["h2:h2-eth0"] >= 0.95 * sent and dropped["h3:h3-eth0"] >= 1.9 * sent, dropped
    # unicast to h4: the hub floods it to every port; the NICs of h2 and h3 drop it, h4 takes it
    assert unicast["h4"] >= 0.95 * sent and unicast["h2"] < 0.05 * sent and unicast["h3"] < 0.05 * sent, unicast
    for k in ("h2:h2-eth0", "h3:h3-eth0"):
        assert c1[k]["dropped_unicast"] - c0[k]["dropped_unicast"] >= 0.95 * sent, (k, c0, c1)
