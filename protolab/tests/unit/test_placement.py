"""protolab.testbed.placement: an Ansible inventory's testbed hosts, and which host each node of a lab runs on.
A shared medium and its members never span hosts; point-to-point links between hosts become VXLAN stitches."""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
from pathlib import Path

import pytest
import yaml

from protolab import topofile
from protolab.errors import LabError
from protolab.lab import impair, supervise
from protolab.lab.testbed import TestbedLab
from protolab.spec import TopologySpec
from protolab.testbed import placement
from protolab.testbed.placement import PlacementError, load_inventory, place


def _inventory(tmp_path: Path, hosts: dict, common: dict | None = None) -> placement.Inventory:
    path = tmp_path / "two.yml"
    path.write_text(yaml.safe_dump({"testbed": {"hosts": hosts, **({"vars": common} if common else {})}}))
    return load_inventory(path)


TWO = {"lab_a": {"ansible_host": "192.0.2.10", "protolab_cpus": 4, "protolab_engine": "ssh://root@192.0.2.10"},
       "lab_b": {"ansible_host": "192.0.2.11", "protolab_underlay": "198.51.100.11", "protolab_cpus": 4}}  # fmt: skip


def test_the_default_inventory_is_this_machine():
    inv = load_inventory()
    assert inv.names() == ["localhost"] and inv.hosts[0].engine == "unix:///var/run/docker.sock"


def test_an_inventory_reads_hosts_and_group_vars(tmp_path):
    inv = _inventory(tmp_path, TWO, {"protolab_vxlan_port": 8472, "protolab_underlay_mtu": 9000})
    a, b = inv.hosts
    assert (a.name, a.address, a.underlay, a.engine, a.cpus) == ("lab_a", "192.0.2.10", "192.0.2.10",
                                                                   "ssh://root@192.0.2.10", 4)  # fmt: skip
    assert (b.underlay, b.vxlan_port, b.underlay_mtu) == ("198.51.100.11", 8472, 9000)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("all: {hosts: {a: {}}}", "no `testbed:` group"),
        ("testbed: {hosts: {}}", "no `testbed:` group"),
        ("testbed: {hosts: {a: {protolab_cpus: 0}}}", "host a: cpus: Input should be greater than 0"),
        ("testbed: {hosts: {a: {protolab_vxlan_port: 70000}}}", "host a: vxlan_port"),
        ("testbed: [", "inventory .*bad.yml"),
    ],
)
def test_a_broken_inventory_says_what_is_wrong(tmp_path, text, why):
    path = tmp_path / "bad.yml"
    path.write_text(text)
    with pytest.raises(PlacementError, match=why):
        load_inventory(path)


def test_a_hub_and_its_members_stay_together():
    t = topofile.load(topofile.find("triangle"))  # hub lan: h1, h2, r1; r1-r2 and r2-h3 point to point
    assert sorted(map(sorted, placement.groups(t))) == [["h1", "h2", "lan", "r1"], ["h3"], ["r2"]]
    t = TopologySpec(kind="dual_homed", params={"hosts": 2, "rate": "100Mbit"}).build()
    assert len(placement.groups(t)) == 1  # every host on both switches: one medium-joined group


def test_one_host_places_everything_there_and_stitches_nothing():
    t = TopologySpec(kind="switched", params={"hosts": 3, "rate": "100Mbit", "wan_router": True}).build()
    p = place(t, load_inventory())
    assert set(p.node_host.values()) == {"localhost"} and p.stitches == [] and p.hosts == ["localhost"]


def test_groups_are_balanced_by_cpu_and_cross_links_are_stitched(tmp_path):
    inv = _inventory(tmp_path, TWO)
    t = topofile.load(topofile.find("triangle"))
    p = place(t, inv)
    # the hub's group (3 cores at one core a node) first, to lab_a; r2 (1) and h3 (0.5) then fill lab_b
    assert {n: p.node_host[n] for n in ("h1", "h2", "r1", "lan")} == dict.fromkeys(("h1", "h2", "r1", "lan"), "lab_a")
    assert p.node_host["r2"] == p.node_host["h3"] == "lab_b"
    assert p.load == {"lab_a": 3.0, "lab_b": 1.5}
    (s,) = p.stitches
    assert (s.link, s.hosts, s.vni, s.mtu, s.port) == (("r1", "r2"), ("lab_a", "lab_b"), 4200, 1450, 4789)
    j = p.to_json()
    assert j["stitches"][0]["udp_port"] == 4789 and j["nodes"]["h3"] == "lab_b" and j["cpus_per_host"]["lab_a"] == 3


