"""Wu et al. (IEEE TSC 2019): its published tables (wu2019.csv), the mapping of its frameworks' default models onto
the kit's workloads (wu2019_models.csv), and the grouping of the kit's runs into the study's one-factor sweeps.

wu2019.csv holds the study's MNIST numbers only: in every row, iterations x batch / epochs is the training set of
an MNIST default (TensorFlow 55,000 images, Theano 50,000, Caffe and Torch7 60,000), and Tables 15, 18, 19, 21 and
22 vary the MNIST defaults of Table 10. Table 10 is the CPU baseline on Server-1, Table 11 on Server-2 (each
framework with both of its BLAS libraries), 15 (TensorFlow) and 18 (Theano) the batch size at fixed epochs, 19 the
batch size at fixed iterations, 21 the learning rate and iterations on Server-1's GPU (TensorFlow), 22 CPU use and
memory per batch size. The study's CIFAR-10 numbers are not transcribed.

The measured side reads only the run table: a sweep's runs are those whose sweep point names exactly one axis
(the run table's `sweep`: 'batch_size=500'), so the baseline (no sweep) and the other sweeps never mix in.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from analysis import sweeps
from analysis.reference import ORIGINAL_REPOS_CSV, read_rows
from analysis.stats import describe
from campaign import specs
from campaign.study import experiment

REFERENCE_DIR = Path(__file__).parent / "reference"
TABLES_CSV = REFERENCE_DIR / "wu2019.csv"
MODELS_CSV = REFERENCE_DIR / "wu2019_models.csv"
# The spec's study key of Wu's workloads (studies/wu/workloads/wu-*.toml; the run table's `study`).
STUDY = "wu"
# The dataset of every wu2019.csv row (the module docstring says how that was checked).
REFERENCE_DATASET = "mnist"

BASELINE_TABLES = (10, 11)
BATCH_TABLES = (15, 18)  # batch size at fixed epochs
JOINT_TABLE = 19  # batch size at fixed iterations: the kit's runs count whole epochs, so not reproduced
LR_TABLE = 21
RESOURCE_TABLE = 22  # CPU split and memory per batch size

# GTDLBench (the study authors' web page) prints each default's CPU and GPU figures on Server-1, MNIST and CIFAR-10:
# from_original_repos.csv's rows of this study (analysis.reference.ORIGINAL_REPOS_CSV), read here only.
DEFAULTS_STUDY = "Wu/Liu"
# GTDLBench's names of the frameworks, where they are not wu2019.csv's.
GTDLBENCH_NAMES = {"tf": "tensorflow", "torch": "torch7"}
# The make targets of the kit's batch-size and learning-rate sweeps (studies/wu/study.toml): their points are the
# ones the checks decide on, and the published rows that stand beside them.
BATCH_TARGET, LR_TARGET, BLAS_TARGET = "wu-cpu-batch", "wu-cpu-lr", "wu-cpu-blas"
# The study's name of the library a kit backend stands in for, per framework (TensorFlow's MKL build ran MKL-DNN,
# oneDNN's earlier name); elsewhere the names are the same.
STUDY_NAME = {"tensorflow": {"onednn": "mkl"}}
# Wu's CPU "total" (Tables 10, 11 and 22): the sum of the sysstat split, iowait included (the run table's columns).
CPU_SPLIT = ("cpu_user_mean_pct", "cpu_system_mean_pct", "cpu_iowait_mean_pct")

SERVERS = {
    "server1-cpu": "Server-1 (Xeon E5-1620, 4 cores)",
    "server2-cpu": "Server-2 (2x Xeon E5-2650 v4, 24 cores)",
    "server1-gpu": "Server-1's GTX 1080 Ti",
}



@dataclass(frozen=True)
class Published:
    """One row of wu2019.csv (None where the table prints no number)."""

    table: int
    server: str
    framework: str
    blas: str | None
    batch: int
    iterations: int
    epochs: float
    lr: float
    train_time_s: float | None
    test_time_s: float | None
    accuracy_pct: float | None
    cpu_user_pct: float | None
    cpu_system_pct: float | None
    cpu_iowait_pct: float | None
    cpu_total_pct: float | None
    mem_avg_mb: float | None
    mem_max_mb: float | None


@dataclass(frozen=True)
class Model:
    """One of the study's default models (a framework's own model for a dataset) and the kit's workload for it
    (None: not in the kit, with why)."""

    framework: str
    dataset: str
    workload: str | None
    kit_framework: str | None
    note: str


@dataclass(frozen=True)
class Default:
    """One framework's default model on one dataset and device, as GTDLBench prints it (Server-1)."""

    framework: str
    dataset: str
    device: str
    train_time_s: float
    test_time_s: float
    accuracy_pct: float
    source: str  # the GTDLBench file it comes from


def _float(text: str) -> float | None:
    return float(text) if text else None


@cache
def published() -> tuple[Published, ...]:
    """Every row of wu2019.csv, in the file's order."""
    return tuple(Published(int(r["table"]), r["server"], r["framework"], r["blas"] or None, int(r["batch"]),
                           int(r["iterations"]), float(r["epochs"]), float(r["lr"]),
                           *(_float(r[k]) for k in ("train_time_s", "test_time_s", "accuracy_pct", "cpu_user_pct",
                                                     "cpu_system_pct", "cpu_iowait_pct", "cpu_total_pct",
                                                     "mem_avg_mb", "mem_max_mb")))
                 for r in read_rows(TABLES_CSV))


