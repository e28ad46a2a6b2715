"""Node chaos: what a fault schedule's node events do to a running lab's node (its container), and putting it
all back after the phase, as protolab.lab.linkstate does for links.

What runs in a node. Each node is a container started with Docker's init (protolab.lab: `init=True`): PID 1 is
docker-init, its one child the container's main command, the protolab agent (images/node: the node's metrics
on :9100; the spec's `command` only gives it arguments). Everything else in the container came in through
`docker exec`: the phase's tasks (started by their runners, which wait for them) and whatever a task left
running (a daemon, now a child of PID 1). Mininet's shell for the node and the link emulators only enter its
network namespace from the host: they are not in the container and nothing here touches them.

kill ("the node's software dies"): SIGKILL to every process in the container but docker-init and the agent.
Docker-init exits when its child does and the container stops with it; its network namespace would go, and
with it every interface Mininet made (a container started again gets a new namespace the lab cannot re-wire).
So the container, its namespace, addresses and routes survive, and so does the kernel's networking: the node
still answers ARP and ping and a router still forwards. A node off the network is its links' `action: down`.
The processes are listed inside the container (/proc of its PID namespace, through `docker exec`), killed, and
listed again until none is left (at most KILL_ROUNDS rounds: a task may be starting children). A task whose
process is killed sees it end with status 137 and fails as any task does (a `command` task with
`check: false` does not).

restart: runs again, detached (`docker exec -d`, same argv and working directory, the exec's environment and
user), the first process of each tree the phase's kills ended; protolab knows their command lines because
kill read them (/proc/PID/cmdline) before killing. A restart with nothing killed before it is an error on the
event. A restarted task process belongs to no task any more: nobody reads its output.

pause / unpause: the cgroup freezer (docker pause). Every process of the node stops, the agent too (its
scrapes fail meanwhile); the kernel's networking does not (pings to the node are answered, the node's own
traffic stops). Docker refuses `docker exec` in a paused container: a kill, restart or stress then fails.

stress: POSIX sh loops inside the node (so the CPU is charged to its cgroup; only the image's sh and
coreutils): one `while :; do :; done` per whole core and, for a fraction, one more loop stopped and continued
(SIGSTOP/SIGCONT) with that duty cycle over STRESS_PERIOD_SECONDS; `memory` is held by the shell as a string of
that many bytes (resident; about twice that while it is built). It all runs under `timeout -s KILL` (its
planned end plus STRESS_GRACE_SECONDS), so it cannot outlive the phase by much whatever happens to protolab,
and carries MARK=stress in its environment, by which its end (`stress_stop`, or restore) finds it (two
stresses overlapping on one node therefore end together, at the first one's end).

cpu: the node's CPU budget through the engine's update API. A node with a budget (NanoCpus, from its `cpus`)
gets NanoCpus; a node without one gets a CFS quota over a CFS_PERIOD_US period, because Docker cannot take
NanoCpus away again (an update of 0 means "no change") and the quota of -1 that means "unlimited" would
override every later NanoCpus. Restored exactly: NanoCpus back, or the quota back (-1: unlimited; the period
stays in HostConfig and limits nothing). The agent reads the budget from the cgroup at every scrape
(protolab_cpu_quota_cores); the columns protolab computes from a node's budget (converter CPU shares) use the
spec's `cpus`.

restore() after the phase, per node touched, each step on its own: unpaused; stress ended; the copies a
restart started ended (they belong to no task and would run into the next phase); daemons a kill ended and no
restart brought back started again (a killed process whose parent was the container's init ran on its own
before the phase's tasks touched it); the CPU budget back. Killed task processes are not started again: every
other process a node runs in a phase is a task's (its runner saw it die, the phase reports it), and between
phases a node runs only its init and agent, which kill spares, so the node is whole for the next phase.

Node events take effect after one to three Docker API calls: their timing error is tens of milliseconds,
not the millisecond of a link's `ip link`. Each operation notes the moment it took effect (`effect`), which
is what protolab.lab.faults records as the event's actual time. A pause or unpause takes effect when the
kernel's cgroup freezer changes the node's state, which a thread watches (every millisecond) while the Docker
call lasts: the call itself may return much later (an unpause whose node ran again on time returned 1.8 s
after, on a 2-core VM). Where the freezer cannot be read, the call's return is the moment.
"""

from __future__ import annotations

import base64
import math
import posixpath
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..counters import cgroup_file
from ..errors import ProtolabError

