"""Conformance of the impairment backends: the same tests for every backend this machine has.

A backend the kernel lacks (netem without sch_netem) is skipped with the probe's reason.
"""

from __future__ import annotations

import json
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from scipy.stats import binomtest

from protolab import topo
from protolab.lab import Lab, impair
from protolab.model.impairment import Impairment, LinkImpairment
from protolab.workloads.iperf3_runner import HANDSHAKE_ERROR
from protolab.workloads.ping_runner import parse as ping_parse

from .conftest import root_links

pytestmark = pytest.mark.integration
PROBE = impair.probe()


def _backend(name: str) -> impair.Backend:
    ok, why = PROBE[name]
    if not ok:
        pytest.skip(f"{name} backend not available here: {why}")
    return impair.BACKENDS.get(name)


def _lab(backend: impair.Backend, *items: dict) -> Lab:
    t = topo.build("switched", {"hosts": 2, "rate": "10Mbit"})
    imps = [LinkImpairment.model_validate(i) for i in items]
    return Lab(t, "itest", {h.name: "protolab/node:latest" for h in t.hosts}, impairments=imps, backend=backend)


def _udp(lab: Lab, rate: str, length: int, seconds: int) -> dict:
    """iperf3 UDP h1 -> h2; the server's JSON report (packets, lost, bytes received)."""
    for _attempt in range(3):  # iperf3 opens a UDP test with one datagram each way: on a lossy link, lost
        lab.nodes["h2"].container.exec_run(["sh", "-c", "iperf3 -s -1 -J > /tmp/s.json"], detach=True)
        time.sleep(0.4)
        code, _, err = lab.exec("h1", ["iperf3", "-c", "10.0.1.2", "-u", "-b", rate, "-l", str(length), "-t",
                                       str(seconds)])  # fmt: skip
        if HANDSHAKE_ERROR not in err:
            break
        lab.exec("h2", ["pkill", "iperf3"])
    assert code == 0, err
    time.sleep(0.5)
    return json.loads(lab.exec("h2", ["cat", "/tmp/s.json"])[1])["end"]


@pytest.mark.parametrize("name", ["netem", "fallback"])
def test_rate_of_one_direction_overrides_the_link_rate(name, no_leftovers):
    with _lab(_backend(name), {"link": ["h1", "s1"], "direction": "forward", "rate": "4Mbit"}) as lab:
        end = _udp(lab, "8M", 1400, 3)
        goodput = end["sum_received"]["bits_per_second"]
        # 4 Mbit/s on the wire is 4e6 * 1400/1442 of UDP payload
        assert 0.93 * 4e6 * 1400 / 1442 < goodput < 1.03 * 4e6 * 1400 / 1442, goodput
        assert any(a["from"] == "h1" and a["impairment"]["rate"] == "4Mbit" for a in lab.applied)


@pytest.mark.parametrize("name", ["netem", "fallback"])
@pytest.mark.parametrize("link", [["s1", "h2"], ["h1", "s1"]], ids=["switch-to-host", "host-to-switch"])
def test_random_loss_is_inside_the_999_permille_interval(name, link, no_leftovers):
    """A correct backend fails this 1 time in 1000 (the interval's own error rate), not 1 in 100."""
    with _lab(_backend(name), {"link": link, "direction": "forward", "loss": "5%"}) as lab:
        s = _udp(lab, "2M", 200, 3)["sum"]  # ~3700 datagrams
        n, lost = s["packets"], s["lost_packets"]
        ci = binomtest(lost, n).proportion_ci(0.999)
        assert n > 2000 and ci.low <= 0.05 <= ci.high, f"{lost}/{n} lost, 99.9% CI {ci}"


@pytest.mark.parametrize("name", ["netem", "fallback"])
def test_impairment_at_the_receiver_goes_through_an_ifb(name, no_leftovers):
    with _lab(_backend(name), {"link": ["h1", "s1"], "direction": "forward", "rate": "3Mbit", "at": "receiver"}) as lab:
        goodput = _udp(lab, "8M", 1400, 3)["sum_received"]["bits_per_second"]
        assert 0.93 * 3e6 * 1400 / 1442 < goodput < 1.03 * 3e6 * 1400 / 1442, goodput
        assert any(n.startswith("plab-i") for n in root_links())  # the IFB on the bridge port
    assert not any(n.startswith("plab-i") for n in root_links())


def _rtt_ms(lab: Lab, count: int = 10) -> float:
    # -U: user-to-user time; the kernel's receive timestamp precedes a delay emulated where packets arrive
    _, out, _ = lab.exec("h1", ["ping", "-U", "-c", str(count), "-i", "0.1", "10.0.1.2"])
    return float(out.split("=")[-1].split("/")[1])