def test_a_pin_moves_its_group_and_the_rest_balance_around_it(tmp_path):
    inv = _inventory(tmp_path, TWO)
    t = topofile.load(topofile.find("triangle"))
    p = place(t, inv, pins={"h2": "lab_b"})  # h2 takes the whole hub group along
    assert {p.node_host[n] for n in ("h1", "h2", "r1", "lan")} == {"lab_b"}
    assert p.node_host["r2"] == p.node_host["h3"] == "lab_a"
    assert [s.link for s in p.stitches] == [("r1", "r2")]


def test_a_pin_in_the_topology_file(tmp_path):
    f = tmp_path / "t.yaml"
    f.write_text(yaml.safe_dump({"name": "t", "nodes": {"h1": {}, "r1": {"kind": "router"}, "w1": {"host": "lab_b"}},
                                 "segments": [{"name": "lan", "members": ["h1", "r1"]}],
                                 "links": [{"endpoints": ["r1", "w1"]}]}))  # fmt: skip
    t = topofile.load(f)
    assert t.host("w1").host == "lab_b"
    p = place(t, _inventory(tmp_path, TWO))
    assert p.node_host["w1"] == "lab_b" and p.node_host["h1"] == "lab_a"  # the LAN goes where the most is left


def test_a_shared_medium_split_by_pins_is_refused(tmp_path):
    t = topofile.load(topofile.find("triangle"))
    with pytest.raises(PlacementError, match=r"h1 on lab_a, h2 on lab_b share a hub or switch .* never spans hosts"):
        place(t, _inventory(tmp_path, TWO), pins={"h1": "lab_a", "h2": "lab_b"})


@pytest.mark.parametrize(
    ("pins", "why"),
    [
        ({"h1": "nosuch"}, r"no testbed host 'nosuch' \(hosts: lab_a, lab_b\)"),
        ({"zz": "lab_a"}, "'zz' is not a node of this topology"),
    ],
)
def test_bad_pins_say_why(tmp_path, pins, why):
    with pytest.raises(PlacementError, match=why):
        place(topofile.load(topofile.find("triangle")), _inventory(tmp_path, TWO), pins=pins)


def test_a_stitch_needs_underlay_addresses_and_one_port(tmp_path):
    t = topofile.load(topofile.find("triangle"))
    no_addr = {"lab_a": {"protolab_cpus": 4}, "lab_b": {"protolab_cpus": 4}}
    with pytest.raises(PlacementError, match="carries link r1-r2 across hosts but has no protolab_underlay"):
        place(t, _inventory(tmp_path, no_addr))
    ports = {"lab_a": {**TWO["lab_a"], "protolab_vxlan_port": 4789},
             "lab_b": {**TWO["lab_b"], "protolab_vxlan_port": 8472}}  # fmt: skip
    with pytest.raises(PlacementError, match="use VXLAN ports 4789 and 8472"):
        place(t, _inventory(tmp_path, ports))


def test_split_gives_each_host_its_part_with_a_stitch_bridge_per_crossing_link(tmp_path):
    inv = _inventory(tmp_path, TWO)
    t = topofile.load(topofile.find("triangle"))  # r1-r2: 1544 kbit/s, 135 ms each way, 1 % loss r2 -> r1
    p = place(t, inv)
    parts = placement.split(t, p, inv)
    a, b = parts["lab_a"], parts["lab_b"]
    assert sorted(h.name for h in a.hosts) == ["h1", "h2", "r1"] and sorted(h.name for h in b.hosts) == ["h3", "r2"]
    xa = next(s for s in a.switches if s.vxlan)
    xb = next(s for s in b.switches if s.vxlan)
    assert xa.name == xb.name == "x4200"
    assert (xa.vxlan.local, xa.vxlan.remote, xb.vxlan.local, xb.vxlan.remote) == (
        "192.0.2.10", "198.51.100.11", "198.51.100.11", "192.0.2.10")  # fmt: skip
    assert xa.vxlan.mtu == 1450 and xa.vxlan.vni == 4200
    # each half keeps its end's address and the link's rate
    (ra,) = [lk for lk in a.links if "x4200" in (lk.node1, lk.node2)]
    (rb,) = [lk for lk in b.links if "x4200" in (lk.node1, lk.node2)]
    whole = next(lk for lk in t.links if {lk.node1, lk.node2} == {"r1", "r2"})
    assert (ra.node1, ra.ip1, ra.rate_bps) == ("r1", whole.ip1, whole.rate_bps)
    assert (rb.node1, rb.ip1, rb.rate_bps) == ("r2", whole.ip2, whole.rate_bps)
    # every other link stays whole on its host, and nothing is lost or doubled
    assert len(a.links) + len(b.links) == len(t.links) + 1
    # impairments follow the packets: each direction's (at the sender) goes to its sending node's host
    ia = [(i.link, i.direction, str(i.delay)) for i in a.impairments]
    ib = [(i.link, i.direction, i.loss) for i in b.impairments]
    assert [x[:2] for x in ia] == [(("r1", "x4200"), "forward")] and [x[:2] for x in ib] == [(("r2", "x4200"),
                                                                                              "forward")]  # fmt: skip
    assert ib[0][2] is not None and ib[0][2] > 0  # the 1 % loss of r2 -> r1


