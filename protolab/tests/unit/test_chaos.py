"""Node chaos against a fake container (the one mock, at docker-py's boundary): what kill spares and remembers,
restart, pause, stress, the CPU budget's two branches, restore's bookkeeping, the schedule and the gauges."""

from __future__ import annotations

import base64
import csv
import shutil
import subprocess
import threading
import time
from collections import namedtuple
from types import SimpleNamespace

import pytest

from protolab.exporter import FaultExporter
from protolab.lab import chaos
from protolab.lab.chaos import MARK, Chaos, ChaosError, Proc
from protolab.lab.faults import Schedule
from protolab.model.faults import Fault
from protolab.results.store import write_faults_csv

ExecResult = namedtuple("ExecResult", "exit_code output")  # docker-py's
AGENT = ("/usr/local/bin/protolab-agent", "--listen", ":9100")


def node_procs() -> list[Proc]:
    return [
        Proc(1, 0, 100, "", "/", ("/sbin/docker-init", "--", *AGENT)),
        Proc(7, 1, 101, "", "/", AGENT),  # the container's main command
        Proc(20, 0, 500, "", "/", ("iperf3", "-s", "-1", "-J", "-p", "5201")),  # a task's, through docker exec
        Proc(30, 0, 600, "", "/tmp", ("sh", "-c", "sleep 100 & wait")),
        Proc(31, 30, 601, "", "/tmp", ("sleep", "100")),  # its child
        Proc(40, 1, 300, "", "/", ("smcrouted", "-n")),  # a daemon a task left running: a child of the init
    ]


class FakeApi:
    """The engine's update endpoint with moby's rules: NanoCpus and a CFS quota exclude each other once set,
    and 0 means "no change"."""

    def __init__(self, c: FakeContainer) -> None:
        self.c, self.posts = c, []

    def _url(self, path: str, *args: str) -> str:
        return path.format(*args)

    def _post_json(self, url: str, data: dict[str, int]) -> dict[str, int]:
        assert url == f"/containers/{self.c.id}/update"
        hc = self.c.attrs["HostConfig"]
        if data.get("NanoCpus", 0) > 0 and (hc["CpuQuota"] > 0 or hc["CpuPeriod"] > 0):
            raise RuntimeError("Conflicting options: Nano CPUs cannot be updated as CPU Quota has already been set")
        if (data.get("CpuQuota", 0) > 0 or data.get("CpuPeriod", 0) > 0) and hc["NanoCpus"] > 0:
            raise RuntimeError("Conflicting options: CPU Quota cannot be updated as NanoCPUs has already been set")
        self.posts.append(data)
        hc.update({k: v for k, v in data.items() if v != 0})
        return data

    def _result(self, res: object, json: bool = False) -> dict[str, None]:
        return {"Warnings": None}


