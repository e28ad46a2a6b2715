"""The self-saturation guard's arithmetic, on captured /proc snapshots."""

from __future__ import annotations

import pytest

from protolab import counters
from protolab.lab import guard


def _snap(idle: float, busy: float, softirq: float = 0.0, dropped: int = 0, qdisc: int = 0, lab: float = 0.0,
          at: float = 0.0, steal: float = 0.0) -> guard.Snapshot:  # fmt: skip
    cpu = {"user": busy, "idle": idle, "softirq": softirq, "iowait": 0.0, "steal": steal}
    return guard.Snapshot(cpu, dropped, 0, {"x": qdisc}, lab, at)


def test_softnet_stat_is_summed_over_cpus(tmp_path):
    f = tmp_path / "softnet_stat"
    f.write_text("0000a000 00000002 00000003 0 0 0 0 0 0 0 0\n00000001 00000010 00000001 0 0 0 0 0 0 0 0\n")
    assert counters.softnet(f) == (0x12, 0x4)


def test_quiet_interval_is_valid():
    figures, reasons = guard.assess(_snap(100, 10), _snap(190, 20))
    assert reasons == [] and 0.09 < figures["host_cpu_busy_ratio"] < 0.11


def test_saturated_cpu_softirq_and_drops_are_reasons():
    _, reasons = guard.assess(_snap(100, 10, 0, 0, 5), _snap(101, 60, 60, 3, 9))
    text = " ".join(reasons)
    assert "CPU" in text and "softirq" in text and "softnet" in text and "nobody configured" in text


def test_load_outside_the_lab_is_a_reason():
    # 10 s: 12 CPU-seconds busy, of which the lab's containers used 2: 1 core of foreign load
    figures, reasons = guard.assess(_snap(0, 0, lab=0, at=0), _snap(8, 12, lab=2, at=10))
    assert figures["foreign_cpu_cores"] == 1.0 and "outside the lab used 1.00 cores" in " ".join(reasons)
    figures, reasons = guard.assess(_snap(0, 0, lab=0, at=0), _snap(8, 12, lab=11, at=10))
    assert figures["foreign_cpu_cores"] == 0.1 and reasons == []


def test_cpu_steal_is_the_hypervisors_not_a_process_outside_the_lab():
    # 10 s: 5 CPU-seconds of user time (the lab's 2 among them) and 7 the hypervisor withheld (steal)
    figures, reasons = guard.assess(_snap(0, 0, at=0), _snap(8, 5, lab=2, at=10, steal=7))
    assert abs(figures["host_cpu_steal_cores"] - 0.7) < 1e-9 and abs(figures["foreign_cpu_cores"] - 0.3) < 1e-9
    assert reasons == ["the hypervisor withheld 0.70 cores from this virtual machine (CPU steal, > 0.5)"], reasons
    # 0.3 cores of steal and 0.8 of foreign load: only the load is a reason
    figures, reasons = guard.assess(_snap(0, 0, at=0), _snap(8, 8, at=10, steal=3))
    assert abs(figures["host_cpu_steal_cores"] - 0.3) < 1e-9, figures
    assert reasons == ["processes outside the lab used 0.80 cores (> 0.5)"], reasons


def test_cgroup_cpu_of_this_process_is_readable():
    import os

    assert (counters.cgroup_cpu_seconds(os.getpid()) or 0) > 0


def test_a_process_that_went_away_is_not_negative_lab_cpu():
    """The previous lab's engine processes exiting between the snapshots used to subtract their whole lifetime."""
    cpu0 = {"user": 0.0, "system": 0.0, "idle": 0.0}
    cpu1 = {"user": 1.0, "system": 0.0, "idle": 1.0}
    before = guard.Snapshot(cpu0, 0, 0, {}, 100.4, 0.0, {"cgroup:1": 0.2, "10@1.0": 100.0, "self": 0.2})
    after = guard.Snapshot(cpu1, 0, 0, {}, 1.1, 1.0, {"cgroup:1": 0.9, "self": 0.2, "11@2.0": 0.0})
    figures, reasons = guard.assess(before, after)
    assert abs(figures["foreign_cpu_cores"] - 0.3) < 1e-9, figures
    assert reasons == []


