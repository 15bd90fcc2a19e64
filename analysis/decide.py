"""Deciding a benchmark figure against its target from a 95 % interval, never from a point estimate.

A figure with a target ("monitor on / off <= 1.01") gets one of three verdicts:

- **meets**: the whole interval is on the target's side of the bound;
- **misses**: the whole interval is on the wrong side;
- **undecided (noise ±x %)**: the interval straddles the bound. The verdict then says how many more
  samples (pairs, segments, epochs) would make the interval's half-width narrower than the point
  estimate's distance to the bound at the spread observed so far (or than the target's tolerance,
  when the estimate sits on the bound and no number of samples would separate the two).

Three designs are covered: paired ratios (alternating on/off pairs: `decide_pairs`), one sample's
mean (`decide_mean`) or median (`decide_median`), and two independent samples' ratio
(`decide_two_samples`). Framework-free: plain sequences in, a frozen dataclass out; scipy is
imported on first use (it takes about a second to load, which quick command-line paths skip).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

CONFIDENCE = 0.95
# Below this many samples a spread exists (from two) but rests on one degree of freedom, with a
# t factor of 12.7: the interval is honest but the "more needed" figure is a rough guess, and says so.
ROUGH_BELOW = 3
# A search for the samples needed stops here and says "more than".
MAX_SAMPLES = 10_000_000
OPS = ("<=", ">=")


@dataclass(frozen=True)
class Target:
    """A target on a figure, ``<figure> <op> <bound>``: e.g. a ratio <= 1.01 ("under 1 % slower").

    ``kind`` is "ratio" (a ratio of two positive times: decided on the log scale, its noise
    printed in percent) or "value" (a plain number in ``unit``). ``tolerance`` is the resolution
    the target cares about, used when the estimate sits on the bound: for a ratio relative
    (0.01 = 1 %; by default the bound's distance from 1, the "no effect" ratio), for a value in its
    own unit (by default a tenth of the bound).
    """

    op: str
    bound: float
    kind: str = "ratio"
    tolerance: float | None = None
    unit: str = ""

    def __post_init__(self) -> None:
        if self.op not in OPS:
            raise ValueError(f"target operator {self.op!r}: use one of {', '.join(OPS)}")
        if self.kind not in ("ratio", "value"):
            raise ValueError(f"target kind {self.kind!r}: use 'ratio' or 'value'")
        if self.kind == "ratio" and self.bound <= 0:
            raise ValueError(f"a ratio target needs a positive bound, not {self.bound}")
        if self.resolution <= 0:
            raise ValueError(f"target {self.text} has no tolerance: give one (e.g. tolerance=0.01)")

    @classmethod
    def parse(cls, text: str, tolerance: float | None = None, unit: str = "") -> Target:
        """A target from its text: "ratio <= 1.01", "ratio >= 1", or "<= 1.0" (a plain value)."""
        words = text.split()
        kind = "ratio" if words and words[0] == "ratio" else "value"
        rest = words[1:] if kind == "ratio" else words
        if len(rest) != 2 or rest[0] not in OPS:
            raise ValueError(f"target {text!r}: write it as 'ratio <= 1.01', 'ratio >= 1' or '<= 1.0'")
        return cls(rest[0], float(rest[1]), kind, tolerance, unit)

    @property
    def resolution(self) -> float:
        """The tolerance as given or by default (see the class), in the figure's terms."""
        if self.tolerance is not None:
            return self.tolerance
        return abs(self.bound - 1.0) if self.kind == "ratio" else abs(self.bound) / 10

    @property
    def text(self) -> str:
        """How the target reads in a table: "ratio <= 1.01", "<= 1 %"."""
        bound = f"{self.bound:g}{' ' + self.unit if self.unit else ''}"
        return f"ratio {self.op} {bound}" if self.kind == "ratio" else f"{self.op} {bound}"

    def to_scale(self, x: float) -> float:
        """A figure on the scale the interval is worked out on (log for ratios)."""
        return math.log(x) if self.kind == "ratio" else x

    def from_scale(self, x: float) -> float:
        """Back from that scale to the figure."""
        return math.exp(x) if self.kind == "ratio" else x

    def scale_resolution(self) -> float:
        """The tolerance on the working scale (for a ratio: log(1 + tolerance))."""
        return math.log1p(self.resolution) if self.kind == "ratio" else self.resolution


@dataclass(frozen=True)
class Decision:
    """A figure's estimate, its 95 % interval and its verdict against a target.

    ``verdict`` is "meets", "misses" or "undecided"; ``noise`` the interval's half-width (percent
    for a ratio, else in the target's unit), None without an interval; ``more`` the further samples
    needed at the observed spread (0 when decided, None when it cannot be said); ``note`` why
    not, or what the number means when the estimate sits on the bound.
    """

    target: Target
    n: int
    sample: str  # what was measured, e.g. "3 pairs", "2 + 4 steady epochs"
    unit: str  # what "more" counts, e.g. "pairs", "steady epochs each"
    estimate: float | None
    low: float | None
    high: float | None
    verdict: str
    noise: float | None
    more: int | None
    note: str = ""

    @property
    def decided(self) -> bool:
        """Whether the interval lies wholly on one side of the bound."""
        return self.verdict in ("meets", "misses")

    def noise_text(self) -> str:
        """"noise ±3.4 %" (a ratio) or "noise ±0.021 %" (a value in %), "no interval" without one."""
        if self.noise is None:
            return "no interval"
        if self.target.kind == "ratio":
            return f"noise ±{self.noise:.2g} %" if self.noise < 1 else f"noise ±{self.noise:.1f} %"
        unit = f" {self.target.unit}" if self.target.unit else ""
        return f"noise ±{self.noise:.3g}{unit}"

    def interval_text(self, digits: int = 4) -> str:
        """"0.9651 [0.8611, 1.0816], 3 pairs" (or without the interval when there is none)."""
        if self.estimate is None:
            return f"no data ({self.sample})"
        est = f"{self.estimate:.{digits}f}"
        if self.low is None or self.high is None:
            return f"{est}, {self.sample}"
        return f"{est} [{self.low:.{digits}f}, {self.high:.{digits}f}], {self.sample}"

    def verdict_text(self, meets: str = "meets target", misses: str = "misses target") -> str:
        """The verdict in words: ``meets``/``misses``, or "undecided (noise ±x %): n more <unit> ..."."""
        if self.verdict == "meets":
            return meets
        if self.verdict == "misses":
            return misses
        head = f"undecided ({self.noise_text()})"
        if not self.more:  # None: no spread to go by; 0: on the bound and measured to its tolerance
            return f"{head}: {self.note}"
        more = f"more than {MAX_SAMPLES:,}" if self.more >= MAX_SAMPLES else f"{self.more:,}"
        tail = f" ({self.note})" if self.note else ""
        return f"{head}: {more} more {self.unit} needed at the observed spread{tail}"

    def text(self) -> str:
        """One line: estimate, interval, sample size, target and verdict."""
        return f"{self.interval_text()} vs {self.target.text}: {self.verdict_text()}"


def _t(df: float) -> float:
    from scipy import stats as scipy_stats

    return float(scipy_stats.t.ppf((1 + CONFIDENCE) / 2, df))


def _needed(half_width: Callable[[int], float], start: int, aim: float) -> int:
    """The least N >= start with half_width(N) < aim (half_width falls as N grows), or MAX_SAMPLES."""
    if half_width(start) < aim:
        return start
    hi = start
    while half_width(hi) >= aim:
        if hi >= MAX_SAMPLES:
            return MAX_SAMPLES
        hi = min(2 * hi, MAX_SAMPLES)
    lo = max(hi // 2, start)  # at or below the last N tried before hi: half_width(lo) >= aim
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if half_width(mid) < aim:
            hi = mid
        else:
            lo = mid
    return hi


def _more(needed: int, n: int) -> int:
    """Further samples from the total needed; MAX_SAMPLES itself when the search hit its cap."""
    return MAX_SAMPLES if needed >= MAX_SAMPLES else needed - n


def _verdict(target: Target, low: float, high: float) -> str:
    """meets / misses / undecided from an interval on the working scale."""
    bound = target.to_scale(target.bound)
    if target.op == "<=":
        return "meets" if high <= bound else "misses" if low > bound else "undecided"
    return "meets" if low >= bound else "misses" if high < bound else "undecided"


def _decide(target: Target, n: int, sample: str, unit: str, center: float | None, half: float | None,
            low: float | None, high: float | None, half_width_at: Callable[[int], float] | None,
            rough: bool) -> Decision:
    """The verdict and the samples needed, from an estimate and interval on the working scale.

    ``half_width_at(N)`` is the half-width N samples would give at the observed spread."""
    if center is None:
        return Decision(target, n, sample, unit, None, None, None, "undecided", None, None,
                        f"nothing measured: run at least {ROUGH_BELOW} {unit}")
    estimate = target.from_scale(center)
    if half is None or low is None or high is None or half_width_at is None:
        return Decision(target, n, sample, unit, estimate, None, None, "undecided", None, None,
                        f"no spread from {sample}: run at least {ROUGH_BELOW} {unit} in all to see the "
                        "noise and how many more are needed")
    noise = 100 * math.expm1(half) if target.kind == "ratio" else half
    lo, hi = target.from_scale(low), target.from_scale(high)
    verdict = _verdict(target, low, high)
    if verdict != "undecided":
        return Decision(target, n, sample, unit, estimate, lo, hi, verdict, noise, 0)
    distance = abs(center - target.to_scale(target.bound))
    resolution = target.scale_resolution()
    rough_note = f"rough: the spread of only {sample}" if rough else ""
    if distance >= resolution:
        more = _more(_needed(half_width_at, n + 1, distance), n)
        return Decision(target, n, sample, unit, estimate, lo, hi, verdict, noise, more, rough_note)
    # The estimate sits on the bound: no number of samples separates the two, so say how many would
    # measure the figure to the target's own tolerance (or that it already is).
    tol = f"±{100 * target.resolution:g} %" if target.kind == "ratio" else f"±{target.resolution:g}"
    sits = f"the estimate sits on the target, within its tolerance {tol}"
    if half < resolution:
        return Decision(target, n, sample, unit, estimate, lo, hi, verdict, noise, 0,
                        f"{sits}, and is already measured to within it")
    more = _more(_needed(half_width_at, n + 1, resolution), n)
    note = f"{sits}: that many narrow the noise to {tol}" + (f"; {rough_note}" if rough else "")
    return Decision(target, n, sample, unit, estimate, lo, hi, verdict, noise, more, note)


def _one_sample(target: Target, xs: Sequence[float], sample: str, unit: str) -> Decision:
    """Student-t interval of the mean of xs (already on the working scale)."""
    n = len(xs)
    if n == 0:
        return _decide(target, 0, sample, unit, None, None, None, None, None, False)
    mean = math.fsum(xs) / n
    if n < 2:
        return _decide(target, n, sample, unit, mean, None, None, None, None, False)
    sd = math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / (n - 1))

    def half_width_at(m: int) -> float:
        return _t(m - 1) * sd / math.sqrt(m)

    half = half_width_at(n)
    return _decide(target, n, sample, unit, mean, half, mean - half, mean + half, half_width_at,
                   n < ROUGH_BELOW)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n != 1 else f"1 {word.removesuffix('s')}"


def decide_pairs(first: Sequence[float], second: Sequence[float], target: Target,
                 unit: str = "pairs") -> Decision:
    """The ratio first/second of paired positive measurements (first[i] with second[i]) against a
    ratio target, from a Student-t interval of the mean of the per-pair log ratios.

    Why log ratios: a slowdown is multiplicative, so its natural scale is the log: log(a/b) =
    -log(b/a), so the verdict does not depend on which side is the numerator (the mean of a/b is
    not the reciprocal of the mean of b/a), and log ratios of timings are closer to normal than the
    ratios, which are bounded below by 0 and skewed. The estimate is the geometric mean ratio, and
    the interval, worked out on the log scale, maps back to ratios (asymmetric around it). Pairing
    (each pair measured back to back, in alternating order) removes the machine's drift from the
    spread: only the within-pair differences count."""
    if target.kind != "ratio":
        raise ValueError(f"pairs are decided as a ratio; the target is {target.text}")
    if len(first) != len(second):
        raise ValueError(f"paired measurements differ in number: {len(first)} and {len(second)}")
    if any(a <= 0 or b <= 0 for a, b in zip(first, second)):
        raise ValueError("a ratio needs positive measurements")
    logs = [math.log(a / b) for a, b in zip(first, second)]
    return _one_sample(target, logs, _plural(len(logs), unit), unit)


def decide_mean(values: Sequence[float], target: Target, unit: str = "samples") -> Decision:
    """The mean of independent values (e.g. equal time segments) against a target, from a
    Student-t interval; a ratio target takes the geometric mean (log scale, as decide_pairs)."""
    if target.kind == "ratio" and any(v <= 0 for v in values):
        raise ValueError("a ratio needs positive values")
    xs = [target.to_scale(v) for v in values]
    return _one_sample(target, xs, _plural(len(xs), unit), unit)


def median_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> tuple[float, float] | None:
    """A distribution-free interval of the median: the order statistics x(r) and x(n-r+1), r the
    largest with P(r <= B <= n-r) >= confidence for B ~ Binomial(n, 1/2). None below 6 values."""
    from scipy import stats as scipy_stats

    xs = sorted(values)
    n = len(xs)
    if n == 0:
        return None
    r = int(scipy_stats.binom.ppf((1 - confidence) / 2, n, 0.5))  # P(B <= r - 1) < (1 - confidence) / 2
    if r < 1:
        return None
    return xs[r - 1], xs[n - r]


def decide_median(values: Sequence[float], target: Target, unit: str = "samples") -> Decision:
    """The median of independent values against a value target, from the order-statistic interval
    (median_interval: no assumption about the distribution, which for e.g. timer jitter is skewed).
    The samples needed assume the half-width shrinks as 1/sqrt(n), as it does for large n."""
    if target.kind != "value":
        raise ValueError(f"a median is decided against a value target, not {target.text}")
    xs = sorted(values)
    n = len(xs)
    sample = _plural(n, unit)
    if n == 0:
        return _decide(target, 0, sample, unit, None, None, None, None, None, False)
    mid = n // 2
    median = xs[mid] if n % 2 else (xs[mid - 1] + xs[mid]) / 2
    interval = median_interval(xs)
    if interval is None:
        return _decide(target, n, sample, unit, median, None, None, None, None, False)
    low, high = interval
    half = (high - low) / 2

    def half_width_at(m: int) -> float:
        return half * math.sqrt(n / m)

    return _decide(target, n, sample, unit, median, half, low, high, half_width_at, False)


def decide_two_samples(first: Sequence[float], second: Sequence[float], target: Target,
                       unit: str = "samples") -> Decision:
    """The ratio of two independent samples' geometric means (first over second) against a ratio
    target, from Welch's t interval of the difference of their mean logs (log scale: as
    decide_pairs; Welch: the two spreads need not be equal). Without pairing, the machine's drift
    between the two samples stays in the comparison. "more" counts further values per side, the
    same number on each, from the smaller side's count."""
    if target.kind != "ratio":
        raise ValueError(f"two samples are compared as a ratio; the target is {target.text}")
    if any(v <= 0 for v in (*first, *second)):
        raise ValueError("a ratio needs positive values")
    la, lb = [math.log(v) for v in first], [math.log(v) for v in second]
    na, nb = len(la), len(lb)
    sample = f"{na} + {nb} {unit}"
    n = min(na, nb)
    if n == 0:
        return _decide(target, 0, sample, f"{unit} each", None, None, None, None, None, False)
    ma, mb = math.fsum(la) / na, math.fsum(lb) / nb
    center = ma - mb
    if n < 2:
        return _decide(target, n, sample, f"{unit} each", center, None, None, None, None, False)
    va = math.fsum((x - ma) ** 2 for x in la) / (na - 1)
    vb = math.fsum((x - mb) ** 2 for x in lb) / (nb - 1)

    def welch(sa: float, sb: float, ka: int, kb: int) -> float:
        se2 = sa / ka + sb / kb
        if se2 == 0:
            return 0.0
        df = se2 ** 2 / ((sa / ka) ** 2 / (ka - 1) + (sb / kb) ** 2 / (kb - 1))
        return _t(df) * math.sqrt(se2)

    half = welch(va, vb, na, nb)
    # N samples on the smaller side means as many more on each side: na - n + N and nb - n + N.
    return _decide(target, n, sample, f"{unit} each", center, half, center - half, center + half,
                   lambda m: welch(va, vb, na - n + m, nb - n + m), n < ROUGH_BELOW)
