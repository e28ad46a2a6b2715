"""The sweep as a run saw it, from manifest.json and tidy.csv: axes, their values, points and their labels;
and the row selection and notes that tables and plots share."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .display import axis_str

Row = Mapping[str, Any]


@dataclass
class Sweep:
    """Axis names and their values as strings, in the spec's order; point ids with their labels."""

    axes: list[str]
    values: dict[str, list[str]]
    point_values: dict[str, dict[str, str]] = field(default_factory=dict)
    point_labels: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_manifest(cls, manifest: Mapping[str, Any], rows: Sequence[Row] = ()) -> Sweep:
        sweep = manifest.get("spec", {}).get("sweep") or {}
        axes = list(sweep)
        values = {a: [axis_str(v) for v in sweep[a]] for a in axes}
        for r in rows:  # values the spec does not list (should not happen) go last, in order of appearance
            for a in axes:
                v = r.get(a)
                if v is not None and v not in values[a]:
                    values[a].append(v)
        pv, labels = {}, {}
        for p in manifest.get("points") or []:
            vals = {k: axis_str(v) for k, v in (p.get("values") or {}).items()}
            pv[p["id"]] = vals
            labels[p["id"]] = p.get("label") or ", ".join(f"{k}={v}" for k, v in vals.items()) or p["id"]
        return cls(axes, values, pv, labels)

    def combos(self, axes: Sequence[str], rows: Sequence[Row]) -> list[tuple[str, ...]]:
        """Combinations of these axes' values in sweep order that the plan or the data contain."""
        present = {tuple(v.get(a) for a in axes) for v in self.point_values.values()}
        present |= {tuple(r.get(a) for a in axes) for r in rows}
        return [c for c in itertools.product(*(self.values[a] for a in axes)) if c in present]

    def pooled(self, axes: Sequence[str], rows: Sequence[Row]) -> list[str]:
        """Axes not in `axes` that take more than one value in the data (pooled with the repetitions)."""
        return [a for a in self.axes if a not in axes and len({r.get(a) for r in rows}) > 1]


def select_rows(rows: Sequence[Row], axes: Sequence[str], combo: Sequence[str]) -> list[Row]:
    return [r for r in rows if all(r.get(a) == v for a, v in zip(axes, combo, strict=True))]


def only_where(where: Mapping[str, Any], sweep: Sweep, rows: Sequence[Row]) -> tuple[Sweep, list[Row]]:
    """A table's or plot's `where`: only the rows, and the planned points, whose axes have these values."""
    want = {a: axis_str(v) for a, v in where.items()}

    def keep(values: Mapping[str, Any]) -> bool:
        return all(values.get(a) == v for a, v in want.items())

    points = {p: v for p, v in sweep.point_values.items() if keep(v)}
    return Sweep(sweep.axes, sweep.values, points, sweep.point_labels), [r for r in rows if keep(r)]


def where_note(where: Mapping[str, Any]) -> str:
    return ", ".join(f"{a} = {axis_str(v)}" for a, v in where.items())


def pooled_note(pooled: Sequence[str]) -> str:
    if not pooled:
        return "mean over repetitions"
    axes = pooled[0] if len(pooled) == 1 else ", ".join(pooled[:-1]) + " and " + pooled[-1]
    return f"mean over repetitions and over {axes}"
