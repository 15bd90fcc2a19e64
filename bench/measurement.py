"""The measurement protocol of a run: how its training is timed, read from the workload spec.

A resolved workload spec may carry a table ``measurement``:

- absent, or ``{"protocol": "epochs"}``: the epoch protocol (DLBench): the spec's epochs, each
  timed whole; metrics.jsonl has one record per epoch.
- ``{"protocol": "iterations", "warmup": W, "iterations": N}``: the iteration protocol (Shams et
  al.: warmup 100, iterations 1000, i.e. iterations 101-1100 are timed): W warm-up mini-batches,
  then N measured ones, every one timed on its own (bench/iterations.py, iterations.csv).
  ``"warmup_epochs": E`` instead of ``warmup`` makes the warm-up E epochs' worth of mini-batches
  (Shi et al. exclude the first epoch); the entrypoint turns it into a count once the training
  set's size is known (warmup_steps).
- ``{"protocol": "inference", "warmup": W, "iterations": N}``: forward passes only (ilkarman's ResNet-50
  feature extraction): W warm-up mini-batches, then N measured ones, each a forward pass in the
  framework's inference mode, timed on its own (bench/inference.py; iterations.csv as above).

``check`` is the one validator: the run request calls it (bench/request.py), and the host may call
it on a spec before planning. Standard library only, CPython 3.6-clean.
"""

from typing import Optional

from bench.errors import UsageError

EPOCHS = "epochs"
ITERATIONS = "iterations"
INFERENCE = "inference"
PROTOCOLS = (EPOCHS, ITERATIONS, INFERENCE)
# The protocols that time single mini-batches (iterations.csv, timing.protocol in run.json).
TIMED_BATCHES = (ITERATIONS, INFERENCE)
# The keys the table may hold under each protocol (protocol itself always).
KEYS = {EPOCHS: ("protocol",), ITERATIONS: ("protocol", "warmup", "warmup_epochs", "iterations"),
        INFERENCE: ("protocol", "warmup", "iterations")}
FIX = ('write the spec\'s measurement table as {protocol = "epochs"}, {protocol = "iterations", '
       'warmup = W (or warmup_epochs = E), iterations = N} or {protocol = "inference", warmup = W, iterations = N}')


class MeasurementError(UsageError):
    """A measurement table that is not one of the protocols; one line naming the problem and the fix."""

    def __init__(self, where: str, problem: str) -> None:
        super().__init__(f"{where}: measurement {problem}", FIX)


def _count(table: dict, key: str, where: str, least: int) -> Optional[int]:
    """table[key] as a whole number of at least `least`, or None when absent."""
    if key not in table:
        return None
    value = table[key]
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise MeasurementError(where, f"{key} is {value!r}; it must be a whole number >= {least}")
    return value


def check(table, where: str = "spec") -> dict:
    """Validate a spec's measurement table (None = absent); return it normalized:
    {"protocol": "epochs"} or {"protocol": "iterations", "warmup": W or None,
    "warmup_epochs": E or None, "iterations": N} (exactly one of warmup, warmup_epochs set), or the same
    keys with protocol "inference" (warmup set, warmup_epochs None).
    Raise MeasurementError (a UsageError, one line) when it is malformed."""
    if table is None:
        return {"protocol": EPOCHS}
    if not isinstance(table, dict):
        raise MeasurementError(where, f"is a {type(table).__name__}, not a table")
    protocol = table.get("protocol")
    if protocol not in PROTOCOLS:
        raise MeasurementError(where, f"protocol {protocol!r} is not one of {', '.join(PROTOCOLS)}")
    unknown = sorted(set(table) - set(KEYS[protocol]))
    if unknown:
        raise MeasurementError(where, f"protocol {protocol!r} takes no {', '.join(unknown)}")
    if protocol == EPOCHS:
        return {"protocol": EPOCHS}
    iterations = _count(table, "iterations", where, 1)
    if iterations is None:
        raise MeasurementError(where, f"protocol {protocol!r} needs iterations (the number of measured mini-batches)")
    warmup = _count(table, "warmup", where, 0)
    warmup_epochs = _count(table, "warmup_epochs", where, 0)
    if protocol == INFERENCE and warmup is None:
        raise MeasurementError(where, "protocol 'inference' needs warmup (the number of warm-up mini-batches)")
    if (warmup is None) == (warmup_epochs is None):
        raise MeasurementError(where, "protocol 'iterations' needs exactly one of warmup and warmup_epochs")
    return {"protocol": protocol, "warmup": warmup, "warmup_epochs": warmup_epochs, "iterations": iterations}


def of_spec(spec: dict) -> dict:
    """The normalized measurement protocol of a resolved workload spec (check of its table)."""
    return check(spec.get("measurement"), "spec")


def warmup_steps(measurement: dict, train_examples: int, batch_size: int) -> int:
    """The warm-up mini-batch count of an iterations protocol: `warmup`, or `warmup_epochs` times the
    mini-batches of one epoch over train_examples (the last one short, as an epoch has it)."""
    if measurement["warmup"] is not None:
        return measurement["warmup"]
    per_epoch = -(-train_examples // batch_size)  # ceiling division
    return measurement["warmup_epochs"] * per_epoch
