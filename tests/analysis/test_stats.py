"""Each statistic of analysis.stats pinned on small hand-made samples with hand-computed values.

The expected numbers come from the definitions (printed t quantiles, sign-pattern counting for the
exact Wilcoxon test, the Cauchy distribution for Pearson with n = 3, pair counting for Kendall),
not from calling scipy the same way the code does.
"""

from __future__ import annotations

import math
from itertools import product

import pytest

from analysis.stats import (
    INSUFFICIENT_DATA,
    bootstrap_mean_ci,
    describe,
    kendall,
    linear_fit,
    min_wilcoxon_pairs,
    pearson,
    wilcoxon_min_p,
    wilcoxon_paired,
)

# Student-t quantiles t(0.975, df) from a printed table.
T_975 = {1: 12.706204736, 2: 4.302652730, 4: 2.776445105}


# --- Student-t interval --------------------------------------------------------------------

def test_t_interval_five_values() -> None:
    est = describe([2.0, 4.0, 4.0, 4.0, 6.0])
    # mean 4; squared deviations 4+0+0+0+4 = 8; s = sqrt(8/4) = sqrt(2); half = t(4) * s / sqrt(5)
    half = T_975[4] * math.sqrt(2) / math.sqrt(5)
    assert (est.n, est.mean, est.std) == (5, 4.0, pytest.approx(math.sqrt(2)))
    assert (est.ci_low, est.ci_high) == (pytest.approx(4 - half, rel=1e-9), pytest.approx(4 + half, rel=1e-9))


def test_t_interval_needs_two_values() -> None:
    est = describe([7.0, None])
    assert (est.n, est.mean, est.ci_low, est.ci_high, est.sufficient) == (1, 7.0, None, None, False)


# --- Wilcoxon signed-rank ------------------------------------------------------------------

def exact_wilcoxon_p(diffs: list[float]) -> tuple[float, float]:
    """(min(W+, W-), two-sided exact p) by enumerating all 2**n sign patterns of the ranks."""
    ranks = {d: r for r, d in enumerate(sorted(diffs, key=abs), 1)}  # no ties in the hand-made samples
    w_plus = sum(ranks[d] for d in diffs if d > 0)
    w_minus = sum(ranks[d] for d in diffs if d < 0)
    stat = min(w_plus, w_minus)
    n = len(diffs)
    total = n * (n + 1) / 2
    count = sum(1 for signs in product((0, 1), repeat=n)
                if min(s := sum(r for r, on in zip(range(1, n + 1), signs) if on), total - s) <= stat)
    return stat, count / 2**n


def test_wilcoxon_six_pairs_all_one_sign_reaches_the_smallest_p() -> None:
    res = wilcoxon_paired([11.0, 12.0, 13.0, 14.0, 15.0, 16.0], [10.0] * 6)
    assert (res.n, res.statistic, res.p_value) == (6, 0.0, pytest.approx(2 / 64))
    assert res.significant() is True


def test_wilcoxon_seven_pairs_against_sign_pattern_count() -> None:
    xs = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0]
    ys = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 7.0]
    stat, p = exact_wilcoxon_p([x - y for x, y in zip(xs, ys)])
    assert (stat, p) == (7.0, pytest.approx(38 / 128))  # 38 of the 128 patterns are as extreme
    res = wilcoxon_paired(xs, ys)
    assert (res.n, res.statistic, res.p_value) == (7, stat, pytest.approx(p))
    assert res.significant() is False


def test_wilcoxon_five_pairs_is_insufficient_data() -> None:
    assert wilcoxon_min_p(5) == 2 / 32 and wilcoxon_min_p(6) == 2 / 64
    assert min_wilcoxon_pairs(0.05) == 6 and min_wilcoxon_pairs(0.01) == 8
    res = wilcoxon_paired([2.0, 3.0, 4.0, 5.0, 6.0], [1.0] * 5)
    assert (res.n, res.statistic, res.p_value, res.significant()) == (5, None, None, None)
    assert res.text("W").startswith(INSUFFICIENT_DATA) and "needs at least 6" in res.text("W")


def test_wilcoxon_zero_differences_do_not_count() -> None:
    # Six pairs, but one is a tie: five non-zero differences cannot reach p < 0.05.
    res = wilcoxon_paired([1.0, 2.0, 3.0, 4.0, 5.0, 9.0], [0.0, 0.0, 0.0, 0.0, 0.0, 9.0])
    assert (res.n, res.sufficient) == (5, False)
    assert wilcoxon_paired([1.0, 1.0], [1.0, 1.0]).reason == "2 pairs, all equal"
    with pytest.raises(ValueError):
        wilcoxon_paired([1.0], [1.0, 2.0])


# --- Pearson -------------------------------------------------------------------------------

