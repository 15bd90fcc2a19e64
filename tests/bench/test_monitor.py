"""The monitor measures what dlbench.md defines, and loses no samples when a run is killed."""

import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from bench import schema
from bench.monitor import _busy_shares, other_cpu_pct
from bench.schema import summarize_monitor as summarize

MONITOR = [sys.executable, "-m", "bench.monitor"]


def _cpu_times(**kw):
    from collections import namedtuple

    T = namedtuple("T", "user nice system idle iowait irq softirq steal guest guest_nice")
    base = dict(user=0, nice=0, system=0, idle=0, iowait=0, irq=0, softirq=0, steal=0, guest=0, guest_nice=0)
    return T(**{**base, **kw})


def test_cpu_utilization_is_mean_of_per_core_active_shares():
    # Core 0 active 75% of the interval (user 50 + system 25), core 1 idle; iowait counts as not active.
    before = [_cpu_times(), _cpu_times()]
    after = [_cpu_times(user=50, system=25, idle=25), _cpu_times(idle=80, iowait=20)]
    per_core, shares = _busy_shares(before, after)
    assert per_core == [75.0, 0.0]
    assert sum(per_core) / 2 == 37.5  # dlbench Eq. 1-2
    assert shares == {"user": 25.0, "system": 12.5, "iowait": 10.0}


def test_summary_uses_the_training_window_only():
    rows = [{"time_unix": t, "cpu_util_pct": u, "proc_rss_mb": m}
            for t, u, m in [(1, 90, 10), (2, 20, 100), (3, 40, 300), (4, 90, 10)]]
    s = summarize(rows, 2, 3)
    assert s["samples"] == 2 and s["cpu_util_mean_pct"] == 30 and s["mem_mean_mb"] == 200
    assert s["mem_peak_mb"] == 300 and s["gpu_util_mean_pct"] is None


def test_other_cpu_is_the_active_time_less_the_tree_and_the_monitor():
    # Two cores at 90 % and 40 % active: 130 % of a core; the run's tree 70 %, the monitor 5 %.
    assert other_cpu_pct([90.0, 40.0], 70.0, 5.0) == 55.0
    # Readings a few ms apart can put the tree above the active total: never a negative load.
    assert other_cpu_pct([10.0, 0.0], 12.0, 1.0) == 0.0


def _write_monitor(run_dir, rows, columns=schema.MONITOR_COLUMNS):
    with open(run_dir / schema.MONITOR_FILE, "w", encoding="utf-8") as fh:
        fh.write(",".join(columns) + "\n")
        for row in rows:
            fh.write(",".join("" if row.get(c) is None else str(row[c]) for c in columns) + "\n")


def test_other_load_summary_over_the_training_window(tmp_path):
    # Hand-written monitor.csv on 4 cores: a sample before the window (ignored), three inside it at
    # t = 11, 12 and 14 (the monitor stalled: the last covers 2 s), one after it (ignored).
    rows = [{"time_unix": 10, "cpu_per_core_pct": "0;0;0;0", "other_cpu_pct": 400, "gpu_other_procs": 9},
            {"time_unix": 11, "cpu_per_core_pct": "0;0;0;0", "other_cpu_pct": 100, "gpu_other_procs": 0},
            {"time_unix": 12, "cpu_per_core_pct": "0;0;0;0", "other_cpu_pct": 50, "gpu_other_procs": 2},
            {"time_unix": 14, "cpu_per_core_pct": "0;0;0;0", "other_cpu_pct": 25, "gpu_other_procs": 1},
            {"time_unix": 16, "cpu_per_core_pct": "0;0;0;0", "other_cpu_pct": 400, "gpu_other_procs": 9}]
    _write_monitor(tmp_path, rows)
    s = summarize(list(schema.read_monitor(tmp_path)), 10.5, 15)
    # CPU s: 1.00 x 1 s (the first sample covers the nominal interval) + 0.50 x 1 s + 0.25 x 2 s = 2.0;
    # the samples cover 4 s of 4 cores = 16 core-seconds, so 12.5 % of the machine, 50 % of a core.
    assert s["other_cpu_s"] == pytest.approx(2.0)
    assert s["other_cpu_share_pct"] == pytest.approx(12.5)
    assert s["other_cpu_mean_pct"] == pytest.approx(50.0)
    assert s["gpu_other_procs_max"] == 2


