"""A topology is data at deploy: the reported route payload is refused before anything is made, and a topology
with odd but accepted values deploys a working lab; in both, canary folders on this machine stay untouched."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from protolab import topo, topofile
from protolab.errors import LabError
from protolab.lab import Lab

pytestmark = pytest.mark.integration
IMAGE = "protolab/node:latest"
PAYLOAD = "::%x;cd;touch PWNED;#/0"  # as reported: `ip route replace {dst} via {gw}` ran it in a root bash


def _files(*folders: Path) -> set[Path]:
    return {p for d in folders for p in d.rglob("*")}


@pytest.fixture
def canary(tmp_path):
    """Folders a payload would write to (a home, a working folder, a watched one): asserts after the test that no
    file appeared in them, nor a PWNED file in this user's real home."""
    home, cwd, watched = (tmp_path / n for n in ("home", "cwd", "canary"))
    for d in (home, cwd, watched):
        d.mkdir()
    (watched / "keep").write_text("canary\n")
    real = Path.home() / "PWNED"
    had_real = real.exists()
    before = _files(home, cwd, watched)
    yield home, cwd, watched
    assert _files(home, cwd, watched) == before
    assert real.exists() == had_real


def _topology(route_to: str = "192.0.2.0/24") -> dict:
    return {"nodes": {"h1": {"routes": [{"to": route_to, "via": "10.0.1.2"}]}, "r1": {"kind": "router"}, "h2": {}},
            "links": [{"endpoints": ["h1", "r1"], "addresses": ["10.0.1.1/24", "10.0.1.2/24"]},
                      {"endpoints": ["r1", "h2"]}]}  # fmt: skip


def test_the_reported_route_payload_is_refused_at_deploy(canary, no_leftovers, tmp_path):
    home, cwd, _watched = canary
    f = tmp_path / "shared.yaml"
    f.write_text(yaml.safe_dump(_topology(PAYLOAD)))
    tools = tmp_path / "xdg"  # matplotlib's and others' caches, which a fresh HOME would otherwise receive
    env = {**os.environ, "HOME": str(home), "MPLCONFIGDIR": str(tools), "XDG_CACHE_HOME": str(tools),
           "XDG_CONFIG_HOME": str(tools)}  # fmt: skip
    out = subprocess.run([sys.executable, "-m", "protolab.cli", "deploy", str(f)], cwd=cwd, env=env,
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert out.returncode != 0, out.stdout + out.stderr
    assert f"{f}: invalid topology" in out.stderr and "nodes.h1.routes.0.to" in out.stderr, out.stderr
    assert "scope ID" in out.stderr, out.stderr


def test_a_topology_that_skips_the_file_check_is_refused_before_anything_is_made(canary, no_leftovers):
    """A topology made in code or read back from JSON (a lab keeper's part) does not pass through the file's model:
    the lab refuses it by type before it makes a container, a bridge or a rule."""
    _home, _cwd, watched = canary
    t = topofile.resolve(topofile.parse(_topology(), "t.yaml"))
    d = t.to_json()
    d["hosts"][0]["routes"].append((f"::%x;touch {watched}/PWNED;#/0", "10.0.1.2"))
    d["links"][0]["ip1"] = f"10.0.1.1/24;touch {watched}/PWNED2"
    hostile = topo.Topology.from_json(d)
    with pytest.raises(LabError) as err, Lab(hostile, "itest-hostile", {h.name: IMAGE for h in hostile.hosts}):
        pass
    msg = str(err.value)
    assert msg.startswith("topology custom: cannot deploy") and "scope ID" in msg and "PWNED2" in msg, msg


def test_a_hostile_but_accepted_topology_deploys_a_working_lab(canary, no_leftovers, tmp_path):
    """Prose with shell text and names with dots and dashes are accepted: they reach no shell, and the lab works,
    its static route and the extra interface it leads to included (both configured by argv commands)."""
    _home, _cwd, watched = canary
    raw = _topology()
    raw["description"] = f"$(touch {watched}/D1) `touch {watched}/D2`; touch {watched}/D3 #"
    raw["nodes"]["h1"]["role"] = "client.v1-x"
    raw["nodes"]["r1"]["interfaces"] = [{"name": "lo1", "address": "192.0.2.1/24"}]
    raw["links"][1]["segment"] = "wan.1-b"
    f = tmp_path / "odd.yaml"
    f.write_text(yaml.safe_dump(raw))
    t = topofile.load(f)
    with Lab(t, "itest-hostile", {h.name: IMAGE for h in t.hosts}) as lab:
        code, out, _ = lab.exec("h1", ["ping", "-c", "1", "-W", "2", "192.0.2.1"])
        assert code == 0, out
        code, out, _ = lab.exec("h1", ["ip", "-6", "route", "show"])
        assert "fd00:192:0:2::/80 via fd00:10:0:1::2" in out, out
        assert lab.nodes["h1"].container.labels["protolab.role"] == "client.v1-x"
