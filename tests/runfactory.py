"""Hand-made run directories for tests of the analysis, written through bench.schema's writers
(the record starts from schema.run_record of a real run request, as the entrypoint's does).

Values are chosen by the test, not measured: each helper writes exactly what it is told, so a test
can compute the expected table cell by hand.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench import generated
from bench import request as run_request
from bench.schema import (
    LOG_FILE,
    MONITOR_FILE,
    MetricsWriter,
    finish,
    format_monitor_row,
    monitor_header,
    run_record,
    write_run,
)
from campaign import specs

T0 = 1_700_000_000.0  # train_start_unix of the first run; later runs start later
SYSTEM_SHA256 = "5a" * 32  # the packages sha256 of the system runner's runs


def write_monitor(run_dir: Path, start: float, cpu: Sequence[float], rss: Sequence[float],
                  outside: bool = True, gpu: Sequence[float] | None = None,
                  other: Sequence[float] | None = None, gpu_others: Sequence[int] | None = None) -> None:
    """monitor.csv with one sample per second from start, plus (if outside) one sample before the
    training window and one after it, with extreme values a correct window filter must ignore.
    ``other`` and ``gpu_others`` give the contention columns (other_cpu_pct, gpu_other_procs) per
    sample; without them those cells stay empty, as in an older kit's file."""
    rows: list[dict[str, Any]] = []
    if outside:
        rows.append({"time_unix": start - 5, "elapsed_s": 0.0, "cpu_util_pct": 100.0, "proc_rss_mb": 99999.0})
    for i, (c, m) in enumerate(zip(cpu, rss, strict=True)):
        rows.append({"time_unix": start + i, "elapsed_s": 5.0 + i, "cpu_util_pct": c, "proc_rss_mb": m,
                     "cpu_per_core_pct": f"{c};{c}", "gpu_util_pct": gpu[i] if gpu else None,
                     "other_cpu_pct": other[i] if other else None,
                     "gpu_other_procs": gpu_others[i] if gpu_others else None})
    if outside:
        rows.append({"time_unix": start + len(cpu) + 5, "elapsed_s": 99.0, "cpu_util_pct": 0.0,
                     "proc_rss_mb": 88888.0})
    with open(Path(run_dir) / MONITOR_FILE, "w", encoding="utf-8") as fh:
        fh.write(monitor_header())
        for row in rows:
            fh.write(format_monitor_row(row))


def system_environment(framework: str, python: str, gpu: Sequence[float] | None) -> dict[str, Any]:
    """environment.system of a run of the system runner (bench/request.py), as its prepare() records it."""
    return {"python": python, "executable": "/usr/bin/python3", "packages_sha256": SYSTEM_SHA256,
            "packages_source": "pip freeze", "frameworks": {framework: "1.0", "numpy": "2.4.6"},
            "framework_package": framework, "cuda": "12.4" if gpu else None}


def _request_data(spec: dict, source: str) -> dict[str, Any]:
    """A request's data block: prepared arrays of the spec's dataset, or the recipe of data generated in the run."""
    if generated.is_generated(spec):
        return {"dataset": generated.NAME, "source": generated.SOURCE, "arrays_sha256": "ab" * 32, "path": "",
                "train_indices": None, "test_indices": None, "generated": generated.recipe(spec)}
    return {"dataset": spec["dataset"], "source": source, "arrays_sha256": "ab" * 32,
            "path": "/data/prepared/" + spec["dataset"], "train_indices": None, "test_indices": None}


def _package_version(framework: str) -> str:
    # TensorFlow's kernels depend on its release (analysis.runs.blas_loaded: oneDNN by default from 2.9): today's.
    return "2.16.1" if framework == "tensorflow" else "1.0"


