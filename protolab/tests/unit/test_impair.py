"""Impairment models: units, consistency, netem arguments and queue sizing; linkem's process handling against
a fake one (no root needed)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest
from pydantic import ValidationError

import protolab.lab.impair as impair
from protolab.model.impairment import GilbertElliott, Impairment, LinkImpairment, parse_percent
from protolab.shell import CommandError


def test_percent_needs_its_sign_and_bounds():
    assert parse_percent("1%") == pytest.approx(0.01) and parse_percent(" 0.5 % ") == pytest.approx(0.005)
    for bad in ("1", 1, "150%", "x%"):
        with pytest.raises(ValueError):
            parse_percent(bad)


def test_netem_arguments_carry_units_and_every_impairment():
    imp = Impairment(rate="10Mbit", delay="100ms", jitter="10ms", distribution="pareto", loss="1%",
                     duplicate="0.5%", reorder="25%", corrupt="0.1%")  # fmt: skip
    args = " ".join(imp.netem_args())
    assert "delay 100000us 10000us distribution pareto" in args
    for part in ("loss random 1%", "duplicate 0.5%", "reorder 25%", "corrupt 0.1%", "limit "):
        assert part in args, args


def test_queue_limit_is_sized_from_rate_and_delay():
    # 1 Gbit/s x 270 ms of satellite delay holds ~22,300 full frames; netem's default 1000 would drop
    big = Impairment(rate="1000Mbit", delay="270ms")
    assert big.queue_limit() == pytest.approx(2 * 1e9 * 0.27 / (8 * 1514), rel=0.01)
    assert Impairment(rate="10Mbit", delay="1ms").queue_limit() == 1000
    assert Impairment(limit=50).queue_limit() == 50


def test_gilbert_elliott_stationary_loss_and_netem_form():
    ge = GilbertElliott(p="1%", r="10%", loss_bad="100%", loss_good="0%")
    assert ge.mean_loss() == pytest.approx(0.01 / 0.11)
    args = Impairment(loss_model=ge).netem_args()
    assert args[args.index("gemodel") + 1 : args.index("gemodel") + 5] == ["1%", "10%", "100%", "100%"]


def test_ber_becomes_a_per_packet_probability_by_size():
    imp = Impairment(ber=1e-6)
    assert imp.corrupt_probability(1500) == pytest.approx(1 - (1 - 1e-6) ** 12000)
    assert imp.corrupt_probability(64) < imp.corrupt_probability(1500)


@pytest.mark.parametrize(
    ("fields", "message"),
    [({"loss": "1%", "loss_model": {"p": "1%", "r": "1%"}}, "not both"), ({"jitter": "1ms"}, "jitter needs a delay"),
     ({"reorder": "5%"}, "reorder needs a delay"), ({"corrupt": "1%", "ber": 1e-5}, "not both"),
     ({"delay": 10}, "has no unit"), ({"ber": 0.05}, "less than or equal to 0.01"), ({"ber": 0}, "greater than 0")],
)  # fmt: skip
def test_inconsistent_impairments_are_refused(fields, message):
    with pytest.raises(ValidationError, match=message):
        Impairment.model_validate(fields)


def test_directions_of_a_link_impairment():
    item = LinkImpairment(link=("h1", "s1"), direction="both", loss="1%")
    assert item.directions() == [("h1", "s1"), ("s1", "h1")]
    assert LinkImpairment(link=("h1", "s1"), direction="reverse").directions() == [("s1", "h1")]
    assert item.impairment().loss == pytest.approx(0.01)


# Linkem's process handling, against a fake protolab-linkem (a script) and a fake `run` for iptables.

FAKE_LINKEM = """#!{python}
import os, sys, time
args = sys.argv[1:]
control = args[args.index("--control") + 1]
open(os.environ["FAKE_PIDFILE"], "w").write(str(os.getpid()))
print("listening on unix:" + control, flush=True)
for i in range(int(os.environ.get("FAKE_STDERR_LINES", "0"))):
    print(f"chatty line {{i:05d}} " + "x" * 100, file=sys.stderr, flush=True)
    print(f"stdout line {{i}}", flush=True)