@pytest.mark.parametrize("kind", ["triangle", "converter_lan", "satellite", "dual_homed"])
def test_a_topology_survives_json_as_a_keeper_is_given_it(tmp_path, kind):
    """A host's part of a lab travels to its keeper as JSON: resolved addresses, routes, impairments, pins and
    stitch ends come back equal."""
    import json

    from protolab.topo import Topology

    if kind == "triangle":
        t = topofile.load(topofile.find("triangle"))
        inv = _inventory(tmp_path, TWO)
        t = placement.split(t, place(t, inv), inv)["lab_b"]  # with a stitch bridge, its VXLAN end, 1 % loss
        assert any(s.vxlan for s in t.switches) and any(i.loss for i in t.impairments)
        t.impairments[0] = t.impairments[0].model_copy(update={"loss": 0.07, "duplicate": 0.001})
    else:
        t = TopologySpec(kind=kind, params={"layout": "converter_100_10"} if kind == "converter_lan" else {}).build()
    back = Topology.from_json(json.loads(json.dumps(t.to_json())))
    assert back.to_json() == t.to_json()  # impairments as their units write them (270 ms, not the float's last bit)
    back.impairments, t.impairments = [], []
    assert back == t


def test_a_keeper_starts_in_its_emulated_host_and_a_remote_one_is_refused(tmp_path):

    from protolab.lab import keeper, parts
    from protolab.topo import Topology

    inv = _inventory(tmp_path, {"emu": {"protolab_netns": "plab-emu-emu", "protolab_underlay": "10.255.98.2",
                                        "protolab_engine": "unix:///run/e.sock"},
                                "far": {"ansible_host": "192.0.2.11"}})  # fmt: skip
    req = keeper.Request(source="t@emu", part=Topology("t").to_json())
    part = parts.Part(inv.get("emu"), Topology("t"), tmp_path / "emu")
    cmd = parts._keeper_cmd(part, req)
    assert cmd[:2] == ["nsenter", "--net=/run/netns/plab-emu-emu"] and "unshare" in cmd and "--mount" in cmd
    assert cmd[-3:-1] == ["-m", "protolab.lab.keeper"] and '"part": {"kind": "t"' in cmd[-1]
    # a remote host's keeper: over its SSH session, its state directory and engine on the host
    far = parts.Part(inv.get("far"), Topology("t"), tmp_path / "far")
    cmd = parts._keeper_cmd(far, req)
    assert cmd[0] == "ssh" and cmd[-3:-1] == ["root@192.0.2.11", "--"], cmd
    remote = shlex.split(cmd[-1])
    assert remote[:3] == ["env", "PROTOLAB_STATE_DIR=/run/protolab-keepers/far",
                          f"DOCKER_HOST={far.host.engine}"] and "unshare" in remote  # fmt: skip
    assert remote[-3:-1] == ["-m", "protolab.lab.keeper"] and json.loads(remote[-1])["source"] == "t@emu"
    before = os.environ.get("PROTOLAB_STATE_DIR")
    with part.env():
        assert (
            os.environ["PROTOLAB_STATE_DIR"] == str(tmp_path / "emu") and os.environ["DOCKER_HOST"] == part.host.engine
        )
        assert keeper.state_path() == tmp_path / "emu" / "lab.json"
    assert os.environ.get("PROTOLAB_STATE_DIR") == before


