"""Idle links before each measurement: what one measurement can leave to the next, waited out.

A measurement starts clean when nothing of the last one is still on the lab's links:
- queues: every qdisc of every lab device is empty (`tc -s -j qdisc show`, its `backlog` in bytes), in each node's
  namespace (its data interfaces and their IFBs) and on the host side (the bridges' ports and IFBs, `plab-*`, in
  the root namespace or an emulated testbed host's), and no userspace link emulator (protolab-linkem, the fallback
  backend) holds a packet (its `protolab_linkem_held_packets`);
- flows: no node has a TCP socket off its management address that is still connected or still sending (states
  SYN-SENT .. CLOSE-WAIT and LAST-ACK, CLOSING, or bytes in its send queue: a closed socket's data is still sent,
  seen after a bulk TCP point), and no UDP socket has bytes waiting to leave (/proc/<pid>/net/{tcp,tcp6,udp,udp6});
- fragments: no node holds IP fragments for reassembly (protolab.lab.reassembly).

Each kind is waited for with its own bound. Queues and flows: the bytes found at the first look, sent at the lab's
slowest configured rate, plus every configured delay (a FIN and its ACK cross the path), plus a margin; at least
MIN_BOUND_SECONDS. Fragments: reassembly.BOUND_SECONDS (they only expire). What is still there at its bound makes
the measurement invalid, naming the node or device and what it held (`describe`). Places are named `node`,
`node:device` and `host:device` (the root namespace) or `<testbed host>:device`.

Not read: the host side of a testbed host with a kernel of its own, and its link emulators (its keeper would need
a request for them); its nodes are read through their keeper's `sh`.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import naming
from . import reassembly
from .impair import Endpoint, Linkem, held_entry, held_packets, ifb_for, parse_held_packets  # noqa: F401 (parse_: its home)

if TYPE_CHECKING:
    from .api import RunningLab

MIN_BOUND_SECONDS = 2.0  # a lab without a slow link: a FIN exchange and a scheduler's slack
MARGIN_SECONDS = 1.0
UNRATED_BPS = 1e9  # a lab whose links have no configured rate drains as fast as a veth (about this)
POLL_SECONDS = 0.1
SAY_AFTER_SECONDS = 1.0  # waits shorter than this pass without a word
READ_TIMEOUT_SECONDS = 10.0

# /proc/net/tcp's `st` (include/net/tcp_states.h) -> ss's names; the states of a flow still going on
TCP_STATES = {1: "ESTAB", 2: "SYN-SENT", 3: "SYN-RECV", 4: "FIN-WAIT-1", 5: "FIN-WAIT-2", 6: "TIME-WAIT",
              7: "CLOSE", 8: "CLOSE-WAIT", 9: "LAST-ACK", 10: "LISTEN", 11: "CLOSING", 12: "NEW-SYN-RECV"}  # fmt: skip
GOING_ON = {"ESTAB", "SYN-SENT", "SYN-RECV", "FIN-WAIT-1", "CLOSE-WAIT", "LAST-ACK", "CLOSING", "NEW-SYN-RECV"}


@dataclass(frozen=True)
class Left:
    """Something one measurement left: its bytes (0 for a connected socket with nothing to send) and what it is."""

    bytes: int
    what: str


Leftovers = dict[str, Left]  # place -> what is there


# -- readers of captured text (fixtures in the unit tests) ------------------------------------------------------
def parse_backlog(tc_json: str) -> dict[str, int]:
    """Each device's queued bytes from `tc -s -j qdisc show`: the largest backlog of its qdiscs (a classful
    root's counts its children's, so the largest is the device's without counting a packet twice)."""
    out: dict[str, int] = {}
    for q in json.loads(tc_json or "[]"):
        dev = q.get("dev")
        if dev:
            out[dev] = max(out.get(dev, 0), int(q.get("backlog", 0)))
    return out


