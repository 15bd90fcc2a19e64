"""`make bench-overhead`: does measuring change what is measured? Figures from one run, with targets.

1. Training time of a fixed workload with the monitor on vs off, in alternating pairs (so drift in
   the machine's speed hits both sides alike): the ratio on/off, its mean and spread.
2. The monitor's own cost: CPU time as a share of one core, and its resident memory.
3. Sample cadence: deviation of each interval from 1.000 s over the whole benchmark (>= 10 min).
4. Training time of the same run in the docker runner's container vs the local runner's virtual
   environment, in alternating pairs: only where a Docker engine answers.

Speed targets live here, in a benchmark that prints figures, never in a timed test.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import psutil

from bench import request, schema
from bench.errors import UsageError
from campaign import requests, specs
from campaign.runners import Runner, entrypoint_args
from images import envs

REPO = Path(__file__).resolve().parents[1]
TARGETS = {"slowdown_pct": 1.0, "monitor_core_pct": 1.0, "cadence_median_ms": 50.0}


def training_time(run_dir: Path) -> float:
    """A finished run's training time in seconds, from run.json (as every report reads it)."""
    record = schema.read_run(run_dir)
    if record["status"] != "ok":
        raise RuntimeError(f"benchmark run failed: {record['failure']}")
    return record["timing"]["training_time_s"]


class Setup:
    """What every benchmark run shares: the workload, its prepared (synthetic) data, the threads."""

    def __init__(self, workload: str, profile: str, data_root: Path, threads: int) -> None:
        self.workload, self.profile, self.threads = workload, profile, threads
        self.spec = specs.load(workload, profile)
        self.dataset = requests.find_dataset(data_root, self.spec["dataset"], "synthetic")

    def request(self, runner: str, environment: requests.Environment, monitor: bool = True) -> dict:
        """The benchmark's run request (PyTorch on the CPU, seed 0), for a runner and environment."""
        return requests.resolve(
            framework="pytorch", era="current", workload=self.workload, profile=self.profile, spec=self.spec,
            dataset=self.dataset, device="cpu", threads=self.threads, seed=0, repeat=1, campaign="overhead",
            runner=runner, environment=environment, monitor=monitor)


def train_once(python: Path, req: dict, run_dir: Path) -> float:
    """One entrypoint run of `req` in the local environment; its training time."""
    request.write(run_dir, req)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with open(run_dir / schema.LOG_FILE, "wb") as log:
        subprocess.run([str(python), "-m", "bench", *entrypoint_args(run_dir)], cwd=REPO, env=env, stdout=log,
                       stderr=subprocess.STDOUT, check=True)
    return training_time(run_dir)


def in_runner(runner: Runner, req: dict, run_dir: Path) -> float:
    """One run launched by a runner (monitor on, as in a campaign); its training time."""
    request.write(run_dir, req)
    outcome = runner.launch(req, run_dir, None)
    if outcome.returncode != 0:
        raise RuntimeError(f"benchmark run in the {runner.name} runner exited {outcome.returncode}; "
                           f"see {run_dir / schema.LOG_FILE}")
    return training_time(run_dir)


def alternating_pairs(n: int, workdir: Path, sides: dict[str, Callable[[Path], float]]) -> list[dict[str, float]]:
    """n pairs of training times, one per side (two sides, each a function of a fresh run folder),
    the order inside each pair alternating so drift in the machine's speed hits both alike."""
    first, second = sides
    out = []
    for i in range(n):
        times = {}
        for side in ((first, second) if i % 2 == 0 else (second, first)):
            times[side] = sides[side](workdir / f"pair{i}-{side}")
        print(f"pair {i + 1}/{n}: {first} {times[first]:.2f} s, {second} {times[second]:.2f} s, "
              f"ratio {times[first] / times[second]:.4f}", flush=True)
        out.append(times)
    return out


def monitor_pairs(python: Path, env: requests.Environment, workdir: Path, setup: Setup,
                  n: int) -> list[tuple[float, float]]:
    """n (monitor on, monitor off) training times of the local entrypoint."""
    def side(monitor: bool) -> Callable[[Path], float]:
        return lambda d: train_once(python, setup.request("local", env, monitor), d)

    return [(t["monitor-on"], t["monitor-off"])
            for t in alternating_pairs(n, workdir, {"monitor-on": side(True), "monitor-off": side(False)})]


