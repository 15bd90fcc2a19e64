"""Wu et al.'s claims on the baseline: each framework's own default model trained at its defaults (make
wu-cpu-defaults, wu-gpu-defaults; Tables 10 and 11, GTDLBench's CPU and GPU figures). The study compares frameworks
each with its own model, so these checks read the own pairings only (wu2019_models.csv: TensorFlow's MNIST and
CIFAR-10 tutorials in TensorFlow, Theano's in Theano); the kit's runs of a model in another framework are the
section's, not these claims'. studies/wu/claims.py lists them in CLAIMS."""

from __future__ import annotations

from typing import Any

from analysis.claims import ClaimResult, ResultsTable, insufficient, not_in_campaign, verdict_for
from analysis.reference import device_env
from analysis.stats import describe, format_number
from analysis.transfer import ACCURACY_TOLERANCE_PP
from studies.wu import tables as wu

# W8: the GPU trains a default model "much" faster when CPU time / GPU time is at least this: below the smallest
# own-model speed-up GTDLBench prints (Theano's CIFAR-10 default, 532.81 / 221.17 s = 2.41×; MNIST: TensorFlow 16.3×,
# Theano 20.6×).
SPEEDUP_MIN = 2.0
# What separates two baseline groups beside the dataset and device: never compared across.
CONTEXT = ("era", "runner", "profile", "data_source")

Runs = list[dict[str, Any]]


def _own_baseline(t: ResultsTable) -> Runs:
    """The successful baseline runs (no sweep point) of a Wu model in its own framework."""
    return [r for r in wu.baseline_rows(t.rows) if wu.own_model(r["workload"], r["framework"])]


def _key(row: dict[str, Any], key: str) -> str:
    """A run's value of a grouping key: the device as its class, the dataset as the model's (wu2019_models.csv)."""
    if key == "device":
        return device_env(row["device"])
    if key == "dataset":
        model = wu.model_of(row["workload"])
        return model.dataset if model else str(row.get("dataset"))
    return str(row.get(key))


def _cells(rows: Runs, *keys: str) -> dict[tuple[Any, ...], Runs]:
    """Rows grouped by the keys' values (_key), in key order."""
    found: dict[tuple[Any, ...], Runs] = {}
    for r in rows:
        found.setdefault(tuple(_key(r, k) for k in keys), []).append(r)
    return dict(sorted(found.items()))


def _mean(rows: Runs, column: str) -> float | None:
    return describe(r.get(column) for r in rows).mean


def _ids(rows: Runs) -> list[str]:
    return [r["run_id"] for r in rows]


def wu_no_framework_dominates(t: ResultsTable) -> ClaimResult:
    """Abstract (as the publication's listing prints it): "no single DL framework, to date, dominates in terms of
    performance and accuracy even for baseline classification tasks"; GTDLBench (Server-1): on CIFAR-10 Theano's
    default trains fastest (533 s CPU) and TensorFlow's is most accurate (87.00 %). Successful baseline runs (make
    wu-cpu-defaults, wu-gpu-defaults) of each framework's own default model in that framework, grouped by dataset,
    device, era, runner, profile and data; a group of >= 2 frameworks decides. Reproduced when no framework has both
    the shortest mean training time and the highest mean test accuracy in every deciding group (>= 2 groups); not
    reproduced when one does. Insufficient data without two such groups."""
    rows = _own_baseline(t)
    if not rows:
        return not_in_campaign("baseline runs of two frameworks' own default models")
    groups = []
    for key, members in _cells(rows, "dataset", "device", *CONTEXT).items():
        by_fw = {fw: (_mean(rs, "training_time_s"), _mean(rs, "test_accuracy"))
                 for fw, rs in _cells(members, "framework").items()}
        by_fw = {fw[0]: v for fw, v in by_fw.items() if None not in v}
        if len(by_fw) >= 2:
            groups.append((key, by_fw, members))
    if len(groups) < 2:
        return insufficient(f"{len(groups)} (dataset, device) group(s) with >= 2 frameworks' own default models timed "
                            "and scored; needs >= 2", _ids(rows))
    dominant, parts = None, []
    for key, by_fw, _ in groups:
        fastest = min(by_fw, key=lambda fw: by_fw[fw][0])
        best = max(by_fw, key=lambda fw: by_fw[fw][1])
        both = {fastest} if fastest == best else set()
        dominant = both if dominant is None else dominant & both
        parts.append(f"{key[0]}/{key[1]} ({key[3]}): fastest {fastest} ({format_number(by_fw[fastest][0])} s), most "
                     f"accurate {best} ({format_number(by_fw[best][1], 4)} %)")
    tail = (f"; {'/'.join(sorted(dominant))} dominates every group" if dominant
            else "; no framework dominates every group")
    return ClaimResult(verdict_for(not dominant), "; ".join(parts) + tail,
                       tuple(i for _, _, members in groups for i in _ids(members)))


def _published_accuracies(workload: str, device: str) -> list[float]:
    """The study's accuracies of a model on a device class: Tables 10 and 11 (CPU) and GTDLBench (CPU and GPU)."""
    tables = [p.accuracy_pct for p in wu.published_for(workload, wu.BASELINE_TABLES)] if device == "cpu" else []
    return [a for a in tables + [d.accuracy_pct for d in wu.defaults_for(workload, device)] if a is not None]


