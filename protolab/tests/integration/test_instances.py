"""Instances keep apart, `up` leaves a run's targets alone, and clean tells the truth about hung parts.

Each test drives the real `protolab` CLI (runs, `clean`, `up`) and checks the outcome against the machine itself
(`docker ps -a` and `docker network ls` unfiltered, `iptables-legacy -S`, Prometheus's own targets), not against
the ledgers' view:
- two instances (the default state folder and another) run side by side, each `clean` leaving the other's lab,
  monitoring stack and ledgers as they were;
- `protolab up` during a run leaves the run's scrape targets as they are, and the run stays VALID;
- a SIGSTOPped dockerd (hung, not dead) during `clean`: clean ends within a bound, says Docker does not answer and
  keeps the ledger entries; after SIGCONT `clean` leaves nothing;
- a held xtables lock while a remover runs: clean reports could-not-tell and keeps the entry, not success.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from protolab import naming, ownership

from .test_faults_of_the_machine import SPEC, Run, _clean_leaves_nothing, _dockerd, _summary, machine  # noqa: F401

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[3]
PROTOLAB = [sys.executable, "-m", "protolab.cli"]
# no bridge: root-namespace links are machine-wide (protolab.naming), containers and networks are the instance's
SPEC_TEXT = """\
name: instances
description: integration test of two protolab instances side by side
seed: {reproduces: "none (platform test: protolab instances)"}
topology:
  nodes: {h1: {}, h2: {}}
  links:
    - {endpoints: [h1, h2], rate: 10Mbit, impairments: {forward: {delay: 5ms}}}
self_check: false
phases:
  - name: probe
    tasks:
      - {kind: ping, name: p, client: h1, server: h2, interval: 10ms, duration: 1.5s, timeout: 1s}
checks:
  - {name: the delay is on, column: p_rtt_mean_seconds, min: 0.004, max: 0.05}
profiles: {quick: {}}
"""
CLEAN_BOUND_SECONDS = 60  # clean with a hung engine: its one 20 s client timeout, and the rest of the sweep


class Instance:
    """`protolab` with one state folder (None: the default one)."""

    def __init__(self, state: Path | None) -> None:
        self.env = {k: v for k, v in os.environ.items() if k not in ("PROTOLAB_STATE_DIR", naming.INSTANCE_ENV)}
        if state is not None:
            self.env["PROTOLAB_STATE_DIR"] = str(state)
        self.id = naming.instance_of(state or naming.STATE_DIR)
        self.state = state or Path(naming.STATE_DIR)

    def name(self, node: str) -> str:
        return f"plab-{self.id}-{node}" if self.id else f"plab-{node}"

    @property
    def network(self) -> str:
        return f"plab-mgmt-{self.id}" if self.id else "plab-mgmt"

    def __call__(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
        return subprocess.run([*PROTOLAB, *args], cwd=REPO, capture_output=True, text=True, env=self.env,
                              timeout=timeout)  # fmt: skip

    def run_kept(self, spec: Path, results: Path) -> Path:
        out = self("run", str(spec), "--results", str(results), "--keep")
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
        (run_dir,) = (results / "instances").iterdir()
        assert _summary(run_dir)["valid"]
        return run_dir

    def prometheus(self) -> tuple[str, str]:
        """This instance's Prometheus as the engine has it: (the folder its targets come from, the port it is
        published on); and it answers there."""
        out = subprocess.run(["docker", "inspect", self.name("prometheus")], capture_output=True, text=True,
                             check=True, timeout=60)  # fmt: skip
        (c,) = json.loads(out.stdout)
        (mount,) = [m["Source"] for m in c["Mounts"] if m["Destination"] == "/etc/prometheus/targets"]
        (binding,) = c["HostConfig"]["PortBindings"]["9090/tcp"]
        port = binding["HostPort"]
        assert requests.get(f"http://127.0.0.1:{port}/-/ready", timeout=5).status_code == 200
        return mount, port


def _docker_names() -> tuple[set[str], set[str]]:
    """Every container (running or not) and every network on the engine: the machine's view, unfiltered."""
    ctrs = subprocess.run(["docker", "ps", "-a", "--format", "{{.Names}} {{.State}}"], capture_output=True, text=True,
                          check=True, timeout=60).stdout.split("\n")  # fmt: skip
    nets = subprocess.run(["docker", "network", "ls", "--format", "{{.Name}}"], capture_output=True, text=True,
                          check=True, timeout=60).stdout.split()  # fmt: skip
    return {c for c in ctrs if c.strip()}, set(nets)


