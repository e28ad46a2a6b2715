"""The SPIMS language: every production of Appendix B, the paper's own specifications, round trips, errors in
words at the right place, and the expansion into jobs. Line numbers are those of the seed text
(/work/shared/seeds/004_da885ebc4b089a94.txt)."""

from __future__ import annotations

import json
import random
import re
import statistics

import pytest

from protolab.errors import EXIT_SPEC, SpecError
from protolab.spims import (
    Access,
    BasicMeasurement,
    CompositeMeasurement,
    DataSpec,
    Dist,
    Distribution,
    Endpoint,
    Part,
    SizeSpec,
    Specification,
    SpimsSyntaxError,
    Statement,
    expand,
    format,
    parse,
    sample,
    sample_size,
    to_json,
    validate,
)


def one(text: str) -> Statement:
    spec = parse(text)
    assert len(spec.statements) == 1
    return spec.statements[0]


def bm(app: str, size: SizeSpec, **kw) -> BasicMeasurement:
    return BasicMeasurement(app, DataSpec(size, **kw.pop("data", {})), **kw)


def unmarkdown(caption: str) -> str:
    """The seed is OCR'd Markdown: drop its escapes and footnote marks, keep the text as printed."""
    return re.sub(r"<sup>\d+</sup>", "", caption).replace("\\_", "_").replace("\\*", "*")


def sweep(caption: str, n: int | str) -> str:
    """Sec. 7's captions sweep <N> over values listed after '; N ='; substitute one of them."""
    return unmarkdown(caption).split("; N =")[0].replace("<N>", str(n))


# --- the paper's specifications, verbatim ---------------------------------------------------------------

SEC3 = "100 from khons to udjat bulk\\_get bytes 1024\\*1000 < memory > memory;"  # sec. 3, l. 111
TABLE2 = "100 bulk\\_get 1024\\*1000"  # Table 2, l. 379
TABLE3 = "100 request\\_response 32\\*1000"  # Table 3, l. 389
TABLE4 = "100 connect\\_disconnect 0\\*1000<sup>2</sup>"  # Table 4, l. 403
DIAGRAM1 = "10 background: request-response 32 * 1000 |  \n <N> bulk\\_get 1024 \\* 3000; N = 0...5"  # l. 408-409
DIAGRAM1_PRIORITY = "10 priority background: request-response 32 * 1000 |  \n <N> bulk\\_get 1024 \\* 3000"  # l. 411
DIAGRAM2 = "10 parallel : <N> bulk\\_get 1024\\*1000; N = 1...10"  # Diagrams 2 and 3, l. 421, 427
DIAGRAM4 = "10 bulk\\_get <N>\\*1000; N = 1024, 2048...16348"  # l. 433
DIAGRAM5 = "10 request-response <N>\\*1000; N = 1, 8, 32...4096"  # l. 439


def test_the_sec3_example_reads_as_the_paper_describes_it_and_prints_back_verbatim():
    text = unmarkdown(SEC3)
    st = one(text)
    mem = Access("memory")
    want = Statement(
        100,
        bm("bulk_get", SizeSpec(1024, count=1000), data={"data_type": "bytes", "source": mem, "destination": mem},
           from_host="khons", to_host="udjat"),
    )  # fmt: skip
    assert st == want
    assert format(parse(text)) == text + "\n"
    (job,) = expand(parse(text))
    assert (job.initiator_host, job.responder_host, job.runs, job.count) == ("khons", "udjat", 100, 1000)
    assert job.size_bytes == Dist("constant", (1024.0,))
    # l. 131: BYTES and memory to memory are the defaults, so leaving them out gives the same job
    (bare,) = expand(parse("100 from khons to udjat bulk_get 1024*1000"))
    assert bare == job


@pytest.mark.parametrize(
    "caption, app, size, count",
    [(TABLE2, "bulk_get", 1024, 1000), (TABLE3, "request_response", 32, 1000), (TABLE4, "connect_disconnect", 0, 1000)],
    ids=["table2", "table3", "table4"],
)
def test_the_table_captions_of_sec7(caption, app, size, count):
    st = one(unmarkdown(caption))
    assert st == Statement(100, bm(app, SizeSpec(size, count=count)))


