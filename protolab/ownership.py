"""What protolab owns on this machine: one lock on the lab state, and a ledger per run of what it made.

- The lock, `<state>/lock` (flock: the kernel releases it when the holder dies, SIGKILL included), lets one
  protolab process at a time deploy, run or clean. The holder (PID, command, run id) is written into it.
- The ledger, `<state>/owned/<run>.jsonl`: one JSON line per object, appended and fsynced *before* the
  object is made (`add`), confirmed with its identity once made (`made`: a link's ifindex, a process's start
  time), and closed when it is removed (`gone`). Teardown and `protolab clean` remove exactly the objects
  that are added and not gone; a look-alike protolab did not make is never touched.
- Every removal is best effort per object, with one of four outcomes (Outcome): removed, gone (verified absent
  already), could not tell (a tool missing or timed out, an engine not answering, a held lock) or failed; the
  last two are reported and their entries kept for `clean`. Nothing is taken for gone because a probe failed.

Kinds (REMOVERS): process, container, network, compose, link, rule, nft (an nftables table), host (settings to
restore), engine (a Docker engine of an emulated testbed host, its containers and its directories), netns, run.
Docker objects also carry the instance's label (`protolab.managed=true` in the default instance,
protolab.naming), so those of a run whose ledger was lost (the state dir is on tmpfs: a reboot) are still found.
Scopes split one run's ledger: `session` (monitoring, management network, host settings) and one per deployed
lab, torn down on its own.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from . import engine, kernelstate, naming
from .errors import DockerUnreachableError, LabBusyError, ProtolabError
from .jsonio import JsonLog
from .killpoint import killpoint
from .shell import CannotTellError, probe, run

RUN_ENV = "PROTOLAB_RUN"  # in the environment of the processes a lab starts; `clean` ends those of dead runs
MONITORING_LEDGER = "monitoring"  # `protolab up` records the stack it starts here
KIND_ORDER = ("process", "container", "link", "rule", "nft", "network", "compose", "host", "engine", "netns", "run")


def state_dir() -> Path:
    return Path(os.environ.get("PROTOLAB_STATE_DIR", naming.STATE_DIR))


def ensure_state_dir() -> Path:
    """The state folder, made if missing; ProtolabError if someone else owns it or anyone may write to it."""
    return _ensure_dir(state_dir())


def _ensure_dir(path: Path) -> Path:
    """The folder, made 0700 when protolab makes it; one that exists already is used as it is, unless another user
    owns it or anyone may write to it (then whoever can write there could forge ledgers and locks)."""
    try:
        path.mkdir(parents=True)
        os.chmod(path, 0o700)
        return path
    except FileExistsError:
        pass
    st = path.stat()
    why = []
    if st.st_uid != os.geteuid():
        why.append(f"owned by uid {st.st_uid}, not this process's uid {os.geteuid()}")
    if st.st_mode & 0o002:
        why.append(f"writable by anyone (mode {st.st_mode & 0o7777:04o})")
    if why:
        raise ProtolabError(f"state folder {path}: {' and '.join(why)}; protolab keeps its lock and ledgers there "
                            "and refuses it: fix it (chown, chmod o-w) or set PROTOLAB_STATE_DIR to a folder of "
                            "your own")  # fmt: skip
    return path


# -- the lock ------------------------------------------------------------------------------------------


class _Lock:
    """Process-wide and reentrant: the outermost hold takes the flock, inner ones count."""

    def __init__(self) -> None:
        self.fd: int | None = None
        self.depth = 0
        self.info: dict[str, Any] = {}
        self.mutex = threading.Lock()

    def acquire(self, command: str, run_id: str | None = None, hint: str = "") -> None:
        with self.mutex:
            if self.depth:
                self.depth += 1
                if run_id and not self.info.get("run_id"):
                    self._write({**self.info, "run_id": run_id})
                return
            fd = os.open(_ensure_dir(state_dir()) / "lock", os.O_RDWR | os.O_CREAT, 0o600)
            try:
                import fcntl

                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                info = _read(fd)
                os.close(fd)
                raise LabBusyError(info, hint) from None
            self.fd, self.depth = fd, 1
            self._write({"pid": os.getpid(), "command": command, "run_id": run_id,
                         "since": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")})  # fmt: skip

    def _write(self, info: dict[str, Any]) -> None:
        assert self.fd is not None
        self.info = info
        data = json.dumps(info).encode()
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, data, 0)

    def release(self) -> None:
        with self.mutex:
            if not self.depth:
                return
            self.depth -= 1
            if self.depth or self.fd is None:
                return
            import fcntl

            os.ftruncate(self.fd, 0)
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd, self.info = None, {}


def _read(fd: int) -> dict[str, Any]:
    try:
        return json.loads(os.pread(fd, 4096, 0).decode() or "{}")
    except (OSError, ValueError):
        return {}


LOCK = _Lock()


@contextlib.contextmanager
def lab_lock(command: str, run_id: str | None = None, hint: str = "") -> Iterator[None]:
    """Hold the machine's lab-state lock for the block; LabBusyError at once when a live process holds it."""
    LOCK.acquire(command, run_id, hint)
    try:
        yield
    finally:
        LOCK.release()


