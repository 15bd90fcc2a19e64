"""A campaign's runs as one pandas DataFrame: the run table, one row per run folder.

Raw files are the source of truth: the CPU and memory means are recomputed from monitor.csv over
the training window, and run.json's monitor summary is only a cache that is checked against them.
Every artifact is read through bench.schema's readers. ``analysis.load`` hands the table to a
notebook; the report reads it through a Campaign (the table plus run.json, the per-epoch records and
what could not be read).
"""

from __future__ import annotations

import re
import statistics
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd

from bench import switches
from bench.schema import (
    RUN_FILE,
    SchemaError,
    iter_run_dirs,
    monitor_window,
    read_metrics,
    read_monitor,
    read_run,
    summarize_monitor,
)
from campaign.study import REAL_AXES, SWEEP_AXES, WORD_AXES

_STR, _INT, _FLOAT = "str", "Int64", "float64"

# The run table's columns in order (tables/runs.csv), each with its pandas dtype: text, whole numbers
# (nullable: a failed run has no epochs count) and measurements (NaN where not measured).
RUN_DTYPES: dict[str, str] = {
    "run_id": _STR, "campaign": _STR, "framework": _STR, "era": _STR, "workload": _STR,
    # The study whose workload it is (the spec's `study`: 'dlbench', 'shi'; empty for specs without one).
    "study": _STR, "dataset": _STR,
    "data_source": _STR, "device": _STR, "profile": _STR, "repeat": _INT, "seed": _INT,
    # A study sweep's point as text for display ('batch_size=16, threads=4'; '' outside a sweep; its axes are the
    # sweep_<axis> columns) and the run's thread count.
    "sweep": _STR, "threads": _INT,
    # The host's physical cores (run.json host.cpu_physical_cores; empty for runs before it was recorded).
    "physical_cores": _INT,
    "status": _STR, "failure_cause": _STR, "failure_message": _STR,
    "training_time_s": _FLOAT, "eval_time_s": _FLOAT, "test_accuracy": _FLOAT,
    # The accuracy of always guessing the test rows' most frequent label (run.json dataset.test_majority_rate,
    # percent): a run at or near it learnt nothing. Empty for runs before the kit recorded it.
    "majority_accuracy": _FLOAT,
    "epochs": _INT, "epochs_planned": _INT,
    # From metrics.jsonl: epoch 1 carries one-off costs (graph building, compilation, warm-up), so it
    # stands apart from the mean of the later epochs (campaign.epochtimes reads them the same way);
    # the last epoch's loss and training accuracy (percent).
    "epoch_time_first_s": _FLOAT, "epoch_time_later_mean_s": _FLOAT,
    # The iteration protocol (bench/iterations.py): seconds per measured mini-batch, warm-up left out.
    # Its spread: the sample standard deviation and the 5th / 95th percentiles of the measured mini-batches;
    # the warm-up's count and seconds (kept apart, as the study does).
    "iteration_time_mean_s": _FLOAT, "iteration_time_median_s": _FLOAT, "iteration_time_std_s": _FLOAT,
    "iteration_time_p5_s": _FLOAT, "iteration_time_p95_s": _FLOAT, "measured_iterations": _INT,
    "warmup_iterations": _INT, "warmup_time_s": _FLOAT,
    # Data-parallel ranks of an iteration-protocol run (bench/dataparallel.py; 1: one device) and its throughput,
    # the rows one step trains over all ranks per millisecond of mean step time (empty for runs before them).
    "ranks": _INT, "images_per_ms": _FLOAT,
    # An inference-protocol run's throughput (bench/inference.py: forward passes only), ilkarman's unit beside
    # images per second (empty for every other run).
    "images_per_s": _FLOAT, "s_per_1000_images": _FLOAT,
    # How the run's GPUs are joined (bench.gpu.links): 'NVLink (12 links)', 'PCIe gen5 x16'; empty on a CPU and
    # for runs before the kit recorded it.
    "gpu_interconnect": _STR,
    "final_loss": _FLOAT, "final_train_accuracy": _FLOAT,
    "cpu_util_mean_pct": _FLOAT, "mem_mean_mb": _FLOAT, "mem_peak_mb": _FLOAT, "gpu_util_mean_pct": _FLOAT,
    # The whole machine's CPU time split as sysstat splits it (percent of all cores: user and nice, system and
    # interrupts, iowait; bench/monitor.py), Wu et al.'s Tables 10, 11 and 22; empty for runs before it was recorded.
    "cpu_user_mean_pct": _FLOAT, "cpu_system_mean_pct": _FLOAT, "cpu_iowait_mean_pct": _FLOAT,
    "monitor_source": _STR, "monitor_samples": _INT,
    # Contention over the training window (bench.schema.other_load): other processes' CPU, and on a
    # GPU the most other processes seen on it; empty for runs whose monitor did not record them.
    "other_cpu_s": _FLOAT, "other_cpu_share_pct": _FLOAT, "other_cpu_mean_pct": _FLOAT,
    "gpu_other_procs_max": _INT,
    "batch_size": _INT, "learning_rate": _FLOAT,
    # The BLAS backend the run asked for (its sweep's `blas`: bench/blas_backends.py; empty outside such a sweep),
    # and the one the run's record says did the work (blas_loaded()).
    "blas": _STR, "blas_loaded": _STR,
    # The performance switches a run asked for (its sweep's cudnn_autotune, rnn_kernel, layout: bench/switches.py;
    # empty outside such a sweep, where each module runs the switch's first value).
    "cudnn_autotune": _STR, "rnn_kernel": _STR, "layout": _STR,
    "trainable_params": _INT, "runner": _STR, "image_digest": _STR, "env_id": _STR, "framework_version": _STR,
    "python": _STR,
    # What a time depends on beside the versions (empty for runs before the kit recorded it): how the run's Python
    # was built ('no PGO, GCC 10.2.1': python_build_text()), the kernels its BLAS chose for the CPU (blas_cores():
    # OpenBLAS's core, e.g. Haswell) and the host's kernel-choosing CPU features (host.cpu_flags); for a run in an
    # image on the kit's own base (`make base ERA=paper`), that base's Debian and CPython source (environment.base).
    "python_build": _STR, "blas_core": _STR, "cpu_flags": _STR, "base_debian": _STR, "base_source": _STR,
    "run_dir": _STR,
    # The sweep point as columns, one per axis (campaign.study.SWEEP_AXES): run.json's config.sweep value, empty
    # where the run's point has no such axis. Which runs form one cell of a sweep is decided on these
    # (analysis.sweeps.sweep_cells), never on the `sweep` text, which is for display only.
    **{f"sweep_{axis}": _STR if axis in WORD_AXES else _FLOAT if axis in REAL_AXES else _INT for axis in SWEEP_AXES},
}
# {sweep axis: its run-table column}
SWEEP_COLUMNS: dict[str, str] = {axis: f"sweep_{axis}" for axis in SWEEP_AXES}
RUN_COLUMNS: tuple[str, ...] = tuple(RUN_DTYPES)