@pytest.mark.parametrize("n", range(6))
@pytest.mark.parametrize("caption", [DIAGRAM1, DIAGRAM1_PRIORITY], ids=["same-priority", "priority"])
def test_diagram1_request_response_with_n_background_bulk_gets(caption, n):
    st = one(sweep(caption, n))
    m = st.measurement
    assert isinstance(m, CompositeMeasurement) and m.composer == "background"
    assert m.priority == ("priority" in caption)
    assert m.parts == (
        Part(bm("request_response", SizeSpec(32, count=1000))),
        Part(bm("bulk_get", SizeSpec(1024, count=3000)), replicas=n),
    )
    jobs = expand(parse(sweep(caption, n)))
    assert [j.id for j in jobs] == ["s1.p1.r1"] + [f"s1.p2.r{r}" for r in range(1, n + 1)]
    assert [j.role for j in jobs] == ["measured"] + ["background"] * n
    assert [j.high_priority for j in jobs] == [m.priority] + [False] * n
    assert {j.runs for j in jobs} == {10} and {j.group for j in jobs} == {1}


@pytest.mark.parametrize("n", range(1, 11))
def test_diagram2_n_parallel_bulk_gets(n):
    jobs = expand(parse(sweep(DIAGRAM2, n)))
    assert len(jobs) == n and {(j.composer, j.role, j.type, j.count) for j in jobs} == {
        ("parallel", "measured", "bulk_get", 1000)
    }


@pytest.mark.parametrize("n", [1024, 2048, 16348])
def test_diagram4_data_unit_sizes(n):
    assert one(sweep(DIAGRAM4, n)) == Statement(10, bm("bulk_get", SizeSpec(n, count=1000)))


@pytest.mark.parametrize("n", [1, 8, 32, 4096])
def test_diagram5_message_sizes_both_ways(n):
    (job,) = expand(parse(sweep(DIAGRAM5, n)))
    assert job.type == "request_response" and job.size_bytes == job.reply_size_bytes == Dist("constant", (n,))


# --- every production ----------------------------------------------------------------------------------

