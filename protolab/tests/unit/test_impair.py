"""Impairment models: units, consistency, netem arguments and queue sizing (no root needed)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from protolab.impair import GilbertElliott, Impairment, LinkImpairment, parse_percent


def test_percent_needs_its_sign_and_bounds():
    assert parse_percent("1%") == pytest.approx(0.01) and parse_percent(" 0.5 % ") == pytest.approx(0.005)
    for bad in ("1", 1, "150%", "x%"):
        with pytest.raises(ValueError):
            parse_percent(bad)


def test_netem_arguments_carry_units_and_every_impairment():
    imp = Impairment(rate="10Mbit", delay="100ms", jitter="10ms", distribution="pareto", loss="1%",
                     duplicate="0.5%", reorder="25%", corrupt="0.1%")  # fmt: skip
    args = " ".join(imp.netem_args())
    assert "delay 100000us 10000us distribution pareto" in args
    for part in ("loss random 1%", "duplicate 0.5%", "reorder 25%", "corrupt 0.1%", "limit "):
        assert part in args, args


def test_queue_limit_is_sized_from_rate_and_delay():
    # 1 Gbit/s x 270 ms of satellite delay holds ~22,300 full frames; netem's default 1000 would drop
    big = Impairment(rate="1000Mbit", delay="270ms")
    assert big.queue_limit() == pytest.approx(2 * 1e9 * 0.27 / (8 * 1514), rel=0.01)
    assert Impairment(rate="10Mbit", delay="1ms").queue_limit() == 1000
    assert Impairment(limit=50).queue_limit() == 50


def test_gilbert_elliott_stationary_loss_and_netem_form():
    ge = GilbertElliott(p="1%", r="10%", loss_bad="100%", loss_good="0%")
    assert ge.mean_loss() == pytest.approx(0.01 / 0.11)
    args = Impairment(loss_model=ge).netem_args()
    assert args[args.index("gemodel") + 1 : args.index("gemodel") + 5] == ["1%", "10%", "100%", "100%"]


def test_ber_becomes_a_per_packet_probability_by_size():
    imp = Impairment(ber=1e-6)
    assert imp.corrupt_probability(1500) == pytest.approx(1 - (1 - 1e-6) ** 12000)
    assert imp.corrupt_probability(64) < imp.corrupt_probability(1500)


@pytest.mark.parametrize(
    ("fields", "message"),
    [({"loss": "1%", "loss_model": {"p": "1%", "r": "1%"}}, "not both"), ({"jitter": "1ms"}, "jitter needs a delay"),
     ({"reorder": "5%"}, "reorder needs a delay"), ({"corrupt": "1%", "ber": 1e-5}, "not both"),
     ({"delay": 10}, "has no unit")],
)  # fmt: skip
def test_inconsistent_impairments_are_refused(fields, message):
    with pytest.raises(ValidationError, match=message):
        Impairment.model_validate(fields)


def test_directions_of_a_link_impairment():
    item = LinkImpairment(link=("h1", "s1"), direction="both", loss="1%")
    assert item.directions() == [("h1", "s1"), ("s1", "h1")]
    assert LinkImpairment(link=("h1", "s1"), direction="reverse").directions() == [("s1", "h1")]
    assert item.impairment().loss == pytest.approx(0.01)