def _ledger_files(state: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted((state / "owned").glob("*.jsonl"))}


@pytest.fixture
def spec(tmp_path) -> Path:
    path = tmp_path / "instances.yaml"
    path.write_text(SPEC_TEXT)
    return path


def test_two_instances_side_by_side_and_each_clean_leaves_the_other(tmp_path, spec, machine):  # noqa: F811
    a, b = Instance(None), Instance(tmp_path / "state-b")
    assert a.id == "" and len(b.id) == 6
    try:
        a.run_kept(spec, tmp_path / "a")
        b.run_kept(spec, tmp_path / "b")  # deployed, measured and kept while a's lab and stack are up
        ctrs, nets = _docker_names()
        for inst in (a, b):
            for c in ("h1", "h2", "prometheus"):
                assert f"{inst.name(c)} running" in ctrs, (inst.id, ctrs)
            assert inst.network in nets
        a_prometheus = a.prometheus()
        assert a_prometheus == (f"{naming.STATE_DIR}/targets", "9090")
        b_prometheus = b.prometheus()  # its own targets and port
        assert b_prometheus[0] == f"{b.state}/targets" and 20000 <= int(b_prometheus[1]) < 30000, b_prometheus
        a_ledgers = _ledger_files(a.state)
        assert a_ledgers

        out = b("clean")  # b's clean: a's lab, stack, network and ledgers as they were
        assert out.returncode == 0, out.stdout + out.stderr
        ctrs, nets = _docker_names()
        assert not any(c.startswith(f"plab-{b.id}-") for c in ctrs) and b.network not in nets, (ctrs, nets)
        assert {f"{a.name(c)} running" for c in ("h1", "h2", "prometheus")} <= ctrs and a.network in nets
        assert _ledger_files(a.state) == a_ledgers and a.prometheus() == a_prometheus

        b.run_kept(spec, tmp_path / "b2")  # and the other way round
        out = a("clean")
        assert out.returncode == 0, out.stdout + out.stderr
        ctrs, nets = _docker_names()
        assert not any(re.fullmatch(r"plab-(h1|h2|prometheus) \w+", c) for c in ctrs) and a.network not in nets
        assert {f"{b.name(c)} running" for c in ("h1", "h2", "prometheus")} <= ctrs and b.network in nets
        assert b.prometheus() == b_prometheus
    finally:
        b("clean")
        a("clean")
    out = b("clean", "--check")
    assert out.returncode == 0, out.stdout + out.stderr
    ctrs, nets = _docker_names()
    assert not any(c.startswith(f"plab-{b.id}-") for c in ctrs) and b.network not in nets
    _clean_leaves_nothing()


def test_up_during_a_run_leaves_its_targets_alone(tmp_path, machine):  # noqa: F811
    r = Run(tmp_path)
    r.wait_for("[3/8")  # measuring, the lab's targets written
    targets = Path(naming.STATE_DIR) / "targets" / "lab.json"
    before = targets.read_text()
    assert json.loads(before), "the run's targets are empty"
    up = subprocess.run([*PROTOLAB, "up"], cwd=REPO, capture_output=True, text=True, timeout=180)
    assert up.returncode == 0, up.stdout + up.stderr
    assert f"held by PID {r.proc.pid}" in up.stdout and "scrape targets are left as they are" in up.stdout, up.stdout
    assert targets.read_text() == before
    assert r.finish() == 0, r.output[-3000:]
    assert _summary(r.run_dir)["valid"]
    _clean_leaves_nothing()


