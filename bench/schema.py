"""The run artifact schema, defined once and checked on every write and every read.

A run directory holds five files (metrics.jsonl or iterations.csv by its protocol, bench/measurement.py):

- ``request.json``  the run request it was made from (bench/request.py), so it can be run again.
- ``run.json``      one object: configuration, versions, host, timings, status, summaries.
- ``metrics.jsonl`` one object per finished epoch (epoch protocol only).
- ``iterations.csv`` one row per timed mini-batch, warm-up included (iterations and inference protocols only).
- ``collective.csv`` one row per size, repetition and rank of a timed collective (family
  "collective" only: bench/collectives).
- ``monitor.csv``   one row per monitor sample (1 s), header row first.
- ``log.txt``       free-form output of the training process.

Every object carries ``schema_version``; readers refuse versions they do not know, so an old
checker never silently misreads a newer run. Version 1 run.json files (before the request and
the era existed) are read as version 2 with era 'current' and threads unknown.

Standard library only, CPython 3.6-clean: the entrypoint inside every image writes these files,
and the host's campaign and analysis read them.
"""

import csv
import datetime
import json
import math
from pathlib import Path
from typing import Optional

import numpy as np

from bench import atomic, blas, generated
from bench.measurement import INFERENCE, ITERATIONS, TIMED_BATCHES
from bench.request import WRAPPERS, container_problem, limits_problem, system_environment_problem

SCHEMA_VERSION = 2
READABLE_VERSIONS = (1, 2)

RUN_FILE = "run.json"
# The workload family whose runs time a collective (bench/collectives) instead of training a model.
COLLECTIVE_FAMILY = "collective"
METRICS_FILE = "metrics.jsonl"
ITERATIONS_FILE = "iterations.csv"
COLLECTIVE_FILE = "collective.csv"
MONITOR_FILE = "monitor.csv"
LOG_FILE = "log.txt"

STATUSES = ("ok", "failed")
# Why a run failed (failure.cause), of two kinds (failure_kind()). Failures of the framework under test are
# results and stay: a NaN or infinite loss, out of memory, the study's time limit, a crash inside training,
# killed by a signal (most often the out-of-memory killer).
RESULT_CAUSES = ("nan", "oom", "timeout", "crash", "killed")
# Failures of the setup are not results, and the next run of the campaign redoes them (campaign/execute.py):
# cancelled (a scheduler took the run away: scancel, preemption), missing-library (the machine or the
# environment lacks a library or tool the framework needs), bad-data (the data could not be read or is not
# the data the request names), invalid-setting (the kit refused the request: a UsageError in the run).
SETUP_CAUSES = ("cancelled", "missing-library", "bad-data", "invalid-setting")
FAILURE_CAUSES = RESULT_CAUSES + SETUP_CAUSES
RESULT, SETUP = "result", "setup"

NUM = (int, float)
OPT_NUM = (int, float, type(None))
OPT_INT = (int, type(None))
OPT_STR = (str, type(None))
OPT_DICT = (dict, type(None))

# What the timing fields mean, recorded in every run.json (timing.definition).
TIMING_DEFINITION = (
    "training_time_s = sum over epochs of the training pass (device synchronized before each clock "
    "read); eval_time_s = sum of per-epoch test passes; setup_time_s = model build and data loading "
    "before epoch 1. The DLBench notebooks' wall time = training_time_s + eval_time_s."
)
# timing.definition of an iterations-protocol run (timing.protocol "iterations").
ITERATION_TIMING_DEFINITION = (
    "iterations protocol: warmup_iterations mini-batches, then measured_iterations measured ones, each "
    "timed alone around one training step (forward, backward, update) with the device synchronized "
    "before each clock read (iterations.csv has every step); iteration_time_s = statistics of the "
    "measured steps only; training_time_s = their sum, train_start_unix/train_end_unix bound them; "
    "warmup_time_s = sum of the warm-up steps; eval_time_s = one test pass after the measured steps; "
    "setup_time_s = model build and data loading before the first step."
)

# timing.definition of an inference-protocol run (timing.protocol "inference": bench/inference.py).
INFERENCE_TIMING_DEFINITION = (
    "inference protocol: warmup_iterations mini-batches, then measured_iterations measured ones, each timed "
    "alone around one forward pass in the framework's inference mode (no gradient, no update; the outputs "
    "copied to the host) with the device synchronized before each clock read (iterations.csv has every batch, "
    "its loss column the mean of the batch's outputs); iteration_time_s = statistics of the measured batches "
    "only; training_time_s = their sum (nothing is trained), train_start_unix/train_end_unix bound them; "
    "warmup_time_s = sum of the warm-up batches; eval_time_s = 0 (no test pass); setup_time_s = model build "
    "and data loading before the first batch. results.s_per_1000_images = 1000 x mean / batch_size."
)

