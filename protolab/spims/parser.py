"""Text -> `Specification`: Lark (LALR, contextual lexer) over `grammar.GRAMMAR`, a transformer to the typed
tree, then `validate`. Lark's errors become `SpimsSyntaxError`s that say in words what was expected.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from lark import Lark, Token, Transformer
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from protolab.spims.ast import (
    Access,
    BasicMeasurement,
    CompositeMeasurement,
    DataSpec,
    Distribution,
    Part,
    Pos,
    SizeSpec,
    Specification,
    Statement,
)
from protolab.spims.errors import SpimsSyntaxError
from protolab.spims.grammar import GRAMMAR
from protolab.spims.validate import COMPOSERS, canonical_application, validate


@cache
def _lark() -> Lark:
    return Lark(GRAMMAR, parser="lalr", lexer="contextual", maybe_placeholders=True)


def parse(text: str, filename: str | None = None) -> Specification:
    """Parse and validate a SPIMS specification; raise SpimsSyntaxError (line, column, what was expected)."""
    try:
        tree = _lark().parse(text)
    except UnexpectedInput as e:
        raise _syntax_error(e, text, filename) from None
    return validate(_ToAst().transform(tree), source=text, filename=filename)


def _pos(tok: Token) -> Pos:
    return Pos(tok.line or 1, tok.column or 1, str(tok))


class _ToAst(Transformer):
    """Lark tree -> ast; `[x]` items arrive as None when absent (maybe_placeholders)."""

    def start(self, c: list[Any]) -> Specification:
        return Specification(tuple(s for s in c if isinstance(s, Statement)))  # not the END tokens

    def specification(self, c: list[Any]) -> Statement:
        runs, limit, measurement = c
        seconds, limit_pos = limit if limit else (None, None)
        return Statement(int(runs), measurement, seconds, pos=_pos(runs), time_limit_pos=limit_pos)

    def timelimit(self, c: list[Token]) -> tuple[float, Pos]:
        return float(c[1]), _pos(c[1])

    def composite(self, c: list[Any]) -> CompositeMeasurement:
        priority, name, *parts = c
        return CompositeMeasurement(str(name).lower(), tuple(parts), priority is not None, pos=_pos(name))

    def part(self, c: list[Any]) -> Part:
        replicas, basic = c
        return Part(basic, None if replicas is None else int(replicas), pos=_pos(replicas) if replicas else basic.pos)

    def basic(self, c: list[Any]) -> BasicMeasurement:
        from_host, to_host, name, data, *timings = c
        hosts = [h[0] if h else None for h in (from_host, to_host)]
        return BasicMeasurement(
            canonical_application(str(name)) or str(name).lower(),
            data,
            hosts[0],
            hosts[1],
            tuple(timings),
            pos=_pos(name),
            hosts_pos=(from_host[1] if from_host else None, to_host[1] if to_host else None),
        )

    def from_host(self, c: list[Token]) -> tuple[str, Pos]:
        return str(c[1]), _pos(c[1])

    to_host = from_host

    def data_spec(self, c: list[Any]) -> DataSpec:
        data_type, size, source, destination = c
        kind = None if data_type is None else str(data_type).lower()
        return DataSpec(size, kind, source, destination, pos=_pos(data_type) if data_type else size.pos)

    @staticmethod
    def _unit(u: Token | Distribution) -> tuple[int | Distribution, Pos | None]:
        return (u, u.pos) if isinstance(u, Distribution) else (int(u), _pos(u))

    def size_count(self, c: list[Any]) -> SizeSpec:
        size, pos = self._unit(c[0])
        return SizeSpec(size, count=int(c[1]), pos=pos, count_pos=_pos(c[1]))

    def size_pair(self, c: list[Any]) -> SizeSpec:
        size, pos = self._unit(c[0])
        reply, reply_pos = self._unit(c[1])
        return SizeSpec(size, count=int(c[2]), reply_size=reply, pos=pos, count_pos=_pos(c[2]), reply_pos=reply_pos)

    def size_amount(self, c: list[Any]) -> SizeSpec:
        size, pos = self._unit(c[0])
        amount = None if c[1] is None else int(c[1])
        return SizeSpec(size, amount=amount, pos=pos, count_pos=None if c[1] is None else _pos(c[1]))

    def source(self, c: list[Access]) -> Access:
        return c[0]

    destination = source

    def memory(self, c: list[Token]) -> Access:
        return Access("memory", pos=_pos(c[0]))

    def virtual_memory(self, c: list[Token]) -> Access:
        return Access("virtual_memory", pos=_pos(c[0]))

    def file(self, c: list[Token]) -> Access:
        name = str(c[1])
        return Access("file", name[1:-1] if name.startswith('"') else name, pos=_pos(c[1]))

    def distribution(self, c: list[Token]) -> Distribution:
        name, *params = c
        return Distribution(str(name).lower(), tuple(float(p) for p in params), pos=_pos(name))


# --- errors in words ---------------------------------------------------------------------------------

_APPS = "a measurement type (bulk_get, request_response, connect_disconnect)"
_SIZE = "a data unit size (bytes, or a distribution such as uniform(64, 1024))"
_DELAY = "a delay distribution such as exponential(0.01)"
_FIXED = {
    "HOST": "a host name",
    "FILENAME": "a file name",
    "FROM": "FROM host",
    "TO": "TO host",
    "TIMELIMIT": "TIMELIMIT seconds",
    "BYTES": "BYTES",
    "MEMORY": "MEMORY",
    "VIRTUAL": "VIRTUAL MEMORY",
    "FILE": "FILE name",
    "STAR": "'*' and a number of data units",
    "COMMA": "','",
    "COLON": "':'",
    "LPAR": "'(' and the distribution's parameters",
    "RPAR": "')'",
    "LESSTHAN": "'<' and a source",
    "MORETHAN": "'>' and a destination",
    "VBAR": "'|' and another part",
    "END": "',' or ';' (the end of a specification)",
    "$END": "the end of the input",
}
_WORD_RE = re.compile(r'"[^"\n]*"|[A-Za-z0-9_.\-+/]+|\S')


def _describe(expected: set[str], prev: str, prev2: str) -> list[str]:
    """Terminal names acceptable in a parser state -> what a reader should write there."""
    e = set(expected)
    out: list[str] = []
    size_slot = {"INT", "NAME"} <= e and not e & {"FROM", "TO", "STAR"}
    if "INT" in e:
        if size_slot:
            out.append(_SIZE)
        elif e & {"FROM", "TO"}:
            out.append("a number of replicas")
        elif "STAR" in e:
            out.append("an amount of data (bytes)")
        elif prev == "*":
            out.append("a number of data units")
        else:
            out.append("a number of runs")
    if "NAME" in e:
        if "PRIORITY" in e:
            out += [_APPS, "a composer (parallel, background, total)"]
        elif prev.lower() == "priority":
            out.append("a composer (background)")
        elif e & {"FROM", "TO"} or e == {"NAME"} or prev2.lower() in ("from", "to"):
            out.append(_APPS)
        elif not size_slot:
            out.append(_DELAY)
    if "NUMBER" in e:
        out.append("a number of seconds" if prev.lower() == "timelimit" else "a number (a parameter)")
    if "PRIORITY" in e:
        out.append("PRIORITY (before background)")
    out += [_FIXED[t] for t in _FIXED if t in e]
    return out or sorted(e)


def _words(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]


def _line_col(text: str, offset: int) -> tuple[int, int]:
    return text.count("\n", 0, offset) + 1, offset - (text.rfind("\n", 0, offset) + 1) + 1


def _syntax_error(e: UnexpectedInput, text: str, filename: str | None) -> SpimsSyntaxError:
    if isinstance(e, UnexpectedToken) and e.token.type != "$END":
        offset, found = e.token.start_pos or 0, str(e.token)
        expected = set(e.accepts or e.expected)
    elif isinstance(e, UnexpectedCharacters):
        m = _WORD_RE.match(text, e.pos_in_stream)
        offset, found = e.pos_in_stream, m.group(0) if m else text[e.pos_in_stream]
        expected = set(e.allowed or ())
    else:  # the end of the input
        offset, found = len(text.rstrip()), ""
        expected = set(getattr(e, "accepts", None) or getattr(e, "expected", None) or ())
    before = _WORD_RE.findall(text, 0, offset)
    prev, prev2 = (before[-1] if before else ""), (before[-2] if len(before) > 1 else "")
    line, column = _line_col(text, offset)
    what = repr(found) if found else "the end of the input"
    reason = f"expected {_words(_describe(expected, prev, prev2))}, found {what}"
    if hint := _composer_without_colon(before):
        reason += f" (a composer takes a ':', as in '{hint}:')"
    return SpimsSyntaxError(reason, Pos(line, column, found), source=text, filename=filename)


def _composer_without_colon(before: list[str]) -> str | None:
    """The composer of the statement being read, when it was written without its ':'."""
    words = before[len(before) - before[::-1].index(";") :] if ";" in before else before
    words = [w.lower() for w in words[1:]]  # after the number of runs
    if words[:1] == ["timelimit"]:
        words = words[2:]
    if words[:1] == ["priority"]:
        words = words[1:]
    return words[0] if words and words[0] in COMPOSERS and words[1:2] != [":"] else None
