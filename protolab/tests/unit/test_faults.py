"""Fault schedules as data: flap expansion and validation (no root needed)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from protolab.faults import Fault


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