# Field name -> accepted types. Nested dicts are checked one level down where listed.
RUN_FIELDS = {
    "schema_version": (int,),
    "run_id": (str,),
    "status": (str,),
    "failure": OPT_DICT,  # {"cause": one of FAILURE_CAUSES, "message": str}
    "config": (dict,),
    "spec": (dict,),
    "dataset": (dict,),
    "environment": (dict,),
    "host": (dict,),
    "device_used": (dict,),
    "model": (dict,),
    "timing": (dict,),
    "results": (dict,),
    "monitor": (dict,),
    "started_at": (str,),
    "finished_at": OPT_STR,
}
RUN_CONFIG_FIELDS = {
    "framework": (str,),
    "era": (str,),
    "workload": (str,),
    "profile": (str,),
    "device": (str,),
    "seed": (int,),
    "repeat": (int,),
    "campaign": (str,),
    "runner": (str,),
    "threads": OPT_INT,
}
RUN_TIMING_FIELDS = {
    # Sum of the epochs' training passes: what the paper calls training time.
    "training_time_s": OPT_NUM,
    # Sum of the per-epoch test passes (the authors' notebooks timed these too).
    "eval_time_s": OPT_NUM,
    # Model construction, data loading into the framework, compilation before epoch 1.
    "setup_time_s": OPT_NUM,
    "train_start_unix": OPT_NUM,
    "train_end_unix": OPT_NUM,
    "definition": (str,),
}
# The iterations protocol's timing fields (optional: absent from epoch-protocol runs, whose run.json
# stays as it was); all present when timing.protocol is "iterations" or "inference" (TIMED_BATCHES).
# iteration_time_s is null until the measured steps are done (a failed run), then ITERATION_STATS of the
# measured steps' seconds.
RUN_ITERATION_TIMING_FIELDS = {
    "protocol": (str,),
    "warmup_iterations": (int,),
    "measured_iterations": (int,),
    "warmup_time_s": OPT_NUM,
    "iteration_time_s": OPT_DICT,
}
# timing.definition of a collective run (workload family "collective": bench/collectives).
COLLECTIVE_TIMING_DEFINITION = (
    "collective: for each message size, warm-up repetitions then timed ones of the framework's own "
    "collective over `ranks` processes; each repetition is timed on every rank around the one call, after a "
    "barrier and with the device synchronized before the second clock read (collective.csv has every "
    "rank's time); a repetition's time is the slowest rank's (the collective is done only when every "
    "rank has its result); training_time_s = the sum of the timed repetitions' times, "
    "setup_time_s = starting the ranks and their process group."
)
# results.collective of a collective run (required when it is ok; absent from every other run).
# algbw and busbw as nccl-tests defines them (bus_bandwidth), in GB/s (10^9 bytes per second).
RUN_COLLECTIVE_FIELDS = {
    "op": (str,),
    "backend": (str,),
    "dtype": (str,),
    "ranks": (int,),
    "warmup": (int,),
    "repetitions": (int,),
    "time_basis": (str,),
    "sizes": (list,),
}
RUN_COLLECTIVE_SIZE_FIELDS = {
    "floats": (int,), "bytes": (int,), "median_s": NUM, "mean_s": NUM, "min_s": NUM, "max_s": NUM,
    "algbw_gbps": NUM, "busbw_gbps": NUM,
}
# ... and "checked": true or false, whether the run verified every rank's result was the sum.
COLLECTIVE_TIME_BASIS = "max over ranks"
# Seconds per measured iteration: mean, median, sample standard deviation (null for one step),
# extremes and the 5th/95th percentiles (linear interpolation between ranks, NumPy's default).
ITERATION_STATS = ("mean", "median", "std", "min", "max", "p5", "p95")
# dataset.raw_files (optional: runs before it lack it): {file name: these}, copied from the request.
RUN_RAW_FILE_FIELDS = {"sha256": (str,), "verified": (str,)}
# dataset.generated (only runs on generated data: bench/generated.py): the recipe, as the request had it;
# such runs record no test_majority_rate (random labels: there is no accuracy to clear).
# The monitor summary's contention figures (optional: runs before them lack them), checked when present.
RUN_MONITOR_CONTENTION_FIELDS = {
    "other_cpu_s": OPT_NUM,
    "other_cpu_share_pct": OPT_NUM,
    "other_cpu_mean_pct": OPT_NUM,
    "gpu_other_procs_max": OPT_INT,
}
# device_used.gpu (optional: CPU runs and runs before it lack it): the host GPU the campaign gave the run
# (rank 0's); device_used.gpus (optional): every GPU of a run given several, in rank order.
RUN_GPU_FIELDS = {"index": (int,), "uuid": OPT_STR, "name": OPT_STR}
# environment.limits (optional: runs before it lack it): the request's, the bounds the runner put on the run
# (bench/request.py LIMIT_FIELDS; null: not applied). dataset.path: the request's data.path, relative to the data root.
# environment.libraries (optional: runs before it, and runs off Linux, lack it): every BLAS and OpenMP runtime
# the run's process had loaded when it finished training, read from the process (bench/blas.py; a run of
# several ranks: the process that started them); kind is one of blas.KINDS, api the library (openblas, mkl,
# blis, 'other' for a BLAS that names itself as none of them; gomp, iomp, llvm for OpenMP), filepath the file
# (a framework's own library where the BLAS is linked into it; '<env>/...' inside the run's environment:
# blas.shared_path), the rest what the library itself answers
# (null where it does not say).
RUN_LIBRARY_FIELDS = {"kind": (str,), "api": (str,), "filepath": (str,), "version": OPT_STR,
                      "num_threads": OPT_INT, "threading_layer": OPT_STR, "architecture": OPT_STR}
# environment.library_settings (optional): {variable: value or null when unset} of the variables a loaded
# framework reads to choose its CPU kernels (blas.SETTING_VARS: TensorFlow's TF_ENABLE_ONEDNN_OPTS), as set.
# environment.python_build (optional: runs before it lack it): how the run's Python was built, as the interpreter
# says (bench/pythonbuild.py): configure's feature options, the C compiler and optimization flags, and pgo / lto
# (true or false: whether configure asked for profile-guided and link-time optimization).
RUN_PYTHON_BUILD_FIELDS = {"implementation": (str,), "version": (str,), "compiler": OPT_STR, "configure": (list,),
                           "opt": OPT_STR}
PYTHON_BUILD_FLAGS = ("pgo", "lto")
# environment.base (optional: only a run in an image built on the kit's own base, `make base ERA=paper`, has it):
# that base's record, copied from the image's /etc/dlrepro/base.json (bench/pythonbuild.py); pgo is true or false
# (or "yes"/"no", as its label says), configure the options CPython was configured with.
RUN_BASE_FIELDS = {"era": (str,), "debian_release": (str,), "debian_version": (str,), "python": (str,),
                   "source": (str,), "source_sha256": (str,), "source_kind": (str,), "configure": (str, list),
                   "cc": (str,), "departs_from": (str,)}
# Where the base's CPython source came from: python.org's file, accepted at its published sha256, or another file
# named as a stand-in (its sha256 trusted on first use).
BASE_SOURCE_KINDS = ("python.org", "stand-in")
# host.cpu_flags (optional: runs before it, and runs off Linux, lack it): the instruction sets of the host CPU a BLAS
# chooses its kernels by (bench.blas.KERNEL_FLAGS), those it has.
# dataset's split sizes and floor, filled in by the entrypoint once the data is loaded (optional: failed
# runs and runs before them lack them). test_majority_rate: the accuracy of always guessing the most
# frequent label of the test rows (bench.frameworks.common.majority_rate), what a run must clear to
# have learnt anything.
RUN_DATASET_FIELDS = {"train_examples": (int,), "test_examples": (int,), "test_majority_rate": NUM}
RUN_RESULTS_FIELDS = {
    "test_accuracy": OPT_NUM,
    "final_loss": OPT_NUM,
    "epochs_completed": (int,),
}
# results' throughput of an iteration-protocol run (bench/dataparallel.py; optional: runs before it lack it, and
# only iteration-protocol runs may have it; required by an ok run whose config.sweep has ranks): ranks, the
# data-parallel ranks (config.sweep.ranks, else 1), and images_per_ms = the rows one step trains over all ranks
# (ranks x batch) / (mean measured seconds per step x 1000), Shams et al.'s unit.
RUN_THROUGHPUT_FIELDS = {"ranks": (int,), "images_per_ms": OPT_NUM}
# results' throughput of an inference-protocol run (bench/inference.py; optional: runs before it lack it, only
# inference runs may have it, an ok one must): the forward passes' batch_size, images_per_s = batch_size / mean
# measured seconds per batch, s_per_1000_images = 1000 / images_per_s (ilkarman's unit); null until measured.
RUN_INFERENCE_FIELDS = {"batch_size": (int,), "images_per_s": OPT_NUM, "s_per_1000_images": OPT_NUM}