MARK = "PROTOLAB_CHAOS"  # in the environment of every process started here: stress, restart, service
INITS = {"docker-init", "tini", "tini-static", "dumb-init", "catatonit"}  # a PID 1 that only runs a child
KILL_ROUNDS = 3
CFS_PERIOD_US = 100_000  # Docker's period for NanoCpus
FREEZER_POLL_SECONDS = 0.001  # how often a pause's or unpause's watch reads the freezer during the Docker call
STRESS_PERIOD_SECONDS = 0.1  # the duty cycle of a fractional core
STRESS_GRACE_SECONDS = 5.0
DETAIL_CHARS = 300

# One line per process of the container's PID namespace but this shell: pid, ppid, start (clock ticks after
# boot), the MARK of its environment, then cwd and argv (NUL-separated) in base64; "-" for what is unreadable.
LIST_SCRIPT = r"""self=$$
for d in /proc/[0-9]*; do
  p=${d#/proc/}
  [ "$p" = "$self" ] && continue
  s=$(cat "$d/stat" 2>/dev/null) || continue
  [ -n "$s" ] || continue
  s=${s##*) }
  set -- $s
  [ "$2" = "$self" ] && continue
  m=$(tr '\0' '\n' < "$d/environ" 2>/dev/null | sed -n 's/^PROTOLAB_CHAOS=//p' | head -n 1)
  w=$(readlink -n "$d/cwd" 2>/dev/null | base64 -w 0)
  a=$(base64 -w 0 < "$d/cmdline" 2>/dev/null)
  echo "$p $2 ${20} ${m:--} ${w:--} ${a:--}"
done
"""
KILL_SCRIPT = 'for p; do kill -9 "$p" 2>/dev/null; done; exit 0'
# $1 whole cores, $2/$3 seconds on/off of the fractional core ("0": none), $4 bytes held ("0": none)
STRESS_SCRIPT = r"""spin() { while :; do :; done; }
i=0
while [ "$i" -lt "$1" ]; do spin & i=$((i + 1)); done
if [ "$2" != 0 ]; then
  spin & h=$!
  (while :; do sleep "$2"; kill -STOP "$h"; sleep "$3"; kill -CONT "$h"; done) &
fi
if [ "$4" != 0 ]; then held=$(head -c "$4" /dev/zero | tr '\0' x); fi
while :; do sleep 3600; done
"""


class ChaosError(ProtolabError):
    """A node event could not do what it says (recorded on the event; the run is then invalid)."""


@dataclass(frozen=True)
class Proc:
    """A process of a node's container, as LIST_SCRIPT saw it (PIDs of the container's namespace)."""

    pid: int
    ppid: int  # 0: started by `docker exec` (its parent is outside the container)
    start: int  # clock ticks after boot
    mark: str = ""  # MARK of its environment
    cwd: str = ""
    argv: tuple[str, ...] = ()

    def command(self) -> str:
        return " ".join(self.argv) or f"pid {self.pid}"


def _unb64(s: str) -> str:
    return "" if s == "-" else base64.b64decode(s).decode(errors="replace")


def parse_procs(out: str) -> list[Proc]:
    procs = []
    for line in out.splitlines():
        f = line.split()
        if len(f) != 6 or not (f[0].isdigit() and f[1].isdigit() and f[2].isdigit()):
            continue  # a process that went while it was read
        argv = tuple(_unb64(f[5]).rstrip("\0").split("\0")) if f[5] != "-" else ()
        procs.append(Proc(int(f[0]), int(f[1]), int(f[2]), "" if f[3] == "-" else f[3], _unb64(f[4]), argv))
    return procs


def spared(procs: list[Proc]) -> set[int]:
    """PID 1 and, when PID 1 is an init that only runs a child (docker-init), that child: the container's
    main command, the first process the init started."""
    init = next((p for p in procs if p.pid == 1), None)
    if init is None:
        return set()
    keep = {1}
    if init.argv and posixpath.basename(init.argv[0]) in INITS:
        children = [p for p in procs if p.ppid == 1 and not p.mark]
        if children:
            keep.add(min(children, key=lambda p: (p.start, p.pid)).pid)
    return keep


