"""Human units for display: tidy columns carry their base unit in their name; people read Mbit/s, %, ms.

Files meant for programs (tidy.csv, tables/*.csv, summary.json) keep base units; Markdown, HTML and plots
go through `Display` to scale and format. A column's unit is the longest known suffix of its name.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..model.base import axis_str as axis_str
from ..units import parse_duration, parse_quantity, parse_rate, parse_size

# suffix of a measured column -> unit family
UNIT_SUFFIXES: dict[str, str] = {
    "_bits_per_second": "rate",
    "_bytes_per_second": "byterate",
    "_packets_per_second": "pps",
    "_messages_per_second": "mps",
    "_ratio": "ratio",
    "_seconds": "seconds",
    "_total": "total",
    "_bytes": "bytes",
}
MISSING = "—"


def unit_family(column: str) -> str | None:
    """'h3_rx_bits_per_second' -> 'rate'; None for a name without a known unit suffix."""
    for suffix in sorted(UNIT_SUFFIXES, key=len, reverse=True):
        if column.endswith(suffix):
            return UNIT_SUFFIXES[suffix]
    return None


def is_measured(column: str) -> bool:
    return unit_family(column) is not None


def quantity_name(column: str) -> str:
    """'h3_rx_bits_per_second' -> 'h3 rx'; 'h1_cpu_ratio' -> 'h1 cpu'."""
    for suffix in sorted(UNIT_SUFFIXES, key=len, reverse=True):
        if column.endswith(suffix) and len(column) > len(suffix):
            column = column[: -len(suffix)]
            break
    return column.replace("_", " ")


@dataclass(frozen=True)
class Display:
    """How to show one column: value in base units * scale, formatted, with `unit` as its label."""

    family: str | None
    scale: float
    unit: str

    @classmethod
    def for_column(cls, column: str, values: Iterable[Any] = ()) -> Display:
        """Pick the display unit; seconds and bytes look at the values (ms when all are below 1 s)."""
        fam = unit_family(column)
        finite = [abs(float(v)) for v in values if v is not None and math.isfinite(float(v))]
        top = max(finite) if finite else 0.0
        if fam == "rate":
            return cls(fam, 1e-6, "Mbit/s")
        if fam == "byterate":
            return cls(fam, 1e-3, "kB/s")
        if fam == "pps":
            return cls(fam, 1.0, "pkt/s")
        if fam == "mps":
            return cls(fam, 1.0, "msg/s")
        if fam == "ratio":
            return cls(fam, 100.0, "%")
        if fam == "seconds":
            return cls(fam, 1e3, "ms") if top < 1 else cls(fam, 1.0, "s")
        if fam == "bytes":
            for scale, unit in ((1e-9, "GB"), (1e-6, "MB"), (1e-3, "kB")):
                if top * scale >= 1:
                    return cls(fam, scale, unit)
            return cls(fam, 1.0, "B")
        if fam == "total":
            return cls(fam, 1.0, "")
        return cls(None, 1.0, "")

    def decimals(self, scaled: float) -> int:
        a = abs(scaled)
        if self.family in ("rate", "byterate", "seconds", "bytes"):
            return 3 if a < 10 else 2 if a < 1000 else 1
        if self.family == "ratio":
            return 2
        if self.family in ("pps", "mps"):
            return 0 if a >= 100 else 1
        if self.family == "total":
            return 0 if float(scaled).is_integer() else 1
        return 3

    def number(self, value: float | None, decimals: int | None = None) -> str:
        """The scaled number alone ('9.571'); MISSING for None/NaN."""
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return MISSING
        scaled = float(value) * self.scale
        if math.isinf(scaled):
            return "∞" if scaled > 0 else "-∞"
        if self.family is None:
            return f"{scaled:.4g}"
        d = self.decimals(scaled) if decimals is None else decimals
        return f"{scaled:,.{d}f}"

    def with_unit(self, value: float | None) -> str:
        """'9.571 Mbit/s', '0.12 %', '12.500 ms'; MISSING for None."""
        s = self.number(value)
        if s == MISSING or not self.unit:
            return s
        return f"{s} {self.unit}"

    def mean_sd(self, mean: float | None, sd: float | None, n: int) -> str:
        """'9.571 ± 0.012' when n > 1, '9.571' when n == 1, MISSING when n == 0."""
        if n == 0 or mean is None:
            return MISSING
        if n > 1 and sd is not None:
            d = self.decimals(float(mean) * self.scale) if self.family is not None else None
            if self.family == "total":
                d = 1
            return f"{self.number(mean, d)} ± {self.number(sd, d)}"
        return self.number(mean)

    def header(self, column: str) -> str:
        """'h3 rx (Mbit/s)'; the raw column name when its unit is unknown."""
        if self.family is None:
            return column
        name = quantity_name(column)
        if self.family == "total":
            return f"{name} (count)"
        return f"{name} ({self.unit})"

    def bound(self, lo: float | None, hi: float | None) -> str:
        """A check's bound: '9.500 – 10.500 Mbit/s', '≥ 9.500 Mbit/s', '≤ 1.00 %'."""
        u = f" {self.unit}" if self.unit else ""
        if lo is not None and hi is not None:
            d = self.decimals(max(abs(lo), abs(hi)) * self.scale) if self.family is not None else None
            return f"{self.number(lo, d)} – {self.number(hi, d)}{u}"
        if lo is not None:
            return f"≥ {self.number(lo)}{u}"
        if hi is not None:
            return f"≤ {self.number(hi)}{u}"
        return "(none)"


def parse_axis_value(value: Any) -> tuple[float, str] | None:
    """An axis value as a number in base units and its family ('rate', 'seconds', 'bytes', None), or None.

    '10Mbit' -> (1e7, 'rate'); '100ms' -> (0.1, 'seconds'); '1500B' -> (1500, 'bytes'); '3' -> (3.0, None).
    """
    if isinstance(value, (bool, dict, list)) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value), None
    s = str(value).strip()
    # sizes before rates: '1500B' is a datagram length, a byte rate is written '1MB/s'
    for parse, fam in ((parse_duration, "seconds"), (parse_size, "bytes"), (parse_rate, "rate")):
        try:
            return float(parse(s)), fam
        except ValueError:
            continue
    try:
        return float(parse_quantity(s)), None
    except ValueError:
        return None
