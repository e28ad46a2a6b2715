"""A short calibration of the machine, recorded in every run's manifest: how fast one core hashes and how
many UDP datagrams per second one process moves over loopback. A comparison uses it to tell a machine that
got slower from a protocol that did (CPU shares are scaled by the hash rate)."""

from __future__ import annotations

import hashlib
import socket
import statistics
import time
from typing import Any

HASH_BLOCK = b"\x5a" * (1 << 20)
HASH_MIB = 32
UDP_SECONDS = 0.3
ROUNDS = 3


def hash_rate() -> float:
    """MiB/s of SHA-256 on one core (the median of ROUNDS)."""
    rates = []
    for _ in range(ROUNDS):
        h = hashlib.sha256()
        t0 = time.perf_counter()
        for _ in range(HASH_MIB):
            h.update(HASH_BLOCK)
        rates.append(HASH_MIB / (time.perf_counter() - t0))
    return statistics.median(rates)


def loopback_udp_rate(seconds: float = UDP_SECONDS) -> float:
    """Datagrams per second one process sends to itself over 127.0.0.1 and reads back."""
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        rx.bind(("127.0.0.1", 0))
        rx.setblocking(False)
        dst, payload, n = rx.getsockname(), b"x" * 64, 0
        deadline = time.perf_counter() + seconds
        t0 = time.perf_counter()
        while time.perf_counter() < deadline:
            tx.sendto(payload, dst)
            try:
                rx.recv(128)
                n += 1
            except BlockingIOError:
                pass
        return n / (time.perf_counter() - t0)
    finally:
        rx.close()
        tx.close()


def measure() -> dict[str, Any]:
    t0 = time.monotonic()
    out = {"hash_mib_per_second": hash_rate(), "loopback_udp_packets_per_second": loopback_udp_rate()}
    return out | {"seconds": time.monotonic() - t0}