# The software eras a run belongs to (run.json config.era; bench.frameworks.ERAS): the study's exact
# versions, and today's releases.
PAPER_ERA, CURRENT_ERA = "paper", "current"

# The table's row order: runs of one workload together, then framework, era, device, runner, repeat.
ROW_ORDER: tuple[str, ...] = ("workload", "framework", "era", "device", "runner", "repeat")

# The run-table columns taken from the monitor summary (bench.schema.summarize_monitor names).
_MONITOR_SUMMARY_KEYS = ("samples", "cpu_util_mean_pct", "cpu_user_mean_pct", "cpu_system_mean_pct",
                         "cpu_iowait_mean_pct", "mem_mean_mb", "gpu_util_mean_pct", "mem_peak_mb",
                         "other_cpu_s", "other_cpu_share_pct", "other_cpu_mean_pct", "gpu_other_procs_max")

# run.json's cached monitor summary disagrees "noticeably" when both limits are exceeded; the
# absolute floor keeps near-zero values (idle GPU, 0.3 % vs 0.4 %) from raising noise.
DISAGREE_RELATIVE = 0.05
DISAGREE_ABSOLUTE = 1.0


def run_frame(rows: Iterable[dict[str, Any]]) -> pd.DataFrame:
    """Run-table rows (dicts) as a DataFrame with the run table's dtypes.

    Run-table columns the rows lack are added empty, in RUN_COLUMNS order; other keys are kept after them
    (hand-made rows in tests carry only the columns a check reads).
    """
    rows = list(rows)
    extra = list(dict.fromkeys(k for r in rows for k in r if k not in RUN_DTYPES))
    frame = pd.DataFrame.from_records(rows, columns=[*RUN_COLUMNS, *extra])
    return frame.astype(RUN_DTYPES)


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """The frame's rows as dicts of plain Python values, None where a value is missing (NaN, <NA>)."""
    plain = frame.astype(object)
    return plain.where(plain.notna(), None).to_dict("records")