def _address(hexaddr: str) -> str:
    """An address of /proc/net/tcp (IPv4: 8 hex digits, IPv6: 32, each 32-bit word in host order) as text; an
    IPv4-mapped IPv6 address (a dual-stack socket's, e.g. the agent's) as its IPv4 address."""
    import ipaddress

    raw = bytes.fromhex(hexaddr)
    addr = ipaddress.ip_address(b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4)))
    mapped = addr.ipv4_mapped if isinstance(addr, ipaddress.IPv6Address) else None
    return str(mapped or addr)


def parse_sockets(text: str, udp: bool, ignore: set[str]) -> list[Left]:
    """The sockets of a /proc/net/{tcp,tcp6,udp,udp6} file that are a flow still going on: TCP in a state of
    GOING_ON or with bytes to send, UDP with bytes to send; sockets bound to an address in `ignore` (the node's
    management address, loopback) left out."""
    out = []
    for line in text.splitlines()[1:]:
        w = line.split()
        if len(w) < 5:
            continue
        (local, lport), (remote, rport) = (x.split(":") for x in w[1:3])
        laddr, raddr = _address(local), _address(remote)
        if laddr in ignore or raddr in ignore:
            continue
        tx = int(w[4].split(":")[0], 16)
        state = "UNCONN" if udp else TCP_STATES.get(int(w[3], 16), w[3])
        if tx > 0 or (not udp and state in GOING_ON):
            proto = "UDP" if udp else "TCP"
            what = f"{proto} {laddr}:{int(lport, 16)} -> {raddr}:{int(rport, 16)} {state}, {tx} B to send"
            out.append(Left(tx, what))
    return out


# -- the lab's places ---------------------------------------------------------------------------------------------
@dataclass
class Place:
    """A namespace the lab has devices in. pid: a process in it (None: this process's). node: a node's (its
    sockets are read too). devices: the lab's devices there; with `prefixed`, every `plab-*` device there too (the
    host side: hubs' IFBs). shell: reads it through the lab (a node on a testbed host with a kernel of its own)."""

    name: str
    pid: int | None
    node: bool
    devices: set[str] = field(default_factory=set)
    prefixed: bool = False
    mgmt_ip: str = ""
    shell: Callable[[str], str] | None = None


def places(lab: RunningLab) -> list[Place]:
    """Every namespace of `lab` (a Lab, or a lab over several hosts) this machine can read, with the lab's devices
    in it; a node on a host with a kernel of its own through the lab's node shell (its keeper)."""
    out: dict[tuple[str, int | None], Place] = {}
    for name, n in lab.nodes.items():
        pid = n.pid or None
        shell = None if pid else _node_shell(lab, name)
        devs = set(lab.data_interfaces(name))
        devs |= {f"{d}i"[:15] for d in devs}  # an at-receiver direction's IFB in the node (impair.ifb_for)
        out[(name, pid)] = Place(name, pid, True, devs, mgmt_ip=n.mgmt_ip, shell=shell)
    nodes = {n.pid for n in lab.nodes.values() if n.pid}
    for _node, end in _local_ends(lab):
        if end.pid in nodes:
            continue
        key = ("host", end.pid)
        p = out.setdefault(key, Place(_host_name(lab, end.pid), end.pid, False, prefixed=True))
        p.devices |= {end.intf, ifb_for(Endpoint(end.intf, end.pid, host_side=True)).intf}
    return list(out.values())


def _node_shell(lab: RunningLab, node: str) -> Callable[[str], str]:
    return lambda script: str(lab.node_shell(node, script))


def _local_ends(lab: RunningLab) -> list[tuple[str, Endpoint]]:
    """Every link end whose namespace is on this machine (a lab over hosts: its emulated hosts' parts)."""
    return list(lab.ends_here())


