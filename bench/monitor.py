"""The 1 s resource monitor: CPU as dlbench.md defines it, the run's process-tree memory, NVML GPU.

It runs as its own small process beside the training process (`python -m bench.monitor --pid P
--out monitor.csv`), so its work is not charged to the run's CPU time and a crash of the trainer
cannot take buffered samples with it: every row is written and flushed as it is taken, so a run
killed with SIGKILL keeps all samples up to its last second.

CPU utilization (dlbench.md Eq. 1-2): for each core i, the share of the interval it was active
(not idle, not waiting on I/O), in percent; the run's figure is the mean over the n cores.
The summary run.json keeps is bench.schema.summarize_monitor. CPython 3.6-clean.

Contention (other load beside the run), per sample:
- other_cpu_pct: CPU used by processes outside the run's tree, in percent of one core: the
  system-wide active time of all cores minus the tree's CPU time minus the monitor's own (the
  monitor is outside the tree, and its sampling is the kit's cost, not contention), clamped at 0.
  Hypervisor steal counts as active, so a noisy neighbour VM shows up here too. Limits: a child
  of the run that starts and ends between two samples is never seen as a member, so its CPU
  counts as other; in a container the cores are the host's (/proc/stat), so load on cores the
  container cannot use counts as well (the figure errs towards reporting contention).
- gpu_other_procs: processes holding the run's GPU that are not the run (NVML's compute and
  graphics process lists, one count per PID). Where NVML lists a PID of the run's tree, the count
  is the listed PIDs outside the tree. Where it lists none of them (inside a container NVML reports
  the host's PIDs, which never match the container's), the count is the processes listed minus one,
  taking one to be the run: a GPU run holds a context on its GPU while it trains, so within the
  training window this is exact; outside it, or for a CPU run, it can be one too low. Some container
  setups hide other containers' processes from NVML: 0 then means none was seen.
"""

import argparse
import os
import signal
import sys
import time
from pathlib import Path
from typing import List, Optional

import psutil

from bench import schema
from bench.gpu import GpuSampler

INTERVAL_S = schema.MONITOR_INTERVAL_S


def _busy_shares(before, after) -> tuple:
    """Per-core active share and system-wide user/system/iowait shares between two readings."""
    per_core = []
    totals = {"user": 0.0, "system": 0.0, "iowait": 0.0, "all": 0.0}
    for b, a in zip(before, after):
        delta = {f: getattr(a, f) - getattr(b, f) for f in a._fields}
        total = sum(delta.values())
        # guest time is already counted inside user on Linux; subtracting keeps the total honest.
        total -= delta.get("guest", 0.0) + delta.get("guest_nice", 0.0)
        idle = delta.get("idle", 0.0) + delta.get("iowait", 0.0)
        per_core.append(100.0 * (total - idle) / total if total > 0 else 0.0)
        totals["user"] += delta.get("user", 0.0) + delta.get("nice", 0.0)
        totals["system"] += delta.get("system", 0.0) + delta.get("irq", 0.0) + delta.get("softirq", 0.0)
        totals["iowait"] += delta.get("iowait", 0.0)
        totals["all"] += total
    all_ = totals.pop("all") or 1.0
    return per_core, {k: 100.0 * v / all_ for k, v in totals.items()}


