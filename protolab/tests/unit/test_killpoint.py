"""The kill-point test hook: the n-th visit of the named site SIGKILLs the process, nothing else does, and the
processes it starts do not inherit the hook."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from protolab import killpoint

CHILD = """
import os, subprocess, sys
from protolab.killpoint import killpoint
for i in range(5):
    killpoint("ledger")
    print("ledger", i + 1, flush=True)
    killpoint("clean")
# the variable is gone from the environment of what this process starts
print("child env:", subprocess.run([sys.executable, "-c", "import os; print(os.environ.get('PROTOLAB_KILL_AT'))"],
      capture_output=True, text=True).stdout.strip(), flush=True)
"""


def _child(env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=60,
                          env={**os.environ, **env})  # fmt: skip


def test_the_nth_visit_of_its_site_kills_the_process():
    p = _child({killpoint.KILL_ENV: "ledger:3"})
    assert p.returncode == -signal.SIGKILL, p.stderr
    assert p.stdout.split("\n")[:-1] == ["ledger 1", "ledger 2"]


def test_other_sites_and_later_visits_do_not_kill():
    p = _child({killpoint.KILL_ENV: "ledger:6"})  # 5 visits only
    assert p.returncode == 0, p.stderr
    assert "ledger 5" in p.stdout and "child env: None" in p.stdout


def test_a_trace_counts_every_visit(tmp_path):
    trace = tmp_path / "trace"
    p = _child({killpoint.TRACE_ENV: str(trace)})
    assert p.returncode == 0, p.stderr
    assert trace.read_text().split() == ["ledger", "clean"] * 5


@pytest.mark.parametrize("value", ["ledger", "ledger:0", "ledger:x", "nowhere:1", ":3", "ledger:-1"])
def test_a_malformed_value_names_the_variable_and_the_sites(value):
    with pytest.raises(ValueError, match=r"PROTOLAB_KILL_AT=.*site one of ledger, row, teardown, clean, resume"):
        killpoint.parse(value)


def test_unset_it_is_cheap(monkeypatch):
    monkeypatch.delenv(killpoint.KILL_ENV, raising=False)
    monkeypatch.delenv(killpoint.TRACE_ENV, raising=False)
    killpoint.reset()
    killpoint.killpoint("ledger")  # reads the (empty) environment once
    t0 = time.perf_counter()
    for _ in range(100_000):
        killpoint.killpoint("ledger")
    per_call = (time.perf_counter() - t0) / 100_000
    assert per_call < 5e-6, per_call  # a global check and a return: ~0.1 us here
    killpoint.reset()
