"""The lab commands' pure parts: what deploy would make (before anything is made), node filters, link ends."""

from __future__ import annotations

import ipaddress
import json
import os
from types import SimpleNamespace

import pytest

from protolab import topofile
from protolab.errors import LabError, SpecError
from protolab.lab import keeper
from protolab.lab.impair import Backend, Endpoint
from protolab.lab.linkstate import LinkState


def test_prepare_takes_a_file_a_topology_name_a_generator_or_an_experiment(tmp_path):
    f = tmp_path / "two.yaml"
    f.write_text("nodes: {a: {}, b: {cpus: 0.25}}\nlinks: [{endpoints: [a, b], rate: 10Mbit}]\n")
    p = keeper.prepare(keeper.Request(str(f)))
    assert [h.name for h in p.topology.hosts] == ["a", "b"] and p.cpus == {"a": None, "b": 0.25}
    assert keeper.prepare(keeper.Request("triangle")).topology.host("r1").forwarding
    sw = keeper.prepare(keeper.Request("switched", {"hosts": 3}))
    assert [h.name for h in sw.topology.hosts] == ["h1", "h2", "h3"]
    ex = keeper.prepare(keeper.Request("link-fidelity"))  # an experiment: its topology and impairments
    assert ex.impairments and ex.topology.kind == "switched"
    with pytest.raises(SpecError, match="not a topology file, topology or experiment"):
        keeper.prepare(keeper.Request("no-such-thing"))
    with pytest.raises(SpecError, match="takes no --param"):
        keeper.prepare(keeper.Request(str(f), {"hosts": 3}))


def test_a_node_filter_keeps_its_nodes_their_bridges_links_and_impairments():
    p = keeper.prepare(keeper.Request("triangle", node_filter=["h1", "r*"]))
    assert sorted(h.name for h in p.topology.hosts) == ["h1", "r1", "r2"]
    assert sorted((lk.node1, lk.node2) for lk in p.topology.links) == [("h1", "lan"), ("r1", "lan"), ("r1", "r2")]
    assert {i.link for i in p.impairments} == {("r1", "r2")}
    no_r = keeper.prepare(keeper.Request("triangle", node_filter=["h3"]))
    assert [h.name for h in no_r.topology.hosts] == ["h3"] and no_r.topology.links == [] and not no_r.impairments
    with pytest.raises(SpecError, match="--node-filter x9 matches no node of triangle"):
        keeper.prepare(keeper.Request("triangle", node_filter=["h1", "x9"]))


@pytest.mark.parametrize(
    "nodes", [["h3"], ["h1", "h2"], ["h1", "r1"], ["r2", "h3"], ["h*"], ["r*"], ["h1", "r1", "r2"]]
)
def test_a_filtered_topology_passes_the_check_and_keeps_only_routes_with_a_reachable_next_hop(nodes):
    full = keeper.prepare(keeper.Request("triangle")).topology
    p = keeper.prepare(keeper.Request("triangle", node_filter=nodes))
    t = p.topology
    assert t.problems() == []  # the check every topology passes before Lab builds it
    for h in t.hosts:  # what Lab's route check needs: each gateway on one of the node's subnets, a kept node's
        nets = [ipaddress.ip_interface(ip).network for _n, _i, ip in topofile.addresses(t) if _n == h.name]
        owners = {str(ipaddress.ip_interface(ip).ip): n for n, _i, ip in topofile.addresses(t)}
        for _dst, gw in h.routes:
            assert any(ipaddress.ip_address(gw) in net for net in nets) and owners[gw] != h.name, (h.name, gw)
        assert set(h.routes) <= set(full.host(h.name).routes)  # nothing added
    kept = sum(len(h.routes) for h in t.hosts)
    assert kept + len(p.notes) == sum(len(full.host(h.name).routes) for h in t.hosts)  # every drop is said
    assert full.host("h3").routes  # the unfiltered topology is left as it was