METRIC_FIELDS = {
    "schema_version": (int,),
    "epoch": (int,),
    "loss": NUM,
    "train_accuracy": OPT_NUM,
    "test_accuracy": OPT_NUM,
    "epoch_time_s": NUM,
    "eval_time_s": NUM,
    "end_unix": NUM,
}

# monitor.csv columns, in order. Empty cells mean "not measured" (e.g. no GPU).
MONITOR_COLUMNS = (
    "time_unix",
    "elapsed_s",
    "cpu_util_pct",  # mean over cores of each core's active share (dlbench Eq. 1-2)
    "cpu_user_pct",
    "cpu_system_pct",
    "cpu_iowait_pct",
    "cpu_per_core_pct",  # ';'-joined active share of each core
    "proc_cpu_pct",  # the run's process tree, 100 = one core
    "proc_rss_mb",  # resident memory of the run's process tree
    "sys_mem_used_mb",
    "gpu_util_pct",
    "gpu_mem_used_mb",
    "gpu_power_w",
    "gpu_energy_j",
    "gpu_sm_clock_mhz",
    "gpu_temp_c",
    "gpu_throttle_reasons",
    # Contention (bench.monitor's docstring has the rules); older monitor.csv files lack these.
    "other_cpu_pct",  # CPU of processes outside the run's tree and the monitor, 100 = one core
    "gpu_other_procs",  # processes on the run's GPU that are not the run
)
MONITOR_INTERVAL_S = 1.0

# iterations.csv columns, in order: iteration (1-based over warm-up and measured steps together, so
# Shams et al.'s "iterations 101-1100" are rows 101-1100), phase (ITERATION_PHASES), time_s (seconds
# of that step, device synchronized) and loss (the step's mini-batch loss; an inference run's forward pass has
# none: there, the mean of the batch's outputs, checked finite as a loss is).
ITERATION_COLUMNS = ("iteration", "phase", "time_s", "loss")
ITERATION_PHASES = ("warmup", "measured")
# collective.csv columns, in order: floats (message size in elements), phase (ITERATION_PHASES), rep
# (1-based within the size and phase), rank, and time_s (that rank's seconds for that repetition).
COLLECTIVE_COLUMNS = ("floats", "phase", "rep", "rank", "time_s")


class SchemaError(ValueError):
    """An artifact does not match the schema; the message names the file and the field."""


def failure_kind(failure: Optional[dict]) -> Optional[str]:
    """SETUP for a failure of the setup (SETUP_CAUSES: not a result, redone), RESULT for a failure of the
    framework under test (RESULT_CAUSES: a result), None for an ok run's (no failure)."""
    if not failure:
        return None
    return SETUP if failure.get("cause") in SETUP_CAUSES else RESULT


def _check_device_gpus(obj: dict, where: str) -> None:
    """device_used.gpu (rank 0's GPU) and device_used.gpus (every GPU of a run given several), when present."""
    if "gpu" in obj["device_used"]:
        _check_fields(obj["device_used"]["gpu"], RUN_GPU_FIELDS, f"{where}: device_used.gpu")
    if "gpus" in obj["device_used"]:
        gpus = obj["device_used"]["gpus"]
        if not isinstance(gpus, list) or len(gpus) < 2:
            raise SchemaError(f"{where}: device_used.gpus must list the run's GPUs (two or more), got {gpus!r}")
        for i, gpu in enumerate(gpus):
            _check_fields(gpu, RUN_GPU_FIELDS, f"{where}: device_used.gpus[{i}]")


def _check_fields(obj, fields, where):
    if not isinstance(obj, dict):
        raise SchemaError(f"{where}: expected an object, got {type(obj).__name__}")
    for name, types in fields.items():
        if name not in obj:
            raise SchemaError(f"{where}: missing field '{name}'")
        value = obj[name]
        # bool is an int subclass; a True where a number belongs is a bug, not a number.
        if isinstance(value, bool) or not isinstance(value, types):
            raise SchemaError(
                f"{where}: field '{name}' has type {type(value).__name__}, "
                f"expected {' or '.join(t.__name__ for t in types)}"
            )
        if isinstance(value, float) and not math.isfinite(value):
            raise SchemaError(f"{where}: field '{name}' is {value}; write null for 'no value'")


def _check_version(obj, where, versions=(SCHEMA_VERSION,)):
    version = obj.get("schema_version")
    if version not in versions:
        raise SchemaError(
            f"{where}: schema_version {version!r} is not supported (this kit reads "
            f"{', '.join(str(v) for v in versions)}); re-run the campaign or use the kit version that wrote it"
        )


