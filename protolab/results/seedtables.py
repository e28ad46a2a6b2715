"""The seed's own numbers for a table, shown beside the measured ones (a spec table's `reference`).

The CSV format is in experiments/seed-tables/README.md: a header naming the table's `rows` axes and then
any of the table's columns (same names, base units as in tidy.csv), one row per row key, a blank cell
where the seed has no number, `#` lines as comments. Row keys match the measured table's keys as
strings, or as quantities when both parse ('10Mbit' matches '10000kbit', '1500B' matches '1500'). A row for a
system of the seed's own that has no counterpart in the sweep (another protocol, another machine) is keyed with a
value starting `seed:` (SEED_ONLY, e.g. `seed:FTAM Sun3`): it is shown after the measured rows like any seed row
no point measured, and is_seed_only() tells it from a row whose key is merely misspelt.

At the end of a run the CSV is copied into the results folder (tables/<name>.seed.csv), so
`protolab report` re-renders the comparison from the results folder alone. A reference is read only from
inside seed-tables/ (beside the spec, or in experiments/), and the copy only inside the results folder: a
manifest naming anything else is refused with a ResultsError.
"""

from __future__ import annotations

import csv
import io
import math
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..model.report import EXPERIMENTS_DIR, Table, reference_problem, resolve_reference
from .display import parse_axis_value
from .store import ResultsError

Key = tuple[Any, ...]
SEED_ONLY = "seed:"  # a row-key value naming the seed's own system, which nothing here measures


def is_seed_only(values: Sequence[str]) -> bool:
    """Whether a seed row stands for the seed's own system (a key value `seed:...`), unmatched by design."""
    return any(str(v).strip().startswith(SEED_ONLY) for v in values)


def results_copy(run_dir: Path, table: Table) -> Path:
    return Path(run_dir) / "tables" / f"{table.name}.seed.csv"


def _key_part(value: str) -> Any:
    parsed = parse_axis_value(value)
    if parsed is None:
        return value.strip()
    number, family = parsed
    return (family, round(number, 9))


def key(values: Sequence[str]) -> Key:
    return tuple(_key_part(v) for v in values)


@dataclass
class SeedTable:
    citation: str
    source: str  # the reference's file, as the spec gives it
    axes: list[str]
    columns: list[str]  # the measured columns the seed has numbers for, in the table's order
    rows: list[tuple[tuple[str, ...], dict[str, float | None]]]  # row key as written, values in base units

    def lookup(self) -> dict[Key, dict[str, float | None]]:
        return {key(k): v for k, v in self.rows}


def parse(text: str, table: Table, citation: str, source: str) -> SeedTable:
    """Parse a seed table's CSV against the table it belongs to (ValueError says what is wrong)."""
    lines = [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    reader = csv.reader(io.StringIO("\n".join(lines)))
    header = [h.strip() for h in next(reader, [])]
    if header[: len(table.rows)] != list(table.rows):
        raise ValueError(f"{source}: the header must start with the table's rows {table.rows}, not {header}")
    extra = [h for h in header[len(table.rows) :] if h not in table.columns]
    if extra:
        raise ValueError(f"{source}: columns {extra} are not columns of table {table.name} ({table.columns})")
    cols = header[len(table.rows) :]
    if not cols:
        raise ValueError(f"{source}: no value columns")
    rows = []
    for n, rec in enumerate(reader, start=2):
        if len(rec) != len(header):
            raise ValueError(f"{source}: data row {n} has {len(rec)} cells, the header {len(header)}")
        vals: dict[str, float | None] = {}
        for c, cell in zip(cols, rec[len(table.rows) :], strict=True):
            cell = cell.strip()
            try:
                vals[c] = float(cell) if cell else None
            except ValueError:
                raise ValueError(f"{source}: data row {n}, {c}: {cell!r} is not a number (base units)") from None
            if vals[c] is not None and not math.isfinite(vals[c]):
                vals[c] = None
        rows.append((tuple(v.strip() for v in rec[: len(table.rows)]), vals))
    ordered = [c for c in table.columns if c in cols]
    return SeedTable(citation, source, list(table.rows), ordered, rows)


def load_for_run(run_dir: Path, manifest: Mapping[str, Any], table: Table) -> SeedTable | None:
    """The table's seed numbers: the results folder's copy, else the file beside the spec (then copied)."""
    ref = table.reference
    if ref is None:
        return None
    if why := reference_problem(ref.file):  # a manifest not written by a validated spec
        raise ResultsError(f"{run_dir}: table {table.name}: reference.file {ref.file!r}: {why}")
    copy = results_copy(run_dir, table)
    if not copy.resolve().is_relative_to(Path(run_dir).resolve()):
        raise ResultsError(f"{run_dir}: table {table.name}: {copy} resolves to {copy.resolve()}, outside the folder")
    if not copy.exists():
        bases = [Path(manifest["spec_file"]).parent] if manifest.get("spec_file") else []
        bases.append(EXPERIMENTS_DIR)
        candidates = [base / ref.file for base in bases]
        base = next((b for b, p in zip(bases, candidates, strict=True) if p.is_file()), None)
        if base is None:
            raise ValueError(
                f"reference {ref.file} not found (looked in {', '.join(str(p.parent) for p in candidates)})"
            )
        try:
            found = resolve_reference(base, ref.file)  # refuses a symbolic link out of seed-tables/
        except ValueError as exc:
            raise ResultsError(f"{run_dir}: table {table.name}: {exc}") from None
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(found, copy)
    return parse(copy.read_text(encoding="utf-8"), table, ref.citation, ref.file)
