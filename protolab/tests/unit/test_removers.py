"""Removers tell removed, gone (verified absent) and could-not-tell apart; only the first two close an entry.

The commands removers run (iptables, nft) are fakes on PATH: shell scripts that answer as the real tools do
(exit 0, `Bad rule`, `No such file or directory`, a held xtables lock, no answer at all) and log their argv.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from protolab import cleanup, engine, ownership
from protolab.errors import DockerUnreachableError, ProtolabError
from protolab.lab import parts, rxcpu
from protolab.testbed import federation

RULE = {"tool": "iptables", "table": "filter", "rule": ["FORWARD", "-i", "plab-s1", "-j", "ACCEPT"]}
TABLE = {"family": "bridge", "name": "protolab_r1_lab"}


@pytest.fixture(autouse=True)
def state(tmp_path, monkeypatch):
    monkeypatch.setenv("PROTOLAB_STATE_DIR", str(tmp_path / "state"))
    return tmp_path / "state"


@pytest.fixture
def tools(tmp_path, monkeypatch):
    """Fake iptables and nft first on PATH; `answer(tool, script)` sets what the tool does; `calls(tool)` reads
    the argv lines it was run with."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")

    def answer(tool: str, body: str) -> None:
        path = bin_dir / tool
        path.write_text(f'#!/bin/sh\necho "$*" >> "{bin_dir}/{tool}.calls"\n{body}\n')
        path.chmod(path.stat().st_mode | stat.S_IXUSR)

    def calls(tool: str) -> list[str]:
        log = bin_dir / f"{tool}.calls"
        return log.read_text().splitlines() if log.exists() else []

    answer.calls = calls
    answer.dir = bin_dir
    return answer


def _ledger(*entries: tuple[str, dict]) -> ownership.Ledger:
    ledger = ownership.Ledger("20261128T000000Z-test")
    for kind, handle in entries:
        ledger.add(kind, **handle)
    return ledger


def _states(outcomes: list[ownership.Outcome]) -> list[str]:
    return [o.state for o in outcomes]


def test_a_present_rule_is_removed_and_its_entry_closed(tools):
    tools("iptables", 'case "$*" in *" -C "*) exit 0;; *" -D "*) exit 0;; esac; exit 9')
    ledger = _ledger(("rule", RULE))
    (o,) = ledger.remove("session")
    assert o.state == ownership.REMOVED and o.line() == f"removed {ownership.describe(o.entry)}"
    assert [c.split()[:5] for c in tools.calls("iptables")] == [["-w", "5", "-t", "filter", "-C"],
                                                                 ["-w", "5", "-t", "filter", "-D"]]  # fmt: skip
    assert ledger.entries() == []


def test_an_absent_rule_is_gone_only_when_iptables_says_so(tools):
    tools("iptables", 'echo "iptables: Bad rule (does a matching rule exist in that chain?)." >&2; exit 1')
    ledger = _ledger(("rule", RULE))
    assert _states(ledger.remove("session")) == [ownership.GONE]
    assert ledger.entries() == [] and len(tools.calls("iptables")) == 1  # no -D for what is not there


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ('echo "Another app is currently holding the xtables lock. Stopped waiting after 5s." >&2; exit 4',
         "holding the xtables lock"),
        ('echo "iptables v1.8.9 (legacy): cannot initialize iptables table filter: Permission denied" >&2; exit 3',
         "Permission denied"),
        ("exit 1", "exited 1"),  # a 1 that does not say the rule is absent is not an answer
    ],
    ids=["xtables-lock-held", "permission", "silent-exit-1"],
)  # fmt: skip
def test_a_rule_whose_state_cannot_be_told_keeps_its_entry(tools, body, said):
    tools("iptables", body)
    ledger = _ledger(("rule", RULE))
    (o,) = ledger.remove("session")
    assert o.state == ownership.UNKNOWN and said in o.why, o.why
    assert "could not tell whether it is gone" in o.line()
    assert [e["kind"] for e in ledger.entries()] == ["rule"]  # kept for `protolab clean`
    assert not any(" -D " in c for c in tools.calls("iptables"))


def test_a_missing_iptables_is_not_taken_for_a_removed_rule(tools, monkeypatch):
    monkeypatch.setenv("PATH", str(tools.dir))  # no iptables anywhere on it
    ledger = _ledger(("rule", RULE))
    (o,) = ledger.remove("session")
    assert o.state == ownership.UNKNOWN and "iptables: not installed" in o.why
    assert ledger.entries() != []


def test_a_hung_iptables_is_could_not_tell_within_the_probe_bound(tools, monkeypatch):
    tools("iptables", "sleep 30")
    monkeypatch.setattr(ownership, "PROBE_SECONDS", 0.5)
    ledger = _ledger(("rule", RULE))
    (o,) = ledger.remove("session")
    assert o.state == ownership.UNKNOWN and "no answer within 0.5s" in o.why
    assert ledger.entries() != []