def validate_run(obj: dict, where: str = RUN_FILE) -> dict:
    """Check a run.json object of this schema version; return it unchanged or raise SchemaError."""
    _check_fields(obj, RUN_FIELDS, where)
    _check_version(obj, where)
    _check_fields(obj["config"], RUN_CONFIG_FIELDS, f"{where}: config")
    if "sweep" in obj["config"] and not isinstance(obj["config"]["sweep"], dict):
        raise SchemaError(f"{where}: config.sweep must be an object ({{axis: value}})")
    _check_fields(obj["timing"], RUN_TIMING_FIELDS, f"{where}: timing")
    _check_iteration_timing(obj, where)
    _check_fields(obj["results"], RUN_RESULTS_FIELDS, f"{where}: results")
    _check_collective(obj, where)
    _check_throughput(obj, where)
    _check_inference(obj, where)
    _check_fields(obj["monitor"], {k: t for k, t in RUN_MONITOR_CONTENTION_FIELDS.items() if k in obj["monitor"]},
                  f"{where}: monitor")
    _check_fields(obj["dataset"], {k: t for k, t in RUN_DATASET_FIELDS.items() if k in obj["dataset"]},
                  f"{where}: dataset")
    _check_raw_files(obj["dataset"].get("raw_files"), f"{where}: dataset.raw_files")
    if "generated" in obj["dataset"]:
        problem = generated.recipe_problem(obj["dataset"]["generated"])
        if problem:
            raise SchemaError(f"{where}: dataset: {problem}")
    _check_device_gpus(obj, where)
    _check_libraries(obj["environment"], where)
    _check_build(obj, where)
    if obj["config"]["runner"] in ("docker",) + WRAPPERS:
        # A container run names the exact image it ran in.
        image = obj["environment"].get("image_digest")
        if not isinstance(image, str) or "sha256:" not in image:
            raise SchemaError(f"{where}: an image run needs environment.image_digest (sha256:... or name@sha256:...)")
    # A system run names the environment it found (no kit image or lock stands behind it).
    system_problem = (system_environment_problem(obj["config"]["runner"], obj["environment"])
                      or container_problem(obj["config"]["runner"], obj["environment"])
                      or limits_problem(obj["environment"]))
    if system_problem:
        raise SchemaError(f"{where}: {system_problem}")
    if obj["status"] not in STATUSES:
        raise SchemaError(f"{where}: status {obj['status']!r} is not one of {STATUSES}")
    failure = obj["failure"]
    if obj["status"] == "failed":
        if not failure or failure.get("cause") not in FAILURE_CAUSES:
            raise SchemaError(f"{where}: a failed run needs failure.cause in {FAILURE_CAUSES}")
    elif failure is not None:
        raise SchemaError(f"{where}: status ok but failure is set")
    return obj


def _check_iteration_timing(obj, where):
    """timing's iterations-protocol fields: none (epoch protocol) or all of them, consistent."""
    timing = obj["timing"]
    if not any(name in timing for name in RUN_ITERATION_TIMING_FIELDS):
        return
    _check_fields(timing, RUN_ITERATION_TIMING_FIELDS, f"{where}: timing")
    if timing["protocol"] not in TIMED_BATCHES:
        allowed = " or ".join(repr(p) for p in TIMED_BATCHES)
        raise SchemaError(f"{where}: timing.protocol {timing['protocol']!r} is not {allowed} "
                          "(the epoch protocol writes no protocol field)")
    if timing["warmup_iterations"] < 0 or timing["measured_iterations"] < 1:
        raise SchemaError(f"{where}: timing needs warmup_iterations >= 0 and measured_iterations >= 1")
    stats = timing["iteration_time_s"]
    if stats is None:
        if obj["status"] == "ok":
            raise SchemaError(f"{where}: an ok iterations run needs timing.iteration_time_s")
        return
    _check_fields(stats, dict.fromkeys(ITERATION_STATS, OPT_NUM), f"{where}: timing.iteration_time_s")
    if any(stats[name] is None for name in ITERATION_STATS if name != "std"):
        raise SchemaError(f"{where}: timing.iteration_time_s needs every statistic but std")


def _check_collective(obj, where):
    """results.collective: required by an ok run of the collective family, refused elsewhere, well-formed."""
    table = obj["results"].get("collective")
    if obj["spec"].get("family") != COLLECTIVE_FAMILY:
        if table is not None:
            raise SchemaError(f"{where}: results.collective is only for workloads of family {COLLECTIVE_FAMILY!r}")
        return
    if table is None:
        if obj["status"] == "ok":
            raise SchemaError(f"{where}: an ok collective run needs results.collective")
        return
    _check_fields(table, RUN_COLLECTIVE_FIELDS, f"{where}: results.collective")
    if table["ranks"] < 1 or table["repetitions"] < 1 or table["warmup"] < 0 or not table["sizes"]:
        raise SchemaError(f"{where}: results.collective needs ranks >= 1, repetitions >= 1, warmup >= 0 and sizes")
    for number, entry in enumerate(table["sizes"]):
        _check_fields(entry, RUN_COLLECTIVE_SIZE_FIELDS, f"{where}: results.collective.sizes[{number}]")
        if not isinstance(entry.get("checked"), bool):
            raise SchemaError(f"{where}: results.collective.sizes[{number}] needs checked = true or false")


def _check_throughput(obj, where):
    """results.ranks and results.images_per_ms: both or neither, only on iteration-protocol runs, ranks equal
    to the sweep's (1 without), required by an ok run that sweeps ranks."""
    results = obj["results"]
    present = [name for name in RUN_THROUGHPUT_FIELDS if name in results]
    swept = (obj["config"].get("sweep") or {}).get("ranks")
    if not present:
        if swept is not None and obj["status"] == "ok":
            raise SchemaError(f"{where}: an ok run of a ranks sweep needs results.ranks and results.images_per_ms")
        return
    if len(present) != len(RUN_THROUGHPUT_FIELDS):
        raise SchemaError(f"{where}: results.ranks and results.images_per_ms come together")
    if obj["timing"].get("protocol") != ITERATIONS:
        raise SchemaError(f"{where}: results.ranks and images_per_ms are only for iteration-protocol runs")
    _check_fields(results, RUN_THROUGHPUT_FIELDS, f"{where}: results")
    want = 1 if swept is None else swept
    if results["ranks"] != want:
        raise SchemaError(f"{where}: results.ranks {results['ranks']} is not the run's rank count {want!r} "
                          "(config.sweep.ranks, else 1)")
    if results["images_per_ms"] is not None and results["images_per_ms"] <= 0:
        raise SchemaError(f"{where}: results.images_per_ms {results['images_per_ms']} must be positive (or null)")


