"""Wu et al.'s tables beside the kit's runs of its workloads: the baseline (Tables 10 and 11: training and testing
time, accuracy, CPU split, memory), the batch-size sweep (Tables 15, 18 and 22), the learning-rate sweep (Table
21), the thread sweep and the BLAS sweep (Tables 10 and 11's two libraries per framework). Times as ratios within
a sweep, as only those transfer across hardware; accuracy as it is. Shown only when the campaign holds runs of
Wu's workloads (studies.wu.tables)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from analysis import sweeps
from analysis.context import ReportContext
from analysis.document import Block, Bullets, Heading, Inline, Para, Table
from analysis.stats import describe, format_number
from campaign.study import load_study
from studies.wu import tables as wu

# The backend each framework's BLAS times are divided by: the study's ratio is MKL's time over these.
BASE_BACKEND = {"tensorflow": "eigen", "keras": "eigen", "theano": "openblas"}

NOT_REPRODUCED = [
    "Table 19 (batch size at a fixed number of iterations, so more epochs at larger batches): the kit's runs "
    "count whole epochs, so its batch sweep keeps the epochs fixed, as Tables 15 and 18 do.",
    "Batch 50,000 (Tables 15 and 22: a 31.7 GB peak) and the 2 and 4 GPU runs: left out of the kit's experiments "
    "(studies/wu/study.toml).",
    "Early stopping: the Theano LeNet tutorial stops on its 10,000 validation images; the kit has no validation "
    "pass and trains every planned epoch (the study's Table 10 row records 200 epochs too). The images held out "
    "for validation (5,000 for TensorFlow's MNIST, 10,000 for Theano's) are not evaluated.",
    "Iterations: the kit counts whole epochs (wu-tf-mnist: 18 epochs, 19,800 mini-batches, not 20,000).",
    "Caffe's and Torch7's default models: the kit runs neither framework (studies/wu/reference/wu2019_models.csv).",
    "The CIFAR-10 models' published numbers beyond GTDLBench's (training and testing time, accuracy on Server-1's "
    "CPU and GPU): wu2019.csv holds the MNIST tables only.",
    "GPU utilization and GPU memory (the study's nvidia-smi figures): not in wu2019.csv, so not compared.",
]


def _mean(rows: Sequence[dict[str, Any]], column: str) -> float | None:
    return describe(r.get(column) for r in rows).mean


def _num(value: float | None, digits: int = 3) -> str:
    return format_number(value, digits)


def _ratio(value: float | None, base: float | None) -> float | None:
    return value / base if value is not None and base else None


def _time(value: float | None, base: float | None) -> str:
    """'1,114 (1.00)': seconds and, in brackets, the ratio to the sweep's base point."""
    ratio = _ratio(value, base)
    return _num(value) + (f" ({ratio:.2f})" if ratio is not None else "")


def _cpu_split(user: float | None, system: float | None, iowait: float | None, total: float | None) -> str:
    """'72.3 / 7.88 / 0.01 / 80.2': user, system, iowait and total percent of the machine ('—' unrecorded)."""
    if total is None:
        return "—"
    return " / ".join(_num(v) for v in (user, system, iowait, total))


def _kit_cpu(rows: Sequence[dict[str, Any]]) -> str:
    return _cpu_split(*(_mean(rows, c) for c in wu.CPU_SPLIT), wu.cpu_total(rows))


def _loaded(runs: Sequence[dict[str, Any]]) -> str:
    """'openblas': the BLAS the runs' records say did the work ('—' without runs)."""
    return "/".join(sorted({str(r.get("blas_loaded") or "not recorded") for r in runs})) or "—"


def _memory(mean: float | None, peak: float | None) -> str:
    return "—" if mean is None and peak is None else f"{_num(mean)} / {_num(peak)}"


def _context(key: dict[str, Any]) -> str:
    """'tensorflow on cpu (current era, local, paper profile, real data)'."""
    return (f"{key['framework']} on {key['device']} ({key['era']} era, {key['runner']}, {key['profile']} profile, "
            f"{key['data_source']} data)")


def _workloads(rows: Sequence[dict[str, Any]]) -> list[str]:
    """The campaign's Wu workloads, in wu2019_models.csv's order, then any other."""
    present = {r["workload"] for r in rows}
    ordered = [m.workload for m in wu.models() if m.workload in present]
    return ordered + sorted(present - set(ordered))


