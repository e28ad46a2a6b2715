"""protolab.lab.rxcpu on a fake /proc and /sys/fs/cgroup: which cgroups hold a task's CPU, how kthreads are found and
moved, and that bad modes and a missing kthread are refused with the reason."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from protolab.lab import rxcpu

C1 = "docker/0123abcd"


def _proc(tmp: Path, pid: int, comm: str, cgroup: str) -> None:
    d = tmp / "proc" / str(pid)
    d.mkdir(parents=True)
    (d / "comm").write_text(comm + "\n")
    (d / "cgroup").write_text(cgroup)


def _v1(tmp: Path, *mounts: str) -> Path:
    root = tmp / "cg"
    for m in mounts:
        (root / m / C1).mkdir(parents=True)
        (root / m / "tasks").write_text("")
        (root / m / C1 / "tasks").write_text("")
    return root


def test_separate_cpu_and_cpuacct_hierarchies_are_both_found(tmp_path):
    root = _v1(tmp_path, "cpu", "cpuacct")
    _proc(tmp_path, 7, "sh", f"4:memory:/x\n2:cpuacct:/{C1}\n1:cpu:/{C1}\n0::/\n")
    got = rxcpu.cpu_cgroups(7, tmp_path / "proc", root)
    assert got == [(root / "cpuacct", root / "cpuacct" / C1), (root / "cpu", root / "cpu" / C1)]


def test_a_joint_cpu_cpuacct_hierarchy_and_pure_v2(tmp_path):
    root = _v1(tmp_path, "cpu,cpuacct")
    _proc(tmp_path, 7, "sh", f"3:cpu,cpuacct:/{C1}\n")
    assert rxcpu.cpu_cgroups(7, tmp_path / "proc", root) == [(root / "cpu,cpuacct", root / "cpu,cpuacct" / C1)]
    v2 = tmp_path / "v2"
    (v2 / "system.slice" / "x").mkdir(parents=True)
    (v2 / "cgroup.controllers").write_text("cpu\n")
    _proc(tmp_path, 8, "sh", "0::/system.slice/x\n")
    assert rxcpu.cpu_cgroups(8, tmp_path / "proc", v2) == [(v2, v2 / "system.slice" / "x")]


def test_no_cpu_cgroup_is_an_error_not_a_guess(tmp_path):
    _proc(tmp_path, 7, "sh", "4:memory:/x\n0::/\n")
    with pytest.raises(ValueError, match="no cpu/cpuacct"):
        rxcpu.cpu_cgroups(7, tmp_path / "proc", tmp_path / "nothing")


def test_napi_threads_are_found_by_name(tmp_path):
    _proc(tmp_path, 10, "napi/h1-eth0-26", "1:cpu:/\n")
    _proc(tmp_path, 11, "kworker/0:1", "1:cpu:/\n")
    (tmp_path / "proc" / "self").mkdir()
    assert rxcpu.napi_threads(tmp_path / "proc") == {10: "napi/h1-eth0-26"}


def test_orphans_go_back_to_the_root_and_root_ones_stay(tmp_path):
    root = _v1(tmp_path, "cpu", "cpuacct")
    _proc(tmp_path, 10, "napi/h1-eth0-26", f"2:cpuacct:/{C1}\n1:cpu:/{C1}\n")
    _proc(tmp_path, 11, "napi/h2-eth0-27", "2:cpuacct:/\n1:cpu:/\n")
    assert rxcpu.release_orphans(tmp_path / "proc", root) == [10]
    assert (root / "cpu" / "tasks").read_text() == "10\n" and (root / "cpuacct" / "tasks").read_text() == "10\n"


def test_modes_are_checked_and_in_context_touches_nothing(tmp_path):
    with pytest.raises(ValueError, match="node, in_context"):
        rxcpu.ReceiveCpu("softirq")
    rc = rxcpu.ReceiveCpu("in_context", proc=tmp_path)
    assert rc.attach("h1", 1, ["h1-eth0"]) == [] and rc.manifest()["napi_threads"] == {}
    assert "default" in rc.manifest()["mechanism"]


def test_a_missing_kthread_is_refused_with_what_was_found(tmp_path, monkeypatch):
    (tmp_path / "proc").mkdir()
    monkeypatch.setattr(rxcpu, "run", lambda *a, **k: "")  # the kernel made no thread
    rc = rxcpu.ReceiveCpu("node", proc=tmp_path / "proc", root=tmp_path)
    with pytest.raises(RuntimeError, match="expected a NAPI kthread per interface"):
        rc.attach("h1", 1, ["h1-eth0"])


def test_irq_time_accounting_is_read_from_the_kernel_config(tmp_path):
    f = tmp_path / "config.gz"
    f.write_bytes(gzip.compress(b"# x\nCONFIG_IRQ_TIME_ACCOUNTING=y\n"))
    assert rxcpu.irq_time_accounting(f) is True
    f.write_bytes(gzip.compress(b"# x\n# CONFIG_IRQ_TIME_ACCOUNTING is not set\n"))
    assert rxcpu.irq_time_accounting(f) is False
    assert rxcpu.irq_time_accounting(tmp_path / "absent.gz") is None


def test_a_new_kthread_the_kernel_will_not_move_yet_is_moved_once_it_has_run(tmp_path, monkeypatch):
    """EINVAL until the kthread's first run (no_cgroup_migration): tried again, not a failed deployment."""
    import errno

    calls: list[int] = []

    def refusing(pid, directory):
        calls.append(pid)
        if len(calls) < 3:
            raise OSError(errno.EINVAL, "Invalid argument")

    monkeypatch.setattr(rxcpu, "move", refusing)
    rxcpu.move_new_kthread(42, tmp_path, sleep=lambda _s: None)
    assert calls == [42, 42, 42]


def test_a_kthread_the_kernel_keeps_refusing_is_an_error_naming_it(tmp_path, monkeypatch):
    import errno

    now = [0.0]

    def refusing(pid, directory):
        raise OSError(errno.EINVAL, "Invalid argument")

    def sleep(s):
        now[0] += s

    monkeypatch.setattr(rxcpu, "move", refusing)
    with pytest.raises(OSError, match="napi kthread 42 into") as exc:
        rxcpu.move_new_kthread(42, tmp_path, sleep=sleep, clock=lambda: now[0])
    assert exc.value.errno == errno.EINVAL and now[0] >= rxcpu.KTHREAD_READY_SECONDS


def test_other_refusals_are_not_tried_again(tmp_path, monkeypatch):
    import errno

    calls: list[int] = []

    def refusing(pid, directory):
        calls.append(pid)
        raise OSError(errno.ESRCH, "No such process")

    monkeypatch.setattr(rxcpu, "move", refusing)
    with pytest.raises(OSError):
        rxcpu.move_new_kthread(42, tmp_path, sleep=lambda _s: None)
    assert calls == [42]