def _check_inference(obj, where):
    """results' inference figures (RUN_INFERENCE_FIELDS): all or none, only on inference-protocol runs, required
    by an ok one, positive and consistent (s_per_1000_images = 1000 / images_per_s)."""
    results = obj["results"]
    present = [name for name in RUN_INFERENCE_FIELDS if name in results]
    inference = obj["timing"].get("protocol") == INFERENCE
    if not present:
        if inference and obj["status"] == "ok":
            raise SchemaError(f"{where}: an ok inference run needs results.{', '.join(RUN_INFERENCE_FIELDS)}")
        return
    if not inference:
        raise SchemaError(f"{where}: results.{present[0]} is only for inference-protocol runs")
    _check_fields(results, RUN_INFERENCE_FIELDS, f"{where}: results")
    rate, per_1000 = results["images_per_s"], results["s_per_1000_images"]
    if results["batch_size"] < 1 or (rate is None) != (per_1000 is None) or (rate is not None and rate <= 0):
        raise SchemaError(f"{where}: results needs batch_size >= 1 and images_per_s, s_per_1000_images both "
                          "positive (or both null)")
    if rate is not None and not math.isclose(rate * per_1000, 1000.0, rel_tol=1e-9):
        raise SchemaError(f"{where}: results.s_per_1000_images {per_1000} is not 1000 / images_per_s {rate}")
    if obj["status"] == "ok" and rate is None:
        raise SchemaError(f"{where}: an ok inference run needs results.images_per_s and s_per_1000_images")


def _check_raw_files(raw_files, where):
    """dataset.raw_files, when present: {file name: {"sha256", "verified"}}."""
    if raw_files is None:
        return
    if not isinstance(raw_files, dict):
        raise SchemaError(f"{where}: expected an object, got {type(raw_files).__name__}")
    for name, entry in sorted(raw_files.items()):
        _check_fields(entry, RUN_RAW_FILE_FIELDS, f"{where}.{name}")


def _check_libraries(environment, where):
    """environment.libraries and environment.library_settings, when present."""
    libraries = environment.get("libraries")
    if libraries is not None:
        if not isinstance(libraries, list):
            raise SchemaError(f"{where}: environment.libraries must be a list of loaded libraries")
        for i, entry in enumerate(libraries):
            at = f"{where}: environment.libraries[{i}]"
            _check_fields(entry, RUN_LIBRARY_FIELDS, at)
            if entry["kind"] not in blas.KINDS:
                raise SchemaError(f"{at}: kind {entry['kind']!r} is not one of {blas.KINDS}")
            if not entry["filepath"].startswith(("/", blas.ENV_PREFIX + "/")):
                raise SchemaError(f"{at}: filepath {entry['filepath']!r} is neither the absolute path of the loaded "
                                  f"file nor its path in the run's environment ({blas.ENV_PREFIX}/...)")
    settings = environment.get("library_settings")
    if settings is not None and (not isinstance(settings, dict) or not all(
            isinstance(k, str) and isinstance(v, OPT_STR) for k, v in settings.items())):
        raise SchemaError(f"{where}: environment.library_settings must be {{variable: value or null}}")


def _check_build(obj, where):
    """environment.python_build, environment.base and host.cpu_flags, when present."""
    environment = obj["environment"]
    if "python_build" in environment:
        build = environment["python_build"]
        at = f"{where}: environment.python_build"
        _check_fields(build, RUN_PYTHON_BUILD_FIELDS, at)
        if not all(isinstance(build.get(flag), bool) for flag in PYTHON_BUILD_FLAGS):
            raise SchemaError(f"{at} needs {' and '.join(PYTHON_BUILD_FLAGS)} true or false")
        if not all(isinstance(option, str) for option in build["configure"]):
            raise SchemaError(f"{at}.configure must be a list of configure options")
    if "base" in environment:
        problem = base_problem(environment["base"])
        if problem:
            raise SchemaError(f"{where}: environment.base: {problem}")
    flags = (obj["host"] or {}).get("cpu_flags")
    if flags is not None and (not isinstance(flags, list) or not all(isinstance(f, str) for f in flags)):
        raise SchemaError(f"{where}: host.cpu_flags must be a list of CPU flag names")


def base_problem(base) -> Optional[str]:
    """Why `base` is no base record run.json can hold (RUN_BASE_FIELDS: /etc/dlrepro/base.json), or None."""
    try:
        _check_fields(base, RUN_BASE_FIELDS, "base record")
    except SchemaError as exc:
        return str(exc)
    if base["source_kind"] not in BASE_SOURCE_KINDS:
        return f"source_kind {base['source_kind']!r} is not one of {BASE_SOURCE_KINDS}"
    if base.get("pgo") not in (True, False, "yes", "no"):
        return f"pgo {base.get('pgo')!r} is not true, false, 'yes' or 'no'"
    return None


def _upgrade(obj):
    """A version 1 run.json as version 2: every run before the era existed ran the current era."""
    if isinstance(obj, dict) and obj.get("schema_version") == 1 and isinstance(obj.get("config"), dict):
        obj = dict(obj, schema_version=SCHEMA_VERSION)
        obj["config"] = dict(obj["config"])
        obj["config"].setdefault("era", "current")
        obj["config"].setdefault("threads", None)
    return obj


def validate_metric(obj: dict, where: str = METRICS_FILE) -> dict:
    """Check one metrics.jsonl record; return it unchanged or raise SchemaError."""
    _check_fields(obj, METRIC_FIELDS, where)
    _check_version(obj, where, READABLE_VERSIONS)
    return obj


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def run_record(request: dict, host: Optional[dict] = None, failure: Optional[dict] = None) -> dict:
    """The run.json of a run request before its outcome is known: the one constructor of a record.

    The entrypoint makes it before training (status 'failed', cause 'crash', "did not finish", until
    finish() says otherwise); the host makes it for a run whose process died without writing one,
    with the failure it observed. `request` is a validated run request (bench/request.py).
    """
    data = request["data"]
    env = request["environment"]
    environment = {"runner": request["runner"], "env_id": env["env_id"], "image_digest": env["image_digest"]}
    if "system" in env:  # the system runner's record of the environment it found
        environment["system"] = env["system"]
    if "container" in env:  # the wrapper's image a container run ran in
        environment["container"] = env["container"]
    if "limits" in env:  # the bounds the runner put on the run (bench/request.py LIMIT_FIELDS)
        environment["limits"] = env["limits"]
    config = {key: request[key] for key in RUN_CONFIG_FIELDS}
    if request.get("sweep"):  # the study sweep's point the run is at (absent: no sweep)
        config["sweep"] = request["sweep"]
    return {
        "schema_version": SCHEMA_VERSION,
        "run_id": request["run_id"],
        "status": "failed",
        "failure": failure or {"cause": "crash", "message": "did not finish"},
        "config": config,
        "spec": request["spec"],
        "dataset": _dataset_record(data),
        "environment": environment,
        "host": host or {},
        "device_used": {"requested": request["device"]},
        "model": {},
        "timing": {"training_time_s": None, "eval_time_s": None, "setup_time_s": None,
                   "train_start_unix": None, "train_end_unix": None, "definition": TIMING_DEFINITION},
        "results": {"test_accuracy": None, "final_loss": None, "epochs_completed": 0},
        "monitor": {},
        "started_at": _now(),
        "finished_at": None,
    }


