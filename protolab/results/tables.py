"""Tables of a run: tables/<name>.csv (base units, for programs) and tables/<name>.md (for people), one row
per combination of the table's `rows` axes, with the seed's numbers beside the measured ones when the table
has a reference; and knee tables (where delivery stops keeping up with the offered load)."""

from __future__ import annotations

import csv
import io
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..model.report import Knee, Table
from ..stats import clean, describe
from .display import MISSING, Display, parse_axis_value, unit_family
from .seedtables import SeedTable
from .seedtables import key as seedkey
from .sweep import Row, Sweep, only_where, pooled_note, select_rows, where_note

NSD_BOUND = 0.05  # SPIMS (sec. 7) attaches the normalized sd to a result above this
NSD_MARK = "†"


def unstable(s: dict[str, Any]) -> bool:
    """A cell whose repetitions disagree: n > 1 and sd / |mean| above NSD_BOUND."""
    return s["n"] > 1 and s.get("nsd") is not None and s["nsd"] > NSD_BOUND


def runs_nsd_column(column: str) -> str | None:
    """For a `<q>_mean_<unit>` column, the column with the normalized sd over one measurement's runs,
    `<q>_nsd_ratio` (the spims workload's); None for any other column."""
    q, sep, unit = column.rpartition("_mean_")
    return f"{q}_nsd_ratio" if sep and q and unit else None


def _runs_nsd(rows: Sequence[Row], column: str) -> float | None:
    """The mean over the rows (repetitions) of the column's runs_nsd_column, None when they carry none."""
    name = runs_nsd_column(column)
    got = clean(r.get(name) for r in rows) if name else []
    return math.fsum(got) / len(got) if got else None


@dataclass(frozen=True)
class Convergence:
    """The repetitions a table row's points took under `repetitions: {until_nsd: ...}`."""

    points: int
    n_min: int
    n_max: int
    converged: int  # points whose watched columns' nsd of the mean fell below the bound

    CSV = ("points", "points_converged", "repetitions_min", "repetitions_max")

    @classmethod
    def of(cls, rows: Sequence[Row], repetitions: Mapping[str, Mapping[str, Any]]) -> Convergence:
        n = Counter(str(r.get("point")) for r in rows)
        return cls(len(n), min(n.values(), default=0), max(n.values(), default=0),
                   sum(bool((repetitions.get(p) or {}).get("converged")) for p in n))  # fmt: skip

    def text(self) -> str:
        if not self.points:
            return MISSING
        n = str(self.n_min) if self.n_min == self.n_max else f"{self.n_min}–{self.n_max}"
        if self.converged == self.points:
            return f"{n} ✓"
        if self.converged == 0:
            return f"{n} ✗"
        return f"{n} ({self.converged} of {self.points} ✓)"

    def csv(self) -> list[str]:
        return [str(self.points), str(self.converged), str(self.n_min), str(self.n_max)]

    @staticmethod
    def note(until: Mapping[str, Any] | None) -> str:
        u = until or {}
        watched = ", ".join(u.get("columns") or []) or "every result column with a non-zero mean"
        return (f"Repetitions: each point repeated until the normalized standard deviation of its mean of "
                f"{watched} fell below {u.get('until_nsd', '?')} (at least {u.get('min', '?')}, at most "
                f"{u.get('max', '?')} times); ✓ = converged, ✗ = stopped at the maximum. ")  # fmt: skip