def _host_name(lab: RunningLab, pid: int | None) -> str:
    """The host side's name: `host` (the root namespace here), or the emulated testbed host whose keeper is pid."""
    if pid is None:
        return "host"
    return lab.namespace_host(pid) or f"ns{pid}"


def _run(cmd: list[str]) -> str:
    return subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=READ_TIMEOUT_SECONDS).stdout


QDISCS = ["tc", "-s", "-j", "qdisc", "show"]
SOCKET_FILES = (("net/tcp", False), ("net/tcp6", False), ("net/udp", True), ("net/udp6", True))
_SEP = "@@protolab-quiesce@@"


def read_place(p: Place, proc: Path = Path("/proc"), run: Callable[[list[str]], str] = _run) -> Leftovers:
    """What is queued on the lab's devices of one place, and (a node) its flows still going on."""
    ignore = {"127.0.0.1", "::1", *([p.mgmt_ip] if p.mgmt_ip else [])}
    if p.shell is not None:  # one command through the node's keeper: the qdiscs, then each socket file
        parts = p.shell(" ; ".join([" ".join(QDISCS), *(f"echo {_SEP}; cat /proc/{f}" for f, _ in SOCKET_FILES)]))
        tc_json, *files = parts.split(_SEP)
        texts = [(t.strip("\n"), udp) for t, (_f, udp) in zip(files, SOCKET_FILES, strict=False)]
    else:
        tc_json = run(QDISCS if p.pid is None else ["nsenter", "-t", str(p.pid), "-n", *QDISCS])
        texts = []
        if p.node:
            for rel, udp in SOCKET_FILES:
                try:
                    texts.append(((proc / str(p.pid) / rel).read_text(), udp))
                except FileNotFoundError:  # no IPv6 in it, or the node is gone (so is its namespace)
                    continue
    out: Leftovers = {}
    for dev, n in sorted(parse_backlog(tc_json).items()):
        if n > 0 and (dev in p.devices or (p.prefixed and dev.startswith(naming.PREFIX))):
            out[f"{p.name}:{dev}"] = Left(n, f"{n} B queued")
    flows = [x for text, udp in texts for x in parse_sockets(text, udp, ignore)]
    if flows:
        out[p.name] = Left(sum(f.bytes for f in flows), "; ".join(f.what for f in flows[:4])
                           + (f" (+{len(flows) - 4} more)" if len(flows) > 4 else ""))  # fmt: skip
    return out


def linkem_sockets(lab: RunningLab) -> list[tuple[str, Path]]:
    """The control sockets of the lab's link emulators: this process's (a Lab), or those in each emulated testbed
    host's keeper's state directory (a lab over hosts)."""
    return list(lab.linkem_sockets())


def read_linkems(sockets: Iterable[tuple[str, Path]]) -> Leftovers:
    """Packets the link emulators hold (the fallback backend's delay queue), asked on their control sockets."""
    out: Leftovers = {}
    for name, path in sockets:
        if held := held_packets(path, READ_TIMEOUT_SECONDS):
            out[f"linkem {name}"] = Left(*held_entry(held))
    return out


def read_lab(where: list[Place], emulators: list[tuple[str, Path]]) -> Leftovers:
    """Every place's leftovers and the emulators'; a place that cannot be read is a leftover too (its namespace
    cannot be shown idle), named with the error."""
    out: Leftovers = {}
    for p in where:
        try:
            out |= read_place(p)
        except (OSError, subprocess.SubprocessError, ValueError, RuntimeError) as exc:
            out[p.name] = Left(0, f"not readable: {type(exc).__name__}: {str(exc)[:200]}")
    return out | read_linkems(emulators)


# -- the bound and the wait ----------------------------------------------------------------------------------------
def link_figures(lab: RunningLab) -> tuple[float, float]:
    """The lab's slowest configured rate (bit/s; UNRATED_BPS when none has one) and the sum of its configured
    one-way delays with 4 jitters (s): every direction, as `configured` has them."""
    imps = [imp for imp, _at in lab.configured.values()]
    rates = [imp.rate for imp in imps if imp.rate]
    delay = sum((imp.delay or 0) + 4 * (imp.jitter or 0) for imp in imps)
    return (min(rates) if rates else UNRATED_BPS), delay


