"""`Specification` -> text, one statement a line in the paper's lower-case style (sec. 3, line 111), so that
parse(format(spec)) == spec. Defaults the text left out stay out (no `bytes`, no `< memory`).
"""

from __future__ import annotations

import math

from protolab.spims.ast import (
    Access,
    BasicMeasurement,
    CompositeMeasurement,
    Distribution,
    SizeSpec,
    Specification,
    Statement,
    UnitSize,
)
from protolab.spims.validate import BARE_FILENAME_RE


def format(spec: Specification) -> str:  # shadows the builtin in this module only
    """The text of `spec`: each statement on its own line, ending with ';'."""
    return "".join(statement(s) + ";\n" for s in spec.statements)


def statement(s: Statement) -> str:
    head = [str(s.runs)]
    if s.time_limit_s is not None:
        head.append(f"timelimit {number(s.time_limit_s)}")
    m = s.measurement
    body = composite(m) if isinstance(m, CompositeMeasurement) else basic(m)
    return " ".join([*head, body])


def composite(m: CompositeMeasurement) -> str:
    parts = [(f"{p.replicas} " if p.replicas is not None else "") + basic(p.measurement) for p in m.parts]
    return ("priority " if m.priority else "") + f"{m.composer}: " + " | ".join(parts)


def basic(m: BasicMeasurement) -> str:
    words = []
    if m.from_host is not None:
        words.append(f"from {m.from_host}")
    if m.to_host is not None:
        words.append(f"to {m.to_host}")
    words.append(m.application)
    d = m.data
    if d.data_type is not None:
        words.append(d.data_type)
    words.append(size_spec(d.size))
    if d.source is not None:
        words.append("< " + access(d.source))
    if d.destination is not None:
        words.append("> " + access(d.destination))
    words += [distribution(t) for t in m.timings]
    return " ".join(words)


def size_spec(s: SizeSpec) -> str:
    if s.reply_size is not None:
        return f"{unit_size(s.size)},{unit_size(s.reply_size)}*{s.count}"
    if s.count is not None:
        return f"{unit_size(s.size)}*{s.count}"
    return unit_size(s.size) + (f" {s.amount}" if s.amount is not None else "")


def unit_size(u: UnitSize) -> str:
    return distribution(u) if isinstance(u, Distribution) else str(u)


def access(a: Access) -> str:
    if a.kind == "file":
        path = a.path or ""
        return "file " + (path if BARE_FILENAME_RE.fullmatch(path) else f'"{path}"')
    return "virtual memory" if a.kind == "virtual_memory" else "memory"


def distribution(d: Distribution) -> str:
    return f"{d.name}({', '.join(number(p) for p in d.params)})"


def number(x: float) -> str:
    """Shortest text that reads back as the same float: 1024.0 -> '1024', 0.1 -> '0.1'."""
    x = float(x)
    if math.isfinite(x) and x.is_integer() and abs(x) < 1e16:
        return str(int(x))
    return repr(x)