U = Distribution("uniform", (64.0, 1024.0))
E = Distribution("exponential", (0.01,))
PRODUCTIONS = [
    # <specification list>: ';' between, optional after the last
    ("1 rr 1*1; 2 rr 2*2;", Specification((Statement(1, bm("request_response", SizeSpec(1, count=1))),
                                           Statement(2, bm("request_response", SizeSpec(2, count=2)))))),
    ("1 rr 1*1;\n\n2 rr 2*2", Specification((Statement(1, bm("request_response", SizeSpec(1, count=1))),
                                             Statement(2, bm("request_response", SizeSpec(2, count=2)))))),
    # <timelimit>: integer or decimal seconds (l. 504)
    ("3 timelimit 60 bulk_get 1024", Statement(3, bm("bulk_get", SizeSpec(1024)), time_limit_s=60.0)),
    ("3 TIMELIMIT 2.5 bulk_get 1024", Statement(3, bm("bulk_get", SizeSpec(1024)), time_limit_s=2.5)),
    # <composite measurement>, <part list>, <part> [num replicas]
    ("2 parallel: bulk_get 1*1 | 3 rr 2*2", Statement(2, CompositeMeasurement(
        "parallel", (Part(bm("bulk_get", SizeSpec(1, count=1))),
                     Part(bm("request_response", SizeSpec(2, count=2)), replicas=3))))),
    ("2 total: 4 bulk_get 1*1", Statement(2, CompositeMeasurement(
        "total", (Part(bm("bulk_get", SizeSpec(1, count=1)), replicas=4),)))),
    ("2 background: rr 1*1 | 2 bulk_get 1*1 | conn_disc 0*5", Statement(2, CompositeMeasurement(
        "background", (Part(bm("request_response", SizeSpec(1, count=1))),
                       Part(bm("bulk_get", SizeSpec(1, count=1)), replicas=2),
                       Part(bm("connect_disconnect", SizeSpec(0, count=5))))))),
    ("2 Priority Background: rr 1*1 | bulk_get 1*1", Statement(2, CompositeMeasurement(
        "background", (Part(bm("request_response", SizeSpec(1, count=1))),
                       Part(bm("bulk_get", SizeSpec(1, count=1)))), priority=True))),
    # <host spec>
    ("1 from a bulk_get 1*1", Statement(1, bm("bulk_get", SizeSpec(1, count=1), from_host="a"))),
    ("1 to b.lan bulk_get 1*1", Statement(1, bm("bulk_get", SizeSpec(1, count=1), to_host="b.lan"))),
    ("1 FROM 10.0.1.2 TO h-2 bulk_get 1*1",
     Statement(1, bm("bulk_get", SizeSpec(1, count=1), from_host="10.0.1.2", to_host="h-2"))),
    ("1 from from to to bulk_get 1*1",  # keywords are words, not reserved names, where a host is expected
     Statement(1, bm("bulk_get", SizeSpec(1, count=1), from_host="from", to_host="to"))),
    # <application type name> and its short forms (l. 510) and sec. 7's hyphens
    ("1 request_response 1*1", Statement(1, bm("request_response", SizeSpec(1, count=1)))),
    ("1 RR 1*1", Statement(1, bm("request_response", SizeSpec(1, count=1)))),
    ("1 connect-disconnect 0*1", Statement(1, bm("connect_disconnect", SizeSpec(0, count=1)))),
    ("1 conn_disc 0*1", Statement(1, bm("connect_disconnect", SizeSpec(0, count=1)))),
    ("1 bulk-get 1*1", Statement(1, bm("bulk_get", SizeSpec(1, count=1)))),
    # <data type>
    ("1 bulk_get BYTES 1*1", Statement(1, bm("bulk_get", SizeSpec(1, count=1), data={"data_type": "bytes"}))),
    # <size spec>: SIZE*COUNT, SIZE,SIZE*COUNT, SIZE [AMOUNT]; <data unit size>: integer or distribution
    ("1 rr 32 , 64 * 10", Statement(1, bm("request_response", SizeSpec(32, count=10, reply_size=64)))),
    ("1 rr uniform(64, 1024),constant(8)*10", Statement(1, bm(
        "request_response", SizeSpec(U, count=10, reply_size=Distribution("constant", (8.0,)))))),
    ("1 bulk_get 1024 1048576", Statement(1, bm("bulk_get", SizeSpec(1024, amount=1048576)))),
    ("1 bulk_get uniform(64,1024)*100", Statement(1, bm("bulk_get", SizeSpec(U, count=100)))),
    ("1 bulk_get uniform(64,1024) 100000", Statement(1, bm("bulk_get", SizeSpec(U, amount=100000)))),
    # <source>, <destination>, <access type>
    ("1 bulk_get 1*1 < file /data/in.bin", Statement(1, bm(
        "bulk_get", SizeSpec(1, count=1), data={"source": Access("file", "/data/in.bin")}))),
    ('1 bulk_get 1*1 > FILE "/tmp/out (1).bin"', Statement(1, bm(
        "bulk_get", SizeSpec(1, count=1), data={"destination": Access("file", "/tmp/out (1).bin")}))),
    ("1 bulk_get 1*1 < virtual memory > Virtual Memory", Statement(1, bm(
        "bulk_get", SizeSpec(1, count=1),
        data={"source": Access("virtual_memory"), "destination": Access("virtual_memory")}))),
    ("1 bulk_get 1*1<memory>file x", Statement(1, bm(
        "bulk_get", SizeSpec(1, count=1), data={"source": Access("memory"), "destination": Access("file", "x")}))),
    # <timing list> and every <distribution> with its parameters
    ("1 rr 1*1 exponential(0.01)", Statement(1, bm("request_response", SizeSpec(1, count=1), timings=(E,)))),
    ("1 rr 1*1 constant(0.5) normal(0.002, 5e-4)", Statement(1, bm(
        "request_response", SizeSpec(1, count=1),
        timings=(Distribution("constant", (0.5,)), Distribution("normal", (0.002, 0.0005)))))),
    ("1 bulk_get bivalue(64, 1500, 0.8)*10 Uniform(0, .5)", Statement(1, bm(
        "bulk_get", SizeSpec(Distribution("bivalue", (64.0, 1500.0, 0.8)), count=10),
        timings=(Distribution("uniform", (0.0, 0.5)),)))),
    # everything at once, over several lines
    ("5 timelimit 30\n  priority background:\n    2 from khons to udjat rr bytes 32,64*1000 < memory > memory"
     " exponential(0.01) constant(0.001)\n  | 3 from x to y bulk_get uniform(64, 1024) 1000000 > file /dev/null;",
     None),
]  # fmt: skip
VALID = [t for t, _ in PRODUCTIONS] + [unmarkdown(c) for c in (SEC3, TABLE2, TABLE3, TABLE4)]
VALID += [sweep(c, n) for c in (DIAGRAM1, DIAGRAM1_PRIORITY, DIAGRAM2, DIAGRAM4, DIAGRAM5) for n in (1, 8)]