def holder() -> dict[str, Any] | None:
    """Who holds the lock now (None: nobody; this process: its own record)."""
    if LOCK.depth:
        return dict(LOCK.info)
    return lock_holder(state_dir() / "lock")


def lock_holder(path: Path) -> dict[str, Any] | None:
    """Who holds the lab-state lock file `path` (this machine's, or a keeper's in its state folder): None when
    nobody does (or there is no such file), else its record."""
    if not path.exists():
        return None
    import fcntl

    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    except BlockingIOError:
        return _read(fd)
    finally:
        os.close(fd)


# -- processes -------------------------------------------------------------------------------------------


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (with the PID, its identity), or None if gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])


def alive(pid: int, start: int | None) -> bool:
    return start is not None and start_time(pid) == start


def processes_of_run(run_id: str) -> list[int]:
    """PIDs whose environment carries RUN_ENV=run_id (node shells, link emulators), this process excepted."""
    marker = f"{RUN_ENV}={run_id}".encode()
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            if marker in (d / "environ").read_bytes().split(b"\0"):
                found.append(int(d.name))
        except OSError:
            continue
    return found


def _kill(pid: int, start: int | None) -> bool:
    """SIGKILL the process and wait up to 3 s for it to go; whether it went. A zombie has gone: it holds nothing
    but its entry in the process table until its parent reaps it (ours is reaped here; an sshd's by its parent)."""
    if not _running(pid, start):
        return True
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 3
    while _running(pid, start) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not _running(pid, start)


# -- removers: how each kind of object is found and removed --------------------------------------------------


class Context:
    """What removers share: a Docker client made on first use (DockerUnreachableError when it does not answer,
    then at once for every later use: a hung engine costs its timeout once, not once per object)."""

    def __init__(self, client: Any = None) -> None:
        self._client = client
        self._error: DockerUnreachableError | None = None

    @property
    def client(self) -> Any:
        if self._error is not None:
            raise self._error
        if self._client is None:
            try:
                self._client = engine.client()
            except DockerUnreachableError as exc:
                self._error = exc
                raise
        return self._client


def _container(entry: dict[str, Any], ctx: Context, remove: bool) -> bool:
    """A container on this machine's engine, or (`engine`) on a testbed host's: gone with its engine too."""
    import docker
    import docker.errors

    try:
        client = ctx.client if entry.get("engine") is None else docker.DockerClient(base_url=entry["engine"])
        c = client.containers.get(entry["name"])
    except docker.errors.NotFound:
        return False
    except docker.errors.DockerException as exc:
        engine = entry.get("engine")
        if engine is None:
            raise
        if engine.startswith("unix://") and not Path(engine.removeprefix("unix://")).exists():
            return False  # its engine is gone (socket and all), and its containers with it
        raise CannotTellError(["docker", "-H", engine, "inspect", entry["name"]], -1,
                         f"its engine does not answer: {str(exc).splitlines()[0][:200]}") from None  # fmt: skip
    if c.labels.get(naming.RUN_LABEL) != entry["run"]:
        return False  # same name, not ours
    if remove:
        try:
            c.remove(force=True)
        except docker.errors.NotFound:
            return False
        except docker.errors.APIError as exc:
            if "already in progress" not in str(exc):
                raise
    return True