def _model_text(workload: str) -> str:
    model = wu.model_of(workload)
    if model is None:
        return f"`{workload}`"
    return f"`{workload}` ({model.framework}'s default {model.dataset.upper().replace('CIFAR10', 'CIFAR-10')} model)"


# --- Baseline (Tables 10 and 11) -----------------------------------------------------------------

def _gtdlbench(workload: str) -> list[wu.Default]:
    """GTDLBench's figures of a workload's model that Tables 10 and 11 do not hold: GPU, and CIFAR-10 on both."""
    table10 = bool(wu.published_for(workload, wu.BASELINE_TABLES))
    return [d for device in ("cpu", "gpu") for d in wu.defaults_for(workload, device)
            if not (table10 and device == "cpu")]


def _baseline_blocks(ctx: ReportContext, rows: list[dict[str, Any]]) -> list[Block]:
    base = wu.baseline_rows(rows)
    blocks: list[Block] = [Heading(3, "Baseline: Tables 10 and 11")]
    if not base:
        return blocks + [Para("No successful baseline run of Wu's workloads here (`make wu-cpu-defaults`, "
                              "`make wu-gpu-defaults`; `make wu-cpu` runs every CPU experiment of the study).")]
    blocks.append(Para("Each framework's default model at its defaults. Published: Server-1 (Table 10) and Server-2 "
                       "(Table 11), each framework with both of its BLAS libraries; GTDLBench (the authors' web "
                       "page): Server-1's GPU, and CIFAR-10 on its CPU and GPU. Measured: the mean over "
                       "successful repeats; testing time is one test pass (eval_time_s, the sum of the per-epoch "
                       "test passes, over the epochs); BLAS: the library the run's record says did its work "
                       "(blas_loaded). Absolute times are of different machines: context, not targets."))
    headers = ["source", "framework", "BLAS", "training s", "testing s", "accuracy %",
               "CPU user / system / iowait / total %", "memory mean / max MB", "runs"]
    for workload in _workloads(base):
        mine = [r for r in base if r["workload"] == workload]
        table: list[list[Inline]] = []
        for p in wu.published_for(workload, wu.BASELINE_TABLES):
            table.append([f"Table {p.table}, {wu.SERVERS.get(p.server, p.server)}", p.framework, p.blas or "—",
                          _num(p.train_time_s), _num(p.test_time_s), _num(p.accuracy_pct, 4),
                          _cpu_split(p.cpu_user_pct, p.cpu_system_pct, p.cpu_iowait_pct, p.cpu_total_pct),
                          _memory(p.mem_avg_mb, p.mem_max_mb), "—"])
        for d in _gtdlbench(workload):
            table.append([f"GTDLBench, Server-1 {d.device.upper()}", d.framework, "—", _num(d.train_time_s),
                          _num(d.test_time_s), _num(d.accuracy_pct, 4), "—", "—", "—"])
        for group in sweeps.cells(mine, None):
            first = group[0]
            tests = [r["eval_time_s"] / r["epochs"] for r in group if r.get("eval_time_s") is not None
                     and r.get("epochs")]
            table.append([f"kit, {first['device']} ({first['era']} era, {first['profile']} profile, "
                          f"{first['data_source']} data)", first["framework"], _loaded(group),
                          _num(_mean(group, "training_time_s")), _num(describe(tests).mean),
                          _num(_mean(group, "test_accuracy"), 4), _kit_cpu(group),
                          _memory(_mean(group, "mem_mean_mb"), _mean(group, "mem_peak_mb")),
                          ctx.run_links(group) or "—"])
        published = wu.published_for(workload, wu.BASELINE_TABLES) or _gtdlbench(workload)
        blocks += [Para(f"{_model_text(workload)}" + ("" if published else ": no published row") + "."),
                   Table(headers, table)]
    return blocks


# --- One-factor sweeps ---------------------------------------------------------------------------

def _base_point(points: Sequence[Any], preferred: Any) -> Any:
    """The sweep point ratios are taken to: the preferred one (the study's default) where present, else the
    smallest."""
    return preferred if preferred in points else min(points)


