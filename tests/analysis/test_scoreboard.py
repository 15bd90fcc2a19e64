"""The scoreboard (analysis.scoreboard, its figure and its section): measured vs published accuracy and time per
cell, checked against hand computations on a hand-made campaign.

The campaign: pytorch and keras on cnn-mnist (2 repeats each), theano on lstm-ptb (1 repeat; the paper gives a
lower bound for its time), pytorch on seq2seq-manythings (nothing published), and keras on lstm-imdb whose
only run failed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis import analyze
from analysis.document import render_markdown
from analysis.figures import SCOREBOARD_FILE, scoreboard_figure
from analysis.reference import ORIGIN_LOGS, ORIGIN_PAPER
from analysis.scoreboard import score_rows
from analysis.sections.scoreboard import HEADING, scoreboard_section
from tests.analysis.reading import report_context
from tests.runfactory import make_run


def build_scoreboard_campaign(root: Path) -> Path:
    """The campaign of this module's docstring under root/results/sb."""
    campaign = root / "results" / "sb"
    for repeat, (pt_acc, pt_time, k_acc, k_time) in enumerate(((0.98, 100.0, 0.90, 300.0),
                                                                (0.99, 110.0, 0.92, 420.0)), 1):
        make_run(campaign, "pytorch", "cnn-mnist", repeat, accuracy=pt_acc, training_time=pt_time)
        make_run(campaign, "keras", "cnn-mnist", repeat, accuracy=k_acc, training_time=k_time)
    make_run(campaign, "theano", "lstm-ptb", 1, accuracy=0.20, training_time=43_200.0)
    make_run(campaign, "pytorch", "seq2seq-manythings", 1, accuracy=0.50, training_time=50.0)
    make_run(campaign, "keras", "lstm-imdb", 1, status="failed", cause="oom")
    return campaign


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_scoreboard_campaign(tmp_path_factory.mktemp("scoreboard"))


def _rows_by_cell(campaign: Path, out: Path) -> dict[tuple[str, str], list[str]]:
    """The scoreboard table's Markdown rows, split into cells, by (workload, framework)."""
    md = render_markdown(scoreboard_section(report_context(campaign, out)))
    rows = {}
    for line in md.splitlines():
        if line.startswith("| ") and not line.startswith("| workload"):
            cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
            rows[(cells[0], cells[1])] = cells
    return rows


def test_score_rows_against_hand_computation(campaign: Path, tmp_path: Path) -> None:
    rows = {(r.key["workload"], r.key["framework"]): r for r in score_rows(report_context(campaign, tmp_path).cells)}
    assert len(rows) == 5
    pytorch = rows[("cnn-mnist", "pytorch")]
    # Accuracy: mean of 98 and 99 % against the paper's approximate 98 %.
    assert (pytorch.accuracy.measured.n, pytorch.accuracy.measured.mean) == (2, pytest.approx(98.5))
    assert (pytorch.accuracy.published.value, pytorch.accuracy.published.origin) == (98.0, ORIGIN_PAPER)
    assert pytorch.accuracy.difference == pytest.approx(0.5)
    # Time: the paper prints none for pytorch here, so the authors' log (run 1, 1,655.9 s) is the reference.
    assert (pytorch.time.published.value, pytorch.time.published.origin) == (1655.9, ORIGIN_LOGS)
    assert pytorch.time.ratio == pytest.approx(105.0 / 1655.9)
    lo, hi = pytorch.time.interval(relative=True)
    est = pytorch.time.measured
    assert (lo, hi) == (pytest.approx(est.ci_low / 1655.9), pytest.approx(est.ci_high / 1655.9))
    keras = rows[("cnn-mnist", "keras")]
    assert keras.accuracy.difference == pytest.approx(91.0 - 98.0)
    assert keras.time.ratio == pytest.approx(360.0 / 360.0)  # the paper's 6 min
    theano = rows[("lstm-ptb", "theano")]
    assert theano.time.lower_bound and theano.time.ratio == pytest.approx(0.5)  # 12 h against "more than 24 h"
    assert theano.accuracy.interval(relative=False) is None  # n = 1: no interval
    nothing = rows[("seq2seq-manythings", "pytorch")]
    assert nothing.accuracy.published is None and nothing.time.published is None
    assert nothing.accuracy.difference is None and nothing.time.ratio is None
    failed = rows[("lstm-imdb", "keras")]
    assert failed.accuracy.measured.n == 0 and failed.accuracy.difference is None


