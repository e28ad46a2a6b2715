"""SIGKILL at seeded random points of a run, of `clean` and of `--resume`; then `protolab clean` leaves the machine
as an independent inventory (inventory.py: the kernel, the firewall, the engine and /run, never the ledgers) found
it before, and no measured row is lost.

The kill comes from inside, at the n-th visit of a site (protolab.killpoint, PROTOLAB_KILL_AT=<site>:<n>):
`ledger` (after every ledger append: between recording an object and making it, and after making it), `row`
(after each measured row is on disk), `teardown` (before each step of the teardown and finish), `clean` (before
each step of `protolab clean`), `resume` (the steps of `--resume`). A traced run of the spec (PROTOLAB_KILL_TRACE)
counts the visits first; each point then draws its visit from a random.Random seeded with PROTOLAB_KILL_SEED
(default 1128), so a failing point is replayed by its seed and index.

Points are of three shapes, taken in turn: a run killed (at `row`, `ledger` or `teardown`); a run killed at a
`ledger` point, then `clean` killed (at `clean` or at its own `ledger` appends) and cleaned again; a run killed at
a `ledger` point, then `--resume` killed (at `resume` or `ledger`) and cleaned. The default is 4 points (~2.5 min
here, with the traced run); PROTOLAB_KILL_POINTS=30 is the long profile (~13 min).
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from protolab import killpoint
from protolab.errors import EXIT_INVALID

from . import inventory
from .test_faults_of_the_machine import PROTOLAB, REPO, Run

pytestmark = pytest.mark.integration
POINTS = int(os.environ.get("PROTOLAB_KILL_POINTS", "4"))
SEED = int(os.environ.get("PROTOLAB_KILL_SEED", "1128"))
SHAPES = ("run", "clean", "resume", "run")  # a default of 4 covers each shape and both sites of a run
STEP_RE = re.compile(r"^\[(\d+)/\d+ ", re.M)


def _clean(env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*PROTOLAB, "clean"], cwd=REPO, capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})  # fmt: skip


def _rows(run_dir: Path) -> list[dict]:
    path = run_dir / "rows.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _killed(r: Run) -> None:
    code = r.finish(timeout=300)
    assert code == -signal.SIGKILL, f"expected death by SIGKILL, got {code}:\n{r.output[-2000:]}"


@pytest.fixture(scope="module")
def visits(tmp_path_factory) -> dict[str, int]:
    """How often a whole run of the spec visits each site (a traced run that must finish: VALID, or INVALID only
    because the machine was busy)."""
    assert _clean().returncode == 0
    trace = tmp_path_factory.mktemp("trace") / "visits"
    r = Run(tmp_path_factory.mktemp("traced"), env={killpoint.TRACE_ENV: str(trace)})
    assert r.finish(timeout=300) in (0, EXIT_INVALID) and "VALID run" in r.output, r.output[-3000:]
    sites = trace.read_text().split()
    counts = {s: sites.count(s) for s in killpoint.SITES}
    print(f"a whole run visits {counts}")
    return counts


@pytest.fixture
def before(visits) -> dict[str, set[str]]:
    """The machine before the point (each point its own: a leftover is one point's, not every later one's)."""
    assert _clean().returncode == 0
    return inventory.take()


def _run_dir(r: Run, results: Path) -> Path | None:
    """The run's results folder: as it printed it, else as it made it (killed before printing), else None."""
    m = re.search(r"results -> (\S+)", r.output)
    if m:
        return Path(m.group(1))
    made = sorted(results.glob("machine-faults/*"))
    return made[-1] if made else None


def _points() -> list[tuple[int, str]]:
    return [(i, SHAPES[i % len(SHAPES)]) for i in range(POINTS)]


@pytest.mark.parametrize(("index", "shape"), _points(), ids=[f"{i}-{s}" for i, s in _points()])
def test_a_kill_point_leaves_nothing_and_loses_no_row(index, shape, visits, before, tmp_path):
    rng = random.Random(SEED * 1000 + index)
    t0 = time.monotonic()
    if shape == "run":
        site = "teardown" if index % 4 == 3 else ("row", "ledger")[index // 4 % 2]
        kill = f"{site}:{rng.randint(1, visits[site])}"
    else:
        kill = f"ledger:{rng.randint(1, visits['ledger'])}"
    r = Run(tmp_path, env={killpoint.KILL_ENV: kill})
    _killed(r)
    printed = len(STEP_RE.findall(r.output))  # a step's line is printed before it is measured
    run_dir = _run_dir(r, tmp_path)
    rows = _rows(run_dir) if run_dir else []
    assert len(rows) >= printed - 1, (kill, printed, len(rows))
    if kill.startswith("teardown"):
        assert len(rows) == 8, (kill, len(rows))
    if kill.startswith("row"):  # killed right after its n-th row was appended: all n on disk, the next not begun
        n = int(kill.split(":")[1])
        assert (printed, len(rows)) == (n, n), (kill, printed, len(rows))
    what = [kill]

    if shape == "clean":
        second = f"{rng.choice(['clean', 'ledger'])}:{rng.randint(1, 6)}"
        c = _clean({killpoint.KILL_ENV: second})
        what.append(f"clean {second} -> {c.returncode}")
        assert c.returncode in (-signal.SIGKILL, 0), c.stdout + c.stderr  # 0: clean ended before that visit
    elif shape == "resume" and run_dir is not None:
        if rng.random() < 0.5:
            assert _clean().returncode == 0  # the run's summary salvaged first: --resume re-reads its guard
            what.append("cleaned")
        guarded = _guarded(run_dir)
        second = f"{rng.choice(['resume', 'ledger'])}:{rng.randint(1, 5)}"
        again = Run(tmp_path, "--resume", str(run_dir), env={killpoint.KILL_ENV: second})
        code = again.finish(timeout=300)
        what.append(f"resume {second} -> {code}")
        kept = {(x["point"], x["repetition"]) for x in _rows(run_dir)}
        lost = {(x["point"], x["repetition"]) for x in rows} - kept - guarded
        assert not lost, (what, sorted(lost))

    c = _clean()
    assert c.returncode == 0, (what, c.stdout + c.stderr)
    left = inventory.differences(before, inventory.take())
    assert left == [], (what, left)
    if run_dir is None:  # killed before it made its results folder: nothing measured, nothing to salvage
        assert printed == 0, (what, r.output[-2000:])
        print(f"kill point {index} {what}: no results folder yet, nothing left, {time.monotonic() - t0:.1f}s")
        return
    on_disk = _rows(run_dir)
    assert len(on_disk) >= len(rows) - len(_guarded(run_dir)), (what, len(rows), len(on_disk))
    tidy = run_dir / "tidy.csv"
    assert tidy.exists() and len(tidy.read_text().splitlines()) - 1 == len(on_disk), what
    print(f"kill point {index} {what}: {len(on_disk)} row(s) kept, nothing left, {time.monotonic() - t0:.1f}s")


def _guarded(run_dir: Path) -> set[tuple[str, int]]:
    """Measurements the run's guard invalidated (a --resume measures them again, so it drops their rows)."""
    path = run_dir / "summary.json"
    if not path.exists():
        return set()
    guard = json.loads(path.read_text()).get("guard") or {}
    return {(k.split("/")[0], int(k.split("/")[1])) for k, g in guard.items() if g.get("reasons")}