@pytest.mark.parametrize("text, want", PRODUCTIONS, ids=range(len(PRODUCTIONS)))
def test_every_production(text, want):
    spec = parse(text)
    if isinstance(want, Statement):
        assert spec == Specification((want,))
    elif want is not None:
        assert spec == want


@pytest.mark.parametrize("text", VALID, ids=range(len(VALID)))
def test_parse_print_parse_round_trips(text):
    spec = parse(text)
    printed = format(spec)
    assert parse(printed) == spec
    assert format(parse(printed)) == printed  # the printed form is a fixed point


def test_positions_are_recorded_but_not_compared():
    a, b = parse("1 rr 1*1").statements[0], parse("\n\n   1    rr   1 * 1").statements[0]
    assert a == b and a.pos and b.pos and (a.pos.line, b.pos.line, b.pos.column) == (1, 3, 4)


# --- errors ---------------------------------------------------------------------------------------------

APPS = "expected a measurement type (bulk_get, request_response, connect_disconnect)"
ERRORS = [
    # (text, line, column, found, words in the message)
    ("100 from khons to udjat 1024*1000;", 1, 25, "1024", APPS + ", found '1024'"),
    ("", 1, 1, "", "expected a number of runs, found the end of the input"),
    ("100 bulk_get 1024*", 1, 19, "", "expected a number of data units, found the end of the input"),
    ("1 rr 1*1\n2 rr 1*1", 2, 1, "2", "found '2'"),  # a missing ';' between statements
    ("1 rr 1*1;\n\n 2 from khons rr 1*1 < disk", 3, 24, "disk", "expected MEMORY, VIRTUAL MEMORY or FILE name"),
    ("1 rr 1*1 exponential(1", 1, 23, "", "expected ',' or ')', found the end of the input"),
    ("1 rr 1*1 uniform(1,2,)", 1, 22, ")", "expected a number (a parameter), found ')'"),
    ("1 timelimit soon rr 1*1", 1, 13, "soon", "expected a number of seconds"),
    ("1 priority 3 rr 1*1", 1, 12, "3", "expected a composer (background)"),
    ("1 rr 1*1 > file", 1, 16, "", "expected a file name"),
    ("1 rr 1.5*3", 1, 7, ".5", "found '.5'"),
    ("1 rr 1*1 @", 1, 10, "@", "found '@'"),
    ("1 parallel: 1 rr 1*1 |", 1, 23, "", "expected a number of replicas, " + APPS[9:]),
    ("100", 1, 4, "", "a composer (parallel, background, total)"),
    ("1 parallel rr 1*1", 1, 15, "1", "(a composer takes a ':', as in 'parallel:')"),
    # semantic: same error, same position rules
    ("-5 bulk_get 1*1", 1, 1, "-5", "the number of runs must be at least 1, got -5"),
    ("1 bulk_get 1024*-3", 1, 17, "-3", "the number of data units must be at least 1, got -3"),
    ("1 bulk_get 1024 0", 1, 17, "0", "the amount of data (bytes) must be at least 1, got 0"),
    ("1 rr 32,-5*3", 1, 9, "-5", "the data unit size (bytes) must be 0 or more, got -5"),
    ("1 parallel: -1 bulk_get 1*1", 1, 13, "-1", "the number of replicas must be 0 or more, got -1"),
    ("1 bulk_get -1*3", 1, 12, "-1", "the data unit size (bytes) must be 0 or more, got -1"),
    ("1 bulk_get uniform(5, 1)*3", 1, 12, "uniform", "uniform: min (5) is greater than max (1)"),
    ("1 bulk_get uniform(1)*3", 1, 12, "uniform", "uniform takes 2 parameters (min, max), got 1"),
    ("1 rr 1*1 exponential(1, 2)", 1, 10, "exponential", "exponential takes 1 parameter (mean), got 2"),
    ("1 rr 1*1 normal(-1, 1)", 1, 10, "normal", "normal: mean must be 0 or more"),
    ("1 rr 1*1 bivalue(1, 2, 1.5)", 1, 10, "bivalue", "bivalue: p_a is a probability"),
    ("1 rr 1*1 exponential(0)", 1, 10, "exponential", "exponential: mean must be greater than 0"),
    ("1 rr 1*1 constant(1e999)", 1, 10, "constant", "constant: value must be a finite number"),
    ("1 rr 1*1 poisson(3)", 1, 10, "poisson", "unknown distribution 'poisson'; known: bivalue, constant, exponential"),
    ("1 bulk_go 1*1", 1, 3, "bulk_go", "unknown measurement type 'bulk_go'; known: bulk_get, connect_disconnect"),
    ("1 paralel: rr 1*1", 1, 3, "paralel", "unknown composer 'paralel'; known: background, parallel, total"),
    ("1 priority parallel: rr 1*1", 1, 12, "parallel", "'priority' goes with background only"),
    ("1 background: rr 1*1", 1, 3, "background", "needs a measured part and at least one background part"),
    ("1 bulk_get 32,64*10", 1, 12, "32", "only request_response has replies"),
    ("1 bulk_get 1024", 1, 12, "1024", "this measurement never ends"),
    ("1 rr 1*1 constant(1) constant(2) constant(3)", 1, 34, "constant", "at most 2 timings"),
    ("1 timelimit 0 rr 1*1", 1, 13, "0", "TIMELIMIT must be a positive number of seconds"),
    ("1 rr 1*1 > file \"\"", 1, 17, '""', "FILE needs a file name"),
    ("99999999999999999999 rr 1*1", 1, 1, "99999999999999999999", "the number of runs is too large"),
]  # fmt: skip


