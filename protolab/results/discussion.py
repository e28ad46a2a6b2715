"""The spec's `discussion:` paragraphs with their figures filled in from the run (protolab.model.report.Paragraph).

A figure is read from what the report shows: a table's mean in one row (TableData), the seed's number in that
row, a derived fit's coefficient or a derived ratio's row (DerivedData). A figure the run does not have (a
quick profile without that load, a fit with too few points) reads `n/a` in the text and is listed, with the
reason, under the paragraph; the paragraph is still shown.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..model.report import Figure, FigureRef, Paragraph
from .derived import DerivedData, matches
from .seedtables import key as seedkey
from .tables import TableData

DISCUSSION_MD = "discussion.md"
MISSING = "n/a"


class MissingFigureError(Exception):
    """Why a figure has no value in this run."""


@dataclass
class Filled:
    title: str
    text: str
    missing: list[str] = field(default_factory=list)  # "{{figure}}: why", one per figure that read n/a


def _row(t: TableData, r: FigureRef) -> int:
    want = seedkey([r.where[a] for a in t.spec.rows])
    for i, combo in enumerate(t.combos):
        if seedkey(combo) == want:
            return i
    raise MissingFigureError(f"table {t.spec.name} has no row {', '.join(f'{a}={v}' for a, v in r.where.items())}")


def _value(r: FigureRef, tables: dict[str, TableData], derived: DerivedData | None) -> float:
    if r.kind in ("table", "seed"):
        t = tables.get(r.name)
        if t is None:
            raise MissingFigureError(f"table {r.name} was not drawn in this run")
        i = _row(t, r)
        if r.kind == "table":
            v = t.stats[i][t.spec.columns.index(r.field or "")]["mean"]
            if v is None:
                raise MissingFigureError(f"table {r.name}: {r.field} not measured in that row")
        else:
            if t.seed is None or r.field not in t.seed.columns:
                raise MissingFigureError(f"table {r.name}: the seed has no {r.field} column")
            v = t.seed.lookup().get(seedkey(t.combos[i]), {}).get(r.field or "")
            if v is None:
                raise MissingFigureError(f"table {r.name}: the seed has no {r.field} in that row")
        return float(v)
    if derived is None:
        raise MissingFigureError("the run has no derived results")
    if r.kind == "fit":
        groups = derived.fits.get(r.name)
        if groups is None:
            raise MissingFigureError(f"fit {r.name} was not formed in this run")
        f = derived.spec.fit(r.name)
        want = r.where.get(f.group) if f.group else None
        g = next((g for g in groups if f.group is None or (g.group is not None and seedkey([g.group]) ==
                                                            seedkey([want or ""]))), None)  # fmt: skip
        if g is None:
            raise MissingFigureError(f"fit {r.name} has no line for {f.group}={want}")
        if g.c0 is None:
            raise MissingFigureError(f"fit {r.name}: {g.why or 'no line'}")
        v = {"c0": g.c0, "c1": g.c1, "c2": g.c2, "c0_se": g.c0_se, "c1_se": g.c1_se, "c2_se": g.c2_se,
             "r2": g.r2, "n": g.n}[r.field or ""]  # fmt: skip
        if v is None:
            raise MissingFigureError(f"fit {r.name}: no {r.field} (fewer than three points, or no x2)")
        return float(v)
    rows = [row for row in derived.ratios.get(r.name, []) if matches(r.where, row.values)]
    if len(rows) != 1:
        raise MissingFigureError(f"ratio {r.name}: {len(rows)} rows match {r.where or 'no filter'}, not one")
    if rows[0].value is None:
        raise MissingFigureError(f"ratio {r.name}: {rows[0].why or 'no value'}")
    return float(rows[0].value)


def figure_value(fig: Figure, tables: dict[str, TableData], derived: DerivedData | None) -> float:
    v = _value(fig.top, tables, derived)
    if fig.bottom is not None:
        b = _value(fig.bottom, tables, derived)
        if b == 0:
            raise MissingFigureError(f"{fig.bottom.text()} is 0")
        v /= b
    v *= fig.scale
    if not math.isfinite(v):
        raise MissingFigureError("not a finite number")
    return v


def fill(paragraphs: Sequence[Paragraph], tables: Sequence[TableData], derived: DerivedData | None) -> list[Filled]:
    by_name = {t.spec.name: t for t in tables}
    out = []
    for p in paragraphs:
        missing: list[str] = []

        def value(fig: Figure, missing: list[str] = missing) -> str:
            try:
                return format(figure_value(fig, by_name, derived), fig.format)
            except MissingFigureError as why:
                missing.append(f"{{{{{fig.source}}}}}: {why}")
                return MISSING

        out.append(Filled(p.title, p.fill(value), missing))
    return out


def paragraphs(text: str) -> list[str]:
    """The text's paragraphs (split at blank lines), each on one line."""
    return [" ".join(p.split()) for p in re.split(r"\n\s*\n", text) if p.strip()]


def markdown(experiment: str, run_id: str, filled: Sequence[Filled]) -> str:
    lines = [f"# {experiment} {run_id}: discussion", "",
             "Each number below is this run's, filled into the spec's `discussion:` text.", ""]  # fmt: skip
    for f in filled:
        lines += [f"## {f.title}", ""]
        lines += [line for para in paragraphs(f.text) for line in (para, "")]
        lines += [f"- {MISSING}: {m}" for m in f.missing] + ([""] if f.missing else [])
    return "\n".join(lines)
