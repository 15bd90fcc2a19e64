"""DLBench's findings read from the runs' per-epoch records, their workloads and CPU/GPU pairs: peak epochs (Sec 5.4,
5.5.4), Wilcoxon tests on resource use (5.3, 5.5.3) and the LSTM GPU speed-ups (5.5.2). The published numbers these
compare with are read from reference/dlbench.csv."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import combinations

from analysis.claims import (
    ORDER_OF_MAGNITUDE_LOW,
    ClaimResult,
    ResultsTable,
    cell_mean,
    cell_run_ids,
    group_label,
    insufficient,
    measured_groups,
    speedup_text,
    verdict_for,
    winner_result,
)
from analysis.reference import PublishedValue, device_env
from analysis.stats import describe, format_number, min_wilcoxon_pairs, wilcoxon_paired
from analysis.summary import CellSummary
from analysis.transfer import speedups
from studies.dlbench.published import expanded

# dlbench.csv's metrics that say where a framework's accuracy peaked (Sec 5.4, 5.5.4).
PEAK_METRICS = ("peak_accuracy_epoch", "peak_accuracy")
# A curve shorter than this has no peak to speak of: with 2 epochs the "peak" is one of the ends.
MIN_CURVE_EPOCHS = 3


def published(metrics: Sequence[str]) -> dict[tuple[str, str, str], PublishedValue]:
    """{(env, kit workload, framework): the csv's row of those metrics (a framework's own before a '*' row)}, for
    workloads the kit has."""
    out: dict[tuple[str, str, str], PublishedValue] = {}
    for p, env, workload, fw in expanded(metrics):
        out.setdefault((env, workload, fw), p)
    return out


def mean_curve(t: ResultsTable, cell: CellSummary) -> dict[int, float]:
    """{epoch: mean test accuracy in percent over the cell's successful repeats} from their metrics.jsonl records."""
    per_epoch: dict[int, list[float | None]] = {}
    for row in cell.ok_rows:
        for rec in t.epochs.get(row["run_id"], []):
            acc = rec.get("test_accuracy")
            per_epoch.setdefault(rec["epoch"], []).append(None if acc is None else acc * 100)
    out = {e: describe(v).mean for e, v in per_epoch.items()}
    return {e: m for e, m in out.items() if m is not None}


def peak(curve: dict[int, float]) -> tuple[int, float]:
    """(first epoch of the highest accuracy, that accuracy)."""
    top = max(curve.values())
    return min(e for e, v in curve.items() if v == top), top


# --- Peak epochs -----------------------------------------------------------------------------

def peaks_before_last_epoch(t: ResultsTable) -> ClaimResult:
    """Study notes: "Convergence: test accuracy after each epoch (curves per framework)"; dlbench.csv, Sec 5.4 and
    5.5.4: peak epochs 12-14 of MNIST's 15 (five frameworks), about 60 of CIFAR-10's 100 (PyTorch, Chainer), 37 of
    PTB's 50 (PyTorch), Theano's IMDB 90 % at epoch 19 then a sharp drop, Chainer's Many things (GPU) at 50 of 100.
    Test: for each (device, workload, framework) the csv gives a peak for, the cell's mean test-accuracy curve
    (mean over successful repeats at each epoch, >= 3 epochs); its peak is the first epoch of its highest accuracy.
    Reproduced when every such curve peaks before its last epoch; not reproduced when any peaks at the last.
    Insufficient data without such a curve."""
    expected = published(PEAK_METRICS)
    parts, holds, used = [], True, []
    for cell in t.cells:
        p = expected.get((device_env(cell.key["device"]), cell.key["workload"], cell.key["framework"].lower()))
        curve = mean_curve(t, cell) if p else {}
        if len(curve) < MIN_CURVE_EPOCHS:
            continue
        epoch, acc = peak(curve)
        ok = epoch < max(curve)
        holds &= ok
        used.append(cell)
        parts.append(f"{cell.key['framework']} {cell.key['workload']}/{cell.key['device']}: peak "
                     f"{format_number(acc, 4)} % at epoch {epoch} of {max(curve)} (paper {p.metric} "
                     f"{p.value_text}, {p.qualifier})" + ("" if ok else " (fails)"))
    if not parts:
        return insufficient(f"no accuracy curve of >= {MIN_CURVE_EPOCHS} epochs for a workload and framework whose "
                            "peak the paper gives")
    return ClaimResult(verdict_for(holds), "; ".join(parts), cell_run_ids(used))


def no_framework_peaks_earliest(t: ResultsTable) -> ClaimResult:
    """Sec 5.4 (inventory of the paper; study notes give no sentence): no framework reaches its peak accuracy
    earliest on every dataset. Test: in every (workload, device) group where at least 2 frameworks have a mean
    test-accuracy curve of >= 3 epochs, find the framework(s) whose curve peaks at the earliest epoch (first epoch
    of the highest mean accuracy; ties all count). Reproduced when no framework is earliest in every group; not
    reproduced when one is. Insufficient data with fewer than 2 such groups."""
    groups, used = [], []
    for group, members in measured_groups(t, "test_accuracy"):
        curves = {c.key["framework"]: mean_curve(t, c) for c in members}
        peaks = {fw: float(peak(cv)[0]) for fw, cv in curves.items() if len(cv) >= MIN_CURVE_EPOCHS}
        if len(peaks) >= 2:
            groups.append((group_label(group), peaks))
            used += [c for c in members if c.key["framework"] in peaks]
    if len(groups) < 2:
        return insufficient(f"{len(groups)} (workload, device) group(s) with >= 2 frameworks' accuracy curves of "
                            f">= {MIN_CURVE_EPOCHS} epochs; needs >= 2", cell_run_ids(used))
    return winner_result(groups, lowest=True, unit="epoch", run_ids=cell_run_ids(used))


# --- Wilcoxon tests on resource use -----------------------------------------------------------

def resource_use_differs(metrics: Sequence[str], devices: Sequence[str], basis: str
                         ) -> Callable[[ResultsTable], ClaimResult]:
    """A check that frameworks differ significantly in the metrics: per pair of frameworks, a Wilcoxon signed-rank test
    of their mean values paired over the (workload, device) groups both ran (analysis.stats.wilcoxon_paired), so
    that the study's six datasets decide at any repeat count; `basis` quotes the sentence it rests on."""
    def check(t: ResultsTable) -> ClaimResult:
        tests, parts, used = [], [], []
        for column in metrics:
            groups = [{c.key["framework"]: c for c in cs} for g, cs in measured_groups(t, column)
                      if device_env(g["device"]) in devices]
            for a, b in combinations(sorted({fw for g in groups for fw in g}), 2):
                both = [g for g in groups if a in g and b in g]
                result = wilcoxon_paired([cell_mean(g[a], column) for g in both],
                                         [cell_mean(g[b], column) for g in both])
                if result.significant() is None:
                    continue
                tests.append(result)
                parts.append(f"{column} {a} vs {b} over {len(both)} workloads: {result.text('W')}")
                used += cell_run_ids(c for g in both for c in (g[a], g[b]))
        if not tests:
            return insufficient(f"no framework pair measured in >= {min_wilcoxon_pairs()} (workload, device) groups "
                                f"with differing {', '.join(metrics)} (a Wilcoxon test needs them to reach p < 0.05)")
        differ = sum(bool(x.significant()) for x in tests)
        evidence = f"{differ} of {len(tests)} framework pairs differ (p < 0.05; more than half needed): " \
                   + "; ".join(parts)
        return ClaimResult(verdict_for(differ * 2 > len(tests)), evidence, tuple(dict.fromkeys(used)))

    check.__doc__ = (
        f"{basis} Test: for every pair of frameworks, a Wilcoxon signed-rank test of their mean "
        f"{', '.join(metrics)} paired over the {'/'.join(devices)} (workload, device) groups both ran (two-sided, "
        f"exact; a pair needs >= {min_wilcoxon_pairs()} groups with differing means to reach p < 0.05: the CNN and "
        "LSTM experiments together hold six). Reproduced when more than half of the pairs so tested differ "
        "(p < 0.05); not reproduced otherwise. Insufficient data without such a pair.")
    return check


# --- LSTM GPU speed-ups ---------------------------------------------------------------------

def lstm_gpu_speedups(t: ResultsTable) -> ClaimResult:
    """dlbench.csv, Sec 5.5.2: GPU speed-ups over CPU of the LSTMs: Theano 11× on IMDB and more than 15× on PTB;
    Chainer 1.5× on IMDB and more than 11× on Many things; Keras on IMDB faster on CPU alone. Test: speed-up = mean
    CPU training time / mean GPU training time of one workload and framework (analysis.transfer.speedups), for each
    workload and framework the csv prints a speed-up for. Each holds when it falls on the same side of 10**0.5 ≈
    3.16 (the nearest order of magnitude is 10×) as the paper's. Reproduced when every such speed-up holds; not
    reproduced when any falls on the other side. Insufficient data without such a CPU/GPU pair."""
    expected = {(wl, fw): p for (env, wl, fw), p in published(("gpu_speedup_over_cpu",)).items()}
    found = [(s, expected[(s.cpu.key["workload"], s.cpu.key["framework"].lower())]) for s in speedups(t.cells)
             if s.value is not None and (s.cpu.key["workload"], s.cpu.key["framework"].lower()) in expected]
    if not found:
        return insufficient("no CPU and GPU training times of a workload and framework whose GPU speed-up the paper "
                            "prints")
    parts, holds = [], True
    for s, p in found:
        ok = (s.value >= ORDER_OF_MAGNITUDE_LOW) == (p.value >= ORDER_OF_MAGNITUDE_LOW)
        holds &= ok
        parts.append(f"{speedup_text(s)} (paper {p.value_text}, {p.qualifier}; "
                     f"{'≥' if p.value >= ORDER_OF_MAGNITUDE_LOW else '<'} {ORDER_OF_MAGNITUDE_LOW:.2f}× expected): "
                     + ("holds" if ok else "fails"))
    return ClaimResult(verdict_for(holds), "; ".join(parts),
                       cell_run_ids(c for s, _ in found for c in (s.cpu, s.gpu)))
