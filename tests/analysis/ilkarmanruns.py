"""Hand-made runs of ilkarman's experiments for the analysis tests: tests.runfactory.make_run's run folder, as make
ilkarman-cpu writes them: training runs timed whole (the epoch protocol), and feature runs turned into
inference-protocol runs (iterations.csv of forward passes, run.json's timing and throughput from it)."""

from __future__ import annotations

from pathlib import Path

from bench import schema
from bench.schema import METRICS_FILE, read_run, summarize_inference, summarize_iterations, write_iterations, write_run
from tests.runfactory import make_run

FEATURES = "resnet50-features-synthetic"
BATCH, WARMUP, MEASURED = 64, 1, 2


def make_ilkarman_run(campaign: Path, framework: str, workload: str, seconds: float, *, repeat: int = 1,
                      **kwargs) -> Path:
    """One ok run of an ilkarman workload taking `seconds`: its training time, or for the feature extraction its
    seconds per 1,000 images (each measured batch of 64 taking 64 / 1000 of them)."""
    if workload != FEATURES:
        return make_run(campaign, framework, workload, repeat, training_time=seconds, profile="quick", **kwargs)
    run_dir = make_run(campaign, framework, workload, repeat, profile="quick", curve=(0.0,), **kwargs)
    (run_dir / METRICS_FILE).unlink()
    per_batch = seconds * BATCH / 1000
    steps = [{"iteration": i, "phase": "warmup" if i <= WARMUP else "measured",
              "time_s": 3 * per_batch if i <= WARMUP else per_batch, "loss": 0.0}
             for i in range(1, WARMUP + MEASURED + 1)]
    write_iterations(run_dir, steps)
    run = read_run(run_dir)
    run["timing"].update(protocol=schema.INFERENCE, definition=schema.INFERENCE_TIMING_DEFINITION,
                         **summarize_iterations(steps))
    run["results"].update(epochs_completed=0, test_accuracy=None,
                          **summarize_inference(run["timing"]["iteration_time_s"], BATCH))
    write_run(run_dir, run)
    return run_dir
