"""The SPIMS abstract syntax: frozen dataclasses, one per production of Appendix B that carries data.

Names follow the paper, except that its <specification list> (a whole text) is a `Specification` and each
<specification> in it a `Statement`. Every node has a `pos` (where it was in the text, None for nodes built
in code) that takes no part in equality, so parse -> format -> parse gives an equal tree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal


@dataclass(frozen=True)
class Pos:
    """A place in the text: 1-based line and column, and the text found there."""

    line: int
    column: int
    text: str = ""


def _pos() -> Pos | None:
    return field(default=None, compare=False, repr=False)  # type: ignore[return-value]


@dataclass(frozen=True)
class Distribution:
    """<distribution>: a name and its parameters, e.g. uniform(64, 1024)."""

    name: str
    params: tuple[float, ...]
    pos: Pos | None = _pos()


UnitSize = int | Distribution  # <data unit size>: bytes, fixed or drawn per data unit


@dataclass(frozen=True)
class SizeSpec:
    """<size spec>: SIZE*COUNT, SIZE,REPLY_SIZE*COUNT, or SIZE [AMOUNT] (bytes in all)."""

    size: UnitSize
    count: int | None = None  # <num data units>
    reply_size: UnitSize | None = None  # the second size of SIZE,REPLY_SIZE*COUNT
    amount: int | None = None  # <amount of data>, bytes
    pos: Pos | None = _pos()  # of the (first) size
    count_pos: Pos | None = _pos()  # of the count or the amount
    reply_pos: Pos | None = _pos()


AccessKind = Literal["memory", "virtual_memory", "file"]


@dataclass(frozen=True)
class Access:
    """<access type>: MEMORY, VIRTUAL MEMORY or FILE name."""

    kind: AccessKind
    path: str | None = None
    pos: Pos | None = _pos()


@dataclass(frozen=True)
class DataSpec:
    """<data spec>: [data type] size spec [< source] [> destination]; None where the text left a default."""

    size: SizeSpec
    data_type: str | None = None
    source: Access | None = None
    destination: Access | None = None
    pos: Pos | None = _pos()


@dataclass(frozen=True)
class BasicMeasurement:
    """<basic measurement>: [FROM host] [TO host] application type, data spec, timing list."""

    application: str  # canonical name once validated (rr -> request_response)
    data: DataSpec
    from_host: str | None = None
    to_host: str | None = None
    timings: tuple[Distribution, ...] = ()
    pos: Pos | None = _pos()
    hosts_pos: tuple[Pos | None, Pos | None] = field(default=(None, None), compare=False, repr=False)


@dataclass(frozen=True)
class Part:
    """<part>: [num replicas] basic measurement."""

    measurement: BasicMeasurement
    replicas: int | None = None  # None: not written (1)
    pos: Pos | None = _pos()


@dataclass(frozen=True)
class CompositeMeasurement:
    """<composite measurement>: [priority] composer ":" part | part ..."""

    composer: str
    parts: tuple[Part, ...]
    priority: bool = False
    pos: Pos | None = _pos()


Measurement = BasicMeasurement | CompositeMeasurement


@dataclass(frozen=True)
class Statement:
    """<specification>: num runs [TIMELIMIT seconds] measurement."""

    runs: int
    measurement: Measurement
    time_limit_s: float | None = None
    pos: Pos | None = _pos()
    time_limit_pos: Pos | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Specification:
    """<specification list>: the statements of one text, run one after another."""

    statements: tuple[Statement, ...]
