"""The backends that apply link impairments, chosen by probing the kernel at run time.

The impairment itself (one direction of one link, at the sender's egress or the receiver's ingress) is
data: protolab.model.impairment. Backends:

- `netem`: HTB for the rate with tc netem as its leaf for delay, jitter, loss (random or
  Gilbert-Elliott), duplication, reordering, corruption and the queue limit. Needs sch_netem.
- `fallback`, for kernels without sch_netem: HTB for the rate, iptables `statistic` for random loss at
  the receiving end (never in the sender's own output path, where a drop is an error, not loss), and
  the userspace link emulator (protolab-linkem on NFQUEUE, where the packets arrive) for delay, jitter,
  Gilbert-Elliott loss, duplication, reordering and corruption.

`probe()` says which backends this machine has and why not; `choose()` picks one ('auto' prefers netem).
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import re
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import monitor, naming
from ..model.impairment import MTU_FRAME_BYTES, Impairment
from ..registry import Registry
from ..shell import CommandError, run
from ..units import format_rate
from .helperproc import HelperProcess


@dataclass(frozen=True)
class Endpoint:
    """An interface and the network namespace it lives in (pid of a process there; None = root). host_side: a
    bridge's interface, in the namespace of the host the lab runs in (root here; a testbed host's namespace,
    entered by its lab keeper's pid, in a lab over several hosts), not in a node's."""

    intf: str
    pid: int | None = None
    host_side: bool = False

    def cmd(self, *args: str) -> list[str]:
        return ["nsenter", "-t", str(self.pid), "-n", *args] if self.pid else list(args)


LOW_RATE_BPS = 1e6  # below it a 10-frame burst is a long time of line rate (15 KB = 1.9 s at 64 kbit/s)


def htb_burst(rate: float) -> int:
    """HTB burst and cburst, bytes: 4 ms of line rate, at least 10 full frames, or one frame below 1 Mbit/s (a
    burst of 15 KB would let a TCP initial window pass a 64 kbit/s shaper at the line rate)."""
    floor = MTU_FRAME_BYTES if rate < LOW_RATE_BPS else 15000
    return max(floor, int(rate / 8 / 250))


def _rate_args(rate: float) -> list[str]:
    burst = htb_burst(rate)
    return ["rate", f"{int(rate)}bit", "ceil", f"{int(rate)}bit", "burst", str(burst), "cburst", str(burst),
            "quantum", str(MTU_FRAME_BYTES)]  # fmt: skip


_ledger: Any = None  # the deploying lab's ownership.Ledger: root-namespace rules are recorded before they are added


def set_ledger(ledger: Any) -> None:
    """Record root-namespace rules in this ledger from now on (None: stop recording)."""
    global _ledger
    _ledger = ledger


IPTABLES = ("iptables", "ip6tables")  # every rule is made for both families: IPv6 is impaired like IPv4


def add_rule(ep: Endpoint, table: str, rule: list[str], insert: bool = False) -> None:
    """`iptables -A` (or `-I`) and the same with ip6tables in ep's namespace; in the root namespace recorded in
    the lab's ledger first (a node's own namespace goes with its container)."""
    for tool in IPTABLES:
        entry = _ledger.add("rule", tool=tool, table=table, rule=rule) if _ledger and ep.pid is None else None
        try:
            run(ep.cmd(tool, "-w", "-t", table, "-I" if insert else "-A", *rule))
        except CommandError:
            if entry:
                _ledger.gone(entry)
            raise


def delete_rule(ep: Endpoint, table: str, rule: list[str], check: bool = True) -> None:
    """`iptables -D` and `ip6tables -D` of a rule add_rule made."""
    for tool in IPTABLES:
        run(ep.cmd(tool, "-w", "-t", table, "-D", *rule), check=check)


def ifb_for(ep: Endpoint) -> Endpoint:
    """The IFB that takes an interface's ingress: `plab-i<hash>` on the host side, `<intf>i` in a node."""
    if ep.pid is None or ep.host_side:
        return Endpoint(f"{naming.PREFIX}i{zlib.crc32(ep.intf.encode()) % 10**6:06d}", ep.pid, host_side=True)
    return Endpoint(f"{ep.intf}i"[:15], ep.pid)


def ingress_device(ep: Endpoint) -> Endpoint:
    """Redirect everything arriving on ep into an IFB, whose egress is then shaped; returns the IFB."""
    ifb = ifb_for(ep)
    redirect_ingress([ep], ifb)
    return ifb


