"""What the monitoring stack and the nodes expose: Grafana's login, Prometheus's API, the nodes' capabilities.

Rootless: the password file lives under a temporary PROTOLAB_SECRETS_DIR, compose and Docker are faked."""

import json
import os
import re
import stat

import pytest
import yaml

from protolab import engine, lab, monitor

COMPOSE = yaml.safe_load(monitor.COMPOSE_FILE.read_text())
DOCKERFILE = (monitor.REPO / "images" / "monitor" / "Dockerfile").read_text()


@pytest.fixture
def secrets_dir(tmp_path, monkeypatch):
    d = tmp_path / "secrets"  # not there yet: grafana_admin_password makes it
    monkeypatch.setenv("PROTOLAB_SECRETS_DIR", str(d))
    monkeypatch.delenv(monitor.GRAFANA_PASSWORD_ENV, raising=False)
    return d


def _mode(path):
    return stat.S_IMODE(path.stat().st_mode)


# -- the Grafana admin password ---------------------------------------------------------------------------
def test_password_is_made_once_0600_in_a_0700_dir(secrets_dir):
    old = os.umask(0)  # the modes must not depend on the caller's umask
    try:
        first = monitor.grafana_admin_password()
    finally:
        os.umask(old)
    path = secrets_dir / "grafana-admin-password"
    assert monitor.grafana_password_file() == path
    assert _mode(secrets_dir) == 0o700 and _mode(path) == 0o600
    assert first != "admin" and len(first) >= 32
    assert monitor.grafana_admin_password() == first  # reused, not regenerated
    assert [p.name for p in secrets_dir.iterdir()] == [path.name]  # no temporary file left behind


def test_default_secrets_dir_is_persistent(monkeypatch):
    monkeypatch.delenv("PROTOLAB_SECRETS_DIR", raising=False)
    assert monitor.grafana_password_file() == monitor.Path("/var/lib/protolab/grafana-admin-password")


def test_each_machine_gets_its_own_password(tmp_path, monkeypatch):
    made = set()
    for machine in ("a", "b"):
        monkeypatch.setenv("PROTOLAB_SECRETS_DIR", str(tmp_path / machine))
        made.add(monitor.grafana_admin_password())
    assert len(made) == 2


@pytest.mark.parametrize("content", ["admin\n", "", "  \n"])
def test_admin_or_empty_password_is_refused(secrets_dir, content):
    secrets_dir.mkdir(mode=0o700)
    path = secrets_dir / "grafana-admin-password"
    path.write_text(content)
    path.chmod(0o600)
    with pytest.raises(RuntimeError, match="must never get"):
        monitor.grafana_admin_password()


def test_secrets_others_may_read_are_refused(secrets_dir):
    secrets_dir.mkdir(mode=0o755)
    secrets_dir.chmod(0o755)
    with pytest.raises(RuntimeError, match=r"mode 0755.*0700 at most"):
        monitor.grafana_admin_password()
    secrets_dir.chmod(0o700)
    path = secrets_dir / "grafana-admin-password"
    path.write_text("a-password-someone-else-can-read\n")
    path.chmod(0o644)
    with pytest.raises(RuntimeError, match=r"mode 0644.*0600 at most"):
        monitor.grafana_admin_password()


# -- the compose file -------------------------------------------------------------------------------------
def test_grafana_anonymous_viewer_no_sign_up_no_literal_password():
    env = COMPOSE["services"]["grafana"]["environment"]
    assert env["GF_AUTH_ANONYMOUS_ORG_ROLE"] == "Viewer"
    assert env["GF_USERS_ALLOW_SIGN_UP"] == "false"
    assert env["GF_SECURITY_ADMIN_USER"] == monitor.GRAFANA_ADMIN_USER
    # only the interpolated variable, which compose refuses to run without (`:?`), never a value in the repo
    assert re.fullmatch(r"\$\{PROTOLAB_GRAFANA_ADMIN_PASSWORD:\?[^}]*\}", env["GF_SECURITY_ADMIN_PASSWORD"])
    assert monitor.GRAFANA_PASSWORD_ENV == "PROTOLAB_GRAFANA_ADMIN_PASSWORD"
    secret_keys = [k for k in env if re.search("PASSWORD|SECRET|TOKEN", k)]
    assert secret_keys == ["GF_SECURITY_ADMIN_PASSWORD"]


@pytest.mark.parametrize("service", ["prometheus", "grafana"])
def test_published_on_loopback_only(service):
    ports = COMPOSE["services"][service]["ports"]
    assert ports and all(p.startswith("127.0.0.1:") for p in ports)


def test_grafana_is_not_on_the_lab_management_network():
    assert COMPOSE["services"]["grafana"]["networks"] == ["default"]


