"""Link impairments as data: what one direction of a link does to packets, and where it is applied.

An impairment belongs to one direction of one link (`from` -> `to`), applied at the sender's egress
(`at: sender`, the default) or at the receiver's ingress (`at: receiver`, through an IFB). The backends
that install them are in protolab.lab.impair. netem's queue limit is sized from rate x (delay + jitter) so the
1000-packet default never drops silently.
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, WithJsonSchema, model_validator

from ..units import TEMPLATE_SCHEMA, BitsPerSecond, Seconds
from .base import Strict

MTU_FRAME_BYTES = 1514
DEFAULT_RATE_FOR_LIMIT = 1e9  # when a link has no rate, size queues as if it ran at 1 Gbit/s
MIN_LIMIT_PACKETS = 1000

MAX_BER = 1e-2  # above it almost no 1 KiB packet arrives (1-(1-1e-2)^8192 ~ 1): refused, not emulated


def parse_percent(value: str | float | int) -> float:
    """'1%' -> 0.01 (a ratio). A bare number is refused: say '%'."""
    if isinstance(value, str) and value.strip().endswith("%"):
        try:
            ratio = float(value.strip()[:-1]) / 100
        except ValueError:
            raise ValueError(f"{value!r} is not a percentage like '1%' or '0.5%'") from None
        if not 0 <= ratio <= 1:
            raise ValueError(f"{value!r} is outside 0%..100%")
        return ratio
    raise ValueError(f"{value!r} is not a percentage; write it with '%', e.g. '1%'")


Percent = Annotated[
    float,
    BeforeValidator(parse_percent),
    WithJsonSchema({"anyOf": [{"type": "string", "pattern": r"^\s*\d+(\.\d+)?\s*%\s*$"}, TEMPLATE_SCHEMA]}),
]

PERCENT_FIELDS = ("loss", "duplicate", "reorder", "corrupt", "p", "r", "loss_bad", "loss_good")


def percents_as_written(d: dict[str, Any]) -> dict[str, Any]:
    """An impairment's JSON dump with its shares as '1%' again, digit for digit: Percent dumps a bare ratio
    and reads only a percentage, so a dump goes back through the model only this way."""
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            v = percents_as_written(v)
        elif k in PERCENT_FIELDS and isinstance(v, (int, float)) and not isinstance(v, bool):
            v = f"{Decimal(repr(float(v))) * 100}%"
        out[k] = v
    return out


class GilbertElliott(Strict):
    """netem's `loss gemodel p r 1-h 1-k`: p good->bad, r bad->good, loss in the bad and good states."""

    p: Percent = Field(..., description="probability of moving from the good to the bad state")
    r: Percent = Field(..., description="probability of moving from the bad to the good state")
    loss_bad: Percent = Field(1.0, description="loss probability in the bad state (netem's 1-h)")
    loss_good: Percent = Field(0.0, description="loss probability in the good state (netem's 1-k)")

    def mean_loss(self) -> float:
        """Stationary loss rate: pi_bad * loss_bad + pi_good * loss_good."""
        if self.p + self.r == 0:
            return self.loss_good
        bad = self.p / (self.p + self.r)
        return bad * self.loss_bad + (1 - bad) * self.loss_good