def redirect_ingress(ports: list[Endpoint], ifb: Endpoint) -> None:
    """Create the IFB and redirect everything arriving on each port into it (one queue for all of them)."""
    run(ifb.cmd("ip", "link", "add", "name", ifb.intf, "type", "ifb"))
    run(ifb.cmd("ip", "link", "set", "dev", ifb.intf, "up"))
    for ep in ports:
        run(ep.cmd("tc", "qdisc", "add", "dev", ep.intf, "handle", "ffff:", "ingress"))
        run(ep.cmd("tc", "filter", "add", "dev", ep.intf, "parent", "ffff:", "protocol", "all", "u32", "match", "u32",
                   "0", "0", "action", "mirred", "egress", "redirect", "dev", ifb.intf))  # fmt: skip


class Backend:
    name = ""

    def available(self) -> tuple[bool, str]:
        raise NotImplementedError

    def apply(self, sender: Endpoint, receiver: Endpoint, imp: Impairment, at: str = "sender") -> list[str]:
        """Install imp for packets from sender to receiver; return the commands' descriptions."""
        raise NotImplementedError

    def change(self, sender: Endpoint, receiver: Endpoint, old: Impairment, new: Impairment, at: str) -> bool:
        """Apply a step change in one quick step if this backend can; False: clear and apply instead."""
        return False

    def shape(self, dev: Endpoint, imp: Impairment, leaf: list[str] | None = None) -> None:
        """HTB root with the rate (if any), and a leaf qdisc (netem args, or a pfifo sized for the rate) behind a
        frame splitter (_leaf); with `queue: dscp` two HTB classes under the rate instead, the marked one served
        first (_priority_classes)."""
        run(dev.cmd("tc", "qdisc", "del", "dev", dev.intf, "root"), check=False)
        if imp.queue == "dscp":
            _priority_classes(dev, imp, leaf or ["pfifo", "limit", str(imp.queue_limit())])
            return
        if imp.rate:
            run(dev.cmd("tc", "qdisc", "add", "dev", dev.intf, "root", "handle", "1:", "htb", "default", "1"))
            run(dev.cmd("tc", "class", "add", "dev", dev.intf, "parent", "1:", "classid", "1:1", "htb",
                        *_rate_args(imp.rate)))  # fmt: skip
            parent = ["parent", "1:1"]
        else:
            parent = ["root"]
        if leaf:
            _leaf(dev, parent, "10", leaf)
        elif imp.rate:
            _leaf(dev, parent, "10", ["pfifo", "limit", str(imp.queue_limit())])


SPLIT_RATE = "1tbit"  # the frame splitter's own rate: its one-frame bucket refills in ~12 ns, it holds nothing back
ETHERNET_HEADER_BYTES = 14


def frame_bytes(dev: Endpoint) -> int:
    """The longest frame `dev` sends: its MTU and an Ethernet header, at least MTU_FRAME_BYTES."""
    try:
        links = json.loads(run(dev.cmd("ip", "-j", "link", "show", "dev", dev.intf), timeout=10))
        return max(MTU_FRAME_BYTES, int(links[0]["mtu"]) + ETHERNET_HEADER_BYTES)
    except (CommandError, ValueError, LookupError, TypeError):
        return MTU_FRAME_BYTES


def _leaf(dev: Endpoint, parent: list[str], handle: str, leaf: list[str]) -> None:
    """`leaf` (handle `<handle>:`) under `parent`, behind a frame splitter (handle `f<handle>:`).

    A packet reaches a shaper whole as the kernel built it: a UDP GSO send (QUIC's) of up to 64 KB, or a TCP
    flow's frames merged by GRO at a forwarding node (on under receive_cpu `node`). HTB charges its bytes but
    sends it at once, so a 64 kbit/s link passed 10 KB in one go and a transfer beat the link's rate. The
    splitter is a tbf whose bucket holds one frame at a rate no link has: the kernel cuts any longer packet
    into its frames as it enters (tbf_segment) and queues them in `leaf` one by one, so the rate above paces
    frames, as on a wire. A frame that is not an aggregate is never longer than its bucket."""
    frame = str(frame_bytes(dev))
    split = f"f{handle}"
    run(dev.cmd("tc", "qdisc", "add", "dev", dev.intf, *parent, "handle", f"{split}:", "tbf", "rate", SPLIT_RATE,
                "burst", frame, "limit", frame))  # fmt: skip
    run(dev.cmd("tc", "qdisc", "add", "dev", dev.intf, "parent", f"{split}:1", "handle", f"{handle}:", *leaf))


