"""Units as typed values: durations ("5s", "100ms"), rates ("10Mbit") and sizes ("1500B").

Specs never hold a bare number whose unit must be guessed: a duration is a string with its unit, a rate
says bit (or byte) per second with an SI prefix. Parsed values are plain floats in base units (seconds,
bits per second, bytes), which is what every column and metric carries.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import BeforeValidator, PlainSerializer, WithJsonSchema

_DURATION_UNITS = {"us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0, "h": 3600.0}
_RATE_PREFIX = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9}
_SIZE_PREFIX = {"": 1, "k": 1000, "K": 1000, "Ki": 1024, "M": 1000**2, "Mi": 1024**2}

_NUM = r"(\d+(?:\.\d+)?|\.\d+)"
_DURATION_RE = re.compile(rf"^\s*{_NUM}\s*(us|µs|ms|s|min|h)\s*$")
_RATE_RE = re.compile(rf"^\s*{_NUM}\s*([kKMG]?)(bit|bps|B)(?:/s)?\s*$")
_SIZE_RE = re.compile(rf"^\s*{_NUM}\s*(|k|K|Ki|M|Mi)B\s*$")
# A value may also be a sweep reference like "${rate}", substituted before validation.
TEMPLATE_SCHEMA = {"type": "string", "pattern": r"\$\{[A-Za-z_][A-Za-z0-9_.]*\}"}


def parse_duration(value: str | float | int) -> float:
    """'100ms' -> 0.1 seconds. Bare numbers are refused: say the unit."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        raise ValueError(f"duration {value!r} has no unit; write it like '5s' or '100ms'")
    m = _DURATION_RE.match(str(value))
    if not m:
        raise ValueError(f"duration {value!r} is not a number with a unit (us, ms, s, min, h), e.g. '250ms'")
    return float(m.group(1)) * _DURATION_UNITS[m.group(2)]


def parse_rate(value: str | float | int) -> float:
    """'10Mbit' -> 1e7 bits per second; '1MB/s' -> 8e6. Bare numbers are refused."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        raise ValueError(f"rate {value!r} has no unit; write it like '10Mbit' (bits per second)")
    m = _RATE_RE.match(str(value))
    if not m:
        raise ValueError(f"rate {value!r} is not like '10Mbit', '512kbit' or '1MB/s'")
    bits = float(m.group(1)) * _RATE_PREFIX[m.group(2)]
    return bits * 8 if m.group(3) == "B" else bits


def parse_size(value: str | int) -> int:
    """'1500B' -> 1500 bytes; plain integers are taken as bytes (sizes have one obvious unit)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    m = _SIZE_RE.match(str(value))
    if not m:
        raise ValueError(f"size {value!r} is not like '1500B' or '64KiB'")
    return int(float(m.group(1)) * _SIZE_PREFIX[m.group(2)])


def format_rate(bits_per_second: float) -> str:
    """1e7 -> '10Mbit' (the form tc and specs use)."""
    for prefix, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if bits_per_second >= scale and (bits_per_second / scale) == int(bits_per_second / scale):
            return f"{int(bits_per_second / scale)}{prefix}bit"
    return f"{int(bits_per_second)}bit"


def format_duration(seconds: float) -> str:
    if seconds >= 1 and seconds == int(seconds):
        return f"{int(seconds)}s"
    return f"{seconds * 1000:g}ms"


def parse_quantity(value: str | float | int) -> float:
    """A number, or a duration / rate / size / percentage string, in base units (for check bounds and
    targets); a percentage becomes a ratio ('1%' -> 0.01)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    m = re.match(rf"^\s*{_NUM}\s*%\s*$", str(value))
    if m:
        return float(m.group(1)) / 100
    for parse in (parse_rate, parse_duration, parse_size):
        try:
            return float(parse(value))
        except ValueError:
            continue
    try:
        return float(value)
    except ValueError:
        raise ValueError(f"{value!r} is neither a number nor a duration, rate, size or percentage") from None


# Field types for pydantic models: accept the unit string, hold base units, serialize back to a string.
Seconds = Annotated[
    float,
    BeforeValidator(parse_duration),
    PlainSerializer(format_duration, return_type=str),
    WithJsonSchema({"anyOf": [{"type": "string", "pattern": _DURATION_RE.pattern}, TEMPLATE_SCHEMA]}),
]
BitsPerSecond = Annotated[
    float,
    BeforeValidator(parse_rate),
    PlainSerializer(format_rate, return_type=str),
    WithJsonSchema({"anyOf": [{"type": "string", "pattern": _RATE_RE.pattern}, TEMPLATE_SCHEMA]}),
]
Bytes = Annotated[
    int,
    BeforeValidator(parse_size),
    WithJsonSchema({"anyOf": [{"type": "integer"}, {"type": "string", "pattern": _SIZE_RE.pattern}, TEMPLATE_SCHEMA]}),
]
Quantity = Annotated[
    float,
    BeforeValidator(parse_quantity),
    WithJsonSchema({"anyOf": [{"type": "number"}, {"type": "string"}]}),
]
