"""Fault schedules as data: flap expansion and validation (no root needed)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from protolab.model.faults import MAX_FAULT_EVENTS_PER_PHASE, Fault, Flap


def test_sciop_flap_pattern_two_links_out_of_phase():
    # Thaker et al.: each link 4 s down / 12 s up, the two links 8 s out of phase: one is always up
    a = Fault.model_validate({"link": ["h1", "s1"], "flap": {"down": "4s", "up": "12s"}})
    b = Fault.model_validate({"link": ["h1", "s2"], "flap": {"down": "4s", "up": "12s", "offset": "8s"}})
    ea, eb = a.events(40), b.events(40)
    assert [(e.at, e.action) for e in ea] == [(0, "down"), (4, "up"), (16, "down"), (20, "up"), (32, "down"),
                                               (36, "up")]  # fmt: skip
    assert [(e.at, e.action) for e in eb][:2] == [(8, "down"), (12, "up")]
    down_a = [(e.at, e.at + 4) for e in ea if e.action == "down"]
    down_b = [(e.at, e.at + 4) for e in eb if e.action == "down"]
    assert not any(s1 < e2 and s2 < e1 for s1, e1 in down_a for s2, e2 in down_b)  # never both down


def test_a_flap_ending_mid_outage_leaves_the_restore_to_the_phase_end():
    f = Fault.model_validate({"link": ["h1", "s1"], "flap": {"down": "4s", "up": "2s"}, "stop": "5s"})
    assert [(e.at, e.action) for e in f.events(60)] == [(0, "down"), (4, "up")]


def test_single_actions_and_step_changes():
    down = Fault.model_validate({"link": ["h1", "s1"], "at": "2.5s", "action": "down"})
    assert [(e.at, e.action, e.name) for e in down.events(10)] == [(2.5, "down", "h1-s1")]
    step = Fault.model_validate({"link": ["h1", "s1"], "at": "1s", "set": {"loss": "5%"}, "direction": "forward"})
    (ev,) = step.events(10)
    assert ev.action == "set" and ev.impairment.loss == pytest.approx(0.05) and ev.direction == "forward"


@pytest.mark.parametrize(
    "fields",
    [{"link": ["h1", "s1"], "action": "down"}, {"link": ["h1", "s1"], "at": "1s"},
     {"link": ["h1", "s1"], "at": "1s", "action": "down", "flap": {"down": "1s", "up": "1s"}},
     {"link": ["h1", "s1"], "at": "1s", "flap": {"down": "1s", "up": "1s"}}],
)  # fmt: skip
def test_ambiguous_faults_are_refused(fields):
    with pytest.raises(ValidationError):
        Fault.model_validate(fields)


@pytest.mark.parametrize("field", ["down", "up"])
def test_a_flap_of_zero_or_less_is_refused(field):
    with pytest.raises(ValidationError) as err:
        Fault.model_validate({"link": ["h1", "s1"], "flap": {"down": "1s", "up": "1s", field: "0s"}})
    (e,) = err.value.errors()
    assert e["loc"] == ("flap", field) and f"{field} must be longer than 0s" in e["msg"]


def test_events_refuse_a_zero_period_instead_of_looping():
    f = Fault.model_validate({"link": ["h1", "s1"], "flap": {"down": "1s", "up": "1s"}})
    f.flap = Flap.model_construct(down=0.0, up=0.0, offset=0.0)  # as if validation had been skipped
    with pytest.raises(ValueError, match="down and up must be longer than 0s"):
        f.events(10)


def test_events_refuse_more_than_the_limit_instead_of_making_them():
    f = Fault.model_validate({"link": ["h1", "s1"], "flap": {"down": "1ms", "up": "1ms"}})
    assert f.event_count(10) == len(f.events(10)) == MAX_FAULT_EVENTS_PER_PHASE
    with pytest.raises(ValueError) as err:
        f.events(60)
    assert str(err.value) == (
        "flap on h1-s1 (down 1ms, up 1ms) from 0ms to 60s of a 60s phase makes 60000 events,"
        " more than the limit of 10000 per phase"
    )


@pytest.mark.parametrize(
    ("flap", "stop", "phase"),
    [({"down": "4s", "up": "12s"}, None, 40), ({"down": "4s", "up": "2s"}, "5s", 60),
     ({"down": "100ms", "up": "100ms", "offset": "50ms"}, None, 5), ({"down": "3ms", "up": "7ms"}, "1s", 1.0),
     ({"down": "0.1ms", "up": "0.1ms"}, None, 1.0)],
)  # fmt: skip
def test_event_count_matches_the_expansion(flap, stop, phase):
    f = Fault.model_validate({"link": ["h1", "s1"], "flap": flap} | ({"stop": stop} if stop else {}))
    assert f.event_count(phase) == len(f.events(phase))


def test_start_and_stop_belong_to_flaps_and_stop_comes_after_start():
    with pytest.raises(ValidationError, match="`start`/`stop` belong to a flap"):
        Fault.model_validate({"link": ["h1", "s1"], "at": "1s", "action": "down", "stop": "3s"})
    with pytest.raises(ValidationError, match=r"stop \(2s\) must be after start \(3s\)"):
        Fault.model_validate({"link": ["h1", "s1"], "flap": {"down": "1s", "up": "1s"}, "start": "3s", "stop": "2s"})


def test_check_refuses_faults_past_the_phase_end():
    late = Fault.model_validate({"link": ["h1", "s1"], "at": "12s", "action": "down"})
    with pytest.raises(ValueError, match=r"at 12s is not before the phase's end \(10s, its longest task\)"):
        late.check(10)
    late.check(12.5)


# -- node faults -----------------------------------------------------------------------------------------


def _events(fields, phase=10.0):
    return [(e.at, e.action) for e in Fault.model_validate(fields).events(phase)]


def test_node_faults_expand_into_their_start_and_end_inside_the_phase():
    assert _events({"node": "h2", "at": "2s", "action": "kill"}) == [(2, "kill")]
    assert _events({"node": "h2", "at": "2s", "action": "kill", "for": "3s"}) == [(2, "kill"), (5, "restart")]
    assert _events({"node": "h2", "at": "1s", "action": "pause", "for": "1s"}) == [(1, "pause"), (2, "unpause")]
    assert _events({"node": "h2", "at": "5s", "action": "restart"}) == [(5, "restart")]
    assert _events({"node": "h2", "at": "2s", "cpu": 0.25, "for": "8s"}) == [(2, "cpu")]  # the phase's restore ends it
    (cpu,) = Fault.model_validate({"node": "h2", "at": "2s", "cpu": 0.25}).events(10)
    assert (cpu.name, cpu.node, cpu.link, cpu.cores, cpu.detail) == ("h2", "h2", (), 0.25, "0.25 cores")


def test_a_stress_lasts_for_its_for_or_to_the_phase_end():
    f = Fault.model_validate({"node": "h2", "at": "1s", "stress": {"cpu": 1, "memory": "64MiB"}, "for": "3s"})
    start, stop = f.events(10)
    assert (start.action, start.cores, start.memory, start.until) == ("stress", 1.0, 64 * 2**20, 4.0)
    assert start.detail == "cpu 1, memory 64MiB until 4s" and (stop.at, stop.action) == (4.0, "stress_stop")
    (alone,) = Fault.model_validate({"node": "h2", "at": "1s", "stress": {"cpu": 0.5}}).events(6)
    assert (alone.cores, alone.memory, alone.until) == (0.5, None, 6.0)


@pytest.mark.parametrize(
    "fields",
    [{"node": "h2", "at": "2s", "action": "kill"}, {"node": "h2", "at": "2s", "action": "kill", "for": "1s"},
     {"node": "h2", "at": "2s", "action": "pause", "for": "20s"}, {"node": "h2", "at": "0s", "stress": {"cpu": 2}},
     {"node": "h2", "at": "9s", "cpu": 1, "for": "0.5s"}],
)  # fmt: skip
def test_event_count_matches_the_expansion_of_node_faults(fields):
    f = Fault.model_validate(fields)
    assert f.event_count(10) == len(f.events(10))


@pytest.mark.parametrize(
    ("fields", "message"),
    [({"at": "1s", "action": "kill"}, "a fault needs what it acts on: `link: [a, b]` or `node: name`"),
     ({"link": ["h1", "s1"], "node": "h2", "at": "1s", "action": "down"}, "not on both"),
     ({"node": "h2", "at": "1s"}, "this one has none"),
     ({"node": "h2", "at": "1s", "action": "pause", "cpu": 0.5}, "this one has `action` and `cpu`"),
     ({"node": "h2", "at": "1s", "stress": {"cpu": 1}, "cpu": 0.5}, "this one has `stress` and `cpu`"),
     ({"node": "h2", "at": "1s", "action": "down"}, "action down is a link's (with `link: [a, b]`)"),
     ({"link": ["h1", "s1"], "at": "1s", "action": "pause"}, "action pause is a node's (with `node: name`)"),
     ({"link": ["h1", "s1"], "at": "1s", "cpu": 0.5}, "`cpu` is a node fault: give `node: name` instead of `link`"),
     ({"link": ["h1", "s1"], "at": "1s", "stress": {"cpu": 1}}, "`stress` is a node fault"),
     ({"node": "h2", "at": "1s", "set": {"loss": "1%"}}, "`set` is a link fault: give `link: [a, b]` instead"),
     ({"node": "h2", "flap": {"down": "1s", "up": "1s"}}, "`flap` is a link fault"),
     ({"node": "h2", "action": "kill"}, "`at` is required: when (after the phase start) the kill on h2 happens"),
     ({"node": "h2", "at": "1s", "action": "kill", "direction": "forward"}, "`direction`: link faults only"),
     ({"node": "h2", "at": "1s", "action": "restart", "for": "1s"}, "`for` ends a kill (with a restart), a pause"),
     ({"node": "h2", "at": "1s", "action": "pause", "for": "0s"}, "for must be longer than 0s"),
     ({"link": ["h1", "s1"], "at": "1s", "action": "down", "for": "1s"}, "`for` belongs to node faults")],
)  # fmt: skip
def test_a_fault_is_exactly_one_kind_on_one_target(fields, message):
    with pytest.raises(ValidationError) as err:
        Fault.model_validate(fields)
    assert message in str(err.value), str(err.value)


@pytest.mark.parametrize(
    ("fields", "loc", "message"),
    [({"node": "h2", "at": "1s", "cpu": 0.001}, ("cpu",), "cpu must be a budget of at least 0.01 cores"),
     ({"node": "h2", "at": "1s", "stress": {"cpu": -1}}, ("stress", "cpu"), "cpu must be a number of cores"),
     ({"node": "h2", "at": "1s", "stress": {}}, ("stress",), "a stress needs `cpu`"),
     ({"node": "h2", "at": "1s", "stress": {"memory": "0B"}}, ("stress", "memory"), "memory must be more than 0B"),
     ({"node": "h2", "at": "1s", "stress": {"cpu": 1, "disk": 1}}, ("stress", "disk"), "Extra inputs"),
     ({"node": "h2", "at": "1s", "action": "reboot"}, ("action",), "Input should be"),
     ({"node": "h2", "at": "1s", "action": "pause", "for": 2}, ("for",), "has no unit")],
)  # fmt: skip
def test_node_fault_errors_name_the_field(fields, loc, message):
    with pytest.raises(ValidationError) as err:
        Fault.model_validate(fields)
    (e,) = err.value.errors()
    assert e["loc"] == loc and message in e["msg"], e


def test_check_refuses_a_node_fault_past_the_phase_end_and_describes_it():
    late = Fault.model_validate({"node": "h2", "at": "12s", "action": "pause"})
    assert late.describe() == "pause on h2 at 12s"
    with pytest.raises(ValueError, match=r"at 12s is not before the phase's end"):
        late.check(10)
    Fault.model_validate({"node": "h2", "at": "1s", "stress": {"cpu": 1}, "for": "30s"}).check(10)  # ends with it


def test_records_say_what_a_fault_acted_on():
    (node,) = Fault.model_validate({"node": "h2", "at": "1s", "cpu": 0.5}).events(10)
    (link,) = Fault.model_validate({"link": ["h1", "s1"], "at": "1s", "action": "down"}).events(10)
    before = ["link", "action", "planned_seconds", "actual_seconds", "timing_error_seconds", "unix_time_seconds"]
    assert list(link.record())[:7] == [*before, "error"]  # the columns of faults.csv before node faults, in place
    assert (node.record()["link"], node.record()["target"], node.record()["detail"]) == ("h2", "node", "0.5 cores")
    assert (link.record()["target"], link.record()["detail"]) == ("link", None)


def test_all_out_finds_when_every_path_is_down_at_once():
    from protolab.model.faults import Fault, all_out

    def f(d):
        return Fault.model_validate(d)

    sciop = [f({"link": ["h1", "s1"], "flap": {"down": "4s", "up": "12s", "offset": "2s"}}),
             f({"link": ["h1", "s2"], "flap": {"down": "4s", "up": "12s", "offset": "10s"}})]  # fmt: skip
    paths = [("h1", "s1"), ("h1", "s2")]
    assert all_out(sciop, paths, 160) == []  # SCIOP's pattern: one path is always up
    overlap = [f({"link": ["h1", "s1"], "flap": {"down": "6s", "up": "10s", "offset": "2s"}}),
               f({"link": ["s2", "h1"], "flap": {"down": "4s", "up": "12s", "offset": "6s"}})]  # fmt: skip
    assert all_out(overlap, paths, 40) == [(6.0, 8.0), (22.0, 24.0), (38.0, 40)]
    black = [f({"link": ["h1", "s1"], "at": "5s", "action": "down"}),
             f({"link": ["h1", "s2"], "at": "7s", "set": {"loss": "100%"}}),
             f({"link": ["h1", "s2"], "at": "9s", "set": {"loss": "0%"}})]  # fmt: skip
    assert all_out(black, paths, 12) == [(7.0, 9.0)]
    assert all_out(black, [*paths, ("h2", "s1")], 12) == []  # a link no fault touches is never out
