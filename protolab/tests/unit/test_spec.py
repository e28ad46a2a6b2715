"""Specs: every shipped spec loads in every profile; broken specs fail naming file, field and reason."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from protolab import spec, topo
from protolab.units import parse_duration, parse_quantity, parse_rate, parse_size

SHIPPED = sorted(spec.EXPERIMENTS_DIR.glob("*.yaml"))
SMOKE = spec.EXPERIMENTS_DIR / "smoke.yaml"


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_every_shipped_spec_loads_in_every_profile(path: Path):
    raw = yaml.safe_load(path.read_text())
    for profile in [None, *raw.get("profiles", {})]:
        plan = spec.load(path, profile)
        assert plan.points, profile
        assert plan.base.seed.reproduces
        for p in plan.points:
            assert "${" not in json.dumps(p.experiment.model_dump(mode="json", exclude={"profiles"}))


def test_profiles_exist_for_ci_and_the_paper():
    for path in SHIPPED:
        assert {"quick", "full"} <= set(yaml.safe_load(path.read_text()).get("profiles", {})), path.name


def test_committed_schema_is_current():
    assert json.loads(spec.SCHEMA_PATH.read_text()) == json.loads(json.dumps(spec.json_schema(), sort_keys=True))


def test_smoke_plan_groups_points_by_lab():
    plan = spec.load(SMOKE, "quick")
    assert len(plan.points) == 12
    keys = [p.topology_key() for p in plan.points]
    # each distinct lab appears in one contiguous run of points: deployed once
    assert len({k for k in keys}) == 6 and sum(1 for a, b in zip(keys, keys[1:], strict=False) if a != b) == 5
    p = plan.points[0]
    assert p.experiment.checks[-1].bounds() == pytest.approx((9.5e6, 10.5e6))


def _broken(tmp_path: Path, edit) -> str:
    data = yaml.safe_load(SMOKE.read_text())
    edit(data)
    f = tmp_path / "broken.yaml"
    f.write_text(yaml.safe_dump(data))
    with pytest.raises(spec.SpecError) as err:
        spec.load(f, "quick")
    msg = str(err.value)
    assert str(f) in msg
    return msg


def test_bad_rate_names_field_reason_and_point(tmp_path):
    def edit(d):
        d["sweep"]["rate"] = ["10Mbit", "100Mb"]

    msg = _broken(tmp_path, edit)
    assert "topology: params.rate" in msg and "100Mb" in msg and "rate=100Mb" in msg and "is not like" in msg


def test_unknown_topology_lists_known_ones(tmp_path):
    msg = _broken(tmp_path, lambda d: d["sweep"].update(topology=["ring"]))
    assert "unknown topology 'ring'" in msg and "dual_homed, hub, satellite, switched" in msg


def test_unknown_field_is_refused(tmp_path):
    msg = _broken(tmp_path, lambda d: d.update(repetitons=3))
    assert "repetitons" in msg and "Extra inputs are not permitted" in msg


def test_reference_to_missing_axis(tmp_path):
    msg = _broken(tmp_path, lambda d: d["phases"][0]["tasks"][0].update(duration="${length}"))
    assert "${length} names no sweep axis" in msg


def test_task_on_a_node_that_is_not_a_host(tmp_path):
    msg = _broken(tmp_path, lambda d: d["phases"][0]["tasks"][0].update(client="h9"))
    assert "'h9' is not a host" in msg


def test_udp_without_rate(tmp_path):
    msg = _broken(tmp_path, lambda d: d["phases"][0]["tasks"][0].pop("rate"))
    assert "UDP needs a rate" in msg


def test_missing_profile_and_bad_yaml(tmp_path):
    with pytest.raises(spec.SpecError, match="no such profile .*known: full, nightly, quick"):
        spec.load(SMOKE, "weekly")
    f = tmp_path / "x.yaml"
    f.write_text("name: [unclosed")
    with pytest.raises(spec.SpecError, match="not valid YAML"):
        spec.load(f)
    # a key given twice is refused (PyYAML would keep the last silently: a profile's repetitions lost so once)
    f.write_text(SMOKE.read_text() + "\nrepetitions: 2\n")
    with pytest.raises(spec.SpecError, match="duplicate key 'repetitions'"):
        spec.load(f)
    with pytest.raises(spec.SpecError, match="no experiment 'nope'"):
        spec.find("nope")


def test_measurement_interface_must_exist(tmp_path):
    msg = _broken(tmp_path, lambda d: d["measurements"][0].update(interface="h3-eth7"))
    assert "h3 has no h3-eth7" in msg


@pytest.mark.parametrize(
    ("text", "fn", "value"),
    [("100ms", parse_duration, 0.1), ("5s", parse_duration, 5.0), ("250us", parse_duration, 250e-6),
     ("10Mbit", parse_rate, 1e7), ("1544kbit", parse_rate, 1.544e6), ("1MB/s", parse_rate, 8e6),
     ("1500B", parse_size, 1500), ("64KiB", parse_size, 65536), ("10Mbit", parse_quantity, 1e7),
     ("2.5", parse_quantity, 2.5)],
)  # fmt: skip
def test_units(text, fn, value):
    assert fn(text) == pytest.approx(value)


@pytest.mark.parametrize(("text", "fn"), [("10", parse_duration), (10, parse_rate), ("fast", parse_rate)])
def test_units_refuse_numbers_without_units(text, fn):
    with pytest.raises(ValueError, match="unit|not like"):
        fn(text)


def test_topologies_are_data():
    hub = topo.build("hub", {"hosts": 3, "rate": "10Mbit"})
    assert [s.mode for s in hub.switches] == ["hub"] and hub.switches[0].capacity_bps == 1e7
    assert all(link.rate_bps is None for link in hub.links)  # the medium, not the ports, is the limit
    sw = topo.build("switched", {"hosts": 2, "rate": "100Mbit"})
    assert all(link.rate_bps == 1e8 for link in sw.links)
    dual = topo.build("dual_homed", {"hosts": 2, "rate": "100Mbit"})
    assert dual.interfaces()["h1"] == ["h1-eth0", "h1-eth1"]
    assert {link.node2 for link in dual.links if link.node1 == "h1"} == {"s1", "s2"}
    wan = topo.build("switched", {"hosts": 2, "wan_router": True})
    assert wan.host("r1").forwarding and ("10.0.100.0/24", "10.0.1.254") in wan.host("h1").routes
    with pytest.raises(ValueError, match="floods by definition"):
        topo.build("hub", {"hosts": 2, "multicast": "snooping"})


def test_receiver_side_impairment_into_a_hub_is_refused(tmp_path):
    """A hub takes its ports' ingress for its shared medium: tc would fail mid-deploy ('Exclusivity flag on')."""
    imp = {"link": ["h1", "s1"], "direction": "both", "at": "receiver", "loss": "1%"}
    msg = _broken(tmp_path, lambda d: d.update(impairments=[imp]))
    assert "impairments.0: at: receiver on h1 -> s1: s1 is a hub" in msg and "topology=hub" in msg
    ok = tmp_path / "ok.yaml"  # the same loss out of the hub's port toward h1 is fine
    data = yaml.safe_load(SMOKE.read_text())
    data["impairments"] = [{"link": ["s1", "h1"], "direction": "forward", "loss": "1%"}]
    ok.write_text(yaml.safe_dump(data))
    assert spec.load(ok, "quick").points


