"""A `Specification` expanded into measurement jobs: plain data, one job per initiator-responder pair.

Job ids are `s<statement>.p<part>.r<replica>`, all 1-based (a basic statement is part 1, replica 1). The jobs
of one statement share its `group`: they start together and run `runs` times in lockstep; groups run one
after another in the order of the text. Defaults are filled in here (1 replica, BYTES, memory to memory,
the request size for the reply), so a job says everything its initiator needs. `sample` draws from a
job's distributions with a caller's seeded `random.Random`.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import asdict, dataclass
from typing import Any, Literal, Protocol

from protolab.spims.ast import (
    Access,
    BasicMeasurement,
    CompositeMeasurement,
    Distribution,
    Specification,
    UnitSize,
)
from protolab.spims.validate import APPLICATION_TYPES, canonical_application


@dataclass(frozen=True)
class Dist:
    """A distribution by name and parameters (see `validate.DISTRIBUTIONS` for their order)."""

    name: str
    params: tuple[float, ...]


@dataclass(frozen=True)
class Endpoint:
    """Where data units come from or go to: memory, virtual_memory, or file with its path."""

    access: str
    path: str | None = None


@dataclass(frozen=True)
class Job:
    id: str
    group: int  # the statement (1-based)
    composer: str | None  # parallel, background, total; None for a basic statement
    role: Literal["measured", "background"]
    high_priority: bool  # a measured part of `priority background:`
    type: str  # canonical application type
    runs: int  # <num runs>: times the measurement is repeated
    time_limit_s: float | None  # TIMELIMIT; None: unlimited
    initiator_host: str | None  # FROM; None: the runner's choice
    responder_host: str | None  # TO
    protocol: str | None  # not in the language: the caller says what the same spec is run over
    data_type: str
    size_bytes: Dist  # data unit size, drawn per data unit
    reply_size_bytes: Dist | None  # request_response's reply size; None for one-way types
    count: int | None  # data units per run; None: until amount_bytes or the time limit
    amount_bytes: int | None
    source: Endpoint
    destination: Endpoint
    inter_send_delay_s: Dist | None  # first timing: before each send at the initiator
    reply_delay_s: Dist | None  # second timing: the responder's before each reply (service time)

    def as_dict(self) -> dict[str, Any]:
        return json.loads(json.dumps(asdict(self)))  # tuples -> lists: exactly what JSON carries


def _dist(u: UnitSize | Distribution) -> Dist:
    if isinstance(u, Distribution):
        return Dist(u.name, tuple(float(p) for p in u.params))
    return Dist("constant", (float(u),))


def _endpoint(a: Access | None) -> Endpoint:
    return Endpoint("memory") if a is None else Endpoint(a.kind, a.path)


def _job(m: BasicMeasurement, **kw: Any) -> Job:
    app = canonical_application(m.application) or m.application
    s = m.data.size
    reply = s.reply_size if s.reply_size is not None else s.size
    timings = [_dist(t) for t in m.timings] + [None, None]
    return Job(
        type=app,
        initiator_host=m.from_host,
        responder_host=m.to_host,
        data_type=(m.data.data_type or "bytes").lower(),
        size_bytes=_dist(s.size),
        reply_size_bytes=_dist(reply) if APPLICATION_TYPES[app].two_way else None,
        count=s.count,
        amount_bytes=s.amount,
        source=_endpoint(m.data.source),
        destination=_endpoint(m.data.destination),
        inter_send_delay_s=timings[0],
        reply_delay_s=timings[1],
        **kw,
    )


def expand(spec: Specification, protocol: str | None = None) -> list[Job]:
    """Every job of `spec` in order; a part with 0 replicas gives none (Diagram 1's N = 0)."""
    jobs: list[Job] = []
    for g, st in enumerate(spec.statements, 1):
        common = {"group": g, "runs": st.runs, "time_limit_s": st.time_limit_s, "protocol": protocol}
        m = st.measurement
        if not isinstance(m, CompositeMeasurement):
            jobs.append(_job(m, id=f"s{g}.p1.r1", composer=None, role="measured", high_priority=False, **common))
            continue
        for p, part in enumerate(m.parts, 1):
            background = m.composer == "background" and p > 1
            for r in range(1, (1 if part.replicas is None else part.replicas) + 1):
                jobs.append(
                    _job(
                        part.measurement,
                        id=f"s{g}.p{p}.r{r}",
                        composer=m.composer,
                        role="background" if background else "measured",
                        high_priority=m.priority and not background,
                        **common,
                    )
                )
    return jobs


def to_json(jobs: list[Job]) -> str:
    return json.dumps([j.as_dict() for j in jobs], indent=2)


class _HasParams(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def params(self) -> tuple[float, ...]: ...


def sample(d: _HasParams, rng: random.Random) -> float:
    """One draw from `d` (a job's `Dist` or the tree's `Distribution`); never negative: normal is cut at 0."""
    p = d.params
    if d.name == "constant":
        return float(p[0])
    if d.name == "uniform":
        return rng.uniform(p[0], p[1])
    if d.name == "normal":
        return max(0.0, rng.gauss(p[0], p[1]))
    if d.name == "exponential":
        return rng.expovariate(1.0 / p[0])
    if d.name == "bivalue":
        return float(p[0] if rng.random() < p[2] else p[1])
    raise ValueError(f"unknown distribution {d.name!r}")


def sample_size(d: _HasParams, rng: random.Random) -> int:
    """A data unit size in bytes: a draw rounded to the nearest integer."""
    x = sample(d, rng)
    return int(round(x)) if math.isfinite(x) else 0
