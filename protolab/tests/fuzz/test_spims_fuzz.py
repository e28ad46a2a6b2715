"""Property tests of the SPIMS parser for a time budget (env SPIMS_FUZZ_SECONDS, default 30, shared by the
three tests): generated trees print and parse back equal; mutated paper specifications and random text
either parse or raise SpimsSyntaxError, never anything else, and never hang. Run by `make fuzz`, not by
`make unit` (this folder is not under protolab/tests/unit)."""

from __future__ import annotations

import math
import os
import signal
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.configuration import set_hypothesis_home_dir

from protolab.spims import (
    Access,
    BasicMeasurement,
    CompositeMeasurement,
    DataSpec,
    Distribution,
    Part,
    SizeSpec,
    Specification,
    SpimsSyntaxError,
    Statement,
    expand,
    format,
    parse,
    validate,
)
from protolab.spims.validate import APPLICATION_TYPES, MAX_INT

BUDGET_S = float(os.environ.get("SPIMS_FUZZ_SECONDS", "30"))
PARSE_LIMIT_S = 5.0  # one parse of a short text taking this long is a hang
set_hypothesis_home_dir(Path(tempfile.gettempdir()) / "protolab-hypothesis")  # its caches, not in the checkout
ROUND = settings(max_examples=100, deadline=None, database=None, suppress_health_check=list(HealthCheck))


class HangError(Exception):
    pass


def _alarm(signum, frame):
    raise HangError("parse ran past its limit")


def parse_guarded(text: str) -> Specification | None:
    """parse(text), or None for a SpimsSyntaxError; any other exception, or a hang, fails the test."""
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, PARSE_LIMIT_S)
    try:
        return parse(text)
    except SpimsSyntaxError as e:
        assert e.line is None or (e.line >= 1 and e.column >= 1), e
        return None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def for_a_while(share: float, test: Callable[[], None]) -> int:
    """Call a @given test again and again (fresh random examples each time) for its share of the budget."""
    end, rounds = time.monotonic() + BUDGET_S * share, 0
    while rounds == 0 or time.monotonic() < end:
        test()
        rounds += 1
    return rounds


# --- valid trees ----------------------------------------------------------------------------------------


def chars(alphabet: str, min_size: int = 1, max_size: int = 12) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(alphabet), min_size=min_size, max_size=max_size).map("".join)


LOWER = "abcdefghijklmnopqrstuvwxyz"
hosts = st.builds(lambda a, b: a + b, chars(LOWER + "0123456789_", 1, 1), chars(LOWER + "ABC0123456789_.-", 0, 10))
paths = chars(LOWER + "/._-0123456789 ()|;<>é\t", 1, 16)
values = st.floats(min_value=0, max_value=1e12, allow_nan=False, allow_infinity=False) | st.integers(0, 10**6).map(
    float
)


@st.composite
def distributions(draw) -> Distribution:
    name = draw(st.sampled_from(["constant", "uniform", "normal", "exponential", "bivalue"]))
    if name == "uniform":
        params = tuple(sorted((draw(values), draw(values))))
    elif name == "exponential":
        params = (draw(values.filter(lambda x: x > 0)),)
    elif name == "bivalue":
        params = (draw(values), draw(values), draw(st.floats(0, 1)))
    else:
        params = tuple(draw(values) for _ in range(1 if name == "constant" else 2))
    return Distribution(name, params)


unit_sizes = st.integers(0, 2**31) | distributions()
accesses = st.one_of(
    st.none(), st.just(Access("memory")), st.just(Access("virtual_memory")), paths.map(lambda p: Access("file", p))
)


@st.composite
def basics(draw, timed: bool) -> BasicMeasurement:
    app = draw(st.sampled_from(sorted(APPLICATION_TYPES)))
    form = draw(st.sampled_from(["count", "pair", "amount"] if APPLICATION_TYPES[app].two_way else ["count", "amount"]))
    size, count = draw(unit_sizes), draw(st.integers(1, MAX_INT))
    if form == "count":
        s = SizeSpec(size, count=count)
    elif form == "pair":
        s = SizeSpec(size, count=count, reply_size=draw(unit_sizes))
    else:
        amount = draw(st.integers(1, MAX_INT) if not timed else st.none() | st.integers(1, MAX_INT))
        s = SizeSpec(size, amount=amount)
    data = DataSpec(s, draw(st.none() | st.just("bytes")), draw(accesses), draw(accesses))
    return BasicMeasurement(
        app, data, draw(st.none() | hosts), draw(st.none() | hosts), tuple(draw(st.lists(distributions(), max_size=2)))
    )


