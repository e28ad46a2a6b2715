"""What a parsed SPIMS specification must also satisfy, and the names it may use.

The names are small registries: application types (with the paper's short forms), composers and
distributions; an unknown name fails listing the known ones. `validate` raises `SpimsSyntaxError` at the
offending node's position (or names the statement, for trees built in code).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

from protolab.spims.ast import (
    Access,
    BasicMeasurement,
    CompositeMeasurement,
    Distribution,
    Pos,
    SizeSpec,
    Specification,
    Statement,
    UnitSize,
)
from protolab.spims.errors import SpimsSyntaxError

MAX_INT = 2**63 - 1  # counts and sizes travel to the Go initiator as int64
MAX_TIMINGS = 2  # inter-send delay, then the responder's delay before each reply
HOST_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*")
BARE_FILENAME_RE = re.compile(r'[^\s;|<>"()]+')


@dataclass(frozen=True)
class ApplicationType:
    name: str
    aliases: tuple[str, ...]
    two_way: bool  # data units go both ways, so SIZE,REPLY_SIZE*COUNT means something


APPLICATION_TYPES = {
    a.name: a
    for a in (
        ApplicationType("bulk_get", ("bulk-get",), two_way=False),
        ApplicationType("request_response", ("rr", "request-response"), two_way=True),
        ApplicationType("connect_disconnect", ("conn_disc", "connect-disconnect", "conn-disc"), two_way=False),
    )
}
_ALIASES = {alias: a.name for a in APPLICATION_TYPES.values() for alias in (a.name, *a.aliases)}

# composer -> what its parts are; `priority` is allowed before background only
COMPOSERS = {
    "parallel": "every part measured, all at once",
    "background": "the first part measured, the others its background load",
    "total": "every part at once, reported as one aggregate",
}

# distribution -> its parameters, in order
DISTRIBUTIONS = {
    "constant": ("value",),
    "uniform": ("min", "max"),
    "normal": ("mean", "stddev"),
    "exponential": ("mean",),
    "bivalue": ("a", "b", "p_a"),
}


def canonical_application(name: str) -> str | None:
    """'rr' -> 'request_response'; None for an unknown name."""
    return _ALIASES.get(name.lower())


def known(names: Iterable[str]) -> str:
    return ", ".join(sorted(names))


class _Checker:
    def __init__(self, source: str | None, filename: str | None) -> None:
        self.source = source
        self.filename = filename
        self.where = ""

    def fail(self, reason: str, pos: Pos | None) -> SpimsSyntaxError:
        return SpimsSyntaxError(
            reason, pos, source=self.source, filename=self.filename, where="" if pos else self.where
        )

    def integer(self, value: object, what: str, pos: Pos | None, minimum: int) -> None:
        if not isinstance(value, int) or isinstance(value, bool):
            raise self.fail(f"{what} must be an integer, got {value!r}", pos)
        if value < minimum:
            floor = "at least 1" if minimum == 1 else "0 or more"
            raise self.fail(f"{what} must be {floor}, got {value}", pos)
        if value > MAX_INT:
            raise self.fail(f"{what} is too large ({value} > {MAX_INT})", pos)

    def statement(self, st: Statement) -> None:
        self.integer(st.runs, "the number of runs", st.pos, 1)
        t = st.time_limit_s
        if t is not None and not (isinstance(t, (int, float)) and math.isfinite(t) and t > 0):
            raise self.fail(f"TIMELIMIT must be a positive number of seconds, got {t!r}", st.time_limit_pos)
        m = st.measurement
        if isinstance(m, CompositeMeasurement):
            self.composite(m, st)
        else:
            self.basic(m, st)

    def composite(self, m: CompositeMeasurement, st: Statement) -> None:
        if m.composer not in COMPOSERS:
            raise self.fail(f"unknown composer {m.composer!r}; known: {known(COMPOSERS)}", m.pos)
        if m.priority and m.composer != "background":
            raise self.fail(f"'priority' goes with background only, not with {m.composer}", m.pos)
        if not m.parts:
            raise self.fail(f"{m.composer}: needs at least one part", m.pos)
        if m.composer == "background" and len(m.parts) < 2:
            raise self.fail("background: needs a measured part and at least one background part after '|'", m.pos)
        for part in m.parts:
            if part.replicas is not None:
                self.integer(part.replicas, "the number of replicas", part.pos, 0)
            self.basic(part.measurement, st)

    def basic(self, m: BasicMeasurement, st: Statement) -> None:
        if canonical_application(m.application) is None:
            raise self.fail(
                f"unknown measurement type {m.application!r}; known: {known(APPLICATION_TYPES)} "
                "(short forms rr, conn_disc)",
                m.pos,
            )
        app = APPLICATION_TYPES[canonical_application(m.application) or ""]
        for host, pos in zip((m.from_host, m.to_host), m.hosts_pos, strict=True):
            if host is not None and not HOST_RE.fullmatch(host):
                raise self.fail(f"host name {host!r} is not a name like khons, h1 or 10.0.1.2", pos)
        d = m.data
        if d.data_type is not None and d.data_type.lower() != "bytes":
            raise self.fail(f"unknown data type {d.data_type!r}; known: bytes", d.pos)
        self.size_spec(d.size, app, st)
        for access in (d.source, d.destination):
            if access is not None:
                self.access(access)
        if len(m.timings) > MAX_TIMINGS:
            raise self.fail(
                f"at most {MAX_TIMINGS} timings (the inter-send delay, then the responder's delay), "
                f"got {len(m.timings)}",
                m.timings[MAX_TIMINGS].pos,
            )
        for t in m.timings:
            self.distribution(t, "a delay")

    def size_spec(self, s: SizeSpec, app: ApplicationType, st: Statement) -> None:
        self.unit_size(s.size, s.pos)
        if s.count is not None:
            self.integer(s.count, "the number of data units", s.count_pos, 1)
        if s.amount is not None:
            self.integer(s.amount, "the amount of data (bytes)", s.count_pos, 1)
        if s.count is not None and s.amount is not None:
            raise self.fail("give either a number of data units (SIZE*COUNT) or an amount of data, not both", s.pos)
        if s.reply_size is not None:
            if s.count is None:
                raise self.fail("SIZE,REPLY_SIZE needs '*' and a number of data units", s.pos)
            if not app.two_way:
                raise self.fail(
                    f"a second (reply) data unit size means nothing for {app.name}; only request_response has replies",
                    s.pos,
                )
            self.unit_size(s.reply_size, s.reply_pos)
        if s.count is None and s.amount is None and st.time_limit_s is None:
            raise self.fail(
                "this measurement never ends: give a number of data units (SIZE*COUNT), "
                "an amount of data (SIZE AMOUNT) or a TIMELIMIT",
                s.pos,
            )

    def unit_size(self, size: UnitSize, pos: Pos | None) -> None:
        if isinstance(size, Distribution):
            self.distribution(size, "a data unit size")
        else:
            self.integer(size, "the data unit size (bytes)", pos, 0)

    def access(self, a: Access) -> None:
        if a.kind == "file":
            if not a.path or '"' in a.path or "\n" in a.path:
                raise self.fail(f"FILE needs a file name without '\"' or newlines, got {a.path!r}", a.pos)
        elif a.kind in ("memory", "virtual_memory"):
            if a.path is not None:
                raise self.fail(f"{a.kind} takes no file name", a.pos)
        else:
            raise self.fail(f"unknown access type {a.kind!r}; known: file, memory, virtual_memory", a.pos)

    def distribution(self, d: Distribution, what: str) -> None:
        names = DISTRIBUTIONS.get(d.name)
        if names is None:
            raise self.fail(f"unknown distribution {d.name!r}; known: {known(DISTRIBUTIONS)}", d.pos)
        if len(d.params) != len(names):
            raise self.fail(
                f"{d.name} takes {len(names)} parameter{'s' if len(names) > 1 else ''} "
                f"({', '.join(names)}), got {len(d.params)}",
                d.pos,
            )
        p = dict(zip(names, d.params, strict=True))
        for name, v in p.items():
            if not (isinstance(v, (int, float)) and math.isfinite(v)):
                raise self.fail(f"{d.name}: {name} must be a finite number, got {v!r}", d.pos)
            if v < 0:
                raise self.fail(f"{d.name}: {name} must be 0 or more ({what} is never negative), got {v:g}", d.pos)
        if d.name == "uniform" and p["min"] > p["max"]:
            raise self.fail(f"uniform: min ({p['min']:g}) is greater than max ({p['max']:g})", d.pos)
        if d.name == "exponential" and p["mean"] == 0:
            raise self.fail("exponential: mean must be greater than 0 (use constant(0) for none)", d.pos)
        if d.name == "bivalue" and p["p_a"] > 1:
            raise self.fail(f"bivalue: p_a is a probability (0..1), got {p['p_a']:g}", d.pos)


def validate(spec: Specification, *, source: str | None = None, filename: str | None = None) -> Specification:
    """Check every statement of `spec`; return it unchanged or raise SpimsSyntaxError."""
    c = _Checker(source, filename)
    if not spec.statements:
        raise c.fail("a specification needs at least one statement", None)
    for i, st in enumerate(spec.statements, 1):
        c.where = f"statement {i}"
        c.statement(st)
    return spec
