"""Node chaos on a real lab (protolab.lab.chaos through fault schedules): a paused node's own traffic stops for the
pause while its kernel still answers, a stress is charged to the node's CPU, a changed CPU budget is the
container's for the phase and the budget before it after, and a kill spares what keeps the node alive.

One switched lab of two hosts; h2 has a budget of one core (NanoCpus), h1 none (the CFS-quota branch). The
node's CPU is what protolab measures: the agent's protolab_cpu_seconds_total, read from its /metrics.
"""

from __future__ import annotations

import posixpath
import re
import threading
import time
import urllib.request

import pytest

from protolab import cleanup, naming, topo
from protolab.lab import Lab, chaos
from protolab.lab.faults import Schedule
from protolab.model.faults import Event, Fault

pytestmark = pytest.mark.integration
IMAGE = "protolab/node:latest"
INTERVAL = 0.01


@pytest.fixture(scope="module")
def lab():
    t = topo.build("switched", {"hosts": 2, "rate": "100Mbit"})
    try:
        with Lab(t, "itest-chaos", {h.name: IMAGE for h in t.hosts}, cpus={"h2": 1.0}) as lab:
            yield lab
    finally:
        left = cleanup.leftovers()
        if left:
            cleanup.clean(verbose=False)
        assert left == [], f"left behind: {left}"


def _events(*faults: dict, seconds: float) -> list[Event]:
    return [e for f in faults for e in Fault.model_validate(f).events(seconds)]


def _replies(out: str) -> list[float]:
    """Unix times of the echo replies in `ping -D` output."""
    return [float(m) for m in re.findall(r"^\[(\d+\.\d+)\] \d+ bytes from", out, re.M)]


def _gaps(times: list[float], longer: float = 0.2) -> list[tuple[float, float]]:
    return [(a, b) for a, b in zip(times, times[1:], strict=False) if b - a > longer]


def _metric(lab: Lab, node: str, name: str) -> float:
    url = f"http://{lab.nodes[node].mgmt_ip}:{naming.AGENT_PORT}/metrics"
    text = urllib.request.urlopen(url, timeout=5).read().decode()
    m = re.search(rf"^{name} (\S+)$", text, re.M)
    assert m, f"{name} not in {node}'s metrics"
    return float(m.group(1))


def _cores(lab: Lab, node: str, seconds: float) -> float:
    """The node's CPU over `seconds`, in cores."""
    a, t = _metric(lab, node, "protolab_cpu_seconds_total"), time.monotonic()
    time.sleep(seconds)
    return (_metric(lab, node, "protolab_cpu_seconds_total") - a) / (time.monotonic() - t)


def test_a_paused_node_stops_its_own_traffic_for_the_pause_and_its_kernel_still_answers(lab):
    out: dict[str, str] = {}

    def ping(src: str, dst: str) -> None:
        out[src] = lab.exec(src, ["ping", "-D", "-n", "-i", str(INTERVAL), "-W", "1", "-w", "4", lab.ip(dst)])[1]

    threads = [threading.Thread(target=ping, args=p) for p in (("h2", "h1"), ("h1", "h2"))]
    for th in threads:
        th.start()
    time.sleep(0.3)  # pings are under way
    seen: list[tuple[str, bool]] = []

    def frozen(ev: Event) -> None:
        c = lab.nodes["h2"].container
        c.reload()
        seen.append((ev.action, c.attrs["State"]["Paused"]))

    schedule = Schedule(_events({"node": "h2", "at": "1s", "action": "pause", "for": "1s"}, seconds=3.0), lab,
                        on_event=frozen)  # fmt: skip
    schedule.start(time.monotonic())
    for th in threads:
        th.join(30)
    pause, unpause = schedule.stop()
    assert schedule.restore() == []
    assert (pause.error, unpause.error) == (None, None), (pause, unpause)
    assert seen == [("pause", True), ("unpause", False)], (out, pause, unpause)
    # h2's ping was frozen with it: one gap of the pause's second, where the pause was
    gaps = _gaps(_replies(out["h2"]))
    assert len(gaps) == 1, gaps
    a, b = gaps[0]
    assert 0.8 <= b - a <= 1.3, (a, b)
    assert abs(a - pause.wall) <= 0.1 and abs(b - unpause.wall) <= 0.1, (gaps, pause.wall, unpause.wall)
    # the freezer stops processes, not the kernel: h2 answered h1 all along
    assert _replies(out["h1"]) and not _gaps(_replies(out["h1"])), _gaps(_replies(out["h1"]))


