"""Integration tests: a real lab (Docker containers, Mininet, Linux bridges, tc, Prometheus).

They need root, a running Docker engine and the images (`make integration` builds them first). Each test
tears down what it built and asserts that nothing of protolab's is left on the machine.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from protolab import cleanup, images, mnlog
from protolab.errors import EXIT_INVALID


@pytest.fixture(scope="session", autouse=True)
def real_lab_available():
    if os.geteuid() != 0:
        pytest.skip("integration tests need root (Mininet, tc, Docker): run `make integration` as root")
    if not shutil.which("docker") or not shutil.which("mn"):
        pytest.skip("integration tests need Docker and Mininet: run `make setup`")
    for ref in images.NAMES.values():
        if not images.image_id(ref):
            pytest.skip(f"image {ref} missing: run `make images`")
    mnlog.quiet()
    cleanup.clean(verbose=False)  # start from a clean machine
    yield
    cleanup.clean(verbose=False)


def root_links(prefix: str = "plab-") -> list[str]:
    """Root-namespace links whose name starts with prefix (a test's look, not how clean finds anything)."""
    return sorted(p.name for p in Path("/sys/class/net").iterdir() if p.name.startswith(prefix))


@pytest.fixture
def no_leftovers():
    """Asserts after the test that the machine holds nothing of protolab's."""
    yield
    left = cleanup.leftovers()
    if left:
        cleanup.clean(verbose=False)
    assert left == [], f"left behind: {left}"


# the guard's reason for a measurement the hypervisor withheld cores from (steal, read in /proc/stat)
STEAL_REASON = re.compile(r"the hypervisor withheld [0-9.]+ cores from this virtual machine .*\(CPU steal, > [0-9.]+\)")


def steal_only(summary: dict) -> str | None:
    """Why a run cannot be judged, when it came out INVALID only because the hypervisor withheld this machine's cores
    past the run's bounded re-measuring (every invalid reason one of the guard's steal reasons) and every check
    passed: then it says nothing of protolab, and the test skips saying so. None otherwise (judge the run)."""
    reasons = summary.get("invalid_reasons") or []
    if summary.get("valid") or not reasons or any(not c["passed"] for c in summary.get("checks", [])):
        return None
    # "<point> rep <n> (<values>): <reason>; <reason>": every one of every measurement's reasons is steal
    if all(STEAL_REASON.fullmatch(part) for r in reasons for part in r.split("): ", 1)[-1].split("; ")):
        return (
            "the machine's hypervisor disturbed the run past its re-measuring, so it cannot be judged: "
            + ("; ".join(reasons)[:600])
        )
    return None


def run_spec(name: str | Path, results: Path, timeout: float = 600, args: tuple[str, ...] = ()) -> tuple[Path, dict]:
    """`protolab run specs/<name>.yaml` (or the spec at a path) into `results` with `args`; asserts a VALID run whose
    checks all passed and returns its folder and summary (skips, saying why, one only steal made INVALID)."""
    import subprocess
    import sys

    import yaml

    from protolab.results.store import latest

    spec = name if isinstance(name, Path) else Path(__file__).parent / "specs" / f"{name}.yaml"
    out = subprocess.run([sys.executable, "-m", "protolab.cli", "run", str(spec), "--results", str(results), *args],
                         capture_output=True, text=True, timeout=timeout)  # fmt: skip
    experiment = yaml.safe_load(spec.read_text())["name"]
    run = latest(results, experiment)
    if out.returncode == EXIT_INVALID and run is not None and (why := steal_only(load_summary(run))):
        pytest.skip(why)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert run is not None
    summary = load_summary(run)
    failed = [
        f"{c['name']} at {c['point']} {c['values']}: {c['column']} = {c['measured']} outside {c['bound']}"
        for c in summary["checks"]
        if not c["passed"]
    ]
    assert summary["valid"], f"run invalid: {summary.get('invalid_reasons') or summary}"[:3000]
    assert not failed, "checks failed:\n" + "\n".join(failed) + "\n" + out.stdout[-2000:]
    return run, summary


def load_summary(run: Path) -> dict:
    import json

    return json.loads((run / "summary.json").read_text())