@pytest.mark.parametrize("name", ["netem", "fallback"])
@pytest.mark.parametrize(
    "link", [["h1", "s1"], ["s1", "h2"], ["s1", "h1"]], ids=["into-switch", "into-host", "into-the-pinger"]
)
def test_delay_and_its_step_change(name, link, no_leftovers):
    with _lab(_backend(name), {"link": link, "direction": "forward", "delay": "20ms"}) as lab:
        assert 19.5 < _rtt_ms(lab) < 22.5
        lab.links.step(tuple(link), "forward", Impairment(delay="50ms"))
        assert 49.5 < _rtt_ms(lab) < 52.5
        assert lab.links.restore() == []
        assert 19.5 < _rtt_ms(lab) < 22.5


def test_fallback_duplication_into_a_switch_port_is_refused_clearly(no_leftovers):
    lab = _lab(_backend("fallback"), {"link": ["h1", "s1"], "direction": "forward", "duplicate": "1%"})
    with pytest.raises(RuntimeError, match="duplication into a switch port"), lab:
        pass


def test_auto_prefers_netem_and_says_why():
    chosen, found = impair.choose("auto")
    assert chosen.name == ("netem" if found["netem"][0] else "fallback")
    assert all(why for _, why in found.values())


def _pings(lab: Lab, count: int, interval: str = "0.004") -> str:
    code, out, err = lab.exec("h1", ["ping", "-U", "-D", "-n", "-c", str(count), "-i", interval, "-W", "2", "10.0.1.2"])
    assert code in (0, 1), err
    return out


@pytest.mark.parametrize("name", ["netem", "fallback"])
def test_gilbert_elliott_loss_has_the_stationary_mean_and_comes_in_bursts(name, no_leftovers):
    """p=1%, r=25%, all lost in the bad state: mean loss p/(p+r) = 3.8%, mean burst 1/r = 4 requests."""
    ge = {"p": "1%", "r": "25%", "loss_bad": "100%"}
    with _lab(_backend(name), {"link": ["h1", "s1"], "direction": "forward", "loss_model": ge}) as lab:
        sent, echoes = ping_parse(_pings(lab, 3000))
    answered = {e.seq for e in echoes}
    lost = [s for s in range(1, sent + 1) if s not in answered]
    runs = sum(1 for s in lost if s - 1 not in lost)
    assert 0.015 < len(lost) / sent < 0.075, f"{len(lost)}/{sent}"
    assert len(lost) / runs > 2.0, f"{len(lost)} lost in {runs} runs: not bursty"


@pytest.mark.parametrize("name", ["netem", "fallback"])
def test_duplication_inside_the_999_permille_interval(name, no_leftovers):
    with _lab(_backend(name), {"link": ["s1", "h2"], "direction": "forward", "duplicate": "10%"}) as lab:
        out = _pings(lab, 1500)
    sent, _ = ping_parse(out)
    dups = out.count("(DUP!)")
    ci = binomtest(dups, sent).proportion_ci(0.999)
    assert ci.low <= 0.10 <= ci.high, f"{dups} duplicates of {sent}, 99.9% CI {ci}"


@pytest.mark.parametrize("name", ["netem", "fallback"])
def test_corruption_is_dropped_by_checksums_at_the_configured_rate(name, no_leftovers):
    with _lab(_backend(name), {"link": ["h1", "s1"], "direction": "forward", "corrupt": "5%"}) as lab:
        sent, echoes = ping_parse(_pings(lab, 1500))
    lost = sent - len(echoes)
    ci = binomtest(lost, sent).proportion_ci(0.999)
    assert ci.low <= 0.05 <= ci.high, f"{lost}/{sent} corrupted requests dropped, 99.9% CI {ci}"