def test_scoreboard_table_rows(campaign: Path, tmp_path: Path) -> None:
    rows = _rows_by_cell(campaign, tmp_path)
    assert rows[("cnn-mnist", "pytorch")] == [
        "cnn-mnist", "pytorch", "cpu", "98.50 (n=2)", "≈98 (paper)", "**+0.50 pp**",
        "105 (n=2)", "1,655.9 (log)", f"{105 / 1655.9:.3g}×"]
    assert rows[("cnn-mnist", "keras")][3:] == ["91.00 (n=2)", "≈98 (paper)", "**-7.00 pp**",
                                                "360 (n=2)", "360 (paper)", "1.00×"]
    assert rows[("lstm-ptb", "theano")][3:] == ["20.00 (n=1)", "19.35 (paper)", "**+0.65 pp**",
                                               "43,200 (n=1)", ">86,400 (paper)", "\\<0.500×"]  # '<' escaped
    assert rows[("seq2seq-manythings", "pytorch")][3:] == ["50.00 (n=1)", "—", "—", "50.0 (n=1)", "—", "—"]
    assert rows[("lstm-imdb", "keras")][3:6] == ["no ok run", "87.5 (paper)", "—"]


def test_within_and_outside_the_tolerance_are_tagged(campaign: Path, tmp_path: Path) -> None:
    blocks = scoreboard_section(report_context(campaign, tmp_path))
    from analysis.document import render_html

    page = render_html(blocks, "t")
    assert '<span class="tag within">+0.50 pp</span>' in page
    assert '<span class="tag outside">-7.00 pp</span>' in page
    assert '<table class="scoreboard">' in page


def test_figure_drawn_and_shown_once_at_the_top(campaign: Path, tmp_path: Path) -> None:
    result = analyze(campaign, tmp_path / "report")
    assert result.figures[0].name == SCOREBOARD_FILE
    assert result.figures[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    md = result.report_md.read_text(encoding="utf-8")
    assert md.count(f"figures/{SCOREBOARD_FILE}") == 1  # not again under Figures
    assert md.index("# Reproduction report") < md.index(f"## {HEADING}") < md.index(f"figures/{SCOREBOARD_FILE}")
    assert md.index(f"figures/{SCOREBOARD_FILE}") < md.index("| workload | framework | device | accuracy % (n)")
    assert md.index("| workload | framework | device | accuracy % (n)") < md.index("## What reproduced")
    html = result.report_html.read_text(encoding="utf-8")
    assert html.index('<img alt="Scoreboard') < html.index('<table class="scoreboard">') < html.index(
        'id="what-reproduced"')


def test_no_published_number_no_figure(tmp_path: Path) -> None:
    campaign = tmp_path / "results" / "s2s"
    make_run(campaign, "pytorch", "seq2seq-manythings", 1, accuracy=0.5)
    ctx = report_context(campaign, tmp_path / "out")
    assert scoreboard_figure(ctx.cells, tmp_path / "scoreboard.png") is None
    assert not (tmp_path / "scoreboard.png").exists()
    md = render_markdown(scoreboard_section(ctx))
    assert "No figure: no cell has both a measured mean and a published number." in md
    assert "| seq2seq-manythings | pytorch | cpu | 50.00 (n=1) | — | — |" in md


def test_two_eras_get_a_row_each(tmp_path: Path) -> None:
    campaign = tmp_path / "results" / "eras"
    make_run(campaign, "mxnet", "cnn-mnist", 1, accuracy=0.97, training_time=200.0)
    make_run(campaign, "mxnet", "cnn-mnist", 1, era="paper", accuracy=0.95, training_time=400.0)
    md = render_markdown(scoreboard_section(report_context(campaign, tmp_path / "out")))
    assert "| workload | framework | era | device | accuracy % (n) |" in md
    assert "| cnn-mnist | mxnet | current | cpu | 97.00 (n=1) | ≈98 (paper) | **-1.00 pp** |" in md
    assert "| cnn-mnist | mxnet | paper | cpu | 95.00 (n=1) | ≈98 (paper) | **-3.00 pp** |" in md


def test_a_cell_no_better_than_guessing_is_marked(tmp_path: Path) -> None:
    campaign = tmp_path / "results" / "floor"
    make_run(campaign, "pytorch", "lstm-ptb", 1, accuracy=0.0494, majority=0.0494)  # learnt nothing
    make_run(campaign, "keras", "lstm-ptb", 1, accuracy=0.1380, majority=0.0494)
    make_run(campaign, "theano", "lstm-ptb", 1, accuracy=0.0494)  # no majority recorded: no mark
    ctx = report_context(campaign, tmp_path / "out")
    md = render_markdown(scoreboard_section(ctx))
    assert "| lstm-ptb | pytorch | cpu | **4.940 (n=1), not above guessing (4.940)** |" in md
    assert "| lstm-ptb | keras | cpu | 13.80 (n=1) |" in md
    assert "| lstm-ptb | theano | cpu | 4.940 (n=1) |" in md
