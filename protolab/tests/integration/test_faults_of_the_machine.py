"""A run survives faults of its own machine, and cleanup touches only what protolab made.

Each fault is injected for real into `protolab run` of a small spec (specs/machine-faults.yaml): two runs at
once, `clean` during a run, SIGINT twice, SIGTERM, SIGHUP, SIGKILL during deploy, dockerd stopped mid-run and
started again, a task that hangs, a tc command that fails halfway through a deploy. For each: the measured
rows are on disk, summary.json says why the run is invalid, `protolab clean` leaves nothing, and the host's
firewall and sysctls are what they were before.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from protolab import cleanup, kernelstate
from protolab.errors import EXIT_BUSY, EXIT_INTERRUPTED, EXIT_INVALID

from .conftest import root_links

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[3]
SPEC = Path(__file__).parent / "specs" / "machine-faults.yaml"
PROTOLAB = [sys.executable, "-m", "protolab.cli"]


class Run:
    """`protolab run` of the faults spec in the background, its output collected line by line."""

    def __init__(self, results: Path, *args: str, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen([*PROTOLAB, "run", str(SPEC), "--results", str(results), *args], cwd=REPO,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     env={**os.environ, **(env or {})}, start_new_session=True)  # fmt: skip
        self.lines: list[str] = []
        threading.Thread(target=lambda: self.lines.extend(iter(self.proc.stdout.readline, "")), daemon=True).start()

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def wait_for(self, text: str, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.output:
                return
            if self.proc.poll() is not None:
                time.sleep(0.3)  # the reader thread's last lines
                if text in self.output:
                    return
                break
            time.sleep(0.05)
        self.proc.kill()
        raise AssertionError(f"never saw {text!r} in:\n{self.output[-3000:]}")

    def finish(self, timeout: float = 180) -> int:
        code = self.proc.wait(timeout=timeout)
        time.sleep(0.3)
        return code

    @property
    def run_dir(self) -> Path:
        m = re.search(r"results -> (\S+)", self.output)
        assert m, self.output[-2000:]
        return Path(m.group(1))


def _firewall() -> list[str]:
    """Every iptables/ip6tables rule of every table, sorted, as `tool table -A ...` (counters, comments and chain
    headers of the dump left out). A table without rules is no state: iptables makes one on its first use (here the
    fallback backend's raw-table loss rule at a bridge port, removed again), so on a fresh machine the first run
    left an empty `*raw` in the dump that changes nothing a packet meets, and this test failed only there."""
    rules = []
    for tool in ("iptables-save", "ip6tables-save"):
        out = subprocess.run([tool], capture_output=True, text=True, check=True).stdout
        table = ""
        for r in out.splitlines():
            if r.startswith("*"):
                table = r[1:]
            elif r.startswith("-"):
                rules.append(f"{tool} {table} {r}")
    # and every nftables table of family bridge (a lab's untrack table, firewall.untrack_bridged)
    rules += [f"nft {t}" for t in subprocess.run(["nft", "list", "tables", "bridge"], capture_output=True, text=True,
                                                 check=True).stdout.splitlines()]  # fmt: skip
    return sorted(rules)


@pytest.fixture
def machine():
    """The host's firewall and sysctls before, and after the test (and a `protolab clean`) the same."""
    before = {"firewall": _firewall(), "host": kernelstate.snapshot()}
    yield before
    after = {"firewall": _firewall(), "host": kernelstate.snapshot()}
    assert kernelstate.differences(before["host"], after["host"]) == []
    assert after["firewall"] == before["firewall"], {
        "added": sorted(set(after["firewall"]) - set(before["firewall"])),
        "removed": sorted(set(before["firewall"]) - set(after["firewall"])),
    }


def _clean_leaves_nothing() -> None:
    out = subprocess.run([*PROTOLAB, "clean"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert cleanup.leftovers() == []
    assert root_links() == [], root_links()


def _summary(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text())


def _rows(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "rows.jsonl").read_text().splitlines()]


def _tidy_rows(run_dir: Path) -> int:
    return len((run_dir / "tidy.csv").read_text().splitlines()) - 1


def test_a_second_run_and_clean_are_refused_while_a_run_holds_the_lab(tmp_path, machine):
    a = Run(tmp_path)
    a.wait_for("deploying lab")
    t0 = time.monotonic()
    b = subprocess.run([*PROTOLAB, "run", str(SPEC), "--results", str(tmp_path / "b")], cwd=REPO,
                       capture_output=True, text=True, timeout=60)  # fmt: skip
    assert time.monotonic() - t0 < 30
    assert b.returncode == EXIT_BUSY, b.stdout + b.stderr
    assert f"PID {a.proc.pid}" in b.stderr and a.run_dir.name in b.stderr, b.stderr
    c = subprocess.run([*PROTOLAB, "clean"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert c.returncode == EXIT_BUSY and f"PID {a.proc.pid}" in c.stderr and "--force" in c.stderr, c.stderr
    assert a.finish() == 0, a.output[-3000:]
    assert _summary(a.run_dir)["valid"] and len(_rows(a.run_dir)) == 8
    assert cleanup.leftovers() == []  # the run's own teardown removed everything
    _clean_leaves_nothing()


@pytest.mark.parametrize("signals", [["SIGINT", "SIGINT"], ["SIGTERM"], ["SIGHUP"]], ids=lambda s: "+".join(s))
def test_a_signal_stops_the_run_keeps_its_rows_and_leaves_nothing(tmp_path, machine, signals):
    r = Run(tmp_path)
    r.wait_for("[3/8")  # two rows measured
    r.proc.send_signal(getattr(signal, signals[0]))
    if len(signals) > 1:
        r.wait_for("tearing down")
        time.sleep(0.3)
        r.proc.send_signal(getattr(signal, signals[1]))  # a second Ctrl-C during teardown
    assert r.finish() == EXIT_INTERRUPTED, r.output[-3000:]
    summary = _summary(r.run_dir)
    assert not summary["valid"] and any(f"interrupted ({signals[0]})" in x for x in summary["invalid_reasons"])
    rows = _rows(r.run_dir)
    assert len(rows) >= 2 and _tidy_rows(r.run_dir) == len(rows)
    assert all(row["p_rtt_mean_seconds"] > 0.002 for row in rows), rows  # the 2 ms delay was on
    assert len(list((r.run_dir / "raw" / "tasks").glob("*.json"))) >= len(rows)
    if signals[0] == "SIGHUP":
        assert (r.run_dir / "console.log").exists()
    assert cleanup.leftovers() == []
    _clean_leaves_nothing()


def test_an_interrupted_run_resumes_from_its_rows(tmp_path, machine):
    r = Run(tmp_path)
    r.wait_for("[4/8")  # three rows measured
    r.proc.send_signal(signal.SIGINT)
    assert r.finish() == EXIT_INTERRUPTED, r.output[-3000:]
    before = _rows(r.run_dir)
    assert 3 <= len(before) < 8
    again = Run(tmp_path, "--resume", str(r.run_dir))
    again.finish(timeout=300)
    assert again.run_dir == r.run_dir and f"resumed with {len(before)} measured row(s)" in again.output
    rows = _rows(r.run_dir)
    assert sorted(row["point"] for row in rows) == [f"p{i:03d}" for i in range(8)]  # each point once
    assert rows[: len(before)] == before  # the rows measured before were kept, not measured again
    summary = _summary(r.run_dir)
    assert not any("interrupted" in x for x in summary["invalid_reasons"]), summary["invalid_reasons"]
    assert _tidy_rows(r.run_dir) == 8 and len(json.loads((r.run_dir / "manifest.json").read_text())["resumed"]) == 1
    assert cleanup.leftovers() == []


def test_sigkill_during_deploy_then_clean(tmp_path, machine):
    r = Run(tmp_path)
    r.wait_for("deploying lab")
    time.sleep(1.5)  # containers starting, the network being built
    os.killpg(r.proc.pid, signal.SIGKILL)
    r.finish()
    _clean_leaves_nothing()
    summary = _summary(r.run_dir)  # written by clean from the rows on disk
    assert not summary["valid"] and "ended without finishing" in summary["invalid_reasons"][0]
    assert (r.run_dir / "tidy.csv").exists()


def _dockerd() -> tuple[int, list[str]]:
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                argv = (d / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if argv and Path(argv[0].decode()).name == "dockerd":
                return int(d.name), [a.decode() for a in argv if a]
    pytest.fail("no dockerd running")


def _start_dockerd(argv: list[str]) -> None:
    log = open("/var/log/protolab-dockerd.log", "a")  # noqa: SIM115 (the daemon keeps it)
    subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if subprocess.run(["docker", "info"], capture_output=True).returncode == 0:
            return
        time.sleep(0.5)
    pytest.fail("dockerd did not come back within 60 s")


def test_dockerd_stopped_mid_run_and_started_again(tmp_path, machine):
    r = Run(tmp_path)
    r.wait_for("[3/8")
    pid, argv = _dockerd()
    os.kill(pid, signal.SIGTERM)
    try:
        code = r.finish(timeout=240)
        left = subprocess.run([*PROTOLAB, "clean", "--check"], cwd=REPO, capture_output=True, text=True)
        assert left.returncode != 0 and "Docker engine does not answer" in left.stderr, left.stdout + left.stderr
    finally:
        deadline = time.monotonic() + 30
        while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        _start_dockerd(argv)
    assert code == EXIT_INVALID, r.output[-3000:]
    summary = _summary(r.run_dir)
    assert not summary["valid"] and any("aborted" in x or "teardown" in x for x in summary["invalid_reasons"])
    rows = _rows(r.run_dir)
    assert len(rows) >= 2 and _tidy_rows(r.run_dir) == len(rows)
    _clean_leaves_nothing()


def test_a_hung_task_is_stopped_by_the_watchdog(tmp_path, machine):
    r = Run(tmp_path, "--profile", "hang", "--task-timeout-margin", "3")
    t0 = time.monotonic()
    assert r.finish(timeout=120) == EXIT_INVALID, r.output[-3000:]
    assert time.monotonic() - t0 < 90
    reasons = _summary(r.run_dir)["invalid_reasons"]
    assert any("task stuck (command on h1) still running 3s after the phase's 1s" in x for x in reasons), reasons
    assert cleanup.leftovers() == []
    _clean_leaves_nothing()


def test_a_tc_command_failing_halfway_through_deploy(tmp_path, machine):
    """The HTB qdisc of direction s1->h2 fails as a real tc would (the rest of tc is the real one), while the other
    directions are deployed in parallel, h1->s1's link emulator among them: what the lab made before the deploy
    failed goes with the lab's own teardown (the emulator stopped, its control socket removed), not only with the
    ledger's sweep (which once killed the emulator and left its socket)."""
    shim = tmp_path / "bin"
    shim.mkdir()
    real = {t: subprocess.run(["sh", "-c", f"command -v {t}"], capture_output=True, text=True).stdout.strip()
            for t in ("tc", "iptables")}  # fmt: skip
    (shim / "tc").write_text(
        "#!/bin/sh\n"
        'case " $* " in *" htb "*) case " $* " in *" plab-s1-eth2 "*)\n'
        '  touch "$0.failed"; echo "RTNETLINK answers: No buffer space available" >&2; exit 2;; esac;; esac\n'
        f'exec {real["tc"]} "$@"\n'
    )
    (shim / "iptables").write_text(f'#!/bin/sh\necho "$*" >> "$0.log"\nexec {real["iptables"]} "$@"\n')
    for tool in ("tc", "iptables"):
        (shim / tool).chmod(0o755)
    r = Run(tmp_path, env={"PATH": f"{shim}:{os.environ['PATH']}"})
    assert r.finish() == EXIT_INVALID, r.output[-3000:]
    reasons = _summary(r.run_dir)["invalid_reasons"]
    assert any("No buffer space available" in x for x in reasons), reasons
    assert (shim / "tc.failed").exists()
    rules = (shim / "iptables.log").read_text()
    assert "NFQUEUE" in rules, rules  # h1->s1's link emulator was started before the deploy failed
    assert cleanup.leftovers() == []
    assert root_links() == []
    _clean_leaves_nothing()


def test_clean_leaves_look_alikes_it_did_not_make(tmp_path, machine):
    """A foreign compose project, link, iptables rule, nft table and process with protolab-like names."""
    subprocess.run(["ip", "link", "add", "plab-foreign", "type", "bridge"], check=True)
    rule = ["INPUT", "-i", "plab-foreign", "-m", "comment", "--comment", "protolab-foreign", "-j", "ACCEPT"]
    subprocess.run(["iptables", "-w", "-A", *rule], check=True)
    subprocess.run(["nft", "add", "table", "inet", "protolab_foreign"], check=True)
    ctr = subprocess.run(["docker", "run", "-d", "--name", "plab-foreign", "--label",
                          "com.docker.compose.project=protolab", "--entrypoint", "sleep",
                          "protolab/node:latest", "600"],
                         capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    proc = subprocess.Popen(["sleep", "600"], env={**os.environ, "PROTOLAB_NODE": "h1", "PROTOLAB_RUN": "foreign"})
    try:
        out = subprocess.run([*PROTOLAB, "clean"], cwd=REPO, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stdout + out.stderr
        assert "plab-foreign" in root_links()
        assert subprocess.run(["iptables", "-w", "-C", *rule], capture_output=True).returncode == 0
        assert "protolab_foreign" in subprocess.run(["nft", "list", "tables"], capture_output=True, text=True).stdout
        state = subprocess.run(["docker", "inspect", "-f", "{{.State.Running}}", ctr], capture_output=True, text=True)
        assert state.stdout.strip() == "true"
        assert proc.poll() is None
    finally:
        proc.kill()
        subprocess.run(["docker", "rm", "-f", ctr], capture_output=True)
        subprocess.run(["nft", "delete", "table", "inet", "protolab_foreign"], check=False)
        subprocess.run(["iptables", "-w", "-D", *rule], check=False)
        subprocess.run(["ip", "link", "del", "plab-foreign"], check=False)


def test_clean_says_when_docker_does_not_answer(tmp_path):
    env = {**os.environ, "DOCKER_HOST": f"unix://{tmp_path}/no-docker.sock"}
    for args in (["clean"], ["clean", "--check"]):
        out = subprocess.run([*PROTOLAB, *args], cwd=REPO, capture_output=True, text=True, env=env, timeout=60)
        assert out.returncode != 0 and "Docker engine does not answer" in out.stderr, (args, out.stdout, out.stderr)
