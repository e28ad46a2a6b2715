"""A helper process protolab keeps running beside a lab (the link emulator protolab-linkem, the NIC filter model
protolab-nicfilter): started with a control socket, ready when its first stdout line says so, both pipes read to
the end by daemon threads (a chatty process never blocks on a full pipe; the last lines of each are kept for
error messages), terminated (killed after 5 s) with its control socket removed.

Every helper is watched from its ready line until it is stopped (WATCH): every WATCH_INTERVAL a thread looks
whether it still runs and answers GET /healthz on its control socket within ANSWER_TIMEOUT, and keeps each outage
(which helper, what, from when to when on the monotonic clock). A measurement asks WATCH.reasons(since) which
helper was out during it; a helper that died stays out, so every later measurement says so too.
"""

from __future__ import annotations

import collections
import collections.abc
import http.client
import logging
import queue
import socket
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)
WATCH_INTERVAL = 0.5  # seconds between two looks at each helper
ANSWER_TIMEOUT = 1.0  # a helper slower than this to answer /healthz is not answering


class UnixHTTPConnection(http.client.HTTPConnection):
    """HTTP over a unix socket: a helper process's control socket."""

    def __init__(self, path: Path, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self.socket_path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(str(self.socket_path))
        except OSError:
            sock.close()
            raise
        self.sock = sock


class HelperProcess:
    """Subclasses set `control` (the socket path) and call `_start`."""

    control: Path
    label: str
    serves: str = ""  # what it does for the lab, with the nodes it serves (for the watcher's reasons)

    def _start(self, args: list[str], env: dict[str, str], ready: str, label: str, timeout: float,
               tail_lines: int) -> None:  # fmt: skip
        """Start `args` and wait up to `timeout` s for the stdout line `ready`; RuntimeError (process ended) if
        another line or none comes, naming `label` and the process's last output."""
        self.label = label
        # a session of its own: a Ctrl-C typed at the run's terminal goes to the runner, which stops the helper
        # in its teardown, not to the helper in the middle of a measurement
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                                     start_new_session=True)  # fmt: skip
        self.tails = {p: collections.deque[str](maxlen=tail_lines) for p in ("stderr", "stdout")}
        first: queue.Queue[str] = queue.Queue()
        pipes = ((self.proc.stdout, "stdout", first), (self.proc.stderr, "stderr", None))
        self._drains = [threading.Thread(target=self._drain, args=a, daemon=True) for a in pipes]
        for t in self._drains:
            t.start()
        try:
            line = first.get(timeout=timeout)
        except queue.Empty:
            line = f"(no {ready!r} line within {timeout:g}s)"
        if line.strip() != ready:
            self._end()
            raise RuntimeError(f"{label} did not start: {line.strip()[:200]}{self.output()}")
        WATCH.add(self)

    def problem(self) -> str | None:
        """Why the helper is not doing its job now (ended, or not answering GET /healthz in time), or None."""
        code = self.proc.poll()
        if code is not None:
            return f"ended ({f'killed by signal {-code}' if code < 0 else f'exit status {code}'})"
        try:
            status, _ = self._request("GET", "/healthz", timeout=ANSWER_TIMEOUT, tail=False)
        except RuntimeError as exc:
            return f"did not answer /healthz within {ANSWER_TIMEOUT:g} s ({str(exc.__cause__ or exc)[:120]})"
        return None if status == 200 else f"answered /healthz with {status}"

    def describe(self) -> str:
        return f"{self.label} (pid {self.proc.pid}{', ' + self.serves if self.serves else ''})"

    def _drain(self, stream: collections.abc.Iterable[str], label: str, first: queue.Queue[str] | None) -> None:
        """Read one of the process's pipes to its end: the first stdout line to `first`, the rest to the tail."""
        for line in stream:
            if first is not None:
                first.put(line)
                first = None
                continue
            self.tails[label].append(line.rstrip())
            log.debug("%s %s: %s", self.label, label, line.rstrip())
        if first is not None:
            first.put("(exited without output)")

    def output(self) -> str:
        """The process's last lines, for error messages ('' if none)."""
        for t in self._drains:  # an exited process's last lines are still in the pipes
            if self.proc.poll() is not None:
                t.join(timeout=1)
        lines = [f"{p}: {line}" for p, tail in self.tails.items() for line in tail]
        return "; its last output:\n  " + "\n  ".join(lines) if lines else ""

    def _request(self, method: str, path: str, body: str | None = None, timeout: float = 5,
                 tail: bool = True) -> tuple[int, str]:  # fmt: skip
        """One HTTP request on the control socket: (status, body); RuntimeError with the process's last output
        (unless not `tail`) when the socket does not answer."""
        conn = UnixHTTPConnection(self.control, timeout=timeout)
        headers = {"Content-Type": "application/json"} if body is not None else {}
        try:
            conn.request(method, path, body=body, headers=headers)
            resp = conn.getresponse()
            return resp.status, resp.read().decode(errors="replace")
        except OSError as exc:
            raise RuntimeError(f"{self.label}: {self.control}: {exc}{self.output() if tail else ''}") from exc
        finally:
            conn.close()

    def _end(self, kill_after: float = 5.0) -> None:
        """Terminate the process (kill after `kill_after` seconds) and remove its control socket (it removes it
        itself unless killed). A deliberate end is no outage: the watcher lets go of it first."""
        WATCH.remove(self)
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=kill_after)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        self.control.unlink(missing_ok=True)


