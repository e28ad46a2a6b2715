"""A lab over two testbed hosts emulated on one machine (issue 18, item 5): the shipped triangle placed with its
hub LAN (h1, h2, r1) on one host and r2, h3 on the other, each part deployed by a lab keeper of its own on its
host's Docker engine (protolab.multilab), the r1-r2 link stitched by VXLAN. h1 reaches h3 through r1, the tunnel
and r2 with the routes computed for the whole topology; destroying the lab and sweeping the emulated hosts
leaves nothing on the machine."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from protolab import emuhost, images, multilab, ownership, placement, topofile

pytestmark = pytest.mark.integration


def test_the_triangle_over_two_emulated_hosts(tmp_path: Path, no_leftovers):
    ledger = ownership.Ledger(f"itest-multilab-{os.getpid()}")
    lab = None
    try:
        hosts = emuhost.start(["host_a", "host_b"], ledger)
        emuhost.load_image(hosts, images.NAMES["node"])
        inv = placement.load_inventory(emuhost.write_inventory(hosts, tmp_path / "inv.yml", cpus=4))
        t = topofile.load(topofile.find("triangle"))
        lab = multilab.deploy(t, inv)
        where = lab.placement.node_host
        assert where["h1"] == where["r1"] == "host_a" and where["h3"] == where["r2"] == "host_b", where
        h3 = next(lk.ip2 for lk in t.links if {lk.node1, lk.node2} == {"r2", "h3"}).split("/")[0]
        code, out, err = lab.exec("h1", ["ping", "-c", "5", "-i", "0.2", "-W", "2", h3])
        assert code == 0 and " 0% packet loss" in out, out + err
        # across the stitch r1-r2 and its 1544 kbit/s, 135 ms each way (the triangle's WAN link)
        rtts = [float(x) for x in re.findall(r"time=([\d.]+) ms", out)]
        print(f"\nh1 (host_a) -> h3 (host_b) through the stitched r1-r2: RTT {rtts} ms")
        assert min(rtts) > 260, rtts
        st = lab.state()
        assert st["placement"]["stitches"][0]["link"] == ["r1", "r2"]
        # measured at deploy: the stitch's underlay path, and each host's clock against this machine's (the same
        # clock here, so the ping-pong's estimate must fall within its own bound: t1 <= t_host <= t4)
        (u,) = st["underlay"]
        print(f"underlay {u}\nclocks {st['clocks']}")
        assert (u["from"], u["to"], u["received"]) == ("host_a", "host_b", u["sent"]), u
        assert 0 < u["rtt_min_seconds"] <= u["rtt_mean_seconds"] < 0.01 and u["rtt_sd_seconds"] >= 0, u
        assert set(st["clocks"]) == {"host_a", "host_b"}
        for c in st["clocks"].values():
            assert abs(c["offset_seconds"]) <= c["uncertainty_seconds"] < 0.5, c
        assert {n for s in st["hosts"].values() for n in (x["name"] for x in s["nodes"])} == {"h1", "h2", "h3", "r1",
                                                                                              "r2"}  # fmt: skip
    finally:
        failures = lab.destroy() if lab is not None else []
        failures += ledger.sweep()
        assert failures == [], failures
    assert ledger.left() == []
