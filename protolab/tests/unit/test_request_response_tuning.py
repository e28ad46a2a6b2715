"""A request_response task's TCP tuning (rto_min, sysctls, socket knobs) is sent to the agent and recorded."""

from __future__ import annotations

from protolab import spec
from protolab.workloads.request_response import RequestResponseTask
from protolab.workloads.request_response_runner import RequestResponseRunner

from .test_spims_workload import FakeDualLab


def test_the_tuning_is_recorded_as_asked_and_as_in_force():
    t = RequestResponseTask(kind="request_response", name="rr", client="h1", server="h2", rto_min="10ms",
                            options={"user_timeout": "15s"}, sysctls={"net.ipv4.tcp_thin_linear_timeouts": "1"},
                            duration="5s")  # fmt: skip
    in_force = {"user_timeout_ms": "15000", "nodelay": "true"}  # the agent's getsockopt
    result = {"completed": 10, "seconds": {"mean": 0.001, "max": 0.002},
              "paths": [{"target": "10.0.1.2:7200", "tuning": in_force}]}  # fmt: skip
    r = RequestResponseRunner(t, FakeDualLab({"rr": result}))
    r.sysctls_set = {h: {"net.ipv4.tcp_thin_linear_timeouts": "1"} for h in ("h1", "h2")}  # read back before prepare
    r.prepare()
    assert r.job()["options"] == {"user_timeout": "15s"}
    r.run()
    tuning = r.raw()["setup"]["tuning"]
    assert tuning == {
        "rto_min": "10ms",
        "sysctls": r.sysctls_set,
        "options": {"user_timeout": "15s"},
        "socket": [in_force],
    }


def test_the_defaults_are_recorded_too():
    t = RequestResponseTask(kind="request_response", name="rr", client="h1", server="h2", duration="5s")
    r = RequestResponseRunner(t, FakeDualLab({"rr": {"completed": 1, "paths": [{"tuning": {}}]}}))
    r.prepare()
    assert "options" not in r.job()
    r.run()
    assert r.raw()["setup"]["tuning"] == {"rto_min": None, "sysctls": {}, "options": {}, "socket": [{}]}


def test_full_has_a_tuned_tcp_and_quick_does_not():
    mhf = spec.EXPERIMENTS_DIR / "multihomed-failover.yaml"
    tuned = [p for p in spec.load(mhf, "full").points if spec._short(p.values["variant"]) == "tcp-tuned"]
    assert len(tuned) == 12  # 6 conditions x 2 sizes
    (task,) = tuned[0].experiment.phases[0].tasks
    assert task.transport == "tcp" and task.rto_min == 0.01 and not task.two_paths()
    assert task.options == {"user_timeout": "15s"} and task.sysctls == {"net.ipv4.tcp_thin_linear_timeouts": "1"}
    assert "tcp-tuned" not in {spec._short(p.values["variant"]) for p in spec.load(mhf, "quick").points}
