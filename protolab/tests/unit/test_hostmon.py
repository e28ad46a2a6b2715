"""Monitoring over several testbed hosts without a lab: each host's file_sd groups from its keeper's nodes, the
run's federation targets, and the monitor image's configuration that reads them (federate job, subdirectory)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import yaml

from protolab import naming
from protolab.lab.testbed import TestbedLab
from protolab.testbed import federation, placement
from protolab.topo import Topology

CONFIG = Path(__file__).resolve().parents[3] / "images" / "monitor" / "prometheus.yml"


def host(name: str, underlay: str, **kw) -> placement.TestbedHost:
    return placement.TestbedHost(name=name, underlay=underlay, netns=f"plab-emu-{name}", **kw)


def test_a_hosts_targets_are_its_nodes_at_their_management_addresses():
    nodes = [{"name": "r2", "role": "router", "mgmt_ip": "172.20.0.3"}, {"name": "h3", "mgmt_ip": "172.20.0.4"}]
    groups = federation.node_groups(nodes, "run-1", {"h3": [9300], "*": [9400]})
    assert groups == [
        {"targets": [f"172.20.0.3:{naming.AGENT_PORT}", "172.20.0.3:9400"],
         "labels": {"node": "r2", "role": "router", "run": "run-1"}},
        {"targets": [f"172.20.0.4:{naming.AGENT_PORT}", "172.20.0.4:9300", "172.20.0.4:9400"],
         "labels": {"node": "h3", "role": "host", "run": "run-1"}},
    ]  # fmt: skip


def test_the_runs_prometheus_federates_each_hosts_in_a_subdirectory(tmp_path):
    proms = [federation.HostPrometheus(host("a", "10.255.98.1"), "plab-prometheus-a", tmp_path / "a"),
             federation.HostPrometheus(host("b", "10.255.98.2", prometheus_port=9290), "plab-prometheus-b",
                                    tmp_path / "b")]  # fmt: skip
    path = federation.write_federation(proms, tmp_path)
    assert path == tmp_path / "targets" / "federate" / "hosts.json"
    assert json.loads(path.read_text()) == [
        {"targets": ["10.255.98.1:9190"], "labels": {"testbed_host": "a"}},
        {"targets": ["10.255.98.2:9290"], "labels": {"testbed_host": "b"}},
    ]
    federation.write_federation([], tmp_path)  # the run's end: nothing federated
    assert json.loads(path.read_text()) == []


def test_the_monitor_configuration_federates_the_agents_series_with_their_labels():
    cfg = yaml.safe_load(CONFIG.read_text())
    jobs = {j["job_name"]: j for j in cfg["scrape_configs"]}
    fed = jobs["federate"]
    assert fed["honor_labels"] is True and fed["metrics_path"] == "/federate"
    assert fed["params"]["match[]"] == [f'{{job="{federation.FEDERATED_JOB}"}}']
    (files,) = [c["files"] for c in fed["file_sd_configs"]]
    assert files == ["/etc/prometheus/targets/federate/*.json"]
    # the agent job's glob reads the targets folder itself, never its federate subdirectory (a * stops at /)
    (agent,) = [c["files"] for c in jobs[federation.FEDERATED_JOB]["file_sd_configs"]]
    assert agent == ["/etc/prometheus/targets/*.json"]


def test_a_hosts_targets_file_is_replaced_whole(tmp_path):
    p = federation.HostPrometheus(host("a", "10.255.98.1"), "plab-prometheus-a", tmp_path)
    p.write_targets([{"targets": ["172.20.0.3:9100"], "labels": {"node": "h1"}}])
    assert json.loads((tmp_path / "lab.json").read_text())[0]["labels"] == {"node": "h1"}
    assert not list(tmp_path.glob("*.tmp"))


def test_a_one_way_delay_between_two_hosts_carries_both_clocks_uncertainty():
    lab = TestbedLab(Topology("empty"))
    lab.parts = SimpleNamespace(placement=SimpleNamespace(node_host={"h1": "a", "h2": "a", "h3": "b"}),
                               clocks={"a": {"offset_seconds": 1e-6, "uncertainty_seconds": 2e-4},
                                       "b": {"offset_seconds": -3e-6, "uncertainty_seconds": 3e-4}})  # fmt: skip
    assert lab.clock_note("h1", "h2") is None  # one host, one clock
    note = lab.clock_note("h1", "h3")
    assert note["hosts"] == ["a", "b"] and abs(note["uncertainty_seconds"] - 5e-4) < 1e-12
    lab.parts.clocks["b"] = {"error": "no clock reading"}
    assert lab.clock_note("h3", "h1") == {"hosts": ["b", "a"], "uncertainty_seconds": None}


def test_a_remote_hosts_targets_go_over_its_session(monkeypatch):
    import shlex
    import subprocess

    far = placement.TestbedHost(name="far", address="192.0.2.11", underlay="192.0.2.11")
    p = federation.HostPrometheus(far, "plab-prometheus-far", federation.REMOTE_ROOT / "far")
    assert p.remote and p.address == "192.0.2.11:9190"
    calls = []
    monkeypatch.setattr(subprocess, "run", lambda argv, **kw: calls.append((argv, kw)) or SimpleNamespace(returncode=0))
    p.write_targets([{"targets": ["172.20.0.3:9100"], "labels": {"node": "h3"}}])
    ((argv, kw),) = calls
    path = federation.REMOTE_ROOT / "far" / "lab.json"
    assert argv[0] == "ssh" and shlex.split(argv[-1]) == ["sh", "-c", federation.WRITE_SCRIPT, "sh", str(path)]
    assert json.loads(kw["input"])[0]["labels"] == {"node": "h3"}


def test_the_report_shows_the_hosts_the_placement_and_the_cross_host_delays():
    from protolab.results.report_html import _testbed

    assert _testbed({}) is None  # a run on one machine has no such section
    manifest = {
        "testbed": {"emulated": ["a", "b"], "prometheus": {"a": "10.255.98.2:9190"},
                    "hosts": [{"name": "a", "engine": "unix:///run/a.sock", "underlay": "10.255.98.2"}],
                    "cross_host_tasks": {"wan: h1 -> h3": {"hosts": ["a", "b"], "uncertainty_seconds": 0.0025},
                                         "x: h1 -> h3": {"hosts": ["a", "b"], "uncertainty_seconds": None}}},
        "deployments": [{"testbed": {
            "placement": {"nodes": {"h1": "a", "r1": "a", "h3": "b"}},
            "underlay": [{"link": ["r1", "r2"], "from": "a", "to": "b", "rtt_mean_seconds": 6.3e-5,
                          "rtt_sd_seconds": 9e-6}],
            "clocks": {"a": {"offset_seconds": 3.4e-4, "uncertainty_seconds": 1.5e-3}, "b": {"error": "no reading"}}}}],
    }  # fmt: skip
    tb = _testbed(manifest)
    assert tb["hosts"] == [["a", "unix:///run/a.sock", "10.255.98.2", "10.255.98.2:9190"]]
    (lab,) = tb["labs"]
    assert lab["placement"] == ["a: h1, r1", "b: h3"]
    assert lab["stitches"] == ["r1-r2: a -> b, underlay round trip 0.063 ms (sd 9 us)"]
    assert lab["clocks"] == ["a: offset +0.340 ms, within 1.500 ms", "b: no reading"]
    assert tb["cross"] == ["wan: h1 -> h3: a and b, one-way delays +-2.500 ms",
                           "x: h1 -> h3: a and b, clock not measured: one-way delays unbounded"]  # fmt: skip
