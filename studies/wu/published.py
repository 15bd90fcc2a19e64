"""Wu et al.'s published numbers as run-table rows (analysis/published.py), shaped as the kit's `make wu-*` campaigns
write theirs, so Wu's checks read the paper as they read a campaign:

- the baseline (no sweep point; wu-cpu-defaults, wu-gpu-defaults): Tables 10 and 11, each framework's default
  library (TensorFlow with Eigen, Theano with OpenBLAS); GTDLBench's GPU MNIST and CPU/GPU CIFAR-10 figures;
- the BLAS sweep (sweep_blas; wu-cpu-blas): Tables 10 and 11, both libraries of each framework, the study's MKL build
  of TensorFlow as the kit's `onednn`;
- the batch-size sweep (sweep_batch_size; wu-cpu-batch) at the kit's points (50, 500, 5,000): Tables 15 and 18 for
  time and accuracy, CPU split and memory of the same configuration from Table 22 (Table 10 at the default batch);
- the learning-rate sweep (sweep_learning_rate; wu-gpu-lr): Table 21, one group per batch size and iteration count.

Only the models the kit builds (wu2019_models.csv: TensorFlow's and Theano's), in their own framework. Rows the kit
has no counterpart for are listed in reference/SOURCES.md with why. Each server is its own runner ('published
server1'), so Table 10's and Table 11's rows never fall into one cell.
"""

from __future__ import annotations

from typing import Any

from analysis.published import BY_CLAIMS, published_row, row_rule
from analysis.runs import sweep_text
from studies.wu import tables as wu

STUDY = wu.STUDY
# Tables whose rows keep the model's default epochs (the batch tables vary the iterations to keep them): their rows
# were planned at the workload spec's epochs, whatever early stopping ran (Table 18's 178 of Theano's 200).
FIXED_EPOCH_TABLES = (*wu.BASELINE_TABLES, *wu.BATCH_TABLES, wu.RESOURCE_TABLE)


_NO_CAFFE = "needs Caffe, CNTK or Torch7"
# The rows of Wu et al.'s tables no claim check reads, and the GTDLBench rows the checks read
# (analysis/sections/not_reproduced.py lists them).
ROW_RULES = (
    row_rule("from_original_repos.csv", f"{BY_CLAIMS} (Wu et al.'s GTDLBench defaults: published.py gtdlbench())",
             study="Wu/Liu"),
    row_rule("wu2019.csv", reason="same iterations at a larger batch: the kit's runs count whole epochs, not "
             "iterations", table="19"),
    row_rule("wu2019.csv", reason=_NO_CAFFE, framework="caffe"),
    row_rule("wu2019.csv", reason=_NO_CAFFE, framework="torch7"),
    row_rule("wu2019.csv", reason="the kit's batch sweep stops at 5,000 (a 31.7 GB peak at 50,000)", batch="50000"),
    row_rule("wu2019.csv", reason="one learning rate only at 60,000 iterations: no learning-rate group, and the kit "
             "has no iterations axis", table="21", batch="50", iterations="60000"),
)


def _runner(server: str) -> str:
    """'published server1' for 'server1-cpu': one runner per machine of the study."""
    return f"published {server.split('-')[0]}"


def _device(server: str) -> str:
    return server.rsplit("-", 1)[-1]


def _workload(framework: str, dataset: str) -> str | None:
    return next((m.workload for m in wu.models() if (m.framework, m.dataset) == (framework, dataset)
                 and m.kit_framework == framework), None)


def _resources(p: wu.Published | None) -> dict[str, Any]:
    """The CPU split and memory columns of a published row (none where the table prints none)."""
    if p is None:
        return {}
    return {"cpu_user_mean_pct": p.cpu_user_pct, "cpu_system_mean_pct": p.cpu_system_pct,
            "cpu_iowait_mean_pct": p.cpu_iowait_pct, "mem_mean_mb": p.mem_avg_mb, "mem_peak_mb": p.mem_max_mb}