def _fault(d, fault):
    d["phases"][0]["faults"] = [fault]


@pytest.mark.parametrize("field", ["down", "up"])
def test_a_flap_of_zero_seconds_is_refused_naming_the_field(tmp_path, field):
    flap = {"down": "1s", "up": "1s", field: "0s"}
    msg = _broken(tmp_path, lambda d: _fault(d, {"link": ["h1", "s1"], "flap": flap}))
    assert f"phases.0.faults.0.flap.{field}: {field} must be longer than 0s" in msg


def test_a_flap_with_too_many_events_names_link_flap_phase_count_and_limit(tmp_path):
    flap = {"down": "100us", "up": "100us"}
    msg = _broken(tmp_path, lambda d: _fault(d, {"link": ["h1", "s1"], "flap": flap}))
    assert (
        "phase flows faults.0: flap on h1-s1 (down 0.1ms, up 0.1ms) from 0ms to 5s of a 5s phase makes 50000"
        " events, more than the limit of 10000 per phase" in msg
    )


def test_the_event_limit_is_per_phase_over_all_its_faults(tmp_path):
    flap = {"down": "1ms", "up": "1ms"}  # 5000 events each
    msg = _broken(tmp_path, lambda d: d["phases"][0].update(faults=[{"link": ["h1", "s1"], "flap": flap}] * 3))
    assert "phase flows: its faults make 15000 events (faults.0 5000, faults.1 5000, faults.2 5000)" in msg
    assert "more than the limit of 10000 per phase" in msg


@pytest.mark.parametrize(
    ("fault", "why"),
    [({"link": ["h1", "s1"], "at": "5s", "action": "down"},
      "at 5s is not before the phase's end (5s, its longest task): the action would never happen"),
     ({"link": ["h1", "s1"], "flap": {"down": "1s", "up": "1s"}, "stop": "8s"},
      "stop 8s is after the phase's end (5s)"),
     ({"link": ["h1", "s1"], "flap": {"down": "1s", "up": "1s"}, "start": "6s"},
      "the first outage (start + offset = 6s) is not before the pattern's end (5s): the flap never happens")],
)  # fmt: skip
def test_faults_outside_their_phase_are_refused(tmp_path, fault, why):
    msg = _broken(tmp_path, lambda d: _fault(d, fault))
    assert f"phase flows faults.0: {why}" in msg