@dataclass
class Campaign:
    """Everything the analysis reads from one campaign folder, or from several analysed together."""

    root: Path
    table: pd.DataFrame  # the run table: one row per run, RUN_COLUMNS, failed runs included
    runs: dict[str, dict]  # run_id -> run.json, for the spec and environment tables
    epochs: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # run_id -> metrics.jsonl records
    problems: list[str] = field(default_factory=list)  # run dirs or files that could not be read
    notes: list[str] = field(default_factory=list)  # raw-vs-cache disagreements and fallbacks
    # Every folder read, in the order given (just [root] for one campaign).
    roots: list[Path] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.roots:
            self.roots = [self.root]

    @property
    def name(self) -> str:
        """The campaign's name: its folder's name, or the folders' names joined by '+'."""
        return "+".join(r.name for r in self.roots)

    @cached_property
    def rows(self) -> list[dict[str, Any]]:
        """The run table's rows as dicts (None where not measured), in the table's order."""
        return records(self.table)

    @property
    def ok_rows(self) -> list[dict[str, Any]]:
        """Rows of the runs that finished."""
        return [r for r in self.rows if r["status"] == "ok"]


# --- Reading -------------------------------------------------------------------------------

# Folders of a campaign that hold no run: the executors' submission batches (campaign/batch.py).
NOT_RUNS = ("batches",)


def load(campaign: str | Path | Sequence[str | Path]) -> pd.DataFrame:
    """The run table of a campaign folder (or of several, e.g. a CPU and a GPU campaign) as a DataFrame.

    One row per run folder, failed runs included (status, failure_cause); columns RUN_COLUMNS. Run folders
    that cannot be read are left out, listed in ``frame.attrs["problems"]`` and warned about; raw-vs-cache
    disagreements are in ``frame.attrs["notes"]``. A folder that does not exist is a UsageError.
    """
    from bench.errors import UsageError

    paths = [Path(campaign)] if isinstance(campaign, str | Path) else [Path(c) for c in campaign]
    missing = [str(p) for p in paths if not p.is_dir()]
    if missing or not paths:
        raise UsageError(f"no campaign folder {' or '.join(missing) or '(none given)'}",
                         "give a results/<campaign> folder (make demo writes results/demo)")
    loaded = load_campaigns(paths)
    frame = loaded.table.copy()
    frame.attrs = {"problems": list(loaded.problems), "notes": list(loaded.notes)}
    if loaded.problems:
        # A notebook shows warnings: a run left out must not pass unseen.
        warnings.warn(f"{len(loaded.problems)} run folder(s) or file(s) could not be read (first: "
                      f"{loaded.problems[0]}); all in frame.attrs['problems']", stacklevel=3)
    return frame


def load_campaign(root: Path | str) -> Campaign:
    """Read every run of a campaign folder into a Campaign.

    A run dir whose run.json fails the schema is listed in ``problems`` and left out; a run whose
    monitor.csv cannot be read keeps its row, with run.json's cached summary and a problem noted.
    ``.partial`` dirs (runs in progress or interrupted) are ignored.
    """
    root = Path(root)
    problems: list[str] = []
    notes: list[str] = []
    runs: dict[str, dict] = {}
    epochs: dict[str, list[dict[str, Any]]] = {}
    rows = []
    run_dirs = list(iter_run_dirs(root))
    listed = {d.name for d in run_dirs}
    if root.is_dir():
        for d in sorted(root.iterdir()):
            if d.is_dir() and d.name not in listed and not d.name.endswith(".partial") \
                    and not d.name.startswith(".") and d.name not in NOT_RUNS:
                problems.append(f"{d}: no {RUN_FILE} (an interrupted run?); left out")
    for run_dir in run_dirs:
        try:
            run = read_run(run_dir)
        except (SchemaError, OSError, UnicodeDecodeError) as exc:
            # SchemaError messages already name the file; others may not.
            where = "" if str(run_dir) in str(exc) else f"{run_dir}: "
            problems.append(f"{where}{exc}; left out")
            continue
        if run["run_id"] in runs:
            # A copied run dir would count twice in every mean: keep the first, report the copy.
            problems.append(f"{run_dir}: run_id {run['run_id']} was already read from another dir; left out")
            continue
        runs[run["run_id"]] = run
        epochs[run["run_id"]] = _read_epochs(run_dir, problems)
        rows.append(run_row(run_dir, run, epochs[run["run_id"]], problems, notes))
    return Campaign(root, _ordered(run_frame(rows)), runs, epochs, problems, notes)


