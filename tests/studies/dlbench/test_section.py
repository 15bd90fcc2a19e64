"""DLBench's section of sequence accuracies under its authors' definitions (studies/dlbench/section.py): read from
each run's results.authors_accuracy, the definition each framework's notebook scores taken from the workload spec."""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis.document import Heading, Table, render_markdown
from studies.dlbench.section import authors_definition, dlbench_section
from tests.analysis.reading import report_context
from tests.runfactory import make_run


def scored(real: float, padding: float, end: float) -> dict:
    return {"authors_accuracy": {"real_tokens": real, "padding_counted": padding, "end_step_counted": end}}


def test_the_spec_names_each_frameworks_definition():
    assert authors_definition("seq2seq-manythings", "keras", "cpu") == "end_step_counted"
    assert authors_definition("seq2seq-manythings", "mxnet", "gpu") == "padding_counted"  # both environments
    assert authors_definition("seq2seq-manythings", "pytorch", "cpu") == "padding_counted"
    assert authors_definition("seq2seq-manythings", "pytorch", "gpu") == "none"  # its GPU notebook scores none
    assert authors_definition("seq2seq-manythings", "chainer", "cpu") == "none"  # a copy task
    assert authors_definition("lstm-ptb", "theano", "cpu") == "real_tokens"
    assert authors_definition("lstm-imdb", "keras", "cpu") is None


def test_each_cell_shows_every_definition_and_the_authors_beside_the_published_figure(tmp_path: Path):
    campaign = tmp_path / "quick"
    make_run(campaign, "keras", "seq2seq-manythings", 1, profile="quick", results=scored(0.5, 0.8, 0.56))
    make_run(campaign, "keras", "seq2seq-manythings", 2, profile="quick", results=scored(0.6, 0.9, 0.64))
    make_run(campaign, "chainer", "seq2seq-manythings", 1, profile="quick", results=scored(0.7, 0.9, 0.72))
    make_run(campaign, "pytorch", "cnn-mnist", 1)  # no sequence accuracies: not in the table
    blocks = dlbench_section(report_context(campaign, tmp_path / "out"))
    assert isinstance(blocks[0], Heading)
    (table,) = [b for b in blocks if isinstance(b, Table)]
    chainer, keras = table.rows
    assert keras[:7] == ["seq2seq-manythings", "keras", "cpu", "2", "55.00 %", "85.00 %", "60.00 %"]
    assert keras[7] == "real tokens + the step after: 60.00 %"
    assert keras[8] == "73.30 % (paper Sec 5.1)"  # Keras' CPU Many things, the lowest
    assert [link.text for link in keras[9]] == ["keras-seq2seq-manythings-cpu-r1", "keras-seq2seq-manythings-cpu-r2"]
    assert chainer[7] == "none of these (docs/notebook-parity.md)" and chainer[8].startswith("99.70 % (paper")
    assert "## DLBench's sequence accuracies as its authors scored them" in render_markdown(blocks)


def test_no_sequence_run_no_section(tmp_path: Path):
    make_run(tmp_path / "c", "pytorch", "cnn-mnist", 1)
    assert dlbench_section(report_context(tmp_path / "c", tmp_path / "out")) == []


@pytest.mark.parametrize("definition", ["copy_task", 3])
def test_a_definition_the_kit_does_not_compute_is_refused(tmp_path, monkeypatch, definition):
    from bench.errors import UsageError
    from campaign import specs
    from tests.campaign.test_specs import GOOD_AUTHOR
    from tests.studies.folders import add_study

    entry = GOOD_AUTHOR.replace('"optimizer"', '"accuracy"') + f"definition = {definition!r}\n".replace("'", '"')
    toy = 'name = "toy"\n[model]\nmaxlen = 5\nlayers = []\n[training]\nepochs = 1\n[[authors.keras]]\n' + entry
    add_study(monkeypatch, tmp_path, "t", workloads={"toy": toy})
    with pytest.raises(UsageError, match="authors.keras entry 1 of workload 'toy' has definition"):
        specs.load("toy")