@pytest.mark.parametrize("text, line, column, found, words", ERRORS, ids=range(len(ERRORS)))
def test_errors_say_where_and_what_was_expected(text, line, column, found, words):
    with pytest.raises(SpimsSyntaxError) as err:
        parse(text)
    e = err.value
    assert (e.line, e.column, e.found) == (line, column, found)
    msg = str(e)
    assert msg.startswith(f"line {line}, column {column}: ") and words in msg, msg
    assert e.__cause__ is None and (e.__context__ is None or e.__suppress_context__)  # no Lark traceback
    assert "lark" not in msg.lower() and "Token(" not in msg and "$END" not in msg
    assert msg.splitlines()[-1] == "  " + " " * (column - 1) + "^"


def test_the_caret_points_under_the_offending_text():
    with pytest.raises(SpimsSyntaxError) as err:
        parse("1 rr 1*1;\n\n 2 from khons rr 1*1 < disk")
    *_, text, caret = str(err.value).splitlines()
    assert text == "   2 from khons rr 1*1 < disk" and caret == "  " + " " * 23 + "^"


def test_errors_name_the_file_and_are_spec_errors():
    with pytest.raises(SpecError) as err:
        parse("1 bulk_go 1*1", filename="bench.spims")
    assert str(err.value).startswith("bench.spims, line 1, column 3: unknown measurement type")
    assert err.value.exit_status == EXIT_SPEC


def test_validate_names_the_statement_of_a_tree_built_in_code():
    ok = Statement(1, bm("bulk_get", SizeSpec(1, count=1)))
    bad = Statement(0, bm("bulk_get", SizeSpec(1, count=1)))
    with pytest.raises(SpimsSyntaxError, match=r"^statement 2: the number of runs must be at least 1, got 0$"):
        validate(Specification((ok, bad)))
    with pytest.raises(SpimsSyntaxError, match="at least one statement"):
        validate(Specification(()))
    with pytest.raises(SpimsSyntaxError, match="host name 'a b'"):
        validate(Specification((Statement(1, bm("bulk_get", SizeSpec(1, count=1), from_host="a b")),)))


# --- jobs -----------------------------------------------------------------------------------------------


