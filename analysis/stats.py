"""Statistics over repeats: mean, sample standard deviation, Student-t and bootstrap intervals, and
the tests the study used (Wilcoxon signed-rank, Pearson) plus Kendall tau and a linear-fit R².

Every number the report prints comes from here. Each function takes plain lists and says
"insufficient data" (with the reason) rather than inventing a verdict from too few values.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
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
# The study's own tests (Wilcoxon signed-rank between frameworks, Pearson epochs vs accuracy) and
# the additions (Kendall tau between orders, bootstrap intervals, linear-fit R²). Each takes plain
# lists and returns a small frozen dataclass with the statistic, p-value and n, or a result whose
# ``reason`` says why there is none, so report.py renders them without knowing scipy.

SIGNIFICANCE_LEVEL = 0.05
BOOTSTRAP_RESAMPLES = 10_000
BOOTSTRAP_SEED = 20210101  # fixed: the same runs give the same interval on every machine
MIN_KENDALL_N = 3  # with 2 items tau is always ±1: an order, not evidence of agreement
MIN_PEARSON_N = 3  # with 2 points r is always ±1


@dataclass(frozen=True)
class StatResult:
    """A statistic with its two-sided p-value over n items; statistic None with a reason when none."""

    name: str
    n: int
    statistic: float | None
    p_value: float | None
    reason: str = ""

    @property
    def sufficient(self) -> bool:
        """True when the test could be run."""
        return self.statistic is not None

    def significant(self, alpha: float = SIGNIFICANCE_LEVEL) -> bool | None:
        """p < alpha, or None when the test could not be run (or gave no p-value)."""
        if self.p_value is None or not math.isfinite(self.p_value):
            return None
        return self.p_value < alpha

    def text(self, symbol: str, digits: int = 3) -> str:
        """'tau=0.667, p=0.333, n=4' or 'insufficient data (why)'."""
        if not self.sufficient:
            return f"{INSUFFICIENT_DATA} ({self.reason})"
        p = "—" if self.p_value is None or not math.isfinite(self.p_value) else f"{self.p_value:.{digits}g}"
        return f"{symbol}={self.statistic:.{digits}g}, p={p}, n={self.n}"


def _insufficient(name: str, n: int, reason: str) -> StatResult:
    return StatResult(name, n, None, None, reason)


def wilcoxon_min_p(n: int) -> float:
    """The smallest two-sided p the exact signed-rank test can give with n non-zero pairs: 2 / 2**n.

    All differences of one sign is the most extreme of the 2**n equally likely sign patterns; with
    n <= 5 it is still >= 0.0625, so p < 0.05 cannot be reached whatever the data.
    """
    return 2.0 / 2**n if n > 0 else 1.0


def wilcoxon_paired(xs: Sequence[float], ys: Sequence[float], alpha: float = SIGNIFICANCE_LEVEL) -> StatResult:
    """Wilcoxon signed-rank test of paired values (xs[i] with ys[i]), two-sided, scipy's exact method.

    Zero differences carry no sign and are dropped (scipy's 'wilcox' rule), so n counts the
    non-zero pairs. When even the most extreme sign pattern cannot reach p < alpha (n <= 5 at
    0.05) the result is insufficient data, not a 'no difference' verdict.
    """
    if len(xs) != len(ys):
        raise ValueError(f"paired samples differ in length: {len(xs)} vs {len(ys)}")
    diffs = [x - y for x, y in zip(xs, ys)]
    nonzero = [d for d in diffs if d != 0]
    n = len(nonzero)
    if n == 0:
        return _insufficient("wilcoxon", 0, f"{len(diffs)} pairs, all equal" if diffs else "no pairs")
    if wilcoxon_min_p(n) >= alpha:
        return _insufficient("wilcoxon", n, f"{n} non-zero pairs; p < {alpha:g} needs at least "
                                            f"{min_wilcoxon_pairs(alpha)}")
    from scipy import stats as scipy_stats

    res = scipy_stats.wilcoxon(nonzero, zero_method="wilcox", alternative="two-sided")
    return StatResult("wilcoxon", n, float(res.statistic), float(res.pvalue))


def min_wilcoxon_pairs(alpha: float = SIGNIFICANCE_LEVEL) -> int:
    """The fewest non-zero pairs with which the exact signed-rank test can reach p < alpha (6 at 0.05)."""
    n = 1
    while wilcoxon_min_p(n) >= alpha:
        n += 1
    return n


def pearson(xs: Sequence[float], ys: Sequence[float]) -> StatResult:
    """Pearson correlation r of paired values with its two-sided p (scipy.stats.pearsonr).

    Needs at least MIN_PEARSON_N pairs; a constant series has no correlation (insufficient data).
    """
    n = len(xs)
    if n != len(ys):
        raise ValueError(f"paired samples differ in length: {n} vs {len(ys)}")
    if n < MIN_PEARSON_N:
        return _insufficient("pearson", n, f"{n} points; needs at least {MIN_PEARSON_N}")
    if len(set(xs)) < 2 or len(set(ys)) < 2:
        return _insufficient("pearson", n, "a constant series has no correlation")
    from scipy import stats as scipy_stats

    res = scipy_stats.pearsonr(xs, ys)
    return StatResult("pearson", n, float(res.statistic), float(res.pvalue))


def kendall(xs: Sequence[float], ys: Sequence[float]) -> StatResult:
    """Kendall tau-b between two orderings of the same items, with its two-sided p (scipy.stats.kendalltau).

    Needs at least MIN_KENDALL_N items; when either side is all ties there is no order to compare.
    """
    n = len(xs)
    if n != len(ys):
        raise ValueError(f"paired samples differ in length: {n} vs {len(ys)}")
    if n < MIN_KENDALL_N:
        return _insufficient("kendall", n, f"n={n} with both values; needs at least {MIN_KENDALL_N}")
    if len(set(xs)) < 2 or len(set(ys)) < 2:
        return _insufficient("kendall", n, "one side is all ties: no order to compare")
    from scipy import stats as scipy_stats

    res = scipy_stats.kendalltau(xs, ys)
    return StatResult("kendall", n, float(res.statistic), float(res.pvalue))


def bootstrap_mean_ci(values: Iterable[float | None], confidence: float = DEFAULT_CONFIDENCE,
                      resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED) -> Estimate:
    """Percentile bootstrap interval of the mean: resample with replacement, fixed seed.

    Returns an Estimate whose std is the sample standard deviation (as describe()) and whose
    interval is the (1-confidence)/2 and (1+confidence)/2 percentiles of the resampled means.
    With n < 2 there is nothing to resample: no interval (insufficient data).
    """
    import numpy as np

    xs = clean(values)
    base = describe(xs, confidence)
    if base.n < 2:
        return base
    data = np.asarray(xs, dtype=float)
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, len(data), size=(resamples, len(data)))].mean(axis=1)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return Estimate(base.n, base.mean, base.std, float(low), float(high), confidence)


@dataclass(frozen=True)
class LinearFit:
    """Least-squares line y = intercept + slope * x and its coefficient of determination."""

    n: int
    slope: float | None
    intercept: float | None
    r_squared: float | None
    reason: str = ""


def linear_fit(xs: Sequence[float], ys: Sequence[float], min_points: int = 3) -> LinearFit:
    """Ordinary least squares with intercept; R² = 1 - SS_res / SS_tot.

    With fewer than min_points points any line fits (two points always give R² = 1), so the
    result is insufficient; a constant y gives R² = 1 only if the fit is exact.
    """
    n = len(xs)
    if n != len(ys):
        raise ValueError(f"paired samples differ in length: {n} vs {len(ys)}")
    if n < min_points:
        return LinearFit(n, None, None, None, f"{n} points; needs at least {min_points}")
    mx, my = math.fsum(xs) / n, math.fsum(ys) / n
    sxx = math.fsum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return LinearFit(n, None, None, None, "all x equal")
    slope = math.fsum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    intercept = my - slope * mx
    ss_res = math.fsum((y - intercept - slope * x) ** 2 for x, y in zip(xs, ys))
    ss_tot = math.fsum((y - my) ** 2 for y in ys)
    r2 = 1.0 if ss_tot == 0 else 1 - ss_res / ss_tot
    return LinearFit(n, slope, intercept, r2)
