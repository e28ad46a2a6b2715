"""The one cgroup CPU reader, against a cgroup tree laid out like v1's and like v2's."""

from __future__ import annotations

import os
from pathlib import Path

from protolab import counters


def _own_cgroups() -> list[tuple[str, str]]:
    return [tuple(line.split(":", 2)[1:]) for line in Path(f"/proc/{os.getpid()}/cgroup").read_text().splitlines()]


def test_v2_reads_usage_usec_of_the_process_cgroup(tmp_path):
    path = next((p for c, p in _own_cgroups() if c == ""), None)
    if path is None:
        return  # a pure v1 host: the v1 test below covers it
    d = tmp_path / path.lstrip("/")
    d.mkdir(parents=True, exist_ok=True)
    (d / "cpu.stat").write_text("usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\n")
    assert counters.cgroup_cpu_seconds(os.getpid(), root=tmp_path) == 2.5


def test_missing_accounting_or_process_is_none(tmp_path):
    assert counters.cgroup_cpu_seconds(os.getpid(), root=tmp_path) is None
    assert counters.cgroup_cpu_seconds(2**22 + 12345) is None  # above pid_max: no such process


def test_the_real_cgroup_of_this_process_has_used_cpu():
    assert (counters.cgroup_cpu_seconds(os.getpid()) or 0) > 0