def load_campaigns(roots: Sequence[Path | str]) -> Campaign:
    """Read several campaign folders (e.g. a CPU and a GPU campaign) into one Campaign.

    Runs keep their own folders (links point at them); a run_id seen in an earlier folder is
    left out and listed in ``problems``, as a copied run dir would count twice in every mean.
    """
    paths = [Path(r) for r in roots]
    if not paths:
        raise ValueError("no campaign folder given")
    if len(paths) == 1:
        return load_campaign(paths[0])
    merged = Campaign(root=paths[0], table=run_frame([]), runs={}, roots=paths)
    parts = []
    for path in paths:
        part = load_campaign(path)
        merged.problems += part.problems
        merged.notes += part.notes
        copied = part.table["run_id"].isin(list(merged.runs))
        for run_dir, run_id in part.table.loc[copied, ["run_dir", "run_id"]].itertuples(index=False):
            merged.problems.append(f"{run_dir}: run_id {run_id} was already read from another campaign folder; "
                                   "left out")
        kept = part.table[~copied]
        parts.append(kept)
        for run_id in kept["run_id"]:
            merged.runs[run_id] = part.runs[run_id]
            merged.epochs[run_id] = part.epochs[run_id]
    merged.table = _ordered(pd.concat(parts, ignore_index=True).astype(RUN_DTYPES))
    return merged


def _ordered(table: pd.DataFrame) -> pd.DataFrame:
    """The table in ROW_ORDER (stable: runs equal in every key keep their folders' order)."""
    return table.sort_values(list(ROW_ORDER), kind="stable", ignore_index=True)


def _read_epochs(run_dir: Path, problems: list[str]) -> list[dict[str, Any]]:
    """metrics.jsonl's records; an unreadable file is a problem, not an error (no per-epoch values)."""
    try:
        return read_metrics(run_dir)
    except (SchemaError, ValueError, OSError) as exc:
        problems.append(f"{run_dir}: metrics.jsonl unreadable ({exc}); no per-epoch values")
        return []


def epoch_columns(epochs: Sequence[dict[str, Any]]) -> dict[str, float | None]:
    """The run table's per-epoch columns from one run's metrics.jsonl records (None without epochs)."""
    ordered = sorted(epochs, key=lambda r: r["epoch"])
    if not ordered:
        return {"epoch_time_first_s": None, "epoch_time_later_mean_s": None, "final_loss": None,
                "final_train_accuracy": None}
    later = [float(r["epoch_time_s"]) for r in ordered[1:]]
    last_train = ordered[-1].get("train_accuracy")
    return {
        "epoch_time_first_s": float(ordered[0]["epoch_time_s"]),
        "epoch_time_later_mean_s": statistics.fmean(later) if later else None,
        "final_loss": float(ordered[-1]["loss"]),
        "final_train_accuracy": None if last_train is None else float(last_train) * 100,
    }


def iteration_columns(timing: dict[str, Any]) -> dict[str, Any]:
    """The per-mini-batch figures of an iteration-protocol run (None for epoch-protocol runs)."""
    stats = timing.get("iteration_time_s") or {}
    return {"iteration_time_mean_s": stats.get("mean"), "iteration_time_median_s": stats.get("median"),
            "iteration_time_std_s": stats.get("std"), "iteration_time_p5_s": stats.get("p5"),
            "iteration_time_p95_s": stats.get("p95"), "measured_iterations": timing.get("measured_iterations"),
            "warmup_iterations": timing.get("warmup_iterations"), "warmup_time_s": timing.get("warmup_time_s")}


def sweep_text(point: dict[str, Any] | None) -> str:
    """A sweep point as the tables show it, axes in name order: 'batch_size=16, threads=4' ('' for none)."""
    return ", ".join(f"{axis}={value}" for axis, value in sorted((point or {}).items()))


