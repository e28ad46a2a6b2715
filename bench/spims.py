"""Benchmarks of protolab-spims on loopback against reference tools (figures, not gates), written to results/bench/
with the machine. The bars of issue 20, each a ratio measured side by side in one run:

1. bulk_get over TCP against iperf3 on the same path: equal write sizes (64 KiB units vs `iperf3 -l 64K`, and
   SPIMS's 1 KiB units vs `-l 1K`, in the paper's 1 MB transfers and in 16 MiB ones), equal durations, the same
   direction (`-R`: the server sends, as the responder does) and TCP_NODELAY on both (`-N`, as protolab's tcp
   sets it). Ours is bytes received over the run
   (received_bytes / elapsed_seconds of `protolab-spims run`; the request that opens each transfer included),
   theirs iperf3's receiver figure. The two tools alternate over rounds, medians reported.
   Target: ours >= 0.9 x iperf3, for each write size.
2. request_response of 32 B over TCP: p50 round trip of the binary (`serve` and `run`, two processes) against the
   p50 of the minimal Go ping-pong (TCP_NODELAY, no framing) as two processes (built here from PINGPONG_GO), the
   shape the binary runs in. Both run with the server pinned to one core and the client pinned either to the same
   core or to the other: on this VM a wake-up across cores costs tens of microseconds (an idle vCPU halts and is
   woken by the hypervisor), so an unpinned pair reads 10 or 70 us by where the scheduler put it, whichever tool
   it is. For context, agents/spims/bench_test.go's BenchmarkRequestResponseRatio (pinned to the server's core):
   the ping-pong and spims.RequestResponse in one process. The tools alternate over rounds, medians reported with
   each figure's spread over rounds. Target: ours <= 1.2 x the two-process ping-pong, in each placement.
3. per transport (tcp, tls, quic, mptcp), from the binary: connect_disconnect connections/s (dial with the
   transport's handshake, close, no exchange) and request_response 32 B p50/p99. No target: figures. A transport
   this machine cannot run is reported as skipped.

    python -m bench.spims [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from bench import OUT
from protolab import environment

REPO = Path(__file__).resolve().parent.parent
SPIMS = REPO / "images" / "node" / "bin" / "protolab-spims"
GO = shutil.which("go") or "/usr/local/go/bin/go"
HOST = "127.0.0.1"
UNAVAILABLE = 3  # protolab-spims: the transport is not available on this host
BULK_TARGET, RR_TARGET = 0.9, 1.2  # issue 20: within 10 % of iperf3; p50 within 1.2x the ping-pong
# name, unit bytes, units per transfer, iperf3 -l. A bulk_get run is transfers one after another, each opened by a
# request and closed by a stop exchange (SPIMS's procedure), where iperf3 streams: "1KiB" is the paper's transfer
# (1000 units, 1 MB), "1KiB-16MiB" the same writes in transfers as long as the 64 KiB row's (256 x 64 KiB), which
# tells the per-transfer exchange's share from the per-write cost.
BULK_UNITS = (("64KiB", 65536, 256, "64K"), ("1KiB", 1024, 1000, "1K"), ("1KiB-16MiB", 1024, 16384, "1K"))
TRANSPORTS = ("tcp", "tls", "quic", "mptcp")
START_TIMEOUT = 10.0  # seconds for a server to listen


class UnavailableError(Exception):
    """The transport cannot run on this host."""


def free_port() -> int:
    """A port free for both TCP and UDP on HOST (quic listens on UDP)."""
    for _ in range(20):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind((HOST, 0))
            port = s.getsockname()[1]
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
            try:
                u.bind((HOST, port))
            except OSError:
                continue
        return port
    raise RuntimeError("no port free for both TCP and UDP on loopback after 20 tries")


def tcp_listening(port: int) -> bool:
    """Whether some socket listens on TCP port (from /proc/net/tcp*; no probe connection, iperf3 -1 would take it)."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError), open(table) as f:
            for line in f.readlines()[1:]:
                local, state = line.split()[1], line.split()[3]
                if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:
                    return True
    return False