class Impairment(Strict):
    """What one direction of a link does to packets."""

    rate: BitsPerSecond | None = Field(None, description="line rate of this direction, e.g. '10Mbit'")
    delay: Seconds | None = Field(None, description="added one-way delay, e.g. '10ms'")
    jitter: Seconds | None = Field(None, description="delay variation, e.g. '2ms'")
    distribution: Literal["uniform", "normal", "pareto", "paretonormal"] = "normal"
    loss: Percent | None = Field(None, description="random loss, e.g. '1%'")
    loss_model: GilbertElliott | None = Field(None, description="bursty loss instead of random loss")
    duplicate: Percent | None = None
    reorder: Percent | None = Field(None, description="share of packets sent without the delay (needs delay)")
    corrupt: Percent | None = Field(None, description="share of packets with one bit flipped")
    ber: float | None = Field(
        None, gt=0, le=MAX_BER, description=f"bit error rate, e.g. 1e-6: per-packet by size; at most {MAX_BER:g}"
    )
    limit: int | None = Field(None, ge=1, description="queue limit in packets (default: sized from rate x delay)")
    queue: Literal["fifo", "dscp"] = Field(
        "fifo",
        description="fifo: one queue; dscp: strict priority, packets marked EF (DSCP 46) or CS6/CS7 (48, 56) "
        "leave before the rest (each band its own queue of `limit` packets)",
    )

    @model_validator(mode="after")
    def _consistent(self) -> Impairment:
        if self.loss is not None and self.loss_model is not None:
            raise ValueError("give loss (random) or loss_model (Gilbert-Elliott), not both")
        if self.jitter and not self.delay:
            raise ValueError("jitter needs a delay")
        if self.reorder and not self.delay:
            raise ValueError("reorder needs a delay (reordered packets are the ones sent without it)")
        if self.corrupt is not None and self.ber is not None:
            raise ValueError("give corrupt (per packet) or ber (per bit), not both")
        return self

    def shaping_only(self) -> bool:
        return all(getattr(self, f) in (None, 0) for f in ("delay", "jitter", "loss", "loss_model", "duplicate",
                                                           "reorder", "corrupt", "ber"))  # fmt: skip

    def queue_limit(self) -> int:
        """Packets that fit in rate x (delay + 4 jitter), doubled, at least 1000 (netem's default)."""
        if self.limit:
            return self.limit
        rate = self.rate or DEFAULT_RATE_FOR_LIMIT
        hold = (self.delay or 0) + 4 * (self.jitter or 0)
        return max(MIN_LIMIT_PACKETS, math.ceil(2 * rate * hold / (8 * MTU_FRAME_BYTES)))

    def corrupt_probability(self, packet_bytes: int = 1500) -> float | None:
        """Per-packet corruption: `corrupt`, or 1 - (1 - ber)^(8 * size) for a bit error rate."""
        if self.ber is not None:
            return 1 - (1 - self.ber) ** (8 * packet_bytes)
        return self.corrupt

    def netem_args(self, packet_bytes: int = 1500) -> list[str]:
        args = ["limit", str(self.queue_limit())]
        if self.delay:
            args += ["delay", f"{self.delay * 1e6:.0f}us"]
            if self.jitter:
                args += [f"{self.jitter * 1e6:.0f}us", "distribution", self.distribution]
        if self.loss:
            args += ["loss", "random", f"{self.loss * 100:.6g}%"]
        if self.loss_model:
            g = self.loss_model
            args += ["loss", "gemodel"] + [f"{x * 100:.6g}%" for x in (g.p, g.r, g.loss_bad, 1 - g.loss_good)]
        if self.duplicate:
            args += ["duplicate", f"{self.duplicate * 100:.6g}%"]
        if self.reorder:
            args += ["reorder", f"{self.reorder * 100:.6g}%"]
        corrupt = self.corrupt_probability(packet_bytes)
        if corrupt:
            args += ["corrupt", f"{corrupt * 100:.6g}%"]
        return args


class LinkImpairment(Impairment):
    """An impairment on the link between two topology nodes, in one or both directions."""

    link: tuple[str, str] = Field(..., description="the two nodes the link joins, e.g. [h1, s1]")
    direction: Literal["both", "forward", "reverse"] = Field(
        "both", description="forward: link[0] -> link[1]; reverse: link[1] -> link[0]"
    )
    at: Literal["sender", "receiver"] = Field(
        "sender", description="sender: egress qdisc; receiver: ingress of the far end (through an IFB)"
    )

    def directions(self) -> list[tuple[str, str]]:
        a, b = self.link
        return {"both": [(a, b), (b, a)], "forward": [(a, b)], "reverse": [(b, a)]}[self.direction]

    def hub_conflict(self, hubs: set[str]) -> str | None:
        """Why this impairment cannot go where it asks (None: it can): a hub takes its ports' ingress for its
        shared medium, so nothing else can sit at a hub's receiving end."""
        if self.at != "receiver":
            return None
        for src, dst in self.directions():
            if dst in hubs:
                return (f"at: receiver on {src} -> {dst}: {dst} is a hub, whose ports' ingress is its shared "
                        f"medium; impair the direction out of the hub instead ({dst} -> <node>, at: sender: the "
                        "hub's port, not the sending node's own output path)")  # fmt: skip
        return None

    def impairment(self) -> Impairment:
        fields = {k: getattr(self, k) for k in Impairment.model_fields}  # already validated: no re-parsing
        return Impairment.model_construct(_fields_set=self.model_fields_set & set(fields), **fields)


def merge_over(settings: dict[tuple[str, str], tuple[Impairment, str]], item: LinkImpairment) -> None:
    """The lab's one rule for a spec item over what a direction already has: on each direction the item names,
    the fields it sets replace that direction's, the others stay, and the item's `at` is where it applies."""
    given = {k: getattr(item, k) for k in item.model_fields_set if k not in ("link", "direction", "at")}
    for d in item.directions():
        base = settings.get(d, (Impairment(), item.at))[0]
        settings[d] = (base.model_copy(update=given), item.at)
