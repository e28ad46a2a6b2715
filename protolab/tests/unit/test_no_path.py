"""The plan's warning when a fault schedule leaves a task's hosts no whole path for longer than `max_no_path`."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from protolab import spec, topo
from protolab.model.faults import Fault, no_path_spans
from protolab.workloads.base import host_paths

MHF = spec.EXPERIMENTS_DIR / "multihomed-failover.yaml"
SCIOP_FLAP = [{"link": ["h1", "s1"], "flap": {"down": "4s", "up": "12s", "offset": "2s"}},
              {"link": ["h1", "s2"], "flap": {"down": "4s", "up": "12s", "offset": "10s"}}]  # fmt: skip


def _point(plan: spec.Plan, **values: str) -> spec.Point:
    (p,) = [p for p in plan.points if all(spec._short(p.values[k]) == v for k, v in values.items())]
    return p


def _plan(tmp_path: Path, variant: str, duration: str, faults: list, max_no_path: str | None = None) -> spec.Plan:
    """multihomed-failover with one variant of its full profile and one condition."""
    data = yaml.safe_load(MHF.read_text())
    variants = data["profiles"]["full"]["sweep"]["variant"]
    data["sweep"] = {"variant": [v for v in variants if v["name"] == variant],
                     "condition": [{"name": "c", "duration": duration, "impairments": [], "faults": faults}],
                     "size": ["64B"]}  # fmt: skip
    data["profiles"] = {"quick": {}, "full": {}}
    if max_no_path is not None:
        data["phases"][0]["max_no_path"] = max_no_path
    f = tmp_path / "mhf.yaml"
    f.write_text(yaml.safe_dump(data))
    return spec.load(f, "quick")


def test_single_path_tcp_is_flagged_when_its_path_fails():
    plan = spec.load(MHF, "full")
    (w,) = spec.no_path_warnings(_point(plan, variant="tcp", condition="fail-a", size="64B").experiment)
    assert w == ("phase rr: task rr (h1->h2) has no path up from 8s to 20s, 12 s, longer than max_no_path 1s "
                 "(path: h1-s1 + h2-s1)")  # fmt: skip
    assert spec.no_path_warnings(_point(plan, variant="tcp", condition="blackhole-a", size="64B").experiment)
    assert spec.no_path_warnings(_point(plan, variant="tcp", condition="flap", size="64B").experiment)
    # the same failures with a second path: never without one
    for condition in ("fail-a", "blackhole-a", "flap"):
        for variant in ("mptcp-fullmesh", "redundant-tcp", "sctp-table2"):  # SCTP: a multihomed association
            assert (
                spec.no_path_warnings(_point(plan, variant=variant, condition=condition, size="64B").experiment) == []
            )
    assert "WARNING: phase rr: task rr (h1->h2) has no path up from 8s to 20s" in plan.describe()


def test_sciop_flaps_leave_a_two_path_task_a_path():
    plan = spec.load(MHF, "full")
    flap = _point(plan, variant="mptcp-backup", condition="flap", size="1024B").experiment
    assert spec.no_path_warnings(flap) == []
    t = flap.topology.build()
    (paths,) = flap.phases[0].tasks[0].paths(t).values()
    assert no_path_spans(flap.phases[0].faults, paths, flap.phases[0].seconds) == []


def test_both_links_cut_at_once_is_flagged(tmp_path):
    both = [{"link": ["h1", "s1"], "at": "8s", "action": "down"}, {"link": ["s2", "h1"], "at": "8s", "action": "down"}]
    (w,) = spec.no_path_warnings(_plan(tmp_path, "mptcp-fullmesh", "20s", both).base)
    assert "from 8s to 20s, 12 s, longer than max_no_path 1s" in w
    assert "(paths: h1-s1 + h2-s1 | h1-s2 + h2-s2)" in w
    # a flap out of phase by less than its outage overlaps: 1 s of every 16 with no path, flagged above 0.5 s
    overlap = copy.deepcopy(SCIOP_FLAP)
    overlap[1]["flap"]["offset"] = "5s"
    assert spec.no_path_warnings(_plan(tmp_path, "mptcp-fullmesh", "40s", overlap).base) == []
    (w,) = spec.no_path_warnings(_plan(tmp_path, "mptcp-fullmesh", "40s", overlap, "500ms").base)
    assert "from 5s to 6s, 1 s (longest of 3 such spans), longer than max_no_path 500ms" in w


def test_a_path_is_out_when_any_of_its_links_is():
    t = topo.build("dual_homed", {"hosts": 2, "rate": "100Mbit"})
    paths = host_paths(t, "h1", "h2", (0, 1))
    assert paths == [[("h1", "s1"), ("h2", "s1")], [("h1", "s2"), ("h2", "s2")]]
    assert host_paths(t, "h1", "h2", (0, 1, 2)) == paths  # an interface h2 lacks gives no path

    def f(d: dict) -> Fault:
        return Fault.model_validate(d)

    far_ends = [
        f({"link": ["h2", "s1"], "at": "2s", "action": "down"}),  # the server's side of path A
        f({"link": ["h1", "s2"], "at": "3s", "set": {"loss": "100%"}}),  # path B black-holed ...
        f({"link": ["h1", "s2"], "at": "5s", "set": {"loss": "1%"}}),
    ]  # ... until a step below 100 %
    assert no_path_spans(far_ends, paths, 10) == [(3.0, 5.0)]
    assert no_path_spans(far_ends, paths[:1], 10) == [(2.0, 10)]
    assert no_path_spans([], paths, 10, {frozenset(("h1", "s1")), frozenset(("h2", "s2"))}) == [(0.0, 10)]
    assert no_path_spans(far_ends, [], 10) == []


def test_ping_iperf3_and_spims_have_their_path():
    t = topo.build("switched", {"hosts": 3, "rate": "100Mbit"})
    data = {"name": "x", "duration": "1s", "client": "h1", "server": "h3"}
    from protolab.workloads import TASK_MODELS

    for kind in ("ping", "iperf3", "request_response"):
        task = TASK_MODELS[kind].model_validate(
            {"kind": kind, **data, **({"protocol": "tcp"} if kind == "iperf3" else {})}
        )
        assert task.paths(t) == {"h1->h3": [[("h1", "s1"), ("h3", "s1")]]}, kind
    sp = TASK_MODELS["spims"].model_validate({"kind": "spims", "name": "s", "duration": "1s",
                                              "spec": "10 from h1 to h2 request_response 32*10,"})  # fmt: skip
    assert sp.paths(t) == {"h1->h2": [[("h1", "s1"), ("h2", "s1")]]}


def test_max_no_path_is_in_the_schema():
    props = spec.json_schema()["$defs"]["Phase"]["properties"]
    assert "max_no_path" in props and "no whole path" in props["max_no_path"]["description"]


@pytest.mark.parametrize("path", sorted(spec.EXPERIMENTS_DIR.glob("*.yaml")), ids=lambda p: p.stem)
def test_every_shipped_quick_plan_describes_itself(path):
    assert spec.load(path, "quick").describe()


def test_a_path_goes_through_routers_and_not_through_other_hosts():
    from protolab import topofile

    t = topofile.load(topo.TOPOLOGY_DIR / "triangle.yaml")  # h1, h2 and r1 on a hub; r1 - r2 - h3
    assert host_paths(t, "h1", "h3") == [[("h1", "lan"), ("r1", "lan"), ("r1", "r2"), ("r2", "h3")]]
    assert host_paths(t, "h3", "h2") == [[("r2", "h3"), ("r1", "r2"), ("r1", "lan"), ("h2", "lan")]]
    star = topo.Topology("star", hosts=[topo.Host("h1"), topo.Host("h2"), topo.Host("h3")],
                         links=[topo.Link("h1", "h2"), topo.Link("h2", "h3")])  # fmt: skip
    assert host_paths(star, "h1", "h3") == []  # h2 does not forward
    assert host_paths(star, "h1", "h2") == [[("h1", "h2")]]