class ProcessTree:
    """The training process and all its descendants, minus the monitor itself."""

    def __init__(self, pid: int) -> None:
        self.root = psutil.Process(pid)
        self.me = os.getpid()
        self._cpu_prev = {}  # pid -> CPU seconds at the last sample

    def alive(self) -> bool:
        """Whether the root process still runs (a zombie counts as gone)."""
        try:
            return self.root.is_running() and self.root.status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return False

    def _members(self) -> list:
        try:
            procs = [self.root, *self.root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return []
        return [p for p in procs if p.pid != self.me]

    def sample(self, dt: float) -> tuple:
        """(CPU percent of one core used by the tree over the last dt seconds, RSS in MB)."""
        rss = 0
        cpu_now = {}
        for proc in self._members():
            try:
                with proc.oneshot():
                    t = proc.cpu_times()
                    rss += proc.memory_info().rss
                cpu_now[proc.pid] = t.user + t.system
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
        # A process seen for the first time contributes its CPU since the previous sample only
        # if it existed then; new ones are counted from their own start, which is what they used.
        used = sum(cpu_now[pid] - self._cpu_prev.get(pid, 0.0) for pid in cpu_now)
        self._cpu_prev = cpu_now
        return (100.0 * used / dt if dt > 0 else 0.0), rss / 2**20

    @property
    def pids(self) -> set:
        """PIDs of the tree's members at the last sample."""
        return set(self._cpu_prev)


class OwnCpu:
    """The monitor's own CPU use, taken out of the other-process figure: sampling is the kit's cost."""

    def __init__(self) -> None:
        self.proc = psutil.Process()
        self._prev = self._seconds()

    def _seconds(self) -> float:
        t = self.proc.cpu_times()
        return t.user + t.system

    def sample(self, dt: float) -> float:
        """Percent of one core this process used since the last call."""
        now = self._seconds()
        used, self._prev = now - self._prev, now
        return 100.0 * used / dt if dt > 0 else 0.0


def other_cpu_pct(per_core: list, tree_pct: float, own_pct: float) -> float:
    """CPU of processes outside the run's tree and the monitor, in percent of one core, clamped at 0
    (all three are read a few milliseconds apart, so a quiet machine can come out slightly negative)."""
    return max(0.0, sum(per_core) - tree_pct - own_pct)


class Monitor:
    """Samples once per interval on a fixed grid (no drift) and appends rows to monitor.csv."""

    def __init__(self, pid: int, out: Path, interval: float = INTERVAL_S) -> None:
        self.tree = ProcessTree(pid)
        self.out = Path(out)
        self.interval = interval
        self.gpu = GpuSampler()
        self._stop = False

    def stop(self, *_args) -> None:
        """Ask the loop to end after the sample in progress."""
        self._stop = True

    def run(self) -> int:
        """Sample until the watched process ends or stop() is called; return samples written."""
        start = time.time()
        prev_cpu = psutil.cpu_times(percpu=True)
        prev_t = time.monotonic()
        self.tree.sample(1.0)  # prime the per-process CPU counters
        own = OwnCpu()
        rows = 0
        with open(str(self.out), "w", encoding="utf-8", buffering=1) as fh:
            fh.write(schema.monitor_header())
            fh.flush()
            k = 1
            while not self._stop and self.tree.alive():
                # Sleep to the next point of a fixed grid so cadence does not drift with sample cost.
                delay = (start + k * self.interval) - time.time()
                if delay > 0:
                    time.sleep(delay)
                elif delay < -self.interval:  # we were stalled: rejoin the grid, do not burst
                    k = int((time.time() - start) / self.interval)
                k += 1
                now_t = time.monotonic()
                cpu = psutil.cpu_times(percpu=True)
                per_core, shares = _busy_shares(prev_cpu, cpu)
                proc_cpu, rss = self.tree.sample(now_t - prev_t)
                own_cpu = own.sample(now_t - prev_t)
                prev_cpu, prev_t = cpu, now_t
                now = time.time()
                row = {
                    "time_unix": now,
                    "elapsed_s": round(now - start, 3),
                    "cpu_util_pct": sum(per_core) / len(per_core),
                    "cpu_user_pct": shares["user"],
                    "cpu_system_pct": shares["system"],
                    "cpu_iowait_pct": shares["iowait"],
                    "cpu_per_core_pct": ";".join(f"{c:.1f}" for c in per_core),
                    "proc_cpu_pct": proc_cpu,
                    "proc_rss_mb": rss,
                    "sys_mem_used_mb": psutil.virtual_memory().used / 2**20,
                    **self.gpu.sample(),
                    "other_cpu_pct": other_cpu_pct(per_core, proc_cpu, own_cpu),
                    "gpu_other_procs": self.gpu.other_processes(self.tree.pids),
                }
                fh.write(schema.format_monitor_row(row))
                fh.flush()  # a SIGKILL of anyone loses at most the row being taken
                rows += 1
        return rows


def main(argv: Optional[List[str]] = None) -> int:
    """CLI: watch a PID and write monitor.csv until it exits or SIGTERM arrives."""
    ap = argparse.ArgumentParser(prog="python -m bench.monitor", description=__doc__.splitlines()[0])
    ap.add_argument("--pid", type=int, required=True, help="the training process to watch")
    ap.add_argument("--out", type=Path, required=True, help="monitor.csv to write")
    ap.add_argument("--interval", type=float, default=INTERVAL_S)
    args = ap.parse_args(argv)
    try:
        mon = Monitor(args.pid, args.out, args.interval)
    except psutil.NoSuchProcess:
        print(f"error: no process {args.pid} to monitor; pass the PID of a running training process",
              file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, mon.stop)
    signal.signal(signal.SIGINT, mon.stop)
    mon.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