def _row(run_id: str, p: wu.Published, sweep: dict[str, Any] | None = None,
         resources: wu.Published | None = None) -> dict[str, Any] | None:
    """A wu2019.csv row as a run of the model's workload in its own framework (None: not a kit workload)."""
    workload = _workload(p.framework, wu.REFERENCE_DATASET)
    if workload is None:
        return None
    planned = wu.default_epochs(workload) if p.table in FIXED_EPOCH_TABLES else round(p.epochs)
    loaded = wu.kit_backend(p.framework, p.blas) if p.blas else None
    point = sweep or {}
    return published_row(
        run_id, p.framework, workload, _device(p.server), study=STUDY, dataset=wu.REFERENCE_DATASET,
        runner=_runner(p.server), batch_size=p.batch, learning_rate=p.lr, epochs=round(p.epochs),
        epochs_planned=planned, training_time_s=p.train_time_s, test_accuracy=p.accuracy_pct,
        blas=point.get("blas"), blas_loaded=loaded, sweep=sweep_text(point),
        **{f"sweep_{axis}": value for axis, value in point.items()}, **_resources(resources or p))


def _same_setup(a: wu.Published, b: wu.Published) -> bool:
    return (a.server, a.framework, a.blas, a.batch, a.iterations, a.lr) == (b.server, b.framework, b.blas, b.batch,
                                                                              b.iterations, b.lr)


def _default_blas(p: wu.Published) -> bool:
    """The library the framework's default build uses: TensorFlow's Eigen, the others' OpenBLAS."""
    return p.blas == ("eigen" if p.framework == "tensorflow" else "openblas")


def _tag(p: wu.Published) -> str:
    return f"table{p.table}-{p.server}-{p.framework}-{p.blas or 'gpu'}-b{p.batch}-it{p.iterations}-lr{p.lr:g}"


def baseline() -> list[dict[str, Any]]:
    """Tables 10 and 11 at each framework's default library, as runs at no sweep point."""
    rows = [_row(_tag(p), p) for p in wu.published() if p.table in wu.BASELINE_TABLES and _default_blas(p)]
    return [r for r in rows if r]


def blas_sweep() -> list[dict[str, Any]]:
    """Tables 10 and 11, each framework with both of its libraries, as a BLAS sweep."""
    rows = [_row(f"{_tag(p)}-blas", p, {"blas": wu.kit_backend(p.framework, p.blas)})
            for p in wu.published() if p.table in wu.BASELINE_TABLES and p.blas]
    return [r for r in rows if r]


def batch_sweep() -> list[dict[str, Any]]:
    """Tables 15 and 18 at the kit's batch sizes, each with the CPU split and memory of the same setup (Table 22, or
    Table 10 at the default batch)."""
    points = wu.kit_points(wu.BATCH_TARGET, "batch_size")
    resource_rows = [p for p in wu.published() if p.table in (wu.RESOURCE_TABLE, *wu.BASELINE_TABLES)]
    out = []
    for p in wu.published():
        if p.table not in wu.BATCH_TABLES or p.batch not in points:
            continue
        res = next((r for r in resource_rows if _same_setup(r, p)), None)
        tag = _tag(p) + (f"+table{res.table}" if res else "")
        out.append(_row(tag, p, {"batch_size": p.batch}, res))
    return [r for r in out if r]


def lr_sweep() -> list[dict[str, Any]]:
    """Table 21 (TensorFlow on Server-1's GPU) as learning-rate sweeps: a group per batch size and iteration count."""
    rows = [_row(_tag(p), p, {"learning_rate": p.lr}) for p in wu.published() if p.table == wu.LR_TABLE]
    return [r for r in rows if r]


def gtdlbench() -> list[dict[str, Any]]:
    """GTDLBench's defaults of the kit's models as baseline runs on Server-1: GPU MNIST, CPU and GPU CIFAR-10 (its CPU
    MNIST figures are Table 10's, already in the baseline)."""
    out = []
    for d in wu.defaults():
        workload = _workload(d.framework, d.dataset)
        if workload is None or (d.dataset == wu.REFERENCE_DATASET and d.device == "cpu"):
            continue
        model = wu.model_of(workload)
        out.append(published_row(
            f"gtdlbench-{d.dataset}-{d.device}-{d.framework}", d.framework, workload, d.device, study=STUDY,
            dataset=d.dataset, runner=_runner("server1"), batch_size=wu.default_batch(workload),
            learning_rate=wu.default_lr(workload), epochs=wu.default_epochs(workload),
            epochs_planned=wu.default_epochs(workload), training_time_s=d.train_time_s, test_accuracy=d.accuracy_pct,
            blas=None, blas_loaded=None, sweep="", note=f"GTDLBench {d.source} ({model.framework} default)"))
    return out


def runs() -> list[dict[str, Any]]:
    """Every published number the kit's Wu checks can read, as run-table rows."""
    return [*baseline(), *gtdlbench(), *blas_sweep(), *batch_sweep(), *lr_sweep()]
