"""The link state's one owner, with a fake backend and a recorded `ip` instead of the kernel."""

from __future__ import annotations

import pytest

from protolab.lab.impair import Backend, Endpoint
from protolab.lab.linkstate import LinkState
from protolab.model.impairment import Impairment

H1, S1 = Endpoint("h1-eth0", 100), Endpoint("s1-eth1")
H2, S1b = Endpoint("h2-eth0", 200), Endpoint("s1-eth2")


class FakeBackend(Backend):
    name = "fake"

    def __init__(self, quick: bool = True) -> None:
        self.quick, self.calls = quick, []

    def apply(self, sender, receiver, imp, at="sender"):
        self.calls.append(("apply", sender.intf, imp.delay, at))
        return [f"{sender.intf}: fake"]

    def change(self, sender, receiver, old, new, at):
        self.calls.append(("change", sender.intf, new.delay, at))
        return self.quick


def _state(quick: bool = True, fail: set[str] = frozenset()):
    cmds, cleared = [], []

    def run(cmd, check=True):
        if cmd[-2] in fail:
            raise RuntimeError(f"{cmd[-2]}: no such device")
        cmds.append(cmd)
        return ""

    links = LinkState({("h1", "s1"): (H1, S1), ("h2", "s1"): (H2, S1b)}, FakeBackend(quick), run=run,
                      clear=lambda s, r: cleared.append(s.intf))  # fmt: skip
    return links, cmds, cleared


def test_configure_applies_each_direction_and_keeps_the_spec():
    links, _, _ = _state()
    links.configure(
        {("h1", "s1"): (Impairment(delay="10ms"), "sender"), ("s1", "h1"): (Impairment(rate="1Mbit"), "sender")}
    )
    assert sorted(c[1] for c in links.backend.calls) == ["h1-eth0", "s1-eth1"]  # reverse: sent by the bridge port
    assert links.current == links.configured and len(links.applied) == 2
    assert links.shaped_interfaces == {"h1-eth0", "s1-eth1"}


def test_step_changes_only_the_given_fields_and_restore_puts_the_spec_back():
    links, _, cleared = _state()
    links.configure({("h1", "s1"): (Impairment(delay="10ms", loss="1%"), "sender")})
    links.step(("h1", "s1"), "forward", Impairment(delay="50ms"))
    assert links.current[("h1", "s1")][0].delay == 0.05 and links.current[("h1", "s1")][0].loss == 0.01
    links.step(("h1", "s1"), "reverse", Impairment(delay="5ms"))  # a direction the spec left alone
    assert links.restore() == []
    assert links.current == links.configured and cleared == ["s1-eth1"]  # the extra direction cleared


def test_a_backend_that_cannot_change_in_one_step_is_cleared_and_applied_again():
    links, _, cleared = _state(quick=False)
    links.configure({("h1", "s1"): (Impairment(delay="10ms"), "sender")})
    links.step(("h1", "s1"), "forward", Impairment(delay="20ms"))
    assert cleared == ["h1-eth0"] and links.backend.calls[-1] == ("apply", "h1-eth0", 0.02, "sender")


def test_cables_are_pulled_at_the_bridge_port_and_all_plugged_back():
    links, cmds, _ = _state()
    links.set_cable(("s1", "h1"), "down")  # either order of the link's ends
    assert cmds == [["ip", "link", "set", "dev", "s1-eth1", "down"]] and links.cut == {("h1", "s1")}
    assert links.restore() == [] and links.cut == set()
    assert [c[-2] for c in cmds[1:]] == ["s1-eth1", "s1-eth2"]  # every link, not only the ones it knew cut


def test_restore_tries_every_object_and_reports_what_failed():
    links, cmds, _ = _state(fail={"s1-eth1"})
    failures = links.restore()
    assert failures == ["link h1-s1 up: s1-eth1: no such device"] and cmds[-1][-2] == "s1-eth2"


def test_an_unknown_link_is_named():
    links, _, _ = _state()
    with pytest.raises(KeyError, match="no link between h1 and h2"):
        links.set_cable(("h1", "h2"), "down")