def _dockerfile_array(instruction):
    """The JSON array of an exec-form instruction, continuation lines joined."""
    text = DOCKERFILE.replace("\\\n", " ")
    (line,) = [raw for raw in text.splitlines() if raw.startswith(instruction + " ")]
    return json.loads(line[len(instruction) + 1 :])


def test_prometheus_runs_without_lifecycle_or_admin_api():
    service = COMPOSE["services"]["prometheus"]
    argv = _dockerfile_array("ENTRYPOINT") + service.get("command", _dockerfile_array("CMD"))
    assert "entrypoint" not in service
    assert argv[0] == "/usr/bin/prometheus" and "--config.file=/etc/prometheus/prometheus.yml" in argv
    assert not [a for a in argv if a.startswith(("--web.enable-lifecycle", "--web.enable-admin-api"))]


def test_targets_reach_prometheus_by_file_sd_not_reload():
    config = yaml.safe_load((monitor.REPO / "images" / "monitor" / "prometheus.yml").read_text())
    files = {
        j["job_name"]: j["file_sd_configs"][0]["files"] for j in config["scrape_configs"] if "file_sd_configs" in j
    }
    # the lab's agents, and (a lab over several hosts) each host's Prometheus, federated
    assert files == {"protolab-agent": ["/etc/prometheus/targets/*.json"],
                     "federate": ["/etc/prometheus/targets/federate/*.json"]}  # fmt: skip
    source = "\n".join(p.read_text() for p in (monitor.REPO / "protolab").rglob("*.py") if "tests" not in p.parts)
    assert "/-/reload" not in source


# -- the nodes' capabilities --------------------------------------------------------------------------------
def test_nodes_get_net_admin_and_net_raw_only():
    assert lab.CAPABILITIES == ["NET_ADMIN", "NET_RAW"]


# -- `up` and `down` hand compose the password, and only compose ------------------------------------------
@pytest.fixture
def fake_stack(secrets_dir, tmp_path, monkeypatch):
    """compose records the password it was given; Docker, the network and Prometheus do nothing."""
    seen = []
    monkeypatch.setenv("PROTOLAB_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setattr(engine, "ensure_mgmt_network", lambda client, **kw: None)
    monkeypatch.setattr(monitor, "refuse_taken_ports", lambda client, grafana: None)  # this machine's ports aside
    monkeypatch.setattr(monitor.Prometheus, "wait_ready", lambda self, timeout=60: None)
    monkeypatch.setattr(monitor, "grafana_image", lambda: "grafana/grafana-oss:test")
    monkeypatch.setattr(
        monitor, "compose", lambda *args, **kw: seen.append((args, os.environ.get("PROTOLAB_GRAFANA_ADMIN_PASSWORD")))
    )
    return seen


def test_up_with_grafana_passes_the_machines_password_and_says_where_it_is(fake_stack, monkeypatch, capsys):
    monkeypatch.setattr(monitor, "grafana_available", lambda: True)
    assert monitor.up(client=None) is True
    password = monitor.grafana_admin_password()
    ((args, given),) = fake_stack
    assert args[:3] == ("--profile", "grafana", "up") and given == password
    assert monitor.GRAFANA_PASSWORD_ENV not in os.environ  # compose's, not the rest of the run's
    out = capsys.readouterr().out
    assert f"{monitor.grafana_url()}{monitor.GRAFANA_HOME}" in out
    assert f"sign in as admin, password in {monitor.grafana_password_file()}" in out
    assert password not in out  # not a terminal: the password stays out of logs


def test_up_on_a_terminal_prints_the_password(fake_stack, monkeypatch, capsys):
    monkeypatch.setattr(monitor, "grafana_available", lambda: True)
    monkeypatch.setattr(monitor.sys.stdout, "isatty", lambda: True)
    monitor.up(client=None)
    assert f"sign in as admin, password {monitor.grafana_admin_password()}\n" in capsys.readouterr().out


def test_up_without_grafana_makes_no_password_and_prints_one_line(fake_stack, secrets_dir, monkeypatch, capsys):
    monkeypatch.setattr(monitor, "grafana_available", lambda: False)
    assert monitor.up(client=None) is False
    ((args, given),) = fake_stack
    assert args[0] == "up" and given  # compose interpolates Grafana's service anyway: a throwaway value
    assert not secrets_dir.exists()
    assert len(capsys.readouterr().out.strip().splitlines()) == 1


def test_down_needs_no_password_file(fake_stack, secrets_dir, monkeypatch):
    monkeypatch.setenv(monitor.GRAFANA_PASSWORD_ENV, "the caller's")
    monitor.down()
    ((args, given),) = fake_stack
    assert "down" in args and given and given != "the caller's"
    assert os.environ[monitor.GRAFANA_PASSWORD_ENV] == "the caller's"  # restored
    assert not secrets_dir.exists()
