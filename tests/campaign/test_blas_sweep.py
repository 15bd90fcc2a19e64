"""The sweep axis `blas` in study files (campaign/study.py) and the planner (campaign/plan.py): words from
bench/blas_backends.py, each point in its runs' requests and ids, and a framework that cannot switch to a point's
backend skipped in one line per reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.errors import UsageError
from campaign import plan, study
from tests.campaign.scriptrunner import ScriptRunner, prepared_mnist
from tests.studies.folders import add_study


@pytest.fixture(autouse=True)
def _fresh_cache():
    study.load_study.cache_clear()
    yield
    study.load_study.cache_clear()


def _experiment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sweep: str) -> study.Experiment:
    add_study(monkeypatch, tmp_path / "studies", "s",
              f'[experiments.s-cpu]\ndevice = "cpu"\nworkloads = ["cnn-mnist"]\nsweep = {{ {sweep} }}\n')
    return study.experiment("s-cpu")


def test_a_blas_sweep_enters_each_request_and_its_run_id_but_not_the_spec(tmp_path, monkeypatch):
    experiment = _experiment(tmp_path, monkeypatch, 'blas = ["openblas", "reference"], threads = [1]')
    assert experiment.points() == [{"blas": "openblas", "threads": 1}, {"blas": "reference", "threads": 1}]
    prepared_mnist(tmp_path / "data")
    m = plan.build_matrix(["theano"], ["cnn-mnist"], "cpu", "smoke", 1, "real", experiment=experiment)
    runs = plan.plan(m, ScriptRunner("ok"), "t", tmp_path / "results" / "t", tmp_path / "data", threads=None)
    assert [r.request["sweep"] for r in runs] == experiment.points()
    assert len({r.run_id for r in runs}) == 2
    assert runs[0].request["spec"] == runs[1].request["spec"]
    assert runs[0].label == "theano cnn-mnist cpu blas openblas threads 1 repeat 1"


@pytest.mark.parametrize("values, shown", [('["fast"]', "['fast']"), ("[]", "[]"), ('"eigen"', "'eigen'"),
                                           ("[1]", "[1]"), ('["eigen", "eigen"]', "['eigen', 'eigen']"),
                                           ('["Eigen"]', "['Eigen']")])
def test_a_bad_blas_sweep_is_refused_in_one_line_naming_the_values(tmp_path, monkeypatch, values, shown):
    with pytest.raises(UsageError) as caught:
        _experiment(tmp_path, monkeypatch, f"blas = {values}")
    text = str(caught.value)
    assert "\n" not in text and f"sweeps blas over {shown};" in text
    assert text.endswith("give a list of distinct words from: onednn, eigen, openblas, reference, mkl")


def test_frameworks_that_cannot_switch_to_a_points_backend_are_skipped_in_one_line_each(tmp_path, monkeypatch,
                                                                                          capsys):
    experiment = _experiment(tmp_path, monkeypatch, 'blas = ["eigen", "openblas"]')
    prepared_mnist(tmp_path / "data")
    m = plan.build_matrix(["pytorch", "tensorflow", "theano"], ["cnn-mnist"], "cpu", "smoke", 1, "real",
                          experiment=experiment)
    runs = plan.plan(m, ScriptRunner("ok"), "t", tmp_path / "results" / "t", tmp_path / "data", threads=1)
    assert [(r.request["framework"], r.request["sweep"]["blas"]) for r in runs] == [("tensorflow", "eigen"),
                                                                                    ("theano", "openblas")]
    skipped = [line for line in capsys.readouterr().out.splitlines() if line.startswith("skipping")]
    assert skipped == [
        "skipping cnn-mnist for pytorch at blas eigen, blas openblas: pytorch cannot choose its BLAS (it computes "
        "with the one its packages bundle); blas sweeps run with FRAMEWORKS=keras tensorflow theano",
        "skipping cnn-mnist for tensorflow at blas openblas: tensorflow has no BLAS backend 'openblas' (it has "
        "onednn, eigen)",
        "skipping cnn-mnist for theano at blas eigen: theano has no BLAS backend 'eigen' (it has openblas, "
        "reference, mkl)",
    ]
