"""What run.json holds: its sections' fields and their types, the statuses and failure causes, and what
the timing fields mean (timing.definition), declared once for the checks of bench/schema/run.py.

Standard library only, CPython 3.6-clean.
"""

from typing import Optional

from bench import seqaccuracy
from bench.schema.base import NUM, OPT_DICT, OPT_INT, OPT_NUM, OPT_STR

# The workload family whose runs time a collective (bench/collectives) instead of training a model.
COLLECTIVE_FAMILY = "collective"

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
# results.authors_accuracy of a sequence model's epoch run (bench/seqaccuracy.py; optional: runs before it, failed
# runs and other models lack it): the final weights' test accuracy under each definition, in [0, 1] or null.
RUN_AUTHORS_ACCURACY_FIELDS = {name: OPT_NUM for name in seqaccuracy.DEFINITIONS}


def failure_kind(failure: Optional[dict]) -> Optional[str]:
    """SETUP for a failure of the setup (SETUP_CAUSES: not a result, redone), RESULT for a failure of the
    framework under test (RESULT_CAUSES: a result), None for an ok run's (no failure)."""
    if not failure:
        return None
    return SETUP if failure.get("cause") in SETUP_CAUSES else RESULT