@cache
def models() -> tuple[Model, ...]:
    """The study's default models in wu2019_models.csv's order, each with the kit's workload (None: not in it)."""
    return tuple(Model(r["framework"], r["dataset"], r["workload"] or None, r["kit_framework"] or None, r["note"])
                 for r in read_rows(MODELS_CSV))


def model_of(workload: str) -> Model | None:
    """The study's default model a kit workload builds (None: not one of Wu's)."""
    return next((m for m in models() if m.workload == workload), None)


def published_for(workload: str, tables: Sequence[int]) -> list[Published]:
    """The rows of these tables for the model a workload builds (its framework on MNIST); [] for a CIFAR-10
    model, whose numbers wu2019.csv does not hold, and for a workload that is not Wu's."""
    model = model_of(workload)
    if model is None or model.dataset != REFERENCE_DATASET:
        return []
    return [p for p in published() if p.table in tables and p.framework == model.framework]


def wu_rows(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows of runs of Wu's workloads: the spec's study is 'wu', or wu2019_models.csv maps the workload."""
    return [r for r in rows if r.get("study") == STUDY or model_of(r["workload"]) is not None]


def baseline_rows(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Successful runs at no sweep point: the baseline experiments' (make wu-cpu-defaults, wu-gpu-defaults)."""
    return [r for r in rows if r["status"] == "ok" and not sweeps.sweep_axes(r)]


def default_batch(workload: str) -> int | None:
    """The workload spec's batch size (the study's default for its model; the batch-size ratios' base)."""
    return (specs.load(workload, "paper").get("training") or {}).get("batch_size")


def default_lr(workload: str) -> float | None:
    """The workload spec's learning rate (the study's default; the learning-rate ratios' base)."""
    optimizer = (specs.load(workload, "paper").get("training") or {}).get("optimizer") or {}
    lr = optimizer.get("lr") if isinstance(optimizer, dict) else None
    return float(lr) if lr is not None else None


def loaded_apis(row: dict[str, Any]) -> set[str]:
    """The BLAS a run's record says did its work (the run table's blas_loaded, '+'-joined), empty: not recorded."""
    return {a for a in str(row.get("blas_loaded") or "").split("+") if a}


def default_epochs(workload: str) -> int | None:
    """The workload spec's epochs (the study's default for its model: Table 10's iterations in whole passes)."""
    return (specs.load(workload, "paper").get("training") or {}).get("epochs")


def kit_points(target: str, axis: str) -> list[Any]:
    """The values the kit's experiment sweeps the axis over (studies/wu/study.toml), e.g. batch 50, 500, 5,000."""
    return list(experiment(target).sweep.get(axis) or [])


def kit_backend(framework: str, study_blas: str) -> str:
    """The kit's BLAS value for the study's library of a framework (TensorFlow's 'mkl' -> 'onednn')."""
    return {v: k for k, v in STUDY_NAME.get(framework, {}).items()}.get(study_blas, study_blas)


def own_model(workload: str, framework: str, dataset: str | None = None) -> bool:
    """Whether a run is the study's own pairing: the workload is a framework's default model and runs in that
    framework (wu2019_models.csv's kit_framework), on `dataset` where given."""
    model = model_of(workload)
    return model is not None and model.kit_framework == framework and dataset in (None, model.dataset)


def cpu_total(rows: Sequence[dict[str, Any]]) -> float | None:
    """Wu's CPU "total" of runs (Tables 10, 11 and 22): the mean user + system + iowait percent of the machine
    (CPU_SPLIT), iowait included, unlike DLBench's Eq. 1-2 (cpu_util_mean_pct); None where any part is unrecorded."""
    parts = [describe(r.get(c) for r in rows).mean for c in CPU_SPLIT]
    return None if None in parts else sum(parts)  # type: ignore[arg-type]


def _defaults_of(row: dict[str, str]) -> list[Default]:
    """A GTDLBench row: frameworks '|'-joined, each 'train cpu/gpu;test cpu/gpu;accuracy cpu/gpu' in that order."""
    dataset = row["dataset_or_task"].split()[0].lower().replace("-", "")
    out = []
    for name, cell in zip(row["framework"].split("|"), row["value"].split("|")):
        train, test, acc = ([float(v) for v in part.split("/")] for part in cell.strip().split(";"))
        fw = GTDLBENCH_NAMES.get(name.strip().lower(), name.strip().lower())
        out += [Default(fw, dataset, device, train[i], test[i], acc[i], row["file_path"])
                for i, device in enumerate(("cpu", "gpu"))]
    return out


@cache
def defaults() -> tuple[Default, ...]:
    """GTDLBench's CPU and GPU figures of every framework's MNIST and CIFAR-10 default (Server-1)."""
    rows = read_rows(ORIGINAL_REPOS_CSV)
    return tuple(d for r in rows if r["study"] == DEFAULTS_STUDY for d in _defaults_of(r))


def defaults_for(workload: str, device: str) -> list[Default]:
    """GTDLBench's figures of the model a workload builds, on a device ('cpu'/'gpu'); [] for a workload not Wu's."""
    model = model_of(workload)
    if model is None:
        return []
    return [d for d in defaults() if (d.framework, d.dataset, d.device) == (model.framework, model.dataset, device)]
