"""One mapping from errors to what the user sees: our errors as a message and their exit status, anything
else as one line (the traceback only with -v)."""

from __future__ import annotations

import pytest

from protolab import cli
from protolab.errors import EXIT_BUSY, EXIT_ERROR, LabBusyError


def _failing(monkeypatch, exc):
    def boom(_args):
        raise exc

    monkeypatch.setattr(cli, "cmd_report", boom)


def test_our_errors_print_their_message_and_exit_status(monkeypatch, capsys):
    _failing(monkeypatch, LabBusyError({"pid": 42, "command": "run", "run_id": "r1"}))
    assert cli.main(["report", "x"]) == EXIT_BUSY
    err = capsys.readouterr().err
    assert err.startswith("protolab report: the lab state of this machine is held by PID 42") and "Traceback" not in err


def test_anything_else_is_one_line_and_the_traceback_only_with_verbose(monkeypatch, capsys):
    _failing(monkeypatch, ValueError("bad value"))
    assert cli.main(["report", "x"]) == EXIT_ERROR
    assert capsys.readouterr().err == "protolab report: ValueError: bad value (-v shows where)\n"
    with pytest.raises(ValueError, match="bad value"):
        cli.main(["-v", "report", "x"])


def test_report_loads_neither_the_spec_nor_a_lab():
    import subprocess
    import sys

    code = ("import sys, protolab.cli; protolab.cli.main(['report', '/nonexistent']); "
            "print(sorted(m for m in sys.modules if m.startswith('protolab')))")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = eval(out.stdout)  # a printed list of module names
    assert not [
        m for m in loaded if m.split(".")[1:2] in (["spec"], ["topo"], ["lab"], ["workloads"], ["orchestrator"])
    ]
    assert "cannot read" in out.stderr and "ResultsError" not in out.stderr  # ours: a message, no type name


def test_a_run_over_hosts_takes_an_inventory_or_emulated_hosts_not_both(capsys):
    with pytest.raises(SystemExit, match="protolab run: --inventory or --emulate-hosts, not both"):
        cli.main(["run", "smoke", "--dry-run", "--inventory", "x.yml", "--emulate-hosts", "a,b"])
    assert cli.main(["run", "multihost", "--dry-run", "--emulate-hosts", "a", "--emulate-hosts", "b"]) == 0
