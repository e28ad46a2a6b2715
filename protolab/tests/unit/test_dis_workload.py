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
    lab = SimpleNamespace(run_id="r1", nodes={n: SimpleNamespace(name=n, role="host") for n in ("h1", "h2", "h3")})
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