def _network(entry: dict[str, Any], ctx: Context, remove: bool) -> bool:
    return engine.remove_network(ctx.client, entry["name"], remove)


def _compose(entry: dict[str, Any], ctx: Context, remove: bool) -> bool:
    """The monitoring stack: containers and networks of the project that carry our label (never others')."""
    labels = [f"com.docker.compose.project={entry['project']}", f"{naming.LABEL}=true"]
    return bool(engine.labelled(ctx.client, labels, remove))


def _link(entry: dict[str, Any], _ctx: Context, remove: bool) -> bool:
    index = engine.ifindex(entry["name"])
    if index is None or (entry.get("ifindex") is not None and index != entry["ifindex"]):
        return False  # gone, or a newer link of the same name that is not ours
    if remove:
        run(["ip", "link", "del", entry["name"]])
    return True


XTABLES_WAIT_SECONDS = 5  # iptables -w: how long a remover waits for a held xtables lock before it cannot tell
PROBE_SECONDS = 30.0  # a remover's probe (iptables -C, nft list) not answered by then: could not tell
RULE_ABSENT = ("does a matching rule exist", "No chain/target/match by that name")


def _rule(entry: dict[str, Any], _ctx: Context, remove: bool) -> bool:
    base = [entry["tool"], "-w", str(XTABLES_WAIT_SECONDS), "-t", entry["table"]]
    if not probe([*base, "-C", *entry["rule"]], RULE_ABSENT, timeout=PROBE_SECONDS):
        return False
    if remove:
        run([*base, "-D", *entry["rule"]], timeout=XTABLES_WAIT_SECONDS + 25)
    return True


def _nft(entry: dict[str, Any], _ctx: Context, remove: bool) -> bool:
    if not probe(["nft", "list", "table", entry["family"], entry["name"]], ("No such file or directory",),
                 timeout=PROBE_SECONDS):  # fmt: skip
        return False
    if remove:
        run(["nft", "delete", "table", entry["family"], entry["name"]])
    return True


def _process(entry: dict[str, Any], _ctx: Context, remove: bool) -> bool:
    if not alive(entry["pid"], entry.get("start")):
        return False
    if remove and not _kill(entry["pid"], entry.get("start")):
        raise RuntimeError(f"process {entry['pid']} still alive 3 s after SIGKILL (uninterruptible sleep?)")
    return True


def _host(entry: dict[str, Any], _ctx: Context, remove: bool) -> bool:
    if not kernelstate.differences(entry["before"], kernelstate.snapshot()):
        return False
    if remove:
        kernelstate.restore(entry["before"])
        left = kernelstate.differences(entry["before"], kernelstate.snapshot())
        if left:
            raise RuntimeError("host settings not restored: " + "; ".join(left))
    return True


def _netns(entry: dict[str, Any], _ctx: Context, remove: bool) -> bool:
    if not (Path("/run/netns") / entry["name"]).exists():
        return False
    if remove:
        run(["ip", "netns", "del", entry["name"]])
    return True


def _engine(entry: dict[str, Any], _ctx: Context, remove: bool) -> bool:
    """A Docker engine protolab started for an emulated testbed host (protolab.testbed.emulation): its containers, the
    daemon, and its data and exec roots."""
    dirs = [Path(entry[k]) for k in ("data_root", "exec_root")]
    up = entry.get("daemon_pid") is not None and _running(entry["daemon_pid"], entry.get("start"))
    if not up and not any(d.exists() for d in dirs):
        return False
    if remove:
        stop_engine(entry)
    return True