class FakeContainer:
    """A docker-py Container as chaos uses it, over a process table in the container's PID namespace."""

    def __init__(self, procs: list[Proc] | None = None, nano: int = 0) -> None:
        self.id = "c0ffee"
        self.client = SimpleNamespace(api=FakeApi(self))
        self.attrs = {"State": {"Paused": False}, "HostConfig": {"NanoCpus": nano, "CpuQuota": 0, "CpuPeriod": 0}}
        self.procs = {p.pid: p for p in (node_procs() if procs is None else procs)}
        self.execs: list[dict] = []
        self.next_pid, self.tick = 1000, 10_000
        self.after_kill: list[Proc] = []  # started meanwhile: found by the next listing
        self.respawn = False  # a process that comes back whatever is done
        self.stress_starts = True

    def reload(self) -> None:
        pass

    def pause(self) -> None:
        if self.attrs["State"]["Paused"]:
            raise RuntimeError(f"Container {self.id} is already paused")
        self.attrs["State"]["Paused"] = True

    def unpause(self) -> None:
        if not self.attrs["State"]["Paused"]:
            raise RuntimeError(f"Container {self.id} is not paused")
        self.attrs["State"]["Paused"] = False

    def cores(self) -> float | None:
        """The budget the cgroup gets (moby's getCPUResources): None = unlimited."""
        hc, period, quota = self.attrs["HostConfig"], 100_000, None
        if hc["NanoCpus"] > 0:
            quota = hc["NanoCpus"] * period // 10**9
        period = hc["CpuPeriod"] or period
        quota = hc["CpuQuota"] or quota
        return None if quota in (None, -1) else quota / period

    def _new(self, argv: list[str], mark: str, cwd: str, ppid: int = 0) -> Proc:
        self.next_pid += 1
        self.tick += 1
        p = Proc(self.next_pid, ppid, self.tick, mark, cwd, tuple(argv))
        self.procs[p.pid] = p
        return p

    def listing(self) -> bytes:
        def b64(s: str) -> str:
            return base64.b64encode(s.encode()).decode() or "-"

        lines = [f"{p.pid} {p.ppid} {p.start} {p.mark or '-'} {b64(p.cwd)} {b64(chr(0).join(p.argv) + chr(0))}"
                 for p in self.procs.values()]  # fmt: skip
        return ("\n".join(lines) + "\n").encode()

    def exec_run(self, cmd, environment=None, detach=False, workdir=None, demux=False):
        if self.attrs["State"]["Paused"]:
            raise RuntimeError(f"Container {self.id} is paused, unpause the container before exec")
        self.execs.append({"cmd": cmd, "env": environment, "detach": detach, "workdir": workdir})
        if cmd == ["sh", "-c", chaos.LIST_SCRIPT]:
            return ExecResult(0, (self.listing(), b""))
        if cmd[:3] == ["sh", "-c", chaos.KILL_SCRIPT]:
            for pid in cmd[4:]:
                p = self.procs.pop(int(pid), None)
                if p is not None and self.respawn:
                    self._new(list(p.argv), p.mark, p.cwd, p.ppid)
            for p in self.after_kill:
                self.procs[p.pid] = p
            self.after_kill = []
            return ExecResult(0, (b"", b""))
        assert detach, cmd
        mark = (environment or {}).get(MARK, "")
        if cmd[0] != "timeout":
            self._new(cmd, mark, workdir or "/")
        elif self.stress_starts:  # timeout, its sh and the busy loops, all in its environment
            t = self._new(cmd, mark, "/")
            sh = self._new(cmd[4:6], mark, "/", t.pid)
            for _ in range(int(cmd[8]) + (cmd[9] != "0")):
                self._new(["sh", "-c", "spin"], mark, "/", sh.pid)
        return ExecResult(None, b"")

    def commands(self) -> set[tuple[str, ...]]:
        return {p.argv for p in self.procs.values()}

    def detached(self) -> list[dict]:
        return [e for e in self.execs if e["detach"]]


def lab_of(**containers: FakeContainer) -> SimpleNamespace:
    return SimpleNamespace(nodes={n: SimpleNamespace(container=c) for n, c in containers.items()})


# -- kill and restart -------------------------------------------------------------------------------------


def test_kill_spares_the_init_and_the_main_command_and_remembers_what_to_start_again():
    c = FakeContainer()
    ch = Chaos(lab_of(h2=c))
    outcome = ch.kill("h2")
    assert sorted(c.procs) == [1, 7]  # the container (and its network namespace) lives on
    assert outcome == "killed 4: iperf3 -s -1 -J -p 5201, sh -c sleep 100 & wait, sleep 100, smcrouted -n"
    killed = {k.argv: (k.cwd, k.service) for k in ch.nodes["h2"].killed}
    assert killed == {("iperf3", "-s", "-1", "-J", "-p", "5201"): ("/", False),
                      ("sh", "-c", "sleep 100 & wait"): ("/tmp", False),  # not its child: the tree's first
                      ("smcrouted", "-n"): ("/", True)}  # fmt: skip
    assert ch.kill("h2") == "nothing to kill"


def test_a_pid_1_that_is_the_main_command_is_all_that_is_spared():
    c = FakeContainer([Proc(1, 0, 100, "", "/", AGENT), Proc(9, 1, 200, "", "/", ("sleep", "9"))])
    Chaos(lab_of(h2=c)).kill("h2")
    assert sorted(c.procs) == [1]


