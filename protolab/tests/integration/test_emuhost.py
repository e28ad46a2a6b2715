"""Two testbed hosts emulated on one machine (issue 18, item 5): network namespaces with a Docker engine each
(protolab.testbed.emulation), joined by an underlay bridge. Placement puts the triangle's hub LAN on one and r2 on
the other;
r1 and r2 run as containers on their own host's engine, and the stitched r1-r2 link (protolab.lab.stitch) carries a
TCP flow between them. Then the run's ledger removes engines, containers, namespaces and links, and nothing is
left. The containers' image is this machine's iperf3 and sleep with their libraries (a few MB, imported in a
second) rather than the 200 MB node image, which emulation.load_image would copy in several seconds per engine."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from protolab import ownership, topofile
from protolab.lab import stitch
from protolab.shell import run
from protolab.testbed import emulation, placement

pytestmark = pytest.mark.integration


TINY = "plabemu/iperf3:test"


def _tiny_image(h: emulation.EmulatedHost, root: Path) -> None:
    """iperf3 and sleep from this machine, with the shared libraries they load, as an image on h's engine."""
    if not root.exists():
        for b in ("/usr/bin/iperf3", "/bin/sleep"):
            libs = re.findall(r"(/\S+) \(0x", run(["ldd", b]))
            for f in [b, *libs]:
                dst = root / f.lstrip("/")
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(os.path.realpath(f), dst)
        (root / "tmp").mkdir(mode=0o1777)  # iperf3 keeps its buffer in a temporary file
    tar = subprocess.Popen(["tar", "-C", str(root), "-c", "."], stdout=subprocess.PIPE)
    subprocess.run(["docker", "-H", h.engine, "import", "-", TINY], stdin=tar.stdout, check=True, capture_output=True)
    assert tar.wait() == 0


def _pid(h: emulation.EmulatedHost, name: str) -> int:
    return int(h.docker("inspect", "-f", "{{.State.Pid}}", name).strip())


def test_a_stitched_link_between_containers_of_two_engines(tmp_path: Path, no_leftovers):
    ledger = ownership.Ledger(f"itest-emu-{os.getpid()}")
    try:
        hosts = emulation.start(["host_a", "host_b"], ledger)
        inv = placement.load_inventory(emulation.write_inventory(hosts, tmp_path / "inv.yml", cpus=4))
        t = topofile.load(topofile.find("triangle"))
        p = placement.place(t, inv)
        parts = placement.split(t, p, inv)
        by_name = {h.name: h for h in hosts}
        ends = {}
        for node in ("r1", "r2"):
            h = by_name[p.node_host[node]]
            _tiny_image(h, tmp_path / "rootfs")
            # the engine's own container, no network of Docker's: the link is made by protolab, as Mininet does
            h.docker("run", "-d", "--name", f"plab-{node}", "--network", "none", TINY, "/bin/sleep", "600")
            part = parts[h.name]
            x = next(s for s in part.switches if s.vxlan)
            half = next(lk for lk in part.links if x.name in (lk.node1, lk.node2))
            ns = ["nsenter", f"--net=/run/netns/{h.ns}"]
            run([*ns, "ip", "link", "add", x.name, "type", "bridge"])
            run([*ns, "ip", "link", "set", x.name, "up"])
            pid = _pid(h, f"plab-{node}")
            run([*ns, "ip", "link", "add", f"p-{node}", "type", "veth", "peer", "name", f"{node}-eth0", "netns",
                 str(pid)])  # fmt: skip
            run([*ns, "ip", "link", "set", f"p-{node}", "master", x.name, "up"])
            stitch.attach(x.name, x.vxlan, ns=h.ns)
            stitch.set_mtu([f"p-{node}"], x.vxlan.mtu, ns=h.ns)
            inside = ["nsenter", "-t", str(pid), "-n"]
            run([*inside, "ip", "link", "set", f"{node}-eth0", "mtu", str(x.vxlan.mtu)])
            run([*inside, "ip", "addr", "add", half.ip1, "dev", f"{node}-eth0"])
            run([*inside, "ip", "link", "set", f"{node}-eth0", "up"])
            ends[node] = (h, half.ip1.split("/")[0])
        (ha, _), (hb, r2_ip) = ends["r1"], ends["r2"]
        assert ha.name != hb.name, p.node_host
        hb.docker("exec", "-d", "plab-r2", "/usr/bin/iperf3", "-s", "-1")
        time.sleep(0.5)
        out = subprocess.run(["docker", "-H", ha.engine, "exec", "plab-r1", "/usr/bin/iperf3", "-c", r2_ip, "-t", "2",
                              "-b", "50M", "-J"],
                             capture_output=True, text=True, timeout=60)  # fmt: skip
        assert out.returncode == 0, out.stdout[-2000:] + out.stderr
        bps = json.loads(out.stdout)["end"]["sum_received"]["bits_per_second"]
        print(f"\nr1 ({ha.name}) -> r2 ({hb.name}) over the VXLAN stitch: {bps / 1e6:.0f} Mbit/s")
        assert 40e6 < bps < 55e6, bps  # a TCP flow at its 50 Mbit/s crossed engines, namespaces and the tunnel
    finally:
        failures = ledger.sweep()
        assert failures == [], failures
    assert ledger.left() == []
    assert not [n for n in run(["ip", "netns", "list"]).split() if n.startswith(emulation.PREFIX)]


