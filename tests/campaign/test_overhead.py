"""`make bench-overhead`'s figures and verdicts (campaign.overhead) on planted timings, and its
measuring parts (CPU time of children, the monitor's CPU per segment, contention) on real processes."""

from __future__ import annotations

import subprocess
import sys
import time

from campaign import overhead
from campaign.overhead import Findings, Measured


def _pairs(on: list[float], off: list[float], other: list[float] | None = None) -> overhead.Pairs:
    """(on, off) runs with the given training times, CPU time twice each, and (optionally) the other
    processes' mean CPU in percent of one core on 2 cores during each pair's two runs."""
    def run(t: float, i: int) -> Measured:
        load = {} if other is None else {"other_cpu_mean_pct": other[i], "other_cpu_share_pct": other[i] / 2,
                                         "other_cpu_s": other[i] / 100 * t, "gpu_other_procs_max": None}
        return Measured(t, 2 * t, 1000.0 * i, 1000.0 * i + t, load)

    return [(run(a, i), run(b, i)) for i, (a, b) in enumerate(zip(on, off))]


def _findings(monitor: overhead.Pairs, runner: overhead.Pairs | None = None) -> Findings:
    return Findings(workload="lstm-imdb", profile="quick", threads=2, cores=2, wall_s=620.0, monitor=monitor,
                    monitor_segments=[0.31, 0.29, 0.33, 0.30, 0.32, 0.30], monitor_core_pct=0.31,
                    mem_rss_mb=30.0, mem_uss_mb=20.0, cadence_ms=[1.0, 2.0, 1.5, 3.0, 2.5, 1.2, 0.8, 4.0, 2.2],
                    runner=runner or [], runner_note="not measured: --runner-pairs 0")


def _line(lines: list[str], start: str) -> str:
    return next(line for line in lines if line.startswith(start))


def test_few_noisy_pairs_are_undecided_with_the_noise_and_the_pairs_needed():
    # The run: on/off -3.49 % ± 13.67 sd over 3 pairs, once printed as "meets target".
    lines = overhead.report(_findings(_pairs([82.74, 110.09, 96.70], [100.0] * 3)))
    first = _line(lines, "1. training time, monitor on / off")
    assert "3 pairs" in first and "ratio <= 1.01" in first
    assert "undecided (noise ±" in first and "more pairs needed at the observed spread" in first
    assert "meets" not in first
    assert "min -17.26 %, max +10.09 %" in _line(lines, "   per-pair slowdown")
    assert "CPU time of the run's processes" in "\n".join(lines)
    assert "not recorded" in _line(lines, "   other processes' CPU")
    assert _line(lines, "2. monitor CPU").endswith("meets target")
    assert _line(lines, "3. cadence").endswith("meets target")
    assert "not measured: --runner-pairs 0" in _line(lines, "4. training time, docker / local")


def test_tight_pairs_meet_the_target_and_a_real_slowdown_misses_it():
    quiet = overhead.report(_findings(_pairs([100.2, 100.4, 100.3, 100.1, 100.3], [100.0] * 5)))
    assert _line(quiet, "1. training time").endswith("meets target")
    slow = overhead.report(_findings(_pairs([103.0, 103.4, 102.9, 103.1], [100.0] * 4),
                                     runner=_pairs([110.0, 111.0, 109.5], [100.0] * 3)))
    assert _line(slow, "1. training time").endswith("misses target")
    docker = _line(slow, "4. training time, docker / local runner")
    assert "3 pairs" in docker and docker.endswith("misses target")


def test_contended_pairs_are_counted_and_the_quiet_ones_decided_alone():
    # Pair 2 ran beside another process using 150 % of a core: its ratio is the outlier.
    lines = overhead.report(_findings(_pairs([100.2, 130.0, 100.3, 100.1], [100.0] * 4, other=[2.0, 150.0, 1.0, 3.0])))
    assert "2 of 8 runs contended" in _line(lines, "   other processes' CPU")
    assert not _line(lines, "1. training time").endswith("meets target")
    quiet = _line(lines, "   training time on / off, quiet pairs only")
    assert "3 quiet pairs" in quiet and quiet.endswith("meets target")
    crowded = overhead.report(_findings(_pairs([100.2, 130.0], [100.0] * 2, other=[150.0, 150.0])))
    assert "none: every pair shared the machine" in _line(crowded, "   training time on / off, quiet pairs only")
    calm = overhead.report(_findings(_pairs([100.2, 100.3], [100.0] * 2, other=[1.0, 1.0])))
    assert not any("quiet pairs only" in line for line in calm)


def test_other_load_is_taken_over_each_run_s_training_window():
    # Another process takes a whole core (of 2) until t = 1005, nothing after.
    rows = [{"time_unix": float(t), "other_cpu_pct": 100.0 if t < 1005 else 0.0, "cpu_per_core_pct": "50;50"}
            for t in range(990, 1020)]
    busy, calm, unseen = (Measured(10.0, None, 995.0, 1004.0), Measured(10.0, None, 1006.0, 1015.0),
                          Measured(10.0, None, 0.0, 10.0))
    [(b, c), (u, _)] = overhead.with_contention([(busy, calm), (unseen, unseen)], rows)
    assert b.other["other_cpu_mean_pct"] == 100.0 and b.other["other_cpu_share_pct"] == 50.0 and b.contended
    assert c.other["other_cpu_mean_pct"] == 0.0 and c.contended is False
    assert u.other["other_cpu_s"] is None and u.contended is None  # no samples in its window: not recorded


def _share_and_cpu(code: str) -> tuple[list[float], float]:
    """A child running `code` for about a second: its CPU share per 0.25 s segment, and the CPU
    seconds getrusage counts for it once it has been waited for."""
    before = overhead.children_cpu_s()
    child = subprocess.Popen([sys.executable, "-c", code])
    try:
        segments = overhead.CpuSegments(child.pid, segment_s=0.25).start()
        time.sleep(1.0)
        shares = segments.stop()
    finally:
        child.kill()
        child.wait()
    return shares, overhead.children_cpu_s() - before


def test_cpu_time_of_children_and_the_cpu_share_per_segment():
    busy_shares, busy_cpu = _share_and_cpu("while True: pass")
    idle_shares, idle_cpu = _share_and_cpu("import time\ntime.sleep(60)")
    assert len(busy_shares) >= 3 and len(idle_shares) >= 3
    # A busy loop takes up to one core (less on a loaded host), a sleeping process next to none
    # (its start-up falls in the first segment: the median leaves it out).
    assert 10.0 < sum(busy_shares) / len(busy_shares) <= 105.0
    assert sorted(idle_shares)[len(idle_shares) // 2] < 5.0
    assert 0.1 < busy_cpu < 1.5 and idle_cpu < busy_cpu
