"""Verdicts from intervals (analysis.decide) on planted timings: meets, misses, undecided with the
noise and the samples needed, and the cases without a spread."""

from __future__ import annotations

import math

import pytest
from scipy import stats

from analysis.decide import (
    MAX_SAMPLES,
    Target,
    decide_mean,
    decide_median,
    decide_pairs,
    decide_two_samples,
    median_interval,
)

UNDER_1PCT_SLOWER = Target.parse("ratio <= 1.01")
OFF = [100.0] * 8


def _needed_by_brute_force(sd: float, aim: float, start: int) -> int:
    """The least N >= start with t(0.975, N-1) * sd / sqrt(N) < aim, counted one by one."""
    n = start
    while stats.t.ppf(0.975, n - 1) * sd / math.sqrt(n) >= aim:
        n += 1
    return n


def test_a_slowdown_well_under_the_target_meets_it():
    on = [100.2, 100.5, 100.1, 100.4, 100.3, 100.2, 100.3, 100.4]  # 0.1-0.5 % slower
    d = decide_pairs(on, OFF, UNDER_1PCT_SLOWER)
    assert d.verdict == "meets" and d.decided and d.more == 0
    assert 1.001 < d.low < d.estimate < d.high < 1.01
    assert d.verdict_text() == "meets target"
    assert d.text() == (f"{d.estimate:.4f} [{d.low:.4f}, {d.high:.4f}], 8 pairs vs ratio <= 1.01: meets target")


def test_a_slowdown_wholly_above_the_target_misses_it():
    on = [103.0, 103.5, 102.8, 103.2]  # about 3 % slower, every pair
    d = decide_pairs(on, OFF[:4], UNDER_1PCT_SLOWER)
    assert d.verdict == "misses" and d.low > 1.01
    assert d.verdict_text() == "misses target"


def test_the_noisy_three_pairs_are_undecided_with_the_noise_and_the_pairs_needed():
    # The run: on/off ratios 0.8274, 1.1009, 0.9670 (-3.49 % ± 13.67 sd), once printed as
    # "meets target" from the mean alone. Its interval straddles 1.01.
    on = [82.74, 110.09, 96.70]
    d = decide_pairs(on, OFF[:3], UNDER_1PCT_SLOWER)
    assert d.verdict == "undecided" and not d.decided
    assert d.low < 1.01 < d.high
    logs = [math.log(x / 100) for x in on]
    sd = stats.tstd(logs)
    half = stats.t.ppf(0.975, 2) * sd / math.sqrt(3)
    assert d.noise == pytest.approx(100 * math.expm1(half))
    assert d.estimate == pytest.approx(math.exp(sum(logs) / 3))  # the geometric mean ratio
    distance = math.log(1.01) - sum(logs) / 3  # the estimate's distance below the bound (log scale)
    assert d.more == _needed_by_brute_force(sd, distance, 4) - 3
    assert d.more > 10
    text = d.verdict_text()
    assert text == f"undecided (noise ±{d.noise:.1f} %): {d.more} more pairs needed at the observed spread"


def test_the_verdict_does_not_depend_on_which_side_is_the_numerator():
    # Log ratios: off/on against 1/1.01 decides exactly as on/off against 1.01.
    for on in ([100.2, 100.5, 100.1, 100.4], [103.0, 103.5, 102.8, 103.2], [82.74, 110.09, 96.70, 101.0]):
        forward = decide_pairs(on, OFF[:4], UNDER_1PCT_SLOWER)
        backward = decide_pairs(OFF[:4], on, Target(">=", 1 / 1.01, tolerance=0.01))
        assert forward.verdict == backward.verdict
        assert forward.estimate * backward.estimate == pytest.approx(1.0)
        assert forward.more == backward.more


def test_an_estimate_on_the_bound_asks_for_the_target_s_tolerance_not_an_endless_number():
    # 0.9 % slower with ±1.4 % noise: no number of pairs separates 1.009 from 1.01, so the pairs
    # needed are those that measure it to the target's own ±1 %.
    on = [100.9, 102.4, 99.4, 101.0, 100.8]
    d = decide_pairs(on, OFF[:5], UNDER_1PCT_SLOWER)
    assert d.verdict == "undecided" and abs(math.log(d.estimate / 1.01)) < math.log(1.01)
    sd = stats.tstd([math.log(x / 100) for x in on])
    assert d.more == _needed_by_brute_force(sd, math.log(1.01), 6) - 5
    assert "sits on the target, within its tolerance ±1 %" in d.verdict_text()
    # Once measured to within the tolerance, it says so instead of asking for more.
    tight = decide_pairs([100.9, 101.05, 100.95, 101.0], OFF[:4], UNDER_1PCT_SLOWER)
    assert tight.verdict == "undecided" and tight.low < 1.01 < tight.high and tight.noise < 1
    assert tight.more == 0 and "already measured to within it" in tight.verdict_text()


