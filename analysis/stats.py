"""Descriptive statistics over repeats: mean, sample standard deviation, Student-t interval.

Kept deliberately small. The study's own tests (Wilcoxon signed-rank between frameworks, Pearson
epochs vs accuracy) and later additions (Kendall, bootstrap) belong in the "Comparisons" section at
the end of this module, so every number the report prints still comes from one place.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

INSUFFICIENT_DATA = "insufficient data"
DEFAULT_CONFIDENCE = 0.95


@dataclass(frozen=True)
class Estimate:
    """Mean of n repeats with its spread; std and interval are None when n < 2."""

    n: int
    mean: float | None
    std: float | None
    ci_low: float | None
    ci_high: float | None
    confidence: float = DEFAULT_CONFIDENCE

    @property
    def sufficient(self) -> bool:
        """True when an interval could be computed (at least two values)."""
        return self.n >= 2

    @property
    def half_width(self) -> float | None:
        """Half the interval's width (the "±" part), or None without an interval."""
        if self.ci_low is None or self.ci_high is None:
            return None
        return (self.ci_high - self.ci_low) / 2


def clean(values: Iterable[float | None]) -> list[float]:
    """The finite numbers among values; None and NaN mean "not measured" and are dropped."""
    return [float(v) for v in values if v is not None and math.isfinite(float(v))]


def describe(values: Iterable[float | None], confidence: float = DEFAULT_CONFIDENCE) -> Estimate:
    """Mean, sample standard deviation (ddof=1) and two-sided Student-t interval of the values.

    Missing values are ignored. With n < 2 there is no spread to estimate, so std and the
    interval are None (the report prints INSUFFICIENT_DATA rather than a fake zero).
    """
    xs = clean(values)
    n = len(xs)
    if n == 0:
        return Estimate(0, None, None, None, None, confidence)
    mean = math.fsum(xs) / n
    if n < 2:
        return Estimate(1, mean, None, None, None, confidence)
    std = math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / (n - 1))
    # Imported on first use: scipy.stats takes ~1 s to load, which the CLI's quick error paths skip.
    from scipy import stats as scipy_stats

    t_crit = float(scipy_stats.t.ppf((1 + confidence) / 2, df=n - 1))
    half = t_crit * std / math.sqrt(n)
    return Estimate(n, mean, std, mean - half, mean + half, confidence)


def ratio(measured: float | None, published: float | None) -> float | None:
    """measured / published, or None when either is missing or published is zero."""
    if measured is None or published is None or published == 0:
        return None
    return measured / published


def format_number(value: float | None, digits: int = 3) -> str:
    """A compact human form: significant digits, no scientific notation for ordinary sizes."""
    if value is None:
        return "—"
    if value == 0:
        return "0"
    magnitude = math.floor(math.log10(abs(value)))
    decimals = max(0, digits - 1 - magnitude)
    return f"{value:,.{decimals}f}"


def format_estimate(est: Estimate, digits: int = 3) -> str:
    """"mean ± half-width (n=k)", or the mean with INSUFFICIENT_DATA when n < 2."""
    if est.n == 0 or est.mean is None:
        return "no data"
    if not est.sufficient:
        return f"{format_number(est.mean, digits)} (n=1; {INSUFFICIENT_DATA} for an interval)"
    return f"{format_number(est.mean, digits)} ± {format_number(est.half_width, 2)} (n={est.n})"


# --- Comparisons ---------------------------------------------------------------------------
# Paired and rank tests between frameworks (Wilcoxon signed-rank, Kendall tau), Pearson
# epochs-vs-accuracy and bootstrap intervals go here. Each should take plain lists of repeat
# values (as describe() does) and return a small frozen dataclass with the statistic, p-value
# and n, so report.py can render them without knowing scipy.
