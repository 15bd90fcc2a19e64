"""The inference protocol: time forward passes only, mini-batch by mini-batch, after a warm-up (bench/measurement.py).

ilkarman/DeepLearningFrameworks times ResNet-50 feature extraction: a model run forward in its framework's
inference mode (no gradient, batchnorm with its moving statistics, dropout off) over mini-batches of images,
the features copied to the host, in seconds per 1,000 images. The entrypoint calls `run` instead of its epoch
loop when the spec's measurement protocol is "inference". As the iterations protocol (bench/iterations.py),
the runner owns the clock: each batch is timed alone with time.perf_counter() around
``trainer.infer(); trainer.synchronize()``; every batch, warm-up included and marked, goes to iterations.csv
(its loss column holds the mean of the batch's outputs, checked finite: a forward pass has no loss), and
run.json's timing gets the statistics of the measured batches only (schema.summarize_iterations), its results
the throughput (schema.summarize_inference). Nothing is trained and no test pass is made.
CPython 3.6-clean: paper-era images run it.
"""

from pathlib import Path
from typing import Optional

import numpy as np

from bench import iterations as iterations_
from bench import measurement, schema
from bench.errors import UsageError
from bench.frameworks import capabilities

# How the timed loop (bench/iterations.py) names a forward pass: a forward pass has no loss, so the loss column
# holds the mean of the batch's outputs.
BATCHES = iterations_.Unit("batch", "batch", "the outputs' mean")
# model.weights of every inference run: the frameworks' default initialization under the run's seed (a study
# that used pretrained weights is timed with these: a forward pass's time does not depend on the values).
WEIGHTS = "seeded random"


# The framework modules whose trainers have infer() (their declarations' protocols): the planner refuses the others
# in one line.
SUPPORT = capabilities.Feature(lambda framework, can: measurement.INFERENCE in can.protocols,
                               "has no forward-pass hook (Trainer.infer: bench/inference.py)",
                               "the inference protocol's forward-pass hook is written", "inference runs")


def _mean(outputs) -> float:
    return float(np.mean(outputs))


def is_inference(spec: dict) -> bool:
    """Whether a resolved spec is timed by this protocol (its measurement protocol is "inference")."""
    return measurement.of_spec(spec)["protocol"] == measurement.INFERENCE


def refusal(framework: str, era: str) -> Optional[str]:
    """Why `framework` of `era` cannot run the inference protocol (None when it can)."""
    return SUPPORT.refusal(framework, era)


def supports(trainer) -> bool:
    """Whether a trainer has infer(), the forward-pass hook this protocol needs (bench.frameworks.Trainer)."""
    return callable(getattr(trainer, "infer", None))


def require_infer(trainer, framework: str, era: str) -> None:
    """Raise a UsageError unless the trainer has infer()."""
    if not supports(trainer):
        raise UsageError(f"the {era}-era {framework} trainer has no infer(), which the inference protocol needs",
                         "run this workload with a framework that has it (FRAMEWORKS=...)")


def run(trainer, warmup: int, iterations: int, batch_size: int, out: Path, record: dict,
        framework: str, era: str) -> None:
    """Run `warmup` then `iterations` timed forward passes of `trainer` (batch_size rows each); write
    iterations.csv into `out` (also when a pass fails, with the passes done) and fill record's timing
    (as the iterations protocol, timing.protocol "inference") and results (the throughput)."""
    require_infer(trainer, framework, era)
    timing = record["timing"]
    timing.update(protocol=schema.INFERENCE, warmup_iterations=warmup, measured_iterations=iterations,
                  warmup_time_s=None, iteration_time_s=None, definition=schema.INFERENCE_TIMING_DEFINITION)
    record["model"]["weights"] = WEIGHTS
    rows = iterations_.timed_loop(trainer.infer, _mean, trainer.synchronize, warmup, iterations, timing, out, BATCHES)
    timing.update(schema.summarize_iterations(rows))
    record["results"].update(schema.summarize_inference(timing["iteration_time_s"], batch_size))
    print(f"measured {iterations} forward passes of {batch_size} after {warmup} warm-up: "
          f"{record['results']['s_per_1000_images']:.4g} s per 1,000 images "
          f"({record['results']['images_per_s']:.4g} images/s)", flush=True)
