"""The shell scripts protolab runs on testbed hosts and in nodes are constants: every value they act on is an
argument ("$1", "$@"), never part of the script. Each is run here in a real `sh` with hostile arguments (shell
metacharacters, `$(...)`, spaces, a leading dash), and a canary file must stay untouched."""

from __future__ import annotations

import json
import shlex
import subprocess
from types import SimpleNamespace

import pytest

from protolab.lab import parts, rxcpu
from protolab.testbed import federation, placement, reach
from protolab.workloads import dis_runner, spims_agent, transfer_runner

HOSTILE = ["$(touch {canary})", "`touch {canary}`", "x; touch {canary}", "a b", "-rf", "x' ; touch {canary} '"]


def _sh(script: str, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(["sh", "-c", script, "sh", *args], input=stdin, capture_output=True, text=True, timeout=10)


@pytest.mark.parametrize("name", HOSTILE)
def test_the_targets_write_puts_stdin_in_the_named_file_and_runs_nothing(tmp_path, name):
    canary = tmp_path / "canary"
    target = tmp_path / name.format(canary=canary).replace("/", "_")
    p = _sh(federation.WRITE_SCRIPT, str(target), stdin='[{"targets": []}]')
    assert p.returncode == 0, p.stderr
    assert json.loads(target.read_text()) == [{"targets": []}] and not canary.exists()


def test_the_targets_write_over_ssh_is_one_quoted_word_that_splits_back(monkeypatch):
    far = placement.TestbedHost(name="far", address="192.0.2.11", underlay="192.0.2.11")
    calls = []
    monkeypatch.setattr(subprocess, "run", lambda argv, **kw: calls.append(argv) or SimpleNamespace(returncode=0))
    federation.HostPrometheus(far, "plab-prometheus-far", federation.REMOTE_ROOT / "far").write_targets([])
    ((argv,),) = [calls]
    assert argv[-2] == "--" and shlex.split(argv[-1])[:3] == ["sh", "-c", federation.WRITE_SCRIPT]


@pytest.mark.parametrize("name", HOSTILE)
def test_the_remote_clean_passes_its_directory_and_python_as_arguments(tmp_path, name):
    canary = tmp_path / "canary"
    d = tmp_path / name.format(canary=canary).replace("/", "_")
    d.mkdir()
    log = tmp_path / "argv.txt"
    fake_python = tmp_path / "py"  # stands for protolab's Python: records the arguments it was given
    fake_python.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {shlex.quote(str(log))}\n')
    fake_python.chmod(0o755)
    p = _sh(parts.CLEAN_REMOTE_SCRIPT, str(d), str(fake_python), str(tmp_path / "root"))
    assert p.returncode == 0, p.stderr
    assert log.read_text().splitlines() == ["-m", "protolab.lab.parts", "--clean-part", str(d)]
    assert not canary.exists()


def test_the_remote_clean_reports_a_failure_instead_of_swallowing_it(tmp_path):
    (tmp_path / "d").mkdir()
    assert _sh(parts.CLEAN_REMOTE_SCRIPT, str(tmp_path / "d"), "/bin/false", str(tmp_path)).returncode != 0
    assert _sh(parts.CLEAN_REMOTE_SCRIPT, str(tmp_path / "gone"), "/bin/false", str(tmp_path)).returncode == 0


@pytest.mark.parametrize("marker", ["ok-s1.p1.r1", "x$(id)`id`", "a;b|c&d"])
def test_the_initiator_gets_its_job_and_path_as_arguments(tmp_path, marker):
    canary = tmp_path / "canary"
    job = {"procedure": "rr", "note": f"$(touch {canary}) `touch {canary}` 'q' \"q\""}
    seen = {}

    def exec_(host, cmd, timeout=None):
        # the container's /tmp stands in as tmp_path, the agent as `cat` of its job file
        script, (job_text, path, *rest) = cmd[2], cmd[4:]
        local = path.replace("/tmp/", f"{tmp_path}/", 1)
        assert rest == [spims_agent.BIN, "run", "--job", path]
        p = _sh(script, job_text, local, "cat", local)
        seen["out"] = p.stdout
        return p.returncode, p.stdout + "\n" + json.dumps({"ok": True}), p.stderr

    out = spims_agent.initiate(SimpleNamespace(exec=exec_), "h1", job, marker)
    assert out == (0, {"ok": True}) and json.loads(seen["out"]) == job and not canary.exists()


@pytest.mark.parametrize("marker", ["../../etc/x", "a b", ".hidden"])
def test_an_initiator_marker_that_is_no_file_name_is_refused(marker):
    with pytest.raises(spims_agent.WorkloadError, match="cannot name a file"):
        spims_agent.initiate(SimpleNamespace(exec=None), "h1", {}, marker)


def test_the_transfer_sampler_takes_its_stop_file_and_filter_as_arguments():
    calls = []
    lab = SimpleNamespace(exec=lambda host, cmd, timeout=None: calls.append(cmd) or (0, "", ""))
    s = transfer_runner._Sampler(lab, "h1", "( dport = :5201 )", "t-r", 3.2)
    s._run(s._thread._args[0])  # noqa: SLF001 (the argv the thread would run)
    (cmd,) = calls
    assert cmd[:3] == ["sh", "-c", transfer_runner.SAMPLER_SCRIPT]
    assert cmd[4:] == ["/tmp/protolab-xfer-t-r.stop", "4", "( dport = :5201 )", f"{transfer_runner.SAMPLE_SECONDS:g}"]
    with pytest.raises(transfer_runner.WorkloadError, match="cannot name a file"):
        transfer_runner._Sampler(lab, "h1", "", "../x", 1)


def test_the_sampler_script_stops_on_its_stop_file_and_runs_no_argument(tmp_path):
    canary = tmp_path / "canary"
    stop = tmp_path / f"$(touch {canary}).stop"
    # "2", as _Sampler passes int(limit) + 1: the limit counts whole seconds of `date +%s`, and with "1" a start
    # just before a second ticks over ends the loop before its first sample (it failed so once)
    p = _sh(transfer_runner.SAMPLER_SCRIPT.replace("ss -Htmin", ": "),
            str(stop), "2", f"; touch {canary}", "0.1")  # fmt: skip
    assert p.returncode == 0 and p.stdout.startswith("T ") and not canary.exists()


def test_interfaces_reach_the_sysfs_scripts_as_arguments_not_as_code():
    """RPS and threaded NAPI: the interfaces follow the constant script as words of their own."""
    assert "{" not in dis_runner.RPS_SCRIPT and '"$i"' in dis_runner.RPS_SCRIPT
    assert "{" not in rxcpu.THREADED_SCRIPT and '"$i"' in rxcpu.THREADED_SCRIPT
    calls = []
    monkey = pytest.MonkeyPatch()
    monkey.setattr(dis_runner, "sh", lambda argv, **kw: calls.append(argv))
    try:
        runner = SimpleNamespace(
            task=SimpleNamespace(cpu=1, receiver="h2"),
            lab=SimpleNamespace(data_interfaces=lambda n: ["h2-eth0", "x;id"], nodes={"h2": SimpleNamespace(pid=42)}),
        )
        dis_runner.DisRunner._steer_receive(runner)  # type: ignore[arg-type]
    finally:
        monkey.undo()
    assert calls == [["nsenter", "-t", "42", "-n", "unshare", "-m", "sh", "-c", dis_runner.RPS_SCRIPT, "sh", "2",
                      "h2-eth0", "x;id"]]  # fmt: skip


def test_a_remote_keeper_and_its_client_are_argv_the_remote_shell_splits_back(tmp_path):
    far = placement.TestbedHost(name="far", address="192.0.2.11", underlay="192.0.2.11", python="/opt/plab/bin/python")
    part = parts.Part(far, parts.Topology("t"), tmp_path)
    req = parts.keeper.Request(source="t@far", part={"note": "$(id); `id`"})
    argv = parts._keeper_cmd(part, req)
    words = shlex.split(argv[-1])
    assert argv[argv.index("--") - 1] == "root@192.0.2.11" and words[words.index("-m") - 1] == "/opt/plab/bin/python"
    assert json.loads(words[-1])["part"] == {"note": "$(id); `id`"}
    assert words[words.index("-c") + 1] == parts.SYSFS  # the one script; the rest are its arguments


def test_a_second_instance_scopes_its_keepers_state_and_tells_a_remote_keeper_its_id(monkeypatch, tmp_path):
    """Two instances side by side over SSH: each keeper there names containers as its own instance does, and the
    state folders on either end are the instance's own, so `clean` of one never reaches the other's."""
    far = placement.TestbedHost(name="far", address="192.0.2.11", underlay="192.0.2.11")
    req = parts.keeper.Request(source="t@far", part={})
    monkeypatch.delenv("PROTOLAB_INSTANCE", raising=False)
    part = parts.Part(far, parts.Topology("t"), tmp_path)
    assert "PROTOLAB_INSTANCE=" in shlex.split(parts._keeper_cmd(part, req)[-1])  # the default: "" said
    assert parts.state_root() == parts.STATE_ROOT and federation.remote_root() == federation.REMOTE_ROOT
    monkeypatch.setenv("PROTOLAB_INSTANCE", "3fa9c2")
    assert str(parts.state_root()) == "/run/protolab-hosts-3fa9c2"
    assert str(part.remote_dir) == "/run/protolab-keepers-3fa9c2/far"
    assert str(federation.remote_root()) == "/run/protolab-hostmon-3fa9c2"
    words = shlex.split(parts._keeper_cmd(part, req)[-1])
    assert "PROTOLAB_INSTANCE=3fa9c2" in words and "PROTOLAB_STATE_DIR=/run/protolab-keepers-3fa9c2/far" in words
    calls = []
    done = SimpleNamespace(returncode=0, stdout="", stderr="")
    monkeypatch.setattr(subprocess, "run", lambda argv, **kw: calls.append(argv) or done)
    parts._clean_remote(far)
    words = shlex.split(calls[0][-1])
    assert words[:2] == ["env", "PROTOLAB_INSTANCE=3fa9c2"] and words[-1] == "/run/protolab-keepers-3fa9c2"


def test_ssh_control_commands_end_options_before_the_destination(monkeypatch, tmp_path):
    monkeypatch.setattr(reach, "CONTROL_DIR", tmp_path)
    far = placement.TestbedHost(name="far", address="192.0.2.11", underlay="192.0.2.11")
    reach.control_path(far).touch()
    calls = []
    monkeypatch.setattr(subprocess, "run", lambda argv, **kw: calls.append(argv) or SimpleNamespace(returncode=0))
    reach.close(far)
    assert calls[0][-4:] == ["-O", "exit", "--", "root@192.0.2.11"]


class _Ledger:
    run_id = "run-x"

    def __init__(self, host: placement.TestbedHost) -> None:
        self.host = host

    def entries(self):
        return [{"kind": "container", "run": "run-x", "name": "plab-prometheus-far", "engine": "unix:///gone",
                 "host": self.host.model_dump(mode="json")},
                {"kind": "container", "run": "run-x", "name": "plab-h1"}]  # fmt: skip


def test_clean_removes_a_remote_prometheus_over_a_live_session_and_reports_one_it_cannot_reach(monkeypatch):
    """After a killed run: the host's Prometheus is removed through its engine reached afresh; a host that does not
    answer is a failure (left on the host), never a line of what was removed."""
    import docker

    from protolab import ownership

    far = placement.TestbedHost(name="far", address="192.0.2.11", underlay="192.0.2.11")
    monkeypatch.setattr(ownership, "ledgers", lambda: [_Ledger(far)])
    removed, rm = [], []
    container = SimpleNamespace(
        labels={federation.naming.RUN_LABEL: "run-x"}, remove=lambda force: removed.append(force)
    )
    asked = []
    monkeypatch.setattr(reach, "engine", lambda h, fresh=False: asked.append(fresh) or "unix:///fwd.sock")
    engine = SimpleNamespace(containers=SimpleNamespace(get=lambda n: container))
    monkeypatch.setattr(docker, "DockerClient", lambda base_url: engine)
    monkeypatch.setattr(subprocess, "run", lambda argv, **kw: rm.append(argv) or SimpleNamespace(returncode=0))
    failures: list[str] = []
    assert federation.sweep_remote(failures) == ["removed testbed host far: container plab-prometheus-far (run run-x)"]
    assert removed == [True] and asked == [True] and failures == []
    assert shlex.split(rm[0][-1]) == ["rm", "-rf", "--", str(federation.REMOTE_ROOT / "far")]

    def unreachable(h, fresh=False):
        raise subprocess.CalledProcessError(255, ["ssh"], stderr="Connection refused")

    monkeypatch.setattr(reach, "engine", unreachable)
    failures = []
    assert federation.sweep_remote(failures) == []
    assert len(failures) == 1 and "plab-prometheus-far (run run-x): not reached, left on the host" in failures[0]


def test_clean_says_a_part_whose_host_record_does_not_read_may_have_left_a_keeper(tmp_path, monkeypatch):
    from protolab import ownership

    monkeypatch.setattr(parts, "STATE_ROOT", tmp_path / "hosts")
    monkeypatch.setattr(reach, "CONTROL_DIR", tmp_path / "hosts" / "ssh")
    monkeypatch.setattr(ownership, "ledgers", lambda: [])
    d = parts.STATE_ROOT / "far"
    d.mkdir(parents=True)
    (d / "part.json").write_text(json.dumps({"name": "far", "address": "192.0.2.11", "user": "-oProxyCommand=x"}))
    failures: list[str] = []
    parts.clean_parts(failures)
    assert len(failures) == 1 and "lab part far" in failures[0] and "a keeper may be left there" in failures[0]