@dataclass
class TableData:
    spec: Table
    combos: list[tuple[str, ...]]
    stats: list[list[dict[str, Any]]]  # [combo][column] -> describe()
    displays: list[Display]
    pooled: list[str]
    seed: SeedTable | None = None  # the seed's numbers, shown beside the measured columns they share
    convergence: list[Convergence] | None = None  # per combo, under `repetitions: {until_nsd: ...}`
    until: Mapping[str, Any] | None = None  # that spec
    runs_nsd: list[list[float | None]] | None = None  # [combo][column]: nsd over a measurement's runs (_runs_nsd)

    @classmethod
    def build(cls, spec: Table, sweep: Sweep, rows: Sequence[Row], seed: SeedTable | None = None,
              repetitions: Mapping[str, Mapping[str, Any]] | None = None,
              until: Mapping[str, Any] | None = None) -> TableData:  # fmt: skip
        """`repetitions` (summary.json's, per point: n, converged) and `until` (the spec's repetitions) add a
        column saying how many repetitions each row's points took and whether they converged."""
        unknown = [a for a in [*spec.rows, *spec.where] if a not in sweep.axes]
        if unknown:
            raise ValueError(f"rows {unknown} are not sweep axes (axes: {sweep.axes})")
        sweep, rows = only_where(spec.where, sweep, rows)
        combos = sweep.combos(spec.rows, rows)
        stats = [
            [describe(r.get(c) for r in select_rows(rows, spec.rows, combo)) for c in spec.columns] for combo in combos
        ]
        runs_nsd = [[_runs_nsd(select_rows(rows, spec.rows, combo), c) for c in spec.columns] for combo in combos]
        displays = [Display.for_column(c, clean(r.get(c) for r in rows)) for c in spec.columns]
        if seed is not None:  # seed rows the run did not measure go last, with empty measured cells
            measured = {seedkey(c) for c in combos}
            for k, _ in seed.rows:
                if seedkey(k) not in measured:
                    combos.append(k)
                    stats.append([describe([]) for _ in spec.columns])
                    runs_nsd.append([None for _ in spec.columns])
        conv = [Convergence.of(select_rows(rows, spec.rows, c), repetitions) for c in combos] if repetitions else None
        return cls(spec, combos, stats, displays, sweep.pooled(spec.rows, rows), seed, conv, until, runs_nsd)

    def _attached_nsd(self, i: int, j: int) -> float | None:
        """The nsd over the runs of cell (combo i, column j) when above NSD_BOUND (SPIMS sec. 7.2 attaches it)."""
        v = self.runs_nsd[i][j] if self.runs_nsd else None
        return v if v is not None and v > NSD_BOUND else None

    def _has_seed(self, column: str) -> bool:
        return self.seed is not None and column in self.seed.columns

    @property
    def headers(self) -> list[str]:
        out = list(self.spec.rows) + (["repetitions"] if self.convergence else [])
        for c, d in zip(self.spec.columns, self.displays, strict=True):
            out.append(d.header(c))
            if self._has_seed(c):
                out.append(f"seed ({d.unit})" if d.unit else "seed")
        return out

    @property
    def classes(self) -> list[str]:
        """Per header: '' for row keys, 'num' for measured columns, 'num seed' for the seed's."""
        out = [""] * len(self.spec.rows) + (["num"] if self.convergence else [])
        for c in self.spec.columns:
            out += ["num", "num seed"] if self._has_seed(c) else ["num"]
        return out

    def _seed_values(self, combo: Sequence[str]) -> dict[str, float | None]:
        return self.seed.lookup().get(seedkey(combo), {}) if self.seed is not None else {}

    def cells(self) -> list[list[str]]:
        out = []
        for i, (combo, stats) in enumerate(zip(self.combos, self.stats, strict=True)):
            seed = self._seed_values(combo)
            row = list(combo) + ([self.convergence[i].text()] if self.convergence else [])
            for j, (c, s, d) in enumerate(zip(self.spec.columns, stats, self.displays, strict=True)):
                runs = self._attached_nsd(i, j)
                row.append(d.mean_sd(s["mean"], s["sd"], s["n"]) + (f" (nsd {runs:.2g})" if runs is not None else "")
                           + (f" {NSD_MARK}" if unstable(s) else ""))  # fmt: skip
                if self._has_seed(c):
                    row.append(d.number(seed.get(c)))
            out.append(row)
        return out

    @property
    def seed_note(self) -> str:
        if self.seed is None:
            return ""
        return f"Seed columns: {self.seed.citation} (experiments/{self.seed.source}); {MISSING} = no number there."

    @property
    def note(self) -> str:
        ns = sorted({s["n"] for row in self.stats for s in row if s["n"]})
        n = f"n = {ns[0]}" if len(ns) == 1 else f"n = {ns[0]}–{ns[-1]}" if ns else "no values"
        only = where_note(self.spec.where)
        return (
            (f"Only the points with {only}. " if only else "")
            + (Convergence.note(self.until) if self.convergence else "")
            + f"Cells: {pooled_note(self.pooled)} ({n}), ± sample standard deviation when n > 1; "
            f"{MISSING} = not measured."
            + (
                f" {NSD_MARK} = normalized standard deviation (sd / |mean|) above {NSD_BOUND:g}: the repetitions "
                "disagree (SPIMS, sec. 7)."
                if any(unstable(s) for row in self.stats for s in row)
                else ""
            )
            + (
                f" (nsd x) = the normalized standard deviation over one measurement's runs, attached where above "
                f"{NSD_BOUND:g} as SPIMS sec. 7.2 does (the mean over the repetitions)."
                if any(
                    self._attached_nsd(i, j) is not None
                    for i in range(len(self.combos))
                    for j in range(len(self.spec.columns))
                )
                else ""
            )
        )

    def csv_text(self) -> str:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        header = list(self.spec.rows) + (list(Convergence.CSV) if self.convergence else [])
        for c in self.spec.columns:
            header += [f"{c}_{k}" for k in ("mean", "sd", "n", "nsd")] + ([f"{c}_seed"] if self._has_seed(c) else [])
        w.writerow(header)
        for i, (combo, stats) in enumerate(zip(self.combos, self.stats, strict=True)):
            cells: list[str] = list(combo) + (self.convergence[i].csv() if self.convergence else [])
            seed = self._seed_values(combo)
            for c, s in zip(self.spec.columns, stats, strict=True):
                nsd = _num(s["nsd"]) if s["n"] > 1 and s.get("nsd") is not None else ""
                cells += [_num(s["mean"]), _num(s["sd"]) if s["n"] else "", str(s["n"]), nsd]
                if self._has_seed(c):
                    cells.append(_num(seed.get(c)))
            w.writerow(cells)
        return buf.getvalue()

    def markdown_text(self) -> str:
        def esc(s: str) -> str:
            return s.replace("|", "\\|").replace("\n", " ")

        headers = self.headers
        align = ["---" if not cls else "---:" for cls in self.classes]
        lines = [f"# {esc(self.spec.title)}", "", "| " + " | ".join(esc(h) for h in headers) + " |"]
        lines.append("|" + "|".join(align) + "|")
        lines += ["| " + " | ".join(esc(c) for c in row) + " |" for row in self.cells()]
        lines += ["", self.note, ""]
        if self.seed is not None:
            lines += [self.seed_note, ""]
        return "\n".join(lines)