@st.composite
def statements(draw) -> Statement:
    limit = draw(st.none() | st.floats(min_value=1e-6, max_value=1e9))
    timed = limit is not None
    if draw(st.booleans()):
        m = draw(basics(timed))
    else:
        composer = draw(st.sampled_from(["parallel", "background", "total"]))
        parts = draw(
            st.lists(
                st.builds(Part, basics(timed), st.none() | st.integers(0, 20)),
                min_size=2 if composer == "background" else 1,
                max_size=4,
            )
        )
        m = CompositeMeasurement(composer, tuple(parts), composer == "background" and draw(st.booleans()))
    return Statement(draw(st.integers(1, MAX_INT)), m, limit)


specifications = st.lists(statements(), min_size=1, max_size=3).map(lambda s: Specification(tuple(s)))


@ROUND
@given(specifications)
def _round_trip(spec: Specification) -> None:
    validate(spec)
    text = format(spec)
    back = parse_guarded(text)
    assert back == spec, text
    assert format(back) == text
    for job in expand(back):
        assert job.runs >= 1 and math.isfinite(job.time_limit_s or 0.0)


def test_generated_specifications_round_trip():
    assert for_a_while(1 / 3, _round_trip) >= 1


# --- mutated and random text ----------------------------------------------------------------------------

SEEDS = [
    "100 from khons to udjat bulk_get bytes 1024*1000 < memory > memory;",  # sec. 3, l. 111
    "100 bulk_get 1024*1000",  # Table 2, l. 379
    "100 request_response 32*1000",  # Table 3, l. 389
    "100 connect_disconnect 0*1000",  # Table 4, l. 403
    "10 background: request-response 32 * 1000 |\n 3 bulk_get 1024 * 3000",  # Diagram 1, l. 408
    "10 priority background: request-response 32 * 1000 |\n 0 bulk_get 1024 * 3000",  # Diagram 1, l. 411
    "10 parallel : 4 bulk_get 1024*1000",  # Diagram 2, l. 421
    "5 timelimit 2.5 total: 2 from a to b rr 32,64*10 exponential(0.01) normal(0.002, 1e-4) | conn_disc 0*1"
    ' ; 1 bulk_get uniform(1, 9) 4096 < file "/x y" > virtual memory',
]
TOKENS = [
    *'0123456789;:|*,()<>"-+.eE \n\t_',
    *["from", "to", "timelimit", "priority", "bytes", "memory", "virtual", "file", "parallel", "background"],
    *["total", "bulk_get", "rr", "conn_disc", "uniform", "normal", "exponential", "bivalue", "constant"],
    *["1e999", "-1", "99999999999999999999", "é", "\x00", "\u2028", "\r", "\x0b", "١"],
]
edits = st.lists(
    st.tuples(st.sampled_from(["insert", "delete", "replace", "duplicate"]), st.integers(0, 400), st.integers(0, 8)),
    min_size=1,
    max_size=6,
)


def mutate(text: str, ops: list[tuple[str, int, int]], payload: list[str]) -> str:
    for i, (op, at, width) in enumerate(ops):
        at = at % (len(text) + 1)
        word = payload[i % len(payload)]
        if op == "insert":
            text = text[:at] + word + text[at:]
        elif op == "delete":
            text = text[:at] + text[at + width :]
        elif op == "replace":
            text = text[:at] + word + text[at + width :]
        else:
            text = text[:at] + text[at : at + width] + text[at:]
    return text


@ROUND
@given(st.sampled_from(SEEDS), edits, st.lists(st.sampled_from(TOKENS), min_size=1, max_size=6))
def _mutated(seed: str, ops, payload) -> None:
    text = mutate(seed, ops, payload)
    spec = parse_guarded(text)
    if spec is not None:  # whatever parses must print and parse back
        assert parse_guarded(format(spec)) == spec, text


def test_mutated_paper_specifications_parse_or_fail_in_words():
    assert for_a_while(1 / 3, _mutated) >= 1


@ROUND
@given(st.lists(st.sampled_from(TOKENS), max_size=40).map(" ".join) | st.lists(st.sampled_from(TOKENS)).map("".join))
def _random(text: str) -> None:
    spec = parse_guarded(text)
    if spec is not None:
        assert parse_guarded(format(spec)) == spec, text


def test_random_text_parses_or_fails_in_words():
    assert for_a_while(1 / 3, _random) >= 1