def bound_seconds(first: Leftovers, slowest_bps: float, delays: float) -> float:
    """How long what was found may take to leave: its bytes at the slowest rate, the path's delays (a last
    segment, a FIN and its ACK cross it), a margin; at least MIN_BOUND_SECONDS."""
    queued = sum(x.bytes for x in first.values())
    return max(MIN_BOUND_SECONDS, queued * 8 / slowest_bps + delays + MARGIN_SECONDS)


@dataclass
class Probe:
    """One kind of leftover: how to read it and its bound from what the first read found."""

    kind: str
    read: Callable[[], Leftovers]
    bound: Callable[[Leftovers], float]


def wait(
    probes: list[Probe],
    say: Callable[[str], None] = print,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, dict[str, Any]]:
    """Read every probe until each finds nothing or its bound has passed. Per kind: waited_seconds (until it found
    nothing, or the bound), bound_seconds, found (what the first read found: place -> what) and left (what was
    still there at the bound; empty when clean)."""
    t0 = clock()
    rec: dict[str, dict[str, Any]] = {}
    pending = list(probes)
    said = False
    while pending:
        waited = clock() - t0
        for pr in list(pending):
            now = pr.read()
            r = rec.setdefault(pr.kind, {"found": _text(now), "bound_seconds": round(pr.bound(now), 3)})
            if not now or waited >= r["bound_seconds"]:
                r |= {"waited_seconds": round(waited, 3), "left": _text(now)}
                pending.remove(pr)
        if not pending:
            break
        if not said and waited >= SAY_AFTER_SECONDS:
            what = "; ".join(f"{p.kind}: {', '.join(sorted(rec[p.kind]['found']))[:200]}" for p in pending)
            say(f"  waiting for the last measurement's traffic to leave the lab ({what})")
            said = True
        sleep(POLL_SECONDS)
    if said:
        say("  lab idle after " + ", ".join(f"{k} {r['waited_seconds']:.1f}s" for k, r in rec.items()))
    return rec


def _text(left: Leftovers) -> dict[str, str]:
    return {k: v.what for k, v in sorted(left.items())}


def probes(lab: RunningLab) -> list[Probe]:
    """The three kinds for a lab: queues and flows (one read of every place), and fragments."""
    where, emulators = places(lab), linkem_sockets(lab)
    slowest, delays = link_figures(lab)
    pids = {name: n.pid for name, n in lab.nodes.items() if n.pid}
    return [
        Probe(
            "traffic",
            lambda: read_lab(where, emulators) | _remote_held(lab),
            lambda first: bound_seconds(first, slowest, delays),
        ),
        Probe("fragments", lambda: _fragments(pids), lambda _first: reassembly.BOUND_SECONDS),
    ]


def _remote_held(lab: RunningLab) -> Leftovers:
    """What the link emulators on hosts reached over SSH hold (a lab over hosts: its keepers asked)."""
    return {f"linkem {k}": Left(n, what) for k, (n, what) in lab.remote_held().items()}


def _fragments(pids: dict[str, int]) -> Leftovers:
    return {name: Left(n, f"{n} B of IP fragments") for name, pid in pids.items() if (n := reassembly.held_bytes(pid))}


def describe(rec: dict[str, dict[str, Any]]) -> list[str]:
    """The reasons a measurement whose wait ended with something left is not clean: one per kind."""
    out = []
    for kind, r in rec.items():
        if r.get("left"):
            what = "; ".join(f"{k}: {v}" for k, v in r["left"].items())
            out.append(f"the lab was not idle {r['bound_seconds']:.1f}s after the last measurement ({kind}): {what}")
    return out