PRIORITY_DSCP = (46, 48, 56)  # EF, CS6, CS7: what a `queue: dscp` link sends first


def _priority_classes(dev: Endpoint, imp: Impairment, leaf: list[str]) -> None:
    """Strict priority inside the link's rate, from HTB alone (kernels without sch_prio have it): class 1:10
    (prio 0, the whole rate) takes packets whose DS field is in PRIORITY_DSCP (IPv4 TOS or IPv6 traffic class),
    class 1:20 (prio 1, 8 kbit/s assured, borrowing up to the rate) the rest, so marked packets never wait
    behind unmarked ones. Each class has its own `leaf` (a pfifo of `limit` packets, or the link's netem)."""
    if not imp.rate:
        raise ValueError(f"{dev.intf}: a dscp queue needs the direction's rate (a queue builds only behind a shaper)")
    run(dev.cmd("tc", "qdisc", "add", "dev", dev.intf, "root", "handle", "1:", "htb", "default", "20"))
    run(dev.cmd("tc", "class", "add", "dev", dev.intf, "parent", "1:", "classid", "1:1", "htb", *_rate_args(imp.rate)))
    for cls, prio, assured in (("10", "0", imp.rate), ("20", "1", 8000.0)):
        args = _rate_args(imp.rate)
        args[1] = f"{int(assured)}bit"
        run(dev.cmd("tc", "class", "add", "dev", dev.intf, "parent", "1:1", "classid", f"1:{cls}", "htb", *args,
                    "prio", prio))  # fmt: skip
        _leaf(dev, ["parent", f"1:{cls}"], cls, leaf)
    for dscp in PRIORITY_DSCP:
        tos = f"0x{dscp << 2:02x}"
        for prio, proto, match in (("1", "ip", ["ip", "dsfield", tos, "0xfc"]),
                                   ("2", "ipv6", ["ip6", "priority", tos, "0xfc"])):  # fmt: skip
            run(dev.cmd("tc", "filter", "add", "dev", dev.intf, "parent", "1:", "protocol", proto, "prio", prio,
                        "u32", "match", *match, "flowid", "1:10"))  # fmt: skip


LINKEM = Path(__file__).resolve().parents[2] / "images" / "node" / "bin" / "protolab-linkem"
LINKEM_START_TIMEOUT = 10.0  # seconds until its "listening on" line
LINKEM_TAIL_LINES = 50  # last lines of its stderr and of its stdout kept for error messages

log = logging.getLogger(__name__)


def node_of(intf: str) -> str:
    """The node an interface belongs to by its name (`<node>-eth<N>`, a bridge port `plab-<switch>-eth<N>`)."""
    return intf.removeprefix(naming.PREFIX).rsplit("-eth", 1)[0]


def linkem_control_dir() -> Path:
    """The 0700 directory of linkem's control sockets, under the state directory."""
    d = monitor.state_dir() / "linkem"
    d.mkdir(mode=0o700, parents=True, exist_ok=True)
    d.chmod(0o700)
    return d


def parse_held_packets(metrics: str) -> int:
    """protolab-linkem's `protolab_linkem_held_packets` (summed over its links) from its /metrics text."""
    total = 0.0
    for line in metrics.splitlines():
        if line.startswith("protolab_linkem_held_packets"):
            total += float(line.split()[-1])
    return int(total)


def held_entry(n: int) -> tuple[int, str]:
    """What n held packets count as in the idle wait: (bytes, at a full frame each; what)."""
    return n * 1514, f"{n} packets held"


def linkem_metrics(control: Path, timeout: float) -> str | None:
    """The /metrics text of the link emulator on this control socket, None when it does not answer."""
    from .helperproc import UnixHTTPConnection

    conn = UnixHTTPConnection(control, timeout=timeout)
    try:
        conn.request("GET", "/metrics")
        resp = conn.getresponse()
        status, text = resp.status, resp.read().decode(errors="replace")
    except OSError:
        return None
    finally:
        conn.close()
    return text if status == 200 else None


def held_packets(control: Path, timeout: float) -> int:
    """How many packets the link emulator on this control socket holds (0 when it does not answer: the helpers'
    watch names it; it holds nothing it can release)."""
    text = linkem_metrics(control, timeout)
    return parse_held_packets(text) if text is not None else 0


