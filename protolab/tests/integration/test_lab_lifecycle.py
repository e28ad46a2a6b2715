"""A lab a user works in, through the CLI as a user types it: deploy a topology file, exec across routers,
impair a link while it is up and measure it, inspect, graph, capture, destroy; nothing is left behind."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from protolab.lab import keeper

TOPOLOGY = """
name: twosites
nodes:
  h1: {}
  h2: {}
  r1: {kind: router}
  h3: {cpus: 0.5}
segments:
  - {name: lan, kind: switch, members: [h1, h2, r1], capacity: 100Mbit}
links:
  - {endpoints: [r1, h3], rate: 10Mbit, impairments: {forward: {delay: 20ms}}}
"""


def protolab(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "protolab.cli", *args], capture_output=True, text=True,
                          timeout=timeout)  # fmt: skip


def _rtt_ms(out: str) -> float:
    m = re.search(r"= [\d.]+/([\d.]+)/", out)
    assert m, out
    return float(m.group(1))


@pytest.fixture
def topology_file(tmp_path: Path) -> Path:
    p = tmp_path / "twosites.yaml"
    p.write_text(textwrap.dedent(TOPOLOGY))
    return p


def test_deploy_exec_impair_check_inspect_graph_capture_destroy(topology_file, tmp_path, no_leftovers):
    up = protolab("deploy", str(topology_file))
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        assert "h3" in up.stdout and "10.0.2.2/24" in up.stdout  # the inspect text printed at the end
        st = json.loads(protolab("inspect", "--format", "json").stdout)
        assert {n["name"] for n in st["nodes"]} == {"h1", "h2", "r1", "h3"}
        assert next(n for n in st["nodes"] if n["name"] == "h3")["cpus"] == 0.5
        assert {(i["from"], i["to"]) for i in st["impairments"] if "delay" in i["impairment"]} == {("r1", "h3")}

        # across the router, with the file's 20 ms on r1 -> h3: an RTT of ~20 ms
        ping = protolab("exec", "h1", "--", "ping", "-c", "5", "-i", "0.2", "-q", "10.0.2.2")
        assert ping.returncode == 0, ping.stdout + ping.stderr
        assert 19.5 < _rtt_ms(ping.stdout) < 30, ping.stdout

        every = protolab("exec", "--all", "--", "hostname")
        assert every.returncode == 0 and {ln.split(": ")[0] for ln in every.stdout.splitlines()} == {
            "h1", "h2", "r1", "h3"}  # fmt: skip

        # a running lab's impairment changed: 50 ms more the other way, measured by exec and by the self-check
        s = protolab("impair", "set", "r1-h3", "--direction", "reverse", "--delay", "50ms")
        assert s.returncode == 0 and "h3->r1" in s.stdout, s.stdout + s.stderr
        ping = protolab("exec", "h1", "--", "ping", "-c", "5", "-i", "0.2", "-q", "10.0.2.2")
        assert 69.5 < _rtt_ms(ping.stdout) < 85, ping.stdout
        chk = protolab("check")
        assert chk.returncode == 0, chk.stdout + chk.stderr
        assert "r1->h3" in chk.stdout and "h3->r1" in chk.stdout, chk.stdout
        st = json.loads(protolab("inspect", "--format", "json").stdout)
        assert st["checks"] and all(c["passed"] for c in st["checks"]) and st["events"][0]["link"] == ["r1", "h3"]
        c = protolab("impair", "clear", "r1-h3")
        assert c.returncode == 0, c.stderr
        ping = protolab("exec", "h1", "--", "ping", "-c", "5", "-i", "0.2", "-q", "10.0.2.2")
        assert _rtt_ms(ping.stdout) < 5, ping.stdout

        svg = tmp_path / "lab.svg"
        g = protolab("graph", "--format", "svg", "-o", str(svg))
        assert g.returncode == 0 and all(n in svg.read_text() for n in ("h1", "r1", "h3")), g.stderr

        pcap = tmp_path / "r1h3.pcap"
        cap = subprocess.Popen([sys.executable, "-m", "protolab.cli", "capture", "r1-h3", "-w", str(pcap), "--count",
                                "4", "--filter", "icmp"], stderr=subprocess.PIPE, text=True)  # fmt: skip
        import time

        time.sleep(1.5)
        protolab("exec", "h1", "--", "ping", "-c", "3", "-i", "0.2", "-q", "10.0.2.2")
        assert cap.wait(timeout=30) == 0, cap.stderr.read() if cap.stderr else ""
        out = subprocess.run(["tcpdump", "-n", "-r", str(pcap)], capture_output=True, text=True).stdout
        assert out.count("ICMP echo") == 4, out

        # a second deploy while one is up is refused, naming it
        again = protolab("deploy", str(topology_file))
        assert again.returncode != 0 and "deployed already" in again.stderr
    finally:
        down = protolab("destroy")
    assert down.returncode == 0, down.stdout + down.stderr
    assert keeper.load_state() is None
    gone = protolab("exec", "h1", "--", "true")
    assert gone.returncode != 0 and "no lab is deployed" in gone.stderr


def test_bad_input_is_refused_before_anything_is_made(tmp_path, no_leftovers):
    bad = tmp_path / "bad.yaml"
    bad.write_text("nodes: {h1: {}, h2: {}}\nlinks: [{endpoints: [h1, h9]}]\n")
    r = protolab("deploy", str(bad))
    assert r.returncode == 2 and "links.0.endpoints: no node 'h9'" in r.stderr, r.stderr
    r = protolab("deploy", "triangle", "--node-filter", "q*")
    assert r.returncode == 2 and "matches no node of triangle" in r.stderr, r.stderr
    r = protolab("impair", "set", "h1-h2", "--delay", "1ms")
    assert r.returncode != 0 and "no lab is deployed" in r.stderr, r.stderr