def test_kill_lists_again_until_nothing_is_left_but_remembers_only_what_ran_when_it_began():
    c = FakeContainer()
    c.after_kill = [Proc(50, 1, 700, "", "/", ("sleep", "5"))]  # a child being started, orphaned meanwhile
    ch = Chaos(lab_of(h2=c))
    assert ch.kill("h2").startswith("killed 5")
    assert sorted(c.procs) == [1, 7]
    assert ("sleep", "5") not in {k.argv for k in ch.nodes["h2"].killed}
    assert sum(e["cmd"][2] == chaos.KILL_SCRIPT for e in c.execs) == 2


def test_kill_gives_up_on_what_keeps_coming_back():
    c = FakeContainer()
    c.respawn = True
    with pytest.raises(ChaosError, match="still running after 3 rounds of SIGKILL: iperf3"):
        Chaos(lab_of(h2=c)).kill("h2")


def test_restart_starts_the_killed_trees_again_detached_and_marked():
    c = FakeContainer()
    ch = Chaos(lab_of(h2=c))
    ch.kill("h2")
    assert ch.restart("h2").startswith("restarted: iperf3 -s -1 -J -p 5201, sh -c sleep 100 & wait, smcrouted -n")
    started = {tuple(e["cmd"]): (e["env"][MARK], e["workdir"]) for e in c.detached()}
    assert started == {("iperf3", "-s", "-1", "-J", "-p", "5201"): ("restart", "/"),
                       ("sh", "-c", "sleep 100 & wait"): ("restart", "/tmp"),
                       ("smcrouted", "-n"): ("service", "/")}  # fmt: skip
    assert ch.nodes["h2"].killed == [] and ch.nodes["h2"].restarted
    with pytest.raises(ChaosError, match="nothing to restart on h2: no kill in this phase ended a process"):
        ch.restart("h2")


def test_a_restart_without_a_kill_is_an_error():
    with pytest.raises(ChaosError, match="nothing to restart on h2"):
        Chaos(lab_of(h2=FakeContainer())).restart("h2")


def test_an_unknown_node_is_an_error():
    with pytest.raises(ChaosError, match="no node h9 in this lab"):
        Chaos(lab_of(h2=FakeContainer())).pause("h9")


# -- pause, stress, cpu -----------------------------------------------------------------------------------


def test_pause_freezes_and_a_paused_node_refuses_exec():
    c = FakeContainer()
    ch = Chaos(lab_of(h2=c))
    ch.pause("h2")
    assert c.attrs["State"]["Paused"] and ch.nodes["h2"].paused
    with pytest.raises(RuntimeError, match="is paused"):
        ch.kill("h2")
    ch.unpause("h2")
    assert not c.attrs["State"]["Paused"] and not ch.nodes["h2"].paused


@pytest.mark.parametrize(
    ("cores", "memory", "args"),
    [(1.5, 64 * 2**20, ["1", "0.05", "0.05", str(64 * 2**20)]), (0.25, None, ["0", "0.025", "0.075", "0"]),
     (2, None, ["2", "0", "0.1", "0"]), (0.995, None, ["1", "0", "0.1", "0"]),
     (0, 2**20, ["0", "0", "0.1", "1048576"])],
)  # fmt: skip
def test_stress_runs_busy_loops_in_the_node_under_a_deadline(cores, memory, args):
    c = FakeContainer()
    ch = Chaos(lab_of(h2=c))
    ch.stress("h2", cores, memory, 3.0)
    (e,) = c.detached()
    assert e["cmd"] == ["timeout", "-s", "KILL", "8", "sh", "-c", chaos.STRESS_SCRIPT, "protolab-stress", *args]
    assert e["env"] == {MARK: "stress"} and ch.nodes["h2"].stressed


def test_stopping_a_stress_kills_only_its_processes():
    c = FakeContainer()
    ch = Chaos(lab_of(h2=c))
    assert ch.stress("h2", 1.5, None, 3.0) == "1 busy loop(s) and one 50% of the time"
    assert any(p.mark == "stress" for p in c.procs.values())
    assert ch.stop_stress("h2") == "stopped 4 stress process(es)"
    assert c.commands() == {p.argv for p in node_procs()}


