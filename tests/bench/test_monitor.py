"""The monitor measures what dlbench.md defines, and loses no samples when a run is killed."""

import os
import signal
import subprocess
import sys
import time

import pytest

from bench import schema
from bench.monitor import _busy_shares
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
