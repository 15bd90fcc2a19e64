"""Per-cell summaries computed with pandas from the run table, and the tables written beside the report.

Rows are hand-made (tests/resultrows.py), so every statistic is computed by hand below.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from analysis.runs import load_campaign, run_frame
from analysis.stats import INSUFFICIENT_DATA
from analysis.summary import SUMMARY_COLUMNS, parquet_available, summarize, summary_table, write_tables
from tests.analysis.reading import read_csv
from tests.resultrows import row
from tests.runfactory import make_run

T_975 = {2: 4.302652730}  # Student-t quantile t(0.975, df), from a printed table

ROWS = [
    row("pytorch", "cnn-mnist", repeat=1, time=10.0, acc=90.0),
    row("pytorch", "cnn-mnist", repeat=2, time=12.0, acc=91.0),
    row("pytorch", "cnn-mnist", repeat=3, time=14.0, acc=None),
    row("pytorch", "cnn-mnist", repeat=4, status="failed", cause="oom"),
    row("keras", "cnn-mnist", repeat=1, status="failed", cause="nan"),
    row("keras", "cnn-mnist", repeat=2, status="failed", cause="nan"),
    row("keras", "lstm-imdb", repeat=1, time=7.0, acc=80.0, cpu=float("inf")),
]


def cell(table: pd.DataFrame, framework: str, workload: str) -> pd.Series:
    (index,) = table.index[(table["framework"] == framework) & (table["workload"] == workload)]
    return table.loc[index]


def test_one_row_per_cell_in_key_order_with_counts_and_causes() -> None:
    table = summary_table(ROWS)
    assert tuple(table.columns) == SUMMARY_COLUMNS
    assert list(zip(table["workload"], table["framework"])) == [
        ("cnn-mnist", "keras"), ("cnn-mnist", "pytorch"), ("lstm-imdb", "keras")]
    pytorch = cell(table, "pytorch", "cnn-mnist")
    assert (pytorch["n_ok"], pytorch["n_failed"], pytorch["failure_causes"]) == (3, 1, "oom:1")
    assert pytorch["run_ids"].split(";")[-1] == "pytorch-cnn-mnist-cpu-b128-lr0.01-r4"
    keras = cell(table, "keras", "cnn-mnist")
    assert (keras["n_ok"], keras["n_failed"], keras["failure_causes"]) == (0, 2, "nan:2")


def test_statistics_over_the_successful_runs_match_hand_computation() -> None:
    pytorch = cell(summary_table(ROWS), "pytorch", "cnn-mnist")
    # times 10, 12, 14: mean 12, s = 2, half = t(.975, 2) * 2 / sqrt(3); the failed run does not count.
    half = T_975[2] * 2.0 / math.sqrt(3)
    assert (pytorch["training_time_s_n"], pytorch["training_time_s_mean"]) == (3, 12.0)
    assert pytorch["training_time_s_std"] == pytest.approx(2.0)
    assert pytorch["training_time_s_ci95_low"] == pytest.approx(12.0 - half, rel=1e-8)
    assert pytorch["training_time_s_ci95_high"] == pytest.approx(12.0 + half, rel=1e-8)
    # Accuracy was not measured in repeat 3: two values.
    assert (pytorch["test_accuracy_n"], pytorch["test_accuracy_mean"]) == (2, 90.5)
    assert pytorch["notes"] == ""


def test_too_few_values_give_no_interval_and_a_note() -> None:
    table = summary_table(ROWS)
    keras = cell(table, "keras", "cnn-mnist")
    assert keras["training_time_s_n"] == 0 and pd.isna(keras["training_time_s_mean"])
    imdb = cell(table, "keras", "lstm-imdb")
    assert (imdb["training_time_s_n"], imdb["training_time_s_mean"]) == (1, 7.0)
    assert pd.isna(imdb["training_time_s_std"]) and pd.isna(imdb["training_time_s_ci95_low"])
    # A non-finite value is not a measurement.
    assert imdb["cpu_util_mean_pct_n"] == 0
    assert imdb["notes"] == f"{INSUFFICIENT_DATA} (n<2): training_time_s, test_accuracy, mem_mean_mb, mem_peak_mb"


def test_cells_for_the_report_carry_the_table_figures() -> None:
    cells = summarize(run_frame(ROWS))
    assert [(c.key["framework"], c.key["workload"]) for c in cells] == [
        ("keras", "cnn-mnist"), ("pytorch", "cnn-mnist"), ("keras", "lstm-imdb")]
    pytorch = cells[1]
    est = pytorch.estimates["training_time_s"]
    assert (est.n, est.mean, est.std) == (3, 12.0, pytest.approx(2.0))
    assert (len(pytorch.ok_rows), len(pytorch.failed_rows), pytorch.failure_causes()) == (3, 1, "oom:1")
    keras = cells[0].estimates["test_accuracy"]
    assert (keras.n, keras.mean, keras.std, keras.ci_low) == (0, None, None, None)
    assert cells[0].failure_causes() == "nan:2"
    # Rows given as dicts make the same cells.
    assert [c.estimates for c in summarize(ROWS)] == [c.estimates for c in cells]


def test_tables_are_csv_and_parquet_where_pyarrow_is_installed(tmp_path: Path) -> None:
    campaign = load_campaign(make_run(tmp_path / "results" / "c", "pytorch", "cnn-mnist", 1).parent)
    written = write_tables(campaign, summary_table(campaign.table), tmp_path / "out")
    names = {p.name for p in written}
    parquet = {"runs.parquet", "summary.parquet"} if parquet_available() else set()
    assert names == {"runs.csv", "summary.csv"} | parquet
    assert {p.name for p in (tmp_path / "out" / "tables").iterdir()} == names
    (runs,) = read_csv(tmp_path / "out" / "tables" / "runs.csv")
    assert (runs["repeat"], runs["failure_cause"], runs["test_accuracy"]) == ("1", "", "98")
    if parquet:
        assert pd.read_parquet(tmp_path / "out" / "tables" / "runs.parquet")["run_id"].tolist() == [runs["run_id"]]


def test_not_learnt_lists_ok_runs_within_the_margin_of_their_majority_accuracy(tmp_path: Path) -> None:
    from analysis import load
    from analysis.summary import LEARNT_MARGIN_PP, not_learnt

    campaign = tmp_path / "results" / "floor"
    make_run(campaign, "pytorch", "lstm-ptb", 1, accuracy=0.0494, majority=0.0494)
    make_run(campaign, "pytorch", "lstm-ptb", 2, accuracy=0.0494 + (LEARNT_MARGIN_PP - 0.1) / 100, majority=0.0494)
    make_run(campaign, "keras", "lstm-ptb", 1, accuracy=0.0494 + (LEARNT_MARGIN_PP + 0.1) / 100, majority=0.0494)
    make_run(campaign, "theano", "lstm-ptb", 1, accuracy=0.0494)  # no majority recorded
    make_run(campaign, "mxnet", "lstm-ptb", 1, status="failed", accuracy=None, majority=0.0494)
    runs = load(campaign)
    assert runs.set_index("run_id").majority_accuracy.dropna().round(2).to_dict() == {
        "pytorch-lstm-ptb-cpu-r1": 4.94, "pytorch-lstm-ptb-cpu-r2": 4.94, "keras-lstm-ptb-cpu-r1": 4.94,
        "mxnet-lstm-ptb-cpu-r1": 4.94}
    assert sorted(not_learnt(runs).run_id) == ["pytorch-lstm-ptb-cpu-r1", "pytorch-lstm-ptb-cpu-r2"]


def test_each_sweep_point_is_a_cell_of_its_own(tmp_path: Path) -> None:
    from analysis import load
    from analysis.sections.columns import cell_columns

    campaign = tmp_path / "results" / "sweep"
    for threads, seconds in ((1, 40.0), (2, 24.0)):
        for repeat in (1, 2):
            make_run(campaign, "pytorch", "cnn-mnist", repeat, training_time=seconds + repeat,
                     sweep={"threads": threads}, run_id=f"t{threads}-r{repeat}")
    runs = load(campaign)
    assert sorted(zip(runs.sweep, runs.threads, strict=True)) == [("threads=1", 1)] * 2 + [("threads=2", 2)] * 2
    table = summary_table(runs)
    assert table.set_index("sweep").training_time_s_mean.to_dict() == {"threads=1": 41.5, "threads=2": 25.5}
    assert "sweep" in cell_columns(summarize(runs, table))


def test_iteration_protocol_runs_give_their_per_mini_batch_figures() -> None:
    from analysis.runs import iteration_columns

    timing = {"protocol": "iterations", "warmup_iterations": 4, "measured_iterations": 20,
              "iteration_time_s": {"mean": 1.25, "median": 1.2, "std": 0.1, "min": 1.1, "max": 1.6, "p5": 1.1,
                                   "p95": 1.5}}
    assert iteration_columns(timing) == {"iteration_time_mean_s": 1.25, "iteration_time_median_s": 1.2,
                                         "iteration_time_std_s": 0.1, "iteration_time_p5_s": 1.1,
                                         "iteration_time_p95_s": 1.5, "measured_iterations": 20,
                                         "warmup_iterations": 4, "warmup_time_s": None}
    assert set(iteration_columns({"training_time_s": 9.0}).values()) == {None}  # the epoch protocol


def test_iteration_protocol_cells_summarize_their_seconds_per_mini_batch() -> None:
    # Two repeats of 0.5 and 0.7 s per mini-batch; epoch-protocol cells have none (n = 0, no note for it).
    rows = [{**row("pytorch", "fcn-r-mnist", repeat=r), "iteration_time_mean_s": s, "iteration_time_std_s": 0.1 * r}
            for r, s in ((1, 0.5), (2, 0.7))]
    table = summary_table([*rows, row("keras", "cnn-mnist")])
    fcn = cell(table, "pytorch", "fcn-r-mnist")
    assert (fcn["iteration_time_mean_s_n"], fcn["iteration_time_mean_s_mean"]) == (2, pytest.approx(0.6))
    assert fcn["iteration_time_std_s_mean"] == pytest.approx(0.15)
    keras = cell(table, "keras", "cnn-mnist")
    assert keras["iteration_time_mean_s_n"] == 0 and "iteration_time" not in keras["notes"]


def test_a_cell_is_its_sweep_columns_never_its_display_text() -> None:
    """Runs at two sweep points are two cells, and two frameworks at one point one comparison group, by the sweep
    columns (sweep_<axis>) alone: a display text that does not tell the points apart does not merge them."""
    from analysis.transfer import framework_groups

    rows = [{**row(fw, "cnn-mnist", repeat=r, time=t), "run_id": f"{fw}-t{n}-r{r}", "sweep": "", "sweep_threads": n}
            for fw in ("keras", "pytorch") for n, times in ((2, (10.0, 12.0)), (4, (6.0,)))
            for r, t in enumerate(times, 1)]
    table = summary_table(rows)
    assert list(zip(table["framework"], table["sweep_threads"], table["n_ok"])) == [
        ("keras", 2, 2), ("keras", 4, 1), ("pytorch", 2, 2), ("pytorch", 4, 1)]
    cells = summarize(rows, table)
    assert [[r["run_id"] for r in c.rows] for c in cells[:2]] == [["keras-t2-r1", "keras-t2-r2"], ["keras-t4-r1"]]
    groups = framework_groups(cells)
    assert [[(c.key["framework"], c.identity["sweep_threads"]) for c in g] for g in groups.values()] == [
        [("keras", "2"), ("pytorch", "2")], [("keras", "4"), ("pytorch", "4")]]
