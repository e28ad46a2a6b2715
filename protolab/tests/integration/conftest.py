"""Integration tests: a real lab (Docker containers, Mininet, Linux bridges, tc, Prometheus).

They need root, a running Docker engine and the images (`make integration` builds them first). Each test
tears down what it built and asserts that nothing of protolab's is left on the machine.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from protolab import cleanup, images, mnlog


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


def run_spec(name: str | Path, results: Path, timeout: float = 600, args: tuple[str, ...] = ()) -> tuple[Path, dict]:
    """`protolab run specs/<name>.yaml` (or the spec at a path) into `results` with `args`; asserts a VALID run whose
    checks all passed and returns its folder and summary."""
    import json
    import subprocess
    import sys

    import yaml

    from protolab.results.store import latest

    spec = name if isinstance(name, Path) else Path(__file__).parent / "specs" / f"{name}.yaml"
    out = subprocess.run([sys.executable, "-m", "protolab.cli", "run", str(spec), "--results", str(results), *args],
                         capture_output=True, text=True, timeout=timeout)  # fmt: skip
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    experiment = yaml.safe_load(spec.read_text())["name"]
    run = latest(results, experiment)
    summary = json.loads((run / "summary.json").read_text())
    failed = [
        f"{c['name']} at {c['point']} {c['values']}: {c['column']} = {c['measured']} outside {c['bound']}"
        for c in summary["checks"]
        if not c["passed"]
    ]
    assert summary["valid"], f"run invalid: {summary.get('invalid_reasons') or summary}"[:3000]
    assert not failed, "checks failed:\n" + "\n".join(failed) + "\n" + out.stdout[-2000:]
    return run, summary
