"""`make bench-overhead`: does measuring change what is measured? Figures from one run, with targets.

1. Training time of a fixed workload with the monitor on vs off, in alternating pairs (so drift in
   the machine's speed hits both sides alike): the ratio on/off, its mean and spread.
2. The monitor's own cost: CPU time as a share of one core, and its resident memory.
3. Sample cadence: deviation of each interval from 1.000 s over the whole benchmark (>= 10 min).
4. Container vs local runner: only where a container runner and engine exist.

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
from pathlib import Path

import psutil

from bench import dataset, envs, schema, spec
from bench.runners import Launch

REPO = Path(__file__).resolve().parents[1]
TARGETS = {"slowdown_pct": 1.0, "monitor_core_pct": 1.0, "cadence_median_ms": 50.0}


def train_once(python: Path, launch: Launch, monitor: bool) -> float:
    """One entrypoint run; its training time in seconds (from run.json, as every report reads it)."""
    cmd = [str(python), "-m", "bench", *launch.argv()] + ([] if monitor else ["--no-monitor"])
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with open(launch.out_dir / schema.LOG_FILE, "wb") as log:
        subprocess.run(cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, check=True)
    record = schema.read_run(launch.out_dir)
    if record["status"] != "ok":
        raise RuntimeError(f"benchmark run failed: {record['failure']}")
    return record["timing"]["training_time_s"]


def pairs(python: Path, workdir: Path, data_dir: Path, n: int, threads: int, workload: str,
          profile: str) -> list[tuple[float, float]]:
    """n (monitor on, monitor off) training times, the order inside each pair alternating."""
    out = []
    for i in range(n):
        times = {}
        for monitor in ((True, False) if i % 2 == 0 else (False, True)):
            run_dir = workdir / f"pair{i}-{'on' if monitor else 'off'}"
            run_dir.mkdir()
            launch = Launch(framework="pytorch", workload=workload, profile=profile, device="cpu", seed=0,
                            repeat=1, campaign="overhead", run_id=run_dir.name, data_dir=data_dir,
                            out_dir=run_dir, env_id="overhead", threads=threads)
            times[monitor] = train_once(python, launch, monitor)
        print(f"pair {i + 1}/{n}: monitor on {times[True]:.2f} s, off {times[False]:.2f} s, "
              f"ratio {times[True] / times[False]:.4f}", flush=True)
        out.append((times[True], times[False]))
    return out


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
    ap = argparse.ArgumentParser(prog="python -m bench.overhead", description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--min-seconds", type=float, default=600.0, help="cadence is measured over at least this")
    ap.add_argument("--workload", default="lstm-imdb")
    ap.add_argument("--profile", default="quick")
    ap.add_argument("--data-root", type=Path, default=REPO / "data")
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    args = ap.parse_args(argv)

    wl = spec.load(args.workload, args.profile)
    data_dir = dataset.prepared_dir(args.data_root, wl["dataset"], "synthetic")
    dataset.read_meta(data_dir)  # a clear error if the data is missing
    python = envs.ensure_env("pytorch").python
    with tempfile.TemporaryDirectory(prefix="dlrepro-overhead-") as tmp:
        workdir = Path(tmp)
        # One standalone monitor over the whole benchmark: its cadence and its own cost.
        watch = subprocess.Popen([sys.executable, "-m", "bench.monitor", "--pid", str(os.getpid()),
                                  "--out", str(workdir / schema.MONITOR_FILE)], cwd=REPO)
        t0 = time.time()
        results = pairs(python, workdir, data_dir, args.pairs, args.threads, args.workload, args.profile)
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

    ratios = [on / off for on, off in results]
    slowdown = [100 * (r - 1) for r in ratios]
    mean_slow = statistics.mean(slowdown)
    spread = statistics.stdev(slowdown) if len(slowdown) > 1 else float("nan")
    core_pct = 100 * (cpu.user + cpu.system) / wall
    cad = cadence(rows)
    print()
    print(f"dlrepro monitor overhead: {args.workload} {args.profile}, PyTorch, {args.threads} threads, "
          f"{len(results)} alternating pairs, {wall:.0f} s of monitoring on {os.cpu_count()} cores")
    print(_row("figure", "measured", "target", None).replace("n/a", "verdict"))
    print(_row("1. training time, monitor on / off", f"{statistics.mean(ratios):.4f} "
               f"({mean_slow:+.2f} % ± {spread:.2f} sd; min {min(slowdown):+.2f}, max {max(slowdown):+.2f})",
               f"< {TARGETS['slowdown_pct']:.0f} % slower", mean_slow < TARGETS["slowdown_pct"]))
    print(_row("2. monitor CPU (share of one core)", f"{core_pct:.3f} %",
               f"< {TARGETS['monitor_core_pct']:.0f} %", core_pct < TARGETS["monitor_core_pct"]))
    print(_row("   monitor memory (RSS / USS)", f"{mem.rss / 2**20:.1f} MB / {mem.uss / 2**20:.1f} MB", "", None))
    print(_row("3. cadence |interval - 1.000 s| median", f"{cad['median_ms']:.2f} ms over {cad['intervals']}",
               f"< {TARGETS['cadence_median_ms']:.0f} ms", cad["median_ms"] < TARGETS["cadence_median_ms"]))
    print(_row("   cadence worst deviation", f"{cad['worst_ms']:.1f} ms", "", None))
    print(_row("4. container / local training time", "not measured: this kit version has no docker runner",
               "", None))
    return 0


if __name__ == "__main__":
    sys.exit(main())
