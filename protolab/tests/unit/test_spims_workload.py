"""The spims workload: a SPIMS text -> protolab-spims jobs -> the paper's per-run statistics (a fake lab at the
exec boundary; the real agent runs in the integration tests)."""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from protolab.workloads.spims import SpimsTask
from protolab.workloads.spims_runner import SpimsRunner, agent_job, dist_json, run_values, sender_stats


def _task(spec: str, **kw: Any) -> SpimsTask:
    return SpimsTask(kind="spims", name="x", duration="60s", spec=spec, initiator="h1", responder="h2", **kw)


def test_a_run_is_count_samples_and_its_value_their_mean():
    t = _task("3 rr 32*2,")
    job = t.jobs()[0]
    assert agent_job(job, t, "10.0.1.2:7100", 5, 60)["iterations"] == 6  # 3 runs x 2 exchanges, one process
    values = run_values(job, {"samples_seconds": [1.0, 3.0, 2.0, 2.0, 5.0, 7.0]})
    assert values == [2.0, 2.0, 6.0]


def test_bulk_get_is_one_transfer_per_run_and_its_value_the_receiver_throughput():
    t = _task("2 bulk_get 1024*1000,")
    job = t.jobs()[0]
    spec = agent_job(job, t, "10.0.1.2:7100", 1, 60)
    assert (spec["procedure"], spec["iterations"], spec["count"], spec["size"]) == (
        "bulk_get", 2, 1000, {"dist": "constant", "value": 1024.0})  # fmt: skip
    assert run_values(job, {"samples_seconds": [0.5, 0.25], "bulk": {"transfer_bytes": 1024000}}) == [
        2048000.0, 4096000.0]  # fmt: skip


def test_distributions_and_delays_as_the_agent_reads_them():
    t = _task("1 rr uniform(1, 64),bivalue(32, 1024, 0.9)*10 exponential(0.002),")
    spec = agent_job(t.jobs()[0], t, "[fd00:10:0:1::2]:7100", 1, 60)
    assert spec["size"] == {"dist": "uniform", "min": 1.0, "max": 64.0}
    assert spec["response_size"] == {"dist": "bivalue", "value": 32.0, "value2": 1024.0, "p": 0.9}
    assert spec["delay"] == {"dist": "exponential", "mean": "0.002s"}
    assert dist_json(t.jobs()[0].size_bytes, seconds=True) == {"dist": "uniform", "min": "1s", "max": "64s"}


def test_columns_name_each_statement_when_there_are_several():
    one = _task("10 rr 32*100,")
    assert "x_response_mean_seconds" in one.columns() and "x_response_p99_seconds" in one.columns()
    two = _task("10 parallel: 3 bulk_get 1024*1000, 5 conn_disc 0*100")
    cols = two.columns()
    assert "x_s1_aggregate_throughput_mean_bytes_per_second" in cols and "x_s2_connect_nsd_ratio" in cols
    assert not any(c.startswith("x_response") for c in cols)
    # Diagram 2's N = 1 is a point of the aggregate's curve too; a lone bulk_get has no aggregate
    assert "x_aggregate_throughput_mean_bytes_per_second" in _task("10 parallel: 1 bulk_get 1024*1000,").columns()
    assert "x_aggregate_throughput_mean_bytes_per_second" not in _task("10 bulk_get 1024*1000,").columns()


@pytest.mark.parametrize(
    "kw, says",
    [
        ({"transport": "ftam"}, "registered: tcp, tls, udp, quic, mptcp, sctp"),
        ({"spec": "10 rr 32*100 uniform(1,2) constant(0.1),"}, "second timing"),
        ({"spec": "10 bulk_get 1024*10 < file a,"}, "a path in the node's filesystem from /"),
        ({"spec": "10 conn_disc 0*10 < file /a,"}, "from and to memory only"),
        ({"spec": "10 rr 32*10 > virtual memory,"}, "from and to memory only"),
        ({"spec": "10 bulk_get 1024*"}, "line 1, column 18: expected a number of data units"),
        ({"spec": "10 from h1 to h1 rr 32*10,"}, "same host"),
        ({"initiator": None}, "no FROM/TO"),
    ],
)
def test_bad_tasks_are_refused_saying_why(kw, says):
    args = {"kind": "spims", "name": "x", "duration": "60s", "spec": "10 rr 32*100,", "initiator": "h1",
            "responder": "h2"} | kw  # fmt: skip
    with pytest.raises(ValidationError) as err:
        SpimsTask(**args)
    assert says in str(err.value), str(err.value)