def test_a_stress_that_did_not_start_is_an_error():
    c = FakeContainer()
    c.stress_starts = False
    with pytest.raises(ChaosError, match="the stress on h2 did not start"):
        Chaos(lab_of(h2=c)).stress("h2", 1, None, 3.0)


def test_a_budgeted_node_gets_nano_cpus_and_them_back():
    c = FakeContainer(nano=10**9)
    ch = Chaos(lab_of(h2=c))
    assert ch.set_cpu("h2", 0.25) == "budget 0.25 cores (was 1)"
    assert c.attrs["HostConfig"]["NanoCpus"] == 250_000_000 and c.cores() == 0.25
    assert ch.restore_cpu("h2") == "budget back to 1 cores"
    assert c.attrs["HostConfig"]["NanoCpus"] == 10**9 and c.cores() == 1.0
    assert ch.restore_cpu("h2") is None  # nothing changed since


def test_a_node_without_a_budget_gets_a_quota_it_can_lose_again_phase_after_phase():
    c = FakeContainer(nano=0)
    for cores in (0.5, 0.25):  # a new Chaos per phase, as each phase's schedule has
        ch = Chaos(lab_of(h2=c))
        assert ch.set_cpu("h2", cores) == f"budget {cores:g} cores (was unlimited)"
        assert c.cores() == cores
        assert ch.restore() == []
        assert c.cores() is None and c.attrs["HostConfig"]["NanoCpus"] == 0
    assert c.client.api.posts[-1] == {"CpuQuota": -1}


# -- restore ----------------------------------------------------------------------------------------------


def test_restore_puts_every_node_back():
    h1, h2 = FakeContainer(nano=10**9), FakeContainer()
    ch = Chaos(lab_of(h1=h1, h2=h2))
    ch.kill("h2")
    ch.stress("h2", 1, 2**20, 5.0)
    ch.set_cpu("h1", 0.5)
    ch.pause("h1")
    assert ch.restore() == []
    assert not h1.attrs["State"]["Paused"] and h1.attrs["HostConfig"]["NanoCpus"] == 10**9
    assert not any(p.mark == "stress" for p in h2.procs.values())
    # the daemon came back; the tasks' processes did not (their runners saw them die)
    assert h2.commands() == {AGENT, ("/sbin/docker-init", "--", *AGENT), ("smcrouted", "-n")}
    assert [p.mark for p in h2.procs.values() if p.argv == ("smcrouted", "-n")] == ["service"]
    assert ch.restore() == []  # nothing left to do: no second daemon


def test_restore_ends_the_copies_a_restart_started_and_keeps_the_daemons():
    c = FakeContainer()
    ch = Chaos(lab_of(h2=c))
    ch.kill("h2")
    ch.restart("h2")
    assert ch.restore() == []
    assert c.commands() == {AGENT, ("/sbin/docker-init", "--", *AGENT), ("smcrouted", "-n")}
    assert not ch.nodes["h2"].restarted


def test_restore_tries_every_step_and_says_what_failed():
    c = FakeContainer(nano=10**9)
    ch = Chaos(lab_of(h2=c))
    ch.stress("h2", 1, None, 5.0)
    ch.set_cpu("h2", 0.5)
    ch.pause("h2")
    c.unpause = lambda: (_ for _ in ()).throw(RuntimeError("engine gone"))
    failures = ch.restore()
    paused = f"Container {c.id} is paused, unpause the container before exec"
    assert failures == ["node h2: unpause: engine gone", f"node h2: stopping the stress: {paused}"]
    assert c.attrs["HostConfig"]["NanoCpus"] == 10**9  # the budget went back all the same


# -- the schedule, the gauges, faults.csv -----------------------------------------------------------------


class FakeLinks:
    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def set_cable(self, link, state):
        self.calls.append((link, state))