def test_an_older_monitor_csv_reads_with_contention_not_recorded(tmp_path):
    old = tuple(c for c in schema.MONITOR_COLUMNS if c not in ("other_cpu_pct", "gpu_other_procs"))
    _write_monitor(tmp_path, [{"time_unix": 1, "cpu_util_pct": 30, "cpu_per_core_pct": "30;30"}], old)
    rows = list(schema.read_monitor(tmp_path))
    assert rows[0]["cpu_util_pct"] == 30 and rows[0]["other_cpu_pct"] is None
    s = summarize(rows)
    assert s["cpu_util_mean_pct"] == 30
    assert [s[k] for k in ("other_cpu_s", "other_cpu_share_pct", "other_cpu_mean_pct", "gpu_other_procs_max")] \
        == [None] * 4
    _write_monitor(tmp_path, [], (*old, "from_a_newer_kit"))
    with pytest.raises(schema.SchemaError, match="from_a_newer_kit"):
        list(schema.read_monitor(tmp_path))


def _watch(tmp_path, code):
    """Start `code` in a child, monitor it; return (child, monitor, csv path)."""
    child = subprocess.Popen([sys.executable, "-c", code])
    out = tmp_path / "monitor.csv"
    mon = subprocess.Popen([*MONITOR, "--pid", str(child.pid), "--out", str(out)])
    return child, mon, out


def test_process_tree_memory_includes_children(tmp_path):
    # The watched process starts a child that holds 300 MB: the tree's RSS must include it.
    code = ("import subprocess,sys,time; p=subprocess.Popen([sys.executable,'-c',"
            "'b=bytearray(300*2**20); import time; time.sleep(4)']); time.sleep(4.5); p.wait()")
    child, mon, out = _watch(tmp_path, code)
    child.wait(timeout=30)
    mon.wait(timeout=10)
    rows = list(schema.read_monitor(tmp_path))
    assert len(rows) >= 3
    assert max(r["proc_rss_mb"] for r in rows) > 300


def test_busy_process_shows_its_share_of_one_core(tmp_path):
    # A busy loop for 5 s that counts its own CPU time: whatever else loads the machine, the
    # monitor's process CPU (percent of ONE core, ~100 on an idle machine, not 100/ncores) must
    # equal the share the child got, which the child measured itself.
    share = tmp_path / "share.txt"
    code = ("import time\nt=time.time()\nwhile time.time()-t<5: pass\n"
            f"open({str(share)!r}, 'w').write(str(100 * time.process_time() / (time.time() - t)))")
    child, mon, out = _watch(tmp_path, code)
    child.wait(timeout=30)
    mon.wait(timeout=10)
    rows = list(schema.read_monitor(tmp_path))[1:-1]  # first and last seconds are partial
    assert len(rows) >= 3, "no full-second samples"
    measured = sum(r["proc_cpu_pct"] for r in rows) / len(rows)
    own = float(share.read_text())
    assert own > 20, f"the child hardly ran ({own:.0f} % of a core): the machine is too loaded to tell"
    assert abs(measured - own) < 15, ([r["proc_cpu_pct"] for r in rows], own)
    assert all(r["gpu_util_pct"] is None for r in rows)  # no GPU here: empty cells, not zeros


@pytest.mark.skipif(not hasattr(os, "killpg"), reason="POSIX only")
def test_sigkill_keeps_every_whole_second(tmp_path):
    child, mon, out = _watch(tmp_path, "import time; time.sleep(60)")
    time.sleep(4.3)
    t_kill = time.time()
    mon.send_signal(signal.SIGKILL)
    child.kill()
    mon.wait()
    child.wait()
    rows = list(schema.read_monitor(tmp_path))
    assert len(rows) >= 3
    assert t_kill - rows[-1]["time_unix"] < 1.5  # nothing but the second in progress is lost
    gaps = [b["time_unix"] - a["time_unix"] for a, b in zip(rows, rows[1:])]
    assert all(0.8 < g < 1.2 for g in gaps), gaps