class FakeLab:
    """Answers `protolab-spims run` with a canned result per job file; records every command."""

    def __init__(self, results: dict[str, dict[str, Any]]) -> None:
        import os
        from types import SimpleNamespace

        self.results, self.commands = results, []
        # the hosts' containers: this process's cgroup stands in for both (its CPU is readable here)
        self.nodes = {h: SimpleNamespace(pid=os.getpid()) for h in ("h1", "h2")}

    def ip(self, node: str, intf: int = 0, family: int = 4) -> str:
        return "10.0.1.2" if family == 4 else "fd00:10:0:1::2"

    def exec(self, node: str, cmd: list[str], timeout: float | None = None) -> tuple[int, str, str]:
        self.commands.append((node, cmd))
        text = " ".join(cmd)
        m = re.search(r"--job /tmp/spims-x-(s\d+\.p\d+\.r\d+)\.json", text)
        if m:
            return 0, json.dumps(self.results[m.group(1)]) + "\n", ""
        return 0, "", ""


def _result(samples: list[float], **kw: Any) -> dict[str, Any]:
    return {"samples_seconds": samples, "seconds": {"p99": max(samples)}, "timeouts": 0, "late": 0} | kw


def test_a_background_statement_measures_its_first_part_and_reports_the_load():
    t = _task("2 priority background: rr 32*2 | 2 bulk_get 1024*10,", background_lead="0s")
    lab = FakeLab({
        "s1.p1.r1": _result([0.001, 0.003, 0.002, 0.002], late=1),
        "s1.p2.r1": {"received_bytes": 4000, "elapsed_seconds": 2.0, "start_unix_ns": 10**18},
        "s1.p2.r2": {"received_bytes": 6000, "elapsed_seconds": 2.0, "start_unix_ns": 10**18},
    })  # fmt: skip
    r = SpimsRunner(t, lab)
    r.prepare()
    r.run()
    out = r.result()
    assert out["x_response_mean_seconds"] == pytest.approx(0.002) and out["x_response_sd_seconds"] == 0
    assert out["x_response_ci95_seconds"] == 0
    assert out["x_runs_total"] == 2 and out["x_late_total"] == 1
    assert out["x_background_throughput_bytes_per_second"] == pytest.approx(5000, rel=1e-3)
    assert set(out) == set(t.columns())
    # each host's container CPU over the statements, read from its cgroup at their start and end
    assert {k for k in out if k.endswith("_cpu_ratio")} == {"x_h1_cpu_ratio", "x_h2_cpu_ratio"}
    assert all(out[k] is not None and out[k] >= 0 for k in ("x_h1_cpu_ratio", "x_h2_cpu_ratio"))
    nice = [cmd for _n, cmd in lab.commands if "nice" in " ".join(cmd)]
    assert nice and all("s1.p2" in " ".join(c) or "serve" in c for c in nice), "only the load runs at low priority"
    assert any("pkill" in c and "-INT" in c for _n, c in lab.commands), "the load is stopped after the measurement"


def test_parallel_bulk_gets_aggregate_over_the_span_they_ran():
    t = _task("2 parallel: 2 bulk_get 1000*1,")
    start = 1_700_000_000_000_000_000
    lab = FakeLab({  # the second started 1 ms later; 2000 bytes each over the 4 ms from first start to last end
        "s1.p1.r1": _result([0.001, 0.002], bulk={"transfer_bytes": 1000}, start_unix_ns=start,
                            elapsed_seconds=0.003, received_bytes=2000),
        "s1.p1.r2": _result([0.002, 0.002], bulk={"transfer_bytes": 1000}, start_unix_ns=start + 1_000_000,
                            elapsed_seconds=0.003, received_bytes=2000),
    })  # fmt: skip
    r = SpimsRunner(t, lab)
    r.prepare()
    r.run()
    out = r.result()
    assert out["x_aggregate_throughput_mean_bytes_per_second"] == pytest.approx(4000 / 0.004, rel=1e-4)
    assert out["x_throughput_mean_bytes_per_second"] == pytest.approx(statistics.fmean([1e6, 5e5, 5e5, 5e5]))
    # Student's t over 4 runs: 3.182 * sd / 2
    assert out["x_throughput_ci95_bytes_per_second"] == pytest.approx(
        3.1824 * statistics.stdev([1e6, 5e5, 5e5, 5e5]) / 2, rel=1e-3
    )
    assert out["x_throughput_max_bytes_per_second"] == pytest.approx(1e6)
    assert out["x_late_total"] == 0, "a transfer is slow, not late"
    assert set(out) == set(t.columns())