def test_a_serving_process_counts_as_the_labs_cpu_with_its_reaped_children():
    import os
    import subprocess

    before = guard.process_cpu([os.getpid()])
    subprocess.run(["sh", "-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"], check=True)  # a reaped child
    after = guard.process_cpu([os.getpid()])
    (key,) = after
    assert key.startswith(f"proc:{os.getpid()}@") and after[key] > before[key]
    assert guard.process_cpu([2**22 + 7]) == {}  # no such process: nothing to count


def test_each_host_with_a_kernel_of_its_own_is_assessed_from_its_keepers_snapshots():
    import dataclasses

    quiet = (_snap(100, 10, lab=0, at=0), _snap(190, 20, lab=10, at=10))  # its lab used what was busy
    busy = (_snap(0, 0, lab=0, at=0), _snap(0.5, 20, lab=2, at=10))  # 98 % busy, 1.8 cores outside its lab
    before = {"far": dataclasses.asdict(quiet[0]), "near": dataclasses.asdict(busy[0]), "gone": {}}
    after = {"far": dataclasses.asdict(quiet[1]), "near": dataclasses.asdict(busy[1])}
    figures, reasons = guard.assess_hosts(before, after)
    assert set(figures) == {"far", "near"} and figures["far"]["host_cpu_busy_ratio"] < 0.2
    assert any(r.startswith("on near: host CPU 98% busy") for r in reasons), reasons
    assert any(r.startswith("on near: processes outside the lab used 1.80 cores") for r in reasons), reasons
    assert "on gone: no guard reading after the measurement" in reasons
    assert not any(r.startswith("on far") for r in reasons)
    assert guard.from_json(dataclasses.asdict(quiet[1]) | {"extra": 1}) == quiet[1]


def test_the_peak_rate_is_the_worst_window_not_the_mean():
    # 10 s sampled every 0.25 s: 0.6 s of steal in the second from 4 s on, none else (mean 0.06 cores)
    samples = [(t / 4, 0.6 * min(max(t / 4 - 4.0, 0.0), 1.0)) for t in range(41)]
    assert guard.peak_rate(samples, 1.0) == pytest.approx(0.6)
    assert guard.peak_rate(samples, 10.0) == pytest.approx(0.06)
    assert guard.peak_rate(samples[:3], 1.0) == pytest.approx(0.0)  # shorter than the window: its whole span
    assert guard.peak_rate([(0.0, 0.0), (0.5, 0.2)], 1.0) == pytest.approx(0.4)
    assert guard.peak_rate([(0.0, 5.0)], 1.0) == 0.0 and guard.peak_rate([], 1.0) == 0.0
    # a window that is longer than one second because a sample came late: its rate over its own length
    assert guard.peak_rate([(0.0, 0.0), (0.9, 0.0), (1.5, 0.9), (2.0, 0.9)], 1.0) == pytest.approx(0.9 / 1.1)


def test_steal_in_one_second_disturbs_a_measurement_whose_mean_is_low():
    figures, reasons = guard.assess(_snap(0, 0, at=0), _snap(8, 1, at=10, steal=0.6), steal_peak=0.55)
    assert figures["host_cpu_steal_cores"] == pytest.approx(0.06) and figures["host_cpu_steal_cores_peak"] == 0.55
    assert guard.disturbed(figures) == ["steal in a second of it"]
    assert reasons == ["the hypervisor withheld 0.55 cores from this virtual machine over 1 s of the measurement "
                       "(CPU steal, > 0.5)"], reasons  # fmt: skip
    figures, reasons = guard.assess(_snap(0, 0, at=0), _snap(8, 1, at=10, steal=0.6), steal_peak=0.3)
    assert guard.disturbed(figures) == [] and reasons == []
    # over the bound on the whole: one reason, not two
    figures, reasons = guard.assess(_snap(0, 0, at=0), _snap(8, 1, at=10, steal=7), steal_peak=0.9)
    assert guard.disturbed(figures) == ["steal"] and len(reasons) == 1


def test_the_steal_watch_samples_while_the_interval_lasts():
    import time

    reads = iter(float(i) * 0.01 for i in range(10_000))
    with guard.StealWatch(read=lambda: next(reads), every=0.01, window=0.05) as watch:
        time.sleep(0.2)
    n = len(watch.samples)
    assert n >= 5 and [v for _t, v in watch.samples] == [i * 0.01 for i in range(n)]
    assert watch.peak > 0 and watch.stop() == watch.peak and len(watch.samples) == n  # a second stop is a no-op