def wait_until(ready: Callable[[], bool], proc: subprocess.Popen, what: str, log: Path | None = None) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while not ready():
        if proc.poll() is not None:
            why = log.read_text().strip()[-500:] if log else ""
            if proc.returncode == UNAVAILABLE:
                raise UnavailableError(why)
            raise RuntimeError(f"{what} exited with {proc.returncode} before listening: {why}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} not listening after {START_TIMEOUT:.0f} s")
        time.sleep(0.02)


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


def pinned(cpu: int | None) -> list[str]:
    """The argv prefix that runs a command on one CPU (none: where the scheduler puts it)."""
    return [] if cpu is None else ["taskset", "-c", str(cpu)]


def placements() -> dict[str, tuple[int, int]]:
    """request_response's placements: (server CPU, client CPU), "same core" and, with two CPUs, "across cores"."""
    cpus = sorted(os.sched_getaffinity(0))
    out = {"same_core": (cpus[0], cpus[0])}
    if len(cpus) > 1:
        out["across_cores"] = (cpus[0], cpus[1])
    return out


@contextlib.contextmanager
def spims_server(transport: str, tmp: Path, cpu: int | None = None) -> Iterator[str]:
    """`protolab-spims serve` on a free loopback port (on `cpu` when given); yields its address. Unavailable if the
    host lacks it."""
    addr = f"{HOST}:{free_port()}"
    log = tmp / f"serve-{transport}-{addr.rsplit(':', 1)[1]}.log"
    with log.open("w") as f:  # a file, not a pipe: nothing to drain while it runs
        proc = subprocess.Popen([*pinned(cpu), str(SPIMS), "serve", "--transport", transport, "--listen", addr],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=f)  # fmt: skip
    try:
        what = f"protolab-spims serve --transport {transport}"
        wait_until(lambda: "listening on" in log.read_text(), proc, what, log)
        yield addr
    finally:
        stop(proc)


def job(procedure: str, transport: str, target: str, iterations: int, size: int | None = None,
        time_limit: str | None = None, count: int | None = None) -> dict:  # fmt: skip
    """A job for `protolab-spims run`; size in payload bytes (constant), time_limit a duration ("2s")."""
    j: dict = {"procedure": procedure, "transport": transport, "target": target, "iterations": iterations}
    if size is not None:
        j["size"] = {"dist": "constant", "value": size}
    if time_limit is not None:
        j["time_limit"] = time_limit
    if count is not None:
        j["count"] = count
    return j


def spims_run(j: dict, timeout: float, cpu: int | None = None) -> dict:
    """One `protolab-spims run` (on `cpu` when given); its result line."""
    proc = subprocess.run([*pinned(cpu), str(SPIMS), "run", "--job", "-"], input=json.dumps(j), capture_output=True,
                          text=True, timeout=timeout)  # fmt: skip
    if proc.returncode == UNAVAILABLE:
        raise UnavailableError(proc.stderr.strip()[-500:])
    if proc.returncode != 0:
        raise RuntimeError(f"protolab-spims run {j['procedure']} {j['transport']} failed ({proc.returncode}): "
                           f"{proc.stderr.strip()[-500:]}")  # fmt: skip
    return json.loads(proc.stdout.strip().splitlines()[-1])


def iperf3(length: str, seconds: int) -> dict:
    """One iperf3 run over loopback, server sending (-R), TCP_NODELAY (-N), writes of length; its -J output."""
    port = free_port()
    quiet = {"stdin": subprocess.DEVNULL, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    server = subprocess.Popen(["iperf3", "-s", "-1", "-B", HOST, "-p", str(port)], **quiet)
    try:
        wait_until(lambda: tcp_listening(port), server, "iperf3 -s")
        cmd = ["iperf3", "-c", HOST, "-p", str(port), "-t", str(seconds), "-l", length, "-R", "-N", "-J"]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 30)
        out = json.loads(proc.stdout) if proc.stdout.strip() else {}
        if proc.returncode != 0 or "error" in out:
            raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}): {out.get('error', proc.stderr.strip())}")
        return out
    finally:
        stop(server)


