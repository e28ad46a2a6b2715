"""A link stitched between two testbed hosts (issue 18), proved on one machine: two network namespaces stand for
the hosts, joined by a veth underlay; placement puts the shipped triangle's hub LAN on one and r2 on the other,
split gives each its stitch bridge and VXLAN end for r1-r2, and protolab.lab.stitch builds them; r1 and r2 are
namespaces linked to their host's stitch bridge with the addresses the topology gave them.

What it shows: the frames cross the real kernel VXLAN, the MTU is the underlay's less 50 (a larger datagram with
DF is refused at the sender, "message too long", never lost in the tunnel), the stitch adds a measurable but
small delay over the same path without it, and everything goes with the namespaces."""

from __future__ import annotations

import re
import statistics
from pathlib import Path

import pytest
import yaml

from protolab import topofile
from protolab.lab import stitch
from protolab.shell import run
from protolab.testbed import placement

pytestmark = pytest.mark.integration
NS = {"a": "plabt-host-a", "b": "plabt-host-b", "r1": "plabt-r1", "r2": "plabt-r2"}
UNDERLAY = {"a": "10.255.99.1", "b": "10.255.99.2"}


def _ns(ns: str, *cmd: str) -> str:
    return run(["ip", "netns", "exec", ns, *cmd])


@pytest.fixture
def two_hosts(tmp_path: Path):
    inv = tmp_path / "two.yml"
    inv.write_text(yaml.safe_dump({"testbed": {"hosts": {
        "host_a": {"protolab_underlay": UNDERLAY["a"], "protolab_cpus": 4},
        "host_b": {"protolab_underlay": UNDERLAY["b"], "protolab_cpus": 4}}}}))  # fmt: skip
    for ns in NS.values():
        run(["ip", "netns", "add", ns])
        _ns(ns, "ip", "link", "set", "lo", "up")
    try:
        run(["ip", "link", "add", "plabt-ua", "netns", NS["a"], "type", "veth", "peer", "name", "plabt-ub", "netns",
             NS["b"]])  # fmt: skip
        for h, dev in (("a", "plabt-ua"), ("b", "plabt-ub")):
            _ns(NS[h], "ip", "addr", "add", f"{UNDERLAY[h]}/30", "dev", dev)
            _ns(NS[h], "ip", "link", "set", dev, "up")
        yield placement.load_inventory(inv)
    finally:
        for ns in NS.values():
            run(["ip", "netns", "del", ns], check=False)


def _rtts(src: str, dst: str, count: int = 20) -> list[float]:
    out = _ns(NS[src], "ping", "-c", str(count), "-i", "0.01", "-W", "1", dst)
    return [float(x) for x in re.findall(r"time=([\d.]+) ms", out)]


def test_a_stitched_link_carries_frames_up_to_its_mtu(two_hosts):
    inv = two_hosts
    t = topofile.load(topofile.find("triangle"))
    p = placement.place(t, inv)
    assert p.node_host["r1"] == "host_a" and p.node_host["r2"] == "host_b"
    parts = placement.split(t, p, inv)
    ends = {h: next(s for s in parts[h].switches if s.vxlan) for h in ("host_a", "host_b")}
    halves = {h: next(lk for lk in parts[h].links if ends[h].name in (lk.node1, lk.node2)) for h in ends}
    for h, key, node in (("host_a", "a", "r1"), ("host_b", "b", "r2")):
        br, end, half = ends[h].name, ends[h].vxlan, halves[h]
        _ns(NS[key], "ip", "link", "add", br, "type", "bridge")
        _ns(NS[key], "ip", "link", "set", br, "up")
        port, intf = f"plabt-p{key}", f"plabt-{node}"
        _ns(NS[key], "ip", "link", "add", port, "type", "veth", "peer", "name", intf, "netns", NS[node])
        _ns(NS[key], "ip", "link", "set", port, "master", br, "up")
        stitch.attach(br, end, ns=NS[key])
        stitch.set_mtu([port], end.mtu, ns=NS[key])
        stitch.set_mtu([intf], end.mtu, ns=NS[node])
        _ns(NS[node], "ip", "addr", "add", half.ip1, "dev", intf)
        _ns(NS[node], "ip", "link", "set", intf, "up")
    r2 = halves["host_b"].ip1.split("/")[0]
    assert ends["host_a"].vxlan.mtu == 1450
    details = _ns(NS["a"], "ip", "-d", "link", "show", stitch.vxlan_name(ends["host_a"].vxlan.vni))
    assert "vxlan id 4200" in details and f"remote {UNDERLAY['b']}" in details and "mtu 1450" in details
    stitched = _rtts("r1", r2)
    assert len(stitched) >= 18, stitched  # the path works (the first may wait for ARP)
    # the largest datagram with DF set: 1450 - 28 octets of IP and ICMP headers; one more is refused at r1
    _ns(NS["r1"], "ping", "-c", "1", "-W", "1", "-M", "do", "-s", "1422", r2)
    with pytest.raises(Exception, match="(?i)message too long|mtu"):
        _ns(NS["r1"], "ping", "-c", "1", "-W", "1", "-M", "do", "-s", "1423", r2)
    # what the stitch adds: the same two namespaces joined by a plain veth instead
    _ns(NS["r1"], "ip", "link", "add", "plabt-d1", "type", "veth", "peer", "name", "plabt-d2", "netns", NS["r2"])
    _ns(NS["r1"], "ip", "addr", "add", "10.254.0.1/30", "dev", "plabt-d1")
    _ns(NS["r2"], "ip", "addr", "add", "10.254.0.2/30", "dev", "plabt-d2")
    _ns(NS["r1"], "ip", "link", "set", "plabt-d1", "up")
    _ns(NS["r2"], "ip", "link", "set", "plabt-d2", "up")
    direct = _rtts("r1", "10.254.0.2")
    added = statistics.median(stitched) - statistics.median(direct)
    sd = f"sd {statistics.stdev(stitched):.3f} vs {statistics.stdev(direct):.3f} ms"
    print(f"\nstitch: median RTT {statistics.median(stitched):.3f} ms over VXLAN, {statistics.median(direct):.3f} ms "
          f"direct ({added * 1000:.0f} us added), {sd}")  # fmt: skip
    assert 0 < statistics.median(stitched) < 5 and added < 2, (stitched, direct)
