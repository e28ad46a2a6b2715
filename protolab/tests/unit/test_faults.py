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
