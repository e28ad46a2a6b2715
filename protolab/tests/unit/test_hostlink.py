"""How a testbed host's shell is reached: an emulated host's namespace, or one kept-open SSH session per host with
the inventory's login, port, key and host keys."""

from __future__ import annotations

import shlex

import pytest

from protolab.errors import LabError
from protolab.testbed import placement, reach


def _inventory(tmp_path, hosts):
    import yaml

    path = tmp_path / "inv.yml"
    path.write_text(yaml.safe_dump({"testbed": {"hosts": hosts}}))
    return placement.load_inventory(path)


def test_an_emulated_host_runs_commands_in_its_namespace(tmp_path):
    inv = _inventory(tmp_path, {"a": {"protolab_netns": "plab-emu-a", "protolab_underlay": "10.255.98.2"}})
    assert reach.command(inv.get("a"), ["ip", "-br", "addr"]) == ["nsenter", "--net=/run/netns/plab-emu-a",
                                                                     "ip", "-br", "addr"]  # fmt: skip


def test_a_remote_host_is_one_kept_open_ssh_session_with_the_inventorys_login(tmp_path):
    far = {"ansible_host": "192.0.2.11", "ansible_user": "lab", "ansible_port": 2222,
           "ansible_ssh_private_key_file": "/k/id", "protolab_known_hosts": "/k/known"}  # fmt: skip
    inv = _inventory(tmp_path, {"far": far})
    far = inv.get("far")
    assert (far.user, far.ssh_port, far.ssh_key, far.known_hosts) == ("lab", 2222, "/k/id", "/k/known")
    argv = reach.command(far, ["sh", "-c", "echo 'a b'; date +%s%N"])
    assert argv[0] == "ssh" and "BatchMode=yes" in argv and f"ControlPath={reach.control_path(far)}" in argv
    assert "ControlMaster=auto" in argv and argv[argv.index("-p") + 1] == "2222"
    assert argv[argv.index("-i") + 1] == "/k/id" and "UserKnownHostsFile=/k/known" in argv
    assert "StrictHostKeyChecking=yes" in argv
    assert argv[-3:-1] == ["lab@192.0.2.11", "--"]
    # one word for the remote shell, which splits it back into the very arguments given
    assert shlex.split(argv[-1]) == ["sh", "-c", "echo 'a b'; date +%s%N"]


def test_a_host_with_no_address_and_no_namespace_is_refused_by_name(tmp_path):
    inv = _inventory(tmp_path, {"lost": {"protolab_underlay": "10.0.0.9"}})
    with pytest.raises(LabError, match="lost: no ansible_host to reach it at over SSH"):
        reach.command(inv.get("lost"), ["true"])


def test_clean_ends_every_kept_open_session_and_removes_their_folder(tmp_path, monkeypatch):
    import subprocess

    calls = []
    monkeypatch.setattr(reach, "CONTROL_DIR", tmp_path / "hosts" / "ssh")
    monkeypatch.setattr(subprocess, "run", lambda argv, **kw: calls.append(argv))
    reach.CONTROL_DIR.mkdir(parents=True)
    (reach.CONTROL_DIR / "far.ctl").touch()
    assert reach.close_all() == ["ended the SSH session to testbed host far"]
    assert calls == [["ssh", "-o", f"ControlPath={reach.CONTROL_DIR / 'far.ctl'}", "-O", "exit", "x"]]
    assert not (tmp_path / "hosts").exists()  # the sessions' folder and the empty root above it
    assert reach.close_all() == []


def test_a_keepers_client_on_its_host_answers_in_json(tmp_path, monkeypatch, capsys):
    """What a machine reaching the host over SSH runs there: `--state` (null: no keeper) and `--client REQUEST`
    (a refusal comes back as an answer, not as a traceback)."""
    import json

    from protolab.lab import keeper

    monkeypatch.setenv("PROTOLAB_STATE_DIR", str(tmp_path))
    assert keeper.client_main(["--state"]) == 0 and json.loads(capsys.readouterr().out) is None
    assert keeper.client_main(["--client", json.dumps({"op": "links", "method": "restore"})]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["ok"] is False and "no lab is deployed" in answer["error"]