def test_jobs_fill_in_the_defaults_and_serialise_to_json():
    spec = parse(
        "3 timelimit 2.5 priority background: from a to b rr 32*100 exponential(0.01) constant(0.002)"
        " | 2 from c to d bulk_get uniform(64, 1024) 1000000 < file /in > virtual memory; 1 conn_disc 0*10"
    )
    jobs = expand(spec, protocol="tcp")
    assert [(j.id, j.group, j.role, j.high_priority) for j in jobs] == [
        ("s1.p1.r1", 1, "measured", True),
        ("s1.p2.r1", 1, "background", False),
        ("s1.p2.r2", 1, "background", False),
        ("s2.p1.r1", 2, "measured", False),
    ]
    rr, bg, _, cd = jobs
    assert (rr.inter_send_delay_s, rr.reply_delay_s) == (Dist("exponential", (0.01,)), Dist("constant", (0.002,)))
    assert rr.reply_size_bytes == rr.size_bytes == Dist("constant", (32.0,)) and bg.reply_size_bytes is None
    assert (bg.count, bg.amount_bytes, bg.source, bg.destination) == (
        None, 1000000, Endpoint("file", "/in"), Endpoint("virtual_memory"))  # fmt: skip
    assert (cd.composer, cd.time_limit_s, cd.source, cd.protocol) == (None, None, Endpoint("memory"), "tcp")
    assert json.loads(to_json(jobs)) == [j.as_dict() for j in jobs]
    assert jobs[0].as_dict() == {
        "id": "s1.p1.r1", "group": 1, "composer": "background", "role": "measured", "high_priority": True,
        "type": "request_response", "runs": 3, "time_limit_s": 2.5, "initiator_host": "a", "responder_host": "b",
        "protocol": "tcp", "data_type": "bytes",
        "size_bytes": {"name": "constant", "params": [32.0]},
        "reply_size_bytes": {"name": "constant", "params": [32.0]},
        "count": 100, "amount_bytes": None,
        "source": {"access": "memory", "path": None}, "destination": {"access": "memory", "path": None},
        "inter_send_delay_s": {"name": "exponential", "params": [0.01]},
        "reply_delay_s": {"name": "constant", "params": [0.002]},
    }  # fmt: skip


def test_a_part_with_zero_replicas_gives_no_job():
    assert [j.id for j in expand(parse("1 parallel: 0 bulk_get 1*1 | rr 1*1"))] == ["s1.p2.r1"]


# --- sampling -------------------------------------------------------------------------------------------

SAMPLES = [
    # (distribution, mean, bounds)
    (Dist("constant", (7.0,)), 7.0, (7.0, 7.0)),
    (Dist("uniform", (10.0, 20.0)), 15.0, (10.0, 20.0)),
    (Dist("normal", (100.0, 10.0)), 100.0, (0.0, float("inf"))),
    (Dist("exponential", (0.01,)), 0.01, (0.0, float("inf"))),
    (Dist("bivalue", (64.0, 1500.0, 0.75)), 0.75 * 64 + 0.25 * 1500, (64.0, 1500.0)),
]


@pytest.mark.parametrize("d, mean, bounds", SAMPLES, ids=[s[0].name for s in SAMPLES])
def test_samples_are_seeded_bounded_and_have_the_right_mean(d, mean, bounds):
    draws = [sample(d, random.Random(1)) for _ in range(2)]
    assert draws[0] == draws[1]  # same seed, same draw
    rng = random.Random(42)
    xs = [sample(d, rng) for _ in range(20000)]
    assert all(bounds[0] <= x <= bounds[1] for x in xs)
    assert statistics.fmean(xs) == pytest.approx(mean, rel=0.03)


def test_sizes_are_whole_bytes_and_normal_is_cut_at_zero():
    rng = random.Random(3)
    sizes = [sample_size(Distribution("normal", (1.0, 5.0)), rng) for _ in range(1000)]
    assert all(isinstance(s, int) and s >= 0 for s in sizes) and sizes.count(0) > 300
    assert {sample_size(Dist("bivalue", (64, 1500, 0.5)), rng) for _ in range(200)} == {64, 1500}


@pytest.mark.parametrize(
    "text, statements",
    [
        ("100 from h1 to h2 bulk_get 1024*1000,", 1),  # Appendix B's terminator
        ("10 bulk_get 1024*1000, 20 rr 32,64*100,", 2),  # ',' ends one; '32,64' is still a size pair
        ("5 rr 32, 64*10,", 1),  # a size pair, spaced
        ("3 rr 32*10, 4 rr uniform(1, 2)*5", 2),
        ("3 rr 32*10;\n4 conn_disc 0*10,", 2),
    ],
)
def test_a_comma_ends_a_specification_as_appendix_b_writes_it(text, statements):
    spec = parse(text)
    assert len(spec.statements) == statements
    assert parse(format(spec)) == spec