def test_the_measured_part_carries_the_dscp_and_every_initiator_the_knobs():
    t = _task("2 background: rr 32*2 | 1 bulk_get 1024*10,", dscp=46, options={"congestion": "cubic"})
    measured, load = t.jobs()
    assert agent_job(measured, t, "a:1", 1, 60)["options"] == {"congestion": "cubic", "dscp": "46"}
    assert agent_job(load, t, "a:1", 1, 60)["options"] == {"congestion": "cubic"}
    assert "options" not in agent_job(measured, _task("2 rr 32*2,"), "a:1", 1, 60)


def test_failover_follows_timeouts_to_the_first_reply():
    from protolab.workloads.request_response_runner import failover

    assert failover([], [], 5.0, []) is None
    assert failover([], [], 5.0, [10.0]) == 0.0  # nothing in flight was late: answered within the bound
    assert failover([(9.9, 0.3)], [], 5.0, [10.0]) == pytest.approx(0.2)  # the exchange in flight came late
    # in flight at the edge: timed out at 14.8; the next one (started then) answered 1.2 s later
    assert failover([(14.8, 1.2)], [9.8], 5.0, [10.0]) == pytest.approx(6.0)
    assert failover([(14.8, 1.2)], [9.8], 5.0, [10.0, 30.0]) == pytest.approx(6.0)  # the worst edge
    assert failover([], [9.8, 14.801], 5.0, [10.0]) == pytest.approx(9.801)  # two timeouts in a row


class FakeDualLab(FakeLab):
    """Two interfaces per host (10.0.1.x on eth0, 10.0.2.x on eth1); one canned request_response result."""

    def data_interfaces(self, node: str) -> list[str]:
        return [f"{node}-eth0", f"{node}-eth1"]

    def ip(self, node: str, intf: int = 0, family: int = 4) -> str:
        return f"10.0.{intf + 1}.{node[1:]}"

    def exec(self, node: str, cmd: list[str], timeout: float | None = None) -> tuple[int, str, str]:
        self.commands.append((node, cmd))
        if "spims-rr.json" in " ".join(cmd):
            return 0, json.dumps(self.results["rr"]) + "\n", ""
        return 0, "", ""


def test_mptcp_endpoints_are_set_for_the_phase_and_put_back():
    from protolab.workloads.request_response import RequestResponseTask
    from protolab.workloads.request_response_runner import RequestResponseRunner

    t = RequestResponseTask(kind="request_response", name="rr", client="h1", server="h2", transport="mptcp",
                            mptcp="backup", rto_min="10ms", duration="5s")  # fmt: skip
    lab = FakeDualLab({"rr": {"completed": 100, "late": 2, "timeouts": 0, "seconds": {"mean": 0.001, "max": 0.06}}})
    r = RequestResponseRunner(t, lab)
    r.prepare()
    job = r.job()
    assert job["target"] == "10.0.1.2:7200" and job["time_limit"] == "5s" and "target2" not in job
    r.run()
    text = [(n, " ".join(c)) for n, c in lab.commands]
    # addresses and interfaces as arguments of `ip`, through no shell
    assert ("h2", ["ip", "mptcp", "endpoint", "add", "10.0.2.2", "dev", "h2-eth1", "signal"]) in lab.commands
    assert ("h1", ["ip", "mptcp", "endpoint", "add", "10.0.2.1", "dev", "h1-eth1", "subflow", "backup"]) in lab.commands
    last = [c for n, c in text if "flush" in c][-2:]
    assert all("limits set subflows 0" in c for c in last), "endpoints and limits put back after the run"
    out = r.result()
    assert out["rr_late_ratio"] == 0.02 and out["rr_rtt_max_seconds"] == 0.06
    assert set(out) == set(t.columns())