def _dataset_record(data: dict) -> dict:
    """run.json's dataset section from the request's data (raw_files only where the request has them)."""
    # sha256: the planned digest until the entrypoint has hashed the arrays it loads (bench/prepared.py
    # load, which refuses others); it then records that digest, of the bytes trained on.
    dataset = {"name": data["dataset"], "source": data["source"], "sha256": data["arrays_sha256"],
               "path": data["path"]}
    if "raw_files" in data:
        dataset["raw_files"] = data["raw_files"]
    if "generated" in data:  # data made in the run (bench/generated.py): the recipe they were made from
        dataset["generated"] = data["generated"]
    return dataset


def finish(record: dict, failure: Optional[dict]) -> dict:
    """Close a record: status ok when `failure` is None, else failed with it; stamp finished_at."""
    record["status"] = "ok" if failure is None else "failed"
    record["failure"] = failure
    record["finished_at"] = _now()
    return record


def write_run(run_dir: Path, obj: dict) -> None:
    """Validate and atomically write run.json into run_dir."""
    validate_run(obj, str(Path(run_dir) / RUN_FILE))
    atomic.write_text(Path(run_dir) / RUN_FILE, json.dumps(obj, indent=2, sort_keys=True) + "\n")


def read_run(run_dir: Path) -> dict:
    """Read and validate run.json from run_dir (version 1 files are upgraded on read)."""
    path = Path(run_dir) / RUN_FILE
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise SchemaError(f"{path}: not valid JSON ({exc})") from exc
    if isinstance(obj, dict):
        _check_version(obj, str(path), READABLE_VERSIONS)
    return validate_run(_upgrade(obj), str(path))


class MetricsWriter:
    """Appends validated epoch records to metrics.jsonl, flushed line by line."""

    def __init__(self, run_dir: Path) -> None:
        self.path = Path(run_dir) / METRICS_FILE
        self._fh = open(str(self.path), "a", encoding="utf-8")

    def write(self, record: dict) -> None:
        """Append one epoch's record (schema_version added), validated first."""
        record = dict(record, schema_version=SCHEMA_VERSION)
        validate_metric(record, str(self.path))
        self._fh.write(json.dumps(record, sort_keys=True) + "\n")
        self._fh.flush()

    def close(self) -> None:
        """Close the file."""
        self._fh.close()


def read_metrics(run_dir: Path) -> list:
    """Read and validate every record of metrics.jsonl (empty list if the file is absent)."""
    path = Path(run_dir) / METRICS_FILE
    if not path.exists():
        return []
    out = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            out.append(validate_metric(json.loads(line), f"{path}:{lineno}"))
    return out


def iteration_stats(seconds: list) -> Optional[dict]:
    """ITERATION_STATS of per-iteration seconds (None for none); std is the sample one, None for one value.
    Percentiles interpolate linearly between ranks (NumPy's default)."""
    if not seconds:
        return None
    values = np.asarray(seconds, dtype=np.float64)
    p5, median, p95 = (float(v) for v in np.percentile(values, [5, 50, 95]))
    return {"mean": float(values.mean()), "median": median,
            "std": float(values.std(ddof=1)) if len(values) > 1 else None,
            "min": float(values.min()), "max": float(values.max()), "p5": p5, "p95": p95}


def summarize_iterations(rows: list) -> dict:
    """run.json's timing fields of the iterations protocol from iterations.csv rows (read_iterations):
    the counts, warm-up seconds, training_time_s (sum of the measured steps) and iteration_time_s
    (their statistics; the warm-up never counts). The analysis can recompute them with this function."""
    warmup = [r["time_s"] for r in rows if r["phase"] == "warmup"]
    measured = [r["time_s"] for r in rows if r["phase"] == "measured"]
    return {
        "warmup_iterations": len(warmup),
        "measured_iterations": len(measured),
        "warmup_time_s": sum(warmup),
        "training_time_s": sum(measured),
        "iteration_time_s": iteration_stats(measured),
    }


def summarize_inference(stats: Optional[dict], batch_size: int) -> dict:
    """run.json's results of the inference protocol from the measured batches' statistics (iteration_stats,
    None when none was measured) and the batch size: images_per_s = batch_size / mean seconds per batch and
    s_per_1000_images = 1000 / images_per_s (null without a measured batch)."""
    if not stats or stats["mean"] <= 0:
        return {"batch_size": batch_size, "images_per_s": None, "s_per_1000_images": None}
    rate = batch_size / stats["mean"]
    return {"batch_size": batch_size, "images_per_s": rate, "s_per_1000_images": 1000.0 / rate}


def validate_iterations(rows: list, where: str = ITERATIONS_FILE) -> list:
    """Check iterations.csv rows (dicts of ITERATION_COLUMNS): numbered 1, 2, ... in order, every
    warm-up row before every measured one, finite non-negative times and finite losses. Return them."""
    seen_measured = False
    for number, row in enumerate(rows, 1):
        at = f"{where}: iteration {number}"
        if not isinstance(row, dict) or set(row) != set(ITERATION_COLUMNS):
            raise SchemaError(f"{at}: expected the columns {', '.join(ITERATION_COLUMNS)}")
        if isinstance(row["iteration"], bool) or row["iteration"] != number:
            raise SchemaError(f"{at}: numbered {row['iteration']!r}; iterations count 1, 2, ... without gaps")
        if row["phase"] not in ITERATION_PHASES:
            raise SchemaError(f"{at}: phase {row['phase']!r} is not one of {ITERATION_PHASES}")
        if row["phase"] == "warmup" and seen_measured:
            raise SchemaError(f"{at}: a warm-up step after a measured one")
        seen_measured = seen_measured or row["phase"] == "measured"
        for col in ("time_s", "loss"):
            value = row[col]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise SchemaError(f"{at}: {col} {value!r} is not a finite number")
        if row["time_s"] < 0:
            raise SchemaError(f"{at}: time_s {row['time_s']} is negative")
    return rows