def test_known_duty_cycle_on_a_known_core(tmp_path):
    # A child pinned to core 0, busy 60 ms of every 100 ms. Whatever else loads the machine, the
    # monitor's tree CPU must equal the share of one core the child itself counted over its busy
    # loop, and core 0's active share (dlbench Eq. 1) must cover the child's share in every second.
    code = ("import os,time\nos.sched_setaffinity(0,{0})\nc0=time.process_time(); t0=time.time()\n"
            "end=t0+6\nwhile time.time()<end:\n t=time.time()\n while time.time()-t<0.06: pass\n"
            " time.sleep(0.04)\nprint((time.process_time()-c0)/(time.time()-t0))")
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    mon = subprocess.Popen([*MONITOR, "--pid", str(child.pid), "--out", str(tmp_path / "monitor.csv")])
    own_share_pct = 100 * float(child.communicate(timeout=30)[0])
    mon.wait(timeout=10)
    rows = list(schema.read_monitor(tmp_path))
    assert len(rows) >= 4
    whole_seconds = [r["proc_cpu_pct"] for r in rows[1:-1]]  # first and last seconds are partial
    measured_pct = sum(whole_seconds) / len(whole_seconds)
    assert abs(measured_pct - own_share_pct) < 8, (measured_pct, own_share_pct)
    for r in rows[1:-1]:
        cores = [float(c) for c in r["cpu_per_core_pct"].split(";")]
        assert cores[0] > r["proc_cpu_pct"] - 10, (cores, r["proc_cpu_pct"])
        # the row's figure is the mean over the cores of their active shares (Eq. 2)
        assert abs(r["cpu_util_pct"] - sum(cores) / len(cores)) < 0.1


def test_load_outside_the_tree_is_other_cpu(tmp_path):
    # The watched process sleeps; a busy loop beside it (not its child) counts its own CPU time. Whatever
    # else loads the machine, the monitor's other-process CPU must hold at least the loop's share.
    share = tmp_path / "share.txt"
    busy = subprocess.Popen([sys.executable, "-c", "import time\nt=time.time()\nwhile time.time()-t<5: pass\n"
                             f"open({str(share)!r}, 'w').write(str(100 * time.process_time() / (time.time() - t)))"])
    child, mon, out = _watch(tmp_path, "import time; time.sleep(5)")
    busy.wait(timeout=30)
    child.wait(timeout=30)
    mon.wait(timeout=10)
    rows = list(schema.read_monitor(tmp_path))[1:-1]  # first and last seconds are partial
    assert len(rows) >= 3, "no full-second samples"
    other = sum(r["other_cpu_pct"] for r in rows) / len(rows)
    own = float(share.read_text())
    assert own > 20, f"the loop hardly ran ({own:.0f} % of a core): the machine is too loaded to tell"
    assert other > own - 15, ([r["other_cpu_pct"] for r in rows], own)
    assert all(r["proc_cpu_pct"] < 10 for r in rows)  # the sleeping tree used next to nothing
    assert all(r["gpu_other_procs"] is None for r in rows)  # no GPU here: an empty cell


def test_the_runs_own_busy_tree_is_not_other_cpu_on_a_quiet_machine(tmp_path):
    # The tree (a busy child of the watched process) and the monitor itself are subtracted: with
    # nothing else running, the other-process figure stays near zero.
    busy_before = psutil.cpu_percent(interval=1.0)
    if busy_before > 5:
        pytest.skip(f"the machine is {busy_before:.0f} % busy before the test: other load would be measured")
    code = ("import subprocess,sys; subprocess.run([sys.executable,'-c',"
            "'import time\\nt=time.time()\\nwhile time.time()-t<5: pass'])")
    child, mon, out = _watch(tmp_path, code)
    child.wait(timeout=30)
    mon.wait(timeout=10)
    rows = list(schema.read_monitor(tmp_path))[1:-1]
    assert len(rows) >= 3 and min(r["proc_cpu_pct"] for r in rows) > 50, rows
    assert sum(r["other_cpu_pct"] for r in rows) / len(rows) < 10, [r["other_cpu_pct"] for r in rows]