def test_pearson_three_points_by_hand() -> None:
    # x 1,2,3; y 2,4,7: dx -1,0,1; dy -7/3,-1/3,8/3; Sxy = 5, Sxx = 2, Syy = 114/9.
    r = 5 / math.sqrt(2 * 114 / 9)
    # With n = 3, t = r * sqrt(1 / (1 - r^2)) has 1 degree of freedom (Cauchy): p = 1 - 2/pi * atan|t|.
    p = 1 - 2 / math.pi * math.atan(abs(r) / math.sqrt(1 - r * r))
    res = pearson([1.0, 2.0, 3.0], [2.0, 4.0, 7.0])
    assert (res.n, res.statistic, res.p_value) == (3, pytest.approx(r, rel=1e-12), pytest.approx(p, rel=1e-9))
    assert r == pytest.approx(0.993399, abs=1e-6)


def test_pearson_perfect_line_and_insufficient_cases() -> None:
    res = pearson([1.0, 2.0, 3.0, 4.0], [10.0, 8.0, 6.0, 4.0])
    assert res.statistic == pytest.approx(-1.0)
    two = pearson([1.0, 2.0], [3.0, 5.0])
    assert (two.statistic, two.p_value, two.reason) == (None, None, "2 points; needs at least 3")
    flat = pearson([1.0, 2.0, 3.0], [0.5, 0.5, 0.5])
    assert flat.statistic is None and "constant" in flat.reason


# --- Kendall -------------------------------------------------------------------------------

def test_kendall_same_and_reversed_orders() -> None:
    same = kendall([1.0, 2.0, 3.0, 4.0], [10.0, 20.0, 30.0, 40.0])
    # All 6 pairs concordant; exact p: 1 of the 4! = 24 orders is as extreme on each side -> 2/24.
    assert (same.n, same.statistic, same.p_value) == (4, 1.0, pytest.approx(2 / 24))
    rev = kendall([1.0, 2.0, 3.0], [9.0, 5.0, 1.0])
    assert (rev.statistic, rev.p_value) == (-1.0, pytest.approx(2 / 6))


def test_kendall_one_swap() -> None:
    # Orders a<b<c<d vs a<b<d<c: 5 concordant, 1 discordant pair -> tau = (5 - 1) / 6.
    res = kendall([1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 4.0, 3.0])
    assert res.statistic == pytest.approx(4 / 6)
    # Exact p: orders of 4 with at most 1 discordant pair: 1 + 3 = 4 on each side -> 8/24.
    assert res.p_value == pytest.approx(8 / 24)


def test_kendall_needs_three_items_and_an_order() -> None:
    two = kendall([1.0, 2.0], [2.0, 1.0])
    assert (two.statistic, two.reason) == (None, "n=2 with both values; needs at least 3")
    assert "insufficient data" in two.text("tau")
    tied = kendall([1.0, 2.0, 3.0], [98.0, 98.0, 98.0])
    assert tied.statistic is None and "ties" in tied.reason


# --- Bootstrap -----------------------------------------------------------------------------

def test_bootstrap_two_values_spans_them() -> None:
    # Resampled means of (0, 1) are 0, 0.5, 1 with probabilities 1/4, 1/2, 1/4: the 2.5th and
    # 97.5th percentiles of 10,000 resamples are 0 and 1.
    est = bootstrap_mean_ci([0.0, 1.0])
    assert (est.n, est.mean, est.ci_low, est.ci_high) == (2, 0.5, 0.0, 1.0)


def test_bootstrap_constant_values_and_seed() -> None:
    est = bootstrap_mean_ci([3.0, 3.0, 3.0])
    assert (est.ci_low, est.ci_high) == (3.0, 3.0)
    values = [10.0, 12.0, 9.0, 15.0, 11.0]
    a, b = bootstrap_mean_ci(values), bootstrap_mean_ci(values)
    assert (a.ci_low, a.ci_high) == (b.ci_low, b.ci_high)  # fixed seed: same interval every time
    assert min(values) <= a.ci_low < a.mean < a.ci_high <= max(values)
    # Narrower than the t-interval with so few values (percentiles cannot leave the observed range).
    t = describe(values)
    assert t.ci_low < a.ci_low and a.ci_high < t.ci_high


def test_bootstrap_needs_two_values() -> None:
    est = bootstrap_mean_ci([5.0])
    assert (est.n, est.mean, est.ci_low, est.ci_high) == (1, 5.0, None, None)


# --- Linear fit ----------------------------------------------------------------------------

def test_linear_fit_by_hand() -> None:
    exact = linear_fit([1.0, 2.0, 3.0, 4.0], [12.0, 22.0, 32.0, 42.0])
    assert (exact.slope, exact.intercept, exact.r_squared) == (pytest.approx(10.0), pytest.approx(2.0), 1.0)
    # y 10, 20, 40: slope 15, intercept -20/3, residuals 5/3, -10/3, 5/3 -> SS_res 50/3; SS_tot 1400/3.
    bent = linear_fit([1.0, 2.0, 3.0], [10.0, 20.0, 40.0])
    assert bent.slope == pytest.approx(15.0)
    assert bent.r_squared == pytest.approx(1 - 50 / 1400)
    assert linear_fit([1.0, 2.0], [1.0, 5.0]).r_squared is None