def write_iterations(run_dir: Path, rows: list) -> None:
    """Validate and atomically write iterations.csv (header first; floats as Python writes them
    exactly, so a read gives back the same numbers)."""
    path = Path(run_dir) / ITERATIONS_FILE
    validate_iterations(rows, str(path))
    lines = [",".join(ITERATION_COLUMNS)]
    lines += ["{},{},{!r},{!r}".format(r["iteration"], r["phase"], float(r["time_s"]), float(r["loss"]))
              for r in rows]
    atomic.write_text(path, "\n".join(lines) + "\n")


def _read_typed_csv(path: Path, columns: tuple, types: tuple) -> list:
    """The rows of a CSV file whose header must be `columns`, each cell converted by its type in `types`
    (dicts keyed by column); a row with the wrong number of cells or a cell that does not convert is a
    SchemaError naming the line."""
    with open(str(path), newline="", encoding="utf-8") as fh:
        table = list(csv.reader(fh))
    if not table or tuple(table[0]) != columns:
        raise SchemaError(f"{path}: header is not {','.join(columns)}")
    rows = []
    for lineno, cells in enumerate(table[1:], 2):
        try:
            if len(cells) != len(columns):
                raise ValueError
            rows.append({col: kind(cell) for col, kind, cell in zip(columns, types, cells)})
        except ValueError:
            raise SchemaError(f"{path}:{lineno}: expected {len(columns)} cells "
                              f"({','.join(columns)}), got {cells!r}") from None
    return rows


def read_iterations(run_dir: Path) -> list:
    """Read and validate iterations.csv (empty list if the file is absent: an epoch-protocol run)."""
    path = Path(run_dir) / ITERATIONS_FILE
    if not path.exists():
        return []
    rows = _read_typed_csv(path, ITERATION_COLUMNS, (int, str, float, float))
    return validate_iterations(rows, str(path))


def bus_bandwidth(nbytes: int, seconds: float, ranks: int) -> tuple:
    """(algbw, busbw) in bytes per second of an all-reduce of `nbytes` bytes taking `seconds` over `ranks`
    ranks, as nccl-tests defines them (its doc/PERFORMANCE.md): algbw = bytes / time, busbw = algbw *
    2 (n - 1) / n, the rate each rank's link moves data at in a ring all-reduce (0 for one rank)."""
    algbw = nbytes / seconds
    return algbw, algbw * 2.0 * (ranks - 1) / ranks


def validate_collective(rows: list, ranks: int, where: str = COLLECTIVE_FILE) -> list:
    """Check collective.csv rows (dicts of COLLECTIVE_COLUMNS): each size once, positive; within it the
    warm-up repetitions before the measured ones, each phase's repetitions numbered 1, 2, ... with one row
    per rank 0..ranks-1 in order; finite non-negative times. Return them."""
    prev, seen = None, set()
    for lineno, row in enumerate(rows, 2):
        at = f"{where}:{lineno}"
        if not isinstance(row, dict) or set(row) != set(COLLECTIVE_COLUMNS):
            raise SchemaError(f"{at}: expected the columns {', '.join(COLLECTIVE_COLUMNS)}")
        if any(isinstance(row[k], bool) or not isinstance(row[k], int) for k in ("floats", "rep", "rank")):
            raise SchemaError(f"{at}: floats, rep and rank must be whole numbers")
        if row["phase"] not in ITERATION_PHASES:
            raise SchemaError(f"{at}: phase {row['phase']!r} is not one of {ITERATION_PHASES}")
        value = row["time_s"]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise SchemaError(f"{at}: time_s {value!r} is not a finite non-negative number")
        if row["floats"] < 1:
            raise SchemaError(f"{at}: floats {row['floats']} must be at least 1")
        same_block = prev is not None and (prev["floats"], prev["phase"]) == (row["floats"], row["phase"])
        if same_block:
            last = prev["rank"] == ranks - 1
            want = (prev["rep"] + 1, 0) if last else (prev["rep"], prev["rank"] + 1)
        else:
            if prev is not None and prev["rank"] != ranks - 1:
                raise SchemaError(f"{at}: the repetition before lacks ranks {prev['rank'] + 1}..{ranks - 1}")
            same_size = prev is not None and prev["floats"] == row["floats"]
            if same_size and prev["phase"] != "warmup":
                raise SchemaError(f"{at}: a warm-up repetition after a measured one")
            if not same_size and row["floats"] in seen:
                raise SchemaError(f"{at}: size {row['floats']} again; each size's rows come together")
            want = (1, 0)
        if (row["rep"], row["rank"]) != want:
            raise SchemaError(f"{at}: rep {row['rep']} rank {row['rank']}, expected rep {want[0]} rank {want[1]} "
                              "(repetitions count 1, 2, ... with one row per rank in order)")
        seen.add(row["floats"])
        prev = row
    if prev is not None and prev["rank"] != ranks - 1:
        raise SchemaError(f"{where}: the last repetition lacks ranks {prev['rank'] + 1}..{ranks - 1}")
    return rows


def summarize_collective(rows: list, ranks: int) -> list:
    """results.collective.sizes from collective.csv rows (checked false: the run sets it once it has
    verified the sums): per size, in the file's order, the statistics of the measured repetitions, each
    the slowest rank's time (COLLECTIVE_TIME_BASIS), and nccl-tests' algbw and busbw of the median in GB/s.
    The analysis recomputes them from the file with this function."""
    reps = {}
    for row in rows:
        if row["phase"] == "measured":
            key = (row["floats"], row["rep"])
            reps[key] = max(reps.get(key, 0.0), row["time_s"])
    sizes = []
    for floats in sorted({f for f, _ in reps}, key=[r["floats"] for r in rows].index):
        times = np.asarray([t for (f, _), t in sorted(reps.items()) if f == floats], dtype=np.float64)
        median = float(np.median(times))
        nbytes = floats * 4  # float32
        algbw, busbw = bus_bandwidth(nbytes, median, ranks) if median > 0 else (0.0, 0.0)
        sizes.append({"floats": floats, "bytes": nbytes, "median_s": median, "mean_s": float(times.mean()),
                      "min_s": float(times.min()), "max_s": float(times.max()), "algbw_gbps": algbw / 1e9,
                      "busbw_gbps": busbw / 1e9, "checked": False})
    return sizes