def test_the_schedule_runs_node_events_through_chaos_and_records_what_they_did():
    c = FakeContainer(nano=10**9)
    lab = lab_of(h2=c)
    lab.links = FakeLinks()
    faults = [Fault.model_validate(f) for f in (
        {"node": "h2", "at": "0s", "action": "pause", "for": "20ms"},
        {"node": "h2", "at": "40ms", "cpu": 0.5},
        {"node": "h2", "at": "50ms", "action": "restart"},
        {"link": ["h2", "s1"], "at": "60ms", "action": "down"},
    )]  # fmt: skip
    events = [e for f in faults for e in f.events(1.0)]
    seen = []
    s = Schedule(events, lab, on_event=lambda ev: seen.append(ev.action))
    t0 = time.monotonic()
    s.start(t0)
    deadline = time.monotonic() + 5
    while len(seen) < 5 and time.monotonic() < deadline:
        time.sleep(0.01)
    done = s.stop()
    assert seen == ["pause", "unpause", "cpu", "restart", "down"]
    by = {e.action: e for e in done}
    assert by["cpu"].detail == "0.5 cores; budget 0.5 cores (was 1)" and by["cpu"].error is None
    assert by["restart"].error.startswith("nothing to restart on h2")
    assert all(e.actual is not None and e.actual >= e.at for e in done)
    assert lab.links.calls == [(("h2", "s1"), "down")]
    assert c.attrs["HostConfig"]["NanoCpus"] == 5 * 10**8
    assert s.restore() == [] and c.attrs["HostConfig"]["NanoCpus"] == 10**9


def test_an_event_records_what_the_hypervisor_withheld_while_it_was_carried_out(monkeypatch):
    from protolab.lab import guard

    steal = iter([10.0, 10.03])  # before and after the event: 30 ms of CPU time withheld
    monkeypatch.setattr(guard, "steal_seconds", lambda: next(steal))
    lab = lab_of()
    lab.links = FakeLinks()
    (down,) = Fault.model_validate({"link": ["h2", "s1"], "at": "0s", "action": "down"}).events(1.0)[:1]
    ran = threading.Event()
    s = Schedule([down], lab, on_event=lambda ev: ran.set())
    s.start(time.monotonic())
    assert ran.wait(5)
    (done,) = s.stop()
    assert done.stolen == 0.03 and done.record()["stolen_seconds"] == 0.03


def test_node_faults_are_gauged_under_the_nodes_name_in_link():
    ex = FaultExporter()
    (pause, unpause) = Fault.model_validate({"node": "h2", "at": "1s", "action": "pause", "for": "1s"}).events(5)
    (cpu,) = Fault.model_validate({"node": "h3", "at": "1s", "cpu": 0.5}).events(5)
    cpu.error = "Conflicting options"
    for ev in (pause, cpu):
        ev.actual = ev.at + 0.01
        ex.on_event(ev)

    def active(link: str, fault: str) -> float | None:
        return ex.registry.get_sample_value("protolab_fault_active", {"link": link, "fault": fault})

    assert active("h2", "paused") == 1.0 and active("h3", "cpu_budget") is None  # a failed change is not active
    ex.on_event(unpause)
    assert active("h2", "paused") == 0.0
    assert ex.registry.get_sample_value("protolab_fault_events_total", {"link": "h2", "action": "pause"}) == 1.0


def test_faults_csv_takes_every_column_of_old_and_new_rows(tmp_path):
    old = {"point": "p000", "link": "h2-s1", "action": "down", "error": None}  # from a resumed run's faults.jsonl
    new = {"point": "p000", "link": "h2", "action": "pause", "error": None, "target": "node", "detail": None}
    write_faults_csv(tmp_path / "faults.csv", [old, new])
    rows = list(csv.DictReader((tmp_path / "faults.csv").open()))
    assert list(rows[0]) == ["point", "link", "action", "error", "target", "detail"]
    assert (rows[0]["target"], rows[1]["target"]) == ("", "node")


# -- the scripts ------------------------------------------------------------------------------------------


def test_the_scripts_are_posix_sh():
    for script in (chaos.LIST_SCRIPT, chaos.KILL_SCRIPT, chaos.STRESS_SCRIPT):
        subprocess.run(["sh", "-n", "-c", script], check=True)


