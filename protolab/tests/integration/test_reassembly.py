"""IP reassembly state in a real network namespace: what one measurement can leave to the next, and the
runner's wait for it (protolab.lab.reassembly).

The namespace is a private one (`unshare --net`) holding only a loopback with an Ethernet MTU, so a 2048-byte
UDP datagram travels as two fragments, as it does over the lab's hub. A lone first fragment, sent through a
raw socket, stands for a datagram whose second fragment the hub dropped. The namespace goes with its process.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from protolab import counters
from protolab.lab import reassembly

LONE_FRAGMENTS = """
import socket, struct, sys
s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
for ident in range(1, int(sys.argv[1]) + 1):
    # a UDP header announcing 2,008 bytes, then 1,000 of them, with More Fragments set: never completed
    body = struct.pack("!HHHH", 40000, 40001, 2008, 0) + b"x" * 1000
    hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(body), ident, 0x2000, 64, socket.IPPROTO_UDP, 0,
                      socket.inet_aton("127.0.0.1"), socket.inet_aton("127.0.0.1"))
    s.sendto(hdr + body, ("127.0.0.1", 0))
"""

ONE_DATAGRAM = """
import socket
r = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
r.bind(("127.0.0.1", 5000))
r.settimeout(0.5)
socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"y" * 2048, ("127.0.0.1", 5000))
try:
    print(len(r.recv(4096)))
except socket.timeout:
    print("lost")
"""


@pytest.fixture
def netns() -> Iterator[int]:
    """A process in a fresh network namespace (its pid): loopback up with MTU 1500, fragments expire after 3 s,
    reassembly may hold at most 20 kB (4 MB by default) so a few lone fragments fill it."""
    setup = ("ip link set lo up mtu 1500 && sysctl -qw net.ipv4.ipfrag_time=3 net.ipv4.ipfrag_low_thresh=10000 "
             "net.ipv4.ipfrag_high_thresh=20000 && echo ready && exec sleep 120")  # fmt: skip
    p = subprocess.Popen(["unshare", "--net", "sh", "-c", setup], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout is not None and p.stdout.readline().strip() == "ready"
        yield p.pid
    finally:
        p.kill()
        p.wait()


def in_ns(pid: int, code: str, *args: str) -> str:
    out = subprocess.run(["nsenter", "-t", str(pid), "-n", sys.executable, "-c", code, *args],
                         capture_output=True, text=True, timeout=10, check=True)  # fmt: skip
    return out.stdout.strip()


def reasm(pid: int) -> dict[str, int]:
    ip = counters.parse_snmp(Path(f"/proc/{pid}/net/snmp").read_text())["Ip"]
    return {k: v for k, v in ip.items() if k.startswith("Reasm")}


def test_full_reassembly_memory_loses_whole_datagrams_until_it_drains(netns: int):
    assert in_ns(netns, ONE_DATAGRAM) == "2048"  # an empty namespace reassembles it
    assert reassembly.held_bytes(netns) == 0

    in_ns(netns, LONE_FRAGMENTS, "20")
    held = reassembly.held_bytes(netns)
    assert 10000 < held <= 20000 + 5000, f"{held} bytes held"  # at the threshold, one fragment's truesize over
    before = reasm(netns)
    assert in_ns(netns, ONE_DATAGRAM) == "lost"  # both of its fragments are refused: no memory for them
    after = reasm(netns)
    assert after["ReasmFails"] - before["ReasmFails"] == 2, (before, after)
    assert after["ReasmOKs"] == before["ReasmOKs"]

    said: list[str] = []
    t0 = time.monotonic()
    assert reassembly.wait_drained({"ns": netns}, bound=10.0, say=said.append) == {}
    waited = time.monotonic() - t0
    assert 1.0 < waited < 8.0, f"waited {waited:.1f}s for 3 s fragments"
    assert "ns 0.0" in said[0] and said[-1].strip().startswith("IP fragments drained")
    assert reasm(netns)["ReasmTimeout"] >= 8  # the queues expired; they were not reassembled
    assert in_ns(netns, ONE_DATAGRAM) == "2048"  # after the wait the same datagram arrives again


def test_the_wait_gives_up_at_its_bound_and_names_the_namespace(netns: int):
    in_ns(netns, LONE_FRAGMENTS, "2")
    t0 = time.monotonic()
    left = reassembly.wait_drained({"h2": netns}, bound=0.5, say=lambda _: None)
    assert time.monotonic() - t0 < 2.0
    assert set(left) == {"h2"} and left["h2"] > 0
    assert "h2 (" in reassembly.describe(left, 0.5)
