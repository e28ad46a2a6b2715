"""Every benchmark, one after the other, then one summary table (bench.summary).

    python -m bench            # `make bench`: the figures, into results/bench/
    python -m bench --smoke    # `make bench-smoke` (part of `make test`): tiny sizes, into a temporary folder

A benchmark that fails does not stop the others; the exit status says whether all of them ran.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import subprocess
import sys
import tempfile
import time

# module, its arguments for the figures, its arguments for the smoke run (seconds each, tiny sizes)
BENCHES: list[tuple[str, list[str], list[str]]] = [
    ("deploy", [], ["--hosts", "2", "--repeat", "1"]),
    ("deploy_floor", [], ["--hosts", "2", "3", "--repeat", "1"]),
    ("multihost", [], ["--rounds", "2"]),  # fits over deploy_floor's newest result: after it
    ("impair", [], ["--smoke"]),
    ("spims", [], ["--quick"]),
    ("gobench", [], ["--smoke"]),
    ("large", [], ["--hosts", "3"]),
]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--smoke", action="store_true", help="tiny sizes, results thrown away: a check that each runs")
    a = ap.parse_args(argv)
    env = dict(os.environ)
    tmp = tempfile.TemporaryDirectory(prefix="protolab-bench-smoke-") if a.smoke else None
    if tmp:
        env["PROTOLAB_BENCH_OUT"] = tmp.name
    start = dt.datetime.now(dt.UTC)
    failed: list[str] = []
    took: list[tuple[str, float]] = []
    try:
        for i, (name, full, smoke) in enumerate(BENCHES, 1):
            args = smoke if a.smoke else full
            print(f"\n[bench {i}/{len(BENCHES)}] {name} {' '.join(args)}".rstrip(), flush=True)
            t0 = time.monotonic()
            rc = subprocess.run([sys.executable, "-m", f"bench.{name}", *args], env=env, check=False).returncode
            took.append((name, time.monotonic() - t0))
            if rc != 0:
                failed.append(f"{name} (exit {rc})")
                print(f"[bench] {name} failed with exit {rc}; going on with the others", flush=True)
        summary = [sys.executable, "-m", "bench.summary", "--since", start.isoformat()]
        if subprocess.run(summary, env=env, check=False).returncode != 0:
            failed.append("summary")
    finally:
        if tmp:
            tmp.cleanup()
    print("\ntime per benchmark: " + ", ".join(f"{n} {s:.0f} s" for n, s in took))
    if a.smoke:
        print("smoke run: the figures above only show that each benchmark runs; they are not measurements")
    if failed:
        print(f"FAILED: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
