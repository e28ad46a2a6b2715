"""The wait for IP reassembly state to drain between measurements (the kernel side is in the integration
test test_reassembly)."""

from __future__ import annotations

from pathlib import Path

from protolab.lab import reassembly

from .fakeclock import Clock

SOCKSTAT = """sockets: used 24
TCP: inuse 1 orphan 0 tw 0 alloc 1 mem 12
UDP: inuse 0 mem 0
RAW: inuse 0
FRAG: inuse 3 memory 4194560
"""
SOCKSTAT6 = "TCP6: inuse 0\nFRAG6: inuse 1 memory 1024\n"


def test_parse_reads_the_labelled_line_only():
    assert reassembly.parse_frag_memory(SOCKSTAT, "FRAG:") == 4194560
    assert reassembly.parse_frag_memory(SOCKSTAT6, "FRAG6:") == 1024
    assert reassembly.parse_frag_memory(SOCKSTAT, "FRAG6:") == 0  # no such line: nothing held


def test_held_bytes_adds_v4_and_v6_and_tolerates_a_namespace_without_v6(tmp_path: Path):
    (tmp_path / "7" / "net").mkdir(parents=True)
    (tmp_path / "7" / "net" / "sockstat").write_text(SOCKSTAT)
    assert reassembly.held_bytes(7, tmp_path) == 4194560
    (tmp_path / "7" / "net" / "sockstat6").write_text(SOCKSTAT6)
    assert reassembly.held_bytes(7, tmp_path) == 4194560 + 1024
    assert reassembly.held_bytes(8, tmp_path) == 0  # the process is gone, and its namespace with it


def _wait(held_until: dict[str, float], bound: float = 35.0) -> tuple[dict[str, int], list[str], float]:
    clock, said = Clock(), []
    pids = {name: i for i, name in enumerate(held_until)}
    names = {i: name for name, i in pids.items()}

    def held(pid: int) -> int:
        return 5000 if clock.t - 100.0 < held_until[names[pid]] else 0

    left = reassembly.wait_drained(pids, bound, said.append, held, clock.now, clock.sleep)
    return left, said, clock.t - 100.0


def test_nothing_held_passes_at_once_and_silently():
    assert _wait({"h1": 0, "h2": 0}) == ({}, [], 0.0)


def test_waits_for_the_last_namespace_and_says_so():
    left, said, waited = _wait({"h1": 2.0, "h2": 12.0})
    assert left == {}
    assert 12.0 <= waited < 12.0 + 2 * reassembly.POLL_SECONDS
    assert len(said) == 2
    assert "h1 0.01 MB, h2 0.01 MB" in said[0] and "at most 35s" in said[0]
    assert said[1].strip().startswith("IP fragments drained after 12.")


def test_a_short_wait_is_not_announced():
    left, said, _ = _wait({"h1": 0.5})
    assert (left, said) == ({}, [])


def test_gives_up_at_the_bound_and_names_what_is_held():
    left, _, waited = _wait({"h1": 1.0, "h2": 1e9}, bound=10.0)
    assert left == {"h2": 5000}
    assert 10.0 <= waited < 10.0 + 2 * reassembly.POLL_SECONDS
    why = reassembly.describe(left, 10.0)
    assert "h2 (5000 bytes)" in why and "10s" in why