def wu_default_accuracy_as_published(t: ResultsTable) -> ClaimResult:
    """Tables 10 and 11 and GTDLBench: each default model's accuracy, MNIST TensorFlow 99.14-99.28 % (CPU), 99.22 %
    (GPU), Theano 98.99-99.08 % (CPU), 99.05 % (GPU); CIFAR-10 TensorFlow 87.00 % (CPU), 86.00 % (GPU), Theano
    49.66 % (CPU), 56.48 % (GPU). Successful baseline runs (make wu-cpu-defaults, wu-gpu-defaults) of each
    framework's own default model in that framework, per workload, device, era, runner, profile and data: reproduced
    when every such cell's mean test accuracy is within 2 points (the kit's transfer tolerance) of the range the
    study prints for that model and device; not reproduced otherwise. Cells the study prints nothing for are named,
    not decided."""
    rows = _own_baseline(t)
    if not rows:
        return not_in_campaign("baseline runs of a framework's own default model")
    parts, unpublished, holds, ids = [], [], True, []
    for key, members in _cells(rows, "workload", "framework", "device", *CONTEXT).items():
        measured, published = _mean(members, "test_accuracy"), _published_accuracies(key[0], key[2])
        if measured is None:
            continue
        if not published:
            unpublished.append(f"{key[1]} {key[0]}/{key[2]}")
            continue
        lo, hi = min(published), max(published)
        gap = max(lo - measured, measured - hi, 0.0)
        holds &= gap <= ACCURACY_TOLERANCE_PP
        ids += _ids(members)
        parts.append(f"{key[1]} {key[0]}/{key[2]} ({key[4]}): {format_number(measured, 4)} % (published "
                     f"{format_number(lo, 4)}-{format_number(hi, 4)} %, {gap:.2f} pp outside; within "
                     f"{ACCURACY_TOLERANCE_PP:g} pp needed)")
    rest = f"; no published accuracy: {', '.join(unpublished)}" if unpublished else ""
    if not parts:
        return insufficient("no measured baseline accuracy of a model the study prints one for" + rest, _ids(rows))
    return ClaimResult(verdict_for(holds), "; ".join(parts) + rest, tuple(ids))


def _pairs(rows: Runs) -> list[tuple[tuple[Any, ...], Runs, Runs]]:
    """(key, CPU runs, GPU runs) of one workload and framework in one era, profile and data; runs of one runner are
    paired where both devices have some, else every runner's CPU runs with the GPU runs."""
    out = []
    for key, members in _cells(rows, "workload", "framework", "era", "profile", "data_source").items():
        cpu = [r for r in members if device_env(r["device"]) == "cpu"]
        gpu = [r for r in members if device_env(r["device"]) == "gpu"]
        shared = sorted({r["runner"] for r in cpu} & {r["runner"] for r in gpu})
        if shared:
            out += [((*key, runner), [r for r in cpu if r["runner"] == runner],
                     [r for r in gpu if r["runner"] == runner]) for runner in shared]
        elif cpu and gpu:
            out.append(((*key, "any runner"), cpu, gpu))
    return out


def wu_gpu_faster_than_cpu(t: ResultsTable) -> ClaimResult:
    """GTDLBench (Server-1, each default on its Xeon E5-1620 and its GTX 1080 Ti): CPU / GPU training time 16.3×
    (TensorFlow MNIST: 1,114 / 68.5 s), 20.6× (Theano MNIST), 4.55× (TensorFlow CIFAR-10), 2.41× (Theano CIFAR-10).
    Successful baseline runs (make wu-cpu-defaults and wu-gpu-defaults, analysed together) of each framework's own
    default model in that framework, paired CPU with GPU per workload, framework, era, profile and data (and runner,
    where both devices ran on one): reproduced when in every pair the mean CPU training time is at least 2× the mean
    GPU time (below the smallest published, 2.41×); not reproduced otherwise. Insufficient data without a CPU and a
    GPU baseline of one model."""
    rows = _own_baseline(t)
    pairs = _pairs(rows)
    if not pairs:
        return not_in_campaign("CPU and GPU baseline runs of one framework's own default model")
    parts, holds, ids = [], True, []
    for key, cpu, gpu in pairs:
        t_cpu, t_gpu = _mean(cpu, "training_time_s"), _mean(gpu, "training_time_s")
        if t_cpu is None or not t_gpu:
            continue
        holds &= t_cpu / t_gpu >= SPEEDUP_MIN
        ids += _ids(cpu + gpu)
        parts.append(f"{key[1]} {key[0]} ({key[-1]}): CPU {format_number(t_cpu)} s / GPU {format_number(t_gpu)} s = "
                     f"{t_cpu / t_gpu:.2f}× (at least {SPEEDUP_MIN:g}× needed)")
    if not parts:
        return insufficient("no CPU/GPU pair with both training times measured", _ids(rows))
    return ClaimResult(verdict_for(holds), "; ".join(parts), tuple(ids))
