"""IP reassembly state one measurement can leave to the next.

A datagram larger than the path's MTU travels as fragments, and the receiving namespace holds each incomplete
datagram's fragments until the rest arrive or `ipfrag_time` (30 s) passes. A shared medium that drops single
fragments leaves many incomplete datagrams behind; once they hold `ipfrag_high_thresh` (4 MB per namespace)
the kernel drops every new fragment (Ip ReasmFails), so a measurement that starts then loses everything no
matter its own load. No sysctl frees queues that already exist, so before each measurement the runner waits
until no node's namespace holds any (`/proc/<pid>/net/sockstat` FRAG, `sockstat6` FRAG6), bounded by
`ipfrag_time` and a margin, and says which namespace still held some when the bound passes: `held_bytes` and
BOUND_SECONDS are one kind of protolab.lab.quiesce's wait (queues, flows, fragments); `wait_drained` waits for
fragments alone.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

# ipfrag_time's default (30 s; every new namespace starts with it) plus a margin for the timer's slack
BOUND_SECONDS = 35.0
SAY_AFTER_SECONDS = 1.0  # waits shorter than this pass without a word
POLL_SECONDS = 0.25
_FILES = (("net/sockstat", "FRAG:"), ("net/sockstat6", "FRAG6:"))


def parse_frag_memory(text: str, label: str) -> int:
    """The `memory` figure (bytes) of the `label` line of a sockstat file; 0 when the line is absent."""
    for line in text.splitlines():
        words = line.split()
        if words and words[0] == label and "memory" in words:
            return int(words[words.index("memory") + 1])
    return 0


def held_bytes(pid: int, proc: Path = Path("/proc")) -> int:
    """Bytes of IP (v4 and v6) fragments waiting for reassembly in the network namespace of `pid`; 0 for a
    namespace without IPv6, and 0 when the process is gone (its namespace went with it)."""
    total = 0
    for rel, label in _FILES:
        try:
            total += parse_frag_memory((proc / str(pid) / rel).read_text(), label)
        except FileNotFoundError:
            continue
    return total


def wait_drained(
    pids: dict[str, int],
    bound: float = BOUND_SECONDS,
    say: Callable[[str], None] = print,
    held: Callable[[int], int] = held_bytes,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, int]:
    """Wait until no node (name -> pid) holds fragments, at most `bound` seconds. Returns the nodes that still
    hold some then, with their bytes (empty: all drained). Says what it waits for when that takes a while."""
    t0 = clock()
    said = False
    while True:
        left = {name: n for name, pid in pids.items() if (n := held(pid)) > 0}
        waited = clock() - t0
        if not left:
            if said:
                say(f"  IP fragments drained after {waited:.1f}s")
            return {}
        if waited >= bound:
            return left
        if not said and waited >= SAY_AFTER_SECONDS:
            what = ", ".join(f"{name} {n / 1e6:.2f} MB" for name, n in sorted(left.items()))
            say(f"  waiting for incomplete IP datagrams to expire before measuring ({what}; at most {bound:.0f}s)")
            said = True
        sleep(POLL_SECONDS)


def describe(left: dict[str, int], bound: float = BOUND_SECONDS) -> str:
    """The reason a measurement that starts with fragments still held is not clean."""
    what = ", ".join(f"{name} ({n} bytes)" for name, n in sorted(left.items()))
    return (f"IP fragments from an earlier measurement still held {bound:.0f}s on in {what}: new fragments "
            "may be dropped for want of reassembly memory")  # fmt: skip