def test_clean_with_a_hung_dockerd_ends_says_so_and_keeps_the_entries(tmp_path, spec, machine):  # noqa: F811
    Instance(None).run_kept(spec, tmp_path)
    pid, _argv = _dockerd()
    os.kill(pid, signal.SIGSTOP)
    try:
        t0 = time.monotonic()
        out = subprocess.run([*PROTOLAB, "clean"], cwd=REPO, capture_output=True, text=True, timeout=300)
        took = time.monotonic() - t0
        kept = [e for ledger in ownership.ledgers() for e in ledger.entries() if e["kind"] == "container"]
    finally:
        os.kill(pid, signal.SIGCONT)
    print(f"clean with dockerd stopped: {took:.1f} s, exit {out.returncode}")
    assert took < CLEAN_BOUND_SECONDS, (took, out.stdout, out.stderr)
    assert out.returncode != 0 and "Docker engine does not answer" in out.stderr, out.stdout + out.stderr
    assert "ledger entries kept" in out.stderr and "run `protolab clean` again" in out.stderr, out.stderr
    assert {e["name"] for e in kept} >= {"plab-h1", "plab-h2"}, kept  # not taken for gone
    ctrs, _nets = _docker_names()
    assert {"plab-h1 running", "plab-h2 running"} <= ctrs  # and indeed still there
    _clean_leaves_nothing()  # the engine answers again: now they go
    ctrs, nets = _docker_names()
    assert not any(c.startswith("plab-") for c in ctrs) and "plab-mgmt" not in nets


def _legacy(*args: str, check: bool = False) -> subprocess.CompletedProcess:
    return subprocess.run(["iptables-legacy", "-w", "1", *args], capture_output=True, text=True, check=check)


def test_a_held_xtables_lock_is_could_not_tell_not_success(tmp_path, monkeypatch):
    """A rule of a run on a machine whose iptables honours the xtables lock (iptables-legacy; this machine's own
    iptables is nft-based and takes no such lock), recorded in a dead run's ledger as a run records it."""
    inst = Instance(tmp_path / "state")
    rule = ["OUTPUT", "-o", "plab-h5x", "-m", "comment", "--comment", "protolab", "-j", "ACCEPT"]
    _legacy("-t", "filter", "-A", *rule, check=True)
    try:
        with monkeypatch.context() as m:
            m.setenv("PROTOLAB_STATE_DIR", str(inst.state))
            ledger = ownership.Ledger("20261128T000000Z-lgcy")
            ledger.add("run", pid=2**22 + 7, start=None, keep=False, dir=None)  # past pid_max: its process is gone
            ledger.add("rule", tool="iptables-legacy", table="filter", rule=rule)
        holder = subprocess.Popen(["flock", "/run/xtables.lock", "sleep", "60"], start_new_session=True)
        try:
            time.sleep(0.5)
            assert _legacy("-C", *rule).returncode == 4  # the lock is held: iptables-legacy cannot answer
            out = inst("clean", timeout=120)
        finally:
            os.killpg(holder.pid, signal.SIGKILL)  # flock and its sleep, which holds the lock too
            holder.wait()
        assert out.returncode != 0, out.stdout + out.stderr
        assert "could not tell whether it is gone" in out.stderr and "xtables lock" in out.stderr, out.stderr
        assert "ledger entries kept" in out.stderr
        assert _legacy("-C", *rule).returncode == 0  # the rule is there: clean did not claim it
        assert "rule iptables-legacy" in inst("clean", "--check").stdout
        out = inst("clean", timeout=120)  # the lock released
        assert out.returncode == 0, out.stdout + out.stderr
        assert "removed rule iptables-legacy -t filter OUTPUT" in out.stdout
        assert _legacy("-C", *rule).returncode == 1 and "plab-h5x" not in _legacy("-S", check=True).stdout
        assert not list((inst.state / "owned").glob("*.jsonl"))
    finally:
        _legacy("-t", "filter", "-D", *rule)