@pytest.mark.skipif(not all(map(shutil.which, ("sh", "base64", "readlink", "tr", "sed"))), reason="needs coreutils")
def test_the_listing_reads_a_proc_tree(tmp_path):
    """LIST_SCRIPT over a made-up /proc: a command name with ') ' in it, an environment with the mark, a cwd."""

    def proc(pid: int, comm: str, ppid: int, start: int, argv: list[str], env: list[str], cwd: str) -> None:
        d = tmp_path / str(pid)
        d.mkdir()
        (d / "stat").write_text(f"{pid} ({comm}) S {ppid} " + " ".join(["0"] * 17) + f" {start} 0 0\n")
        (d / "cmdline").write_bytes(b"\0".join(a.encode() for a in argv) + b"\0")
        (d / "environ").write_bytes(b"\0".join(e.encode() for e in env) + b"\0")
        (d / "cwd").symlink_to(cwd)

    proc(1, "docker-init", 0, 100, ["/sbin/docker-init", "--", "agent"], ["PATH=/bin"], "/")
    proc(23, "a) b", 0, 4242, ["sh", "-c", "echo 'x y'"], ["PATH=/bin", f"{MARK}=stress"], "/tmp")
    script = chaos.LIST_SCRIPT.replace("/proc/", f"{tmp_path}/")
    out = subprocess.run(["sh", "-c", script], capture_output=True, text=True, check=True).stdout
    assert sorted(chaos.parse_procs(out), key=lambda p: p.pid) == [
        Proc(1, 0, 100, "", "/", ("/sbin/docker-init", "--", "agent")),
        Proc(23, 0, 4242, "stress", "/tmp", ("sh", "-c", "echo 'x y'")),
    ]


def test_an_unpause_took_effect_when_the_freezer_let_go_not_when_docker_answered():
    c = FakeContainer()
    c.attrs["State"]["Paused"] = True
    thawed_at: list[float] = []
    inner = c.unpause

    def slow_unpause() -> None:  # thaws at once, answers 0.3 s later (seen: 1.8 s on a 2-core VM)
        inner()
        thawed_at.append(time.monotonic())
        time.sleep(0.3)

    c.unpause = slow_unpause  # type: ignore[method-assign]
    ch = Chaos(lab_of(h2=c), freezer=lambda _lab, _node: lambda: c.attrs["State"]["Paused"])
    t0 = time.monotonic()
    outcome, effect = ch.apply(SimpleNamespace(action="unpause", node="h2"))
    assert outcome is None and effect is not None and time.monotonic() - t0 >= 0.3
    assert 0 <= effect - thawed_at[0] < 0.1, (effect, thawed_at)
    # a pause the freezer never shows (the cgroup unreadable meanwhile): the call's return
    gone = Chaos(lab_of(h2=c), freezer=lambda _lab, _node: lambda: (_ for _ in ()).throw(OSError("gone")))
    _o, effect = gone.apply(SimpleNamespace(action="pause", node="h2"))
    assert effect is not None and c.attrs["State"]["Paused"]


@pytest.mark.parametrize(
    ("cgroup", "state", "thawed", "frozen"),
    [
        ("6:freezer:/docker/abc\n4:memory:/docker/abc\n0::/\n", "freezer/docker/abc/freezer.state",
         "THAWED\n", "FREEZING\n"),
        ("0::/system.slice/docker-abc.scope\n", "system.slice/docker-abc.scope/cgroup.events",
         "populated 1\nfrozen 0\n", "populated 1\nfrozen 1\n"),
    ],
    ids=["v1", "v2"],
)  # fmt: skip
def test_the_freezer_is_read_from_the_nodes_cgroup(tmp_path, cgroup, state, thawed, frozen):
    from protolab.lab.chaos import freezer_reader

    proc, root = tmp_path / "proc", tmp_path / "cg"
    (proc / "42").mkdir(parents=True)
    (proc / "42" / "cgroup").write_text(cgroup)
    f = root / state
    f.parent.mkdir(parents=True)
    f.write_text(thawed)
    read = freezer_reader(42, proc, root)
    assert read is not None and read() is False
    f.write_text(frozen)
    assert read() is True
    assert freezer_reader(44, proc, root) is None  # no such process