# The kit's cells a sweep table can show for a point, by name: from the point's runs (none: not run) and the
# training time its times are divided by.
_KIT_CELLS: dict[str, Callable[[list[dict[str, Any]], float | None], str]] = {
    "time": lambda runs, base: _time(_mean(runs, "training_time_s"), base) if runs else "not run",
    "accuracy": lambda runs, base: _num(_mean(runs, "test_accuracy"), 4) if runs else "—",
    "cpu": lambda runs, base: _kit_cpu(runs) if runs else "—",
    "memory": lambda runs, base: _memory(_mean(runs, "mem_mean_mb"), _mean(runs, "mem_peak_mb")) if runs else "—",
    "loaded": lambda runs, base: _loaded(runs),
}


@dataclass(frozen=True)
class _Group:
    """One table of a sweep (one group of runs): what it shows of the study for each point."""

    caption: str
    points: list[Any]  # the table's rows, in order: the kit's points and the study's
    study: Callable[[Any], list[Inline]]  # the study's cells of a point
    kit_base: Any  # the point the kit's training times are divided by (absent: no ratios)


@dataclass(frozen=True)
class _Sweep:
    """The column recipe of a sweep's tables: a row is the point's label, the kit's `lead` cells, the study's
    cells (from the group), the kit's `kit` cells (_KIT_CELLS) and the runs' links."""

    axis: str  # the swept run-table column (sweeps.sweep_groups)
    heading: str
    missing: str  # said when the campaign holds no such sweep
    intro: str
    headers: list[str]
    label: Callable[[Any], str]
    lead: tuple[str, ...]
    kit: tuple[str, ...]
    group: Callable[[dict[str, Any], dict[Any, list[dict[str, Any]]]], _Group]


def _sweep_blocks(ctx: ReportContext, rows: list[dict[str, Any]], sweep: _Sweep) -> list[Block]:
    """A sweep's heading and introduction, then per group of runs its caption and a table of the study's cells
    beside the kit's (the kit's times divided by the group's base point); a note when the campaign has none."""
    groups = sweeps.sweep_groups(rows, sweep.axis, min_points=1)
    blocks: list[Block] = [Heading(3, sweep.heading)]
    if not groups:
        return blocks + [Para(sweep.missing)]
    blocks.append(Para(sweep.intro))
    for key, by_point in groups:
        group = sweep.group(key, by_point)
        base = _mean(by_point[group.kit_base], "training_time_s") if group.kit_base in by_point else None
        table: list[list[Inline]] = []
        for point in group.points:
            runs = by_point.get(point, [])
            table.append([sweep.label(point), *(_KIT_CELLS[c](runs, base) for c in sweep.lead),
                          *group.study(point), *(_KIT_CELLS[c](runs, base) for c in sweep.kit),
                          ctx.run_links(runs) or "—"])
        blocks += [Para(group.caption), Table(sweep.headers, table)]
    return blocks


def _batch_group(key: dict[str, Any], by_batch: dict[Any, list[dict[str, Any]]]) -> _Group:
    workload = key["workload"]
    study = {p.batch: p for p in wu.published_for(workload, wu.BATCH_TABLES)}
    resources = {p.batch: p for p in wu.published_for(workload, (wu.RESOURCE_TABLE,))}
    default = wu.default_batch(workload)
    s_base = study[_base_point(list(study), default)].train_time_s if study else None

    def cells(batch: Any) -> list[Inline]:
        p, res = study.get(batch), resources.get(batch)
        return [f"{p.epochs:g}" if p else "—", _time(p.train_time_s, s_base) if p else "—",
                _num(p.accuracy_pct, 4) if p else "—",
                _cpu_split(res.cpu_user_pct, res.cpu_system_pct, res.cpu_iowait_pct, res.cpu_total_pct)
                if res else "—", _memory(res.mem_avg_mb, res.mem_max_mb) if res else "—"]

    table_name = "/".join(f"Table {t}" for t in sorted({p.table for p in study.values()})) or "no table"
    return _Group(f"{_model_text(workload)}, {_context(key)}, {key['epochs_planned']} epochs; the study: "
                  f"{table_name}" + ("" if study else " (wu2019.csv holds MNIST only)") + ".",
                  sorted(set(study) | set(by_batch)), cells, _base_point(list(by_batch), default))


