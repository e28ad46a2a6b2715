"""Instances: one per state folder, with Docker names, labels and monitoring ports of its own (protolab.naming).

The default state folder keeps the names users know (plab-mgmt, plab-prometheus, 9090/3000); another folder's
names and sweep never meet the default's. `up` leaves a running run's scrape targets alone; the state folder is
chmod-ed only when protolab makes it.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap

import pytest

from protolab import cleanup, engine, monitor, naming, ownership
from protolab.errors import MonitoringError, ProtolabError


@pytest.fixture(autouse=True)
def no_instance():
    """None of the variables set (adopt_instance sets PROTOLAB_INSTANCE), and the environment as it was after."""
    keys = (naming.INSTANCE_ENV, *monitor.PORT_ENVS)
    saved = {k: os.environ.pop(k) for k in keys if k in os.environ}
    yield
    for k in keys:
        os.environ.pop(k, None)
    os.environ.update(saved)


def test_the_default_state_folder_is_the_default_instance_with_the_names_users_know(monkeypatch):
    assert naming.instance_of("/run/protolab") == naming.instance_of("/run/protolab/") == ""
    monkeypatch.setenv("PROTOLAB_STATE_DIR", "/run/protolab")
    assert naming.adopt_instance() == "" and os.environ[naming.INSTANCE_ENV] == ""
    assert (naming.MGMT_NETWORK, naming.COMPOSE_PROJECT, naming.LABEL) == ("plab-mgmt", "protolab", "protolab.managed")
    assert (naming.container_name("h1"), naming.prometheus_container()) == ("plab-h1", "plab-prometheus")
    assert monitor.ports() == (9090, 3000) and monitor.prometheus_url() == "http://127.0.0.1:9090"


def test_another_state_folder_names_everything_of_docker_its_own(monkeypatch, tmp_path):
    i = naming.instance_of(tmp_path / "state")
    assert len(i) == 6 and i == naming.instance_of(f"{tmp_path}/./state/")  # stable for one folder
    assert naming.instance_of(tmp_path / "other") != i
    monkeypatch.setenv("PROTOLAB_STATE_DIR", str(tmp_path / "state"))
    assert naming.adopt_instance() == i
    names = {naming.MGMT_NETWORK, naming.COMPOSE_PROJECT, naming.LABEL, naming.container_name("h1"),
             naming.prometheus_container(), naming.grafana_container()}  # fmt: skip
    assert names == {f"plab-mgmt-{i}", f"protolab-{i}", f"protolab.managed.{i}", f"plab-{i}-h1",
                     f"plab-{i}-prometheus", f"plab-{i}-grafana"}  # fmt: skip
    prom, graf = monitor.ports()
    assert 20000 <= prom < 30000 and graf == prom + 1 and (prom, graf) != (9090, 3000)
    # machine-wide, and documented so: root-namespace links have no room for an id
    assert naming.bridge_name("s1") == "plab-s1"


def test_an_instance_chosen_by_hand_wins_and_a_bad_one_is_refused(monkeypatch, tmp_path):
    monkeypatch.setenv("PROTOLAB_STATE_DIR", str(tmp_path))
    monkeypatch.setenv(naming.INSTANCE_ENV, "ci7")
    assert naming.adopt_instance() == "ci7" and naming.MGMT_NETWORK == "plab-mgmt-ci7"
    for bad in ("-rf", "a b", "x;touch PWNED", "../x", "A1", "x" * 13):
        monkeypatch.setenv(naming.INSTANCE_ENV, bad)
        with pytest.raises(ValueError, match="PROTOLAB_INSTANCE=.*1 to 12 of a-z and 0-9"):
            naming.instance()


def test_the_cli_refuses_a_bad_instance_before_it_does_anything(monkeypatch, capsys):
    from protolab import cli

    monkeypatch.setenv(naming.INSTANCE_ENV, "$(id)")
    assert cli.main(["clean", "--check"]) == 2
    assert "PROTOLAB_INSTANCE='$(id)': an instance id is" in capsys.readouterr().err


def test_ports_from_the_environment_and_a_bad_one_named(monkeypatch):
    monkeypatch.setenv("PROTOLAB_PROMETHEUS_PORT", "19090")
    assert monitor.ports() == (19090, 3000)
    monkeypatch.setenv("PROTOLAB_GRAFANA_PORT", "3000; rm")
    with pytest.raises(MonitoringError, match=r"PROTOLAB_GRAFANA_PORT='3000; rm': a TCP port is a number"):
        monitor.ports()


class _Containers:
    def __init__(self, running: bool) -> None:
        self.running, self.filters = running, []

    def list(self, **kw):
        self.filters.append(kw.get("filters"))
        return [object()] if self.running else []


class _Client:
    def __init__(self, running: bool = False) -> None:
        self.containers = _Containers(running)
        self.networks = _Containers(False)


def test_a_port_held_by_another_program_is_refused_naming_it_and_the_way_out(monkeypatch, tmp_path):
    monkeypatch.setenv("PROTOLAB_STATE_DIR", str(tmp_path))
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        monkeypatch.setenv("PROTOLAB_PROMETHEUS_PORT", str(port))
        with pytest.raises(MonitoringError) as err:
            monitor.refuse_taken_ports(_Client(running=False), grafana=False)
        assert f"127.0.0.1:{port}, Prometheus's port" in str(err.value) and "PROTOLAB_PROMETHEUS_PORT=PORT" in str(
            err.value
        )
        own = _Client(running=True)  # this instance's stack is up already: its own port
        monitor.refuse_taken_ports(own, grafana=False)
        assert own.containers.filters == [
            {"label": ["com.docker.compose.project=protolab", "protolab.managed=true"], "status": "running"}
        ]


def test_compose_is_given_the_instances_names_and_interpolates_them(monkeypatch, tmp_path):
    monkeypatch.setenv("PROTOLAB_STATE_DIR", str(tmp_path / "state"))
    i = naming.adopt_instance()
    env = monitor.compose_env()
    assert env["PROTOLAB_MGMT_NETWORK"] == f"plab-mgmt-{i}" and env["PROTOLAB_LABEL"] == f"protolab.managed.{i}"
    assert env["PROTOLAB_STATE_DIR"] == str(tmp_path / "state")
    compose = monitor.compose_cmd()
    if compose[0] == "docker":
        pytest.skip("no compose binary of its own here (the docker CLI plugin needs the engine for `config`)")
    out = subprocess.run([*compose, "-f", str(monitor.COMPOSE_FILE), "-p", naming.COMPOSE_PROJECT, "config",
                          "--format", "json"], capture_output=True, text=True, timeout=60,
                         env=os.environ | env | {monitor.GRAFANA_PASSWORD_ENV: "x"})  # fmt: skip
    assert out.returncode == 0, out.stderr
    config = json.loads(out.stdout)
    prom = config["services"]["prometheus"]
    assert prom["container_name"] == f"plab-{i}-prometheus" and prom["labels"] == {f"protolab.managed.{i}": "true"}
    assert prom["ports"][0]["published"] == env["PROTOLAB_PROMETHEUS_PORT"]
    assert config["networks"]["mgmt"]["name"] == f"plab-mgmt-{i}"
    assert config["networks"]["default"]["labels"] == {f"protolab.managed.{i}": "true"}


def test_the_label_sweep_looks_for_its_own_instances_label_only(monkeypatch, tmp_path):
    monkeypatch.setenv("PROTOLAB_STATE_DIR", str(tmp_path / "state"))
    i = naming.adopt_instance()
    client = _Client()
    cleanup._labelled(ownership.Context(client), remove=False)
    assert client.containers.filters == [{"label": [f"protolab.managed.{i}=true"]}]


def test_a_state_folder_made_by_protolab_is_0700_and_one_it_found_is_left_as_it_is(monkeypatch, tmp_path):
    made = tmp_path / "made"
    monkeypatch.setenv("PROTOLAB_STATE_DIR", str(made))
    assert ownership.ensure_state_dir() == made and made.stat().st_mode & 0o777 == 0o700
    found = tmp_path / "found"
    found.mkdir(mode=0o750)
    found.chmod(0o750)
    monkeypatch.setenv("PROTOLAB_STATE_DIR", str(found))
    ownership.ensure_state_dir()
    assert found.stat().st_mode & 0o777 == 0o750  # not protolab's to chmod


def test_a_world_writable_state_folder_is_refused_naming_it(monkeypatch, tmp_path):
    d = tmp_path / "shared"
    d.mkdir()
    d.chmod(0o1777)
    monkeypatch.setenv("PROTOLAB_STATE_DIR", str(d))
    with pytest.raises(ProtolabError, match=rf"state folder {d}: writable by anyone \(mode 1777\).*PROTOLAB_STATE_DIR"):
        ownership.LOCK.acquire("test")
    assert not (d / "lock").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a folder to another user needs root")
def test_a_state_folder_of_another_user_is_refused(monkeypatch, tmp_path):
    d = tmp_path / "theirs"
    d.mkdir(mode=0o700)
    os.chown(d, 65534, 65534)
    monkeypatch.setenv("PROTOLAB_STATE_DIR", str(d))
    with pytest.raises(ProtolabError, match=rf"state folder {d}: owned by uid 65534, not this process's uid 0"):
        ownership.ensure_state_dir()


@pytest.fixture
def fake_stack(tmp_path, monkeypatch):
    """Docker, compose and Prometheus do nothing; what up() prints is captured by capsys."""
    monkeypatch.setenv("PROTOLAB_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setattr(monitor, "refuse_taken_ports", lambda client, grafana: None)
    monkeypatch.setattr(engine, "ensure_mgmt_network", lambda client, **kw: None)
    monkeypatch.setattr(monitor.Prometheus, "wait_ready", lambda self, timeout=60: None)
    monkeypatch.setattr(monitor, "grafana_available", lambda: False)
    monkeypatch.setattr(monitor, "grafana_image", lambda: "grafana/grafana-oss:test")
    monkeypatch.setattr(monitor, "compose", lambda *args, **kw: "")
    return tmp_path / "state"


def test_up_while_a_run_holds_the_lab_leaves_its_targets_alone(fake_stack, capsys):
    targets = monitor.write_targets([{"targets": ["10.0.0.2:9100"], "labels": {"node": "h1"}}])
    before = targets.read_text()
    code = textwrap.dedent(f"""
        import os, time
        os.environ["PROTOLAB_STATE_DIR"] = {str(fake_stack)!r}
        from protolab import ownership
        ownership.LOCK.acquire("run", "20261128T000000Z-abcd")
        print("held", flush=True)
        time.sleep(60)
    """)
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        monitor.up(client=None)
    finally:
        holder.kill()
        holder.wait()
    assert targets.read_text() == before
    out = capsys.readouterr().out
    assert f"held by PID {holder.pid} (run, run 20261128T000000Z-abcd): its lab's scrape targets are left" in out
    monitor.up(client=None)  # nobody holds it now: an empty lab, as before
    assert json.loads(targets.read_text()) == []
