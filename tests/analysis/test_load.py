"""analysis.load: a campaign's run table as a pandas DataFrame, one row per run folder, failed runs included.

The run folders are hand-made (tests/runfactory.py, tests/runrecord.py): every figure is chosen by the
test, so the expected cells are computed by hand.
"""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import analysis
from analysis.runs import RUN_COLUMNS
from bench import schema
from bench.errors import UsageError
from tests.runfactory import make_run
from tests.runrecord import minimal_run

REPO = Path(__file__).resolve().parents[2]
OOM = "RuntimeError: not enough memory (fake)"


def build_campaign(campaign: Path) -> Path:
    """pytorch cnn-mnist twice (ok), keras cnn-mnist twice (one ok, one out of memory), a bare run.json
    of pytorch cnn-mnist smoke with neither metrics nor monitor, an unfinished and a broken folder."""
    make_run(campaign, "pytorch", "cnn-mnist", 1, training_time=100.0, accuracy=0.98, epoch_times=(50.0, 30.0, 20.0),
             curve=(0.90, 0.95, 0.97), cpu=(40.0, 50.0, 90.0), rss=(500.0, 700.0, 600.0))
    make_run(campaign, "pytorch", "cnn-mnist", 2, training_time=110.0, accuracy=0.99)
    make_run(campaign, "keras", "cnn-mnist", 1, training_time=80.0, accuracy=0.97, runner="docker")
    make_run(campaign, "keras", "cnn-mnist", 2, status="failed", cause="oom", message=OOM, runner="docker")
    bare = campaign / "bare"
    bare.mkdir()
    schema.write_run(bare, minimal_run("bare-run"))
    make_run(campaign, "keras", "cnn-mnist", 3, run_id="unfinished.partial")
    (campaign / "broken").mkdir()
    (campaign / "broken" / schema.RUN_FILE).write_text("{not json", encoding="utf-8")
    return campaign


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> pd.DataFrame:
    """The campaign's run table, loaded once (the broken folder's warning checked here)."""
    campaign = build_campaign(tmp_path_factory.mktemp("load") / "results" / "demo")
    with pytest.warns(UserWarning, match=r"1 run folder\(s\) or file\(s\) could not be read.*broken"):
        return analysis.load(campaign)


def by_id(frame: pd.DataFrame, run_id: str) -> pd.Series:
    (index,) = frame.index[frame["run_id"] == run_id]
    return frame.loc[index]


def test_one_row_per_readable_run_folder_with_the_run_table_columns(loaded: pd.DataFrame) -> None:
    assert isinstance(loaded, pd.DataFrame)
    assert tuple(loaded.columns) == RUN_COLUMNS
    # Sorted by workload, framework, era, device, runner, repeat; the .partial and broken folders are not rows.
    assert list(loaded["run_id"]) == ["keras-cnn-mnist-cpu-r1", "keras-cnn-mnist-cpu-r2", "bare-run",
                                      "pytorch-cnn-mnist-cpu-r1", "pytorch-cnn-mnist-cpu-r2"]
    assert set(loaded["campaign"]) == {"demo"}
    (problem,) = loaded.attrs["problems"]
    assert "broken" in problem and "left out" in problem


def test_columns_have_notebook_dtypes(loaded: pd.DataFrame) -> None:
    assert all(pd.api.types.is_string_dtype(loaded[c]) for c in ("workload", "framework", "status", "run_dir"))
    assert all(loaded[c].dtype == "Int64" for c in ("repeat", "seed", "epochs", "monitor_samples"))
    assert all(loaded[c].dtype == "float64" for c in ("test_accuracy", "training_time_s", "cpu_util_mean_pct"))


def test_values_of_a_successful_run(loaded: pd.DataFrame) -> None:
    run = by_id(loaded, "pytorch-cnn-mnist-cpu-r1")
    assert (run["workload"], run["framework"], run["era"], run["device"], run["runner"]) == (
        "cnn-mnist", "pytorch", "current", "cpu", "local")
    assert (run["repeat"], run["seed"], run["status"]) == (1, 0, "ok")
    assert pd.isna(run["failure_cause"]) and pd.isna(run["failure_message"])
    assert run["test_accuracy"] == pytest.approx(98.0)  # run.json's fraction, in percent
    assert run["training_time_s"] == 100.0 and run["epochs"] == 3
    # Per-epoch figures from metrics.jsonl: epoch 1 apart, the mean of the later ones, the last loss (1/3
    # in the factory) and training accuracy in percent.
    assert run["epoch_time_first_s"] == 50.0 and run["epoch_time_later_mean_s"] == pytest.approx(25.0)
    assert run["final_loss"] == pytest.approx(1 / 3) and run["final_train_accuracy"] == pytest.approx(97.0)
    # Monitor figures from monitor.csv's training window (the extreme samples outside it do not count).
    assert run["cpu_util_mean_pct"] == pytest.approx(60.0) and run["mem_peak_mb"] == 700.0
    assert (run["monitor_source"], run["monitor_samples"]) == ("monitor.csv", 3)
    assert pd.isna(run["gpu_util_mean_pct"])
    assert (run["env_id"], run["python"], run["batch_size"]) == ("cd" * 32, "3.11.7", 128)
    assert Path(run["run_dir"]).name == "pytorch-cnn-mnist-cpu-r1"


