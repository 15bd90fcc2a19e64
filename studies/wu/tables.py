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
from analysis.reference import read_rows
from campaign import specs

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