@pytest.mark.parametrize("name", ["netem", "fallback"])
def test_a_dscp_queue_lets_marked_packets_past_a_full_queue(name, no_leftovers):
    """A CUBIC flow h2 -> h1 builds a queue at its path's 10 Mbit/s shaper; echo replies (they keep the request's
    TOS) wait behind it in the unmarked class and skip it when marked EF. The queue is CUBIC's, not the class's
    300-packet limit: HyStart leaves slow start early (ssthresh ~21) and the window then grows ~20 packets per
    0.5 s, so 2-3 s in, 64-96 packets wait (read from the qdisc). Medians measured over 17 runs: unmarked 96-120 ms,
    EF 0.07-0.14 ms; with no queue, replies take ~0.1 ms either way. The bounds sit at half the lowest queued
    median and ~40x the highest EF one: either class in the wrong place is off by a factor of ~1,000."""
    on_path = [{"link": link, "direction": "forward", "queue": "dscp", "limit": 300}
               for link in (["h2", "s1"], ["s1", "h1"])]  # both shapers of the path (both 10 Mbit/s)  # fmt: skip
    with _lab(_backend(name), *on_path) as lab:
        lab.nodes["h1"].container.exec_run(["iperf3", "-s", "-1"], detach=True)
        time.sleep(0.4)
        lab.nodes["h2"].container.exec_run(["iperf3", "-c", "10.0.1.1", "-C", "cubic", "-t", "8"], detach=True)
        time.sleep(2)  # slow start has filled the queue
        rtt = {}
        for tos in ("0x00", "0xb8"):
            out = lab.exec("h1", ["ping", "-D", "-n", "-c", "10", "-i", "0.1", "-Q", tos, "10.0.1.2"])[1]
            answered = [e.rtt for e in ping_parse(out)[1]]
            assert answered, out
            rtt[tos] = sorted(answered)[len(answered) // 2]
        assert rtt["0x00"] > 0.05, rtt  # behind the flow's queue
        assert rtt["0xb8"] < 0.005, rtt  # ahead of it
        print(f"median RTT unmarked {rtt['0x00'] * 1e3:.1f} ms, EF {rtt['0xb8'] * 1e3:.2f} ms")


SAT_RATE = 64e3  # bit/s: a frame takes 190 ms, a merged 10 KB packet sent at once stands out by a second's worth


def _tx(pid: int, intf: str) -> tuple[float, int, int, float]:
    """(time before the read, tx bytes, tx packets, time after it) of `intf` in `pid`'s network namespace."""
    before = time.monotonic()
    for line in open(f"/proc/{pid}/net/dev"):  # noqa: SIM115 (a /proc file, read at once)
        name, _, fields = line.partition(":")
        if name.strip() == intf:
            f = fields.split()
            return before, int(f[8]), int(f[9]), time.monotonic()
    raise AssertionError(f"{intf} not in /proc/{pid}/net/dev")


def _htb_packets(lab: Lab, node: str, intf: str) -> int:
    """Packets the HTB root of `intf` sent (the kernel counts a merged packet as its frames)."""
    out = subprocess.run(["nsenter", "-t", str(lab.nodes[node].pid), "-n", "tc", "-s", "-j", "qdisc", "show", "dev",
                          intf], capture_output=True, text=True, check=True, timeout=10).stdout  # fmt: skip
    return next(q["packets"] for q in json.loads(out) if q["kind"] == "htb")


@pytest.mark.parametrize("name", ["netem", "fallback"])
def test_a_shaped_link_paces_frames_even_when_a_router_merged_them(name, no_leftovers):
    """A TCP flow h1 -> r1 -> r2 -> h2: r1's receiving interface merges the flow's frames (GRO, on at node ends
    for receive CPU), so they meet r1's 64 kbit/s shaper as packets of up to 64 KB. HTB sends a packet while its
    tokens last, so unsplit, 10 KB crossed the link at once (a 20 KB transfer beat the link's rate by 1.5x).
    The link must pace frames: over every span of the transfer of 1 to 3 s, r1 sends at most the rate
    times the span plus its bucket and one frame (HTB's own allowance), and every frame leaves as a packet."""
    backend = _backend(name)
    t = topo.build("satellite", {"hosts": 1, "sat_rate": f"{SAT_RATE / 1e3:.0f}kbit", "delay": "0ms"})
    with Lab(t, "itest", {h.name: "protolab/node:latest" for h in t.hosts}, backend=backend) as lab:
        pid, intf = lab.nodes["r1"].pid, "r1-eth0"  # r1's end of the satellite link (topology's first link)
        lab.nodes["h2"].container.exec_run(["iperf3", "-s", "-1"], detach=True)
        time.sleep(0.4)
        samples = [_tx(pid, intf)]
        htb0 = _htb_packets(lab, "r1", intf)
        with ThreadPoolExecutor(1) as pool:
            client = pool.submit(lab.exec, "h1", ["iperf3", "-c", "10.0.2.1", "-n", "48K"], 30)
            while not client.done():
                samples.append(_tx(pid, intf))
                time.sleep(0.02)
        code, out, err = client.result()
        assert code == 0, out + err
        deadline = time.monotonic() + 15
        while samples[-1][1] != samples[-1 - 50][1]:  # until r1's queue (20 frames, 3.8 s) has left: 1 s idle
            assert time.monotonic() < deadline, "r1 still sending 15 s after the flow ended"
            samples.append(_tx(pid, intf))
            time.sleep(0.02)
        htb1 = _htb_packets(lab, "r1", intf)
    frame = 1514
    worst, at = 0.0, ""
    for i, (before_i, bytes_i, _, _) in enumerate(samples):
        for _, bytes_j, _, after_j in samples[i + 1 :]:
            span = after_j - before_i  # at least the time between the two reads
            if 1.0 <= span <= 3.0:  # a merged packet sent at once stands out; longer spans only dilute it
                allowed = SAT_RATE / 8 * span + 2 * frame
                if (bytes_j - bytes_i) / allowed > worst:
                    worst, at = (bytes_j - bytes_i) / allowed, f"{bytes_j - bytes_i} B in {span:.2f} s"
    assert samples[-1][1] - samples[0][1] > 4 * SAT_RATE / 8, "the flow hardly used the link"
    assert worst <= 1.0, f"r1 sent {at}: {worst:.2f}x what a {SAT_RATE / 1e3:.0f} kbit/s link allows"
    sent = samples[-1][2] - samples[0][2]
    assert sent == htb1 - htb0, f"{htb1 - htb0} frames through the shaper left as {sent} packets"
