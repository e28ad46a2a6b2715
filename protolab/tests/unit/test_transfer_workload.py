"""The transfer workload (seed 002) without a lab: the task's refusals, and its columns from captured output —
protolab-tp4 summaries of a real transfer over loopback and of a failed one, `ss -Htmin` of real sockets, and
/proc/net/snmp."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from protolab.workloads import TASK_MODELS, WORKLOADS
from protolab.workloads.transfer import COLUMNS, TransferTask
from protolab.workloads.transfer_runner import (
    TransferRunner,
    bulk_columns,
    bulk_job,
    congestion_of,
    csum_errors,
    parse_samples,
    quic_receiver_figures,
    skmem,
    tcp_receiver_figures,
    tcp_sender_figures,
    time_weighted,
    tp4_columns,
)

FIX = Path(__file__).parent / "fixtures" / "transfer"


def task(**kw) -> TransferTask:
    base = {"kind": "transfer", "name": "xfer", "sender": "h1", "receiver": "h2", "duration": "120s", "tsdus": 4}
    return TransferTask.model_validate(base | kw)


def fixture(name: str) -> dict:
    return json.loads((FIX / name).read_text())


def test_registered_with_its_runner():
    assert TASK_MODELS["transfer"] is TransferTask
    assert WORKLOADS.get("transfer").runner_class() is TransferRunner
    assert task().columns() == [f"xfer_{c}" for c in COLUMNS]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"duration": "30s", "tsdus": 60}, r"shorter than the transfer itself: 60 x 10240 B over tp4 take 80\.6 s"),
        ({"duration": "10s", "tsdus": 20, "stack": "tcp"}, "over tcp take 26.8 s"),
        ({"stack": "tcp", "expedited_rate": 0.33}, "say how the messages travel, expedited_via urgent or connection"),
        ({"stack": "quic", "expedited_rate": 0.33}, "expedited_via stream"),
        (
            {"stack": "quic", "expedited_via": "urgent"},
            "expedited_via urgent is tcp's; quic sends expedited data via stream",
        ),
        ({"stack": "tcp", "expedited_via": "stream"}, "expedited_via stream is quic's"),
        ({"expedited_via": "connection"}, "tp4's expedited data is chosen by `expedited`"),
        ({"stack": "tcp", "expedited_via": "oob"}, "expedited_via"),
        ({"stack": "quic", "ack": "selective"}, "QUIC always acknowledges selectively"),
        ({"stack": "tcp", "window": 4096}, "window: tp4's parameters, not tcp's"),
        ({"receiver": "h1"}, "same host"),
        ({"tsdu_size": 8}, "at least 12"),
        ({"tpdu_size": 1000}, "a power of two"),
        ({"expedited_rate": 1.5}, "less than or equal to 1"),
        ({"table": 4}, "table"),
        ({"stack": "quic", "congestion": "cubic"}, "congestion cubic: tcp's"),
        ({"congestion": "bbr"}, "not tp4's"),
        ({"stack": "tcp", "congestion": "cubic; reboot"}, "congestion"),
    ],
)
def test_bad_input_is_refused_with_the_reason(fields, message):
    with pytest.raises(ValidationError, match=message):
        task(**fields)


def test_the_too_slow_check_counts_each_stacks_headers_at_the_links_rate():
    t3 = task(table=3, tsdus=20)  # 128-octet TPDUs: 170 octets on the wire per 120 of user data
    assert t3.min_seconds() == pytest.approx(20 * 10240 * 170 / 120 * 8 / 64e3)
    fast = task(tsdus=60, duration="10s", link_rate="1Mbit")  # the same 60 TSDUs fit in 10 s at 1 Mbit/s
    assert fast.min_seconds() < 10


def test_tp4_columns_from_a_real_transfer():
    t = task(table=2, expedited="nbs", expedited_rate=0.33)
    v = tp4_columns(t, fixture("tp4-send.json"), fixture("tp4-recv.json"))
    assert set(v) == set(COLUMNS)
    recv = fixture("tp4-recv.json")
    assert v["completed_ratio"] == 1.0 and v["delivered_bytes"] == 4 * 10240
    assert v["efficiency_ratio"] == recv["throughput_efficiency"]
    assert v["expedited_delay_seconds"] == recv["user_expedited_delay_seconds"] > 0
    assert v["recv_buffer_max_bytes"] == recv["receive_buffer_max_octets"]
    # the parameters in force: Table 2's, as the sender ran them
    assert (v["tpdu_bytes"], v["window_bytes"], v["retransmit_seconds"]) == (1024, 12288, 2)
    assert (v["tsdus_total"], v["expedited_rate_ratio"]) == (4, 0.33)


def test_a_failed_transfer_is_recorded_not_raised():
    t = task(table=3)
    v = tp4_columns(t, fixture("tp4-send-failed.json"), {})
    assert v["completed_ratio"] == 0.0 and v["delivered_bytes"] is None
    assert v["tpdu_bytes"] == 128 and v["retransmissions_total"] == 0
    failed = {**fixture("tp4-recv.json"), "completed": False, "user_octets": 0}
    v = tp4_columns(t, fixture("tp4-send.json"), failed)
    assert v["completed_ratio"] == 0.0 and v["efficiency_ratio"] == 0.0 and v["transfer_seconds"] is None


def test_no_expedited_data_no_expedited_delay():
    recv = {**fixture("tp4-recv.json"), "user_expedited": 0}
    v = tp4_columns(task(), fixture("tp4-send.json"), recv)
    assert v["expedited_delay_seconds"] is None and v["expedited_delay_max_seconds"] is None


def test_ss_samples_of_real_sockets():
    rx = parse_samples((FIX / "ss-receiver.txt").read_text())
    assert len(rx) == 3 and all("skmem:(" in s for _, s in rx)
    assert skmem(rx[0][1])["r"] == 86976 and skmem(rx[0][1])["rb"] == 87380
    figs = tcp_receiver_figures(rx)
    assert figs["recv_buffer_max_bytes"] == 1163136
    t = [x for x, _ in rx]
    want = (86976 * (t[1] - t[0]) + 63296 * (t[2] - t[1])) / (t[2] - t[0])
    assert figs["recv_buffer_avg_bytes"] == pytest.approx(want)
    tx = parse_samples((FIX / "ss-sender.txt").read_text())
    s = tcp_sender_figures(tx, sack=True)
    assert s == {"retransmissions_total": 2, "spurious_retransmissions_total": 2, "tpdu_bytes": 65483,
                 "send_buffer_max_bytes": 1746496}  # fmt: skip
    assert tcp_sender_figures(tx, sack=False)["spurious_retransmissions_total"] is None


def test_the_congestion_control_in_force_is_read_from_ss():
    tx = parse_samples((FIX / "ss-sender.txt").read_text())
    assert congestion_of(tx[-1][1]) == "bbr"
    assert congestion_of("\t skmem:(r0,rb131072) ts sack cubic wscale:7,7 rto:204 rtt:0.1/0.05") == "cubic"
    assert congestion_of("\t skmem:(r0) reno rto:204") == "reno"
    assert congestion_of(None) is None and congestion_of("") is None


def test_the_senders_congestion_control_is_a_knob_of_its_responder():
    from protolab.workloads.spims_agent import Responder

    r = Responder(object(), "h1", "tcp", 7400, options={"congestion": "cubic"})  # type: ignore[arg-type]
    assert r.cmd == ["protolab-spims", "serve", "--transport", "tcp", "--option", "congestion=cubic",
                     "--listen", ":7400"]  # fmt: skip
    assert task(stack="tcp", congestion="cubic").congestion == "cubic"


def test_time_weighted_average_holds_each_sample_until_the_next():
    assert time_weighted([(0.0, 10.0), (1.0, 30.0), (4.0, 0.0)]) == pytest.approx((10 * 1 + 30 * 3) / 4)
    assert time_weighted([(5.0, 7.0)]) == 7.0
    assert time_weighted([]) is None
    assert parse_samples("T 1.0\nT 2.0\n") == []  # no socket yet: no sample


def test_checksum_errors_from_proc_net_snmp():
    snmp = (FIX / "snmp.txt").read_text()
    assert csum_errors(snmp) == 0
    bumped = snmp.replace("119 0\n", "119 5\n").replace("0 0 0 0 0\n", "0 0 3 0 0\n")
    assert csum_errors(bumped) == 8


def test_proc_net_snmp_parses_every_protocols_counters():
    from protolab.counters import parse_snmp

    ip = (
        "Ip: Forwarding DefaultTTL InReceives ReasmTimeout ReasmReqds ReasmOKs ReasmFails\n"
        "Ip: 1 64 188255 46968 188255 24843 136891\n"
    )
    counters = parse_snmp(ip + (FIX / "snmp.txt").read_text())
    assert set(counters) == {"Ip", "Tcp", "Udp"}
    assert counters["Ip"] == {"Forwarding": 1, "DefaultTTL": 64, "InReceives": 188255, "ReasmTimeout": 46968,
                              "ReasmReqds": 188255, "ReasmOKs": 24843, "ReasmFails": 136891}  # fmt: skip
    assert counters["Tcp"]["MaxConn"] == -1 and counters["Udp"]["InDatagrams"] == 1012568


def test_bulk_get_columns_complete_and_interrupted():
    t = task(stack="tcp")
    done = {"stopped": "iterations", "received_bytes": 40960, "samples_seconds": [6.4], "elapsed_seconds": 7.0}
    v = bulk_columns(t, done)
    assert v["completed_ratio"] == 1.0 and v["transfer_seconds"] == 6.4
    assert v["efficiency_ratio"] == pytest.approx(40960 / 6.4 / 8000)
    cut = {"stopped": "interrupted", "received_bytes": 20480, "samples_seconds": [], "elapsed_seconds": 120.0,
           "error": "interrupted"}  # fmt: skip
    v = bulk_columns(t, cut)
    assert v["completed_ratio"] == 0.0 and v["efficiency_ratio"] == pytest.approx(20480 / 120 / 8000)
    assert bulk_columns(t, {"stopped": "error", "received_bytes": 0})["efficiency_ratio"] == 0.0


@pytest.mark.parametrize(("stack", "via"), [("tcp", "urgent"), ("tcp", "connection"), ("quic", "stream")])
def test_expedited_data_over_todays_stacks_is_accepted(stack, via):
    t = task(stack=stack, expedited_via=via, expedited_rate=0.33)
    job = bulk_job(t, "10.0.2.1")
    assert job["expedited"] == {"via": via, "rate": 0.33, "size": 16}
    assert job["delays"] is True and job["target"] == "10.0.2.1:7400"
    # the sweep's "none": the mechanism named, no expedited messages asked for
    assert "expedited" not in bulk_job(task(stack=stack, expedited_via=via, expedited_rate=0), "10.0.2.1")


@pytest.mark.parametrize("name", ["spims-bulk-tcp-urgent.json", "spims-bulk-quic-stream.json"])
def test_bulk_get_columns_with_expedited_data(name):
    """protolab-spims results of real transfers over loopback (20 x 10240 B, rate .33: one expedited message after
    every 3rd unit)."""
    result = fixture(name)
    stack = result["transport"]
    via = result["bulk"]["expedited"]["via"]
    v = bulk_columns(task(stack=stack, expedited_via=via, expedited_rate=0.33, tsdus=20), result)
    exp = result["bulk"]["expedited"]
    assert v["completed_ratio"] == 1.0 and v["delivered_bytes"] == 20 * 10240
    assert v["expedited_total"] == exp["received"] == 6
    assert v["expedited_delay_seconds"] == exp["delay_seconds"]["mean"] > 0
    assert v["expedited_delay_max_seconds"] == exp["delay_seconds"]["max"] >= v["expedited_delay_seconds"]
    assert v["per_octet_delay_seconds"] == result["bulk"]["per_octet_delay_seconds"] > 0
    if stack == "quic":  # the responder's quic-go losses; tcp's retransmissions and receive buffer come from ss
        assert v["retransmissions_total"] == result["bulk"]["sender_counters"]["packets_lost"]
        held = result["paths"][0]["counters"]
        assert 0 < v["recv_buffer_avg_bytes"] < v["recv_buffer_max_bytes"] == held["rx_held_max_octets"] > 0
        assert v["recv_buffer_avg_bytes"] == held["rx_held_octet_microseconds"] / held["rx_held_microseconds"]
    else:
        assert v["retransmissions_total"] is None
        assert v.get("recv_buffer_avg_bytes") is None


def test_quic_receive_buffer_needs_the_counters():
    """A protolab-spims older than its receive accounting (or a failed path): no figure, not a zero."""
    assert quic_receiver_figures({"paths": [{"counters": {"packets_lost": 3}}]}) == {
        "recv_buffer_avg_bytes": None, "recv_buffer_max_bytes": None}  # fmt: skip
    assert quic_receiver_figures({"paths": []})["recv_buffer_max_bytes"] is None
    none_yet = {"rx_held_octet_microseconds": 0, "rx_held_microseconds": 0, "rx_held_max_octets": 0}
    assert quic_receiver_figures({"paths": [{"counters": none_yet}]})["recv_buffer_avg_bytes"] is None


def test_no_expedited_data_on_todays_stacks_no_expedited_columns():
    result = fixture("spims-bulk-tcp-urgent.json")
    plain = {**result, "bulk": {k: v for k, v in result["bulk"].items() if k != "expedited"}}
    v = bulk_columns(task(stack="tcp", tsdus=20), plain)
    assert v["expedited_total"] is None and v["expedited_delay_seconds"] is None
    assert v["per_octet_delay_seconds"] > 0
    old = {k: v for k, v in result.items() if k != "bulk"}  # a protolab-spims without delays
    assert bulk_columns(task(stack="tcp", tsdus=20), old)["per_octet_delay_seconds"] is None


def test_ss_samples_keep_the_bulk_socket_of_two():
    """With expedited data via a second connection the sampler sees two sockets on the port: the bulk's is the one
    that moved the most bytes, whichever ss lists first."""
    text = (FIX / "ss-sender.txt").read_text()
    small = "ESTAB 0      0 127.0.0.1:7455 127.0.0.1:51750\n\t skmem:(r0,rb87380,t0,tb46080,f0,w0,o0,bl0,d0) cubic " \
            "mss:65483 bytes_sent:66 bytes_acked:66 retrans:0/0\n"  # fmt: skip
    two = "".join(line + "\n" + small if line.startswith("T ") else line + "\n" for line in text.splitlines())
    assert [s for _, s in parse_samples(two)] == [s for _, s in parse_samples(text)]


def test_a_link_rate_other_than_the_satellite_links_is_refused(tmp_path):
    """Efficiency is over the link's speed: a transfer's link_rate must be the satellite link's rate."""
    from protolab import spec
    from protolab.errors import SpecError

    body = (
        "name: x\ndescription: x\nseed: {reproduces: none}\n"
        "topology: {kind: satellite, params: {hosts: 1, sat_rate: SAT}}\n"
        "phases: [{name: p, tasks: [{kind: transfer, name: xfer, sender: h1, receiver: h2, stack: tp4, tsdus: 1,"
        " link_rate: 64kbit, duration: 60s}]}]\n"
    )
    f = tmp_path / "x.yaml"
    f.write_text(body.replace("SAT", "64kbit"))
    assert spec.load(f).points
    f.write_text(body.replace("SAT", "128kbit"))
    with pytest.raises(SpecError, match="link_rate 64 kbit/s, but the topology's satellite link runs at 128 kbit/s"):
        spec.load(f)


def test_a_transfer_that_never_connects_delivered_nothing():
    """QUIC at 1e-3: its 1,200-octet Initial packets survive one time in 20,000, so no handshake completes;
    protolab-spims still reports (stopped: error, each path's error) and the row says nothing arrived."""
    result = {"stopped": "error", "error": "no path connected: path 1 (10.0.1.1:7400): quic dial: timeout",
              "received_bytes": 0, "elapsed_seconds": 0, "samples_seconds": [],
              "paths": [{"target": "10.0.1.1:7400", "error": "quic dial: timeout", "counters": {}}]}  # fmt: skip
    v = bulk_columns(task(stack="quic", tsdus=5), result)
    assert v["delivered_bytes"] == 0 and v["efficiency_ratio"] == 0.0 and v["completed_ratio"] == 0.0
    assert v["transfer_seconds"] is None and v["recv_buffer_max_bytes"] is None
