"""The dis workload: task validation and the columns computed from the two agents' JSON summaries."""

from __future__ import annotations

import pytest
from pydantic import TypeAdapter, ValidationError

from protolab.spec import Task
from protolab.workloads.dis_runner import columns

BASE = {"kind": "dis", "name": "rx", "sender": "h1", "receiver": "h2", "messages_per_second": 2000, "duration": "4s"}


def task(**kw):
    return TypeAdapter(Task).validate_python({**BASE, **kw})


def test_defaults_and_address_plan():
    t = task(groups=10000, share=0.1, size="150B")
    assert t.messages_per_group == 6 and t.joined == 1000 and t.size == 150
    assert task(groups=10).messages_per_group == 32 and task(groups=10, share=0.01).joined == 1


@pytest.mark.parametrize(
    "bad",
    [
        {"size": "40B"},
        {"size": "9000B"},
        {"groups": 3000, "per_group": 32},
        {"share": 0},
        {"share": 1.5},
        {"syntax": "xer"},
        {"syntax": "ber", "size": "200B"},
    ],  # fmt: skip
)
def test_bad_tasks_are_refused(bad):
    with pytest.raises(ValidationError):
        task(**bad)


def test_columns_count_loss_against_the_joined_groups_only():
    t = task(groups=4, share=0.5)
    sent = {"sent_by_group": [100, 100, 100, 100], "elapsed_seconds": 2.0, "packets_per_second": 200.0}
    recv = {"joined_groups": 2, "messages": 190, "packets": 195, "dropped": {"unwanted": 5}}
    recv |= {"delay_p50_seconds": 1e-4, "delay_p99_seconds": 1e-3, "cpu_cgroup_ratio": 0.02, "cpu_busyloop_ratio": 0}
    recv |= {"delay_mean_seconds": 2e-4}
    c = columns(t, sent, recv, loopback=False)
    assert c["rx_delay_mean_seconds"] == 2e-4
    assert c["rx_sent_total"] == 200 and c["rx_lost_total"] == 10 and c["rx_loss_ratio"] == pytest.approx(0.05)
    assert c["rx_messages_per_second"] == pytest.approx(95) and c["rx_dropped_total"] == 5
    assert set(c) == set(t.columns())
    # Loopback: every group counts.
    assert columns(t, sent, dict(recv, messages=400), loopback=True)["rx_loss_ratio"] == 0


def test_scrape_ports_and_lab_targets_carry_the_dis_hosts():
    """Receiver on DIS_PORT, sender on DIS_PORT + 1 (both on one node over the loopback); Lab.targets adds them
    to the node's target group, with the node's labels, next to its agent."""
    from types import SimpleNamespace

    from protolab import naming
    from protolab.lab import Lab
    from protolab.workloads.dis_runner import DisRunner

    assert DisRunner(task(), lab=None).scrape_ports() == {"h2": [naming.DIS_PORT], "h1": [naming.DIS_PORT + 1]}
    assert DisRunner(task(sender="h1", receiver="h1"), lab=None).scrape_ports() == {
        "h1": [naming.DIS_PORT, naming.DIS_PORT + 1]
    }
    hosts = [SimpleNamespace(name=n, role="host") for n in ("h1", "h2", "h3")]  # the topology's, before any deploy
    lab = SimpleNamespace(run_id="r1", topology=SimpleNamespace(hosts=hosts))
    groups = Lab.targets(lab, {"h2": [naming.DIS_PORT]})  # type: ignore[arg-type]
    assert [g["targets"] for g in groups] == [
        ["plab-h1:9100"],
        ["plab-h2:9100", f"plab-h2:{naming.DIS_PORT}"],
        ["plab-h3:9100"],
    ]
    assert groups[1]["labels"] == {"node": "h2", "role": "host", "run": "r1"}
    assert Lab.targets(lab) == [  # type: ignore[arg-type]
        {"targets": [f"plab-{n}:9100"], "labels": {"node": n, "role": "host", "run": "r1"}} for n in ("h1", "h2", "h3")
    ]


def test_runner_targets_every_dis_host_of_a_lab_from_the_deploy_on():
    from types import SimpleNamespace

    from protolab import naming
    from protolab.orchestrator.experiment import scrape_ports as _scrape_ports

    phase = SimpleNamespace(tasks=[task(), task(name="lo", sender="h3", receiver="h3")])
    points = [SimpleNamespace(experiment=SimpleNamespace(phases=[phase]))] * 2
    assert _scrape_ports(points) == {  # type: ignore[arg-type]
        "h1": [naming.DIS_PORT + 1],
        "h2": [naming.DIS_PORT],
        "h3": [naming.DIS_PORT, naming.DIS_PORT + 1],
    }


def test_a_transfer_syntax_goes_to_both_agents():
    from protolab.workloads.dis_runner import DisRunner

    class Lab:
        nodes: dict = {}

    assert "--syntax" not in DisRunner(task(), Lab())._common()
    common = DisRunner(task(syntax="skinny"), Lab())._common()
    assert common[common.index("--syntax") + 1] == "skinny"