def run_row(run_dir: Path, run: dict, epochs: Sequence[dict[str, Any]], problems: list[str],
            notes: list[str]) -> dict[str, Any]:
    """One run-table row from a validated run.json, its metrics.jsonl records and its monitor.csv.

    Problems reading monitor.csv and disagreements with run.json's cache go into ``problems`` and ``notes``.
    """
    cfg, timing, results = run["config"], run["timing"], run["results"]
    env = run.get("environment") or {}
    dataset = run.get("dataset") or {}
    spec = run.get("spec") or {}
    failure = run.get("failure") or {}
    cached = cached_monitor_summary(run)
    accuracy = results.get("test_accuracy")
    row: dict[str, Any] = {
        "run_id": run["run_id"],
        "campaign": Path(run_dir).parent.name,
        "framework": cfg["framework"],
        # "current" or "paper"; bench.schema reads version-1 runs (before eras) as "current".
        "era": cfg["era"],
        "workload": cfg["workload"],
        "study": spec.get("study"),
        "dataset": dataset.get("name") or spec.get("dataset"),
        "data_source": dataset.get("source") or "unknown",
        "device": cfg["device"],
        "profile": cfg["profile"],
        "repeat": cfg["repeat"],
        "seed": cfg["seed"],
        "sweep": sweep_text(cfg.get("sweep")),
        "threads": cfg.get("threads"),
        "physical_cores": (run.get("host") or {}).get("cpu_physical_cores"),
        "status": run["status"],
        "failure_cause": failure.get("cause"),
        "failure_message": failure.get("message"),
        "training_time_s": timing.get("training_time_s"),
        "eval_time_s": timing.get("eval_time_s"),
        # run.json holds a fraction; the study and the table speak percent.
        "test_accuracy": None if accuracy is None else accuracy * 100,
        "majority_accuracy": None if dataset.get("test_majority_rate") is None else dataset["test_majority_rate"] * 100,
        "epochs": results.get("epochs_completed"),
        "epochs_planned": (spec.get("training") or {}).get("epochs"),
        **epoch_columns(epochs),
        **iteration_columns(timing),
        "ranks": results.get("ranks"), "images_per_ms": results.get("images_per_ms"),
        "images_per_s": results.get("images_per_s"), "s_per_1000_images": results.get("s_per_1000_images"),
        "gpu_interconnect": interconnect(run),
        # The hyper-parameters the other studies sweep (Wu et al.: batch size, learning rate).
        "batch_size": (spec.get("training") or {}).get("batch_size"),
        "learning_rate": _learning_rate(spec),
        "blas": (cfg.get("sweep") or {}).get("blas"),
        **{axis: (cfg.get("sweep") or {}).get(axis) for axis in switches.SWITCHES},
        "blas_loaded": blas_loaded(env),
        "trainable_params": (run.get("model") or {}).get("trainable_params"),
        "runner": cfg["runner"],
        "image_digest": env.get("image_digest"),
        "env_id": env.get("env_id"),
        "framework_version": env.get("framework_version"),
        "python": run_python(run),
        "python_build": python_build_text(env.get("python_build")),
        "blas_core": blas_cores(env),
        "cpu_flags": None if (run.get("host") or {}).get("cpu_flags") is None else " ".join(run["host"]["cpu_flags"]),
        **base_columns(env.get("base")),
        "run_dir": str(run_dir),
        **{column: (cfg.get("sweep") or {}).get(axis) for axis, column in SWEEP_COLUMNS.items()},
    }
    has_cache = any(v is not None for v in cached.values())
    try:
        raw = monitor_window_summary(run_dir, timing)
        if raw is None and has_cache:
            notes.append(f"{run['run_id']}: no monitor.csv samples in the training window; "
                         "CPU/memory taken from run.json's summary")
    except (SchemaError, ValueError, OSError) as exc:
        problems.append(f"{run_dir}: monitor.csv unreadable ({exc}); using run.json's summary")
        raw = None
    if raw is None:
        row.update(cached, monitor_source="run.json" if has_cache else "", monitor_samples=0)
        return row
    samples = raw.pop("samples")
    for column, raw_value in raw.items():
        if disagrees(raw_value, cached.get(column)):
            notes.append(f"{run['run_id']}: {column} is {raw_value:.4g} from monitor.csv but {cached[column]:.4g} "
                         "in run.json's summary; using monitor.csv")
    row.update(raw, monitor_source="monitor.csv", monitor_samples=samples)
    return row


