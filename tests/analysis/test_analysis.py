"""The analysis: run table, summaries, published references, figures and the report.

One hand-made campaign (2 frameworks x 2 workloads x 2 repeats; tensorflow missing for lstm-imdb;
one failed run) is analysed once per module; the tests check its outputs against hand computations.
"""

from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

from analysis import NoRunsError, analyze
from analysis.__main__ import main as cli_main
from analysis.reference import (
    ORIGIN_LOGS,
    ORIGIN_PAPER,
    parse_accuracy_percent,
    parse_wall_seconds,
    published_for,
)
from analysis.runs import load_campaign
from analysis.stats import INSUFFICIENT_DATA, describe, format_estimate
from analysis.summary import summarize
from tests.analysis.reading import read_csv
from tests.runfactory import make_run

REPO = Path(__file__).resolve().parents[2]

# Student-t quantiles t(0.975, df), from a printed table: the hand side of the CI checks.
T_975 = {1: 12.706204736, 2: 4.302652730}

# Training times and accuracies per (framework, workload, repeat) of the fixture campaign.
TIMES = {("pytorch", "cnn-mnist"): (100.0, 110.0), ("tensorflow", "cnn-mnist"): (80.0, 90.0),
         ("pytorch", "lstm-imdb"): (400.0, None)}
ACCS = {("pytorch", "cnn-mnist"): (0.98, 0.99), ("tensorflow", "cnn-mnist"): (0.97, 0.975),
        ("pytorch", "lstm-imdb"): (0.87, None)}
FAILED_MESSAGE = "RuntimeError: DefaultCPUAllocator: not enough memory (fake)"


def build_campaign(root: Path) -> Path:
    """The fixture campaign under root/results/demo; returns the campaign folder."""
    campaign = root / "results" / "demo"
    for (fw, wl), times in TIMES.items():
        for repeat, (t, acc) in enumerate(zip(times, ACCS[(fw, wl)]), 1):
            if t is None:  # pytorch lstm-imdb repeat 2 runs out of memory
                make_run(campaign, fw, wl, repeat, status="failed", cause="oom", message=FAILED_MESSAGE)
                continue
            # pytorch cnn-mnist repeat 1: the run.json cache disagrees with monitor.csv on purpose.
            cached = {"cpu_util_mean_pct": 12.0} if (fw, wl, repeat) == ("pytorch", "cnn-mnist", 1) else None
            make_run(campaign, fw, wl, repeat, training_time=t, accuracy=acc,
                     curve=(acc - 0.02, acc - 0.01, acc), cached=cached,
                     cpu=(40.0, 50.0, 90.0) if fw == "pytorch" else (20.0, 30.0, 40.0),
                     rss=(500.0, 700.0, 600.0))
    # Neither an unfinished run nor a broken one may stop the analysis.
    make_run(campaign, "tensorflow", "lstm-imdb", 1, run_id="unfinished.partial")
    (campaign / "broken").mkdir()
    (campaign / "broken" / "run.json").write_text("{not json", encoding="utf-8")
    return campaign


