"""`make bench-overhead`: does measuring change what is measured? Figures from one run, with targets.

1. Training time of a fixed workload with the monitor on vs off, in alternating pairs (so drift in
   the machine's speed hits both sides alike): the ratio on/off and its 95 % interval; beside it the
   CPU time of the run's processes (getrusage of the finished children: less sensitive than wall time
   to other processes taking the cores), and the other processes' CPU during each training, from
   the benchmark's own monitor (analysis.contention's thresholds mark a run contended; when some
   pairs are, the ratio is decided again on the quiet pairs alone).
2. The monitor's own cost: CPU time as a share of one core (per 30 s segment, so it has an
   interval), and its resident memory.
3. Sample cadence: deviation of each interval from 1.000 s over the whole benchmark (>= 10 min).
4. Training time of the same run in the docker runner's container vs the local runner's virtual
   environment, in alternating pairs: only where a Docker engine answers.

Every figure with a target is decided from its 95 % interval (analysis.decide): it meets the target
only when the whole interval is on the target's side, misses it only when the whole interval is on
the other, and is otherwise "undecided", with the noise and how many more pairs (or segments) would
decide it at the spread observed. Speed targets live here, in a benchmark that prints figures, never
in a timed test.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import psutil

from analysis import contention
from analysis.decide import Decision, Target, decide_mean, decide_median, decide_pairs
from bench import request, schema
from bench.errors import UsageError
from campaign import requests, specs
from campaign.runners import Runner, entrypoint_args
from images import envs

REPO = Path(__file__).resolve().parents[1]
# The kit must not change what it measures by more than 1 %: neither its monitor nor its container
# (docker / local); the monitor's own CPU stays under 1 % of a core, its samples within 50 ms of 1 s.
TARGETS = {
    "monitor_ratio": Target.parse("ratio <= 1.01"),
    "runner_ratio": Target.parse("ratio <= 1.01"),
    "monitor_core_pct": Target.parse("<= 1", unit="%"),
    "cadence_median_ms": Target.parse("<= 50", unit="ms"),
}
# The monitor's CPU share is taken per segment of this many seconds, the segments' mean decided.
SEGMENT_S = 30.0


@dataclass(frozen=True)
class Measured:
    """One benchmark run: its training time (run.json), the CPU time of its processes (None where
    they are not this process's children, e.g. in a container), its training window, and the other
    processes' CPU over that window (schema.other_load's figures; filled in at the end)."""

    training_s: float
    cpu_s: float | None
    start_unix: float
    end_unix: float
    other: dict = field(default_factory=dict)

    @property
    def contended(self) -> bool | None:
        """Whether other processes took more CPU than analysis.contention allows; None if not recorded."""
        found = contention.assess({"device": "cpu", **self.other})
        return None if found is None else found.contended


def finished_run(run_dir: Path, cpu_s: float | None = None) -> Measured:
    """A finished run's training time and window in seconds, from run.json (as every report reads it)."""
    record = schema.read_run(run_dir)
    if record["status"] != "ok":
        raise RuntimeError(f"benchmark run failed: {record['failure']}")
    timing = record["timing"]
    return Measured(timing["training_time_s"], cpu_s, timing["train_start_unix"], timing["train_end_unix"])


def training_time(run_dir: Path) -> float:
    """A finished run's training time in seconds, from run.json."""
    return finished_run(run_dir).training_s


def children_cpu_s() -> float:
    """User + system CPU seconds of this process's finished, waited-for children and their own
    (a run's entrypoint, its training threads and its monitor all count once the run has ended)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class Setup:
    """What every benchmark run shares: the workload, its prepared (synthetic) data, the threads."""

    def __init__(self, workload: str, profile: str, data_root: Path, threads: int) -> None:
        self.workload, self.profile, self.threads, self.data_root = workload, profile, threads, data_root
        self.spec = specs.load(workload, profile)
        self.dataset = requests.find_dataset(data_root, self.spec["dataset"], "synthetic")

    def request(self, runner: str, environment: requests.Environment, monitor: bool = True) -> dict:
        """The benchmark's run request (PyTorch on the CPU, seed 0), for a runner and environment."""
        return requests.resolve(
            framework="pytorch", era="current", workload=self.workload, profile=self.profile, spec=self.spec,
            dataset=self.dataset, device="cpu", threads=self.threads, seed=0, repeat=1, campaign="overhead",
            runner=runner, environment=environment, monitor=monitor)