def stop_engine(entry: dict[str, Any]) -> None:
    """An engine's containers removed, the daemon stopped (SIGTERM, then SIGKILL after 20 s), its roots gone."""
    sock, pid = entry["sock"], entry.get("daemon_pid")
    if pid is not None and _running(pid, entry.get("start")):
        ids = subprocess.run(["docker", "-H", f"unix://{sock}", "ps", "-aq"], capture_output=True, text=True,
                             timeout=60).stdout.split()  # fmt: skip
        if ids:
            subprocess.run(["docker", "-H", f"unix://{sock}", "rm", "-f", *ids], capture_output=True, timeout=120)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 20
        while _running(pid, entry.get("start")) and time.monotonic() < deadline:
            time.sleep(0.1)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        _running(pid, entry.get("start"))  # reaps it, when this process started it
    for key in ("exec_root", "data_root"):
        d = Path(entry[key])
        if d.exists():
            mounts = [ln.split()[1] for ln in Path("/proc/mounts").read_text().splitlines()
                      if ln.split()[1].startswith(str(d))]  # fmt: skip
            for m in sorted(mounts, key=len, reverse=True):
                run(["umount", "-l", m], check=False)
            run(["rm", "-rf", str(d)])
    run(["rm", "-rf", str(Path(sock).parent)])  # the socket, pid file and log
    for d in (Path(entry["data_root"]).parent, Path(entry["data_root"]).parent.parent, Path(sock).parent.parent):
        with contextlib.suppress(OSError):
            d.rmdir()  # when empty: the host's folder, then the emulated hosts' roots


def _running(pid: int, start: int | None) -> bool:
    """Alive and not a zombie (a zombie child of this process is reaped here)."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)
    if not alive(pid, start):
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _run(entry: dict[str, Any], _ctx: Context, remove: bool) -> bool:
    """A run's own process and everything it started (RUN_ENV); finalizes its results folder if it died."""
    pids = processes_of_run(entry["run"])
    if remove:
        for pid in pids:
            _kill(pid, start_time(pid))
        if not alive(entry["pid"], entry.get("start")):
            _unlink_dead_sockets(entry["pid"])
            if entry.get("dir"):
                from .results.salvage import finalize_orphan

                finalize_orphan(Path(entry["dir"]), entry)
    return bool(pids)


HELPER_SOCKET_DIRS = ("linkem", "nicfilter")  # under the state folder: `<run pid>-<name>.sock` (impair, nicfilter)


def _unlink_dead_sockets(pid: int) -> None:
    """The control sockets of a dead run's helpers: a helper removes its own when stopped, not when SIGKILLed (as
    the run's processes are above). Only a socket nothing listens on goes (a later process with the same pid may
    have made one of the same name)."""
    stale_helper_sockets(f"{pid}-*.sock", remove=True)


def stale_helper_sockets(pattern: str = "*.sock", remove: bool = False) -> list[Path]:
    """Helper control sockets in this instance's state folder that nothing listens on (their helper was killed
    with the process that started it, run or not, so nothing removed them); with `remove`, unlinked. A socket
    that answers, or that cannot be told about, is left as it is."""
    out = []
    for sub in HELPER_SOCKET_DIRS:
        for sock in sorted((state_dir() / sub).glob(pattern)):
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe_sock:
                try:
                    probe_sock.connect(str(sock))
                except ConnectionRefusedError:
                    out.append(sock)
                    if remove:
                        sock.unlink(missing_ok=True)
                except OSError:
                    pass  # gone meanwhile, or not a socket we can tell about: left as it is
    return out


REMOVERS: dict[str, Callable[[dict[str, Any], Context, bool], bool]] = {
    "process": _process,
    "container": _container,
    "link": _link,
    "rule": _rule,
    "nft": _nft,
    "network": _network,
    "compose": _compose,
    "host": _host,
    "engine": _engine,
    "netns": _netns,
    "run": _run,
}


def describe(entry: dict[str, Any]) -> str:
    k = entry["kind"]
    if k == "rule":
        return f"rule {entry['tool']} -t {entry['table']} {' '.join(entry['rule'])}"
    if k in ("process", "run"):
        return f"{k} {entry.get('pid')}" + (f" (run {entry['run']})" if k == "run" else "")
    if k == "compose":
        return f"compose project {entry['project']}"
    if k == "nft":
        return f"nft table {entry['family']} {entry['name']}"
    if k == "host":
        return "host settings changed by the run"
    if k == "engine":
        return f"Docker engine {entry['name']} (pid {entry.get('daemon_pid')}, {entry.get('sock')})"
    return f"{k} {entry['name']}"


# -- the ledger -----------------------------------------------------------------------------------------------