@dataclass
class Outage:
    """A helper not doing its job, from `first` to `last` seen so (time.monotonic())."""

    helper: str  # HelperProcess.describe()
    what: str
    first: float
    last: float


class Watcher:
    """Looks at every running helper every WATCH_INTERVAL from a daemon thread (running while any is watched)."""

    def __init__(self, interval: float = WATCH_INTERVAL) -> None:
        self.interval = interval
        self._lock = threading.Lock()
        self._helpers: dict[int, HelperProcess] = {}
        self._open: dict[int, Outage] = {}  # by id(helper): its outage still going on
        self.outages: list[Outage] = []
        self._thread: threading.Thread | None = None

    def add(self, helper: HelperProcess) -> None:
        with self._lock:
            self._helpers[id(helper)] = helper
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name="helper-watch", daemon=True)
                self._thread.start()

    def remove(self, helper: HelperProcess) -> None:
        with self._lock:
            self._helpers.pop(id(helper), None)
            self._open.pop(id(helper), None)

    def look(self) -> None:
        """One look at every watched helper; outages recorded or extended (closed when it answers again)."""
        with self._lock:
            helpers = list(self._helpers.items())
        for key, h in helpers:
            try:
                what = h.problem()
            except Exception as exc:  # a look that fails is itself a finding, never the watcher's end
                what = f"could not be looked at: {exc}"
            now = time.monotonic()
            with self._lock:
                if key not in self._helpers:  # stopped on purpose meanwhile
                    continue
                out = self._open.get(key)
                if what is None:
                    self._open.pop(key, None)
                elif out is None or out.what != what:
                    out = Outage(h.describe(), what, now, now)
                    self._open[key] = out
                    self.outages.append(out)
                    log.warning("%s: %s", out.helper, what)
                else:
                    out.last = now

    def _loop(self) -> None:
        while True:
            with self._lock:
                if not self._helpers:
                    self._thread = None
                    return
            t = time.monotonic()
            self.look()
            time.sleep(max(0.0, self.interval - (time.monotonic() - t)))

    def reasons(self, since: float) -> list[str]:
        """The outages seen since `since` (time.monotonic()), after one more look now: one line each, naming the
        helper, what it serves and what happened."""
        self.look()
        with self._lock:
            seen = [o for o in self.outages if o.last >= since]
        now = time.monotonic()

        def when(o: Outage) -> str:
            start = "before the measurement" if o.first < since else f"{o.first - since:.1f} s into the measurement"
            ongoing = o.last >= now - 2 * self.interval
            return f"since {start}" if ongoing else f"from {start} for {o.last - o.first + self.interval:.1f} s"

        return [f"{o.helper} {o.what} {when(o)}" for o in seen]


WATCH = Watcher()
