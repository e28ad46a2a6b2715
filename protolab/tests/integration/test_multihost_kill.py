"""A run over two testbed hosts reached over SSH (emulated here, `--over-ssh`), SIGKILLed mid-measurement, then
`protolab clean`: each host's Prometheus is removed over a live SSH session before the sessions end (not taken
for gone because its forwarded engine socket was), and an independent look at the machine (netns, links, every
container of every engine, processes, mounts, /run) finds nothing of the run, on this machine or on the hosts."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from protolab.lab import parts
from protolab.testbed import emulation, federation

pytestmark = pytest.mark.integration

HOSTS = ("kill_a", "kill_b")
SPEC = Path(__file__).resolve().parents[3] / "experiments" / "multihost.yaml"


def _sh(*argv: str) -> str:
    return subprocess.run(argv, capture_output=True, text=True, timeout=60).stdout


def _engine_containers(host: str) -> list[str]:
    """Every container (any state, any label) of an emulated host's engine; [] when the engine is gone."""
    sock = emulation.STATE / host / "docker.sock"
    if not sock.exists():
        return []
    return _sh("docker", "-H", f"unix://{sock}", "ps", "-a", "--format", "{{.Names}} {{.State}}").split("\n")[:-1]


def inventory() -> list[str]:
    """What of the run is on the machine, read from the kernel, the engines and /proc, not from any ledger."""
    found = [f"netns {n}" for n in _sh("ip", "netns", "list").split() if n.startswith("plab")]
    found += [f"link {ln.split(':')[1].strip()}" for ln in _sh("ip", "-d", "-o", "link").splitlines()
              if ln.split(":")[1].strip().startswith("plab")]  # fmt: skip
    found += [f"container {c}" for c in _sh("docker", "ps", "-a", "--format", "{{.Names}}").split()
              if c.startswith("plab")]  # fmt: skip
    found += [f"container {c} on {h}" for h in HOSTS for c in _engine_containers(h)]
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            args = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if any(
            k in args for k in ("protolab.lab.keeper", "/run/protolab-hosts/ssh", "/run/protolab-emu", "protolab-emu")
        ):
            found.append(f"process {pid}: {args[:160]}")
    mounts = Path("/proc/mounts").read_text().splitlines()
    found += [f"mount {m.split()[1]}" for m in mounts if "protolab-emu" in m or "plab-emu" in m]
    roots = (parts.STATE_ROOT, parts.REMOTE_STATE_ROOT, federation.REMOTE_ROOT, emulation.STATE)
    found += [f"folder {d}" for d in roots if d.exists()]
    return found


def test_a_run_over_hosts_reached_over_ssh_killed_mid_run_is_cleaned_on_the_hosts_too(tmp_path: Path, no_leftovers):
    log = tmp_path / "run.log"
    cmd = [sys.executable, "-m", "protolab.cli", "run", str(SPEC), "--results", str(tmp_path), "--emulate-hosts",
           ",".join(HOSTS), "--host-cpus", "4", "--over-ssh"]  # fmt: skip
    with log.open("w") as out:
        runner = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 600
        while "self-check took" not in log.read_text() and runner.poll() is None and time.monotonic() < deadline:
            time.sleep(1)
        assert runner.poll() is None and "self-check took" in log.read_text(), log.read_text()[-3000:]
        time.sleep(3)  # inside the first measurement (8 s of flows)
        up = {h: _engine_containers(h) for h in HOSTS}
        runner.send_signal(signal.SIGKILL)
        runner.wait(timeout=30)
    finally:
        if runner.poll() is None:
            runner.kill()
    for h in HOSTS:  # the premise: the kill left each host's Prometheus running there, its session open
        assert f"plab-prometheus-{h} running" in up[h], up
        assert f"plab-prometheus-{h} running" in _engine_containers(h), _engine_containers(h)
    assert any(p.startswith("process") for p in inventory()), "the kill left the run's processes"

    clean = subprocess.run([sys.executable, "-m", "protolab.cli", "clean"], capture_output=True, text=True,
                           timeout=600)  # fmt: skip
    print(clean.stdout[-4000:])
    assert clean.returncode == 0, clean.stdout[-3000:] + clean.stderr[-3000:]
    for h in HOSTS:  # removed over its session, before the sessions and the engines went
        assert f"removed testbed host {h}: container plab-prometheus-{h}" in clean.stdout, clean.stdout[-3000:]
    assert inventory() == []
