"""An inventory is data: every value that reaches ssh's argv, a remote shell or a path on a host is typed where the
inventory is read (protolab.testbed.placement), and a hostile one is refused with the file, the host and the inventory
variable named. What is accepted needs no quoting in a shell and cannot be taken for an option."""

from __future__ import annotations

import shlex
import string

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protolab.errors import LabError
from protolab.testbed import placement, reach
from protolab.testbed.placement import PlacementError, load_inventory

# each field as the inventory spells it, with a valid value for the other fields
FIELDS = ["ansible_host", "protolab_underlay", "ansible_user", "protolab_python", "ansible_ssh_private_key_file",
          "protolab_known_hosts", "protolab_netns", "protolab_engine"]  # fmt: skip
HOSTILE = [
    ";touch /tmp/PWNED",
    "$(touch /tmp/PWNED)",
    "`touch /tmp/PWNED`",
    "a b",
    "x\ny",
    "-oProxyCommand=touch /tmp/PWNED",
    "-x",
    "../../etc",
    "..",
    "::1%eth0;id",
    "10.0.0.1%x",
    "h\u00e9llo",
    "a" * 5000,
    "",
    "x|y",
    "x&y",
    "'q'",
    '"q"',
    "x>y",
    "*",
    "~root/$HOME",
]
SHELL_SPECIALS = set(" \t\n\r;&|$`'\"<>()*?[]{}!#\\") | {"\x00"}


def _write(tmp_path, hosts: dict) -> str:
    path = tmp_path / "hostile.yml"
    path.write_text(yaml.safe_dump({"testbed": {"hosts": hosts}}, allow_unicode=True))
    return str(path)


@pytest.mark.parametrize("value", HOSTILE, ids=range(len(HOSTILE)))
@pytest.mark.parametrize("field", FIELDS)
def test_a_hostile_value_is_refused_naming_file_host_and_variable(tmp_path, field, value):
    path = _write(tmp_path, {"far": {"ansible_host": "192.0.2.11", field: value}})
    with pytest.raises(PlacementError) as exc:
        load_inventory(path)
    msg = str(exc.value)
    assert msg.startswith(f"inventory {path}: host far: ") and f"(inventory variable {field})" in msg


@pytest.mark.parametrize("name", [";id", "$(id)", "-oProxyCommand=x", "../x", "a/b", "..", "a b", "h\u00e9", "x" * 64])
def test_a_hostile_host_name_is_refused_and_shown_quoted(tmp_path, name):
    path = _write(tmp_path, {name: {"ansible_host": "192.0.2.11"}})
    with pytest.raises(PlacementError, match=r"host .*: name: .*is not a testbed host name"):
        load_inventory(path)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("ansible_host", "lab-a.example.org"),
        ("ansible_host", "2001:db8::1"),
        ("protolab_underlay", "10.255.98.2"),
        ("ansible_user", "lab_user"),
        ("protolab_python", "/opt/protolab/.venv/bin/python"),
        ("ansible_ssh_private_key_file", "~/.ssh/id_ed25519"),
        ("protolab_known_hosts", "/run/protolab-emu/a/ssh/known_hosts"),
        ("protolab_netns", "plab-emu-host_a"),
        ("protolab_engine", "ssh://root@192.0.2.10"),
        ("protolab_engine", "tcp://[2001:db8::1]:2376"),
        ("protolab_engine", "unix:///run/protolab-emu/a/docker.sock"),
    ],
)
def test_what_real_inventories_hold_still_reads(tmp_path, field, value):
    path = _write(tmp_path, {"far": {"ansible_host": "192.0.2.11", field: value}})
    load_inventory(path)


def test_a_host_name_address_is_no_underlay_and_says_so_where_one_is_needed(tmp_path):
    inv = load_inventory(_write(tmp_path, {"far": {"ansible_host": "lab-a.example.org"}}))
    assert inv.get("far").address == "lab-a.example.org" and inv.get("far").underlay is None


def test_an_engine_endpoint_with_a_login_outside_ssh_or_a_bad_port_is_refused(tmp_path):
    for engine, why in (("tcp://root@192.0.2.1:2376", "only for ssh://"), ("tcp://192.0.2.1", "needs its port"),
                        ("tcp://192.0.2.1:99999", "not 1-65535"), ("ftp://x", "not an engine endpoint"),
                        ("unix://relative/sock", "not an absolute path")):  # fmt: skip
        with pytest.raises(PlacementError, match=why):
            load_inventory(_write(tmp_path, {"far": {"protolab_engine": engine}}))


def test_ssh_never_gets_a_destination_that_reads_as_an_option():
    """A host made without validation (model_construct) still cannot put an option before ssh's `--`."""
    bad = placement.TestbedHost.model_construct(name="far", address="192.0.2.11", user="-oProxyCommand=id",
                                                ssh_port=22, ssh_key=None, known_hosts=None, netns=None)  # fmt: skip
    with pytest.raises(LabError, match="is not a login at an address"):
        reach.ssh(bad)


ANY_TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=80)
NEAR_MISS = st.text(alphabet=string.ascii_letters + string.digits + "-_./:%@~;$`()[] \n'\"|&", max_size=40)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(field=st.sampled_from(FIELDS), value=st.one_of(ANY_TEXT, NEAR_MISS))
def test_any_accepted_value_is_one_inert_word_and_any_refused_one_is_named(tmp_path, field, value):
    path = _write(tmp_path, {"far": {"ansible_host": "192.0.2.11", field: value}})
    try:
        inv = load_inventory(path)
    except PlacementError as exc:
        assert f"inventory {path}: host far: " in str(exc) and f"(inventory variable {field})" in str(exc)
        return
    host = inv.get("far")
    got = {
        "ansible_host": host.address, "protolab_underlay": host.underlay, "ansible_user": host.user,
        "protolab_python": host.python, "ansible_ssh_private_key_file": host.ssh_key,
        "protolab_known_hosts": host.known_hosts, "protolab_netns": host.netns, "protolab_engine": host.engine,
    }[field]  # fmt: skip
    assert got is not None and got.isascii() and not got.startswith("-")
    assert not (set(got) & SHELL_SPECIALS), f"{field}={got!r} accepted with a shell metacharacter"
    assert ".." not in got.split("/")
    if host.netns is None:  # the ssh argv: the destination is a word of its own, right before `--`
        argv = reach.ssh(host)
        assert argv[-1] == "--" and not argv[-2].startswith("-") and shlex.split(argv[-2]) == [argv[-2]]
