"""The benchmarks' own logic: reading `go test -bench` output and the summary table's figures, targets and
comparison with the committed result. (That each benchmark runs is `make bench-smoke`'s job.)"""

from __future__ import annotations

import datetime as dt
import json

import pydantic
import pytest

from bench import gobench, summary

GO_OUT = """goos: linux
goarch: amd64
pkg: protolab/agents/dishost
cpu: AMD EPYC 7B13
BenchmarkGenerate-2         	 1000000	      1043 ns/op
BenchmarkReceiveLoopback-2  	  500000	      4484 ns/op	    223012 PDUs/s	      12 B/op	       1 allocs/op
PASS
ok  	protolab/agents/dishost	9.1s
pkg: protolab/agents/syntax/asn1c
BenchmarkEntityState 	       1	     55012 ns/op	       144.0 bytes/pdu	         1.500 ber/raw-encode+decode
"""


def test_go_bench_lines_are_read_with_their_package_and_metrics():
    rows = gobench.parse(GO_OUT)
    assert [r["name"] for r in rows] == ["BenchmarkGenerate", "BenchmarkReceiveLoopback", "BenchmarkEntityState"]
    recv = rows[1]
    assert recv["package"] == "protolab/agents/dishost" and recv["cpu"] == 2 and recv["iterations"] == 500000
    assert recv["metrics"] == {"ns/op": 4484.0, "PDUs/s": 223012.0, "B/op": 12.0, "allocs/op": 1.0}
    assert rows[2]["package"] == "protolab/agents/syntax/asn1c" and rows[2]["cpu"] == 1
    assert rows[2]["metrics"]["ber/raw-encode+decode"] == 1.5


def test_figures_are_held_against_their_targets_in_the_right_direction():
    lk = {"throughput": [{"payload_bytes": 64, "with_linkem_pps": 180.0, "without_linkem_pps": 200.0},
                         {"payload_bytes": 1500, "with_linkem_pps": 95.0, "without_linkem_pps": 100.0}],
          "added_p99_us": 111.8}  # fmt: skip
    figs = {f.key: f for f in summary.impair({"linkem": lk})}
    assert figs["linkem.64B.pps_ratio"].value == 0.9 and figs["linkem.64B.pps_ratio"].met is True
    assert figs["linkem.1500B.pps_ratio"].met is True
    assert figs["linkem.added_p99_us"].met is False  # lower is better: 111.8 us against < 100 us
    placements = {"same_core": {"server_cpu": 0, "client_cpu": 0}, "across_cores": {"server_cpu": 0, "client_cpu": 1}}
    pinned = {"placements": placements, "same_core": {"ratio": 1.1}, "across_cores": {"ratio": 1.3}}
    rr = {"bulk_get": [{"unit": "1KiB", "ratio": 0.58}], "request_response": pinned}
    figs = {f.key: f for f in summary.spims(rr)}
    assert figs["spims.bulk_get.1KiB.ratio"].met is False
    assert figs["spims.request_response.same_core.p50_ratio"].met is True
    assert figs["spims.request_response.across_cores.p50_ratio"].met is False
    old = {"bulk_get": [], "request_response": {"ratio_to_pingpong_2proc": 1.1}}  # a result from before the pinning
    assert [(f.key, f.met) for f in summary.spims(old)] == [("spims.request_response.p50_ratio", True)]
    assert list(summary.spims({"bulk_get": [], "request_response": {"skipped": "no Go"}})) == []
    assert summary.Figure("x", 3.0, "s").met is None  # no target: neither met nor missed


def test_the_table_compares_with_the_committed_result_and_names_what_did_not_run():
    figs = [
        summary.Figure("deploy.total_s_per_node", 0.2, "s/node", 0.15),
        summary.Figure("multihost.stitch_ms", 40, "ms"),
    ]
    prev = {"figures": {"deploy.total_s_per_node": 0.25}, "at": "2026-11-01T00:00:00", "commit": "abc"}
    text = summary.table(figs, prev, ["spims"])
    row = next(line for line in text.splitlines() if line.startswith("deploy.total_s_per_node"))
    assert "NOT MET" in row and "0.25" in row and "-20%" in row
    assert "spims: no result" in text and "commit abc" in text


def test_newest_result_of_each_benchmark_since_the_run_began(tmp_path):
    for name in ("deploy-20261128T100000Z", "deploy-20261128T120000Z", "deploy-floor-20261128T090000Z"):
        (tmp_path / f"{name}.json").write_text(json.dumps({"name": name}))
    (tmp_path / "notes.json").write_text("{}")
    got = summary.newest(tmp_path, dt.datetime(2026, 11, 28, 9, 30, tzinfo=dt.UTC))
    assert set(got) == {"deploy"}  # deploy-floor's is older than the run: not this run's
    assert got["deploy"][1]["name"] == "deploy-20261128T120000Z"


def test_machine_kind_is_a_safe_file_name():
    kind = summary.machine_kind({"cpu_count": 2, "cpu_model": "AMD EPYC 7B13 64-Core Processor"})
    assert kind == "2cpu-amd-epyc-7b13"
    assert summary.machine_kind({"cpu_model": "../../etc/passwd"}) == "0cpu-etc-passwd"


def test_a_lab_past_a_24_is_numbered_into_one_16_without_a_repeat():
    from bench import deploy

    t = deploy.switched_topology(512)
    ips = [lk.ip1 for lk in t.links]
    assert len(set(ips)) == 512 and ips[0] == "10.0.1.1/16" and ips[249] == "10.0.1.250/16"
    assert ips[250] == "10.0.2.1/16" and ips[511] == "10.0.3.12/16"
    assert deploy.switched_topology(64).links[0].ip1 == "10.0.1.1/24"  # a spec's size keeps the generator's
    with pytest.raises(pydantic.ValidationError, match="hosts"):
        deploy.switched_topology(deploy.MAX_HOSTS + 1)  # past the bridge's ports


def test_large_lab_figures_name_the_size_and_the_limit():
    r = {"labs": [{"hosts": 256, "deploy_seconds_per_node": 0.42, "teardown_seconds_per_node": 0.17,
                   "available_drop_mib_per_node": 6.2}],
         "nodes_limit": 1024, "limited_by": "the bridge's 1024 ports"}  # fmt: skip
    figs = {f.key: f for f in summary.large(r)}
    assert figs["large.256.deploy_s_per_node"].value == 0.42 and figs["large.256.mib_per_node"].value == 6.2
    assert figs["large.nodes_limit"].value == 1024 and "bridge" in figs["large.nodes_limit"].unit