def verdict(ours: float, theirs: float, target: float, higher_is_better: bool) -> dict:
    ratio = ours / theirs
    met = ratio >= target if higher_is_better else ratio <= target
    return {"ratio": ratio, "target": f"ratio {'>=' if higher_is_better else '<='} {target}",
            "verdict": "met" if met else "not met"}  # fmt: skip


def bar_bulk(rounds: int, seconds: int, tmp: Path) -> list[dict]:
    out = []
    with spims_server("tcp", tmp) as addr:
        for name, unit, count, length in BULK_UNITS:
            runs = []
            for i in range(rounds):
                run: dict = {}
                for tool in ("iperf3", "protolab") if i % 2 == 0 else ("protolab", "iperf3"):
                    if tool == "iperf3":
                        r = iperf3(length, seconds)["end"]["sum_received"]
                        run["iperf3"] = {"bytes": r["bytes"], "seconds": r["seconds"],
                                         "bytes_per_second": r["bits_per_second"] / 8}  # fmt: skip
                    else:
                        j = job("bulk_get", "tcp", addr, 0, time_limit=f"{seconds}s", count=count, size=unit)
                        r = spims_run(j, timeout=seconds + 30)
                        run["protolab"] = {
                            "bytes": r["received_bytes"], "seconds": r["elapsed_seconds"], "transfers": r["completed"],
                            "bytes_per_second": r["received_bytes"] / r["elapsed_seconds"],
                            "receiver_p50_bytes_per_second": r["bulk"]["receiver_bytes_per_second"]["p50"],
                        }  # fmt: skip
                run["ratio"] = run["protolab"]["bytes_per_second"] / run["iperf3"]["bytes_per_second"]
                runs.append(run)
                print(f"  {name} round {i + 1}: protolab {gbit(run['protolab']['bytes_per_second'])}, "
                      f"iperf3 {gbit(run['iperf3']['bytes_per_second'])}, ratio {run['ratio']:.2f}")  # fmt: skip
            ours = statistics.median(r["protolab"]["bytes_per_second"] for r in runs)
            theirs = statistics.median(r["iperf3"]["bytes_per_second"] for r in runs)
            out.append({
                "unit": name, "unit_bytes": unit, "units_per_transfer": count, "iperf3_length": length,
                "seconds_per_run": seconds, "rounds": runs, "protolab_median_bytes_per_second": ours,
                "iperf3_median_bytes_per_second": theirs,
                "median_of_round_ratios": statistics.median(r["ratio"] for r in runs),
                **verdict(ours, theirs, BULK_TARGET, higher_is_better=True),
            })  # fmt: skip
    return out


GO_METRIC = re.compile(r"([\d.]+) (\S+)")

# bench_test.go's ping-pong (32 B, TCP_NODELAY, no framing) split into two processes: `serve ADDR`, and
# `run ADDR N`, which prints the p50 round trip in seconds.
PINGPONG_GO = """package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"sort"
	"strconv"
	"time"
)

func main() {
	if len(os.Args) < 3 || (os.Args[1] != "serve" && len(os.Args) < 4) {
		fmt.Fprintln(os.Stderr, "usage: pingpong serve ADDR | run ADDR N")
		os.Exit(2)
	}
	if os.Args[1] == "serve" {
		ln, err := net.Listen("tcp", os.Args[2])
		if err != nil {
			panic(err)
		}
		for {
			c, err := ln.Accept()
			if err != nil {
				panic(err)
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 32)
				for {
					if _, err := io.ReadFull(c, buf); err != nil {
						return
					}
					if _, err := c.Write(buf); err != nil {
						return
					}
				}
			}()
		}
	}
	n, err := strconv.Atoi(os.Args[3])
	if err != nil || n < 1 {
		panic("N: want a count >= 1")
	}
	c, err := net.Dial("tcp", os.Args[2])
	if err != nil {
		panic(err)
	}
	buf := make([]byte, 32)
	rtt := make([]float64, n)
	for i := range rtt {
		t0 := time.Now()
		if _, err := c.Write(buf); err != nil {
			panic(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			panic(err)
		}
		rtt[i] = time.Since(t0).Seconds()
	}
	sort.Float64s(rtt)
	fmt.Println(rtt[n/2])
}
"""


