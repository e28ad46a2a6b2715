"""Benchmarks of fault injection (figures, not gates), written to results/bench/ with the machine:

1. time to apply a full impairment set and to restore the lab's own on a 16-link topology (a switched lab of 16 hosts:
   32 link directions, each with rate, delay, jitter and loss), per backend this machine has;
2. the userspace link emulator (`protolab-linkem bench`): packets/s at 64 and 1500 bytes with no
   impairment configured, and the one-way delay it adds (p50/p99), on one pinned core; as labs run
   it (each packet wakes it) and with --busy-poll 300us (it keeps reading between packets).
   Target from the fault-injection issue: >= 100k packets/s, p99 added delay < 100 us.

    python -m bench.impair [--hosts 16] [--repeat 3] [--skip-linkem] [--smoke]

Both use what a run uses: the lab's LinkState (lab.links) applies the set the way a step change does and
restores the lab's own configuration (its links' rates) the way the end of a fault schedule does.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

from bench import write_result
from protolab import cleanup, topo
from protolab.lab import Lab, impair
from protolab.model.impairment import Impairment

FULL = Impairment(rate="50Mbit", delay="10ms", jitter="1ms", loss="1%")
LINKEM_TARGET_PPS, LINKEM_TARGET_P99_US = 100_000, 100.0


def apply_clear(backend: impair.Backend, hosts: int, repeat: int) -> dict:
    t = topo.build("switched", {"hosts": hosts, "rate": "100Mbit"})
    lab = Lab(t, "bench", {h.name: "protolab/node:latest" for h in t.hosts}, backend=backend)
    runs = []
    with lab:
        dirs = [d for a, b in lab.link_ends for d in ((a, b), (b, a))]
        for i in range(repeat):
            t0 = time.monotonic()
            with ThreadPoolExecutor(max_workers=8) as pool:  # independent interfaces in parallel, as at deploy
                list(pool.map(lambda d: lab.links.replace(*d, FULL, "sender"), dirs))
            t1 = time.monotonic()
            # -U: user-to-user time; the fallback delays after the kernel's receive timestamp, which
            # ping uses by default (see workloads.ping_runner)
            code, out, _ = lab.exec("h1", ["ping", "-U", "-c", "5", "-i", "0.2", f"10.0.1.{hosts}"])
            rtt = float(out.split("=")[-1].split("/")[1]) if code == 0 else None
            t2 = time.monotonic()
            failures = lab.links.restore()
            t3 = time.monotonic()
            if failures:
                raise RuntimeError(f"restoring the lab's links failed: {'; '.join(failures)}")
            runs.append({"apply_seconds": t1 - t0, "restore_seconds": t3 - t2, "rtt_ms_while_applied": rtt})
            print(f"  {backend.name} run {i + 1}: apply {t1 - t0:.2f}s, restore {t3 - t2:.2f}s for {len(dirs)} "
                  f"directions; h1->h{hosts} RTT {rtt} ms while applied (expect ~40)")  # fmt: skip
    return {
        "backend": backend.name,
        "directions": len(dirs),
        "impairment": FULL.model_dump(mode="json", exclude_defaults=True),
        "runs": runs,
        "median_apply_seconds": statistics.median(r["apply_seconds"] for r in runs),
        "median_restore_seconds": statistics.median(r["restore_seconds"] for r in runs),
    }


LINKEM_BUSY_POLL = "300us"
# --smoke: a check that every part still runs (seconds), not a figure
LINKEM_SMOKE = ("--duration", "200ms", "--warmup", "50ms", "--latency-count", "500")


def linkem(*extra: str) -> dict:
    cmd = [str(impair.LINKEM), "bench", "--json", *extra]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"protolab-linkem bench failed: {proc.stderr.strip()[-500:]}")
    return json.loads(proc.stdout)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hosts", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-linkem", action="store_true", help="only the apply/clear benchmark")
    ap.add_argument("--smoke", action="store_true", help="2 hosts, 1 round, 0.2 s linkem runs: a check that it runs")
    a = ap.parse_args()
    if a.smoke:
        a.hosts, a.repeat = 2, 1
    from mininet.log import setLogLevel

    setLogLevel("critical")
    cleanup.clean(verbose=False)
    result: dict = {"benchmark": "impair", "smoke": a.smoke}
    result["apply_clear"] = []
    for name, (ok, why) in impair.probe().items():
        if not ok:
            print(f"apply/clear: backend {name} skipped: {why}")
            result["apply_clear"].append({"backend": name, "skipped": why})
            continue
        print(f"apply/clear of {a.hosts} links (both directions) with {name}:")
        r = apply_clear(impair.BACKENDS.get(name), a.hosts, a.repeat)
        result["apply_clear"].append(r)
        print(f"{name}: apply {r['median_apply_seconds']:.2f}s, restore {r['median_restore_seconds']:.2f}s "
              f"for {r['directions']} directions (median of {a.repeat})")  # fmt: skip
    if not a.skip_linkem:
        for key, extra, what in (
            ("linkem", (), "as labs run it"),
            ("linkem_busy_poll", ("--busy-poll", LINKEM_BUSY_POLL), f"--busy-poll {LINKEM_BUSY_POLL}"),
        ):
            print(f"protolab-linkem bench, {what} (one pinned core, no impairment configured):")
            lk = linkem(*extra, *(LINKEM_SMOKE if a.smoke else ()))
            result[key] = lk
            for tp in lk["throughput"]:
                print(f"  {tp['payload_bytes']} B: {tp['with_linkem_pps']:,.0f} packets/s through linkem "
                      f"({tp['without_linkem_pps']:,.0f} without)")  # fmt: skip
            print(f"  added one-way delay p50 {lk['added_p50_us']:.1f} us, p99 {lk['added_p99_us']:.1f} us "
                  f"(target: >= {LINKEM_TARGET_PPS:,} packets/s, p99 < {LINKEM_TARGET_P99_US:.0f} us)")  # fmt: skip
    path = write_result("impair", result)
    print(f"-> {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