# what a link emulator counts as lost, by cause: its metric's label value -> what the self-check calls it
DROP_CAUSES = {"dropped": "loss model", "overflow": "held-packet limit", "queue_full": "kernel queue full",
               "socket_full": "kernel socket full"}  # fmt: skip
_DROP_LINE = re.compile(r'^protolab_linkem_(?:packets_total|kernel_dropped_packets_total)\{(?:action|cause)="(\w+)",'
                        r'link="([^"]*)"\} (\S+)$', re.M)  # fmt: skip


def parse_drops(metrics: str) -> dict[str, dict[str, int]]:
    """protolab-linkem's losses from its /metrics text: {link: {cause: packets}} for the causes in DROP_CAUSES."""
    out: dict[str, dict[str, int]] = {}
    for cause, link, value in _DROP_LINE.findall(metrics):
        if cause in DROP_CAUSES:
            out.setdefault(link, {})[cause] = int(float(value))
    return out


def linkem_drops(sockets: list[tuple[str, Path]], timeout: float = 2.0) -> dict[str, dict[str, int]]:
    """Every link emulator's losses by cause (parse_drops) over these control sockets; one that does not answer
    is left out."""
    out: dict[str, dict[str, int]] = {}
    for _name, path in sockets:
        if (text := linkem_metrics(path, timeout)) is not None:
            out |= parse_drops(text)
    return out


class Linkem(HelperProcess):
    """One protolab-linkem process emulating one direction where its packets arrive (an NFQUEUE rule)."""

    _running: dict[Endpoint, Linkem] = {}
    _queues = itertools.count(101)  # NFQUEUE numbers; next() is atomic under the GIL

    def __init__(self, receiver: Endpoint, name: str, imp: Impairment) -> None:
        if not LINKEM.exists():
            raise RuntimeError(f"{LINKEM} is missing: run `make images` (it builds the userspace link emulator)")
        self.receiver, self.name = receiver, name
        self.serves = f"the link into node {node_of(receiver.intf)}"
        self.queue = next(Linkem._queues)
        args = [str(LINKEM), "--queue", str(self.queue), "--name", name, "--log-level", "warn"]
        if receiver.pid:  # else it works in the root namespace, where it runs
            args += ["--netns", f"/proc/{receiver.pid}/ns/net"]
        for k, v in self.config(imp).items():
            args += [f"--{k}", v]
        env = {**os.environ, naming.PROCESS_ENV: f"linkem-{name}", "PROTOLAB_RUN": _ledger.run_id if _ledger else ""}
        # /config only on a 0600 unix socket: nobody else on the machine can reconfigure the link
        self.control = linkem_control_dir() / f"{os.getpid()}-q{self.queue}.sock"
        self.control.unlink(missing_ok=True)  # a killed earlier process of this pid's
        args += ["--control", str(self.control)]
        self._start(args, env, f"listening on unix:{self.control}", f"protolab-linkem for {name}",
                    LINKEM_START_TIMEOUT, LINKEM_TAIL_LINES)  # fmt: skip
        match = ["-m", "physdev", "--physdev-in", receiver.intf] if receiver.pid is None else ["-i", receiver.intf]
        self.rule = ["PREROUTING", *match, "-m", "comment", "--comment", naming.IMPAIR_COMMENT, "-j", "NFQUEUE",
                     "--queue-num", str(self.queue), "--queue-bypass"]  # fmt: skip
        # raw, not mangle: before connection tracking. Held in the queue after conntrack, the first packets
        # of a new flow would each make their own unconfirmed entry, all but one dropped (insert_failed).
        try:
            add_rule(receiver, "raw", self.rule)
        except CommandError:
            self._end()  # not left running without its rule
            raise
        Linkem._running[receiver] = self

    @staticmethod
    def config(imp: Impairment) -> dict[str, str]:
        """The emulator's configuration (flag names; its JSON /config takes the same strings)."""
        c: dict[str, str] = {}
        if imp.delay:
            c["delay"] = f"{imp.delay * 1e6:.0f}us"
            if imp.jitter:
                c["jitter"], c["distribution"] = f"{imp.jitter * 1e6:.0f}us", imp.distribution
        if imp.loss:
            c["loss"] = f"{imp.loss * 100:.6g}"
        if imp.loss_model:
            g = imp.loss_model
            c["loss-ge"] = ",".join(f"{x * 100:.6g}" for x in (g.p, g.r, g.loss_bad, g.loss_good))
        for key in ("duplicate", "reorder", "corrupt"):
            if getattr(imp, key):
                c[key] = f"{getattr(imp, key) * 100:.6g}"
        if imp.ber:
            c["ber"] = f"{imp.ber:g}"
        c["limit"] = str(min(imp.queue_limit(), 100000))
        return c

    def put(self, imp: Impairment) -> None:
        body: dict[str, str | int] = dict(self.config(imp))
        body["limit"] = int(body["limit"])  # the one integer field of the emulator's JSON
        status, text = self._request("PUT", "/config", json.dumps(body))
        if status != 200:
            raise RuntimeError(f"protolab-linkem {self.name}: /config refused ({status}): {text[:300]}")

    def stop(self) -> None:
        delete_rule(self.receiver, "raw", self.rule, check=False)
        self._end()
        Linkem._running.pop(self.receiver, None)

    @classmethod
    def at(cls, receiver: Endpoint) -> Linkem | None:
        return cls._running.get(receiver)

    @classmethod
    def stop_all(cls) -> None:
        for lk in list(cls._running.values()):
            lk.stop()


