"""The campaign's figures, drawn from the run table and the runs' raw files only.

Figures are built on matplotlib.figure.Figure (no pyplot state) with the Agg renderer and written
atomically as PNG under <out>/figures/. A figure with nothing to show is skipped, not drawn empty.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # headless: the kit runs on servers and in CI without a display

from matplotlib.figure import Figure  # noqa: E402  (must follow the backend choice)
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from analysis.claims import caveat_for  # noqa: E402
from analysis.reference import ORIGIN_PAPER, device_env, published_for  # noqa: E402
from analysis.runs import Campaign, training_window_samples  # noqa: E402
from analysis.scoreboard import ACCURACY, TIME, ScoreRow, score_rows  # noqa: E402
from analysis.stats import describe  # noqa: E402
from analysis.summary import SHOWN_KEYS, CellSummary  # noqa: E402
from analysis.sweeps import group_label, minibatch_seconds, sweep_groups  # noqa: E402
from analysis.transfer import ACCURACY_TOLERANCE_PP  # noqa: E402
from bench import atomic  # noqa: E402
from bench.schema import SchemaError, read_metrics  # noqa: E402

FIGURE_DIR = "figures"
DPI = 100
# Bars switch to a log axis when the largest mean is this many times the smallest.
LOG_SCALE_SPREAD = 20.0
# The scoreboard figure's file name under figures/: the report shows it first, not among the others.
SCOREBOARD_FILE = "scoreboard.png"
# The numeric one-axis sweeps drawn as time and accuracy against the axis (Wu et al.'s sweeps), each with its
# x-axis scale base (log: the studies' values grow by factors).
SWEEP_FIGURES = {"batch_size": 10, "learning_rate": 10, "threads": 2}


@dataclass(frozen=True)
class FigureFile:
    """A written PNG and the words the report puts next to it."""

    path: Path
    title: str
    caption: str


# --- Labels and colours --------------------------------------------------------------------

def _varying_keys(cells: Sequence[CellSummary]) -> list[str]:
    # Besides the framework, name only the cell keys that differ within the campaign, so a plain
    # one-device campaign says "pytorch" and a mixed one says "pytorch (gpu, docker)".
    return [k for k in SHOWN_KEYS if k not in ("workload", "framework")
            and len({c.key[k] for c in cells}) > 1]


def series_label(key: dict[str, str], varying: Sequence[str]) -> str:
    """A legend label for a cell: its framework plus the keys that vary in the campaign."""
    extra = ", ".join(key[k] for k in varying)
    return f"{key['framework']} ({extra})" if extra else key["framework"]


def _series_colors(cells: Sequence[CellSummary]) -> dict[str, Any]:
    # One colour per legend label, the same in every figure of the campaign (a framework run on
    # two devices gets two colours, so its bars cannot be confused).
    varying = _varying_keys(cells)
    labels = sorted({series_label(c.key, varying) for c in cells})
    palette = matplotlib.colormaps["tab10"]
    return {label: palette(i % 10) for i, label in enumerate(labels)}


def _color(colors: dict[str, Any], cell: CellSummary, varying: Sequence[str]) -> Any:
    return colors[series_label(cell.key, varying)]


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name)


def _save(fig: Figure, path: Path) -> None:
    buf = io.BytesIO()
    # No "Software" stamp: the same runs give byte-identical PNGs across matplotlib patch releases.
    fig.savefig(buf, format="png", dpi=DPI, metadata={"Software": None})
    atomic.write_bytes(path, buf.getvalue())


# --- Bars over cells -----------------------------------------------------------------------

def _draw_bars(ax: Any, cells: Sequence[CellSummary], metric: str, colors: dict[str, Any],
               varying: Sequence[str], with_published: bool = False, missing: str = "no ok run") -> bool:
    """Grouped bars on ax (workload groups, one bar per series) of a metric's mean with 95 % CI bars.

    A cell without a mean gets a grey text mark (``missing``, or "no ok run" when no run of it
    succeeded) instead of a bar, so absence is visible. Returns True when the axis uses a log scale.
    """
    workloads = sorted({c.key["workload"] for c in cells})
    means = [c.estimates[metric].mean for c in cells if c.estimates[metric].mean is not None]
    widest = max(sum(c.key["workload"] == w for c in cells) for w in workloads)
    width = 0.8 / widest
    positive = [m for m in means if m > 0]
    log = bool(positive) and len(positive) == len(means) and max(positive) / min(positive) > LOG_SCALE_SPREAD
    marked: set[str] = set()
    for group, workload in enumerate(workloads):
        # Each group is centred on its tick, whatever subset of frameworks it holds.
        members = sorted((c for c in cells if c.key["workload"] == workload),
                         key=lambda c: series_label(c.key, varying))
        for i, cell in enumerate(members):
            label = series_label(cell.key, varying)
            x = group + (i - (len(members) - 1) / 2) * width
            est = cell.estimates[metric]
            if est.mean is None:
                # Written upright in the bar's own slot, so neighbouring marks cannot overlap.
                text = missing if cell.ok_rows else "no ok run"
                ax.annotate(f"{label}: {text}", (x, 0.03), xycoords=("data", "axes fraction"),
                            ha="center", va="bottom", rotation=90, fontsize=7, color="grey")
                continue
            ax.bar(x, est.mean, width * 0.9, color=_color(colors, cell, varying),
                   label=label if label not in marked else None,
                   yerr=est.half_width if est.sufficient else None, capsize=3)
            marked.add(label)
            ax.annotate(f"n={est.n}", (x, 0.02), xycoords=("data", "axes fraction"), ha="center",
                        va="bottom", fontsize=7, color="white")
            if with_published:
                # Beside the error bar, not on it, so both stay readable.
                _mark_published(ax, cell, x + width * 0.25)
    ax.set_xticks(range(len(workloads)), workloads)
    # Fixed limits: a panel with marks but no bar (e.g. no GPU anywhere) must still show them all.
    ax.set_xlim(-0.5, len(workloads) - 0.5)
    if log:
        ax.set_yscale("log")
    return log


def _bar_figure(cells: Sequence[CellSummary], metric: str, ylabel: str, title: str,
                path: Path, with_published: bool) -> bool:
    """One panel of grouped bars of a metric (see _draw_bars); False (nothing drawn) without any mean."""
    if not any(c.estimates[metric].mean is not None for c in cells):
        return False
    workloads = {c.key["workload"] for c in cells}
    widest = max(sum(c.key["workload"] == w for c in cells) for w in workloads)
    fig = Figure(figsize=(max(6.0, 2.5 + 0.8 * len(workloads) * widest), 4.2), layout="constrained")
    ax = fig.subplots()
    log = _draw_bars(ax, cells, metric, _series_colors(cells), _varying_keys(cells), with_published)
    ax.set_ylabel(ylabel + (" (log scale)" if log else ""))
    ax.set_title(title)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    _save(fig, path)
    return True


def _mark_published(ax: Any, cell: CellSummary, x: float) -> None:
    seen = set(ax.get_legend_handles_labels()[1])
    key = cell.key
    for ref in published_for(key["device"], key["workload"], key["framework"], "test_accuracy"):
        paper = ref.origin == ORIGIN_PAPER
        label = "published (paper)" if paper else "authors' log (run 1)"
        ax.plot([x], [ref.value], marker="D" if paper else "x", color="black" if paper else "dimgrey",
                linestyle="none", markersize=6, label=label if label not in seen else None)
        seen.add(label)


def training_time_figure(cells: Sequence[CellSummary], path: Path) -> FigureFile | None:
    """Mean training time per workload x framework with 95 % CI error bars over repeats."""
    if not _bar_figure(cells, "training_time_s", "training time (s)", "Training time", path, False):
        return None
    return FigureFile(path, "Training time", "Mean training time over successful repeats (all epochs, "
                      "test passes excluded); error bars: 95 % t-interval where n ≥ 2.")


def accuracy_figure(cells: Sequence[CellSummary], path: Path) -> FigureFile | None:
    """Mean test accuracy per workload x framework, with the published values as markers."""
    if not _bar_figure(cells, "test_accuracy", "test accuracy (%)", "Test accuracy", path, True):
        return None
    return FigureFile(path, "Test accuracy", "Mean final test accuracy over successful repeats; error bars: "
                      "95 % t-interval where n ≥ 2. Diamonds: the paper's value; crosses: the authors' logs.")


# --- The scoreboard ------------------------------------------------------------------------

_SCOREBOARD_PANELS = (
    # (metric, relative, axis label): accuracy as a difference in pp, time as a ratio on a log axis.
    (ACCURACY, False, "test accuracy: measured − published (pp)"),
    (TIME, True, "training time: measured / published (log scale)"),
)


def _score_limits(values: list[float], relative: bool, tolerance: float) -> tuple[float, float]:
    """x limits that hold every point and parity (0 with the tolerance band, or 1 on the log axis). Intervals
    do not widen them: with n = 2 a 95 % interval is wide enough to hide the points, so a line running off
    the panel reads as "wider than this"."""
    if relative:
        positive = [v for v in values if v > 0]
        lo, hi = min([1.0, *positive]), max([1.0, *positive])
        return lo / 2.5, hi * 2.5
    reach = max([tolerance, *(abs(v) for v in values)]) * 1.25
    return -reach, reach


def _score_panel(ax: Any, rows: Sequence[ScoreRow], metric: str, relative: bool, colors: dict[str, Any],
                 varying: Sequence[str]) -> set[str]:
    """One panel of the scoreboard: a dot per row at measured − published (or / published), its 95 %
    interval as a line, parity as a vertical line; a grey note where there is nothing to plot. Returns the
    legend kinds drawn ('paper', 'log', 'bound')."""
    kinds: set[str] = set()
    values: list[float] = []
    top = len(rows) - 1
    for i, row in enumerate(rows):
        score, y = row.score(metric), top - i
        value = score.ratio if relative else score.difference
        if value is None:
            why = "no published number" if score.published is None else (
                "no ok run" if not row.cell.ok_rows else "not measured")
            ax.annotate(why, (0.5, y), xycoords=("axes fraction", "data"), ha="center", va="center",
                        fontsize=7, color="grey")
            continue
        color = _color(colors, row.cell, varying)
        interval = score.interval(relative)
        if interval is not None:
            # A ratio's interval can reach below zero (n = 2): on the log axis it starts at the edge.
            low = interval[0] if not relative or interval[0] > 0 else value / 1e6
            ax.plot((low, interval[1]), (y, y), color=color, linewidth=1.6, solid_capstyle="butt")
        kind = "bound" if relative and score.lower_bound else (
            "paper" if score.published.origin == ORIGIN_PAPER else "log")
        kinds.add(kind)
        ax.plot([value], [y], marker=_SCORE_MARKERS[kind], color=color, markersize=7, linestyle="none")
        text = f"{'<' if kind == 'bound' else ''}{value:.3g}×" if relative else f"{value:+.1f} pp"
        ax.annotate(text, (value, y), xytext=(0, 5), textcoords="offset points", ha="center", va="bottom",
                    fontsize=7)
        values.append(value)
    if relative:
        ax.set_xscale("log")
        ax.axvline(1.0, color="black", linewidth=1)
    else:
        ax.axvspan(-ACCURACY_TOLERANCE_PP, ACCURACY_TOLERANCE_PP, color="#d4f4dd", zorder=0)
        ax.axvline(0.0, color="black", linewidth=1)
    ax.set_xlim(*_score_limits(values, relative, ACCURACY_TOLERANCE_PP))
    ax.grid(axis="x", color="#e4e4e4", linewidth=0.6)
    return kinds


_SCORE_MARKERS = {"paper": "o", "log": "s", "bound": "<"}
_SCORE_LEGEND = {"paper": "vs the paper's number", "log": "vs the authors' log (run 1)",
                 "bound": "vs the paper's lower bound (ratio at most this)"}


def scoreboard_figure(cells: Sequence[CellSummary], path: Path) -> FigureFile | None:
    """The scoreboard as a dot plot, one row per cell: test accuracy measured − published (pp, the
    ACCURACY_TOLERANCE_PP band shaded) and training time measured / published (log axis), parity marked;
    95 % intervals as lines where n >= 2. None when no cell has a measured value beside a published one."""
    rows = score_rows(cells)
    if not any(r.score(m).difference is not None for r in rows for m, _, _ in _SCOREBOARD_PANELS):
        return None
    varying, colors = _varying_keys(cells), _series_colors(cells)
    fig = Figure(figsize=(11.0, 1.0 + 0.27 * len(rows)), layout="constrained")
    axes = fig.subplots(1, len(_SCOREBOARD_PANELS), sharey=True)
    kinds: set[str] = set()
    for ax, (metric, relative, xlabel) in zip(axes, _SCOREBOARD_PANELS):
        kinds |= _score_panel(ax, rows, metric, relative, colors, varying)
        ax.set_xlabel(xlabel, fontsize=9)
        ax.tick_params(labelsize=8)
    labels = [f"{r.key['workload']}  {series_label(r.key, varying)}" for r in rows]
    axes[0].set_yticks(range(len(rows)), labels[::-1])
    axes[0].set_ylim(-0.6, len(rows) - 0.4)
    handles = [Line2D([], [], marker=_SCORE_MARKERS[k], color="dimgrey", linestyle="none", label=_SCORE_LEGEND[k])
               for k in _SCORE_MARKERS if k in kinds]
    axes[-1].legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    caveat = caveat_for(r for c in cells for r in c.ok_rows)
    fig.suptitle("Measured vs published" + (f" ({caveat})" if caveat else ""), fontsize=10)
    _save(fig, path)
    return FigureFile(path, "Scoreboard: measured vs published",
                      f"Dots: the table's accuracy difference (±{ACCURACY_TOLERANCE_PP:g} pp shaded) and time ratio "
                      "(1 = parity); lines: the 95 % t-interval of the mean where n ≥ 2.")


# --- Utilization per framework -------------------------------------------------------------

_UTILIZATION_PANELS = (
    ("cpu_util_mean_pct", "CPU utilization (%)\n(mean over cores)", "not measured"),
    ("gpu_util_mean_pct", "GPU utilization (%)", "no GPU"),
    ("mem_mean_mb", "memory mean (MB)", "not measured"),
)


def utilization_figure(cells: Sequence[CellSummary], device: str, path: Path,
                       all_cells: Sequence[CellSummary] | None = None) -> FigureFile | None:
    """CPU, GPU and memory means per workload and framework on one device, as three bar panels.

    GPU bars read "no GPU" where the runs measured none. ``all_cells`` keeps colours the same as in
    the other figures when the campaign set spans several devices. None when nothing was measured.
    """
    mine = [c for c in cells if device_env(c.key["device"]) == device]
    if not any(c.estimates[m].mean is not None for c in mine for m, _, _ in _UTILIZATION_PANELS):
        return None
    palette_cells = list(all_cells) if all_cells is not None else list(cells)
    colors, varying = _series_colors(palette_cells), _varying_keys(palette_cells)
    workloads = {c.key["workload"] for c in mine}
    widest = max(sum(c.key["workload"] == w for c in mine) for w in workloads)
    fig = Figure(figsize=(max(7.0, 3.0 + 0.8 * len(workloads) * widest), 8.4), layout="constrained")
    axes = fig.subplots(len(_UTILIZATION_PANELS), 1, squeeze=False)[:, 0]
    for ax, (metric, ylabel, missing) in zip(axes, _UTILIZATION_PANELS):
        log = _draw_bars(ax, mine, metric, colors, varying, missing=missing)
        if metric.endswith("_pct") and all(c.estimates[metric].mean is None for c in mine):
            ax.set_ylim(0, 100)  # an empty percentage panel still reads as a 0-100 % scale
        ax.set_ylabel(ylabel + (" (log)" if log else ""), fontsize=8)
    axes[0].set_title(f"Resource utilization during training: {device.upper()} runs")
    axes[0].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    _save(fig, path)
    return FigureFile(path, f"Utilization, {device.upper()} runs",
                      f"Mean CPU utilization (dlbench Eq. 1-2), GPU utilization (Eq. 3) and process-tree memory "
                      f"over the training window of the successful {device.upper()} repeats; error bars: 95 % "
                      "t-interval where n ≥ 2. \"no GPU\": the runs measured no GPU.")


# --- Per-workload lines --------------------------------------------------------------------

def _cells_of(cells: Sequence[CellSummary], workload: str) -> list[CellSummary]:
    return [c for c in cells if c.key["workload"] == workload]


def mean_curve(run_dirs: Sequence[Path]) -> list[tuple[int, float]]:
    """Test accuracy (percent) per epoch, averaged over runs at each epoch that has values."""
    per_epoch: dict[int, list[float | None]] = {}
    for run_dir in run_dirs:
        for rec in read_metrics(run_dir):
            acc = rec["test_accuracy"]
            per_epoch.setdefault(rec["epoch"], []).append(None if acc is None else acc * 100)
    curve = []
    for epoch in sorted(per_epoch):
        mean = describe(per_epoch[epoch]).mean
        if mean is not None:
            curve.append((epoch, mean))
    return curve


def convergence_figure(campaign: Campaign, cells: Sequence[CellSummary], workload: str,
                       path: Path) -> FigureFile | None:
    """Test accuracy after each epoch, one line per framework (mean over successful repeats)."""
    varying = _varying_keys(cells)
    colors = _series_colors(cells)
    fig = Figure(figsize=(6.4, 4.0), layout="constrained")
    ax = fig.subplots()
    drawn = 0
    for cell in _cells_of(cells, workload):
        try:
            curve = mean_curve([Path(r["run_dir"]) for r in cell.ok_rows])
        except (SchemaError, ValueError, OSError) as exc:
            campaign.problems.append(f"{workload}/{cell.key['framework']}: metrics.jsonl unreadable ({exc}); "
                                     "no convergence curve")
            continue
        if not curve:
            continue
        epochs, accs = zip(*curve)
        ax.plot(epochs, accs, marker="o", markersize=3, color=_color(colors, cell, varying),
                label=f"{series_label(cell.key, varying)} (n={len(cell.ok_rows)})")
        drawn += 1
    if not drawn:
        return None
    ax.set_xlabel("epoch")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("test accuracy (%)")
    ax.set_title(f"Convergence: {workload}")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    _save(fig, path)
    return FigureFile(path, f"Convergence, {workload}",
                      "Test accuracy after each epoch, mean over the successful repeats of each framework.")


def sweep_figure(rows: Sequence[dict[str, Any]], axis: str, path: Path) -> FigureFile | None:
    """Training time and test accuracy against a one-axis sweep's values (analysis.sweeps.sweep_groups), one line per
    workload and framework, means over repeats; epoch-protocol runs only (iteration-protocol sweeps have no accuracy:
    the Shi section tabulates them). None without such a sweep."""
    groups = [(key, points) for key, points in sweep_groups(rows, axis)
              if all(minibatch_seconds(r) is None for runs in points.values() for r in runs)]
    if not groups:
        return None
    fig = Figure(figsize=(9.6, 4.0), layout="constrained")
    time_ax, acc_ax = fig.subplots(1, 2)
    for key, points in groups:
        xs = list(points)
        label = group_label(key)
        time_ax.plot(xs, [describe(r["training_time_s"] for r in points[x]).mean for x in xs], marker="o", label=label)
        acc_ax.plot(xs, [describe(r["test_accuracy"] for r in points[x]).mean for x in xs], marker="o", label=label)
    for ax, ylabel in ((time_ax, "training time (s)"), (acc_ax, "test accuracy (%)")):
        ax.set_xscale("log", base=SWEEP_FIGURES[axis])
        ax.set_xlabel(axis.replace("_", " "))
        ax.set_ylabel(ylabel)
    time_ax.set_yscale("log")
    acc_ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.suptitle(f"Training time and accuracy against {axis.replace('_', ' ')}")
    _save(fig, path)
    return FigureFile(path, f"Sweep: {axis.replace('_', ' ')}",
                      f"Training time (log scale) and test accuracy of each workload and framework at each {axis} of "
                      "its one-axis sweep, means over the successful repeats (epoch-protocol runs).")


def _first_run(cell: CellSummary) -> dict[str, Any] | None:
    # The lowest successful repeat; a cell with only failed runs shows its first failed run, whose
    # samples up to the failure are still evidence (e.g. memory growing until an OOM).
    ranked = sorted(cell.rows, key=lambda r: (r["status"] != "ok", r["repeat"]))
    return ranked[0] if ranked else None


_RESOURCE_PANELS = (
    ("cpu_util_pct", "CPU utilization (%)\n(mean over cores)"),
    ("proc_rss_mb", "process-tree memory\n(RSS, MB)"),
    ("gpu_util_pct", "GPU utilization (%)"),
)
_PANEL_CAPTIONS = {
    "cpu_util_pct": "CPU utilization as dlbench Eq. 1-2 (mean over cores)",
    "proc_rss_mb": "resident memory of the run's process tree",
    "gpu_util_pct": "GPU utilization of the run's device",
}


def resource_figure(campaign: Campaign, cells: Sequence[CellSummary], workload: str,
                    path: Path) -> FigureFile | None:
    """CPU utilization and process-tree memory (and GPU use, if measured) over the training window."""
    varying = _varying_keys(cells)
    colors = _series_colors(cells)
    series: list[tuple[CellSummary, dict[str, Any], list[dict[str, Any]]]] = []
    for cell in _cells_of(cells, workload):
        row = _first_run(cell)
        if row is None:
            continue
        run = campaign.runs[row["run_id"]]
        try:
            samples = training_window_samples(Path(row["run_dir"]), run["timing"])
        except (SchemaError, ValueError, OSError):
            continue  # loading the campaign already reported the unreadable monitor.csv
        if samples:
            series.append((cell, row, samples))
    if not series:
        return None
    panels = [p for p in _RESOURCE_PANELS
              if any(s[p[0]] is not None for _, _, samples in series for s in samples)]
    if not panels:
        return None
    fig = Figure(figsize=(7.0, 2.2 * len(panels) + 0.6), layout="constrained")
    axes = fig.subplots(len(panels), 1, sharex=True, squeeze=False)[:, 0]
    for cell, row, samples in series:
        t0 = campaign.runs[row["run_id"]]["timing"]["train_start_unix"] or samples[0]["time_unix"]
        failed = "" if row["status"] == "ok" else ", failed"
        label = f"{series_label(cell.key, varying)} (repeat {row['repeat']}{failed})"
        for ax, (column, _) in zip(axes, panels):
            points = [(s["time_unix"] - t0, s[column]) for s in samples if s[column] is not None]
            if points:
                xs, ys = zip(*points)
                ax.plot(xs, ys, linewidth=1.2, color=_color(colors, cell, varying), label=label)
    for ax, (_, ylabel) in zip(axes, panels):
        ax.set_ylabel(ylabel, fontsize=8)
    axes[0].set_title(f"Resource use during training: {workload}")
    axes[0].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    axes[-1].set_xlabel("seconds since training start")
    _save(fig, path)
    return FigureFile(path, f"Resource use, {workload}",
                      "1 s monitor samples over the training window of each framework's first successful "
                      "repeat (its first failed run where none succeeded): "
                      + ", ".join(_PANEL_CAPTIONS[column] for column, _ in panels) + ".")


# --- All figures ---------------------------------------------------------------------------

def make_figures(campaign: Campaign, cells: Sequence[CellSummary], out_dir: Path) -> list[FigureFile]:
    """Draw every figure of the campaign under out_dir/figures; return those written, in report order."""
    fig_dir = Path(out_dir) / FIGURE_DIR
    figures = [
        scoreboard_figure(cells, fig_dir / SCOREBOARD_FILE),
        training_time_figure(cells, fig_dir / "training_time.png"),
        accuracy_figure(cells, fig_dir / "test_accuracy.png"),
    ]
    # One utilization figure per device, so CPU and GPU runs of a campaign set get their own panels.
    for device in sorted({device_env(c.key["device"]) for c in cells}):
        figures.append(utilization_figure(cells, device, fig_dir / f"utilization_{device}.png", cells))
    for workload in sorted({c.key["workload"] for c in cells}):
        name = _safe(workload)
        figures.append(convergence_figure(campaign, cells, workload, fig_dir / f"convergence_{name}.png"))
        figures.append(resource_figure(campaign, cells, workload, fig_dir / f"resources_{name}.png"))
    for axis in SWEEP_FIGURES:
        figures.append(sweep_figure(campaign.ok_rows, axis, fig_dir / f"sweep_{axis}.png"))
    return [f for f in figures if f is not None]