def test_failed_runs_are_rows_with_their_cause_and_no_results(loaded: pd.DataFrame) -> None:
    failed = loaded[loaded["status"] != "ok"]
    assert list(failed["run_id"]) == ["keras-cnn-mnist-cpu-r2"]
    run = failed.iloc[0]
    assert (run["status"], run["failure_cause"], run["failure_message"]) == ("failed", "oom", OOM)
    assert pd.isna(run["training_time_s"]) and pd.isna(run["test_accuracy"])
    assert run["runner"] == "docker" and run["image_digest"] == "sha256:" + "ef" * 32


def test_a_bare_run_without_metrics_or_monitor_has_empty_figures(loaded: pd.DataFrame) -> None:
    run = by_id(loaded, "bare-run")
    assert (run["profile"], run["data_source"], run["test_accuracy"]) == ("smoke", "synthetic", 50.0)
    assert pd.isna(run["epoch_time_first_s"]) and pd.isna(run["final_loss"])
    assert run["monitor_samples"] == 0 and pd.isna(run["cpu_util_mean_pct"])


def test_the_notebook_line_of_the_readme(loaded: pd.DataFrame) -> None:
    means = loaded.groupby(["workload", "framework"]).test_accuracy.mean()
    assert means[("cnn-mnist", "pytorch")] == pytest.approx((98.0 + 99.0 + 50.0) / 3)
    assert means[("cnn-mnist", "keras")] == pytest.approx(97.0)  # the failed run has no accuracy
    counts = loaded.groupby("status").size()
    assert (counts["ok"], counts["failed"]) == (4, 1)


def test_several_campaigns_load_together_and_a_copied_run_counts_once(tmp_path: Path) -> None:
    cpu, gpu = tmp_path / "results" / "cpu", tmp_path / "results" / "gpu"
    make_run(cpu, "pytorch", "cnn-mnist", 1, training_time=200.0)
    make_run(gpu, "pytorch", "cnn-mnist", 1, device="gpu", training_time=20.0, gpu=(90.0, 95.0, 100.0))
    make_run(gpu, "pytorch", "cnn-mnist", 1, run_id="pytorch-cnn-mnist-cpu-r1")  # a copy of the CPU run's id
    with pytest.warns(UserWarning, match="already read from another campaign folder"):
        frame = analysis.load([cpu, str(gpu)])
    assert list(zip(frame["campaign"], frame["device"], frame["training_time_s"])) == [
        ("cpu", "cpu", 200.0), ("gpu", "gpu", 20.0)]
    assert by_id(frame, "pytorch-cnn-mnist-gpu-r1")["gpu_util_mean_pct"] == pytest.approx(95.0)
    speedup = frame.groupby("device").training_time_s.mean()
    assert speedup["cpu"] / speedup["gpu"] == pytest.approx(10.0)


def test_an_empty_campaign_is_an_empty_table_and_a_missing_one_an_error(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    frame = analysis.load(tmp_path / "empty")
    assert frame.empty and tuple(frame.columns) == RUN_COLUMNS
    with pytest.raises(UsageError, match="no campaign folder .*nowhere; give a results/<campaign> folder"):
        analysis.load(tmp_path / "nowhere")


def test_import_analysis_loads_neither_pandas_nor_matplotlib() -> None:
    code = "import sys, analysis; print(sorted(m for m in ('pandas', 'matplotlib') if m in sys.modules))"
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60,
                          check=True)
    assert proc.stdout.strip() == "[]"


def test_load_matches_the_report_tables(tmp_path: Path) -> None:
    campaign = build_campaign(tmp_path / "results" / "demo")
    with pytest.warns(UserWarning):
        frame = analysis.load(campaign)
        analysis.analyze(campaign, tmp_path / "out")
    written = pd.read_csv(tmp_path / "out" / "tables" / "runs.csv")
    assert list(written.columns) == list(frame.columns) and list(written["run_id"]) == list(frame["run_id"])
    for column in ("test_accuracy", "training_time_s", "cpu_util_mean_pct", "epoch_time_later_mean_s"):
        for mine, theirs in zip(frame[column], written[column], strict=True):
            assert (pd.isna(mine) and pd.isna(theirs)) or math.isclose(mine, theirs, rel_tol=1e-9)


def test_each_sweep_axis_is_a_column_of_its_own(tmp_path: Path) -> None:
    """A run's sweep point reaches the run table as one column per axis (never only as text to parse back)."""
    campaign = tmp_path / "results" / "sweep"
    make_run(campaign, "pytorch", "cnn-mnist", 1, sweep={"threads": 2, "batch_size": 16}, run_id="swept")
    make_run(campaign, "pytorch", "cnn-mnist", 1, run_id="plain")
    runs = analysis.load(campaign).set_index("run_id")
    assert runs.loc["swept", "sweep"] == "batch_size=16, threads=2"
    assert (runs.loc["swept", "sweep_threads"], runs.loc["swept", "sweep_batch_size"]) == (2, 16)
    assert runs[["sweep_ranks", "sweep_blas", "sweep_learning_rate"]].isna().all().all()
    assert runs.loc["plain", ["sweep_threads", "sweep_batch_size"]].isna().all()