def _exec(container: Any, cmd: list[str], env: dict[str, str] | None = None, detach: bool = False,
          workdir: str | None = None) -> str:  # fmt: skip
    """`docker exec` in the container; its stdout (nothing when detached). Raises ChaosError on a failure."""
    res = container.exec_run(cmd, environment=env, detach=detach, workdir=workdir or None, demux=not detach)
    if detach:
        return ""
    out, err = res.output if isinstance(res.output, tuple) else (res.output, b"")
    if res.exit_code != 0:
        why = (err or out or b"").decode(errors="replace").strip()[-300:]
        raise ChaosError(f"`{' '.join(cmd[:2])} ...` exited {res.exit_code}: {why}")
    return (out or b"").decode(errors="replace")


def processes(container: Any) -> list[Proc]:
    """Every process of the container (but the listing's own)."""
    return parse_procs(_exec(container, ["sh", "-c", LIST_SCRIPT]))


def update_resources(container: Any, resources: dict[str, int]) -> None:
    """The engine's container update with its own field names: docker-py's Container.update() has no
    NanoCpus, so this is its update_container() with the body we need."""
    api = container.client.api
    res = api._post_json(api._url("/containers/{0}/update", container.id), data=resources)
    api._result(res, True)


def _short(items: list[str]) -> str:
    s = ", ".join(items)
    return s if len(s) <= DETAIL_CHARS else s[: DETAIL_CHARS - 3] + "..."


@dataclass
class Killed:
    """The first process of a tree a kill ended, to be started again."""

    argv: tuple[str, ...]
    cwd: str
    service: bool  # ran on its own (a child of the init, or a daemon restore started), not a task's


@dataclass
class NodeChaos:
    """What the phase's node events changed on one node (restore() undoes it)."""

    paused: bool = False
    stressed: bool = False
    restarted: bool = False  # copies of task processes running (MARK=restart)
    killed: list[Killed] = field(default_factory=list)  # ended by a kill, not started again yet
    budget: tuple[int, int, int] | None = None  # (NanoCpus, CpuQuota, CpuPeriod) before the first cpu event


def freezer_reader(pid: int, proc: Path = Path("/proc"), root: Path = Path("/sys/fs/cgroup")
                   ) -> Callable[[], bool] | None:  # fmt: skip
    """A reader of whether the cgroup freezer holds `pid`'s cgroup (True: freezing or frozen): cgroup v1's
    freezer.state, else v2's cgroup.events. None where neither can be read."""
    f = cgroup_file(pid, "freezer", "freezer.state", "cgroup.events", root, proc)
    if f is None:
        return None
    if f.name == "freezer.state":
        return lambda: f.read_text().strip() != "THAWED"
    return lambda: "frozen 1" in f.read_text().splitlines()


def node_freezer(lab: Any, node: str) -> Callable[[], bool] | None:
    """freezer_reader of the node's container init (`lab.nodes[node].pid`); None without one."""
    pid = getattr(getattr(lab, "nodes", {}).get(node), "pid", None)
    return freezer_reader(pid) if isinstance(pid, int) and pid > 0 else None