def make_run(campaign: Path, framework: str, workload: str, repeat: int, *,
             status: str = "ok", cause: str = "oom", message: str = "CUDA out of memory (fake)",
             training_time: float = 100.0, accuracy: float | None = 0.98,
             curve: Sequence[float] = (0.90, 0.95, 0.98),
             cpu: Sequence[float] = (50.0, 60.0, 70.0), rss: Sequence[float] = (500.0, 600.0, 700.0),
             cached: dict[str, Any] | None = None, device: str = "cpu", profile: str = "paper",
             runner: str = "local", data_source: str = "real", start: float | None = None,
             run_id: str | None = None, gpu: Sequence[float] | None = None,
             epoch_times: Sequence[float] | None = None, era: str = "current", python: str = "3.11.7",
             framework_version: str | None = None, other: Sequence[float] | None = None,
             gpu_others: Sequence[int] | None = None, majority: float | None = None,
             sweep: dict[str, Any] | None = None, environment: dict[str, Any] | None = None,
             host: dict[str, Any] | None = None, results: dict[str, Any] | None = None) -> Path:
    """Write one complete run dir (run.json, metrics.jsonl, monitor.csv, log.txt) and return it.

    ``cached`` overrides run.json's monitor summary (default: the true window means), so a test
    can make the cache disagree with the raw file. A failed run keeps train_end_unix, as the
    entrypoint sets it after every finished epoch. ``gpu`` gives GPU utilization samples (one per
    CPU sample; the host then lists a GPU and the environment a CUDA build); ``epoch_times`` the
    per-epoch times of metrics.jsonl (default: training_time split evenly over the epochs);
    ``other`` and ``gpu_others`` the contention samples (write_monitor); ``majority`` the test rows'
    majority rate (dataset.test_majority_rate, a fraction; unrecorded by default, as in older runs);
    ``sweep`` the study sweep's point the run is at (its threads, when swept, become the run's).
    ``era`` is the run's config.era (a paper-era run's default id carries "-paper"), ``python`` the
    Python it ran on (host.python and environment.python), ``framework_version`` what
    environment.framework_version records (default "<framework>-1.0"); runner "system" records
    environment.system (system_environment). ``environment`` and ``host`` add to (or replace) run.json's
    sections of those names (e.g. environment.python_build, environment.base, host.cpu_flags); ``results`` adds to
    run.json's results (e.g. a sequence run's authors_accuracy).
    """
    era_tag = "" if era == "current" else f"-{era}"
    run_id = run_id or f"{framework}-{workload}-{device}{era_tag}-r{repeat}"
    run_dir = Path(campaign) / run_id
    run_dir.mkdir(parents=True)
    start = T0 + 1000 * repeat if start is None else start
    end = start + len(cpu) - 1
    ok = status == "ok"
    spec = specs.load(workload, profile)
    epochs = len(curve)
    writer = MetricsWriter(run_dir)
    times = list(epoch_times) if epoch_times is not None else [training_time / epochs] * epochs
    for epoch, (acc, t) in enumerate(zip(curve, times, strict=True), 1):
        writer.write({"epoch": epoch, "loss": 1.0 / epoch, "train_accuracy": acc, "test_accuracy": acc,
                      "epoch_time_s": t, "eval_time_s": 1.0, "end_unix": start + epoch})
    writer.close()
    write_monitor(run_dir, start, cpu, rss, gpu=gpu, other=other, gpu_others=gpu_others)
    (run_dir / LOG_FILE).write_text("fake training log\n", encoding="utf-8")
    summary = {"interval_s": 1.0, "samples": len(cpu), "cpu_util_mean_pct": sum(cpu) / len(cpu),
               "mem_mean_mb": sum(rss) / len(rss), "mem_peak_mb": max(rss),
               "gpu": "no GPU: NVML library not found"}
    if gpu:
        summary.update(gpu="measured", gpu_util_mean_pct=sum(gpu) / len(gpu))
    if other:  # samples 1 s apart on 2 cores (write_monitor)
        summary.update(other_cpu_s=sum(other) / 100, other_cpu_share_pct=sum(other) / (2 * len(other)),
                       other_cpu_mean_pct=sum(other) / len(other))
    if gpu_others:
        summary.update(gpu_other_procs_max=max(gpu_others))
    summary.update(cached or {})
    req = run_request.make(
        framework=framework, era=era, workload=workload, profile=profile, spec=spec,
        data=_request_data(spec, data_source),
        device=device, threads=(sweep or {}).get("threads", 2),
        seed=repeat - 1, repeat=repeat, campaign=Path(campaign).name, runner=runner,
        env_id=SYSTEM_SHA256 if runner == "system" else "cd" * 32,
        image_digest="sha256:" + "ef" * 32 if runner == "docker" else None,
        system=system_environment(framework, python, gpu) if runner == "system" else None, sweep=sweep)
    record = run_record(req, host={"hostname": "testhost", "cpu_model": "Fake CPU", "cpu_count": 2,
                                   "cpu_physical_cores": 2,
                                   "mem_total_mb": 4096, "os": "Linux", "python": python,
                                   "gpus": [{"name": "Fake GPU 16GB"}] if gpu else []})
    record["run_id"] = run_id  # readable names in the tests' tables
    record["environment"].update(
        framework_version=framework_version or f"{framework}-1.0", packages={framework: _package_version(framework)},
        python=python,
        framework_build={framework: "1.0", **({"cuda": "12.4", "cudnn": "9.1"} if gpu else {})})
    record["environment"].update(environment or {})
    record["host"].update(host or {})
    record["device_used"].update(device_name="cpu", threads=2, kernels={"conv": "onednn"})
    record["model"]["trainable_params"] = 1_199_882
    if majority is not None:
        record["dataset"]["test_majority_rate"] = majority
    record["timing"].update(training_time_s=training_time if ok else None, eval_time_s=3.0, setup_time_s=1.0,
                            train_start_unix=start, train_end_unix=end)
    record["results"].update(test_accuracy=accuracy if ok else None, final_loss=0.1,
                             epochs_completed=epochs if ok else 1)
    record["results"].update(results or {})
    record["monitor"] = summary
    finish(record, None if ok else {"cause": cause, "message": message})
    record.update(started_at="2026-11-23T10:00:00+00:00", finished_at="2026-11-23T10:05:00+00:00")
    write_run(run_dir, record)
    return run_dir
