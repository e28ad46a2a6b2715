"""Node containers run with least privilege: every capability dropped but NET_ADMIN and NET_RAW, no new
privileges, a pids and a memory limit (a spec may raise them), as the engine reports and as the kernel enforces
inside; the lab still works (addresses, routes and qdiscs made, pings answered)."""

from __future__ import annotations

import pytest

from protolab import spec, topo
from protolab.lab import Lab
from protolab.lab import local as labmod

pytestmark = pytest.mark.integration
IMAGE = "protolab/node:latest"
NET_ADMIN, NET_RAW = 12, 13  # capability bits (linux/capability.h)


def test_nodes_get_only_what_they_need_and_a_spec_raises_the_limits(no_leftovers):
    t = topo.build("switched", {"hosts": 2, "rate": "10Mbit"})
    nodes = {"default": spec.NodeSpec(), "h2": spec.NodeSpec(memory="2048MiB", pids=4096)}
    with Lab(t, "itest", {h.name: IMAGE for h in t.hosts}, limits=spec.node_limits(t, nodes)) as lab:
        for name, memory, pids in (("h1", labmod.MEMORY_LIMIT, labmod.PIDS_LIMIT), ("h2", 2048 * 2**20, 4096)):
            c = lab.nodes[name].container
            c.reload()
            hc = c.attrs["HostConfig"]
            assert hc["CapDrop"] == ["ALL"] and sorted(hc["CapAdd"]) == sorted(labmod.CAPABILITIES), hc
            assert "no-new-privileges" in hc["SecurityOpt"], hc["SecurityOpt"]
            assert (hc["PidsLimit"], hc["Memory"]) == (pids, memory), name
            assert lab.containers[name] == labmod.granted(hc)  # what the manifest records
            # the kernel's view inside: the agent (PID 1's child) holds exactly the two, and no new privileges
            _, status, _ = lab.exec(name, ["cat", "/proc/1/status"])
            fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
            assert int(fields["CapEff"], 16) == (1 << NET_ADMIN) | (1 << NET_RAW), fields["CapEff"]
            assert int(fields["CapBnd"], 16) == (1 << NET_ADMIN) | (1 << NET_RAW), fields["CapBnd"]
            assert fields["NoNewPrivs"].strip() == "1"
        # what was dropped is refused (CHOWN, MKNOD), what is kept works (NET_ADMIN: a qdisc; NET_RAW: ping)
        code, _, err = lab.exec("h1", ["chown", "65534", "/tmp"])
        assert code != 0 and "Operation not permitted" in err, err
        code, _, err = lab.exec("h1", ["mknod", "/tmp/null2", "c", "1", "3"])
        assert code != 0 and "Operation not permitted" in err, err
        kept = (
            ["ip", "address", "add", "192.0.2.9/32", "dev", "lo"],
            ["tc", "qdisc", "add", "dev", "lo", "root", "pfifo"],
            ["tc", "qdisc", "del", "dev", "lo", "root"],
        )
        for cmd in kept:
            code, _, err = lab.exec("h1", cmd)
            assert code == 0, (cmd, err)
        code, out, err = lab.exec("h1", ["ping", "-c", "2", "-i", "0.2", "-W", "1", "10.0.1.2"])
        assert code == 0 and " 0% packet loss" in out, out + err
