"""The helpers are watched: a helper process that ends or stops answering while a measurement runs is named in
the measurement's invalid reasons (helperproc.WATCH, guard.helpers_down), a deliberate stop is not; a node's
metrics agent is judged by Prometheus's scrapes of it (guard.agents_silent)."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from protolab.lab import guard, helperproc
from protolab.lab.helperproc import HelperProcess, Watcher
from protolab.monitor import Sample

HELPER = """\
import http.server, socketserver, sys
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_GET(self):
        self.send_response(200 if self.path == "/healthz" else 404)
        self.end_headers()
        self.wfile.write(b"ok\\n")
srv = socketserver.UnixStreamServer(sys.argv[1], H)
print("ready", flush=True)
srv.serve_forever()
"""


class Fake(HelperProcess):
    def __init__(self, folder: Path, name: str) -> None:
        self.control = folder / f"{name}.sock"
        self.serves = f"the link into node {name}"
        script = folder / "helper.py"
        script.write_text(HELPER)
        self._start([sys.executable, str(script), str(self.control)], dict(os.environ), "ready", f"fake {name}", 10, 5)


@pytest.fixture
def fast(monkeypatch):
    """The module's watcher looking every 0.1 s (a fresh one: no other test's helpers in it)."""
    w = Watcher(interval=0.1)
    monkeypatch.setattr(helperproc, "WATCH", w)
    monkeypatch.setattr(guard, "WATCH", w)
    monkeypatch.setattr(helperproc, "ANSWER_TIMEOUT", 0.3)
    return w


def _wait_for(cond, seconds: float = 5.0) -> None:
    end = time.monotonic() + seconds
    while not cond():
        assert time.monotonic() < end, "not within the time"
        time.sleep(0.05)


def test_a_helper_killed_during_a_measurement_is_named_and_a_stopped_one_is_not(tmp_path, fast):
    since = time.monotonic()
    a, b = Fake(tmp_path, "h1"), Fake(tmp_path, "h2")
    try:
        time.sleep(0.3)
        assert fast.reasons(since) == []  # both answer
        os.kill(a.proc.pid, signal.SIGKILL)
        _wait_for(lambda: fast.outages)
        (reason,) = fast.reasons(since)
        assert reason.startswith(f"fake h1 (pid {a.proc.pid}, the link into node h1) ended (killed by signal 9)")
        assert "into the measurement" in reason
        # a later measurement still sees it dead: its traffic crosses an unemulated link too
        later = time.monotonic()
        assert fast.reasons(later) == [reason.split(" since ")[0] + " since before the measurement"]
        b._end()  # stopped on purpose: no outage
        assert not any("fake h2" in r for r in fast.reasons(since))
    finally:
        a._end()
        b._end()
    assert fast.reasons(time.monotonic()) == []  # nothing watched any more


def test_a_helper_that_stops_answering_for_a_while_is_named_with_how_long(tmp_path, fast):
    h = Fake(tmp_path, "h3")
    try:
        since = time.monotonic()
        os.kill(h.proc.pid, signal.SIGSTOP)
        time.sleep(1.2)
        os.kill(h.proc.pid, signal.SIGCONT)
        time.sleep(0.5)  # answers again before the measurement ends
        (reason,) = fast.reasons(since)
        assert "fake h3" in reason and "did not answer /healthz within 0.3 s" in reason, reason
        seconds = float(reason.rsplit(" for ", 1)[1].split()[0])
        assert 0.5 <= seconds <= 1.6, reason
        assert fast.reasons(time.monotonic()) == []  # a measurement after it ended is not touched
    finally:
        h._end()


def test_silence_counts_failed_scrapes_not_missing_ones():
    ok, bad = 1.0, 0.0
    assert guard.silence([(0, ok), (1, ok), (2, ok)], 3) == (0.0, 0.0)
    # failed from t=2 to the good scrape at t=6
    assert guard.silence([(0, ok), (1, ok), (2, bad), (3, bad), (4, bad), (5, bad), (6, ok)], 7) == (4.0, 2.0)
    # failing to the end of the measurement
    assert guard.silence([(0, ok), (4, bad), (5, bad)], 9.5) == (5.5, 4.0)
    # no scrape at all for 5 s (Prometheus held up): no agent's fault
    assert guard.silence([(0, ok), (6, ok)], 7) == (0.0, 0.0)


class Prom:
    def __init__(self, series: dict[str, list[tuple[float, float]]]) -> None:
        self.series, self.asked = series, []

    def samples(self, expr: str, start: float, end: float):
        self.asked.append(expr)
        return [({"node": n, "instance": f"plab-{n}:9100"}, [Sample(t, v) for t, v in pts])
                for n, pts in self.series.items()]  # fmt: skip


def test_an_agent_that_answered_no_scrape_for_3_s_is_named_with_its_node():
    t0 = 1000.0
    good = [(t0 + i, 1.0) for i in range(10)]
    dead = [(t0 + i, 1.0 if i < 4 else 0.0) for i in range(10)]
    blip = [(t0 + i, 0.0 if i == 5 else 1.0) for i in range(10)]  # one slow scrape under load: not a death
    prom = Prom({"h1": good, "h2": dead, "h3": blip})
    (reason,) = guard.agents_silent(prom, ["h1", "h2", "h3"], t0, t0 + 10)
    assert reason == ("the metrics agent of node h2 (plab-h2:9100) answered no scrape for 6.0 s from 4.0 s into "
                      "the measurement")  # fmt: skip
    assert prom.asked == ['up{instance=~".+:9100"}']
    assert guard.agents_silent(prom, ["h1", "h2"], t0, t0 + 2) == []  # shorter than the bound: nothing to judge


def test_helpers_down_leaves_out_nodes_a_fault_acts_on_and_names_a_dead_keeper(fast):
    t0 = time.time()
    prom = Prom({"h2": [(t0 - 8 + i, 0.0) for i in range(8)]})
    lab = SimpleNamespace(
        nodes={"h1": None, "h2": None},
        service_pids=lambda: [os.getpid(), 2**22 + 12345],
        keepers_helpers_down=lambda _since: [],
    )
    since = time.monotonic() - 8
    paused = [SimpleNamespace(faults=[SimpleNamespace(node="h2")])]
    assert guard.helpers_down(lab, prom, since, paused) == ["the keeper serving the lab (pid 4206649) has ended"]
    reasons = guard.helpers_down(lab, prom, since, [SimpleNamespace(faults=[])])
    assert any(r.startswith("the metrics agent of node h2") for r in reasons), reasons


def test_prometheus_not_answering_is_said():
    class Down:
        def samples(self, *a):
            raise OSError("connection refused")

    assert guard.agents_silent(Down(), ["h1"], 0, 10) == [
        "the nodes' metrics agents could not be watched: Prometheus did not answer (connection refused)"
    ]


def test_a_lab_over_hosts_asks_each_keeper_for_its_own_watch_and_says_one_that_does_not_answer(tmp_path, fast):
    """A keeper's link emulators are its own process's helpers: the run asks each keeper (`helpers`, `ago`
    seconds back, its own clock), and a keeper that does not answer is a reason too."""
    from protolab.errors import LabError
    from protolab.lab import keeper
    from protolab.lab.testbed import TestbedLab
    from protolab.topo import Topology

    kp = keeper.Keeper(keeper.Request(source="t"))
    h = Fake(tmp_path, "r2")
    since = time.monotonic()
    os.kill(h.proc.pid, signal.SIGKILL)
    _wait_for(lambda: any("ended" in r for r in fast.reasons(since)))
    answer = kp.handle({"op": "helpers", "ago": time.monotonic() - since + 0.5})
    assert answer["ok"] and any("fake r2" in r and "ended" in r for r in answer["reasons"]), answer
    assert kp.handle({"op": "helpers", "ago": float("nan")})["ok"] is False

    def refuse(op, **args):
        raise LabError("helpers: the lab keeper does not answer")

    parts = {"host_a": SimpleNamespace(request=lambda op, **args: kp.handle({"op": op, **args})),
             "host_b": SimpleNamespace(request=refuse)}  # fmt: skip
    view = TestbedLab(Topology("empty"))
    view.parts = SimpleNamespace(parts=parts)  # type: ignore[assignment]
    reasons = view.keepers_helpers_down(since)
    assert any("fake r2" in r and r.endswith("(on host host_a)") for r in reasons), reasons
    assert reasons[-1].startswith("the helpers on host host_b could not be watched: its keeper did not answer")
    lab = SimpleNamespace(nodes={}, service_pids=lambda: [], keepers_helpers_down=view.keepers_helpers_down)
    assert [r for r in guard.helpers_down(lab, None, since, []) if "(on host host_a)" in r]
    h._end()