def test_h3_alone_loses_its_routes_through_r2_and_deploy_says_so():
    p = keeper.prepare(keeper.Request("triangle", node_filter=["h3"]))
    assert p.topology.host("h3").routes == []
    why = "r2, whose address it is, is filtered out"
    assert p.notes == [f"h3: route to 10.0.1.0/24 via 10.0.3.1 dropped: {why}",
                       f"h3: route to 10.0.2.0/24 via 10.0.3.1 dropped: {why}"]  # fmt: skip
    kept = keeper.prepare(keeper.Request("triangle", node_filter=["h1", "r1"]))
    assert kept.topology.host("h1").routes == [("10.0.2.0/24", "10.0.1.3"), ("10.0.3.0/24", "10.0.1.3")]


def test_a_node_filter_keeps_every_other_attribute_of_the_topology(tmp_path):
    f = tmp_path / "v4.yaml"
    f.write_text("name: v4only\nipv6: false\nnodes: {a: {}, b: {}, c: {}}\n"
                 "segments: [{name: s1, members: [a, b, c]}]\n")  # fmt: skip
    p = keeper.prepare(keeper.Request(str(f), node_filter=["a", "b"]))
    assert p.topology.ipv6 is False and p.topology.kind == "v4only" and p.topology.source == str(f)
    assert [h.name for h in p.topology.hosts] == ["a", "b"]
    spec_off = keeper.prepare(keeper.Request("triangle", node_filter=["h1"]))
    assert spec_off.topology.ipv6 is True  # and the default stays on


STATE = {
    "name": "t", "nodes": [{"name": "h1", "pid": 11}, {"name": "r1", "pid": 12}],
    "links": [{"link": ["h1", "s1"], "ends": [{"node": "h1", "interface": "h1-eth0", "address": "10.0.1.1/24"},
                                              {"node": "s1", "interface": "s1-eth1", "address": None}]},
              {"link": ["h1", "r1"], "ends": [{"node": "h1", "interface": "h1-eth1", "address": "10.0.2.1/24"},
                                              {"node": "r1", "interface": "r1-eth0", "address": "10.0.2.2/24"}]}],
}  # fmt: skip


def test_a_link_is_named_by_its_nodes_or_a_node_and_interface():
    assert keeper.link_end(STATE, "s1-h1") == (STATE["links"][0]["ends"][0], 11)  # the container's end
    assert keeper.link_end(STATE, "r1:r1-eth0") == (STATE["links"][1]["ends"][1], 12)
    with pytest.raises(LabError, match="no such link in lab t .links: h1-s1, h1-r1"):
        keeper.link_end(STATE, "h1-h9")


def test_params_and_commands_without_a_lab_say_so(monkeypatch, tmp_path):
    assert keeper.parse_params(["hosts=4", "rate=10Mbit"]) == {"hosts": 4, "rate": "10Mbit"}
    with pytest.raises(SpecError, match="KEY=VALUE"):
        keeper.parse_params(["hosts"])
    monkeypatch.setenv("PROTOLAB_STATE_DIR", str(tmp_path))
    assert keeper.load_state() is None
    with pytest.raises(LabError, match="h1: no lab is deployed on this machine"):
        keeper.exec_cmd("h1", ["true"])
    with pytest.raises(LabError, match="no lab is deployed"):
        keeper.request("inspect")


class FakeBackend(Backend):
    """The impairment backend's boundary: records what it is asked instead of calling tc."""

    name = "fake"

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, float | None]] = []

    def apply(self, sender, receiver, imp, at="sender"):
        self.calls.append((sender.intf, receiver.intf, imp.delay))
        return [f"{sender.intf}: fake"]

    def change(self, sender, receiver, old, new, at):
        self.calls.append((sender.intf, receiver.intf, new.delay))
        return True


