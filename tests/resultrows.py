"""Hand-made run-table rows for tests of the claims, transfer and significance checks.

The rows carry only the run-table columns (analysis.runs.RUN_COLUMNS) those checks read, with
values chosen by the test, so expected results can be computed by hand.
"""

from __future__ import annotations

from typing import Any


def row(fw: str, wl: str, device: str = "cpu", repeat: int = 1, *, time: float | None = 100.0,
        acc: float | None = 90.0, cpu: float | None = 50.0, mem: float | None = 500.0, gpu: float | None = None,
        status: str = "ok", cause: str | None = None, profile: str = "paper", data_source: str = "real",
        batch: int = 128, lr: float = 0.01, era: str = "current") -> dict[str, Any]:
    """One run-table row with the columns the checks read (accuracy in percent, as the run table); a
    paper-era row's id carries "-paper"."""
    era_tag = "" if era == "current" else f"-{era}"
    return {
        "run_id": f"{fw}-{wl}-{device}{era_tag}-b{batch}-lr{lr:g}-r{repeat}", "framework": fw, "workload": wl,
        "era": era,
        "device": device, "runner": "local", "profile": profile, "data_source": data_source, "repeat": repeat,
        "status": status, "failure_cause": cause if status != "ok" else None,
        "training_time_s": time if status == "ok" else None, "test_accuracy": acc if status == "ok" else None,
        "cpu_util_mean_pct": cpu, "mem_mean_mb": mem, "mem_peak_mb": mem, "gpu_util_mean_pct": gpu,
        "epochs_planned": 3, "batch_size": batch, "learning_rate": lr,
    }


def scale_row(fw: str, wl: str, ranks: int, images_per_ms: float | None, device: str = "cpu", repeat: int = 1,
              batch: int = 64, **extra: Any) -> dict[str, Any]:
    """A run-table row of a ranks sweep (bench/dataparallel.py) at `ranks`, with its throughput and the mean seconds
    per step that gives it (ranks x batch images per step)."""
    base = row(fw, wl, device, repeat, batch=batch)
    seconds = None if images_per_ms is None else ranks * batch / (images_per_ms * 1000)
    return {**base, "run_id": f"{base['run_id']}-n{ranks}", "sweep": f"ranks={ranks}",
            "sweep_ranks": ranks, "ranks": ranks,
            "images_per_ms": images_per_ms, "iteration_time_mean_s": seconds, "run_dir": f"/r/{fw}-{wl}-{ranks}",
            **extra}