def test_one_pair_or_none_have_no_interval_and_say_what_to_run():
    one = decide_pairs([101.0], [100.0], UNDER_1PCT_SLOWER)
    assert one.verdict == "undecided" and one.noise is None and one.more is None
    assert one.estimate == pytest.approx(1.01) and one.low is None
    assert one.verdict_text() == ("undecided (no interval): no spread from 1 pair: run at least 3 pairs in all "
                                  "to see the noise and how many more are needed")
    none = decide_pairs([], [], UNDER_1PCT_SLOWER)
    assert none.verdict == "undecided" and none.estimate is None
    assert none.interval_text() == "no data (0 pairs)"


def test_two_pairs_give_an_interval_but_flag_the_pairs_needed_as_rough():
    d = decide_pairs([101.0, 99.0], [100.0, 100.0], UNDER_1PCT_SLOWER)
    assert d.verdict == "undecided" and d.noise > 10  # t(0.975, 1) = 12.7
    assert d.more is not None and "rough: the spread of only 2 pairs" in d.verdict_text()
    # Two identical pairs: no spread at all, so the interval is the point and decides.
    assert decide_pairs([100.5, 100.5], [100.0, 100.0], UNDER_1PCT_SLOWER).verdict == "meets"


def test_hopeless_noise_is_capped_in_words():
    # A geometric mean of exactly 1 on a bound of 1, a tolerance of a millionth and ±100 % noise.
    d = decide_pairs([50.0, 200.0, 100.0], [100.0, 100.0, 100.0], Target("<=", 1.0, tolerance=1e-6))
    assert d.verdict == "undecided" and d.more == MAX_SAMPLES
    assert "more than 10,000,000 more pairs" in d.verdict_text()


def test_a_mean_of_segments_against_a_plain_value():
    target = Target.parse("<= 1", unit="%")
    assert decide_mean([0.30, 0.35, 0.28, 0.40, 0.33], target, "segments").verdict == "meets"
    assert decide_mean([1.30, 1.35, 1.28, 1.40, 1.33], target, "segments").verdict == "misses"
    d = decide_mean([0.5, 1.5, 0.9, 1.2], target, "segments")
    assert d.verdict == "undecided" and d.noise_text().startswith("noise ±") and d.noise_text().endswith(" %")
    assert "more segments needed" in d.verdict_text()


def test_the_median_s_interval_is_the_distribution_free_order_statistics():
    xs = [float(x) for x in range(1, 10)]  # n = 9: r = 2, so [x(2), x(8)], coverage 1 - 2 * 10/512
    assert median_interval(xs) == (2.0, 8.0)
    assert median_interval(xs[:5]) is None  # no pair of order statistics covers 95 % below 6 values
    target = Target.parse("<= 50", unit="ms")
    assert decide_median([1, 2, 3, 4, 5, 6, 7, 8, 900], target, "intervals").verdict == "meets"  # skew ignored
    assert decide_median([60, 70, 80, 90, 100, 110], target, "intervals").verdict == "misses"
    undecided = decide_median([30, 40, 45, 55, 60, 70], target, "intervals")
    assert undecided.verdict == "undecided" and undecided.more and undecided.more > 0


def test_two_independent_samples_by_welch():
    slower = Target(">=", 1.0, tolerance=0.02)
    clear = decide_two_samples([5.0, 5.1, 4.9, 5.0], [3.0, 3.05, 2.95, 3.0], slower, "steady epochs")
    assert clear.verdict == "meets" and 1.6 < clear.low < clear.estimate < clear.high < 1.75
    close = decide_two_samples([3.4, 2.8, 3.3, 2.9], [3.0, 3.05, 2.95, 3.0], slower, "steady epochs")
    assert close.verdict == "undecided" and close.sample == "4 + 4 steady epochs"
    assert f"{close.more} more steady epochs each needed" in close.verdict_text()
    one_each = decide_two_samples([5.0], [4.8], slower, "steady epochs")
    assert one_each.noise is None and "no spread from 1 + 1 steady epochs" in one_each.verdict_text()


def test_targets_parse_and_refuse_what_cannot_be_decided():
    t = Target.parse("ratio >= 0.95")
    assert (t.op, t.bound, t.kind, t.text) == (">=", 0.95, "ratio", "ratio >= 0.95")
    assert t.resolution == pytest.approx(0.05)
    assert Target.parse("<= 1", unit="%").text == "<= 1 %"
    with pytest.raises(ValueError, match="write it as"):
        Target.parse("ratio < 1.01")
    with pytest.raises(ValueError, match="no tolerance"):
        Target.parse("ratio <= 1")  # "no slower at all" has no resolution of its own: give one
    with pytest.raises(ValueError, match="positive"):
        decide_pairs([1.0, -1.0], [1.0, 1.0], UNDER_1PCT_SLOWER)
    with pytest.raises(ValueError, match="differ in number"):
        decide_pairs([1.0], [1.0, 1.0], UNDER_1PCT_SLOWER)
