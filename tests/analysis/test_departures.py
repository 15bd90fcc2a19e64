"""Departures from the paper (analysis.departures) and the report's section: the paper-era setup's, and the
profiles that change the paper's model or optimizer.

The facts are read from where the kit records them (images/lockfile.py, the paper-era locks, the SVHN
workload spec and data manifest, the published numbers); these tests check that every departure names
where it is recorded, and that the section lists them with the paper-era runs they concern.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis import departures as dep
from analysis.document import Heading, Para, Table, render_markdown
from analysis.sections.departures import departures_section
from campaign.specs import load as load_spec
from images import lockfile
from tests.analysis.reading import report_context
from tests.runfactory import make_run

REPO = Path(__file__).resolve().parents[2]


def test_every_departure_names_its_source() -> None:
    found = dep.departures()
    assert found
    for d in found:
        assert d.topic and d.stated and d.kit, d
        assert d.sources, f"{d.topic}: no source"
        for source in d.sources:
            assert source.where and source.detail, (d.topic, source)
            if not source.outside:
                assert (REPO / source.where).is_file(), f"{d.topic}: {source.where} is not a file of the repository"


def test_cuda_departures_come_from_the_image_pins_and_the_lockfile(monkeypatch: pytest.MonkeyPatch) -> None:
    assert dep.paper_cuda() == ("10.0", "7.3")  # read from PAPER_SAYS
    real = {d.frameworks[0]: d for d in dep.cuda_departures()}
    assert set(real) == set(lockfile.PAPER_SOURCES)  # no paper-era image carries CUDA 10.0 / cuDNN 7.3
    tf = lockfile.paper_pins("tensorflow", "gpu")
    assert f"CUDA {tf.cuda} / cuDNN {tf.cudnn}: {lockfile.PAPER_SOURCES['tensorflow']}." in real["tensorflow"].kit
    assert real["tensorflow"].sources[0].where == "images/tensorflow/paper/pins-gpu.in"
    assert lockfile.PAPER_SAYS in real["tensorflow"].stated and real["tensorflow"].env == "gpu"
    assert real["theano"].kit.startswith("No paper-era GPU image: ")  # no images/theano/paper/pins-gpu.in
    # A framework whose image carried the paper's CUDA would be no departure; any other build is one.
    builds = {"same": ("10.0", "7.3", dep.Source("x")), "older": ("9.1", "7.0", dep.Source("y"))}
    monkeypatch.setattr(lockfile, "PAPER_SOURCES", {"same": "as the paper", "older": "an older build"})
    monkeypatch.setattr(dep, "paper_gpu_build", builds.get)
    (older,) = dep.cuda_departures()
    assert older.topic == "older: CUDA build"
    assert older.kit == "The paper-era GPU image carries CUDA 9.1 / cuDNN 7.0: an older build."


def test_version_svhn_and_theano_departures_read_the_kit_files() -> None:
    by_topic = {d.topic: d for d in dep.departures()}
    chainer = by_topic["chainer: version on GPU"]
    assert "4.5.2" in chainer.stated and "chainer 4.5.0" in chainer.kit  # from images/chainer/paper's lock
    pins = dep.pinned_versions("tensorflow", "tensorflow")
    assert ("images/tensorflow/paper/requirements.txt", "1.11.0") in pins and {v for _, v in pins} == {"1.11.0"}
    notebook = by_topic["tensorflow: version in the authors' CPU LSTM run"]
    assert "tensorboard/compat/tensorflow_stub" in notebook.stated and ">= 1.13" in notebook.stated
    assert notebook.workloads == ("lstm-imdb", "lstm-ptb", "seq2seq-manythings") and notebook.env == "cpu"
    svhn = by_topic["SVHN: training split"]
    assert load_spec("cnn-svhn")["choices"]["training_split"] in svhn.kit
    assert "train_32x32.mat, test_32x32.mat" in svhn.kit and "'extra'" in svhn.stated
    theano = by_topic["theano: NaN on IMDB"]
    assert "50 % (paper Sec 5.1)" in theano.stated and "49.981 %" in theano.stated
    assert theano.concerns({"framework": "Theano", "workload": "lstm-imdb", "device": "gpu"})
    assert not theano.concerns({"framework": "theano", "workload": "cnn-mnist", "device": "cpu"})


def test_section_lists_every_departure_with_sources_and_the_runs_it_concerns(tmp_path: Path) -> None:
    campaign = tmp_path / "paper"
    make_run(campaign, "theano", "lstm-imdb", 1, era="paper", status="failed", cause="nan", message="loss is nan")
    make_run(campaign, "chainer", "cnn-mnist", 1, era="paper", device="gpu", gpu=(90.0, 91.0, 92.0))
    make_run(campaign, "chainer", "cnn-mnist", 1)  # current era: concerned by no departure
    blocks = departures_section(report_context(campaign, tmp_path / "out"))
    (table, *_) = [b for b in blocks if isinstance(b, Table)]
    rows = {r[0]: r for r in table.rows}
    assert list(rows) == [d.topic for d in dep.departures()]
    for d in dep.departures():
        assert rows[d.topic][3] == "; ".join(s.text() for s in d.sources)
    md = render_markdown(blocks)
    assert "## Departures from the paper's setup" in md
    assert "| theano: NaN on IMDB |" in md and "1: [theano-lstm-imdb-cpu-paper-r1 (failed)]" in md
    concerned = rows["chainer: version on GPU"][4]
    assert isinstance(concerned, list) and concerned[0] == "1:"
    assert concerned[1].text == "chainer-cnn-mnist-gpu-paper-r1"
    assert rows["chainer: CUDA build"][4][1].text == "chainer-cnn-mnist-gpu-paper-r1"
    assert rows["SVHN: training split"][4] == "none"


def test_section_is_one_line_without_paper_era_runs(tmp_path: Path) -> None:
    make_run(tmp_path / "now", "pytorch", "cnn-mnist", 1)
    blocks = departures_section(report_context(tmp_path / "now", tmp_path / "out"))
    assert [type(b) for b in blocks[:2]] == [Heading, Para]
    assert blocks[1].text.startswith("No paper-era runs in this campaign")
    # then only where the authors' code differs for the run's cell (any era)
    assert [b.text for b in blocks[2:] if isinstance(b, Heading)] == ["Where the authors' own code differs from the "
                                                                       "kit's spec"]
    assert "`make cpu-cnn ERA=paper`" in blocks[1].text


def test_profile_departures_read_the_workload_specs() -> None:
    found = {d.topic: d for d in dep.profile_departures()}
    assert set(found) == {"lstm-ptb: quick profile's model and optimizer",
                          "seq2seq-manythings: quick profile's optimizer",
                          "frcnn-voc2012: quick profile's model", "frcnn-voc2012: smoke profile's model"}
    frcnn = found["frcnn-voc2012: quick profile's model"]  # a detector's tables, only those the profile changes
    assert "image (short_side 600, max_side 1000, size_divisor 16, flip True)" in frcnn.stated
    assert "image (short_side 300, max_side 500" in frcnn.kit and "test (" not in frcnn.kit
    ptb = found["lstm-ptb: quick profile's model and optimizer"]
    assert "model embedding 128, lstm 1024, dropout 0.5, lstm 1024, dropout 0.5, dense 10000" in ptb.stated
    assert "optimizer adadelta (lr 1, rho 0.95, epsilon 1e-06)" in ptb.stated
    assert ptb.kit.startswith("The quick profile trains model embedding 128, lstm 256, dropout 0.5, dense 10000; "
                              "optimizer adam (lr 0.01) instead. Quick runs have minutes on 2 cores.")
    assert "One 256-unit LSTM" in ptb.kit  # the reason, read from the spec
    s2s = found["seq2seq-manythings: quick profile's optimizer"]
    assert "model" not in s2s.stated and "adam (lr 0.01)" in s2s.kit  # the model is the paper's
    for d in found.values():
        where = d.sources[0].where
        assert where.startswith("studies/") and "/workloads/" in where and (REPO / where).is_file()
    assert ptb.concerns({"framework": "keras", "workload": "lstm-ptb", "device": "cpu", "profile": "quick"})
    assert not ptb.concerns({"framework": "keras", "workload": "lstm-ptb", "device": "cpu", "profile": "paper"})
    assert not ptb.concerns({"framework": "keras", "workload": "lstm-imdb", "device": "cpu", "profile": "quick"})


def test_section_lists_the_departing_profiles_of_the_campaigns_runs(tmp_path: Path) -> None:
    campaign = tmp_path / "quick"
    make_run(campaign, "pytorch", "lstm-ptb", 1, profile="quick", data_source="synthetic")
    make_run(campaign, "keras", "lstm-imdb", 1, profile="quick", data_source="synthetic")  # the paper's model
    blocks = departures_section(report_context(campaign, tmp_path / "out"))
    assert [type(b) for b in blocks[:5]] == [Heading, Para, Heading, Para, Table]
    assert blocks[1].text.startswith("No paper-era runs in this campaign")
    table = blocks[4]
    assert [r[0] for r in table.rows] == ["lstm-ptb: quick profile's model and optimizer"]  # no Many things run here
    assert table.rows[0][4][0] == "1:" and table.rows[0][4][1].text == "pytorch-lstm-ptb-cpu-r1"
    assert "### Profiles that change the paper's model or optimizer" in render_markdown(blocks)


def test_every_difference_from_the_authors_code_is_a_departure_sourced_in_their_notebooks() -> None:
    from campaign.specs import authors_code, known_workloads

    found = dep.authors_code_departures()
    entries = [(w, fw, e) for w in known_workloads() for fw, es in authors_code(w).items() for e in es]
    assert len(found) == len(entries) > 0
    # Every published DLBench cell's authors (six frameworks, seven CNN and LSTM workloads) are compared.
    assert {(w, fw) for w, fw, _ in entries} >= {(w, fw) for w in ("cnn-mnist", "cnn-cifar100", "lstm-imdb",
                                                                  "seq2seq-manythings")
                                                 for fw in ("tensorflow", "keras", "pytorch", "mxnet", "chainer",
                                                            "theano")}
    for d, (workload, framework, entry) in zip(found, entries):
        assert d.frameworks == (framework,) and d.workloads == (workload,) and d.env == entry.get("env", "")
        spec_file, notebook = d.sources
        assert (REPO / spec_file.where).is_file() and spec_file.detail.startswith(f"[[authors.{framework}]]")
        assert notebook.outside and notebook.where == dep.AUTHORS_REPO
        assert notebook.detail.startswith(("CPU Experiment/Source Code/", "GPU Experiment/Source Code/")), notebook
        assert " cell" in notebook.detail and entry["effect"] in d.kit


def test_a_run_carries_its_own_frameworks_differences_only() -> None:
    from campaign.specs import for_framework

    spec = load_spec("cnn-cifar100")
    assert set(spec["authors"]) == {"tensorflow", "keras", "pytorch", "mxnet", "chainer", "theano"}
    mine = for_framework(spec, "keras")
    assert set(mine["authors"]) == {"keras"} and mine["authors"]["keras"] == spec["authors"]["keras"]
    assert "authors" not in for_framework(spec, "caffe")
    assert {k: v for k, v in mine.items() if k != "authors"} == {k: v for k, v in spec.items() if k != "authors"}


def test_section_lists_the_authors_code_differences_of_the_campaigns_cells(tmp_path: Path) -> None:
    campaign = tmp_path / "now"
    make_run(campaign, "chainer", "cnn-cifar100", 1)
    blocks = departures_section(report_context(campaign, tmp_path / "out"))
    (table,) = [b for b in blocks if isinstance(b, Table)]
    topics = [row[0] for row in table.rows]
    assert topics and all(t.startswith("cnn-cifar100: chainer's ") for t in topics), topics
    assert any("stride 4" in row[1] for row in table.rows)  # Chainer's notebook pools its CIFAR-100 net its own way
    assert "### Where the authors' own code differs from the kit's spec" in render_markdown(blocks)