class KneeData(TableData):
    """A Knee's table: per row combination the highest offered value kept up with, the first that was not,
    and the peak delivered rate (the columns `<x>_sustained`, `<x>_collapse`, `<delivered>_peak`)."""

    knee: Knee

    @classmethod
    def build_knee(cls, spec: Knee, sweep: Sweep, rows: Sequence[Row]) -> KneeData:
        unknown = [a for a in [*spec.rows, spec.x] if a not in sweep.axes]
        if unknown:
            raise ValueError(f"axes {unknown} are not sweep axes (axes: {sweep.axes})")
        if spec.x in spec.rows:
            raise ValueError(f"x axis {spec.x!r} cannot also index the rows")
        xs: list[tuple[float, str]] = []
        for v in sweep.values[spec.x]:
            parsed = parse_axis_value(v)
            if parsed is None:
                raise ValueError(f"x axis {spec.x!r} value {v!r} is not a number")
            xs.append((parsed[0], v))
        xs.sort()
        combos = sweep.combos(spec.rows, rows)
        stats: list[list[dict[str, Any]]] = []
        for combo in combos:
            sub = select_rows(rows, spec.rows, combo)
            sustained = collapse = None
            peak: float | None = None
            for num, label in xs:
                at = [r for r in sub if r.get(spec.x) == label]
                got = clean(r.get(spec.delivered) for r in at)
                if not got:
                    continue  # not measured: neither kept up nor collapsed
                delivered = math.fsum(got) / len(got)
                offered_vals = clean(r.get(spec.offered) for r in at) if spec.offered else [num]
                offered = math.fsum(offered_vals) / len(offered_vals) if offered_vals else num
                peak = delivered if peak is None else max(peak, delivered)
                if collapse is None:
                    if offered > 0 and delivered / offered >= spec.min_ratio:
                        sustained = num
                    else:
                        collapse = num
            stats.append([describe([] if v is None else [v]) for v in (sustained, collapse, peak)])
        columns = [f"{spec.x}_sustained", f"{spec.x}_collapse", f"{spec.delivered}_peak"]
        table = Table(name=spec.name, title=spec.title, rows=spec.rows or [spec.x], columns=columns)
        if not spec.rows:  # one row for the whole sweep
            combos, table = [("all",)], table.model_copy(update={"rows": ["points"]})
        peaks = [st[2]["mean"] for st in stats]
        x_disp = Display.for_column(spec.delivered if _same_family(spec, sweep) else spec.x)
        displays = [x_disp, x_disp, Display.for_column(spec.delivered, clean(peaks))]
        data = cls(table, combos, stats, displays, sweep.pooled([*spec.rows, spec.x], rows))
        data.knee = spec
        return data

    @property
    def headers(self) -> list[str]:
        x, d = self.knee.x, self.displays
        unit = f" ({d[0].unit})" if d[0].unit else ""
        return [*self.spec.rows, f"{x} kept up to{unit}", f"{x} collapsed at{unit}", d[2].header(self.spec.columns[2])]

    @property
    def note(self) -> str:
        k = self.knee
        offered = k.offered or f"the {k.x} axis"
        return (
            f"Kept up: delivered ({k.delivered}) >= {k.min_ratio:g} x offered ({offered}) at this {k.x} and every "
            f"lower one measured; collapsed at: the first {k.x} below that; {MISSING} = none. "
            + pooled_note(self.pooled).capitalize()
            + "."
        )


def _same_family(spec: Knee, sweep: Sweep) -> bool:
    """Whether the x axis carries the delivered column's unit (a packets/s rate axis of a packets/s column):
    then the kept-up and collapse values are shown in that unit."""
    fam = unit_family(spec.delivered)
    parsed = parse_axis_value(sweep.values[spec.x][0]) if sweep.values.get(spec.x) else None
    return fam is not None and parsed is not None and (parsed[1] == fam or (parsed[1] is None and fam == "pps"))


def _num(v: float | None) -> str:
    return "" if v is None or (isinstance(v, float) and math.isnan(v)) else repr(float(v))
