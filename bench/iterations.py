"""The iterations protocol: time single training mini-batches, after a warm-up (bench/measurement.py).

The entrypoint calls `run` instead of its epoch loop when the spec's measurement protocol is
"iterations". The runner owns the clock: every step is timed alone with time.perf_counter() around
``trainer.step(); trainer.synchronize()``, so the device has finished the step before each clock
read. Every step, warm-up included and marked, goes to iterations.csv (bench/schema/iterations.py); run.json's
timing gets the statistics of the measured steps only (schema.summarize_iterations). After the
measured steps the test set is evaluated once, as the epoch protocol does after its last epoch.
Data-parallel ranks (bench/dataparallel.py) run this same loop, each with a barrier before every
step's first clock read (so every rank's time is of the same step), and only rank 0 evaluates.
CPython 3.6-clean: paper-era images run it.
"""

import math
import time
from pathlib import Path
from typing import Any, Callable, List, Optional

from bench import measurement, schema
from bench.errors import UsageError
from bench.frameworks import NonFiniteLoss, capabilities

# A progress line every this many timed calls (and at the end of the warm-up and of the run).
PRINT_EVERY = 100
# The framework modules whose trainers have step() (their declarations' protocols): the planner refuses the others
# in one line.
SUPPORT = capabilities.Feature(lambda framework, can: measurement.ITERATIONS in can.protocols,
                               "has no step() (Trainer.step: bench/iterations.py)",
                               "the iterations protocol's step() is written", "iterations runs")


def refusal(framework: str, era: str) -> Optional[str]:
    """Why `framework` of `era` cannot run the iterations protocol (None when it can)."""
    return SUPPORT.refusal(framework, era)


def require_step(trainer, framework: str, era: str) -> None:
    """Raise a UsageError unless the trainer has step(), which this protocol needs."""
    if not callable(getattr(trainer, "step", None)):
        raise UsageError(f"the {era}-era {framework} trainer has no step(), which the iterations protocol needs",
                         "run it with the epoch protocol (measurement protocol 'epochs') or another framework")


class Unit:
    """How a timed loop names what it times, in its progress lines and errors: ('iteration', 'it', 'loss')."""

    def __init__(self, name: str, short: str, value: str) -> None:
        self.name, self.short, self.value = name, short, value


STEPS = Unit("iteration", "it", "loss")


def timed_loop(call: Callable[[], Any], value: Callable[[Any], float], synchronize: Callable[[], None], warmup: int,
               iterations: int, timing: dict, out: Path, unit: Unit, barrier: Optional[Callable[[], None]] = None,
               after: Optional[Callable[[], None]] = None) -> List[dict]:
    """Time `warmup` then `iterations` calls of `call`, each alone: time.perf_counter() around ``call();
    synchronize()``; value(result), worked out outside the clock and checked finite (a NonFiniteLoss), is each
    row's loss column. Write every row, warm-up marked, to iterations.csv in `out` (also when a call fails, with
    the rows done), set timing's train_start_unix (the end of the warm-up) and train_end_unix, and return the
    rows. `barrier`: called before each call's clock starts; `after`: called once the calls are done, inside
    the same guard (a check the values cannot show)."""
    total = warmup + iterations
    rows: List[dict] = []
    since, block = 0.0, 0  # seconds and calls since the last progress line
    try:
        synchronize()  # setup's queued device work is not the first call's
        if warmup == 0:
            timing["train_start_unix"] = time.time()
        for i in range(1, total + 1):
            phase = "warmup" if i <= warmup else "measured"
            if barrier is not None:
                barrier()
            t0 = time.perf_counter()
            result = call()
            synchronize()
            t1 = time.perf_counter()
            got = float(value(result))
            if not math.isfinite(got):
                raise NonFiniteLoss(f"{unit.value} is {got} at {unit.name} {i} ({phase})")
            rows.append({"iteration": i, "phase": phase, "time_s": t1 - t0, "loss": got})
            if i == warmup:
                timing["train_start_unix"] = time.time()
            since, block = since + t1 - t0, block + 1
            if i % PRINT_EVERY == 0 or i == warmup or i == total:
                print(f"{unit.name} {i}/{total} ({phase}): {since / block:.4g} s/{unit.short}, {unit.value} "
                      f"{got:.4f}", flush=True)
                since, block = 0.0, 0
        timing["train_end_unix"] = time.time()
        if callable(after):
            after()
    finally:
        schema.write_iterations(out, rows)
    return rows


def run(trainer, warmup: int, iterations: int, out: Path, record: dict, framework: str, era: str,
        barrier: Optional[Callable[[], None]] = None, evaluate: bool = True) -> None:
    """Run `warmup` then `iterations` timed training steps of `trainer` and one test pass; write
    iterations.csv into `out` (also when a step fails, with the steps done) and fill record's timing
    and results (test_accuracy, final_loss = the last step's loss; epochs_completed stays 0).
    `barrier`: called before each step's clock starts (a data-parallel rank waits for the others);
    evaluate False: no test pass (test_accuracy and eval_time_s stay as they are)."""
    require_step(trainer, framework, era)
    timing, results = record["timing"], record["results"]
    timing.update(protocol="iterations", warmup_iterations=warmup, measured_iterations=iterations,
                  warmup_time_s=None, iteration_time_s=None, definition=schema.ITERATION_TIMING_DEFINITION)
    rows = timed_loop(trainer.step, float, trainer.synchronize, warmup, iterations, timing, out, STEPS, barrier,
                      after=getattr(trainer, "check_finite", None))
    timing.update(schema.summarize_iterations(rows))
    results["final_loss"] = rows[-1]["loss"]
    if not evaluate:
        return
    t0 = time.perf_counter()
    results["test_accuracy"] = float(trainer.evaluate())
    trainer.synchronize()
    timing["eval_time_s"] = time.perf_counter() - t0
    stats = timing["iteration_time_s"]
    print(f"measured {iterations} iterations after {warmup} warm-up: mean {stats['mean']:.4g} s/it, median "
          f"{stats['median']:.4g}, p5-p95 {stats['p5']:.4g}-{stats['p95']:.4g}; test_accuracy "
          f"{results['test_accuracy']:.4f} (+{timing['eval_time_s']:.2f}s eval)", flush=True)
