"""The self-check's delay bound from measured noise, on a real lab.

- A real 0.5 ms error is still caught: a link configured for 10 ms that holds packets 10.5 ms (the spec's setting
  unchanged, the link's mechanism, netem or protolab-linkem, told 10.5 ms) fails, under either backend (skipped,
  saying so, when the machine's noise widened the bound past the check's resolution in every attempt). (A change
  made to the mechanism behind LinkState's back is undone by the base measurement's pass-through and restore,
  which re-apply what LinkState has in force, before the main series: the link is then measured as it is set.)
- Its false-INVALID rate: PROTOLAB_SELFCHECK_PROBES probes (unset: skipped; the long profile is 500 or more) of links
  that are not delayed (1 % loss both ways: multihomed-failover's condition, which came out INVALID at 0.643 ms
  against ±0.633 ms when its base was taken as 0) and of delayed ones (10 ms; 5 ms with 0.5 ms of jitter), every
  probe's figures appended to PROTOLAB_SELFCHECK_LOG (JSON lines) when set. The delay check must never fail; the
  loss check's 99.9 % interval misses one probe in a thousand by design, so its misses are bounded by that.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from scipy.stats import binom

from protolab import topo
from protolab.lab import Lab, impair, selfcheck
from protolab.model.impairment import Impairment, LinkImpairment

pytestmark = pytest.mark.integration


def _lab(backend: impair.Backend | None, *items: dict) -> Lab:
    t = topo.build("switched", {"hosts": 4, "rate": "1Gbit"})  # h4's link is never impaired: a probe's far end
    imps = [LinkImpairment.model_validate(i) for i in items]
    return Lab(t, "itest", {h.name: "protolab/node:latest" for h in t.hosts}, impairments=imps, backend=backend)


@pytest.mark.parametrize("backend", [impair.NetemBackend, impair.FallbackBackend], ids=["netem", "fallback"])
def test_a_real_half_millisecond_error_is_caught(no_leftovers, backend):
    usable, why = backend().available()
    if not usable:
        pytest.skip(f"the {backend.name} backend is not usable on this machine: {why}")
    with _lab(backend(), {"link": ["h1", "s1"], "direction": "forward", "delay": "10ms"}) as lab:
        (ok,) = selfcheck.run_all(lab, log=lambda _: None)
        assert ok["passed"], selfcheck.summarize(ok)
        lab.links.step(("h1", "s1"), "forward", Impairment(delay="10.5ms"))
        assert lab.configured[("h1", "s1")][0].delay == 0.010  # what the spec said is unchanged
        (bad,) = selfcheck.run_all(lab, log=lambda _: None)
        m, said = bad["measured"], f"{selfcheck.summarize(bad)}; measured {bad['measured']}; notes {bad['notes']}"
        if bad.get("unresolved") and bad["passed"]:  # the check said it could not tell 0.5 ms on this machine now
            assert m["rtt_bound_seconds"] > m["rtt_resolution_seconds"], said
            pytest.skip(f"the machine's noise left the check unable to resolve 0.5 ms, so it cannot be judged: {said}")
        assert not bad["passed"], said
        assert m["rtt_bound_seconds"] < m["rtt_added_seconds"] - 0.010 < 0.001, said  # 0.5 ms and the emulator's own
        assert any("configured 10.000 ms (bound ±" in f for f in bad["failures"]), said
        assert lab.current[("h1", "s1")][0].delay == 0.0105  # put back as it was, not as the spec has it


def test_false_invalid_rate_of_the_self_check(no_leftovers, tmp_path):
    probes = int(os.environ.get("PROTOLAB_SELFCHECK_PROBES", "0"))
    if probes <= 0:
        pytest.skip("the long profile: set PROTOLAB_SELFCHECK_PROBES (500 or more; ~6 s a probe); in 500 probes on "
                    "this 2-core VM (fallback backend) 6 missed, all the 10 ms linkem direction: 10.25-10.39 ms added "
                    "against bounds of ±0.25-0.38 ms (linkem's added delay runs ~1 % over at 10-20 ms)")  # fmt: skip
    log = Path(os.environ.get("PROTOLAB_SELFCHECK_LOG", tmp_path / "probes.jsonl"))
    items = [
        {"link": ["h1", "s1"], "loss": "1%"},  # not delayed: its own base only
        {"link": ["s1", "h2"], "direction": "forward", "delay": "10ms"},
        {"link": ["h3", "s1"], "direction": "forward", "delay": "5ms", "jitter": "0.5ms"},
    ]
    delay_misses, loss_misses, lossy, done = [], [], 0, 0
    with _lab(None, *items) as lab, log.open("a") as out:
        while done < probes:
            for r in selfcheck.run_all(lab, log=lambda _: None):
                m, c = r["measured"], r["configured"]
                rec = {"at": time.time(), "backend": lab.links.backend.name, "from": r["from"], "to": r["to"],
                       "configured_rtt_seconds": c["rtt_seconds"], "passed": r["passed"], "failures": r["failures"],
                       **{k: m.get(k) for k in ("rtt_mean_seconds", "rtt_stddev_seconds", "rtt_added_seconds",
                                                "rtt_bound_seconds", "rtt_base", "loss_ratio")}}  # fmt: skip
                out.write(json.dumps(rec) + "\n")
                out.flush()
                delay_misses += [f for f in r["failures"] if f.startswith("RTT")]
                loss_misses += [f for f in r["failures"] if f.startswith("loss")]
                lossy += c["loss_ratio"] > 0
                done += 1
    assert delay_misses == [], delay_misses
    # each lossy probe misses with probability 0.1 % (LOSS_CONFIDENCE): more misses than 1 in 10^4 runs would see
    assert len(loss_misses) <= binom.ppf(1 - 1e-4, lossy, 1 - selfcheck.LOSS_CONFIDENCE), loss_misses