# A path component of this ending: a wheel's bundled copy of a library (auditwheel: numpy.libs, scipy.libs).
_BUNDLED = ".libs"
# TensorFlow's oneDNN switch: unset, oneDNN's kernels run (TensorFlow's default on x86 since 2.9). It came with
# 2.5, off by default until 2.9; the stock wheels before 2.5 (the paper era's 1.11) carry no oneDNN: Eigen.
_ONEDNN_VAR = "TF_ENABLE_ONEDNN_OPTS"
_ONEDNN_SWITCH, _ONEDNN_DEFAULT = (2, 5), (2, 9)


def _tensorflow_kernels(environment: dict) -> str:
    """'eigen' or 'onednn': what TensorFlow's switch chose in the run's TensorFlow (a record without its version
    is taken as today's)."""
    setting = (environment.get("library_settings") or {}).get(_ONEDNN_VAR)
    version = (environment.get("packages") or {}).get("tensorflow") or ""
    found = re.match(r"(\d+)\.(\d+)", version)
    release = (int(found.group(1)), int(found.group(2))) if found else _ONEDNN_DEFAULT
    if release < _ONEDNN_SWITCH:
        return "eigen"
    if setting is None:
        return "onednn" if release >= _ONEDNN_DEFAULT else "eigen"
    return "eigen" if setting == "0" else "onednn"


def blas_loaded(environment: dict) -> str | None:
    """The BLAS that did a run's work, from what its process recorded (run.json environment.libraries and
    library_settings: bench/blas.py), not from what it asked for.

    TensorFlow (and Keras on it) records its kernel switch: 'eigen' when TF_ENABLE_ONEDNN_OPTS was 0 or its
    TensorFlow predates oneDNN's default (unset before 2.9; any value before 2.5), else 'onednn'.
    Otherwise the apis of the BLAS libraries the process loaded, distinct, in name order, joined by
    '+' ('openblas', 'mkl', 'other': a BLAS that names itself as none known, e.g. Debian's reference BLAS),
    leaving out the copies wheels bundle (numpy.libs, scipy.libs) when any other BLAS was loaded: NumPy's and
    SciPy's own OpenBLAS is loaded beside the one a Theano run links, which is the one that does its work.
    None when the run recorded no libraries (before the kit read them, or not on Linux)."""
    if _ONEDNN_VAR in (environment.get("library_settings") or {}):
        return _tensorflow_kernels(environment)
    libraries = environment.get("libraries")
    if libraries is None:
        return None
    found = [lib for lib in libraries if lib.get("kind") == "blas"]
    own = [lib for lib in found if not any(part.endswith(_BUNDLED) for part in Path(lib["filepath"]).parts)]
    return "+".join(sorted({lib["api"] for lib in own or found})) or None


def blas_cores(environment: dict) -> str | None:
    """The kernels the BLAS that did a run's work (blas_loaded()) chose for the CPU, as it names them
    (environment.libraries' architecture: OpenBLAS's core, e.g. 'Haswell', 'SkylakeX'), distinct, joined by '+';
    None where it names none (MKL, TensorFlow's kernels) or the run recorded no libraries."""
    loaded = blas_loaded(environment)
    if loaded is None:
        return None
    apis = loaded.split("+")
    cores = sorted({str(lib["architecture"]) for lib in environment.get("libraries") or []
                    if lib.get("kind") == "blas" and lib.get("api") in apis and lib.get("architecture")})
    return "+".join(cores) or None


def python_build_text(build: dict | None) -> str | None:
    """How a run's Python was built (run.json environment.python_build: bench/pythonbuild.py): 'PGO, LTO, GCC
    8.3.0', 'no PGO, GCC 10.2.1 20210110'; None for runs before the kit recorded it."""
    if not build:
        return None
    return ", ".join(["PGO" if build.get("pgo") else "no PGO", *(["LTO"] if build.get("lto") else []),
                      *([str(build["compiler"])] if build.get("compiler") else [])])


def base_columns(base: dict | None) -> dict[str, str | None]:
    """The run table's base_debian ('11.11 (bullseye)') and base_source ('stand-in Python-3.6.15.tar.xz
    sha256:<hex>') of a run's environment.base; None for a run without the record."""
    if not base:
        return {"base_debian": None, "base_source": None}
    return {"base_debian": f"{base.get('debian_version')} ({base.get('debian_release')})",
            "base_source": f"{base.get('source_kind')} {base.get('source')} sha256:{base.get('source_sha256')}"}


