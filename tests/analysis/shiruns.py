"""Hand-made runs of Shi et al.'s experiments for the analysis tests: tests.runfactory.make_run's run folder, turned
into an iterations-protocol run (iterations.csv instead of metrics.jsonl, run.json's timing from it, the
measurement table in the spec) as make shi-cpu / shi-gpu write them."""

from __future__ import annotations

from pathlib import Path

from bench.schema import METRICS_FILE, read_run, summarize_iterations, write_iterations, write_run
from tests.runfactory import make_run

WARMUP, MEASURED = 2, 3
MEASUREMENT = {"protocol": "iterations", "warmup_epochs": 1, "iterations": MEASURED}


def make_shi_run(campaign: Path, framework: str, seconds: float, *, threads: int | None = None, repeat: int = 1,
                 device: str = "cpu", workload: str = "fcn-r-mnist", profile: str = "quick",
                 training_time: float | None = None, ranks: int | None = None) -> Path:
    """One ok iterations-protocol run: every measured mini-batch takes `seconds` (so its mean is exactly that),
    at sweep point threads=`threads` on CPU (host: 2 physical cores), or on the factory's fake GPU.
    ``training_time`` overrides timing.training_time_s (default: the measured steps' sum, as the entrypoint);
    ``ranks``: a data-parallel run's sweep point (make shi-multigpu)."""
    gpu = (90.0, 95.0, 97.0) if device == "gpu" else None
    sweep = {"threads": threads} if threads is not None else None
    run_id = (f"{framework}-{workload}-{device}" + (f"-t{threads}" if threads else "") + (f"-n{ranks}" if ranks else "")
              + f"-r{repeat}")
    run_dir = make_run(campaign, framework, workload, repeat, device=device, profile=profile, sweep=sweep,
                       run_id=run_id, gpu=gpu, curve=(0.9,))
    (run_dir / METRICS_FILE).unlink()
    steps = [{"iteration": i, "phase": "warmup" if i <= WARMUP else "measured",
              "time_s": 2 * seconds if i <= WARMUP else seconds, "loss": 1.0 / i}
             for i in range(1, WARMUP + MEASURED + 1)]
    write_iterations(run_dir, steps)
    run = read_run(run_dir)
    run["timing"].update(protocol="iterations", **summarize_iterations(steps))
    if training_time is not None:
        run["timing"]["training_time_s"] = training_time
    run["results"]["epochs_completed"] = 0
    run["spec"]["measurement"] = dict(MEASUREMENT)
    if ranks:  # as bench/dataparallel.py records it: each rank trains a mini-batch per step
        run["config"]["sweep"] = {**(run["config"].get("sweep") or {}), "ranks": ranks}
        batch = int((run["spec"].get("training") or {}).get("batch_size") or 1)
        run["results"].update(ranks=ranks, images_per_ms=ranks * batch / (seconds * 1000))
    write_run(run_dir, run)
    return run_dir


def shi_cpu_campaign(campaign: Path, times: dict[str, dict[int, float]], **kwargs) -> list[Path]:
    """A make shi-cpu campaign: {framework: {threads: seconds per mini-batch}}, one repeat each."""
    return [make_shi_run(campaign, fw, s, threads=n, **kwargs) for fw, by_n in times.items() for n, s in by_n.items()]