def test_a_task_of_zero_seconds_is_refused(tmp_path):
    msg = _broken(tmp_path, lambda d: d["phases"][0]["tasks"][0].update(duration="0s"))
    assert "phases.0: phase flows, task f1: duration must be a finite time longer than 0s" in msg


def test_repetitions_are_bounded(tmp_path):
    msg = _broken(tmp_path, lambda d: d["profiles"]["quick"].update(repetitions=10**6))
    assert "repetitions: 1000000 is not within 1..1000" in msg


def test_the_sweep_is_capped_before_it_is_expanded(tmp_path, monkeypatch):
    def expand(*_):
        raise AssertionError("the sweep was expanded")

    monkeypatch.setattr(spec.itertools, "product", expand)
    axes = {"topology": ["hub", "switched", "dual_homed"], "rate": [f"{n}Mbit" for n in range(1, 201)],
            "protocol": ["tcp", "udp"] * 25}  # fmt: skip
    msg = _broken(tmp_path, lambda d: d.update(sweep=axes))
    assert (
        "sweep: 50 x 200 x 3 = 30000 points exceeds the limit of 10000 (axes: protocol 50, rate 200, topology 3)"
    ) in msg  # in the file's order (safe_dump sorts the keys)


@pytest.mark.parametrize(
    ("file", "why"),
    [("../../../etc/passwd.csv", "'..' is not allowed; seed tables live in seed-tables/"),
     ("seed-tables/../schema.csv", "'..' is not allowed"),
     ("/etc/passwd.csv", "an absolute path; give a path relative to the spec's folder"),
     ("elsewhere/x.csv", "not a file in seed-tables/"),
     ("seed-tables.csv", "not a file in seed-tables/")],
)  # fmt: skip
def test_a_table_reference_must_stay_in_seed_tables(tmp_path, file, why):
    ref = {"file": file, "citation": "nowhere"}
    msg = _broken(tmp_path, lambda d: d["tables"][0].update(reference=ref))
    assert f"tables.0: table throughput: reference.file {file!r}: {why}" in msg


def test_a_table_reference_through_a_symlink_out_of_seed_tables_is_refused(tmp_path):
    outside = tmp_path / "outside.csv"
    outside.write_text("topology,rate,f1_goodput_bits_per_second\n")
    (tmp_path / "seed-tables").mkdir()
    (tmp_path / "seed-tables" / "link.csv").symlink_to(outside)
    ref = {"file": "seed-tables/link.csv", "citation": "a link"}
    msg = _broken(tmp_path, lambda d: d["tables"][0].update(reference=ref))
    assert f"tables: table throughput: reference 'seed-tables/link.csv' resolves to {outside}, outside" in msg


def test_yaml_aliases_that_multiply_or_nest_in_themselves_are_refused(tmp_path):
    levels = "abcdefg"  # each a list of ten of the one before: 10**7 values from a 7-line file
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [{', '.join([f'*{p}'] * 10)}]\n" for p, c in zip(levels, levels[1:], strict=False)
    )
    f = tmp_path / "bomb.yaml"
    f.write_text(bomb)
    with pytest.raises(spec.SpecError, match="more than 100000 values"):
        spec.load(f)
    f.write_text("name: &n [*n]\n")
    with pytest.raises(spec.SpecError, match="a YAML alias contains itself"):
        spec.load(f)


def test_skip_leaves_combinations_out_and_keeps_point_ids(tmp_path):
    data = yaml.safe_load(SMOKE.read_text())
    data["skip"] = [{"topology": "hub", "rate": "100Mbit"}, {"topology": "switched", "rate": "10Mbit"}]
    f = tmp_path / "paired.yaml"
    f.write_text(yaml.safe_dump(data, sort_keys=False))  # the axes in the file's order: the same product
    full = spec.load(SMOKE, "quick")
    plan = spec.load(f, "quick")
    pairs = {(p.values["topology"], p.values["rate"]) for p in plan.points}
    assert pairs == {("hub", "10Mbit"), ("switched", "100Mbit"), ("dual_homed", "10Mbit"), ("dual_homed", "100Mbit")}
    assert len(plan.points) == len(full.points) - 4
    ids = {p.index: p.values for p in full.points}
    assert all(ids[p.index] == p.values for p in plan.points)  # the same point keeps its id


@pytest.mark.parametrize(
    ("skip", "why"),
    [([{"colour": "red"}], "skip[0]: 'colour' is not a sweep axis (axes: "),
     ([{"rate": "1Gbit"}], "skip[0]: axis rate has no value '1Gbit' (10Mbit, 100Mbit)"),
     ([{}], "skip[0]: must map one or more sweep axes to a value"),
     ({"rate": "10Mbit"}, "skip: must be a list of mappings of axis values"),
     ([{"rate": "10Mbit"}, {"rate": "100Mbit"}], "skip: leaves no point of the sweep to measure")],
)  # fmt: skip
def test_a_skip_that_cannot_match_is_an_error(tmp_path, skip, why):
    assert why in _broken(tmp_path, lambda d: d.update(skip=skip))