def test_nft_tables_removed_gone_and_unknown(tools):
    tools("nft", 'case "$*" in "list table bridge protolab_r1_lab") exit 0;; "delete table"*) exit 0;;\n'
          '  "list table bridge protolab_r2_lab") echo "Error: No such file or directory" >&2; exit 1;;\n'
          '  *) echo "Error: Could not process rule: Operation not permitted" >&2; exit 1;; esac')  # fmt: skip
    ledger = _ledger(("nft", TABLE), ("nft", {**TABLE, "name": "protolab_r2_lab"}),
                     ("nft", {**TABLE, "name": "protolab_r3_lab"}))  # fmt: skip
    outcomes = ledger.remove("session")
    assert _states(outcomes) == [ownership.REMOVED, ownership.GONE, ownership.UNKNOWN]
    assert "Operation not permitted" in outcomes[2].why
    assert [e["name"] for e in ledger.entries()] == ["protolab_r3_lab"]


def test_an_engine_that_does_not_answer_is_asked_once_and_every_docker_entry_kept(monkeypatch):
    asked = []

    def unreachable():
        asked.append(1)
        raise DockerUnreachableError("Read timed out. (read timeout=20)")

    monkeypatch.setattr(engine, "client", unreachable)
    ledger = _ledger(("container", {"name": "plab-h1"}), ("container", {"name": "plab-h2"}),
                     ("network", {"name": "plab-mgmt"}), ("compose", {"project": "protolab"}))  # fmt: skip
    outcomes = ledger.remove(None)
    assert _states(outcomes) == [ownership.UNKNOWN] * 4 and len(asked) == 1
    assert all("the Docker engine does not answer" in o.line() for o in outcomes)
    assert len(ledger.entries()) == 4 and ledger.path.exists()


def test_a_testbed_engine_that_does_not_answer_is_not_taken_for_gone(tmp_path):
    sock = tmp_path / "docker.sock"
    sock.write_text("")  # there, but nothing listens: an engine hung or dead with its socket left
    ledger = _ledger(("container", {"name": "plab-h3", "engine": f"unix://{sock}"}),
                     ("container", {"name": "plab-h4", "engine": f"unix://{tmp_path}/gone.sock"}))  # fmt: skip
    outcomes = ledger.remove("session")
    assert _states(outcomes) == [ownership.UNKNOWN, ownership.GONE], [o.line() for o in outcomes]
    assert "its engine does not answer" in outcomes[0].why
    assert [e["name"] for e in ledger.entries()] == ["plab-h3"]


def test_left_says_what_it_could_not_tell(tools):
    tools("iptables", 'echo "Another app is currently holding the xtables lock." >&2; exit 4')
    (line,) = _ledger(("rule", RULE)).left()
    assert line.startswith(ownership.describe({"kind": "rule", **RULE})) and "could not tell" in line


def test_clean_fails_naming_what_is_left_and_what_to_do(tools, tmp_path, monkeypatch, capsys):
    tools("iptables", 'echo "Another app is currently holding the xtables lock." >&2; exit 4')
    tools("nft", 'echo "Error: No such file or directory" >&2; exit 1')
    monkeypatch.setattr(engine, "client", lambda: _NoContainers())
    monkeypatch.setattr(rxcpu, "release_orphans", lambda: [])  # this machine's kthreads are not the test's
    monkeypatch.setattr(parts, "clean_parts", lambda failures=None: [])  # nor its keepers and hosts
    monkeypatch.setattr(federation, "REMOTE_ROOT", tmp_path / "federation")
    ledger = _ledger(("rule", RULE), ("nft", TABLE))
    with pytest.raises(ProtolabError) as err:
        cleanup.clean()
    msg = str(err.value)
    assert "1 object(s) left, their ledger entries kept" in msg and "xtables lock" in msg
    assert "run `protolab clean` again" in msg
    out = capsys.readouterr().out
    assert "left: rule iptables -t filter FORWARD" in out and "removed" not in out  # the nft table was gone already
    assert [e["kind"] for e in ledger.entries()] == ["rule"]
    tools("iptables", 'case "$*" in *" -C "*) exit 0;; *) exit 0;; esac')  # the lock released: clean again
    cleanup.clean()
    assert not ledger.path.exists() and "removed rule iptables" in capsys.readouterr().out


class _NoContainers:
    """A Docker engine that answers, with nothing of protolab's on it."""

    class _Empty:
        def list(self, **_kw):
            return []

    containers = networks = _Empty()


def test_a_dead_runs_sweep_reports_could_not_tell_as_a_failure(tools, monkeypatch):
    tools("iptables", "exit 4")
    ledger = ownership.begin_run("20261128T000000Z-dead", None)
    ledger.add("rule", **RULE)
    monkeypatch.setattr(ownership, "alive", lambda pid, start: False)  # its process died
    removed, failures = ownership.sweep_dead(ownership.Context(client=_NoContainers()))
    assert removed == [] and len(failures) == 1 and "could not tell whether it is gone" in failures[0]
    assert Path(ledger.path).exists()