def test_missing_pdus_are_placed_against_the_senders_span_and_the_kernels_drops():
    from protolab.workloads.dis_runner import missing_where

    sent = {"sent_by_group": [300, 300], "send_first_unix": 100.0, "send_last_unix": 102.0}
    recv = {"joined_groups": 2, "messages": 597, "arrival_first_unix": 100.0004, "arrival_last_unix": 101.99}
    recv |= {"listen_start_unix": 99.8, "listen_end_unix": 101.99, "kernel_udp_in_errors": 0.0}
    recv |= {"kernel_udp_rcvbuf_errors": 0.0}
    where = missing_where(sent, recv, loopback=False)
    assert where is not None and where.startswith("3 of 600 PDUs missing")
    assert "first arrival +0.4 ms from the first send, last arrival -10.0 ms from the last" in where
    assert "listened from -200 ms to -10 ms around them" in where  # the window closed before the stream did
    assert "dropped 0 UDP datagram(s)" in where and "(0 for a full receive buffer)" in where
    assert "reassembly" not in where  # no fragment failed: nothing said of it
    frag = recv | {"kernel_ip_reasm_fails": 40.0, "kernel_ip_reasm_reqds": 1200.0, "kernel_ip_reasm_oks": 580.0}
    said = "; IP reassembly failed 40 time(s) there (1200 fragments in, 580 datagrams reassembled, "
    said += "0 expired incomplete)"
    assert missing_where(sent, frag | {"kernel_ip_reasm_timeouts": 0.0}, loopback=False) == where + said
    assert missing_where(sent, dict(recv, messages=600), loopback=False) is None
    old = {"joined_groups": 2, "messages": 599}  # an agent from before the times were reported
    assert missing_where({"sent_by_group": [300, 300]}, old, False) == (
        "1 of 600 PDUs missing; no send/arrival times in the reports"
    )
    c = columns(task(groups=2), sent, recv | {"kernel_udp_in_errors": 4.0}, loopback=False)
    assert c["rx_kernel_drops_total"] == 4.0 and c["rx_lost_total"] == 3 and c["rx_reasm_fails_total"] is None
    assert columns(task(groups=2), sent, frag, loopback=False)["rx_reasm_fails_total"] == 40.0


class _ExecLab:
    """A lab whose exec records each command and answers from a script: the boundary of DisRunner."""

    def __init__(self, sender_fails: bool = False) -> None:
        from types import SimpleNamespace

        self.nodes = {"h1": SimpleNamespace(pid=4242)}
        self.calls: list[list[str]] = []
        self.sender_fails = sender_fails

    def exec(self, node: str, cmd: list[str]) -> tuple[int, str, str]:
        import json
        import time

        self.calls.append(cmd)
        if cmd[0] == "cat":
            return 0, "777\n", ""
        if cmd[:2] == ["protolab-dishost", "recv"]:
            while not any(c[:2] == ["kill", "-USR1"] for c in self.calls):  # ends when signalled, as the agent does
                time.sleep(0.01)
            return 0, json.dumps({"role": "recv", "joined_groups": 1, "messages": 5}), ""
        if cmd[:2] == ["protolab-dishost", "send"]:
            if self.sender_fails:
                raise RuntimeError("docker exec failed")
            return 0, json.dumps({"role": "send", "sent_by_group": [5], "elapsed_seconds": 1.0}), ""
        return 0, "", ""

    def sync_nic_filters(self) -> dict[str, list[str]]:
        self.calls.append(["<sync_nic_filters>"])
        return {}


@pytest.mark.parametrize("sender_fails", [False, True], ids=["sender-ends", "sender-fails"])
def test_the_receiver_is_told_when_the_sender_has_ended(sender_fails):
    """The receive window follows the sender: the pid from the ready file gets SIGUSR1 once the sender's process
    is over (also when it failed), and the receiver's own --duration is only a cap well past the send; the lab's
    NIC filters are synced with the receiver's joins before the sender starts."""
    from protolab.workloads.dis_runner import CAP_MARGIN, TAIL, DisRunner

    lab = _ExecLab(sender_fails)
    r = DisRunner(task(sender="h1", receiver="h1", groups=1, duration="1s", busy_loop=False), lab)
    r.prepare()
    assert r.receiver_pid == 777
    recv = next(c for c in lab.calls if c[:2] == ["protolab-dishost", "recv"])
    assert recv[recv.index("--duration") + 1] == f"{1 + TAIL + CAP_MARGIN:g}s"
    assert recv[recv.index("--drain") + 1] == f"{TAIL:g}s"
    if sender_fails:
        with pytest.raises(RuntimeError):
            r.run()
    else:
        r.run()
        assert r.receiver_report["messages"] == 5
    send = next(i for i, c in enumerate(lab.calls) if c[:2] == ["protolab-dishost", "send"])
    assert ["kill", "-USR1", "777"] in lab.calls[send + 1 :]
    # the NIC filters' model has the receiver's joins before the first PDU leaves
    assert lab.calls.index(["<sync_nic_filters>"]) < send