_NOT_IDENTITY = ("op", "scope", "t", "ifindex", "start", "before", "dir", "keep", "daemon_pid")


def _key(entry: dict[str, Any]) -> str:
    ident = {k: v for k, v in entry.items() if k not in _NOT_IDENTITY}
    return json.dumps(ident, sort_keys=True)


class Ledger:
    """One run's record of what it made (see the module docstring). `scope` names the part that adds."""

    def __init__(self, run_id: str, scope: str = "session") -> None:
        self.run_id, self.scope = run_id, scope
        self.path = state_dir() / "owned" / f"{run_id}.jsonl"
        self._mutex = threading.Lock()

    def scoped(self, scope: str) -> Ledger:
        return Ledger(self.run_id, scope)

    def _append(self, line: dict[str, Any]) -> None:
        _ensure_dir(self.path.parent)
        with self._mutex:
            JsonLog(self.path, mode=0o600).append(line)
        killpoint("ledger")  # test hook (protolab.killpoint): no-op unless PROTOLAB_KILL_AT is set

    def add(self, kind: str, **handle: Any) -> dict[str, Any]:
        """Record an object about to be made; returns the entry (give it to made() or gone())."""
        entry = {"kind": kind, "run": self.run_id, **handle}
        self._append({"op": "add", "scope": self.scope, "t": time.time(), **entry})
        return entry

    def made(self, entry: dict[str, Any], **identity: Any) -> None:
        """Confirm the object exists, with what tells it apart from a later look-alike (ifindex, start)."""
        entry.update(identity)
        self._append({"op": "made", "scope": self.scope, **entry})

    def gone(self, entry: dict[str, Any]) -> None:
        self._append({"op": "gone", "scope": self.scope, **entry})

    @contextlib.contextmanager
    def making(self, kind: str, **handle: Any) -> Iterator[dict[str, Any]]:
        """Record, make (the block), and on failure of the block mark it gone: it was never ours."""
        entry = self.add(kind, **handle)
        try:
            yield entry
        except BaseException:
            self.gone(entry)
            raise

    def link(self, name: str) -> dict[str, Any]:
        """Record a root-namespace link about to be made."""
        return self.add("link", name=name)

    def confirm_links(self) -> None:
        """Attach each recorded link's ifindex (after the links were made)."""
        for e in self.entries(self.scope):
            if e["kind"] == "link" and e.get("ifindex") is None:
                index = engine.ifindex(e["name"])
                if index is not None:
                    self.made(e, ifindex=index)

    def process(self, pid: int) -> None:
        self.made(self.add("process", pid=pid), start=start_time(pid))

    def entries(self, scope: str | None = None) -> list[dict[str, Any]]:
        """Objects added and not gone, in the order they were added (latest identity merged in)."""
        return [e for e in live_entries(self.path) if scope is None or e.get("scope") == scope]

    def remove(self, scope: str | None = None, ctx: Context | None = None) -> list[Outcome]:
        """Remove every live object (of `scope`, or all): processes first, the run record last. An entry is closed
        when its object was removed or is verified absent; one that could not be removed, or whose state could not
        be told (a tool missing or hung, an engine not answering), stays for `protolab clean`. The ledger file goes
        when a whole-run removal left nothing."""
        ctx = ctx or Context()
        outcomes = []
        todo = self.entries(scope)
        todo.sort(key=lambda e: KIND_ORDER.index(e["kind"]))  # stable: within a kind, in the order made
        for e in todo:
            if e["kind"] == "run" and scope is not None:
                continue  # the run record goes when the whole run is swept
            try:
                existed = REMOVERS[e["kind"]](e, ctx, True)
                self.gone(e)
                outcomes.append(Outcome(e, REMOVED if existed else GONE))
            except DockerUnreachableError:
                outcomes.append(Outcome(e, UNKNOWN, "the Docker engine does not answer"))
            except CannotTellError as exc:
                outcomes.append(Outcome(e, UNKNOWN, str(exc).strip()[:300]))
            except Exception as exc:
                outcomes.append(Outcome(e, FAILED, str(exc).strip()[:300]))
        # a helper of this process's that ended without its stop (killed above, or started by a deploy that failed
        # before the lab held it) leaves its control socket: those nothing listens on go
        stale_helper_sockets(f"{os.getpid()}-*.sock", remove=True)
        if scope is None and not any(o.left for o in outcomes):
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
        return outcomes

    def sweep(self, scope: str | None = None, ctx: Context | None = None) -> list[str]:
        """remove(), and what it left: one line each (their entries stay for `protolab clean`)."""
        return [o.line() for o in self.remove(scope, ctx) if o.left]

    def left(self, ctx: Context | None = None) -> list[str]:
        """Live objects that still exist, or whose state cannot be told (said so), one line each."""
        ctx = ctx or Context()
        out = []
        for e in self.entries():
            try:
                if REMOVERS[e["kind"]](e, ctx, False):
                    out.append(describe(e))
            except CannotTellError as exc:
                out.append(f"{describe(e)} (could not tell whether it is there: {str(exc).strip()[:200]})")
        return out