def test_an_emulated_host_reached_over_ssh_as_a_remote_one_is(tmp_path: Path, no_leftovers):
    """With an sshd on its underlay address, an emulated host stands for a remote one: the inventory names it by
    address, login, key and host key (no namespace), and protolab.testbed.reach reaches it over one kept-open SSH
    session, through this machine's control link into the underlay. Its commands run in its own namespace, its
    sessions' docker talks to its own engine, and the clock probe works through the session."""
    from protolab.lab import parts
    from protolab.testbed import reach

    ledger = ownership.Ledger(f"itest-emussh-{os.getpid()}")
    try:
        hosts = emulation.start(["ssh_a", "ssh_b"], ledger, ssh=True)
        inv = placement.load_inventory(emulation.write_inventory(hosts, tmp_path / "inv.yml"))
        for h, eh in zip(inv.hosts, hosts, strict=True):
            assert h.netns is None and h.address == eh.underlay and h.known_hosts, h
            out = subprocess.run(reach.command(h, ["stat", "-L", "-c", "%i", "/proc/self/ns/net"]),
                                 capture_output=True, text=True, timeout=60)  # fmt: skip
            assert out.returncode == 0 and int(out.stdout) == os.stat(f"/run/netns/{eh.ns}").st_ino, out.stderr
            assert reach.control_path(h).exists(), "the session stays open for the next command"
            out = subprocess.run(reach.command(h, ["docker", "info", "--format", "{{.DockerRootDir}}"]),
                                 capture_output=True, text=True, timeout=60)  # fmt: skip
            assert out.stdout.strip() == str(eh.data_root), out.stdout + out.stderr
        lab = parts.MultiLab(placement.Placement(inv.source, {}, []))
        lab.parts = {h.name: parts.Part(h, None, tmp_path / h.name) for h in inv.hosts}  # type: ignore[arg-type]
        parts.measure_clocks(lab, inv)
        print(f"\nclocks over SSH: {lab.clocks}")
        for c in lab.clocks.values():  # one kernel's clock: the estimate within its own bound
            assert abs(c["offset_seconds"]) <= c["uncertainty_seconds"] < 0.5, c
        for h in inv.hosts:
            reach.close(h)
            assert not reach.control_path(h).exists()
    finally:
        failures = ledger.sweep()
    assert failures == [] and ledger.left() == []