def test_clean_kills_a_parts_keeper_and_removes_its_state(tmp_path, monkeypatch):
    import json
    import subprocess

    from protolab.lab import parts

    monkeypatch.setattr(parts, "STATE_ROOT", tmp_path / "hosts")
    d = parts.STATE_ROOT / "host_a"
    (d / "owned").mkdir(parents=True)
    keeper = subprocess.Popen(["sleep", "60"])
    (d / "lab.json").write_text(json.dumps({"pid": keeper.pid}))
    (d / "owned" / "lab-20261126T000000Z-abcd.jsonl").write_text("")
    done = parts.clean_parts()
    assert keeper.wait(timeout=5) == -9  # SIGKILL
    assert f"killed process {keeper.pid} of the lab part on host_a" in done
    assert not parts.STATE_ROOT.exists()
    assert parts.clean_parts() == []  # nothing left: nothing to say


def test_clean_removes_the_parts_a_controller_left_on_this_machine_as_a_host_over_ssh(tmp_path, monkeypatch):
    """A deploy over SSH that failed before its controller recorded the part: the keeper's state on this machine
    (a lock and an empty ledger folder) was listed as left by `clean` and never removed."""
    import subprocess

    from protolab.lab import parts

    monkeypatch.setattr(parts, "REMOTE_STATE_ROOT", tmp_path / "keepers")
    for name in ("run_a", "run_b"):
        (parts.REMOTE_STATE_ROOT / name / "owned").mkdir(parents=True)
        (parts.REMOTE_STATE_ROOT / name / "lock").write_text("")
    keeper = subprocess.Popen(["sleep", "60"])
    (parts.REMOTE_STATE_ROOT / "run_a" / "lab.json").write_text(f'{{"pid": {keeper.pid}}}')
    done = parts.clean_hosted_parts()
    assert keeper.wait(timeout=5) == -9
    assert f"removed the state of the lab part on run_b ({parts.REMOTE_STATE_ROOT / 'run_b'})" in done
    assert not parts.REMOTE_STATE_ROOT.exists()
    assert parts.clean_hosted_parts() == []


def test_clean_keeps_a_part_whose_keeper_still_runs_a_lab(tmp_path, monkeypatch):
    """A keeper holding its part's lock serves a controller elsewhere: this machine's clean leaves it, says so,
    and `clean` goes on listing it as left."""
    import fcntl
    import os

    from protolab.lab import parts

    monkeypatch.setattr(parts, "REMOTE_STATE_ROOT", tmp_path / "keepers")
    d = parts.REMOTE_STATE_ROOT / "run_a"
    d.mkdir(parents=True)
    fd = os.open(d / "lock", os.O_RDWR | os.O_CREAT, 0o600)
    os.write(fd, b'{"pid": 4242, "command": "keeper"}')
    fcntl.flock(fd, fcntl.LOCK_EX)  # held by this open file description, as a live keeper holds it
    try:
        assert parts.clean_hosted_parts() == ["kept the lab part on run_a: its keeper (pid 4242) is running a lab"]
        assert d.is_dir()
    finally:
        os.close(fd)
    assert parts.clean_hosted_parts()[-1].startswith("removed the state of the lab part on run_a")


def test_place_shows_the_hosts_and_where_each_node_runs(tmp_path, capsys):
    """`protolab place`: the inventory as placement reads it, then each host's nodes and each stitched link."""
    from protolab import cli

    inv = tmp_path / "two.yml"
    inv.write_text(yaml.safe_dump({"testbed": {"hosts": TWO}}))
    assert cli.main(["place", "triangle", "--inventory", str(inv)]) == 0
    out = capsys.readouterr().out
    assert f"inventory {inv}: 2 testbed host(s)" in out
    assert "lab_a: 192.0.2.10; engine ssh://root@192.0.2.10; underlay 192.0.2.10; 4 cores" in out
    assert "  lab_a (3 cores of node budget): h1, h2, r1, lan" in out  # the hub's group, largest budget first
    assert "  lab_b (1.5 cores of node budget): h3, r2" in out
    assert "stitched r1-r2: lab_a <-> lab_b, VXLAN VNI 4200, UDP 4789, MTU 1450" in out
    assert cli.main(["place", "--format", "json", "--inventory", str(inv)]) == 0
    doc = yaml.safe_load(capsys.readouterr().out)
    assert [h["name"] for h in doc["hosts"]] == ["lab_a", "lab_b"] and doc["placement"] is None