class FakeLab:
    """What a deployed Lab holds that the keeper reads: the real topology and a real LinkState over fake ends."""

    def __init__(self, t) -> None:
        self.topology, self.run_id, self.impairments = t, "lab-test", []
        ends = {(lk.node1, lk.node2): (Endpoint(f"{lk.node1}-x", 1), Endpoint(f"{lk.node2}-y", 2)) for lk in t.links}
        self.links = LinkState(ends, FakeBackend(), run=lambda cmd, check=True: "", clear=lambda s, r: None)
        self.backend = self.links.backend
        self.images = {h.name: "protolab/node" for h in t.hosts}
        self.cpus = {h.name: h.cpus for h in t.hosts}
        self.nodes = {h.name: SimpleNamespace(pid=100 + i, mgmt_ip="") for i, h in enumerate(t.hosts)}

        self.nic_filters: dict[str, str] = {}
        self.receive_cpu = SimpleNamespace(manifest=lambda: {"mode": "node"})
        self.shell: list[tuple[str, str]] = []

    @property
    def configured(self):
        return self.links.configured

    @property
    def applied(self):
        return self.links.applied

    @property
    def shaped_interfaces(self):
        return self.links.shaped_interfaces

    def node_shell(self, node: str, script: str) -> str:
        self.shell.append((node, script))
        return "1\n"

    def sync_nic_filters(self) -> dict[str, list[str]]:
        self.synced = getattr(self, "synced", 0) + 1
        return {"h1:h1-eth0": ["01:00:5e:01:02:03"]}


def _keeper(monkeypatch, tmp_path) -> keeper.Keeper:
    monkeypatch.setenv("PROTOLAB_STATE_DIR", str(tmp_path))
    k = keeper.Keeper(keeper.Request("triangle"))
    k.lab = FakeLab(keeper.prepare(k.req).topology)
    k.deployed_at, k.deploy_seconds = "2026-01-01T00:00:00+00:00", 1.0
    return k


def test_impair_on_a_link_the_lab_lacks_names_the_lab_s_links(monkeypatch, tmp_path):
    k = _keeper(monkeypatch, tmp_path)
    answer = k.handle({"op": "impair", "link": ["r1", "h3"], "set": {"delay": "10ms"}})
    assert answer == {"ok": False, "error": "no link r1-h3 in lab triangle (its links: h1-lan, h2-lan, r1-lan, "
                                            "r1-r2, r2-h3)"}  # fmt: skip
    assert k.lab.links.backend.calls == [] and k.events == []  # nothing changed
    assert k.handle({"op": "impair", "link": ["h3", "r2"], "clear": True})["ok"]  # either order names the link


def test_impair_set_on_a_link_of_the_lab_changes_it_through_the_backend_and_records_it(monkeypatch, tmp_path):
    k = _keeper(monkeypatch, tmp_path)
    answer = k.handle({"op": "impair", "link": ["r2", "r1"], "direction": "forward", "set": {"delay": "20ms"}})
    assert answer["ok"], answer
    assert [(i["from"], i["to"], i["impairment"]) for i in answer["configured"]] == [("r2", "r1", {"delay": "20ms"})]
    assert k.lab.links.backend.calls == [("r2-y", "r1-x", 0.02)]  # the link is keyed r1-r2: r2 sends from its end
    assert keeper.load_state()["events"][0]["link"] == ["r2", "r1"]


def test_exec_on_a_node_the_deployed_lab_lacks_names_its_nodes(monkeypatch, tmp_path):
    monkeypatch.setenv("PROTOLAB_STATE_DIR", str(tmp_path))
    (tmp_path / "lab.json").write_text(json.dumps({**STATE, "pid": os.getpid()}))  # a live keeper: this process
    monkeypatch.setattr(keeper.subprocess, "call", lambda argv: pytest.fail(f"ran {argv}"))
    with pytest.raises(LabError, match=r"^h9: not a node of the deployed lab t \(its nodes: h1, r1\)$"):
        keeper.exec_cmd("h9", ["true"])


