"""The wait for idle links before a measurement (protolab.lab.quiesce), on output captured (fixtures/quiesce) from a
deployed triangle during a TCP transfer (`tc -s -j qdisc show` in r1's and the root namespace, /proc/<pid>/net/* of
h1) and from two namespaces joined by a veth shaped at 1 Mbit/s (HTB, pfifo of 100) whose TCP sender was SIGKILLed
mid-transfer (the qdisc's backlog while sending; its socket after: FIN-WAIT-1 with 1.2 MB still to send), and a
fake clock; the kernel side is in the integration test test_clean_start."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from protolab.lab import quiesce
from protolab.lab.quiesce import Left, Place, Probe

from .fakeclock import Clock

FX = Path(__file__).parent / "fixtures" / "quiesce"
H1_MGMT = "172.23.0.3"


def fx(name: str) -> str:
    return (FX / name).read_text()


# -- readers ---------------------------------------------------------------------------------------------------
def test_backlog_is_each_devices_largest_qdisc_backlog():
    idle = quiesce.parse_backlog(fx("tc_qdisc_r1.json"))
    assert idle == {"lo": 0, "eth0": 0, "r1-eth0": 0, "r1-eth1": 0}
    busy = quiesce.parse_backlog(fx("tc_qdisc_htb_busy.json"))  # HTB root and its pfifo both count the queue
    assert busy == {"lo": 0, "va": 136350}
    root = quiesce.parse_backlog(fx("tc_qdisc_root.json"))  # a device with several qdiscs (root + ingress)
    assert root["plab-lan-ifb"] == 0 and "plab-lan-eth1" in root
    assert quiesce.parse_backlog("") == {}


def test_sockets_still_connected_or_sending_are_flows_off_the_management_address():
    flows = quiesce.parse_sockets(fx("proc_net_tcp_h1.txt"), udp=False, ignore={"127.0.0.1", "::1", H1_MGMT})
    # the iperf3 control connection (ESTAB, nothing to send) and its data connection (137,560 B to send); the
    # listener on 127.0.0.11 (Docker's resolver) is not a flow
    assert [f.bytes for f in flows] == [0, 137560], flows
    assert flows[1].what == "TCP 10.0.1.1:16428 -> 10.0.3.2:5201 ESTAB, 137560 B to send"
    # the management address's own connections (Prometheus scraping the agent) are not the lab's
    assert quiesce.parse_sockets(fx("proc_net_tcp_h1.txt"), udp=False, ignore={"10.0.1.1"}) == []
    assert quiesce.parse_sockets(fx("proc_net_tcp6_h1.txt"), udp=False, ignore=set()) == []  # a listener only
    assert quiesce.parse_sockets(fx("proc_net_udp_h1.txt"), udp=True, ignore=set()) == []  # nothing to send


def test_a_closed_socket_still_sending_is_a_flow():
    orphan = fx("proc_net_tcp_orphan.txt")  # its process killed: the kernel still sends what it had written
    (flow,) = quiesce.parse_sockets(orphan, udp=False, ignore={"127.0.0.1"})
    assert flow == Left(1216321, "TCP 10.9.0.1:41352 -> 10.9.0.2:5201 FIN-WAIT-1, 1216321 B to send"), flow


def test_ipv6_addresses_are_read_word_by_word():
    # fd00:10:0:1::1 as the kernel prints it: four 32-bit words, each in host (little-endian) order
    assert quiesce._address("100000FD010000000000000001000000") == "fd00:10:0:1::1"
    assert quiesce._address("0101000A") == "10.0.1.1"
    # the agent's dual-stack listener answering Prometheus: ::ffff:192.168.0.3, the node's management address
    assert quiesce._address("0000000000000000FFFF00000300A8C0") == "192.168.0.3"


def test_held_packets_are_summed_over_the_emulators_links():
    text = (
        "# HELP protolab_linkem_held_packets packets held now\n# TYPE protolab_linkem_held_packets gauge\n"
        'protolab_linkem_held_packets{link="r1-eth1>r2-eth0"} 17\nprotolab_linkem_held_total 3\n'
    )
    assert quiesce.parse_held_packets(text) == 17


def test_a_place_reads_only_the_labs_devices_and_its_nodes_sockets(tmp_path: Path):
    (tmp_path / "7" / "net").mkdir(parents=True)
    (tmp_path / "7" / "net" / "tcp").write_text(fx("proc_net_tcp_h1.txt"))
    node = Place("r1", 7, True, {"r1-eth0", "va"}, mgmt_ip=H1_MGMT)
    seen: list[list[str]] = []

    def run(cmd: list[str]) -> str:
        seen.append(cmd)
        return fx("tc_qdisc_htb_busy.json")

    left = quiesce.read_place(node, tmp_path, run)
    assert seen == [["nsenter", "-t", "7", "-n", "tc", "-s", "-j", "qdisc", "show"]]
    assert set(left) == {"r1:va", "r1"} and left["r1"].bytes == 137560, left
    assert left["r1:va"] == Left(136350, "136350 B queued")
    # the host side: the lab's devices and every plab-* device (a hub's IFB), not Docker's
    host = Place("host", None, False, {"plab-lan-eth1"}, prefixed=True)
    root = json.loads(fx("tc_qdisc_root.json"))
    assert quiesce.read_place(host, tmp_path, lambda _cmd: json.dumps(root)) == {}
    for q in root:
        if q["dev"] in ("eth0", "plab-lan-ifb"):
            q["backlog"] = 3028
    left = quiesce.read_place(host, tmp_path, lambda _cmd: json.dumps(root))
    assert left == {"host:plab-lan-ifb": Left(3028, "3028 B queued")}, left


def test_a_node_on_a_host_of_its_own_is_read_through_its_shell():
    scripts: list[str] = []
    sep = quiesce._SEP

    def shell(script: str) -> str:
        scripts.append(script)
        return f"{fx('tc_qdisc_htb_busy.json')}\n{sep}\n{fx('proc_net_tcp_h1.txt')}\n{sep}\n\n{sep}\n\n{sep}\n"

    left = quiesce.read_place(Place("r1", None, True, {"va"}, mgmt_ip=H1_MGMT, shell=shell))
    assert set(left) == {"r1:va", "r1"}
    assert scripts[0].startswith("tc -s -j qdisc show ; echo ") and "cat /proc/net/tcp6" in scripts[0]


# -- the bound and the wait --------------------------------------------------------------------------------------
def test_the_bound_is_what_was_found_at_the_slowest_rate_plus_the_delays():
    found = {"r1:r1-eth1": Left(100_000, ""), "h1": Left(93_000, "")}
    # 193 kB at 1544 kbit/s is 1.0 s; the triangle's two 135 ms; a second's margin
    assert quiesce.bound_seconds(found, 1.544e6, 0.27) == pytest.approx(193_000 * 8 / 1.544e6 + 0.27 + 1.0)
    assert quiesce.bound_seconds({}, 1e9, 0.0) == quiesce.MIN_BOUND_SECONDS


def _probe(kind: str, clock: Clock, until: float, bound: float = 5.0, nbytes: int = 1000) -> Probe:
    def read() -> dict[str, Left]:
        return {"r1:r1-eth1": Left(nbytes, f"{nbytes} B queued")} if clock.t - 100.0 < until else {}

    return Probe(kind, read, lambda _first: bound)


def test_an_idle_lab_passes_at_once_and_silently():
    clock, said = Clock(), []
    rec = quiesce.wait([_probe("traffic", clock, 0)], said.append, clock.now, clock.sleep)
    assert rec == {"traffic": {"found": {}, "bound_seconds": 5.0, "waited_seconds": 0.0, "left": {}}}
    assert said == [] and clock.t == 100.0


def test_a_queue_that_drains_is_waited_for_and_the_wait_recorded():
    clock, said = Clock(), []
    rec = quiesce.wait([_probe("traffic", clock, 1.5), _probe("fragments", clock, 0, 35)], said.append, clock.now,
                       clock.sleep)  # fmt: skip
    t = rec["traffic"]
    assert t["found"] == {"r1:r1-eth1": "1000 B queued"} and t["left"] == {}
    assert 1.5 <= t["waited_seconds"] < 1.5 + 2 * quiesce.POLL_SECONDS, t
    assert rec["fragments"]["waited_seconds"] == 0.0 and quiesce.describe(rec) == []
    assert said[0].startswith("  waiting for the last measurement's traffic") and "r1:r1-eth1" in said[0]
    assert said[-1].startswith("  lab idle after traffic 1.")


def test_what_is_left_at_the_bound_invalidates_naming_the_device():
    clock = Clock()
    rec = quiesce.wait([_probe("traffic", clock, 60, bound=3.0)], lambda _l: None, clock.now, clock.sleep)
    t = rec["traffic"]
    assert t["left"] == {"r1:r1-eth1": "1000 B queued"} and 3.0 <= t["waited_seconds"] < 3.2, t
    (reason,) = quiesce.describe(rec)
    assert reason == "the lab was not idle 3.0s after the last measurement (traffic): r1:r1-eth1: 1000 B queued"


def test_each_kind_has_its_own_bound():
    clock = Clock()
    rec = quiesce.wait([_probe("traffic", clock, 60, bound=2.0), _probe("fragments", clock, 10, bound=35.0)],
                       lambda _l: None, clock.now, clock.sleep)  # fmt: skip
    assert rec["traffic"]["left"] and rec["traffic"]["waited_seconds"] < 2.2
    assert rec["fragments"]["left"] == {} and 10.0 <= rec["fragments"]["waited_seconds"] < 10.2


# -- a lab's places and figures ------------------------------------------------------------------------------------
class FakeLab:
    """What quiesce reads of a Lab: nodes, their data interfaces, its link ends and configured directions."""

    def __init__(self) -> None:
        from protolab.lab import NodeRuntime
        from protolab.lab.impair import Endpoint
        from protolab.model.impairment import Impairment

        self.nodes = {"h1": NodeRuntime("h1", "host", "img", pid=11, mgmt_ip="172.23.0.3"),
                      "h2": NodeRuntime("h2", "host", "img", pid=12, mgmt_ip="172.23.0.4")}  # fmt: skip
        self.ends = [("h1", Endpoint("h1-eth0", 11)), ("s1", Endpoint("plab-s1-eth1")),
                     ("h2", Endpoint("h2-eth0", 12)), ("s1", Endpoint("plab-s1-eth2"))]  # fmt: skip
        slow = Impairment.model_validate({"rate": "64kbit", "delay": "270ms"})
        self.configured = {("h1", "s1"): (slow, "sender"), ("s1", "h2"): (Impairment(), "sender"),
                           ("h2", "s1"): (Impairment.model_validate({"rate": "10Mbit"}), "receiver")}  # fmt: skip

    def data_interfaces(self, node: str) -> list[str]:
        return [f"{node}-eth0"]

    def ends_here(self) -> list:
        return self.ends

    def namespace_host(self, pid: int | None) -> None:
        return None


def test_a_labs_places_are_its_nodes_and_the_host_side():
    where = {p.name: p for p in quiesce.places(FakeLab())}
    assert set(where) == {"h1", "h2", "host"}
    h1 = where["h1"]
    assert (h1.pid, h1.node, h1.devices, h1.mgmt_ip) == (11, True, {"h1-eth0", "h1-eth0i"}, "172.23.0.3")
    host = where["host"]
    assert host.pid is None and not host.node and host.prefixed
    assert {"plab-s1-eth1", "plab-s1-eth2"} <= host.devices  # and their IFBs (plab-i<hash>)


def test_the_labs_figures_are_its_slowest_rate_and_its_delays():
    slowest, delays = quiesce.link_figures(FakeLab())
    assert slowest == 64e3 and delays == pytest.approx(0.27)


def test_held_packets_are_asked_on_each_emulators_control_socket(tmp_path: Path):
    import http.server
    import socketserver
    import threading

    metrics = 'protolab_linkem_held_packets{link="h1-eth0>h2-eth0"} 42\n'

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            body = metrics.encode() if self.path == "/metrics" else b""
            self.send_response(200 if body else 404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def address_string(self) -> str:
            return "unix"

        def log_message(self, *_args: object) -> None:
            pass

    path = tmp_path / "q101.sock"
    with socketserver.UnixStreamServer(str(path), Handler) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        left = quiesce.read_linkems([("h1-eth0>h2-eth0", path), ("gone", tmp_path / "q102.sock")])
        server.shutdown()
    # 42 packets, counted as full frames for the bound; an emulator that does not answer is the helpers' watch's
    assert left == {"linkem h1-eth0>h2-eth0": Left(42 * 1514, "42 packets held")}, left


def test_an_emulators_drops_are_read_by_link_and_cause():
    from protolab.lab.impair import parse_drops

    text = (
        '# HELP protolab_linkem_packets_total x\nprotolab_linkem_held_packets{link="r1-eth1>x-eth1"} 4\n'
        'protolab_linkem_kernel_dropped_packets_total{cause="queue_full",link="r1-eth1>x-eth1"} 2\n'
        'protolab_linkem_kernel_dropped_packets_total{cause="socket_full",link="r1-eth1>x-eth1"} 0\n'
        'protolab_linkem_packets_total{action="dropped",link="r1-eth1>x-eth1"} 6\n'
        'protolab_linkem_packets_total{action="passed",link="r1-eth1>x-eth1"} 1386\n'
        'protolab_linkem_packets_total{action="overflow",link="r2-eth0>x-eth2"} 1e+06\n'
    )
    assert parse_drops(text) == {"r1-eth1>x-eth1": {"queue_full": 2, "socket_full": 0, "dropped": 6},
                                 "r2-eth0>x-eth2": {"overflow": 1000000}}  # fmt: skip
