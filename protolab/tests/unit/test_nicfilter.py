"""protolab.lab.nicfilter's wrapper: the command line it builds, its checks, and its process handling against a fake
protolab-nicfilter (a script serving /stats on the control socket)."""

from __future__ import annotations

import json
import os
import sys
import time

import pytest

from protolab.lab import nicfilter
from protolab.lab.nicfilter import FilteredInterface, NicFilter

H1 = FilteredInterface("plab-s1-eth1", 4242, "h1-eth0", "hash64")
H2 = FilteredInterface("plab-s1-eth2", 4343, "h2-eth0")


def test_command_names_every_interface_in_order(tmp_path):
    args = nicfilter.command([H1, H2], tmp_path / "c.sock")
    assert args[0] == str(nicfilter.NICFILTER) and args[1] == "run"
    assert args[args.index("--control") + 1] == str(tmp_path / "c.sock")
    hosts = args[args.index("--port") :]
    assert hosts == ["--port", "plab-s1-eth1", "--pid", "4242", "--ifname", "h1-eth0", "--mode", "hash64",
                     "--port", "plab-s1-eth2", "--pid", "4343", "--ifname", "h2-eth0", "--mode", "perfect"]  # fmt: skip


@pytest.mark.parametrize(
    ("interfaces", "match"),
    [
        ([], "no interface"),
        ([FilteredInterface("p1", 1, "h1-eth0", "imperfect")], "mode 'imperfect'.*perfect, hash64, promiscuous"),
        ([FilteredInterface("p1", 0, "h1-eth0")], "pid 0 is not a process id"),
        ([FilteredInterface("p1", -3, "h1-eth0")], "pid -3"),
        ([FilteredInterface("p1", True, "h1-eth0")], "pid True"),
        ([FilteredInterface("p1", "12", "h1-eth0")], "pid '12'"),  # type: ignore[arg-type]
        ([FilteredInterface("", 1, "h1-eth0")], "must not be empty"),
        ([FilteredInterface("p1", 1, "")], "must not be empty"),
        ([FilteredInterface("p1", 1, "a"), FilteredInterface("p1", 2, "b")], "given twice"),
    ],
)
def test_bad_interfaces_are_refused(tmp_path, interfaces, match):
    with pytest.raises(ValueError, match=match):
        nicfilter.command(interfaces, tmp_path / "c.sock")


FAKE = """#!{python}
import http.server, json, os, signal, socketserver, sys, time
if os.environ.get("FAKE_EXIT_AFTER"):  # a slow detach: exit 0 that long after SIGTERM
    signal.signal(signal.SIGTERM, lambda *_: (time.sleep(float(os.environ["FAKE_EXIT_AFTER"])), os._exit(0)))
args = sys.argv[1:]
open(os.environ["FAKE_OUT"], "w").write(json.dumps({{"args": args, "node": os.environ.get("PROTOLAB_NODE"),
                                                    "run": os.environ.get("PROTOLAB_RUN"), "pid": os.getpid()}}))
if os.environ.get("FAKE_FAIL"):
    print("protolab-nicfilter: host plab-s1-eth1: pid 4242: no such process", file=sys.stderr, flush=True)
    sys.exit(2)
ports = [args[i + 1] for i, a in enumerate(args) if a == "--port"]
class H(http.server.BaseHTTPRequestHandler):
    def address_string(self):
        return "unix"
    def do_GET(self):
        body = json.dumps({{"hosts": [{{"port": p, "mode": "hash64",
                           "counters": {{"passed": {{"packets": 3, "bytes": 180}}}}}} for p in ports]}}).encode()
        self.send_response(200 if self.path == "/stats" else 404)
        self.end_headers()
        self.wfile.write(body)
srv = socketserver.UnixStreamServer(args[args.index("--control") + 1], H)
print("ready", flush=True)
srv.serve_forever()
"""


@pytest.fixture
def fake(tmp_path, monkeypatch):
    script = tmp_path / "protolab-nicfilter"
    script.write_text(FAKE.format(python=sys.executable))
    script.chmod(0o755)
    monkeypatch.setattr(nicfilter, "NICFILTER", script)
    monkeypatch.setenv("PROTOLAB_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("FAKE_OUT", str(tmp_path / "out.json"))
    return tmp_path / "out.json"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_start_stats_stop(fake):
    nf = NicFilter("s1", [H1, H2], run_id="run-1")
    try:
        seen = json.loads(fake.read_text())
        assert seen["node"] == "nicfilter-s1" and seen["run"] == "run-1"
        assert seen["args"][seen["args"].index("--control") + 1] == str(nf.control)
        assert nf.control.parent.stat().st_mode & 0o777 == 0o700
        stats = nf.stats()
        assert sorted(stats) == ["plab-s1-eth1", "plab-s1-eth2"]
        assert stats["plab-s1-eth1"]["counters"]["passed"] == {"packets": 3, "bytes": 180}
    finally:
        nf.stop()
    assert not _alive(seen["pid"])
    assert not nf.control.exists()
    with pytest.raises(RuntimeError, match="exited"):
        nf.stats()


@pytest.mark.parametrize(("per_interface", "ends"), [(1.0, "on its own"), (0.0, "killed")])
def test_its_stop_waits_longer_the_more_interfaces_it_detaches(fake, monkeypatch, per_interface, ends):
    monkeypatch.setenv("FAKE_EXIT_AFTER", "0.5")
    monkeypatch.setattr(nicfilter, "STOP_TIMEOUT", 0.1)
    monkeypatch.setattr(nicfilter, "STOP_PER_INTERFACE", per_interface)  # two interfaces: 2.1 s, else 0.1 s
    nf = NicFilter("s1", [H1, H2])
    if ends == "on its own":
        nf.stop()
        assert nf.proc.returncode == 0
    else:
        with pytest.raises(RuntimeError, match="exited with -9"):
            nf.stop()
    assert not nf.control.exists()


def test_a_process_that_refuses_its_input_raises_with_its_message(fake, monkeypatch):
    monkeypatch.setenv("FAKE_FAIL", "1")
    with pytest.raises(RuntimeError, match=r"(?s)did not start: \(exited without output\).*no such process"):
        NicFilter("s1", [H1])


def test_missing_binary_says_how_to_build_it(tmp_path, monkeypatch):
    monkeypatch.setattr(nicfilter, "NICFILTER", tmp_path / "nope")
    with pytest.raises(RuntimeError, match="make images"):
        NicFilter("s1", [H1])


def test_bad_input_starts_no_process(fake):
    with pytest.raises(ValueError, match="mode"):
        NicFilter("s1", [FilteredInterface("p1", 1, "h1-eth0", "hash32")])
    time.sleep(0.1)
    assert not fake.exists()