def _lr_group(key: dict[str, Any], by_lr: dict[Any, list[dict[str, Any]]]) -> _Group:
    workload = key["workload"]
    default_lr, default_b = wu.default_lr(workload), wu.default_batch(workload)
    iterations = {p.iterations for p in wu.published_for(workload, (10,))}
    study = {p.lr: p for p in wu.published_for(workload, (wu.LR_TABLE,))
             if p.batch == default_b and p.iterations in iterations}
    s_base = study[_base_point(list(study), default_lr)].train_time_s if study else None

    def cells(lr: Any) -> list[Inline]:
        p = study.get(lr)
        return [_time(p.train_time_s, s_base) if p else "—", _num(p.accuracy_pct, 4) if p else "—"]

    return _Group(f"{_model_text(workload)}, {_context(key)}, batch {default_b}, {key['epochs_planned']} "
                  "epochs" + ("" if study else "; no published row at this batch") + ".",
                  sorted(set(study) | set(by_lr)), cells, _base_point(list(by_lr), default_lr))


def _threads_group(key: dict[str, Any], by_n: dict[Any, list[dict[str, Any]]]) -> _Group:
    cores = sorted({int(r["physical_cores"]) for rs in by_n.values() for r in rs if r.get("physical_cores")})
    return _Group(f"{_model_text(key['workload'])}, {_context(key)}; physical cores: "
                  f"{'/'.join(map(str, cores)) or 'not recorded'}.", list(by_n), lambda n: [], min(by_n))


def _blas_group(key: dict[str, Any], by_blas: dict[Any, list[dict[str, Any]]]) -> _Group:
    framework, workload = key["framework"], key["workload"]
    study: dict[str, list[wu.Published]] = {}
    for p in wu.published_for(workload, wu.BASELINE_TABLES):
        study.setdefault(str(p.blas), []).append(p)
    base_name = BASE_BACKEND.get(framework, min(by_blas))
    model = wu.model_of(workload)
    own = model is not None and model.kit_framework == framework  # the study's row is its own framework's
    s_base = {p.table: p.train_time_s for p in study.get(base_name, [])}
    names = wu.STUDY_NAME.get(framework, {})
    kit_name = {v: k for k, v in names.items()}
    # The study's libraries the kit did not run (Theano's MKL without Intel's wheel) stay as rows, marked.
    unrun = [kit_name.get(b, b) for b in study if own and kit_name.get(b, b) not in by_blas]

    def cells(backend: Any) -> list[Inline]:
        published = study.get(names.get(backend, backend), []) if own else []
        return ["; ".join(f"Table {p.table}: {_time(p.train_time_s, s_base.get(p.table))}"
                          for p in published) or "—"]

    return _Group(f"{_model_text(workload)}, {_context(key)}.", [*by_blas, *unrun], cells, base_name)


_BATCH = _Sweep(
    "batch_size", "Batch size at a fixed number of epochs: Tables 15, 18 and 22",
    "No batch-size sweep here (`make wu-cpu-batch`).",
    "Training time in seconds and, in brackets, divided by the time at the study's default batch of the model (else "
    "the smallest batch run): the ratio is what transfers across hardware. Published: Table 15 (TensorFlow) or 18 "
    "(Theano), CPU use and memory from Table 22 (— where it prints none). Measured: the mean over successful "
    "repeats; CPU use as the study splits it (percent of the whole machine).",
    ["batch", "study: epochs", "study: training s (÷ default)", "study: accuracy %",
     "study: CPU user / system / iowait / total %", "study: memory mean / max MB", "kit: training s (÷ default)",
     "kit: accuracy %", "kit: CPU user / system / iowait / total %", "kit: memory mean / max MB", "runs"],
    label=str, lead=(), kit=("time", "accuracy", "cpu", "memory"), group=_batch_group)
_LR = _Sweep(
    "learning_rate", "Learning rate: Table 21", "No learning-rate sweep here (`make wu-cpu-lr`, `make wu-gpu-lr`).",
    "Training time and, in brackets, divided by the time at the model's default learning rate (else the smallest "
    "run); accuracy as measured. Published: Table 21 (TensorFlow on Server-1's GPU), its rows at the default batch "
    "and the baseline's iterations (Table 10), the ones the kit's sweep (the default batch and epochs) matches; its "
    "other rows (batch 5,000, 60,000 iterations) have no counterpart here.",
    ["learning rate", "study: training s (÷ default)", "study: accuracy %", "kit: training s (÷ default)",
     "kit: accuracy %", "runs"],
    label=lambda lr: f"{lr:g}", lead=(), kit=("time", "accuracy"), group=_lr_group)
