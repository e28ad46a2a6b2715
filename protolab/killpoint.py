"""A test hook: SIGKILL this process at the n-th visit of a named place (the kill-point tests, issue "Trust").

`PROTOLAB_KILL_AT=<site>:<n>` (n >= 1) makes the n-th call of `killpoint(site)` kill the calling process with
SIGKILL, as a power cut or the OOM killer would. The variable is read once, at the first call, and removed from
this process's environment, so the processes it starts (keepers, helpers) never inherit it. Unset, a call is
one dict lookup. `PROTOLAB_KILL_TRACE=<file>` appends each visited site to the file, one a line (the tests
count a run's visits with it to choose their points). Sites:

- `ledger`: after each line appended to a run's ledger (protolab.ownership), i.e. between recording an object
  and making it, and between making it and confirming it;
- `row`: after each measured row is on disk (rows.jsonl);
- `teardown`: before each step of a run's teardown and finish (protolab.orchestrator.experiment);
- `clean`: before each step of `protolab clean` (protolab.cleanup);
- `resume`: at the steps of `--resume` that change the results folder or the machine.

Not for production use: nothing but the tests sets these variables.
"""

from __future__ import annotations

import os
import signal
import threading

KILL_ENV = "PROTOLAB_KILL_AT"
TRACE_ENV = "PROTOLAB_KILL_TRACE"
SITES = ("ledger", "row", "teardown", "clean", "resume")

_lock = threading.Lock()
_armed: tuple[str, int] | None = None
_trace: str | None = None
_visits: dict[str, int] = {}
_read = False


def parse(value: str) -> tuple[str, int]:
    """`site:n` -> (site, n); ValueError naming the variable and why."""
    site, sep, n = value.partition(":")
    if not sep or site not in SITES or not n.isdigit() or int(n) < 1:
        raise ValueError(f"{KILL_ENV}={value!r}: expected <site>:<n> with site one of {', '.join(SITES)} and n >= 1")
    return site, int(n)


def _load() -> None:
    global _armed, _trace, _read
    value, _trace = os.environ.pop(KILL_ENV, None), os.environ.pop(TRACE_ENV, None)
    _armed = parse(value) if value else None
    _read = True


def killpoint(site: str) -> None:
    """Count a visit of `site`; SIGKILL this process when it is the visit PROTOLAB_KILL_AT names."""
    if _read and _armed is None and _trace is None:
        return
    with _lock:
        if not _read:
            _load()
        if _armed is None and _trace is None:
            return
        n = _visits[site] = _visits.get(site, 0) + 1
        if _trace:
            with open(_trace, "a") as f:
                f.write(site + "\n")
        if _armed == (site, n):
            os.kill(os.getpid(), signal.SIGKILL)


def reset() -> None:
    """Forget the counts and read the variables again at the next call (unit tests)."""
    global _armed, _trace, _read
    with _lock:
        _armed, _trace, _read = None, None, False
        _visits.clear()
