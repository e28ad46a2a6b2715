"""What a run holds from its start to its end: signals, progress, the manifest, and teardown."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import environment, monitor
from ..results.store import CONSOLE_LOG, SCHEMA_VERSION

if TYPE_CHECKING:
    from ..lab.api import RunningLab

log = logging.getLogger(__name__)


class Interrupted(BaseException):  # noqa: N818 (like KeyboardInterrupt: not an error of the run's own)
    pass


class Signals:
    """SIGINT, SIGTERM and SIGHUP alike: the first stops the run where it is (Interrupted) and from then on the run
    is finishing: later ones are said ("already stopping, cleaning up") and otherwise ignored, so teardown and the
    results always finish. After SIGHUP (the terminal is gone) the process's stdout and stderr (fds 1 and 2, so
    also whatever a live view restores) go to console.log in the results folder.

    The first signal's Interrupted is raised wherever the main thread is, and that can be a finalizer (a Popen's
    __del__ run by the garbage collector), where Python prints the exception and drops it. So it stays `pending`
    until the run has it (`delivered`), and `check`, called between the run's steps, raises it again."""

    HANDLED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

    def __init__(self, log_dir: Path) -> None:
        self.log_dir, self.finishing = log_dir, False
        self.received: list[str] = []
        self.pending: str | None = None  # the first signal's name until the run has its Interrupted
        self.old: dict[int, Any] = {}

    def install(self) -> None:
        if threading.current_thread() is threading.main_thread():
            for s in self.HANDLED:
                self.old[s] = signal.signal(s, self._handle)

    def restore(self) -> None:
        for s, h in self.old.items():
            signal.signal(s, h)

    def _handle(self, signum: int, _frame: Any) -> None:
        name = signal.Signals(signum).name
        self.received.append(name)
        if signum == signal.SIGHUP:
            self._to_console_log()
        if self.finishing:
            say(f"\n{name}: already stopping, cleaning up (measured rows are on disk already)")
            return
        self.finishing, self.pending = True, name
        raise Interrupted(name)

    def delivered(self) -> None:
        """The run has the Interrupted (or is stopping for another reason): nothing is pending."""
        self.finishing, self.pending = True, None

    def check(self) -> None:
        """Raise the first signal's Interrupted again if it never reached the run (it was raised in a finalizer)."""
        if self.pending is not None:
            name, self.pending = self.pending, None
            log.debug("%s was raised where it was dropped; raising it again", name)
            raise Interrupted(name)

    def _to_console_log(self) -> None:
        """fds 1 and 2 onto console.log (the terminal's are gone: writing there fails with EIO)."""
        try:
            fd = os.open(self.log_dir / CONSOLE_LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as exc:  # a full or read-only results folder: the output is lost, the run goes on
            fd = os.open(os.devnull, os.O_WRONLY)
            log.debug("console.log: %s", exc)
        for stream, target in ((sys.stdout, 1), (sys.stderr, 2)):
            with contextlib.suppress(Exception):
                stream.flush()
            os.dup2(fd, target)
        os.close(fd)


def say(text: str) -> None:
    """Print a line for the person running protolab; a terminal that is gone (EIO, EPIPE) is no error of the run."""
    try:
        print(text, flush=True)
    except (OSError, ValueError) as exc:
        log.debug("could not print %r: %s", text, exc)


class Progress:
    """`[k/total pct elapsed ETA] what` per measurement; `before`: measurements a resumed run already has (they
    count as done; the ETA is from this process's pace alone)."""

    def __init__(self, total: int, before: int = 0) -> None:
        self.total, self.before, self.done, self.t0 = total, before, 0, time.monotonic()

    def step(self, what: str) -> None:
        elapsed = time.monotonic() - self.t0
        left = self.total - self.before - self.done
        eta = "?" if not self.done else f"{elapsed / self.done * left:.0f}s"
        k = self.before + self.done
        pct = 100 * k / self.total
        print(f"[{k + 1}/{self.total} {pct:3.0f}% elapsed {elapsed:.0f}s ETA {eta}] {what}", flush=True)

    def finish(self) -> None:
        self.done += 1


def manifest(plan: Any, run_id: str, started: str, images: dict[str, str]) -> dict[str, Any]:
    e = plan.base
    return {
        "schema_version": SCHEMA_VERSION,
        "experiment": e.name,
        "run_id": run_id,
        "profile": plan.profile,
        "spec_file": str(plan.source),
        "spec": plan.raw,
        "points": [{"id": p.id, "values": p.values, "label": p.label()} for p in plan.points],
        "git_commit": environment.git_commit(),
        "images": images,
        "kernel": environment.static()["kernel"],
        "host": environment.static(),
        "tool_versions": environment.tool_versions(),
        "impairment_backend": None,  # set once probed
        "random_seed": e.random_seed,
        "started_at": started,
        "finished_at": None,
        "environment": {"static": environment.static(), "dynamic": environment.dynamic()},
        "axes": list(e.sweep),
        "columns": list(dict.fromkeys(c for p in plan.points for c in p.experiment.columns())),
    }


def teardown(lab: RunningLab | None, ledger: Any) -> list[str]:
    """Best effort, object by object: the lab, the monitoring stack, then whatever the ledger still lists
    but the run record; returns every failure (left in the ledger for `clean`)."""
    failures: list[str] = []
    if lab is not None:
        lab.teardown()
        failures += lab.teardown_failures
    try:
        monitor.down()
    except Exception as exc:
        log.warning("teardown: monitoring: %s", exc)  # the ledger sweep below removes it by its labels
    failures += ledger.sweep("session")
    for scope in {e.get("scope") for e in ledger.entries()} - {"session", None}:
        failures += ledger.sweep(scope)
    return failures


def best_effort(fn: Any, default: Any) -> Any:
    try:
        return fn()
    except Exception as exc:
        log.warning("%s: %s", getattr(fn, "__name__", fn), exc)
        return default