def test_a_hosts_clock_offset_is_bounded_by_its_round_trip(tmp_path, monkeypatch):
    """measure_clocks' ping-pong, on hosts that share this machine's clock (the command runs here): the estimate
    must lie within its own bound (t1 <= t_host <= t4), and a host that gives no reading says so."""
    from protolab.lab import parts

    inv = _inventory(tmp_path, {"a": {"protolab_netns": "x"}, "b": {"protolab_netns": "y"}})
    lab = parts.MultiLab(placement.Placement(inv.source, {}, []))
    lab.parts = {h: parts.Part(inv.get(h), None, tmp_path / h) for h in ("a", "b")}  # type: ignore[arg-type]
    monkeypatch.setattr(parts, "host_cmd", lambda host, cmd: cmd if host.name == "a" else ["false"])
    parts.measure_clocks(lab, inv, probes=3)
    a = lab.clocks["a"]
    assert abs(a["offset_seconds"]) <= a["uncertainty_seconds"] < 1.0 and a["probes"] == 3
    assert lab.clocks["b"] == {"error": "no clock reading from b in 3 tries"}


def test_a_host_that_stops_answering_ends_its_clock_probe_at_the_deadline(tmp_path, monkeypatch):
    import time

    from protolab.lab import parts

    inv = _inventory(tmp_path, {"a": {"protolab_netns": "x"}})
    monkeypatch.setattr(parts, "host_cmd", lambda host, cmd: ["sleep", "60"])  # reads nothing, says nothing
    monkeypatch.setattr(parts, "CLOCK_TIMEOUT", 0.5)
    t0 = time.monotonic()
    assert parts.clock_offset(inv.get("a"), probes=3) is None
    assert time.monotonic() - t0 < 10


def test_inspect_text_of_a_lab_over_several_hosts(tmp_path):
    """What `protolab inspect` prints from a supervisor's state: placement, the stitch with its underlay figures,
    the clocks, and a part whose keeper is gone said as such."""

    st = {"name": "triangle", "run": "parts-x", "inventory": "inv.yml", "emulated": ["a", "b"], "pid": 1,
          "deployed_at": "2026-11-26T04:00:00Z", "deploy_seconds": 20.5,
          "parts": {h: {"engine": f"unix:///{h}.sock", "state_dir": str(tmp_path / h),
                        "host": {"name": h, "engine": f"unix:///{h}.sock", "netns": f"plab-emu-{h}"}} for h in "ab"},
          "placement": {"nodes": {"h1": "a", "r1": "a", "r2": "b", "h3": "b"},
                        "stitches": [{"link": ["r1", "r2"], "hosts": ["a", "b"], "vni": 4200, "mtu": 1450}]},
          "underlay": [{"link": ["r1", "r2"], "rtt_mean_seconds": 61e-6, "rtt_sd_seconds": 9e-6}],
          "clocks": {"a": {"offset_seconds": 2e-6, "uncertainty_seconds": 450e-6},
                     "b": {"error": "no clock reading from b in 5 tries"}}}  # fmt: skip
    text = supervise.supervised_text(st)
    assert "lab triangle (parts-x) over 2 testbed hosts of inv.yml (emulated)" in text
    assert "  a          engine unix:///a.sock: h1, r1" in text
    assert "  stitched r1-r2: VNI 4200, MTU 1450, underlay RTT 0.061 ms, sd 9 us" in text
    assert "  clock of a: offset +2 us +- 450 us" in text and "  clock of b: no clock reading from b" in text
    assert text.count("(its keeper is not running)") == 2