def run_python(run: dict) -> str | None:
    """The Python version the run really ran on: host.python, else environment.python (both are
    platform.python_version() of the training process), None when neither was recorded."""
    return (run.get("host") or {}).get("python") or (run.get("environment") or {}).get("python")


def interconnect(run: dict) -> str | None:
    """How the GPUs a run was given are joined, from run.json's host.gpus (bench.gpu.links): 'NVLink (n links)'
    when one of them has active NVLink links, 'PCIe gen<g> x<w>' when none has; None on a CPU run and where the
    run did not record it."""
    used = run.get("device_used") or {}
    uuids = {g.get("uuid") for g in used.get("gpus") or ([used["gpu"]] if used.get("gpu") else [])}
    host = (run.get("host") or {}).get("gpus")
    devices = (host.get("devices") or []) if isinstance(host, dict) else []
    mine = [d for d in devices if d.get("uuid") in uuids]
    if not mine or any(d.get("nvlink_active_links") is None for d in mine):
        return None
    links = min(d["nvlink_active_links"] for d in mine)
    if links:
        return f"NVLink ({links} links)"
    pcie = {(d.get("pcie_generation"), d.get("pcie_width")) for d in mine}
    return "PCIe " + " / ".join(f"gen{g} x{w}" if g and w else "(generation not recorded)"
                                for g, w in sorted(pcie, key=str))


def _learning_rate(spec: dict) -> float | None:
    optimizer = (spec.get("training") or {}).get("optimizer")
    lr = optimizer.get("lr") if isinstance(optimizer, dict) else None
    return float(lr) if isinstance(lr, int | float) and not isinstance(lr, bool) else None


def cached_monitor_summary(run: dict) -> dict[str, float | None]:
    """run.json's monitor summary under run-table column names (GPU None when not measured)."""
    monitor = run.get("monitor") or {}
    gpu = monitor.get("gpu")
    # monitor.gpu is either a status string ("no GPU: NVML library not found", "measured") with the
    # GPU means beside it at the top level, or an object holding them.
    gpu_util = gpu.get("util_mean_pct") if isinstance(gpu, dict) else monitor.get("gpu_util_mean_pct")
    return {
        "cpu_util_mean_pct": monitor.get("cpu_util_mean_pct"),
        "cpu_user_mean_pct": monitor.get("cpu_user_mean_pct"),
        "cpu_system_mean_pct": monitor.get("cpu_system_mean_pct"),
        "cpu_iowait_mean_pct": monitor.get("cpu_iowait_mean_pct"),
        "mem_mean_mb": monitor.get("mem_mean_mb"),
        "mem_peak_mb": monitor.get("mem_peak_mb"),
        "gpu_util_mean_pct": gpu_util,
        "other_cpu_s": monitor.get("other_cpu_s"),
        "other_cpu_share_pct": monitor.get("other_cpu_share_pct"),
        "other_cpu_mean_pct": monitor.get("other_cpu_mean_pct"),
        "gpu_other_procs_max": monitor.get("gpu_other_procs_max"),
    }


def training_window_samples(run_dir: Path, timing: dict) -> list[dict[str, Any]]:
    """monitor.csv samples taken in [train_start_unix, train_end_unix] of a run's timing."""
    return monitor_window(list(read_monitor(run_dir)), timing.get("train_start_unix"), timing.get("train_end_unix"))


def monitor_window_summary(run_dir: Path, timing: dict) -> dict[str, Any] | None:
    """Means (and the memory peak) of the monitor samples in the run's training window.

    The same computation the entrypoint caches in run.json, redone from the raw file.
    Returns None when no sample falls in the window.
    """
    summary = summarize_monitor(training_window_samples(run_dir, timing))
    if not summary["samples"]:
        return None
    return {key: summary[key] for key in _MONITOR_SUMMARY_KEYS}


def disagrees(raw: float | None, cached: float | None) -> bool:
    """True when both values exist and differ by more than the relative and absolute limits."""
    if raw is None or cached is None:
        return False
    diff = abs(raw - cached)
    return diff > DISAGREE_ABSOLUTE and diff > DISAGREE_RELATIVE * max(abs(raw), abs(cached))