def test_links_ops_change_what_is_in_force_and_leave_the_configured_alone(monkeypatch, tmp_path):
    """The ops a run over several hosts drives a keeper's links with: replace, step (only the fields given), a
    cable pulled and plugged, restore back to the configured; `impair` is the op that changes the configured."""
    k = _keeper(monkeypatch, tmp_path)
    assert k.handle({"op": "impair", "link": ["r1", "r2"], "direction": "forward", "set": {"delay": "20ms"}})["ok"]
    configured = dict(k.lab.links.configured)
    a = k.handle({"op": "links", "method": "replace", "link": ["r1", "r2"],
                  "impairment": {"delay": "5ms", "loss": 0.01}})  # fmt: skip
    assert a["ok"], a
    assert a["current"] == [{"from": "r1", "to": "r2", "at": "sender", "impairment": {"delay": "5ms", "loss": 0.01}}]
    a = k.handle({"op": "links", "method": "step", "link": ["r1", "r2"], "direction": "forward",
                  "change": {"delay": "50ms"}})  # fmt: skip
    assert a["current"][0]["impairment"] == {"delay": "50ms", "loss": 0.01}  # the loss stays
    assert k.handle({"op": "links", "method": "set_cable", "link": ["r2", "r1"], "state": "down"})["cut"] == [
        ["r1", "r2"]]  # fmt: skip
    assert k.lab.links.configured == configured  # none of that is the spec's
    assert k.handle({"op": "links", "method": "restore"}) == {"ok": True, "failures": []}
    assert k.lab.links.current == configured and not k.lab.links.cut
    assert k.lab.links.backend.calls[-1] == ("r1-x", "r2-y", 0.02)
    bad = k.handle({"op": "links", "method": "set_cable", "link": ["r1", "r2"], "state": "sideways"})
    assert bad == {"ok": False, "error": "links set_cable: state 'sideways', want up or down"}
    assert "want replace, step" in k.handle({"op": "links", "method": "shake"})["error"]


def test_sh_runs_in_a_node_of_the_lab_and_names_the_nodes_otherwise(monkeypatch, tmp_path):
    k = _keeper(monkeypatch, tmp_path)
    assert k.handle({"op": "sh", "node": "h3", "script": "sysctl -n net.ipv4.tcp_sack"}) == {"ok": True,
                                                                                          "output": "1\n"}  # fmt: skip
    assert k.lab.shell == [("h3", "sysctl -n net.ipv4.tcp_sack")]
    assert k.handle({"op": "sh", "node": "h9", "script": "true"})["error"].startswith("sh: no node 'h9' in this lab")
    st = k.state()
    assert st["applied"] == [] and st["shaped_interfaces"] == [] and st["receive_cpu"] == {"mode": "node"}


def test_nic_sync_brings_the_keeper_s_nic_filters_up_to_the_joins(monkeypatch, tmp_path):
    """A dis or converter runner over testbed hosts asks every keeper, as Lab.sync_nic_filters does on one machine."""
    k = _keeper(monkeypatch, tmp_path)
    assert k.handle({"op": "nic_sync"}) == {"ok": True, "joined": {"h1:h1-eth0": ["01:00:5e:01:02:03"]}}
    assert k.lab.synced == 1


# -- await_ready: real processes announcing READY in their logs --------------------------------------------
def _spawn(tmp_path, name: str, script: str):
    log = tmp_path / f"{name}.log"
    return keeper.spawn_logged(["sh", "-c", script], log), log


def test_await_ready_waits_for_every_log_and_echoes_new_lines(tmp_path):
    procs = {"a": _spawn(tmp_path, "a", "echo one; sleep 0.3; echo READY; sleep 5"),
             "b": _spawn(tmp_path, "b", "echo two; echo READY; sleep 5")}  # fmt: skip
    seen: list[tuple[str, str]] = []
    try:
        keeper.await_ready(procs, timeout=20, echo=lambda n, line: seen.append((n, line)))
    finally:
        for p, _ in procs.values():
            p.kill()
    assert ("a", "one") in seen and ("b", "two") in seen and ("a", "READY") in seen
    assert len(seen) == len(set(seen))  # each line once


def test_await_ready_names_the_process_that_exited_first(tmp_path):
    procs = {"ok": _spawn(tmp_path, "ok", "sleep 5"), "bad": _spawn(tmp_path, "bad", "echo broken here; exit 3")}
    try:
        with pytest.raises(keeper.NotReadyError) as e:
            keeper.await_ready(procs, timeout=20)
    finally:
        procs["ok"][0].kill()
    assert (e.value.name, e.value.returncode, e.value.lines) == ("bad", 3, ["broken here"])


def test_await_ready_times_out_without_stopping_anything(tmp_path):
    proc, log = _spawn(tmp_path, "slow", "sleep 5")
    try:
        with pytest.raises(keeper.NotReadyError) as e:
            keeper.await_ready({"slow": (proc, log)}, timeout=0.5)
        assert e.value.returncode is None and "slow not ready after 0.5 s" in str(e.value) and proc.poll() is None
    finally:
        proc.kill()
