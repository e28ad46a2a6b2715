"""The Go benchmarks of the agents module (figures, not gates), run with `go test -bench` and written as JSON with
the machine: the DIS host's PDUs/s, the transfer syntaxes per PDU type, the converter's C_2 messages/s and the
added delay of the converter and the bundle layer.

    python -m bench.gobench [--smoke]

--smoke runs each benchmark once (-benchtime 1x): a check that every one still builds and runs.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from bench import write_result

AGENTS = Path(__file__).resolve().parent.parent / "agents"
GO = shutil.which("go") or "/usr/local/go/bin/go"
# (packages, -run pattern, -benchtime, -cpu): as `make bench` has always run them
SUITES: list[tuple[tuple[str, ...], str, str, str]] = [
    (("./dishost",), "^$", "2s", "2"),
    (("./syntax/asn1c",), "^$", "200ms", "1"),
    (("./converter", "./bundle"), "AddedDelay", "2s", "1"),
]
LINE = re.compile(r"^(Benchmark\S+?)(?:-(\d+))?\s+(\d+)\s+(.*)$")
METRIC = re.compile(r"([-+\d.eE]+) (\S+)")


def parse(out: str) -> list[dict[str, Any]]:
    """Every benchmark line of `go test -bench` output: name, package, -cpu, iterations and its metrics by unit.
    A line's package is the `pkg:` header above it."""
    rows: list[dict[str, Any]] = []
    pkg = ""
    for line in out.splitlines():
        if line.startswith("pkg: "):
            pkg = line[5:].strip()
            continue
        m = LINE.match(line.strip())
        if not m:
            continue
        name, cpu, n, rest = m.groups()
        metrics = {unit: float(v) for v, unit in METRIC.findall(rest)}
        rows.append({"package": pkg, "name": name, "cpu": int(cpu) if cpu else 1, "iterations": int(n),
                     "metrics": metrics})  # fmt: skip
    return rows


def run_suite(pkgs: tuple[str, ...], pattern: str, benchtime: str, cpu: str) -> tuple[list[dict[str, Any]], str]:
    cmd = [GO, "test", "-run", pattern, "-bench", ".", "-benchtime", benchtime, "-cpu", cpu, *pkgs]
    proc = subprocess.run(cmd, cwd=AGENTS, capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr).strip()[-1500:]
        raise RuntimeError(f"{' '.join(cmd)} (in agents/) failed with exit {proc.returncode}:\n{tail}")
    return parse(proc.stdout), proc.stdout


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--smoke", action="store_true", help="each benchmark once (-benchtime 1x)")
    a = ap.parse_args()
    result: dict[str, Any] = {"benchmark": "go", "smoke": a.smoke, "suites": []}
    for pkgs, pattern, benchtime, cpu in SUITES:
        bt = "1x" if a.smoke else benchtime
        print(f"go test -bench {' '.join(pkgs)} (-benchtime {bt}, -cpu {cpu}):", flush=True)
        rows, out = run_suite(pkgs, pattern, bt, cpu)
        print(out.rstrip())
        if not rows:
            raise SystemExit(f"no benchmark line in the output of {' '.join(pkgs)}")
        result["suites"].append({"packages": list(pkgs), "run": pattern, "benchtime": bt, "cpu": int(cpu),
                                 "benchmarks": rows})  # fmt: skip
    path = write_result("go", result)
    print(f"-> {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