class Chaos:
    """Node events against a lab's nodes (`lab.nodes[name].container`, a docker-py Container); one per phase
    schedule. `update`, `clock` and `freezer` (node_freezer) are replaceable for tests."""

    def __init__(self, lab: Any, update: Any = update_resources, clock: Any = time.monotonic,
                 freezer: Any = node_freezer) -> None:  # fmt: skip
        self.lab, self._update, self._clock, self._freezer = lab, update, clock, freezer
        self.nodes: dict[str, NodeChaos] = {}
        self.effect: float | None = None  # monotonic time the last operation took effect
        self._lock = threading.Lock()

    def container(self, node: str) -> Any:
        try:
            return self.lab.nodes[node].container
        except KeyError:
            raise ChaosError(f"no node {node} in this lab") from None

    def _state(self, node: str) -> NodeChaos:
        return self.nodes.setdefault(node, NodeChaos())

    def _took_effect(self) -> None:
        self.effect = self._clock()

    # -- events -----------------------------------------------------------------------------------------
    def apply(self, ev: Any) -> tuple[str | None, float | None]:
        """Run a node event; (what it did, the monotonic time it took effect)."""
        ops = {
            "kill": lambda: self.kill(ev.node),
            "restart": lambda: self.restart(ev.node),
            "pause": lambda: self.pause(ev.node),
            "unpause": lambda: self.unpause(ev.node),
            "stress": lambda: self.stress(ev.node, ev.cores or 0.0, ev.memory, (ev.until or ev.at) - ev.at),
            "stress_stop": lambda: self.stop_stress(ev.node),
            "cpu": lambda: self.set_cpu(ev.node, float(ev.cores)),
            "cpu_restore": lambda: self.restore_cpu(ev.node),
        }
        if ev.action not in ops:
            raise ChaosError(f"unknown node action {ev.action}")
        with self._lock:
            self.effect = None
            return ops[ev.action](), self.effect

    def kill(self, node: str) -> str:
        c, st = self.container(node), self._state(node)
        gone, first = self._kill_where(c, lambda p: True)
        pids = {p.pid for p in gone}
        for p in first:  # what ran when the kill began; later rounds only find what was being started meanwhile
            if p.ppid not in pids and p.argv and p.mark != "stress":  # a tree's first process, with a command line
                st.killed.append(Killed(p.argv, p.cwd, p.ppid == 1 or p.mark == "service"))
        return f"killed {len(gone)}: " + _short([p.command() for p in gone]) if gone else "nothing to kill"

    def _kill_where(self, c: Any, wanted: Any) -> tuple[list[Proc], list[Proc]]:
        """SIGKILL the processes `wanted` picks (never init and main), listing again until none is left; all
        that were killed, and those of the first round."""
        gone: dict[int, Proc] = {}
        first: list[Proc] = []
        for _ in range(KILL_ROUNDS):
            procs = processes(c)
            keep = spared(procs)
            victims = [p for p in procs if p.pid not in keep and wanted(p)]
            if not victims:
                return list(gone.values()), first
            _exec(c, ["sh", "-c", KILL_SCRIPT, "kill", *[str(p.pid) for p in victims]])
            if self.effect is None:
                self._took_effect()
            first = first or victims
            gone.update({p.pid: p for p in victims if p.pid not in gone})
        procs = processes(c)
        keep = spared(procs)
        if left := [p for p in procs if p.pid not in keep and wanted(p)]:
            raise ChaosError(
                f"still running after {KILL_ROUNDS} rounds of SIGKILL: {_short([p.command() for p in left])}"
            )
        return list(gone.values()), first

    def restart(self, node: str) -> str:
        st = self._state(node)
        if not st.killed:
            raise ChaosError(
                f"nothing to restart on {node}: no kill in this phase ended a process protolab knows the command"
                " line of (a restart starts again what a kill ended)"
            )
        started, failed = self._start(node, st.killed)
        st.killed = [k for k in st.killed if k not in started]
        if failed:
            raise ChaosError(f"restarted {len(started)} of {len(started) + len(failed)}; failed: " + "; ".join(failed))
        return "restarted: " + _short([" ".join(k.argv) for k in started])

    def _start(self, node: str, which: list[Killed]) -> tuple[list[Killed], list[str]]:
        c, st = self.container(node), self._state(node)
        started, failed = [], []
        for k in which:
            try:
                _exec(c, list(k.argv), env={MARK: "service" if k.service else "restart"}, detach=True, workdir=k.cwd)
            except Exception as exc:
                failed.append(f"`{' '.join(k.argv)}`: {exc}")
                continue
            if self.effect is None:
                self._took_effect()
            started.append(k)
            st.restarted |= not k.service
        return started, failed

    def pause(self, node: str) -> None:
        c = self.container(node)
        self._freeze(node, c.pause, True)
        self._state(node).paused = True

    def unpause(self, node: str) -> None:
        c = self.container(node)
        self._freeze(node, c.unpause, False)
        self._state(node).paused = False

    def _freeze(self, node: str, call: Callable[[], Any], frozen: bool) -> None:
        """`call` (the Docker pause or unpause); the effect is when the node's freezer state became `frozen`, as a
        thread saw it while the call lasted (or right after it), else the call's return."""
        read = self._freezer(self.lab, node)
        if read is None:
            call()
            self._took_effect()
            return
        seen: list[float] = []
        done = threading.Event()

        def look() -> bool:
            try:
                if read() == frozen:
                    seen.append(self._clock())
                    return True
            except OSError:
                return True  # the cgroup went away: the call's return stands
            return False

        def watch() -> None:
            while not done.is_set() and not look():
                time.sleep(FREEZER_POLL_SECONDS)

        th = threading.Thread(target=watch, daemon=True, name=f"freezer-{node}")
        th.start()
        try:
            call()
        finally:
            done.set()
            th.join()
        if not seen:
            look()
        self.effect = seen[0] if seen else self._clock()

    def stress(self, node: str, cores: float, memory: int | None, seconds: float) -> str:
        """`cores` busy (whole loops plus a duty-cycled one) and `memory` bytes held, for at most `seconds`
        (plus the grace) even if nothing stops it."""
        whole = int(cores)
        frac = cores - whole
        if frac > 0.99:
            whole, frac = whole + 1, 0.0
        on = round(frac * STRESS_PERIOD_SECONDS, 4) if frac >= 0.01 else 0.0
        off = round(STRESS_PERIOD_SECONDS - on, 4)
        limit = max(1, math.ceil(seconds + STRESS_GRACE_SECONDS))
        cmd = ["timeout", "-s", "KILL", str(limit), "sh", "-c", STRESS_SCRIPT, "protolab-stress", str(whole),
               f"{on:g}", f"{off:g}", str(memory or 0)]  # fmt: skip
        c = self.container(node)
        _exec(c, cmd, env={MARK: "stress"}, detach=True)
        self._took_effect()
        self._state(node).stressed = True
        if not any(p.mark == "stress" for p in processes(c)):
            raise ChaosError(f"the stress on {node} did not start (`timeout` and `sh` in its image?)")
        return (
            f"{whole} busy loop(s)"
            + (f" and one {frac:.0%} of the time" if on else "")
            + (f", {memory} bytes held" if memory else "")
        )

    def stop_stress(self, node: str) -> str:
        gone, _ = self._kill_where(self.container(node), lambda p: p.mark == "stress")
        self._state(node).stressed = False
        return f"stopped {len(gone)} stress process(es)"

    def set_cpu(self, node: str, cores: float) -> str:
        c, st = self.container(node), self._state(node)
        if st.budget is None:
            c.reload()
            hc = c.attrs.get("HostConfig") or {}
            st.budget = (int(hc.get("NanoCpus") or 0), int(hc.get("CpuQuota") or 0), int(hc.get("CpuPeriod") or 0))
        nano, quota, period = st.budget
        if nano > 0:
            self._update(c, {"NanoCpus": int(round(cores * 1e9))})
            was = f"{nano / 1e9:g}"
        else:
            self._update(c, {"CpuPeriod": CFS_PERIOD_US, "CpuQuota": int(round(cores * CFS_PERIOD_US))})
            was = f"{quota / (period or CFS_PERIOD_US):g}" if quota > 0 else "unlimited"
        self._took_effect()
        return f"budget {cores:g} cores (was {was})"

    def restore_cpu(self, node: str) -> str | None:
        st = self._state(node)
        if st.budget is None:
            return None
        nano, quota, period = st.budget
        c = self.container(node)
        if nano > 0:
            self._update(c, {"NanoCpus": nano})
        elif quota > 0:
            self._update(c, {"CpuPeriod": period or CFS_PERIOD_US, "CpuQuota": quota})
        else:
            self._update(c, {"CpuQuota": -1})
        self._took_effect()
        st.budget = None
        return "budget back to " + (f"{nano / 1e9:g} cores" if nano > 0 else "unlimited" if quota <= 0 else "its quota")

    # -- after the phase ------------------------------------------------------------------------------
    def restore(self) -> list[str]:
        """Every node as before the phase (see the module's doc); returns what could not be put back, each
        step tried on its own."""
        failures: list[str] = []
        with self._lock:
            for node, st in self.nodes.items():
                failures += [f"node {node}: {f}" for f in self._restore_node(node, st)]
        return failures

    def _restore_node(self, node: str, st: NodeChaos) -> list[str]:
        failures: list[str] = []

        def step(what: str, fn: Any) -> None:
            try:
                fn()
            except Exception as exc:
                failures.append(f"{what}: {exc}")

        try:
            c = self.container(node)
        except ChaosError as exc:
            return [str(exc)]
        step("unpause", lambda: self._unpause_if_paused(node, c, st))
        if st.stressed:
            step("stopping the stress", lambda: self.stop_stress(node))
        if st.restarted:
            step("ending restarted processes", lambda: self._end_restarted(c, st))
        if services := [k for k in st.killed if k.service]:

            def again() -> None:
                started, failed = self._start(node, services)
                st.killed = [k for k in st.killed if k not in started]
                if failed:
                    raise ChaosError("; ".join(failed))

            step("starting again what a kill ended", again)
        step("CPU budget back", lambda: self.restore_cpu(node))
        return failures

    def _unpause_if_paused(self, node: str, c: Any, st: NodeChaos) -> None:
        c.reload()
        if st.paused or (c.attrs.get("State") or {}).get("Paused"):
            self.unpause(node)

    def _end_restarted(self, c: Any, st: NodeChaos) -> None:
        self._kill_where(c, lambda p: p.mark == "restart")
        st.restarted = False