def write_collective(run_dir: Path, rows: list, ranks: int) -> None:
    """Validate and atomically write collective.csv (header first; times as Python writes them exactly)."""
    path = Path(run_dir) / COLLECTIVE_FILE
    validate_collective(rows, ranks, str(path))
    lines = [",".join(COLLECTIVE_COLUMNS)]
    lines += ["{},{},{},{},{!r}".format(r["floats"], r["phase"], r["rep"], r["rank"], float(r["time_s"]))
              for r in rows]
    atomic.write_text(path, "\n".join(lines) + "\n")


def read_collective(run_dir: Path, ranks: int) -> list:
    """Read and validate collective.csv (empty list if the file is absent: not a collective run)."""
    path = Path(run_dir) / COLLECTIVE_FILE
    if not path.exists():
        return []
    rows = _read_typed_csv(path, COLLECTIVE_COLUMNS, (int, str, int, int, float))
    return validate_collective(rows, ranks, str(path))


def monitor_header() -> str:
    """The header line of monitor.csv."""
    return ",".join(MONITOR_COLUMNS) + "\n"


def format_monitor_row(row: dict) -> str:
    """One CSV line for a sample; unknown keys are an error, missing keys become empty cells."""
    unknown = set(row) - set(MONITOR_COLUMNS)
    if unknown:
        raise SchemaError(f"{MONITOR_FILE}: unknown columns {sorted(unknown)}")
    cells = []
    for col in MONITOR_COLUMNS:
        value = row.get(col)
        if value is None:
            cells.append("")
        elif isinstance(value, float):
            cells.append(f"{value:.6g}" if col != "time_unix" else f"{value:.3f}")
        else:
            cells.append(str(value))
    return ",".join(cells) + "\n"


def read_monitor(run_dir: Path):
    """Yield monitor.csv rows as dicts of floats (None for empty cells; strings kept for lists).

    A last line cut off by a kill is skipped, not an error: the monitor flushes whole lines.
    """
    path = Path(run_dir) / MONITOR_FILE
    if not path.exists():
        return
    with open(str(path), newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if header is None:
            return
        # Files of older kits lack the columns added since (read as empty cells); a column this kit
        # does not know means a newer kit wrote the file.
        unknown = [col for col in header if col not in MONITOR_COLUMNS]
        if unknown or len(set(header)) != len(header):
            raise SchemaError(f"{path}: header does not match schema version {SCHEMA_VERSION} "
                              f"(unknown or repeated columns {unknown or header})")
        for cells in reader:
            if len(cells) != len(header):
                continue
            row = dict.fromkeys(MONITOR_COLUMNS)
            row.update((col, _cell(col, cell)) for col, cell in zip(header, cells))
            yield row


_TEXT_COLUMNS = {"cpu_per_core_pct", "gpu_throttle_reasons"}


def _cell(col, cell):
    if cell == "":
        return None
    if col in _TEXT_COLUMNS:
        return cell
    return float(cell)


def monitor_window(rows: list, t0: Optional[float] = None, t1: Optional[float] = None) -> list:
    """The samples taken in [t0, t1]; a missing bound is open (a failed run has no end)."""
    return [
        r for r in rows
        if r.get("time_unix") is not None
        and (t0 is None or r["time_unix"] >= t0) and (t1 is None or r["time_unix"] <= t1)
    ]


def summarize_monitor(rows: list, t0: Optional[float] = None, t1: Optional[float] = None) -> dict:
    """run.json's monitor section: means and peaks over the samples taken in [t0, t1] (the training
    window when given). The analysis recomputes it from monitor.csv with this same function."""
    window_rows = monitor_window(rows, t0, t1)

    def values(col):
        return [r[col] for r in window_rows if r.get(col) is not None]

    def mean(col):
        vals = values(col)
        return sum(vals) / len(vals) if vals else None

    def peak(col):
        vals = values(col)
        return max(vals) if vals else None

    energy = values("gpu_energy_j")
    return {
        "interval_s": MONITOR_INTERVAL_S,
        "samples": len(window_rows),
        "cpu_util_mean_pct": mean("cpu_util_pct"),
        "cpu_user_mean_pct": mean("cpu_user_pct"),
        "cpu_system_mean_pct": mean("cpu_system_pct"),
        "cpu_iowait_mean_pct": mean("cpu_iowait_pct"),
        "proc_cpu_mean_pct": mean("proc_cpu_pct"),
        "mem_mean_mb": mean("proc_rss_mb"),
        "mem_peak_mb": peak("proc_rss_mb"),
        "gpu_util_mean_pct": mean("gpu_util_pct"),
        "gpu_mem_peak_mb": peak("gpu_mem_used_mb"),
        "gpu_power_mean_w": mean("gpu_power_w"),
        "gpu_energy_j": (energy[-1] - energy[0]) if len(energy) > 1 else None,
        **other_load(window_rows),
    }


def other_load(window_rows: list) -> dict:
    """Contention over a window's samples: other processes' CPU seconds (other_cpu_pct times each
    sample's interval: the gap to the previous sample, the nominal interval for the first), their
    share of the machine's capacity (all cores over the seconds those samples cover) and mean in
    percent of one core, and the most processes seen on the run's GPU besides the run. None where
    the samples do not record it (monitor.csv of older kits)."""
    other_s = capacity_s = covered_s = 0.0
    measured = 0
    prev_t = None
    for row in window_rows:
        t = row["time_unix"]
        dt = MONITOR_INTERVAL_S if prev_t is None else t - prev_t
        prev_t = t
        other, cores = row.get("other_cpu_pct"), row.get("cpu_per_core_pct")
        if other is None or not cores:
            continue
        measured += 1
        other_s += other / 100.0 * dt
        capacity_s += len(cores.split(";")) * dt
        covered_s += dt
    gpu = [r["gpu_other_procs"] for r in window_rows if r.get("gpu_other_procs") is not None]
    return {
        "other_cpu_s": other_s if measured else None,
        "other_cpu_share_pct": 100.0 * other_s / capacity_s if capacity_s > 0 else None,
        "other_cpu_mean_pct": 100.0 * other_s / covered_s if covered_s > 0 else None,
        "gpu_other_procs_max": int(max(gpu)) if gpu else None,
    }


def iter_run_dirs(root: Path) -> list:
    """Completed run directories below a campaign folder (those holding a run.json)."""
    root = Path(root)
    if not root.is_dir():
        return []
    # Hidden folders hold runs moved aside for a retry; .partial ones are unfinished.
    return sorted(
        p.parent for p in root.glob(f"*/{RUN_FILE}")
        if not p.parent.name.startswith(".") and not p.parent.name.endswith(".partial")
    )