def go_env() -> dict[str, str]:
    return {**os.environ, "GOTOOLCHAIN": "local", "PATH": f"{os.environ.get('PATH', '')}:{Path(GO).parent}"}


def pingpong_binary(tmp: Path) -> Path:
    src = tmp / "pingpong"
    src.mkdir()
    (src / "go.mod").write_text("module pingpong\n\ngo 1.22\n")
    (src / "main.go").write_text(PINGPONG_GO)
    proc = subprocess.run([GO, "build", "-o", "pingpong", "."], cwd=src, env=go_env(), capture_output=True,
                          text=True, timeout=600)  # fmt: skip
    if proc.returncode != 0:
        raise RuntimeError(f"go build of the two-process ping-pong failed: {proc.stderr.strip()[-500:]}")
    return src / "pingpong"


@contextlib.contextmanager
def pingpong_server(exe: Path, cpu: int | None = None) -> Iterator[str]:
    port = free_port()
    quiet = {"stdin": subprocess.DEVNULL, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    proc = subprocess.Popen([*pinned(cpu), str(exe), "serve", f"{HOST}:{port}"], **quiet)
    try:
        wait_until(lambda: tcp_listening(port), proc, "ping-pong serve")
        yield f"{HOST}:{port}"
    finally:
        stop(proc)


def pingpong_run(exe: Path, addr: str, n: int, cpu: int | None = None) -> float:
    proc = subprocess.run([*pinned(cpu), str(exe), "run", addr, str(n)], capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise RuntimeError(f"ping-pong run failed ({proc.returncode}): {proc.stderr.strip()[-500:]}")
    return float(proc.stdout)


def go_bench_binary(tmp: Path) -> Path:
    """agents/spims's test binary (so each round runs the benchmark without a build)."""
    exe = tmp / "spims.test"
    proc = subprocess.run([GO, "test", "-c", "-o", str(exe), "./spims"], cwd=REPO / "agents", env=go_env(),
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    if proc.returncode != 0:
        raise RuntimeError(f"go test -c ./spims failed: {proc.stderr.strip()[-500:]}")
    return exe


def go_pingpong(exe: Path, n: int, cpu: int | None = None) -> dict:
    """BenchmarkRequestResponseRatio for n round trips each: its metrics (pingpong-p50-ns, spims-p50-ns, ratio)."""
    cmd = [*pinned(cpu), str(exe), "-test.run", "^$", "-test.bench", "^BenchmarkRequestResponseRatio$",
           "-test.benchtime", f"{n}x"]  # fmt: skip
    proc = subprocess.run(cmd, cwd=REPO / "agents" / "spims", capture_output=True, text=True, timeout=300)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("BenchmarkRequestResponseRatio")), None)
    if proc.returncode != 0 or line is None:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}): {(proc.stdout + proc.stderr).strip()[-500:]}")
    return {unit: float(v) for v, unit in GO_METRIC.findall(line.split(None, 2)[2])}


