"""The integration tests' judgement of a run only the hypervisor's steal made INVALID: skipped, saying why, and
nothing else is let off (another reason, a failed check, a valid run)."""

from __future__ import annotations

from protolab.tests.integration.conftest import steal_only

STEAL = "p003 rep 0 (topology=hub): the hypervisor withheld 0.70 cores from this virtual machine (CPU steal, > 0.5)"
PEAK = ("p008 rep 0 (topology=dual_homed, rate=10Mbit): the hypervisor withheld 0.67 cores from this virtual machine "
        "over 1 s of the measurement (CPU steal, > 0.5)")  # fmt: skip


def test_a_run_only_steal_made_invalid_cannot_be_judged():
    why = steal_only({"valid": False, "invalid_reasons": [STEAL, PEAK], "checks": [{"passed": True}]})
    assert why is not None and "cannot be judged" in why and "0.70 cores" in why


def test_anything_else_is_judged():
    other = "self-check r1->h2 (custom): RTT 11.136 ms on the path's own 0.576 ms, configured 10.000 ms"
    assert steal_only({"valid": False, "invalid_reasons": [STEAL, other], "checks": []}) is None
    assert steal_only({"valid": False, "invalid_reasons": [STEAL], "checks": [{"passed": False}]}) is None
    busy = STEAL + "; host CPU 97% busy (> 95%)"  # one measurement's reasons, joined: the lab's own load is judged
    assert steal_only({"valid": False, "invalid_reasons": [busy], "checks": []}) is None
    assert steal_only({"valid": True, "invalid_reasons": [], "checks": []}) is None
    assert steal_only({"valid": False, "invalid_reasons": [], "checks": []}) is None