@pytest.mark.parametrize("cores", [1.0, 0.5])
def test_a_stress_is_charged_to_the_nodes_cpu_and_ends_with_its_for(lab, cores):
    idle = _cores(lab, "h2", 1.0)
    stress = {"node": "h2", "at": "0s", "stress": {"cpu": cores, "memory": "16MiB"}, "for": "3s"}
    schedule = Schedule(_events(stress, seconds=4.0), lab)
    schedule.start(time.monotonic())
    time.sleep(0.5)
    busy = _cores(lab, "h2", 2.0)
    time.sleep(1.0)  # past the stress_stop at 3 s
    start, stop = schedule.stop()
    assert schedule.restore() == []
    after = _cores(lab, "h2", 1.0)
    assert (start.error, stop.error) == (None, None), (start, stop)
    assert cores - 0.25 <= busy - idle <= cores + 0.15, (idle, busy)  # h2's budget is one core
    assert after < idle + 0.15, (idle, after)
    assert not [p for p in chaos.processes(lab.nodes["h2"].container) if p.mark == "stress"]


def test_a_cpu_budget_change_is_the_containers_for_the_phase_and_restored_after(lab):
    h1, h2 = lab.nodes["h1"].container, lab.nodes["h2"].container
    schedule = Schedule(_events({"node": "h2", "at": "0.2s", "cpu": 0.25}, {"node": "h1", "at": "0.2s", "cpu": 0.5},
                                seconds=2.0), lab)  # fmt: skip
    schedule.start(time.monotonic())
    time.sleep(1.0)
    h1.reload()
    h2.reload()
    assert h2.attrs["HostConfig"]["NanoCpus"] == 250_000_000  # a budgeted node: NanoCpus
    assert (h1.attrs["HostConfig"]["NanoCpus"], h1.attrs["HostConfig"]["CpuQuota"]) == (0, 50_000)  # a quota
    assert _metric(lab, "h2", "protolab_cpu_quota_cores") == pytest.approx(0.25)  # what the cgroup has
    assert _metric(lab, "h1", "protolab_cpu_quota_cores") == pytest.approx(0.5)
    done = schedule.stop()
    assert [e.error for e in done] == [None, None], done
    assert schedule.restore() == []
    h1.reload()
    h2.reload()
    assert h2.attrs["HostConfig"]["NanoCpus"] == 1_000_000_000
    assert h1.attrs["HostConfig"]["CpuQuota"] == -1  # unlimited again
    assert _metric(lab, "h2", "protolab_cpu_quota_cores") == pytest.approx(1.0)
    assert _metric(lab, "h1", "protolab_cpu_quota_cores") == 0.0  # 0: no limit


def test_a_kill_spares_the_container_and_a_restart_brings_a_daemon_back(lab):
    c = lab.nodes["h2"].container
    lab.exec("h2", ["sh", "-c", "sleep 300 >/dev/null 2>&1 &"])  # a daemon: orphaned, a child of the init
    assert any(p.argv == ("sleep", "300") and p.ppid == 1 for p in chaos.processes(c))
    schedule = Schedule(_events({"node": "h2", "at": "0.2s", "action": "kill", "for": "0.5s"}, seconds=2.0), lab)
    schedule.start(time.monotonic())
    time.sleep(1.2)
    kill, restart = schedule.stop()
    try:
        assert (kill.error, restart.error) == (None, None), (kill, restart)
        assert "sleep 300" in (kill.detail or "") and "restarted: sleep 300" in (restart.detail or "")
        left = chaos.processes(c)
        names = sorted(posixpath.basename(p.argv[0]) for p in left if p.argv)
        assert names == ["docker-init", "protolab-agent", "sleep"], left
        assert [p.mark for p in left if p.argv == ("sleep", "300")] == ["service"]
        c.reload()
        assert c.attrs["State"]["Running"]  # the container, its namespace and Mininet's interfaces live on
        assert _metric(lab, "h2", "protolab_cpu_seconds_total") > 0  # its agent too
        code, _, _ = lab.exec("h1", ["ping", "-c", "2", "-i", "0.2", "-W", "1", lab.ip("h2")])
        assert code == 0
        assert schedule.restore() == []
    finally:
        lab.exec("h2", ["pkill", "-f", "sleep 300"])