def spread(values: list[float]) -> dict:
    """A figure's median, least and greatest over rounds."""
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def bar_request_response(rounds: int, n: int, tmp: Path) -> dict:
    if not Path(GO).exists():
        return {"skipped": f"no Go toolchain (looked for {GO}) to build agents/spims's benchmark"}
    if not shutil.which("taskset"):
        return {"skipped": "no taskset (util-linux) to pin the two ends: unpinned figures swing with placement"}
    exe, pp_exe = go_bench_binary(tmp), pingpong_binary(tmp)
    where = placements()
    server_cpu = next(iter(where.values()))[0]
    runs = []
    with spims_server("tcp", tmp, server_cpu) as addr, pingpong_server(pp_exe, server_cpu) as pp_addr:
        rr_job = job("request_response", "tcp", addr, n, size=32)
        for i in range(rounds):
            run: dict = {}
            m = go_pingpong(exe, n, server_cpu)
            run["in_process_pingpong_p50_seconds"] = m["pingpong-p50-ns"] / 1e9
            run["in_process_spims_p50_seconds"] = m["spims-p50-ns"] / 1e9
            for name, (_server, client) in where.items():
                tools = ("protolab", "pingpong") if i % 2 == 0 else ("pingpong", "protolab")
                for tool in tools:
                    if tool == "pingpong":
                        run[f"{name}_pingpong_p50_seconds"] = pingpong_run(pp_exe, pp_addr, n, client)
                    else:
                        r = spims_run(rr_job, timeout=120, cpu=client)
                        run[f"{name}_protolab_p50_seconds"] = r["seconds"]["p50"]
                        run[f"{name}_protolab_p99_seconds"] = r["seconds"]["p99"]
                run[f"{name}_ratio"] = run[f"{name}_protolab_p50_seconds"] / run[f"{name}_pingpong_p50_seconds"]
            runs.append(run)
            print(f"  round {i + 1}: " + "; ".join(
                f"{name.replace('_', ' ')}: protolab {us(run[f'{name}_protolab_p50_seconds'])}, ping-pong "
                f"{us(run[f'{name}_pingpong_p50_seconds'])}, ratio {run[f'{name}_ratio']:.2f}" for name in where)
                + f" (in one process: ping-pong {us(run['in_process_pingpong_p50_seconds'])}, spims "
                  f"{us(run['in_process_spims_p50_seconds'])})")  # fmt: skip
    out: dict = {
        "size_bytes": 32, "round_trips_per_run": n, "rounds": runs,
        "compared": "protolab-spims binary (serve + run, two processes) p50 vs the same Go ping-pong as two "
                    "processes, the server pinned to a core and the client to the same core or to the other",
        "placements": {name: {"server_cpu": s, "client_cpu": c} for name, (s, c) in where.items()},
        "in_process_pingpong_p50_seconds": spread([r["in_process_pingpong_p50_seconds"] for r in runs]),
        "in_process_spims_p50_seconds": spread([r["in_process_spims_p50_seconds"] for r in runs]),
    }  # fmt: skip
    for name in where:
        ours = statistics.median(r[f"{name}_protolab_p50_seconds"] for r in runs)
        theirs = statistics.median(r[f"{name}_pingpong_p50_seconds"] for r in runs)
        out[name] = {
            "protolab_p50_seconds": spread([r[f"{name}_protolab_p50_seconds"] for r in runs]),
            "pingpong_p50_seconds": spread([r[f"{name}_pingpong_p50_seconds"] for r in runs]),
            "ratio_spread": spread([r[f"{name}_ratio"] for r in runs]),
            **verdict(ours, theirs, RR_TARGET, higher_is_better=False),
        }
    return out


def bar_transports(connects: int, round_trips: int, tmp: Path) -> list[dict]:
    out = []
    for t in TRANSPORTS:
        try:
            with spims_server(t, tmp) as addr:
                cd = spims_run(job("connect_disconnect", t, addr, connects), timeout=300)
                rr = spims_run(job("request_response", t, addr, round_trips, size=32), timeout=300)
        except UnavailableError as e:
            print(f"  {t}: skipped, not available here: {e}")
            out.append({"transport": t, "skipped": str(e)})
            continue
        print(f"  {t}: {cd['rate_per_second']:,.0f} connects/s, request_response p50 "
              f"{us(rr['seconds']['p50'])}")  # fmt: skip
        out.append({
            "transport": t, "connects": cd["completed"], "connects_per_second": cd["rate_per_second"],
            "connect_close_p50_seconds": cd["seconds"]["p50"], "connect_close_p99_seconds": cd["seconds"]["p99"],
            "round_trips": rr["completed"], "request_response_p50_seconds": rr["seconds"]["p50"],
            "request_response_p99_seconds": rr["seconds"]["p99"], "timeouts": cd["timeouts"] + rr["timeouts"],
            "tuning": rr["paths"][0]["tuning"],
        })  # fmt: skip
    return out


def gbit(bytes_per_second: float) -> str:
    return f"{bytes_per_second * 8 / 1e9:.2f} Gbit/s"


def us(seconds: float) -> str:
    return f"{seconds * 1e6:.1f} us"


def versions() -> dict:
    def first(cmd: list[str]) -> str:
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired) as e:
            return f"not run: {e}"
        return (p.stdout or p.stderr).strip().splitlines()[0] if (p.stdout or p.stderr).strip() else "?"

    return {"protolab-spims": first([str(SPIMS), "--version"]), "iperf3": first(["iperf3", "--version"]),
            "go": first([GO, "version"])}  # fmt: skip