def clear(sender: Endpoint, receiver: Endpoint) -> None:
    """Remove what any backend installed for one direction: qdiscs, the ingress IFB, loss rules, emulator."""
    lk = Linkem.at(receiver)
    if lk:
        lk.stop()
    run(sender.cmd("tc", "qdisc", "del", "dev", sender.intf, "root"), check=False)
    run(receiver.cmd("tc", "qdisc", "del", "dev", receiver.intf, "ingress"), check=False)
    run(receiver.cmd("ip", "link", "del", ifb_for(receiver).intf), check=False)
    for tool in IPTABLES:
        for table in ("mangle", "raw"):
            rules = run(receiver.cmd(tool, "-w", "-t", table, "-S", "PREROUTING"), check=False).splitlines()
            for rule in rules:
                words = rule.split()
                if naming.IMPAIR_COMMENT in words and receiver.intf in words and words[0] == "-A":
                    run(receiver.cmd(tool, "-w", "-t", table, "-D", *words[1:]), check=False)


class NetemBackend(Backend):
    name = "netem"

    def available(self) -> tuple[bool, str]:
        probe = naming.PREFIX + "probe"
        run(["ip", "link", "del", probe], check=False)
        try:
            run(["ip", "link", "add", "name", probe, "type", "ifb"])
        except CommandError as exc:
            return False, f"cannot create a probe device: {exc.stderr.strip()}"
        try:
            run(["tc", "qdisc", "add", "dev", probe, "root", "netem", "delay", "1ms"])
            return True, "sch_netem present"
        except CommandError as exc:
            return False, f"kernel has no sch_netem (tc: {exc.stderr.strip()})"
        finally:
            run(["ip", "link", "del", probe], check=False)

    def apply(self, sender: Endpoint, receiver: Endpoint, imp: Impairment, at: str = "sender") -> list[str]:
        """netem for everything but a bit error rate: netem's `corrupt` is one probability for every packet,
        while a BER makes it depend on the packet's size, so `ber` goes to protolab-linkem where the packets
        arrive (it draws 1-(1-ber)^(8 n) per packet of n bytes)."""
        ber = imp.ber
        if ber:
            imp = imp.model_copy(update={"ber": None})
        dev = sender if at == "sender" else ingress_device(receiver)
        leaf = None if imp.shaping_only() else ["netem", *imp.netem_args()]
        self.shape(dev, imp, leaf)
        done = [f"{dev.intf}: " + (f"htb {format_rate(imp.rate)} " if imp.rate else "") + " ".join(leaf or [])]
        if ber:
            lk = Linkem(receiver, f"{sender.intf}>{receiver.intf}", Impairment(ber=ber))
            done.append(f"{receiver.intf}: protolab-linkem queue {lk.queue} --ber {ber:g}")
        return done

    def change(self, sender: Endpoint, receiver: Endpoint, old: Impairment, new: Impairment, at: str) -> bool:
        if old.rate != new.rate or old.shaping_only() or new.shaping_only() or "dscp" in (old.queue, new.queue):
            return False
        if old.ber or new.ber:
            return False  # the bit errors are linkem's: reapply
        dev = sender if at == "sender" else ifb_for(receiver)
        run(dev.cmd("tc", "qdisc", "change", "dev", dev.intf, "handle", "10:", "netem", *new.netem_args()))
        return True