def train_once(python: Path, req: dict, run_dir: Path, data_root: Path) -> Measured:
    """One entrypoint run of `req` (its data under `data_root`) in the local environment: its training time
    and CPU time."""
    request.write(run_dir, req)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    cpu0 = children_cpu_s()
    args = entrypoint_args(run_dir, request.data_folder(req["data"], data_root))
    with open(run_dir / schema.LOG_FILE, "wb") as log:
        subprocess.run([str(python), "-m", "bench", *args],
                       cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, check=True)
    return finished_run(run_dir, children_cpu_s() - cpu0)


def in_runner(runner: Runner, req: dict, run_dir: Path) -> Measured:
    """One run launched by a runner (monitor on, as in a campaign); its training time (its CPU time
    is not taken: a container's processes are not this process's children)."""
    request.write(run_dir, req)
    outcome = runner.launch(req, run_dir, None)
    if outcome.returncode != 0:
        raise RuntimeError(f"benchmark run in the {runner.name} runner exited {outcome.returncode}; "
                           f"see {run_dir / schema.LOG_FILE}")
    return finished_run(run_dir)


def _seconds(m: Measured) -> str:
    return f"{m.training_s:.2f} s" + (f" (CPU {m.cpu_s:.1f} s)" if m.cpu_s is not None else "")


def alternating_pairs(n: int, workdir: Path,
                      sides: dict[str, Callable[[Path], Measured]]) -> list[dict[str, Measured]]:
    """n pairs of runs, one per side (two sides, each a function of a fresh run folder), the order
    inside each pair alternating so drift in the machine's speed hits both alike."""
    first, second = sides
    out = []
    for i in range(n):
        runs = {}
        for side in ((first, second) if i % 2 == 0 else (second, first)):
            runs[side] = sides[side](workdir / f"pair{i}-{side}")
        print(f"pair {i + 1}/{n}: {first} {_seconds(runs[first])}, {second} {_seconds(runs[second])}, "
              f"ratio {runs[first].training_s / runs[second].training_s:.4f}", flush=True)
        out.append(runs)
    return out


Pairs = list[tuple[Measured, Measured]]


def monitor_pairs(python: Path, env: requests.Environment, workdir: Path, setup: Setup, n: int) -> Pairs:
    """n (monitor on, monitor off) training times of the local entrypoint."""
    def side(monitor: bool) -> Callable[[Path], Measured]:
        return lambda d: train_once(python, setup.request("local", env, monitor), d, setup.data_root)

    return [(t["monitor-on"], t["monitor-off"])
            for t in alternating_pairs(n, workdir, {"monitor-on": side(True), "monitor-off": side(False)})]


def runner_pairs(workdir: Path, setup: Setup, n: int) -> Pairs:
    """n (docker, local) training times of the same run; the image is built or reused first.
    A UsageError when no Docker engine answers."""
    from campaign.runners.docker import DockerRunner
    from campaign.runners.local import LocalRunner

    runners: dict[str, Runner] = {"docker": DockerRunner(data_root=setup.data_root),
                                  "local": LocalRunner(data_root=setup.data_root)}
    envs_of = {name: runner.prepare("pytorch") for name, runner in runners.items()}

    def side(name: str) -> Callable[[Path], Measured]:
        return lambda d: in_runner(runners[name], setup.request(name, envs_of[name]), d)

    return [(t["docker"], t["local"]) for t in alternating_pairs(n, workdir, {"docker": side("docker"),
                                                                               "local": side("local")})]


def spread_text(pairs: Sequence[tuple[Measured, Measured]]) -> str:
    """The per-pair slowdowns (first / second - 1): 'sd 13.67 %; min -17.26 %, max +10.09 %'."""
    slowdown = [100 * (a.training_s / b.training_s - 1) for a, b in pairs]
    if not slowdown:
        return "no pairs"
    sd = f"sd {statistics.stdev(slowdown):.2f} %; " if len(slowdown) > 1 else ""
    return f"{sd}min {min(slowdown):+.2f} %, max {max(slowdown):+.2f} %"


def cadence(rows: list[dict]) -> dict:
    """Median and worst absolute deviation of sample intervals from the nominal 1 s, in ms, and
    every interval's deviation (the median's interval is worked out from them)."""
    stamps = [r["time_unix"] for r in rows]
    dev = [abs((b - a) - 1.0) * 1000 for a, b in zip(stamps, stamps[1:])]
    return {"intervals": len(dev), "median_ms": statistics.median(dev) if dev else None,
            "worst_ms": max(dev) if dev else None, "deviations_ms": dev}