@pytest.fixture(scope="module")
def analysed(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The fixture campaign, analysed once: paths and outputs the tests read."""
    root = tmp_path_factory.mktemp("analysis")
    campaign = build_campaign(root)
    out = root / "reports" / "demo"
    result = analyze(campaign, out)
    return {"campaign": campaign, "out": out, "result": result,
            "md": result.report_md.read_text(encoding="utf-8"),
            "html": result.report_html.read_text(encoding="utf-8")}


def find(rows: list[dict[str, str]], **match: str) -> dict[str, str]:
    hits = [r for r in rows if all(r[k] == v for k, v in match.items())]
    assert len(hits) == 1, (match, hits)
    return hits[0]


# --- Run table -----------------------------------------------------------------------------

def test_run_table_has_one_row_per_run_and_skips_partial_and_broken(analysed: dict) -> None:
    rows = read_csv(analysed["out"] / "tables" / "runs.csv")
    assert len(rows) == 6  # 2x2x2 minus the missing tensorflow lstm-imdb pair
    assert not any("partial" in r["run_id"] for r in rows)
    assert any("broken" in p for p in analysed["result"].problems)
    failed = find(rows, framework="pytorch", workload="lstm-imdb", repeat="2")
    assert (failed["status"], failed["failure_cause"]) == ("failed", "oom")
    assert failed["failure_message"] == FAILED_MESSAGE
    assert failed["training_time_s"] == ""


def test_run_table_values_come_from_run_json_and_monitor_window(analysed: dict) -> None:
    row = find(read_csv(analysed["out"] / "tables" / "runs.csv"),
               framework="pytorch", workload="cnn-mnist", repeat="1")
    assert float(row["test_accuracy"]) == pytest.approx(98.0)  # run.json fraction -> percent
    assert float(row["training_time_s"]) == 100.0
    assert row["dataset"] == "mnist" and row["data_source"] == "real"
    # Only the three samples inside [train_start, train_end] count; the extreme ones outside do not.
    assert float(row["cpu_util_mean_pct"]) == pytest.approx((40 + 50 + 90) / 3)
    assert float(row["mem_mean_mb"]) == pytest.approx(600.0)
    assert float(row["mem_peak_mb"]) == 700.0
    assert row["monitor_source"] == "monitor.csv" and row["monitor_samples"] == "3"
    assert row["gpu_util_mean_pct"] == ""
    assert Path(row["run_dir"]).name == row["run_id"]


def test_cache_disagreement_prefers_raw_and_is_noted(analysed: dict) -> None:
    campaign = load_campaign(analysed["campaign"])
    note = [n for n in campaign.notes if n.startswith("pytorch-cnn-mnist-cpu-r1")]
    assert note and "cpu_util_mean_pct" in note[0] and "using monitor.csv" in note[0]
    assert "12" in note[0]
    assert len(campaign.notes) == 1  # the other caches agree with their raw files
    assert "cpu_util_mean_pct is 60" in analysed["md"]


def test_unreadable_monitor_falls_back_to_run_json_and_is_reported(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path / "c", "pytorch", "cnn-mnist", 1, cached={"cpu_util_mean_pct": 42.0})
    (run_dir / "monitor.csv").write_text("not,the,schema\n", encoding="utf-8")
    campaign = load_campaign(tmp_path / "c")
    (row,) = campaign.rows
    assert (row["monitor_source"], row["cpu_util_mean_pct"]) == ("run.json", 42.0)
    assert len(campaign.problems) == 1 and "monitor.csv unreadable" in campaign.problems[0]


# --- Summary and statistics ----------------------------------------------------------------

def test_summary_interval_matches_hand_computation(analysed: dict) -> None:
    rows = read_csv(analysed["out"] / "tables" / "summary.csv")
    cell = find(rows, workload="cnn-mnist", framework="pytorch")
    # times 100, 110: mean 105, s = sqrt(((-5)^2 + 5^2) / 1) = sqrt(50), half = t(.975, 1) * s / sqrt(2)
    half = T_975[1] * math.sqrt(50) / math.sqrt(2)
    assert (cell["n_ok"], cell["n_failed"]) == ("2", "0")
    assert float(cell["training_time_s_mean"]) == pytest.approx(105.0)
    assert float(cell["training_time_s_std"]) == pytest.approx(math.sqrt(50))
    assert float(cell["training_time_s_ci95_low"]) == pytest.approx(105.0 - half, rel=1e-8)
    assert float(cell["training_time_s_ci95_high"]) == pytest.approx(105.0 + half, rel=1e-8)
    assert float(cell["test_accuracy_mean"]) == pytest.approx(98.5)
    assert float(cell["cpu_util_mean_pct_mean"]) == pytest.approx(60.0)


def test_describe_three_values_against_hand_computation() -> None:
    est = describe([10.0, 12.0, 14.0, None])  # None = not measured, ignored
    half = T_975[2] * 2.0 / math.sqrt(3)  # s = 2
    assert (est.n, est.mean, est.std) == (3, 12.0, pytest.approx(2.0))
    assert (est.ci_low, est.ci_high) == (pytest.approx(12 - half), pytest.approx(12 + half))


def test_fewer_than_two_values_is_insufficient_data(analysed: dict) -> None:
    one = describe([5.0])
    assert (one.n, one.mean, one.std, one.ci_low, one.ci_high) == (1, 5.0, None, None, None)
    assert INSUFFICIENT_DATA in format_estimate(one)
    assert format_estimate(describe([])) == "no data"
    cell = find(read_csv(analysed["out"] / "tables" / "summary.csv"), workload="lstm-imdb")
    assert (cell["n_ok"], cell["n_failed"], cell["failure_causes"]) == ("1", "1", "oom:1")
    assert cell["training_time_s_ci95_low"] == "" and INSUFFICIENT_DATA in cell["notes"]
    assert INSUFFICIENT_DATA in analysed["md"]


# --- Published references ------------------------------------------------------------------

def test_reference_maps_campaign_cells_to_published_values() -> None:
    paper = published_for("cpu", "cnn-mnist", "PyTorch", "test_accuracy")
    assert [(p.value, p.origin) for p in paper] == [(98.0, ORIGIN_PAPER), (pytest.approx(98.40), ORIGIN_LOGS)]
    # A '*' framework row applies to any framework, including ones the paper did not run.
    assert [p.value for p in published_for("gpu", "cnn-mnist", "newfw", "test_accuracy")] == [98.0]
    keras_time = published_for("cpu", "cnn-mnist", "keras", "training_time")
    assert [p.value for p in keras_time] == [360.0, pytest.approx(449.1)]
    imdb = published_for("cpu", "lstm-imdb", "keras", "test_accuracy")
    assert [p.value for p in imdb] == [87.5, pytest.approx(87.74)]
    assert published_for("cpu", "no-such-workload", "keras") == []


def test_reference_parsers() -> None:
    assert parse_wall_seconds("0:01:19.3") == pytest.approx(79.3)
    assert parse_wall_seconds("13:47:21.1") == pytest.approx(13 * 3600 + 47 * 60 + 21.1)
    assert parse_wall_seconds("n/a") is None
    assert parse_accuracy_percent("0.9833") == pytest.approx(98.33)
    assert parse_accuracy_percent("87.74%") == pytest.approx(87.74)
    assert parse_accuracy_percent("49.981% (NaN loss)") == pytest.approx(49.981)


# --- Figures and report --------------------------------------------------------------------

def test_figures_written(analysed: dict) -> None:
    names = {p.name for p in analysed["result"].figures}
    assert names == {"scoreboard.png", "training_time.png", "test_accuracy.png", "utilization_cpu.png",
                     "convergence_cnn-mnist.png", "convergence_lstm-imdb.png", "resources_cnn-mnist.png",
                     "resources_lstm-imdb.png"}
    for path in analysed["result"].figures:
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_report_md_contents(analysed: dict) -> None:
    md = analysed["md"]
    assert md.startswith("# Reproduction report: demo")
    assert "oom" in md and FAILED_MESSAGE in md  # the failed run, its cause and message
    assert "pytorch-lstm-imdb-cpu-r2" in md
    assert re.search(r"\| cnn-mnist \| pytorch \| cpu \| 98 percent \| approx \| paper Sec 5\.1 \|", md)
    assert "98.50 ± 6.4 (n=2)" in md  # mean of 98 and 99; half-width 12.706 * 0.7071 / sqrt(2)
    assert "1.01×" in md  # 98.5 / 98
    assert "SYNTHETIC DATA" not in md and "for context only" not in md
    # Links to run dirs are relative to the report.
    assert "](<../../results/demo/pytorch-cnn-mnist-cpu-r1>)" in md
    # Published numbers with no counterpart: keras on cnn-mnist was not run; other datasets out of scope.
    not_run = md.split("## What was not reproduced")[1]
    keras_row = r"\| cpu \| cnn/mnist \| keras \| test_accuracy \| 98 percent .*framework not run"
    assert re.search(keras_row, not_run)
    assert "cpu cnn/cifar10:" in not_run
    assert "epochs" in md and "sgd (lr=0.01, momentum=0.5, weight_decay=1e-06)" in md
    assert "| cnn-mnist | paper | 15 | 128 |" in md


def test_report_html_is_self_contained(analysed: dict) -> None:
    html = analysed["html"]
    # The scoreboard's figure is shown once, at the top; every figure is embedded exactly once.
    assert html.count('src="data:image/png;base64,') == len(analysed["result"].figures) == 8
    for attr in re.findall(r'(?:src|href)="([^"]*)"', html):
        assert "://" not in attr and not attr.startswith("//"), attr
    assert "<script" not in html and "<link" not in html and "@import" not in html
    assert "<style>" in html and FAILED_MESSAGE in html


def test_outputs_are_written_atomically(analysed: dict) -> None:
    leftovers = [p for p in analysed["out"].rglob("*") if p.name.endswith(".tmp")]
    assert leftovers == []


def test_synthetic_quick_campaign_has_banner_and_profile_note(tmp_path: Path) -> None:
    campaign = tmp_path / "results" / "quick"
    make_run(campaign, "pytorch", "cnn-mnist", 1, profile="quick", data_source="synthetic", curve=(0.5, 0.6))
    result = analyze(campaign, tmp_path / "out")
    md = result.report_md.read_text(encoding="utf-8")
    assert "SYNTHETIC DATA — demo only: accuracy and timing are not comparable to the paper" in md
    assert "Profile quick" in md and "for context only" in md
    assert "| cnn-mnist | quick | 2 | 128 |" in md and "| 6000 | 1000 |" in md
    html = result.report_html.read_text(encoding="utf-8")
    assert 'class="banner"' in html


def test_campaign_with_zero_ok_runs_still_reports(tmp_path: Path) -> None:
    campaign = tmp_path / "results" / "allfailed"
    make_run(campaign, "pytorch", "cnn-mnist", 1, status="failed", cause="nan", message="loss is nan")
    keras = make_run(campaign, "keras", "lstm-imdb", 1, status="failed", cause="timeout", message="24 h")
    (keras / "monitor.csv").unlink()  # died before its first sample
    result = analyze(campaign, tmp_path / "out")
    md = result.report_md.read_text(encoding="utf-8")
    assert "no successful run (failed: nan:1)" in md and "every run failed" in md
    # No bars or curves without a finished run; the failed run's resource samples are still shown.
    assert [p.name for p in result.figures] == ["resources_cnn-mnist.png"]
    cells = summarize(load_campaign(campaign).table)
    assert [(c.key["framework"], len(c.ok_rows)) for c in cells] == [("pytorch", 0), ("keras", 0)]


# --- CLI -----------------------------------------------------------------------------------

def test_empty_campaign_exits_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "results" / "x"
    empty.mkdir(parents=True)
    assert cli_main(["--campaign", str(empty), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err == f"error: no runs found in {empty}; run a campaign first (e.g. make demo)\n"
    with pytest.raises(NoRunsError):
        analyze(tmp_path / "does-not-exist", tmp_path / "out")


def test_cli_as_module_on_missing_campaign() -> None:
    proc = subprocess.run([sys.executable, "-m", "analysis", "--campaign", "results/x", "--out", "reports/x"],
                          cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip() == "error: no runs found in results/x; run a campaign first (e.g. make demo)"


def test_cli_prints_where_the_report_went(analysed: dict, capsys: pytest.CaptureFixture[str]) -> None:
    out = analysed["out"].parent / "again"
    assert cli_main(["--campaign", str(analysed["campaign"]), "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert f"report written: {out / 'report.md'} and {out / 'report.html'}" in captured.out
    assert "broken" in captured.err
    # The failed run is visible as such wherever its runs are linked, with its cause.
    md = (out / "report.md").read_text(encoding="utf-8")
    assert "[pytorch-lstm-imdb-cpu-r2 (failed)]" in md and "| oom |" in md
    assert (out / "report.html").read_text(encoding="utf-8").count("pytorch-lstm-imdb-cpu-r2 (failed)") >= 2


# --- Claims, transfer, statistics in the report ----------------------------------------------

def test_claims_table_comes_before_the_detailed_tables(analysed: dict) -> None:
    md, html = analysed["md"], analysed["html"]
    assert (md.index("## Scoreboard") < md.index("## What reproduced") < md.index("### Claims this campaign cannot")
            < md.index("## Runs overview") < md.index("## Comparison with") < md.index("## How each claim is tested"))
    assert '<h2 id="what-reproduced">' in html and '<table class="claims">' in html
    # Claim 1: pytorch is more accurate on cnn-mnist (98.5 vs 97.25) and the only framework with an
    # accuracy on lstm-imdb (tensorflow missing), so only one group qualifies: not decided here, and the
    # line says which campaign would decide it.
    assert not any(line.startswith("| 1 | DLBench") for line in md.splitlines())
    claim1 = next(line for line in md.splitlines() if line.startswith("- **1** DLBench"))
    assert "decided by `make cpu-cnn`" in claim1 and "1 (workload, device) group(s)" in claim1
    # Claim 8: three 1/3-time epochs per run, cumulative time linear: decided, in the claims table.
    claim8 = next(line for line in md.splitlines() if line.startswith("| 8 | DLBench"))
    assert "**reproduced**" in claim8 and "5 of 5 runs linear" in claim8
    assert "R² ≥ 0.99" in md.split("## How each claim is tested")[1]


def test_report_has_transfer_statistics_tolerance_and_hardware(analysed: dict) -> None:
    md = analysed["md"]
    assert "## What transfers across hardware" in md and "### Order of frameworks (Kendall tau)" in md
    assert "within ±2 pp?" in md and "**within ±2 pp (+0.50 pp)**" in md  # 98.5 vs the paper's 98
    assert "### Wilcoxon signed-rank tests between frameworks" in md
    assert "insufficient data (2 non-zero pairs; p \\< 0.05 needs at least 6)" in md
    assert "### Pearson correlation: epoch vs test accuracy" in md and "r=1, p=" in md
    assert "### Bootstrap intervals of the mean" in md
    assert "## Hardware of the published numbers" in md and "one NVIDIA Tesla P4" in md
    assert "framework build" in md and "pytorch=1.0" in md
    assert "No workload and framework was run on both CPU and GPU" in md


def build_cpu_gpu_campaigns(root: Path) -> tuple[Path, Path]:
    """A CPU and a GPU campaign of keras and pytorch on cnn-mnist (2 repeats each), GPU util measured."""
    cpu, gpu = root / "results" / "cpu", root / "results" / "gpu"
    for repeat in (1, 2):
        for fw, cpu_time, gpu_time in (("keras", 100.0, 10.0), ("pytorch", 200.0, 40.0)):
            make_run(cpu, fw, "cnn-mnist", repeat, training_time=cpu_time + repeat)
            make_run(gpu, fw, "cnn-mnist", repeat, device="gpu", training_time=gpu_time + repeat,
                     cpu=(10.0, 12.0, 14.0), gpu=(95.0, 97.0, 99.0), runner="docker")
    return cpu, gpu


def test_cli_accepts_several_campaigns_and_analyses_them_together(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    cpu, gpu = build_cpu_gpu_campaigns(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert cli_main(["--campaign", str(cpu), "--campaign", str(gpu)]) == 0
    out = tmp_path / "reports" / "cpu+gpu"  # the default: the campaigns' names joined by '+'
    md = (out / "report.md").read_text(encoding="utf-8")
    assert md.startswith("# Reproduction report: cpu+gpu")
    assert f"Campaign folders `{cpu}`, `{gpu}`: 8 runs" in md
    # keras: (101 + 102) / 2 = 101.5 s on CPU vs (11 + 12) / 2 = 11.5 s on GPU: 8.83x.
    assert f"| cnn-mnist | keras | 101.5 | 11.50 | {101.5 / 11.5:.3g}× |" in md
    assert "derived: CPU 360 s / GPU 63 s" in md
    claim2 = next(line for line in md.splitlines() if line.startswith("| 2 | DLBench"))
    assert "**reproduced**" in claim2 and "2 of 2 pairs" in claim2
    claim6 = next(line for line in md.splitlines() if line.startswith("| 6 | DLBench"))
    assert "**reproduced**" in claim6 and "GPU 97.0 % vs CPU 12.0 %" in claim6
    claim9 = next(line for line in md.splitlines() if line.startswith("| 9 | DLBench"))
    assert "**reproduced**" in claim9 and "0.00 pp over 3 epochs" in claim9
    assert "cuda=12.4, cudnn=9.1" in md and "Fake GPU 16GB" in md and "sha256:efef" in md
    figures = {p.name for p in (out / "figures").iterdir()}
    assert {"utilization_cpu.png", "utilization_gpu.png"} <= figures
