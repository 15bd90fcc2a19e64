"""The make targets derived from the study files (campaign/targets.py): the committed targets.mk is what the
generator writes, every experiment and each study's whole-study targets resolve in make and are listed by
`make help`, today's names keep their meaning, and an experiment that cannot be its make target is refused."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import studies
from bench.errors import UsageError
from campaign import study, targets
from tests.studies.folders import add_study

REPO = Path(__file__).resolve().parents[2]
TOY = REPO / "tests" / "studies" / "toy"
# The whole-study targets the Makefile kept by hand before they were generated, and what they ran: they keep it.
TODAYS_AGGREGATES = {
    "wu-cpu": {"wu-cpu-defaults", "wu-cpu-batch", "wu-cpu-lr", "wu-cpu-threads", "wu-cpu-blas"},
    "wu-gpu": {"wu-gpu-defaults", "wu-gpu-lr"},
    "ilkarman-cpu": {"ilkarman-train-cpu", "ilkarman-features-cpu", "ilkarman-rnn-cpu", "ilkarman-layout-cpu"},
    "ilkarman-gpu": {"ilkarman-train-gpu", "ilkarman-features-gpu", "ilkarman-rnn-gpu", "ilkarman-layout-gpu",
                     "ilkarman-autotune-gpu"},
}
# Experiments named as their study's whole-study target would be: they stay experiments.
TODAYS_EXPERIMENTS = ("shi-cpu", "shi-gpu", "shams-cpu", "shams-gpu")


@pytest.fixture(autouse=True)
def _fresh_cache():
    study.load_study.cache_clear()
    yield
    study.load_study.cache_clear()


def _kit_env() -> dict[str, str]:
    """This environment without DLREPRO_STUDIES_PATH: the kit's own studies only."""
    return {k: v for k, v in os.environ.items() if k != studies.PATH_VAR}


def make(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "--no-print-directory", *args], cwd=REPO, env=_kit_env(), capture_output=True,
                          text=True, timeout=300)


def _aggregates(found: list[targets.StudyTargets]) -> dict[str, targets.Aggregate]:
    return {name: a for t in found for a in t.aggregates for name in a.names}


def test_the_committed_targets_mk_is_what_the_study_files_give(tmp_path):
    out = tmp_path / "targets.mk"
    proc = subprocess.run([sys.executable, "-m", "campaign", "targets", "--out", str(out)], cwd=REPO,
                          env=_kit_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    if out.read_text() != (REPO / "targets.mk").read_text():
        pytest.fail("targets.mk is out of date with the study files; run: python -m campaign targets", pytrace=False)


def test_every_experiment_is_a_target_and_every_study_has_its_whole_study_targets(monkeypatch):
    monkeypatch.delenv(studies.PATH_VAR, raising=False)
    found = targets.derive()
    assert [t.study for t in found] == studies.names()
    names = [name for t in found for name in t.names()]
    assert len(names) == len(set(names)) and set(study.experiments()) <= set(names)
    for t in found:
        cpu, gpu = t.aggregates
        assert (cpu.names[0], gpu.names[0]) == (f"{t.study}-all-cpu", f"{t.study}-all-gpu")
        experiments = study.load_study(t.study).experiments
        assert cpu.experiments == tuple(n for n, e in experiments.items() if e.device == "cpu" and e.aggregate)
        assert gpu.experiments == tuple(n for n, e in experiments.items() if e.device == "gpu")
        assert set(gpu.instead) == set(gpu.names) and set(gpu.instead.values()) <= set(cpu.names)


def test_todays_names_keep_their_meaning(monkeypatch):
    monkeypatch.delenv(studies.PATH_VAR, raising=False)
    aggregates = _aggregates(targets.derive())
    assert {name: set(aggregates[name].experiments) for name in TODAYS_AGGREGATES} == TODAYS_AGGREGATES
    assert not set(TODAYS_EXPERIMENTS) & set(aggregates)
    assert all(study.experiment(name).name == name for name in TODAYS_EXPERIMENTS)
    assert aggregates["shi-all-gpu"].experiments == ("shi-gpu", "shi-multigpu")
    assert aggregates["dlbench-cpu"].experiments == ("cpu-cnn", "cpu-lstm", "cpu-frcnn")  # not the demo
    assert (aggregates["wu-gpu"].instead["wu-gpu"], aggregates["shi-all-gpu"].instead["shi-all-gpu"]) == (
        "wu-cpu", "shi-all-cpu")


def test_make_help_lists_every_target_derived():
    proc = make("help")
    assert proc.returncode == 0, proc.stderr
    words = set(re.split(r"[\s,;=()]+", proc.stdout))
    assert [name for t in targets.derive() for name in t.names() if name not in words] == []


def test_every_target_derived_resolves_in_make():
    names = [name for t in targets.derive() for name in t.names()]
    proc = make("-n", *names)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert [e for e in study.experiments() if f"--target {e} " not in proc.stdout] == []
    # A whole-study target runs each of its experiments into its own campaign.
    assert '--target wu-cpu-blas --workloads "" --campaign "wu-cpu"' in proc.stdout


def test_the_studies_on_the_path_are_a_file_of_their_own(tmp_path, monkeypatch):
    monkeypatch.delenv(studies.PATH_VAR, raising=False)
    kit = targets.render()
    shutil.copytree(TOY, tmp_path / "toy")
    monkeypatch.setenv(studies.PATH_VAR, str(tmp_path))
    assert targets.render() == kit  # the committed file is the same with studies on the path
    path = targets.render(path_only=True)
    assert "STUDIES += toy\n" in path and "CAMPAIGN_TARGETS += toy-cpu\n" in path and "dlbench" not in path
    # toy-cpu is its experiment; its GPU targets, with no GPU experiment, stop in one line naming the CPU one.
    assert "toy-gpu: STUDY_NONE := study toy has no GPU experiment; run make toy-all-cpu\n" in path


@pytest.mark.parametrize("name, body, text", [
    ("s", "[experiments.wu-cpu]", "experiment 'wu-cpu' of {root}/s/study.toml takes the name of study wu's "
     "whole-study target; rename the experiment in {root}/s/study.toml"),
    ("s", "[experiments.s-all-gpu]", "experiment 's-all-gpu' of {root}/s/study.toml takes the name of study s's "
     "whole-study target"),
    ("s", "[experiments.'a b']", "experiment 'a b' of {root}/s/study.toml is not a plain name (letters, digits"),
])
def test_an_experiment_that_cannot_be_its_make_target_is_refused_in_one_line(tmp_path, monkeypatch, name, body,
                                                                              text):
    add_study(monkeypatch, tmp_path, name, f'{body}\ndevice = "cpu"\nworkloads = ["cnn-mnist"]\n')
    with pytest.raises(UsageError) as caught:
        targets.derive()
    assert text.format(root=tmp_path) in str(caught.value) and "\n" not in str(caught.value)


def test_the_path_file_needs_its_name():
    with pytest.raises(UsageError, match=r"--path needs --out; name the file to write"):
        targets.main(["--path"])