def table(result: dict) -> None:
    print("\nissue 20 bars (loopback, side by side, medians):")
    for b in result["bulk_get"]:
        print(f"  1. bulk_get {b['unit']:>10} units vs iperf3 -l {b['iperf3_length']:<3}: "
              f"{gbit(b['protolab_median_bytes_per_second'])} vs {gbit(b['iperf3_median_bytes_per_second'])}, "
              f"ratio {b['ratio']:.2f} ({b['target']}): {b['verdict']}")  # fmt: skip
    rr = result["request_response"]
    if "skipped" in rr:
        print(f"  2. request_response 32 B: skipped: {rr['skipped']}")
    else:
        for name in rr["placements"]:
            p = rr[name]
            print(f"  2. request_response 32 B p50, {name.replace('_', ' ')}: "
                  f"{us(p['protolab_p50_seconds']['median'])} vs the two-process Go ping-pong "
                  f"{us(p['pingpong_p50_seconds']['median'])}, ratio {p['ratio']:.2f} ({p['target']}): "
                  f"{p['verdict']}; over rounds ours "
                  f"{us(p['protolab_p50_seconds']['min'])}-{us(p['protolab_p50_seconds']['max'])}, theirs "
                  f"{us(p['pingpong_p50_seconds']['min'])}-{us(p['pingpong_p50_seconds']['max'])}")  # fmt: skip
        print(f"     context, in one process: ping-pong {us(rr['in_process_pingpong_p50_seconds']['median'])}, "
              f"spims {us(rr['in_process_spims_p50_seconds']['median'])}")  # fmt: skip
    print("  3. per transport (no target):")
    print(f"     {'transport':<10}{'connects/s':>12}{'rr 32 B p50':>14}{'rr 32 B p99':>14}")
    for t in result["transports"]:
        if "skipped" in t:
            print(f"     {t['transport']:<10}skipped: {t['skipped']}")
            continue
        print(f"     {t['transport']:<10}{t['connects_per_second']:>12,.0f}"
              f"{us(t['request_response_p50_seconds']):>14}{us(t['request_response_p99_seconds']):>14}")  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer, shorter rounds (a check that it runs)")
    a = ap.parse_args()
    rounds, seconds, rr_n, connects = (2, 1, 2000, 200) if a.quick else (5, 2, 10000, 1000)
    if not SPIMS.exists():
        raise SystemExit(f"{SPIMS} missing: `make images` builds it")
    os.environ["GIT_OPTIONAL_LOCKS"] = "0"  # git status without refreshing the index (another may hold its lock)
    t0 = time.monotonic()
    result: dict = {
        "benchmark": "spims", "quick": a.quick, "at": dt.datetime.now(dt.UTC).isoformat(),
        "machine": environment.static(), "load_before": environment.dynamic(), "git": environment.git_commit(),
        "versions": versions(),
    }  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="bench-spims-") as d:
        tmp = Path(d)
        print(f"1. bulk_get over TCP vs iperf3 ({rounds} rounds of {seconds} s each, alternating):")
        s = time.monotonic()
        result["bulk_get"] = bar_bulk(rounds, seconds, tmp)
        result["bulk_get_seconds"] = time.monotonic() - s
        print(f"2. request_response 32 B over TCP vs Go ping-pong ({rounds} rounds of {rr_n} round trips):")
        s = time.monotonic()
        result["request_response"] = bar_request_response(rounds, rr_n, tmp)
        result["request_response_seconds"] = time.monotonic() - s
        print(f"3. per transport: {connects} connect_disconnect, {rr_n} request_response 32 B:")
        s = time.monotonic()
        result["transports"] = bar_transports(connects, rr_n, tmp)
        result["transports_seconds"] = time.monotonic() - s
    result["load_after"] = environment.dynamic()
    result["total_seconds"] = time.monotonic() - t0
    table(result)
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"spims-{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%SZ}.json"
    path.write_text(json.dumps(result, indent=2))
    print(f"took {result['total_seconds']:.0f} s -> {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