REMOVED, GONE, UNKNOWN, FAILED = "removed", "gone", "could not tell", "failed"


@dataclasses.dataclass
class Outcome:
    """What removing one ledger entry came to: REMOVED (it was there and is not now), GONE (verified absent
    already), UNKNOWN (could not tell: the entry stays) or FAILED (there, and the removal failed: it stays)."""

    entry: dict[str, Any]
    state: str
    why: str = ""

    @property
    def left(self) -> bool:
        return self.state in (UNKNOWN, FAILED)

    def line(self) -> str:
        if self.state == UNKNOWN:
            return f"{describe(self.entry)}: could not tell whether it is gone: {self.why}"
        if self.state == FAILED:
            return f"{describe(self.entry)}: {self.why}"
        return f"{self.state} {describe(self.entry)}" if self.state == REMOVED else f"{describe(self.entry)}: gone"


def live_entries(path: Path) -> list[dict[str, Any]]:
    live: dict[str, dict[str, Any]] = {}
    for rec in JsonLog(path).read():  # a torn last line (a crash mid-write) is left out: nothing was made yet
        op = rec.pop("op", None)
        k = _key(rec)
        if op == "add":
            live[k] = rec
        elif op == "made" and k in live:
            live[k].update(rec)
        elif op == "gone":
            live.pop(k, None)
    return list(live.values())


def ledgers() -> list[Ledger]:
    d = state_dir() / "owned"
    return [Ledger(p.stem) for p in sorted(d.glob("*.jsonl"))] if d.is_dir() else []


def record_host(ledger: Ledger) -> dict[str, Any]:
    """Snapshot the host settings a run may change, into the ledger (restored by the sweep); returns it."""
    before = kernelstate.snapshot()
    ledger.add("host", before=before)
    return before


def begin_run(run_id: str, results_dir: Path | None, keep: bool = False) -> Ledger:
    """A new run's ledger, opened with its run record (the processes it starts carry RUN_ENV=run_id). A run
    with `keep` leaves its lab up: its ledger outlives its process until `protolab clean`."""
    ledger = Ledger(run_id)
    ledger.add("run", pid=os.getpid(), start=start_time(os.getpid()), keep=keep,
               dir=str(results_dir) if results_dir else None)  # fmt: skip
    return ledger


def dead_runs() -> list[Ledger]:
    """Ledgers whose run process is gone (a run killed, or a teardown that failed)."""
    out = []
    for ledger in ledgers():
        runs = [e for e in ledger.entries() if e["kind"] == "run"]
        if any(e.get("keep") for e in runs) or any(alive(e["pid"], e.get("start")) for e in runs):
            continue
        if ledger.run_id == MONITORING_LEDGER:
            continue  # `protolab up`: the stack stays until `protolab down` or `clean`
        out.append(ledger)
    return out


def sweep_dead(ctx: Context | None = None) -> tuple[list[str], list[str]]:
    """Remove what dead runs left behind: (what was removed, failures)."""
    ctx = ctx or Context()
    removed, failures = [], []
    for ledger in dead_runs():
        for o in ledger.remove(None, ctx):
            if o.state == REMOVED:
                removed.append(f"{describe(o.entry)} (run {ledger.run_id})")
            elif o.left:
                failures.append(f"{o.line()} (run {ledger.run_id})")
    return removed, failures


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)
