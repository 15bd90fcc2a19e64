"""Hand-made runs of Wu et al.'s experiments for the analysis tests: tests.runfactory.make_run's run folder at a
sweep point (the point's batch size or learning rate written into the resolved spec, as campaign/study.py does),
with the BLAS its process recorded (run.json environment.libraries / library_settings, as bench/blas.py writes
them) and the machine's CPU split in monitor.csv (user, system, iowait: bench/monitor.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.schema import MONITOR_FILE, format_monitor_row, monitor_header, read_monitor, read_run, write_run
from tests.runfactory import make_run

OPENBLAS = {"kind": "blas", "api": "openblas", "filepath": "/usr/lib/x86_64-linux-gnu/libopenblas.so.0",
            "version": "0.3.21", "num_threads": 2, "threading_layer": "pthreads", "architecture": "Haswell"}
MKL = {**OPENBLAS, "api": "mkl", "filepath": "/env/lib/libmkl_rt.so.2", "threading_layer": "gnu",
       "architecture": None}
# What TensorFlow's oneDNN switch was in the run's process, per sweep value (bench/blas_backends.py).
ONEDNN_SETTING = {"eigen": "0", "onednn": "1"}


def _point_id(sweep: dict[str, Any] | None) -> str:
    return "".join(f"-{axis[0]}{value}" for axis, value in sorted((sweep or {}).items()))


def make_wu_run(campaign: Path, framework: str, workload: str, repeat: int = 1, *,
                sweep: dict[str, Any] | None = None, training_time: float = 100.0, accuracy: float = 0.98,
                cpu_split: tuple[float, float, float] | None = None, loaded: str | None = None,
                eval_time: float | None = None, **kwargs: Any) -> Path:
    """One ok run of a Wu workload at a sweep point (None: the baseline), taking training_time seconds to a test
    accuracy (a fraction). ``cpu_split``: the machine's user, system and iowait percent in every monitor sample;
    ``loaded``: the backend its record says did the work ('eigen'/'onednn' for TensorFlow's switch, 'openblas' or
    'mkl' for a loaded library; None: nothing recorded, as runs before bench/blas.py); ``eval_time``:
    timing.eval_time_s (the sum of the per-epoch test passes)."""
    run_id = f"{framework}-{workload}{_point_id(sweep)}-r{repeat}"
    run_dir = make_run(campaign, framework, workload, repeat, sweep=sweep, run_id=run_id,
                       training_time=training_time, accuracy=accuracy, **kwargs)
    run = read_run(run_dir)
    training = run["spec"]["training"]
    if sweep and "batch_size" in sweep:
        training["batch_size"] = sweep["batch_size"]
    if sweep and "learning_rate" in sweep:
        training["optimizer"] = {**training["optimizer"], "lr": sweep["learning_rate"]}
    if loaded in ONEDNN_SETTING:
        run["environment"]["library_settings"] = {"TF_ENABLE_ONEDNN_OPTS": ONEDNN_SETTING[loaded]}
    elif loaded is not None:
        run["environment"]["libraries"] = [{"openblas": OPENBLAS, "mkl": MKL}[loaded]]
    if eval_time is not None:
        run["timing"]["eval_time_s"] = eval_time
    if cpu_split is not None:
        _write_split(run_dir, run, cpu_split)
    write_run(run_dir, run)
    return run_dir


def _write_split(run_dir: Path, run: dict[str, Any], split: tuple[float, float, float]) -> None:
    """Every monitor sample (in the training window and out of it) with the same user / system / iowait shares, and
    run.json's cached means to match."""
    user, system, iowait = split
    samples = [{**s, "cpu_user_pct": user, "cpu_system_pct": system, "cpu_iowait_pct": iowait}
               for s in read_monitor(run_dir)]
    with open(run_dir / MONITOR_FILE, "w", encoding="utf-8") as fh:
        fh.write(monitor_header())
        for sample in samples:
            fh.write(format_monitor_row(sample))
    run["monitor"].update(cpu_user_mean_pct=user, cpu_system_mean_pct=system, cpu_iowait_mean_pct=iowait)