def test_a_stitched_directions_impairment_is_found_where_split_put_it(tmp_path, monkeypatch):
    """selfcheck across a stitch goes through _View: a direction's impairment is changed by the keeper of the host
    that applies it (sender's, toward its stitch bridge; receiver's, from it) and its ends are the nodes' own
    interfaces (a container's by its pid, a bridge's in its host's namespace by the keeper's pid)."""
    from protolab.lab import keeper, parts

    t = topofile.load(topofile.find("triangle"))
    inv = _inventory(tmp_path, TWO)
    p = place(t, inv)
    lab = parts.MultiLab(p)
    lab.parts = {h: parts.Part(inv.get(h), part, tmp_path / h) for h, part in placement.split(t, p, inv).items()}
    rows = {h: keeper._link_rows(part.topology) for h, part in lab.parts.items()}
    states = {h: {"pid": 10 + i, "links": rows[h], "nodes": [{"name": n.name, "pid": 100 + j}
                                                            for j, n in enumerate(lab.parts[h].topology.hosts)]}
              for i, h in enumerate(lab.parts)}  # fmt: skip
    monkeypatch.setattr(parts.Part, "load_state", lambda self: states[self.state_dir.name])
    asked = []
    monkeypatch.setattr(parts.Part, "request", lambda self, op, **kw: asked.append((str(self.state_dir), op, kw)))
    view = TestbedLab.over(lab, t)
    x = placement.stitch_bridge(4200)
    assert view.links.where("r1", "r2", "sender") == ("lab_a", ["r1", x])
    assert view.links.where("r1", "r2", "receiver") == ("lab_b", [x, "r2"])
    assert view.links.where("h1", "lan", "sender") == ("lab_a", ["h1", "lan"])
    snd, rcv = view.links.ends("r1", "r2")
    assert snd.intf.startswith("r1-eth") and rcv.intf.startswith("r2-eth") and snd.pid >= 100 and rcv.pid >= 100
    _h1, hub = view.links.ends("h1", "lan")
    assert hub.pid == states["lab_a"]["pid"] and hub.host_side  # the bridge's end: its host's namespace
    assert impair.ifb_for(hub).intf == impair.ifb_for(impair.Endpoint(hub.intf)).intf  # the IFB its keeper made
    imp, at = view.configured[("r2", "r1")]
    view.links.replace("r2", "r1", imp.model_copy(update={"delay": 1e-6}), at)
    ((where, op, kw),) = asked
    assert (where.endswith("lab_b"), op, kw["method"], kw["link"], kw["at"]) == (True, "links", "replace", ["r2", x],
                                                                                  "sender")  # fmt: skip
    assert kw["impairment"]["loss"] == 0.01 and kw["impairment"]["delay"] == "0.001ms"
    assert kw["impairment"]["rate"] == "1544kbit"  # the link's rate stays: the keeper's setting has it too
    assert view.current[("r2", "r1")][0].delay == 1e-6


def test_a_placement_survives_json(tmp_path):
    t = topofile.load(topofile.find("triangle"))
    p = place(t, _inventory(tmp_path, TWO))
    back = placement.Placement.from_json(p.to_json())
    assert back == p and back.stitches[0].link == ("r1", "r2")


def test_a_deploy_over_hosts_carries_the_specs_images_budgets_and_impairments_to_the_parts(tmp_path):
    """What an experiment adds to its topology (node images and CPU budgets, its own impairments) reaches the
    part of the host that applies it; a node command, which a part cannot carry yet, is refused by name."""
    from protolab.errors import LabError
    from protolab.lab import keeper, parts
    from protolab.model.impairment import LinkImpairment

    inv = _inventory(tmp_path, TWO)
    t = topofile.load(topofile.find("triangle"))
    extra = LinkImpairment.model_validate({"link": ["h3", "r2"], "direction": "forward", "loss": "2%"})
    images = {h.name: "protolab/node:test" for h in t.hosts} | {"h3": "protolab/other:test"}
    cpus = {h.name: None for h in t.hosts} | {"h3": 0.25}
    p = keeper.Prepared("triangle", t, images, cpus, dict.fromkeys(images), [*t.impairments, extra], "triangle")
    whole = parts.whole_topology(p)
    split = placement.split(whole, place(whole, inv), inv)
    (h3,) = [h for h in split["lab_b"].hosts if h.name == "h3"]
    assert (h3.image, h3.cpus) == ("protolab/other:test", 0.25)
    assert any(i.link == ("h3", "r2") and i.loss == 0.02 for i in split["lab_b"].impairments)
    assert not any(i.link == ("h3", "r2") for i in split["lab_a"].impairments)
    assert t.impairments == whole.impairments[:-1] and all(h.image is None for h in t.hosts)  # the input is kept
    with pytest.raises(LabError, match="node command.s. of h2: a lab over several hosts"):
        parts.whole_topology(keeper.Prepared("triangle", t, images, cpus, {"h2": ["sleep", "1"]}, [], "triangle"))