class CpuSegments:
    """A process's CPU share of one core (percent) in consecutive segments of `segment_s` seconds,
    read by a background thread from its start: segments make the share a sample with a spread,
    so it can be decided from an interval like every other figure."""

    def __init__(self, pid: int, segment_s: float = SEGMENT_S) -> None:
        self.proc = psutil.Process(pid)
        self.segment_s = segment_s
        self.shares: list[float] = []
        self._stop = threading.Event()
        # Counted from the process's start, so its start-up (imports) is part of its cost.
        self._last = (self.proc.create_time(), 0.0)
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _read(self, final: bool = False) -> None:
        t = self.proc.cpu_times()
        now, cpu = time.time(), t.user + t.system
        dt = now - self._last[0]
        if dt >= (self.segment_s / 2 if final else 0.0) and dt > 0:  # a short last piece would be noise
            self.shares.append(100 * (cpu - self._last[1]) / dt)
        self._last = (now, cpu)

    def _run(self) -> None:
        while not self._stop.wait(self.segment_s):
            self._read()

    def start(self) -> CpuSegments:
        """Start sampling."""
        self._thread.start()
        return self

    def stop(self) -> list[float]:
        """Stop (before the process ends: its CPU times are read once more) and return the shares."""
        self._stop.set()
        self._thread.join()
        self._read(final=True)
        return self.shares


def with_contention(pairs: Pairs, rows: list[dict]) -> Pairs:
    """The pairs with each run's other-process CPU over its training window (schema.other_load of
    the benchmark's own monitor, which watches this process's tree: the runs are inside it)."""
    def of(m: Measured) -> Measured:
        window = [r for r in rows if m.start_unix <= r["time_unix"] <= m.end_unix]
        return replace(m, other=schema.other_load(window))

    return [(of(a), of(b)) for a, b in pairs]


@dataclass(frozen=True)
class Findings:
    """Everything the benchmark measured, as report() prints it (tests plant their own)."""

    workload: str
    profile: str
    threads: int
    cores: int
    wall_s: float
    monitor: Pairs  # (monitor on, monitor off)
    monitor_segments: list[float]  # the monitor's CPU share of one core per segment, percent
    monitor_core_pct: float  # the same over the whole benchmark
    mem_rss_mb: float
    mem_uss_mb: float
    cadence_ms: list[float]  # each sample interval's deviation from 1 s
    runner: Pairs = field(default_factory=list)  # (docker, local)
    runner_note: str = "not measured"


def _row(name: str, value: str, target: str = "", verdict: str = "") -> str:
    return f"{name:<46} {value:<44} {target:<14} {verdict}".rstrip()


def _decided(name: str, decision: Decision, digits: int = 4) -> str:
    return _row(name, decision.interval_text(digits), decision.target.text, decision.verdict_text())


def contention_text(pairs: Pairs) -> str:
    """Other processes' CPU during the runs' training: mean and most in percent of one core, and
    how many runs analysis.contention calls contended."""
    runs = [m for pair in pairs for m in pair]
    means = [m.other.get("other_cpu_mean_pct") for m in runs]
    means = [x for x in means if x is not None]
    if not means:
        return "not recorded"
    contended = sum(1 for m in runs if m.contended)
    return (f"mean {statistics.fmean(means):.1f} % of a core (most {max(means):.1f} %); "
            f"{contended} of {len(runs)} runs contended")


