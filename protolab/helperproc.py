"""A helper process protolab keeps running beside a lab (the link emulator protolab-linkem, the NIC filter model
protolab-nicfilter): started with a control socket, ready when its first stdout line says so, both pipes read to
the end by daemon threads (a chatty process never blocks on a full pipe; the last lines of each are kept for
error messages), terminated (killed after 5 s) with its control socket removed."""

from __future__ import annotations

import collections
import collections.abc
import http.client
import logging
import queue
import socket
import subprocess
import threading
from pathlib import Path

log = logging.getLogger(__name__)


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

    def _start(self, args: list[str], env: dict[str, str], ready: str, label: str, timeout: float,
               tail_lines: int) -> None:  # fmt: skip
        """Start `args` and wait up to `timeout` s for the stdout line `ready`; RuntimeError (process ended) if
        another line or none comes, naming `label` and the process's last output."""
        self.label = label
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
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

    def _request(self, method: str, path: str, body: str | None = None) -> tuple[int, str]:
        """One HTTP request on the control socket: (status, body); RuntimeError with the process's last output
        when the socket does not answer."""
        conn = UnixHTTPConnection(self.control, timeout=5)
        headers = {"Content-Type": "application/json"} if body is not None else {}
        try:
            conn.request(method, path, body=body, headers=headers)
            resp = conn.getresponse()
            return resp.status, resp.read().decode(errors="replace")
        except OSError as exc:
            raise RuntimeError(f"{self.label}: {self.control}: {exc}{self.output()}") from exc
        finally:
            conn.close()

    def _end(self) -> None:
        """Terminate the process (kill after 5 s) and remove its control socket (it removes it itself unless
        killed)."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        self.control.unlink(missing_ok=True)