class FallbackBackend(Backend):
    """Kernel parts that exist everywhere (HTB for rate, iptables statistic for random loss), and the
    userspace link emulator (protolab-linkem on NFQUEUE, where the packets arrive) for the rest."""

    name = "fallback"
    USERSPACE = ("delay", "jitter", "loss_model", "duplicate", "reorder", "corrupt", "ber")

    def available(self) -> tuple[bool, str]:
        for tool in (["tc", "-V"], *([t, "-V"] for t in IPTABLES)):
            try:
                run(tool)
            except CommandError as exc:
                return False, str(exc)
        return True, "HTB + iptables statistic + protolab-linkem (NFQUEUE)"

    def userspace(self, imp: Impairment) -> list[str]:
        return [f for f in self.USERSPACE if getattr(imp, f) not in (None, 0)]

    def apply(self, sender: Endpoint, receiver: Endpoint, imp: Impairment, at: str = "sender") -> list[str]:
        dev = sender if at == "sender" else ingress_device(receiver)
        self.shape(dev, imp)
        done = [f"{dev.intf}: htb {format_rate(imp.rate)}"] if imp.rate else []
        if self.userspace(imp):
            if imp.duplicate and receiver.pid is None:
                raise RuntimeError(
                    f"duplication into a switch port ({receiver.intf}) is not supported by the fallback: its copies "
                    "are injected where packets are delivered; impair the switch-to-host direction instead"
                )
            lk = Linkem(receiver, f"{sender.intf}>{receiver.intf}", imp)
            done.append(f"{receiver.intf}: protolab-linkem queue {lk.queue} " + " ".join(
                f"--{k} {v}" for k, v in Linkem.config(imp).items()))  # fmt: skip
            return done
        if imp.loss:
            add_rule(receiver, "mangle", self._loss_rule(receiver, imp.loss))
            done.append(f"{receiver.intf}: iptables statistic drop {imp.loss:.4%}")
        return done

    @staticmethod
    def _loss_rule(receiver: Endpoint, loss: float) -> list[str]:
        """Loss where the packet arrives: a drop in the sender's own output path is an error, not loss."""
        match = ["-m", "physdev", "--physdev-in", receiver.intf] if receiver.pid is None else ["-i", receiver.intf]
        return ["PREROUTING", *match, "-m", "statistic", "--mode", "random", "--probability", f"{loss:.8f}",
                "-m", "comment", "--comment", naming.IMPAIR_COMMENT, "-j", "DROP"]  # fmt: skip

    def change(self, sender: Endpoint, receiver: Endpoint, old: Impairment, new: Impairment, at: str) -> bool:
        """One quick step: the emulator's /config when it runs and keeps running, or a swap of loss rules."""
        changed = {k for k in Impairment.model_fields if getattr(old, k) != getattr(new, k)}
        lk = Linkem.at(receiver)
        if lk and not changed & {"rate", "queue"} and self.userspace(new):
            lk.put(new)
            return True
        if changed != {"loss"} or self.userspace(new) or self.userspace(old):
            return False
        if new.loss:
            add_rule(receiver, "mangle", self._loss_rule(receiver, new.loss), insert=True)
        if old.loss:
            delete_rule(receiver, "mangle", self._loss_rule(receiver, old.loss))
        return True


BACKENDS: Registry[Backend] = Registry("impairment backend")
for _b in (NetemBackend(), FallbackBackend()):
    BACKENDS.register(_b.name, _b)


def probe() -> dict[str, tuple[bool, str]]:
    """Every backend: (available here, why / why not)."""
    return {name: b.available() for name, b in BACKENDS.items()}


def choose(preference: str = "auto") -> tuple[Backend, dict[str, tuple[bool, str]]]:
    found = probe()
    if preference == "auto":
        for name in ("netem", "fallback"):
            if found[name][0]:
                return BACKENDS.get(name), found
        raise RuntimeError("no impairment backend works here: " + "; ".join(f"{k}: {v[1]}" for k, v in found.items()))
    backend = BACKENDS.get(preference)
    if not found[preference][0]:
        raise RuntimeError(f"impairment backend {preference!r} is not available here: {found[preference][1]}")
    return backend, found
