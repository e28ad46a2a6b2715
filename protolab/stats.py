"""Descriptive statistics of one column at one sweep point (its repetitions).

`nsd` is the normalized standard deviation (sd / |mean|) that SPIMS reports to judge run-to-run
stability; the 95 % interval is Student's t interval of the mean.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np
from scipy import stats as _st

KEYS = ("n", "mean", "sd", "nsd", "min", "max", "p50", "p95", "p99", "ci95_low", "ci95_high")


def clean(values: Iterable[Any]) -> list[float]:
    """The numeric values, as floats, with None, empty strings and NaN dropped."""
    out: list[float] = []
    for v in values:
        if v is None or (isinstance(v, str) and not v.strip()):
            continue
        f = float(v)
        if not math.isnan(f):
            out.append(f)
    return out


def mean(values: Iterable[Any]) -> float | None:
    """Mean of the numeric values, None when there are none."""
    xs = clean(values)
    return math.fsum(xs) / len(xs) if xs else None


def describe(values: Iterable[Any]) -> dict[str, Any]:
    """n, mean, sd (sample, n-1), nsd, min, max, p50/p95/p99 and the 95 % t interval of the mean.

    None/NaN values are dropped. No values: n=0 and None elsewhere. One value: sd=0 and the interval is
    the value itself. nsd is None when the mean is 0.
    """
    xs = clean(values)
    n = len(xs)
    if n == 0:
        return {"n": 0} | {k: None for k in KEYS[1:]}
    a = np.asarray(xs, dtype=float)
    m = math.fsum(xs) / n
    if n > 1:
        sd = float(np.std(a, ddof=1))
        half = float(_st.t.ppf(0.975, n - 1)) * sd / math.sqrt(n)
    else:
        sd, half = 0.0, 0.0
    p50, p95, p99 = (float(x) for x in np.percentile(a, [50, 95, 99]))
    return {
        "n": n,
        "mean": m,
        "sd": sd,
        "nsd": sd / abs(m) if m != 0 else None,
        "min": float(a.min()),
        "max": float(a.max()),
        "p50": p50,
        "p95": p95,
        "p99": p99,
        "ci95_low": m - half,
        "ci95_high": m + half,
    }


def binomial_interval(events: int, trials: int, confidence: float) -> tuple[float, float]:
    """Exact (Clopper-Pearson) interval of a proportion."""
    ci = _st.binomtest(events, trials).proportion_ci(confidence_level=confidence)
    return float(ci.low), float(ci.high)