def test_redundant_sends_on_both_paths():
    from protolab.workloads.request_response import RequestResponseTask
    from protolab.workloads.request_response_runner import RequestResponseRunner

    t = RequestResponseTask(kind="request_response", name="rr", client="h1", server="h2", redundant=True,
                            duration="5s")  # fmt: skip
    r = RequestResponseRunner(t, FakeDualLab({}))
    job = r.job()
    assert (job["source"], job["source2"], job["target2"]) == ("10.0.1.1", "10.0.2.1", "10.0.2.2:7200")
    with pytest.raises(ValidationError, match="needs transport: mptcp"):
        RequestResponseTask(kind="request_response", name="rr", client="h1", server="h2", mptcp="fullmesh",
                            duration="5s")  # fmt: skip


def test_file_and_virtual_memory_go_to_the_agent():
    t = _task('2 bulk_get 1024*10 < file "/srv/data" > virtual memory,')
    job = agent_job(t.jobs()[0], t, "a:1", 1, 60)
    assert job["source_data"] == {"access": "file", "path": "/srv/data"}
    assert job["destination_data"] == {"access": "virtual_memory"}
    assert "source_data" not in agent_job(_task("2 rr 32*2,").jobs()[0], _task("2 rr 32*2,"), "a:1", 1, 60)


FIXTURES = Path(__file__).parent / "fixtures" / "spims"


def test_bulk_get_reports_the_sender_beside_the_receiver_from_a_captured_agent_result():
    # `protolab-spims run` of 3 bulk_get 1024*100 over TCP on loopback (fixtures/spims/README.md: how)
    captured = json.loads((FIXTURES / "bulk_get-tcp.json").read_text())
    sender, receiver = captured["bulk"]["sender_bytes_per_second"], captured["bulk"]["receiver_bytes_per_second"]
    t = _task("3 bulk_get 1024*100,")
    r = SpimsRunner(t, FakeLab({"s1.p1.r1": captured}))
    r.prepare()
    r.run()
    out = r.result()
    assert set(out) == set(t.columns())
    for s in ("mean", "sd", "min", "max"):
        assert out[f"x_sender_throughput_{s}_bytes_per_second"] == pytest.approx(sender[s])
        assert out[f"x_throughput_{s}_bytes_per_second"] == pytest.approx(receiver[s], rel=1e-6)
    assert out["x_sender_throughput_nsd_ratio"] == pytest.approx(sender["normalized_sd"])
    assert out["x_sender_throughput_mean_bytes_per_second"] != out["x_throughput_mean_bytes_per_second"]


def test_parallel_senders_are_pooled_as_if_their_runs_were_one_list():
    a, b = [3.0e6, 5.0e6, 4.0e6], [1.0e6, 2.0e6]

    def summary(xs: list[float]) -> dict[str, Any]:
        sd = statistics.stdev(xs) if len(xs) > 1 else None  # the agent's sd of one value is null
        return {"count": len(xs), "mean": statistics.fmean(xs), "sd": sd, "min": min(xs), "max": max(xs)}

    got = sender_stats([{"bulk": {"sender_bytes_per_second": summary(a)}},
                        {"bulk": {"sender_bytes_per_second": summary(b)}}, {"bulk": {}}])  # fmt: skip
    assert got["mean"] == pytest.approx(statistics.fmean(a + b))
    assert got["sd"] == pytest.approx(statistics.stdev(a + b))
    assert (got["min"], got["max"]) == (1.0e6, 5.0e6)
    assert got["nsd"] == pytest.approx(statistics.stdev(a + b) / statistics.fmean(a + b))
    one = sender_stats([{"bulk": {"sender_bytes_per_second": summary([2.0e6])}}])
    assert (one["mean"], one["sd"], one["nsd"]) == (2.0e6, 0.0, 0.0)
    assert sender_stats([{}])["mean"] is None


def test_cores_are_cpu_seconds_over_the_wall_interval():
    from protolab.workloads.spims_runner import cores

    assert cores(1.0, 2.5, 3.0) == pytest.approx(0.5)
    assert cores(None, 2.5, 3.0) is None and cores(1.0, None, 3.0) is None and cores(1.0, 2.0, 0.0) is None