open(os.environ["FAKE_PIDFILE"] + ".done", "w").close()
time.sleep(60)
"""


@pytest.fixture
def fake_linkem(tmp_path, monkeypatch):
    script = tmp_path / "protolab-linkem"
    script.write_text(FAKE_LINKEM.format(python=sys.executable))
    script.chmod(0o755)
    monkeypatch.setattr(impair, "LINKEM", script)
    monkeypatch.setenv("PROTOLAB_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("FAKE_PIDFILE", str(tmp_path / "pid"))
    return tmp_path / "pid"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_linkem_is_stopped_when_its_rule_fails(fake_linkem, monkeypatch):
    def fail_iptables(cmd, check=True, timeout=120, input=None):
        if "iptables" in cmd:
            raise CommandError(cmd, 2, "iptables: No chain/target/match by that name.")
        return ""

    monkeypatch.setattr(impair, "run", fail_iptables)
    with pytest.raises(CommandError, match="No chain"):
        impair.Linkem(impair.Endpoint("h1-eth0"), "s1-eth1>h1-eth0", Impairment(delay="10ms"))
    pid = int(fake_linkem.read_text())
    assert not _alive(pid), "protolab-linkem left running after its NFQUEUE rule failed"
    assert impair.Linkem.at(impair.Endpoint("h1-eth0")) is None
    assert list((fake_linkem.parent / "state" / "linkem").iterdir()) == []
    assert (fake_linkem.parent / "state" / "linkem").stat().st_mode & 0o777 == 0o700


def test_linkem_output_is_drained_and_kept_for_errors(fake_linkem, monkeypatch):
    # 3000 lines of ~120 bytes on each pipe: far beyond a pipe's 64 KiB, so undrained the process would block
    monkeypatch.setenv("FAKE_STDERR_LINES", "3000")
    monkeypatch.setattr(impair, "run", lambda cmd, check=True, timeout=120, input=None: "")
    lk = impair.Linkem(impair.Endpoint("h2-eth0"), "s1-eth2>h2-eth0", Impairment(delay="10ms"))
    try:
        deadline = time.monotonic() + 10
        while not (fake_linkem.parent / "pid.done").exists():
            assert time.monotonic() < deadline, "protolab-linkem blocked writing its output"
            time.sleep(0.05)
        time.sleep(0.2)  # the drains catch up
        assert [len(t) for t in lk.tails.values()] == [impair.LINKEM_TAIL_LINES] * 2
        assert lk.tails["stderr"][-1].startswith("chatty line 02999") and lk.tails["stdout"][-1] == "stdout line 2999"
        with pytest.raises(RuntimeError, match="chatty line 02999"):
            lk.put(Impairment(delay="20ms"))  # nothing listens on the socket: the error carries the tail
    finally:
        lk.stop()
    assert not _alive(int(fake_linkem.read_text()))
    assert not lk.control.exists()


def test_netem_leaves_a_bit_error_rate_to_linkem_which_draws_it_per_packet_size(fake_linkem, monkeypatch):
    cmds: list[list[str]] = []
    monkeypatch.setattr(impair, "run", lambda cmd, check=True, timeout=120, input=None: cmds.append(cmd) or "")
    sender, receiver = impair.Endpoint("r1-eth0"), impair.Endpoint("r2-eth0")
    done = impair.NetemBackend().apply(sender, receiver, Impairment(delay="270ms", ber=1e-5, rate="64kbit"))
    try:
        netem = [c for c in cmds if "netem" in c]
        assert netem and all("corrupt" not in c for c in netem), netem  # one probability for all sizes: not used
        assert "delay" in netem[0] and "270000us" in netem[0]
        assert done[-1].startswith("r2-eth0: protolab-linkem") and done[-1].endswith("--ber 1e-05")
        assert impair.Linkem.at(receiver) is not None
        old, new = Impairment(delay="270ms", ber=1e-5), Impairment(delay="270ms", ber=1e-6)
        assert impair.NetemBackend().change(sender, receiver, old, new, "sender") is False  # reapplied whole
    finally:
        impair.Linkem.stop_all()


@pytest.mark.parametrize(
    ("rate", "burst"),
    [(64e3, 1514), (999e3, 1514), (1e6, 15000), (10e6, 15000), (1e9, 500000)],
)
def test_htb_burst_is_one_frame_on_slow_links_and_ten_frames_or_4ms_from_1_mbit(rate, burst):
    assert impair.htb_burst(rate) == burst
    args = impair._rate_args(rate)
    assert args[args.index("burst") + 1] == args[args.index("cburst") + 1] == str(burst)


def test_ifb_names_follow_the_side_not_the_pid():
    """A bridge's end in a testbed host's namespace (entered by its keeper's pid) gets the host-side IFB name the
    keeper made there, as a bridge's end here does; a node's end gets its own."""
    here = impair.ifb_for(impair.Endpoint("s1-eth1"))
    there = impair.ifb_for(impair.Endpoint("s1-eth1", 4242, host_side=True))
    node = impair.ifb_for(impair.Endpoint("h1-eth0", 4242))
    assert here.intf == there.intf and here.intf.startswith("plab-i") and len(here.intf) <= 15
    assert (there.pid, there.host_side) == (4242, True) and here.pid is None
    assert (node.intf, node.pid, node.host_side) == ("h1-eth0i", 4242, False)


def _shape_cmds(monkeypatch, imp: Impairment, leaf: list[str] | None = None, mtu: int = 1500) -> list[list[str]]:
    cmds: list[list[str]] = []

    def run(cmd, check=True, timeout=120, input=None):
        cmds.append(cmd)
        return f'[{{"ifname": "x", "mtu": {mtu}}}]' if cmd[:2] == ["ip", "-j"] else ""

    monkeypatch.setattr(impair, "run", run)
    impair.Backend().shape(impair.Endpoint("x"), imp, leaf)
    return [c for c in cmds if c[:3] == ["tc", "qdisc", "add"]]


def test_every_leaf_sits_behind_a_one_frame_splitter(monkeypatch):
    """A tbf whose bucket is one frame cuts merged packets into frames before the leaf, under the rate's class."""
    q = _shape_cmds(monkeypatch, Impairment(rate="64kbit"))
    assert q[1][q[1].index("parent") :] == ["parent", "1:1", "handle", "f10:", "tbf", "rate", impair.SPLIT_RATE,
                                            "burst", "1514", "limit", "1514"]  # fmt: skip
    assert q[2][q[2].index("parent") :][:4] == ["parent", "f10:1", "handle", "10:"] and "pfifo" in q[2]
    # no rate: netem (the netem backend) behind a splitter at the root, still handle 10: for a step change
    q = _shape_cmds(monkeypatch, Impairment(delay="20ms"), ["netem", "delay", "20000us"], mtu=9000)
    assert q[0][5:10] == ["root", "handle", "f10:", "tbf", "rate"] and q[0][q[0].index("burst") + 1] == "9014"
    assert q[1][5:] == ["parent", "f10:1", "handle", "10:", "netem", "delay", "20000us"]
    # a dscp queue: each class's leaf behind its own splitter
    q = _shape_cmds(monkeypatch, Impairment(rate="10Mbit", queue="dscp"))
    assert [c[c.index("handle") + 1] for c in q] == ["1:", "f10:", "10:", "f20:", "20:"]


def test_a_frame_is_at_least_a_standard_ethernet_frame_when_the_mtu_is_unreadable(monkeypatch):
    monkeypatch.setattr(impair, "run", lambda cmd, check=True, timeout=120, input=None: "not json")
    assert impair.frame_bytes(impair.Endpoint("x")) == 1514


def test_the_helpers_binaries_are_looked_for_in_the_node_images_folder():
    """The link emulator and the NIC filter model run from what `make images` builds beside the node image's
    Dockerfile; a module moved to another folder must still find them there."""
    from protolab.lab import nicfilter

    node_image = Path(__file__).resolve().parents[3] / "images" / "node"
    assert (node_image / "Dockerfile").is_file()
    assert node_image / "bin" / "protolab-linkem" == impair.LINKEM
    assert node_image / "bin" / "protolab-nicfilter" == nicfilter.NICFILTER
