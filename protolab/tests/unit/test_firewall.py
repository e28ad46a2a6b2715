"""The exemption of bridged lab frames from the root namespace's conntrack and defragmenter (the kernel side is
the integration test test_the_lan_carries_fragments_and_the_receiver_reassembles_them)."""

from __future__ import annotations

import pytest

from protolab import ownership
from protolab.lab import firewall


@pytest.fixture
def machine(monkeypatch, tmp_path):
    """br_netfilter on, nft present, no table yet; commands recorded."""
    monkeypatch.setenv("PROTOLAB_STATE_DIR", str(tmp_path / "state"))
    calls: dict[str, list] = {"run": [], "ok": []}
    monkeypatch.setattr(firewall, "_sysctl", lambda name: True)
    monkeypatch.setattr(firewall.shutil, "which", lambda tool: f"/usr/sbin/{tool}")
    monkeypatch.setattr(firewall, "ok", lambda cmd, **kw: calls["ok"].append(cmd) or False)
    monkeypatch.setattr(firewall, "run", lambda cmd, **kw: calls["run"].append((cmd, kw.get("input"))) or "")
    return calls


def test_one_table_per_lab_marks_frames_entering_lab_ports_untracked_before_br_netfilter(machine):
    ledger = ownership.Ledger("20261127T050000Z-ab12", "lab")
    done = firewall.untrack_bridged("20261127T050000Z-ab12_lab", ledger)
    assert len(done) == 1 and "protolab_20261127T050000Z_ab12_lab" in done[0]
    [(cmd, ruleset)] = machine["run"]
    assert cmd == ["nft", "-f", "-"]
    assert "table bridge protolab_20261127T050000Z_ab12_lab" in ruleset
    assert "hook prerouting priority -300;" in ruleset and 'iifname "plab-*" notrack' in ruleset
    [entry] = ledger.entries()
    assert (entry["kind"], entry["family"], entry["name"]) == ("nft", "bridge", "protolab_20261127T050000Z_ab12_lab")


def test_nothing_to_do_without_br_netfilter_or_when_the_table_is_there(machine, monkeypatch):
    monkeypatch.setattr(firewall, "_sysctl", lambda name: False)
    assert firewall.untrack_bridged("r1_lab") == [] and machine["run"] == []
    monkeypatch.setattr(firewall, "_sysctl", lambda name: True)
    monkeypatch.setattr(firewall, "ok", lambda cmd, **kw: True)
    assert firewall.untrack_bridged("r1_lab") == [] and machine["run"] == []


def test_without_nft_it_says_what_to_install(machine, monkeypatch):
    monkeypatch.setattr(firewall.shutil, "which", lambda tool: None)
    with pytest.raises(RuntimeError, match="install nftables"):
        firewall.untrack_bridged("r1_lab")


def test_a_failed_nft_leaves_no_ledger_entry_behind(machine, monkeypatch):
    def fails(cmd, **kw):
        raise firewall.CommandError(cmd, 1, "Error: Could not process rule: Operation not supported")

    monkeypatch.setattr(firewall, "run", fails)
    ledger = ownership.Ledger("r1", "lab")
    with pytest.raises(RuntimeError, match="Operation not supported"):
        firewall.untrack_bridged("r1_lab", ledger)
    assert ledger.entries() == []