def runner_pairs(workdir: Path, setup: Setup, n: int) -> list[tuple[float, float]]:
    """n (docker, local) training times of the same run; the image is built or reused first.
    A UsageError when no Docker engine answers."""
    from campaign.runners.docker import DockerRunner
    from campaign.runners.local import LocalRunner

    runners: dict[str, Runner] = {"docker": DockerRunner(), "local": LocalRunner()}
    envs_of = {name: runner.prepare("pytorch") for name, runner in runners.items()}

    def side(name: str) -> Callable[[Path], float]:
        return lambda d: in_runner(runners[name], setup.request(name, envs_of[name]), d)

    return [(t["docker"], t["local"]) for t in alternating_pairs(n, workdir, {"docker": side("docker"),
                                                                               "local": side("local")})]


def _ratio_text(results: list[tuple[float, float]]) -> tuple[str, float]:
    """'mean ratio (+x % ± sd; min, max)' of a/b over pairs, and the mean slowdown in percent."""
    slowdown = [100 * (a / b - 1) for a, b in results]
    mean = statistics.mean(slowdown)
    spread = statistics.stdev(slowdown) if len(slowdown) > 1 else float("nan")
    ratio = statistics.mean(a / b for a, b in results)
    return (f"{ratio:.4f} ({mean:+.2f} % ± {spread:.2f} sd; min {min(slowdown):+.2f}, max {max(slowdown):+.2f})",
            mean)


def cadence(rows: list[dict]) -> dict:
    """Median and worst absolute deviation of sample intervals from the nominal 1 s, in ms."""
    stamps = [r["time_unix"] for r in rows]
    dev = [abs((b - a) - 1.0) * 1000 for a, b in zip(stamps, stamps[1:])]
    return {"intervals": len(dev), "median_ms": statistics.median(dev) if dev else None,
            "worst_ms": max(dev) if dev else None}


def _row(name: str, value: str, target: str, ok: bool | None) -> str:
    verdict = "n/a" if ok is None else ("meets target" if ok else "MISSES target")
    return f"{name:<46} {value:<34} {target:<14} {verdict}"


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
        # One standalone monitor over the whole benchmark: its cadence and its own cost.
        watch = subprocess.Popen([sys.executable, "-m", "bench.monitor", "--pid", str(os.getpid()),
                                  "--out", str(workdir / schema.MONITOR_FILE)], cwd=REPO)
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
        proc = psutil.Process(watch.pid)
        cpu = proc.cpu_times()
        mem = proc.memory_full_info()
        wall = time.time() - proc.create_time()
        watch.terminate()
        watch.wait()
        rows = list(schema.read_monitor(workdir))

    monitor_text, mean_slow = _ratio_text(results)
    core_pct = 100 * (cpu.user + cpu.system) / wall
    cad = cadence(rows)
    print()
    print(f"dlrepro monitor overhead: {args.workload} {args.profile}, PyTorch, {args.threads} threads, "
          f"{len(results)} alternating pairs, {wall:.0f} s of monitoring on {os.cpu_count()} cores")
    print(_row("figure", "measured", "target", None).replace("n/a", "verdict"))
    print(_row("1. training time, monitor on / off", monitor_text,
               f"< {TARGETS['slowdown_pct']:.0f} % slower", mean_slow < TARGETS["slowdown_pct"]))
    print(_row("2. monitor CPU (share of one core)", f"{core_pct:.3f} %",
               f"< {TARGETS['monitor_core_pct']:.0f} %", core_pct < TARGETS["monitor_core_pct"]))
    print(_row("   monitor memory (RSS / USS)", f"{mem.rss / 2**20:.1f} MB / {mem.uss / 2**20:.1f} MB", "", None))
    print(_row("3. cadence |interval - 1.000 s| median", f"{cad['median_ms']:.2f} ms over {cad['intervals']}",
               f"< {TARGETS['cadence_median_ms']:.0f} ms", cad["median_ms"] < TARGETS["cadence_median_ms"]))
    print(_row("   cadence worst deviation", f"{cad['worst_ms']:.1f} ms", "", None))
    if runner_results:
        runner_text = f"{_ratio_text(runner_results)[0]}, {len(runner_results)} pairs"
    else:
        runner_text = runner_note
    print(_row("4. training time, docker / local runner", runner_text, "", None))
    return 0


if __name__ == "__main__":
    sys.exit(main())