def report(f: Findings) -> list[str]:
    """The figures beside their targets, each with its 95 % interval and verdict (analysis.decide)."""
    on, off = [a.training_s for a, _ in f.monitor], [b.training_s for _, b in f.monitor]
    lines = [
        f"dlrepro monitor overhead: {f.workload} {f.profile}, PyTorch, {f.threads} threads, "
        f"{len(f.monitor)} alternating pairs, {f.wall_s:.0f} s of monitoring on {f.cores} cores",
        _row("figure", "measured [95 % interval], sample", "target", "verdict"),
        _decided("1. training time, monitor on / off", decide_pairs(on, off, TARGETS["monitor_ratio"])),
        _row("   per-pair slowdown", spread_text(f.monitor)),
    ]
    if f.monitor and all(a.cpu_s is not None and b.cpu_s is not None for a, b in f.monitor):
        cpu = decide_pairs([a.cpu_s for a, _ in f.monitor], [b.cpu_s for _, b in f.monitor],
                           TARGETS["monitor_ratio"])
        lines.append(_decided("   CPU time of the run's processes, on / off", cpu))
    lines.append(_row("   other processes' CPU while training", contention_text(f.monitor)))
    quiet = [(a, b) for a, b in f.monitor if a.contended is False and b.contended is False]
    if 0 < len(quiet) < len(f.monitor):
        decision = decide_pairs([a.training_s for a, _ in quiet], [b.training_s for _, b in quiet],
                                TARGETS["monitor_ratio"], unit="quiet pairs")
        lines.append(_decided("   training time on / off, quiet pairs only", decision))
    elif f.monitor and not quiet and any(a.contended or b.contended for a, b in f.monitor):
        lines.append(_row("   training time on / off, quiet pairs only",
                          "none: every pair shared the machine; run it again when the machine is quiet"))
    lines += [
        _decided("2. monitor CPU (share of one core, %)",
                 decide_mean(f.monitor_segments, TARGETS["monitor_core_pct"], f"{SEGMENT_S:.0f}-s segments"), 3),
        _row("   monitor CPU over the whole benchmark", f"{f.monitor_core_pct:.3f} %"),
        _row("   monitor memory (RSS / USS)", f"{f.mem_rss_mb:.1f} MB / {f.mem_uss_mb:.1f} MB"),
        _decided("3. cadence |interval - 1.000 s| median, ms",
                 decide_median(f.cadence_ms, TARGETS["cadence_median_ms"], "intervals"), 2),
        _row("   cadence worst deviation", f"{max(f.cadence_ms):.1f} ms" if f.cadence_ms else "no intervals"),
    ]
    if f.runner:
        docker, local = [a.training_s for a, _ in f.runner], [b.training_s for _, b in f.runner]
        lines += [_decided("4. training time, docker / local runner", decide_pairs(docker, local,
                                                                                 TARGETS["runner_ratio"])),
                  _row("   per-pair difference", spread_text(f.runner))]
    else:
        lines.append(_row("4. training time, docker / local runner", f.runner_note))
    return lines


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the figures beside their targets."""
    ap = argparse.ArgumentParser(prog="python -m campaign.overhead", description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--min-seconds", type=float, default=600.0, help="cadence is measured over at least this")
    ap.add_argument("--workload", default="lstm-imdb")
    ap.add_argument("--profile", default="quick")
    ap.add_argument("--data-root", type=Path, default=REPO / "data")
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--runner-pairs", type=int, default=None,
                    help="docker vs local pairs (default: --pairs; 0: skip)")
    args = ap.parse_args(argv)

    setup = Setup(args.workload, args.profile, args.data_root, args.threads)  # a clear error if data is missing
    env = envs.ensure_env("pytorch")
    with tempfile.TemporaryDirectory(prefix="dlrepro-overhead-") as tmp:
        workdir = Path(tmp)
        # One standalone monitor over the whole benchmark: its cadence, its own cost, and the other
        # processes' CPU during each run (it watches this process's tree, so the runs are its own).
        watch = subprocess.Popen([sys.executable, "-m", "bench.monitor", "--pid", str(os.getpid()),
                                  "--out", str(workdir / schema.MONITOR_FILE)], cwd=REPO)
        segments = CpuSegments(watch.pid).start()
        t0 = time.time()
        results = monitor_pairs(env.python, requests.Environment(env.lock_sha256), workdir, setup, args.pairs)
        n_runner = args.pairs if args.runner_pairs is None else args.runner_pairs
        runner_results, runner_note = [], "not measured: --runner-pairs 0"
        if n_runner:
            try:
                runner_results = runner_pairs(workdir, setup, n_runner)
            except UsageError as exc:
                runner_note = f"not measured: {exc.problem}"
        while time.time() - t0 < args.min_seconds:
            print(f"sampling cadence: {time.time() - t0:.0f} of {args.min_seconds:.0f} s", flush=True)
            time.sleep(min(60.0, args.min_seconds - (time.time() - t0)))
        shares = segments.stop()
        proc = psutil.Process(watch.pid)
        cpu = proc.cpu_times()
        mem = proc.memory_full_info()
        wall = time.time() - proc.create_time()
        watch.terminate()
        watch.wait()
        rows = list(schema.read_monitor(workdir))

    findings = Findings(
        workload=args.workload, profile=args.profile, threads=args.threads, cores=os.cpu_count() or 0,
        wall_s=wall, monitor=with_contention(results, rows), monitor_segments=shares,
        monitor_core_pct=100 * (cpu.user + cpu.system) / wall, mem_rss_mb=mem.rss / 2**20,
        mem_uss_mb=mem.uss / 2**20, cadence_ms=cadence(rows)["deviations_ms"], runner=runner_results,
        runner_note=runner_note)
    print()
    print("\n".join(report(findings)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