_THREADS = _Sweep(
    "threads", "Threads", "No thread sweep here (`make wu-cpu-threads`).",
    "The study set OPENBLAS_NUM_THREADS from 4 to 48 on Server-2 (24 cores); wu2019.csv holds none of those times, "
    "so only the kit's are shown: training time and, in brackets, divided by the time at the fewest threads. The "
    "kit sets every thread-pool variable at once (OpenMP, MKL, OpenBLAS: bench/threads.py), not OpenBLAS's alone; "
    "the BLAS column is the library the runs' records say did the work (Wu-5 counts OpenBLAS runs only).",
    ["threads", "kit: training s (÷ fewest)", "kit: accuracy %", "BLAS loaded", "runs"],
    label=str, lead=(), kit=("time", "accuracy", "loaded"), group=_threads_group)
_BLAS = _Sweep(
    "blas", "BLAS library: Tables 10 and 11", "No BLAS sweep here (`make wu-cpu-blas`).",
    "Training time and, in brackets, divided by the time with Eigen (TensorFlow) or OpenBLAS (Theano), as the "
    "study's ratio MKL / Eigen (5.47× on Server-1, 5.08× on Server-2) or MKL / OpenBLAS. TensorFlow's `onednn` "
    "stands in for the study's MKL build (MKL-DNN, oneDNN's earlier name). Asked: the run's sweep point; loaded: "
    "what its record says did the work (run.json environment.libraries and library_settings).",
    ["asked", "loaded", "study: training s (÷ base)", "kit: training s (÷ base)", "kit: accuracy %",
     "kit: CPU user / system / iowait / total %", "runs"],
    label=str, lead=("loaded",), kit=("time", "accuracy", "cpu"), group=_blas_group)
# The one-factor sweeps, in the report's order.
SWEEPS = (_BATCH, _LR, _THREADS, _BLAS)


def wu_section(ctx: ReportContext) -> list[Block]:
    """Wu et al.'s tables (wu2019.csv) beside the kit's runs of its workloads: baseline, batch-size, learning-rate,
    thread and BLAS sweeps, and what is not reproduced; nothing when the campaign holds no run of them."""
    rows = wu.wu_rows(ctx.campaign.rows)
    if not rows:
        return []
    mapped = "; ".join(f"{m.framework} {m.dataset} -> `{m.workload}`" for m in wu.models() if m.workload)
    absent = "; ".join(f"{m.framework} {m.dataset}: {m.note}" for m in wu.models() if not m.workload)
    failed = [r for r in rows if r["status"] != "ok"]
    blocks: list[Block] = [
        Heading(2, f"{load_study(wu.STUDY).title}: its tables beside the kit's runs"),
        Para("Published: studies/wu/reference/wu2019.csv, the study's MNIST tables (10 and 11: baseline on two "
             "servers; 15 and 18: batch size at fixed epochs; 19: batch size at fixed iterations; 21: learning "
             "rate; 22: CPU use and memory per batch). The study's default models and the kit's workloads "
             f"(studies/wu/reference/wu2019_models.csv): {mapped}; {absent}. Each workload is trained in every "
             "framework of the campaign; the study's row belongs to its own framework. CPU use: the study's "
             "sysstat split, the kit's monitor records the same split of the whole machine (bench/monitor.py: user "
             "with nice, system with interrupts, iowait; total = their sum); memory: the kit's is the run's process "
             "tree (resident)."),
    ]
    if failed:
        blocks.append(Para(f"{len(failed)} runs of Wu's workloads failed and are not in these tables.", "note"))
    sweeps = [block for sweep in SWEEPS for block in _sweep_blocks(ctx, rows, sweep)]
    return (blocks + _baseline_blocks(ctx, rows) + sweeps
            + [Heading(3, "Not reproduced"), Bullets(list(NOT_REPRODUCED))])


# The report sections this study adds (studies.sections(), placed by analysis.report.sections()).
SECTIONS = (wu_section,)