@pytest.mark.parametrize("kind", ["triangle", "satellite"])
def test_a_lab_over_hosts_names_interfaces_and_addresses_as_one_host_does(tmp_path, monkeypatch, kind):
    """What the runner asks of a lab -- a node's interfaces in order, its address on each (v4 and v6) -- is the
    same over hosts as on one: each part keeps every node's link order, a stitched link ending at the stitch bridge
    in its place; and a node's shell command goes to the keeper of its host."""
    from protolab.lab import keeper, parts

    t = topofile.load(topofile.find(kind)) if kind == "triangle" else TopologySpec(kind=kind, params={}).build()
    hosts = sorted(h.name for h in t.hosts)
    t.hosts = [dataclasses.replace(h, host="lab_b" if h.name == hosts[-1] else None) for h in t.hosts]
    inv = _inventory(tmp_path, TWO)
    p = place(t, inv)
    assert p.stitches and len(set(p.node_host.values())) == 2  # something crosses
    lab = parts.MultiLab(p)
    lab.parts = {h: parts.Part(inv.get(h), part, tmp_path / h) for h, part in placement.split(t, p, inv).items()}
    monkeypatch.setattr(parts.Part, "load_state", lambda self: {})
    asked = []
    monkeypatch.setattr(parts.Part, "request", lambda self, op, **kw: asked.append((str(self.state_dir), op, kw))
                        or {"output": "ok"})  # fmt: skip
    view = TestbedLab.over(lab, t)
    one = {row_end["node"]: [] for row in keeper._link_rows(t) for row_end in row["ends"]}
    for row in keeper._link_rows(t):
        for e in row["ends"]:
            one[e["node"]].append(e)
    for h in t.hosts:
        part = lab.parts[p.node_host[h.name]].topology
        assert view.data_interfaces(h.name) == part.interfaces()[h.name] == [e["interface"] for e in one[h.name]]
        for i, e in enumerate(one[h.name]):
            if e["address"]:
                assert view.ip(h.name, i) == e["address"].split("/")[0]
                assert view.ip(h.name, i, family=6) == e["address6"].split("/")[0]
    with pytest.raises(LabError, match="no data interface 7"):
        view.ip(t.hosts[0].name, 7)
    assert view.node_shell(hosts[-1], "true") == "ok"
    assert asked == [(str(tmp_path / p.node_host[hosts[-1]]), "sh", {"node": hosts[-1], "script": "true"})]


def test_faults_over_hosts_go_to_the_keepers_that_hold_the_link(tmp_path, monkeypatch):
    """A fault schedule's operations on a lab over hosts: a step changes each direction where its impairment is
    applied; a cable pulled on a stitched link is pulled on both hosts (each its node's port on the stitch bridge);
    restore asks every keeper and names the host of what failed."""
    from protolab.lab import parts
    from protolab.model.impairment import Impairment

    t = topofile.load(topofile.find("triangle"))
    inv = _inventory(tmp_path, TWO)
    p = place(t, inv)
    lab = parts.MultiLab(p)
    lab.parts = {h: parts.Part(inv.get(h), part, tmp_path / h) for h, part in placement.split(t, p, inv).items()}
    monkeypatch.setattr(parts.Part, "load_state", lambda self: {})
    asked = []

    def request(self, op, **kw):
        host = self.state_dir.name
        asked.append((host, op, kw))
        return {"failures": ["r2->r1 back to configured: boom"] if host == "lab_b" else []}

    monkeypatch.setattr(parts.Part, "request", request)
    view = TestbedLab.over(lab, t)
    x = placement.stitch_bridge(4200)
    view.links.step(("r1", "r2"), "both", Impairment.model_validate({"delay": "10ms"}))
    assert [(h, kw["link"], kw["impairment"]["delay"]) for h, _, kw in asked] == [
        ("lab_a", ["r1", x], "10ms"), ("lab_b", ["r2", x], "10ms")]  # fmt: skip
    assert asked[1][2]["impairment"]["loss"] == 0.01  # r2 -> r1 keeps its loss: only the delay was given
    asked.clear()
    view.links.set_cable(("r2", "r1"), "down")
    view.links.set_cable(("h1", "lan"), "up")
    assert [(h, kw["method"], kw["link"], kw["state"]) for h, _, kw in asked] == [
        ("lab_a", "set_cable", ["r1", x], "down"), ("lab_b", "set_cable", ["r2", x], "down"),
        ("lab_a", "set_cable", ["h1", "lan"], "up")]  # fmt: skip
    asked.clear()
    assert view.links.restore() == ["lab_b: r2->r1 back to configured: boom"]
    assert [(h, kw["method"]) for h, _, kw in asked] == [("lab_a", "restore"), ("lab_b", "restore")]
    assert view.current == view.configured


