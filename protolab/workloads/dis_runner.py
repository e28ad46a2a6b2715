"""Running a dis task: the receiver (calibration, joins) first, then the sender; both report JSON at the end.

The kernel allows 20 multicast memberships per socket by default (net.ipv4.igmp_max_memberships, per network
namespace); for more joined groups the limit is raised in the receiver's namespace from the host (nsenter),
else the receiver spreads its joins over more sockets.

Both processes serve their metrics (protolab_messages_*_total, protolab_message_delay_seconds, protolab_dis_*) on
the management network while they run: the receiver on naming.DIS_PORT, the sender on naming.DIS_PORT + 1;
`scrape_ports()` tells the orchestrator which targets to add to Prometheus (for the whole lab: Prometheus takes
up new targets only every 5 s, longer than a short sender lives).

The receive window follows the sender: the receiver writes its pid into the ready file, and when the sender's
process has ended it is sent SIGUSR1 and drains for TAIL seconds more (its --duration is only the cap for a runner
that never signals), so a sender that starts late (a slow `docker exec`) cannot outlast a window fixed in advance.
Once the receiver has joined, the lab's NIC filter model is brought up to its joins (Lab.sync_nic_filters) before
the sender starts: a real NIC is programmed as its host joins, while the model's poll lagged the join by up to
100 ms and dropped the stream's first PDUs at the bridge port (seen as kfree_skb TC_EGRESS drops at the start).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Any

from .. import naming
from ..shell import run as sh
from .base import LabAPI, WorkloadError, WorkloadRunner, json_report
from .dis import COLUMNS, DisTask

# $1 the CPU mask, then the interfaces (arguments, never code): each one's receive queues steered to the mask
RPS_SCRIPT = ('mask=$1; shift; mount -t sysfs sysfs /sys && mount -o remount,rw /sys || exit 1; rc=0; '
              'for i; do for f in /sys/class/net/"$i"/queues/rx-*/rps_cpus; do echo "$mask" > "$f" || rc=1; done; '
              'done; mount -o remount,ro /sys; exit $rc')  # fmt: skip

TAIL = 1.0  # the receiver listens this long after the sender has ended (its in-flight datagrams)
CAP_MARGIN = 30.0  # the receiver's own end when nobody signals it: this long after duration + TAIL
RECV_METRICS_PORT = naming.DIS_PORT
EXTRA_WORK_ENV = "PROTOLAB_TEST_EXTRA_WORK"  # passed on to the receiver: hashing rounds per accepted PDU
SEND_METRICS_PORT = naming.DIS_PORT + 1

log = logging.getLogger(__name__)


class DisRunner(WorkloadRunner[DisTask]):
    def __init__(self, task: DisTask, lab: LabAPI) -> None:
        super().__init__(task, lab)
        self.ready = f"/tmp/protolab-dishost-{task.name}.ready"
        self._recv_out: tuple[int, str, str] | None = None
        self._thread: threading.Thread | None = None
        self.receiver_pid: int | None = None  # from the ready file, for the end-of-send signal
        self.sender_report: dict[str, Any] = {}
        self.receiver_report: dict[str, Any] = {}
        self.rps_mask: str | None = None
        self.extra_work: str | None = None  # the test-only slowdown, when set

    @property
    def loopback(self) -> bool:
        return self.task.sender == self.task.receiver

    def _steer_receive(self) -> None:
        """RPS on the receiver's data interfaces: their kernel receive work on the pinned CPU, or off (mask 0).

        A sysfs mounted in a private mount namespace inside the node's network namespace shows that namespace's
        interfaces. It is the superblock of the container's /sys, which Docker made read-only: made writable for
        the write and read-only again (the container's own mount stays read-only throughout)."""
        t = self.task
        mask = format(1 << t.cpu, "x") if t.cpu is not None else "0"
        intfs = self.lab.data_interfaces(t.receiver)
        pid = str(self.lab.nodes[t.receiver].pid)
        sh(["nsenter", "-t", pid, "-n", "unshare", "-m", "sh", "-c", RPS_SCRIPT, "sh", mask, *intfs])
        self.rps_mask = mask

    def scrape_ports(self) -> dict[str, list[int]]:
        """Prometheus targets of this task's processes while it runs: node -> ports."""
        return self.task.scrape_ports()

    def _common(self) -> list[str]:
        t = self.task
        syntax = ["--syntax", t.syntax] if t.syntax != "raw" else []
        return ["--groups", str(t.groups), "--per-group", str(t.messages_per_group), "--port", str(t.port), *syntax]

    def prepare(self) -> None:
        t = self.task
        if self.lab.nodes[t.receiver].pid is None:
            raise WorkloadError(f"dis task {t.name}: its receiver {t.receiver} is on a testbed host with a kernel of "
                                "its own, and its receive steering and CPU are read by its pid on this machine: not "
                                "built for such a host")  # fmt: skip
        if t.joined > 20 and not self.loopback:
            pid = self.lab.nodes[t.receiver].pid
            sh(["nsenter", "-t", str(pid), "-n", "sysctl", "-qw", f"net.ipv4.igmp_max_memberships={t.joined + 16}"],
               check=False)  # fmt: skip
        if not self.loopback:
            self._steer_receive()
        self.lab.exec(t.receiver, ["rm", "-f", self.ready])
        cmd = ["protolab-dishost", "recv", *self._common(), "--share", f"{t.share:g}",
               "--duration", f"{t.duration + TAIL + CAP_MARGIN:g}s", "--drain", f"{TAIL:g}s",
               "--ready-file", self.ready, "--listen", f":{RECV_METRICS_PORT}"]  # fmt: skip
        if self.loopback:
            cmd += ["--local"]
        if t.busy_loop:
            cmd += ["--work", "--calibrate", f"{t.calibrate:g}s"]
        if t.cpu is not None:
            cmd = ["taskset", "-c", str(t.cpu), *cmd]
        if extra := os.environ.get(EXTRA_WORK_ENV):  # test-only: a known slowdown (see protolab-dishost)
            cmd = ["env", f"{EXTRA_WORK_ENV}={extra}", *cmd]
            self.extra_work = extra

        def receive() -> None:
            self._recv_out = self.lab.exec(t.receiver, cmd)

        self._thread = threading.Thread(target=receive, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + t.calibrate + 30
        if t.busy_loop:
            # No polling while the loop calibrates: each `docker exec` runs in the receiver's cgroup and on
            # its CPU, and would be counted against the loop's baseline.
            time.sleep(t.calibrate + 0.2)
        while time.monotonic() < deadline:
            if self._recv_out is not None:
                code, out, err = self._recv_out
                raise WorkloadError(f"dis task {t.name}: receiver on {t.receiver} exited {code}: {(err or out)[-300:]}")
            code, out, _ = self.lab.exec(t.receiver, ["cat", self.ready])
            if code == 0 and out.strip().isdigit():  # the pid, once the file is written whole
                self.receiver_pid = int(out)
                self.lab.sync_nic_filters()  # the joins in the NIC filters' model before the first PDU
                return
            time.sleep(0.1)
        raise WorkloadError(f"dis task {t.name}: receiver on {t.receiver} did not join its groups in time")

    def run(self) -> None:
        t = self.task
        cmd = ["protolab-dishost", "send", *self._common(), "--rate", f"{t.messages_per_second:g}",
               "--arrival", t.arrival, "--entities", str(t.entities), "--duration", f"{t.duration:g}s",
               "--listen", f":{SEND_METRICS_PORT}"]  # fmt: skip
        if t.size is not None:
            cmd += ["--size", str(int(t.size))]
        if t.mix:
            cmd += ["--mix", t.mix]
        if t.articulations:
            cmd += ["--articulations", str(t.articulations)]
        if not t.heartbeat:
            cmd += ["--heartbeat=false"]
        if self.loopback:
            cmd += ["--dest", "127.0.0.1"]
        try:
            code, out, err = self.lab.exec(t.sender, cmd)
        finally:
            self._sender_done()
        self.sender_report = json_report(out, f"dis sender {t.name} on {t.sender}", code, err)
        assert self._thread is not None
        self._thread.join(timeout=TAIL + 30)
        if self._recv_out is None:
            raise WorkloadError(f"dis task {t.name}: receiver on {t.receiver} did not finish")
        code, out, err = self._recv_out
        self.receiver_report = json_report(out, f"dis receiver {t.name} on {t.receiver}", code, err)
        if where := missing_where(self.sender_report, self.receiver_report, self.loopback):
            log.warning("dis task %s: %s", t.name, where)

    def _sender_done(self) -> None:
        """Tell the receiver the sender has ended: it drains TAIL seconds more, then reports."""
        if self.receiver_pid is None or (self._recv_out is not None):
            return
        code, _, err = self.lab.exec(self.task.receiver, ["kill", "-USR1", str(self.receiver_pid)])
        if code != 0 and self._recv_out is None:
            log.warning("dis task %s: could not signal its receiver (pid %s) on %s: %s; it ends at its cap",
                        self.task.name, self.receiver_pid, self.task.receiver, err.strip())  # fmt: skip

    def raw(self) -> dict[str, Any]:
        out = {"sender": self.sender_report, "receiver": self.receiver_report}
        return out | ({"test_extra_work_rounds": self.extra_work} if self.extra_work else {})

    def result(self) -> dict[str, float | None]:
        return columns(self.task, self.sender_report, self.receiver_report, self.loopback)


def _ratio(a: Any, b: Any) -> float | None:
    return float(a) / float(b) if a is not None and b else None


def expected_and_got(sent: dict[str, Any], recv: dict[str, Any], loopback: bool) -> tuple[int, int]:
    """PDUs sent to the groups the receiver joined (over the loopback: all), and PDUs it received."""
    by_group = sent.get("sent_by_group") or []
    joined = len(by_group) if loopback else int(recv.get("joined_groups") or 0)
    return sum(by_group[:joined]), int(recv.get("messages") or 0)


def missing_where(sent: dict[str, Any], recv: dict[str, Any], loopback: bool) -> str | None:
    """When PDUs are missing, where: the receiver's first and last arrival against the sender's first and last send
    (a gap at an edge against one inside the stream), its window, and what the kernel dropped before its socket."""
    expected, got = expected_and_got(sent, recv, loopback)
    if got >= expected:
        return None
    msg = f"{expected - got} of {expected} PDUs missing"
    try:
        pairs = (
            ("first", "arrival_first_unix", "send_first_unix"),
            ("last", "arrival_last_unix", "send_last_unix"),
            ("start", "listen_start_unix", "send_first_unix"),
            ("end", "listen_end_unix", "send_last_unix"),
        )
        ms = {k: (recv[a] - sent[b]) * 1e3 for k, a, b in pairs}
        msg += (f"; first arrival {ms['first']:+.1f} ms from the first send, last arrival {ms['last']:+.1f} ms "
                f"from the last; the receiver listened from {ms['start']:+.0f} ms to {ms['end']:+.0f} ms "
                "around them")  # fmt: skip
    except (KeyError, TypeError):
        msg += "; no send/arrival times in the reports"
    if (drops := recv.get("kernel_udp_in_errors")) is not None:
        msg += f"; the receiver's namespace dropped {drops:g} UDP datagram(s) before a socket read them"
        msg += f" ({recv.get('kernel_udp_rcvbuf_errors', 0):g} for a full receive buffer)"
    if fails := recv.get("kernel_ip_reasm_fails"):
        msg += (f"; IP reassembly failed {fails:g} time(s) there ({recv.get('kernel_ip_reasm_reqds', 0):g} fragments "
                f"in, {recv.get('kernel_ip_reasm_oks', 0):g} datagrams reassembled, "
                f"{recv.get('kernel_ip_reasm_timeouts', 0):g} expired incomplete)")  # fmt: skip
    return msg


def columns(t: DisTask, sent: dict[str, Any], recv: dict[str, Any], loopback: bool) -> dict[str, float | None]:
    """The task's tidy columns from the two JSON summaries."""
    expected, got = expected_and_got(sent, recv, loopback)
    lost = max(0, expected - got)
    secs = sent.get("elapsed_seconds") or t.duration
    vals: dict[str, float | None] = {
        "messages_per_second": got / secs,
        "packets_per_second": int(recv.get("packets") or 0) / secs,
        "sent_packets_per_second": sent.get("packets_per_second"),
        "loss_ratio": lost / expected if expected else None,
        "sent_total": expected,
        "lost_total": lost,
        "delay_p50_seconds": recv.get("delay_p50_seconds"),
        "delay_p99_seconds": recv.get("delay_p99_seconds"),
        "delay_mean_seconds": recv.get("delay_mean_seconds"),
        "delay_sd_seconds": recv.get("delay_sd_seconds"),
        "delay_ci99_seconds": recv.get("delay_ci99_seconds"),
        "delay_cov_ratio": _ratio(recv.get("delay_sd_seconds"), recv.get("delay_mean_seconds")),
        "message_bytes": _ratio(sent.get("sent_bytes"), sent.get("sent_packets")),
        "encode_mean_seconds": sent.get("encode_mean_seconds"),
        "decode_mean_seconds": recv.get("decode_mean_seconds"),
        "skinny_match_ratio": recv.get("skinny_match_ratio"),
        "pdu_integers": recv.get("pdu_integers"),
        "pdu_reals": recv.get("pdu_reals"),
        "pdu_octet_strings": recv.get("pdu_octet_strings"),
        "dropped_total": sum((recv.get("dropped") or {}).values()),
        "kernel_drops_total": recv.get("kernel_udp_in_errors"),
        "reasm_fails_total": recv.get("kernel_ip_reasm_fails"),
        "cpu_cgroup_ratio": recv.get("cpu_cgroup_ratio"),
        "cpu_busyloop_ratio": recv.get("cpu_busyloop_ratio"),
        "cpu_cgroup_idle_ratio": recv.get("cpu_cgroup_idle_ratio"),
        "cpu_busyloop_noise_ratio": recv.get("cpu_busyloop_noise_ratio"),
    }
    assert set(vals) == set(COLUMNS)
    return {f"{t.name}_{k}": v for k, v in vals.items()}