def test_what_a_run_reads_of_a_lab_over_hosts_comes_from_the_keepers_states(tmp_path, monkeypatch):
    """nodes (pid, image, management address), every link end in its namespace (a bridge's on its host's side),
    the unshaped interfaces by namespace for the guard, and the applied settings and NIC filters of every host."""
    from protolab.lab import keeper, parts

    t = topofile.load(topofile.find("triangle"))
    inv = _inventory(tmp_path, {h: {**v, "protolab_netns": f"plab-emu-{h}"} for h, v in TWO.items()})  # emulated
    p = place(t, inv)
    lab = parts.MultiLab(p)
    lab.parts = {h: parts.Part(inv.get(h), part, tmp_path / h) for h, part in placement.split(t, p, inv).items()}
    states = {}
    for i, (h, part) in enumerate(sorted(lab.parts.items())):
        rows = keeper._link_rows(part.topology)
        nodes = [{"name": n.name, "role": n.role, "image": "protolab/node", "pid": 100 * (i + 1) + j,
                  "mgmt_ip": f"172.30.{i}.{j}"} for j, n in enumerate(part.topology.hosts)]  # fmt: skip
        first = next(e["interface"] for r in rows for e in r["ends"] if e["node"] == nodes[0]["name"])
        states[h] = {
            "pid": 10 + i,
            "links": rows,
            "nodes": nodes,
            "shaped_interfaces": [first],
            "applied": [{"from": "a", "to": "b"}],
            "nic_filters": {f"{nodes[0]['name']}:{first}": "hash64"},
        }
    monkeypatch.setattr(parts.Part, "load_state", lambda self: states[self.state_dir.name])
    view = TestbedLab.over(lab, t)
    assert sorted(view.nodes) == ["h1", "h2", "h3", "r1", "r2"]
    assert view.nodes["h3"].pid >= 200 and view.nodes["h3"].mgmt_ip.startswith("172.30.1.")
    ends = view._ends()
    hub_ends = [e for n, e in ends if n == "lan"]
    assert hub_ends and all(e.host_side and e.pid == 10 for e in hub_ends)
    assert {n for n, _ in ends} >= {"h1", "h2", "h3", "r1", "r2", "lan", placement.stitch_bridge(4200)}
    unshaped = view.unshaped()
    assert not (set().union(*unshaped.values()) & view.shaped_interfaces) and len(view.shaped_interfaces) == 2
    assert sum(len(v) for v in unshaped.values()) == len(ends) - 2
    assert [a["host"] for a in view.applied] == ["lab_a", "lab_b"] and len(view.nic_filters) == 2
    # the NIC filters' model is in each keeper, emulated hosts' too: every part is asked to sync
    synced = []
    monkeypatch.setattr(parts.Part, "request", lambda self, op, **kw: synced.append((self.host.name, op))
                        or {"joined": {f"x-{self.host.name}:eth0": ["01:00:5e:00:00:01"]}})  # fmt: skip
    assert view.sync_nic_filters() == {f"x-{h}:eth0": ["01:00:5e:00:00:01"] for h in ("lab_a", "lab_b")}
    assert synced == [("lab_a", "nic_sync"), ("lab_b", "nic_sync")]
    # the same parts on hosts reached over SSH: their pids are not processes here, their interfaces not readable here
    for part in lab.parts.values():
        part.host = part.host.model_copy(update={"netns": None})
    asked = []
    monkeypatch.setattr(parts.Part, "request", lambda self, op, **kw: asked.append((self.host.name, op, kw))
                        or {"value": {f"x-{self.host.name}:eth0": {"rx_packets": 1}}})  # fmt: skip
    view = TestbedLab.over(lab, t)
    assert all(n.pid is None for n in view.nodes.values()) and view.unshaped() == {}
    assert view._ends(local=True) == [] and len(view._ends()) == len(ends)
    assert view.interface_counters() == {"x-lab_a:eth0": {"rx_packets": 1}, "x-lab_b:eth0": {"rx_packets": 1}}
    assert asked == [(h, "read", {"what": "counters"}) for h in ("lab_a", "lab_b")]
