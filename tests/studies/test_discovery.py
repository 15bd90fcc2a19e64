"""Studies are folders, discovered (studies/__init__.py): the kit's five in their order, a toy study added as one folder
with no other file edited, the run ids the move of the study files left unchanged, the published tables each study's
SOURCES.md names, and bad folders refused in one line."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import studies
from analysis import analyze
from analysis.report import sections
from bench import atomic, hashing
from bench.errors import UsageError
from campaign import plan, specs, study
from tests.campaign.scriptrunner import ScriptRunner
from tests.runfactory import make_run
from tests.studies.folders import add_study

REPO = Path(__file__).resolve().parents[2]
SHARED_REFERENCE = REPO.parent / "shared" / "studies" / "reference"
TOY = Path(__file__).parent / "toy"


@pytest.fixture(autouse=True)
def _fresh_cache():
    study.load_study.cache_clear()
    yield
    study.load_study.cache_clear()


def test_the_kits_studies_are_found_in_their_order():
    assert studies.names() == ["dlbench", "wu", "shi", "ilkarman", "shams"]
    assert [c.study for c in studies.claims()][:1] == ["DLBench"] and studies.claims()[-1].id == "Shams-3"
    assert [s.__name__ for s in studies.sections()] == ["dlbench_section", "wu_section", "shi_section",
                                                        "ilkarman_section"]
    # Every workload lives in the folder of the study its spec names.
    for name, path in studies.workload_files().items():
        assert specs.load(name)["study"] == path.parent.parent.name, name


def _prepared(data_root: Path, name: str, shape: tuple[int, ...], dtype: type) -> None:
    """A small prepared dataset in the real format (arrays.npz + meta.json), all zeros: planning hashes its bytes."""
    folder = data_root / "prepared" / name
    folder.mkdir(parents=True)
    arrays = {f"{k}_{split}": np.zeros((n, *shape) if k == "x" else n, dtype if k == "x" else np.int64)
              for split, n in {"train": 600, "test": 300}.items() for k in ("x", "y")}
    np.savez(folder / "arrays.npz", **arrays)
    atomic.write_text(folder / "meta.json", json.dumps({"format_version": 1, "dataset": name,
                                                        "arrays_sha256": hashing.sha256_file(folder / "arrays.npz")}))


# Run ids planned by the code before the study files moved into studies/ (campaign/studies/*.toml and
# campaign/workloads/*.toml then): computed with that checkout's campaign.plan over the same inputs as below
# (/tmp/runids_probe.py of issue 29's move), pasted here. A run id hashes the resolved request, never a path.
BEFORE_THE_MOVE = {
    "demo": ["34d3929b7bb5a28e", "3f3a65b883f6c01d", "44fbd2917cd3429b", "83b16d468f983a41", "9bfacab949e7b226",
             "a01ff5bccd70465d", "dd03b3d7c9f806a8", "fabf453f78a49cc6"],
    "shi-gpu": ["37106805936f8004", "b6654ea5d9099ea0", "c64bfcc392110544", "e9e29f432f8763a1"],
    "wu-cpu-batch": ["2588fc1809035615", "35fb94b326c2284c", "4a438ab4119e8cac", "cb44f38f25f6dd35",
                     "d75d67d041cfc16e", "e3a4f46894820f57"],
    "shams-allreduce-cpu": ["5815079ee8a7df74"],
}
CASES = [("demo", ("keras", "pytorch"), "quick", 2), ("shi-gpu", ("pytorch",), "smoke", 1),
         ("wu-cpu-batch", ("tensorflow",), "smoke", 1), ("shams-allreduce-cpu", ("pytorch",), "smoke", 1)]


def test_the_run_ids_are_those_planned_before_the_study_files_moved(tmp_path):
    _prepared(tmp_path / "data", "mnist", (28, 28, 1), np.uint8)
    _prepared(tmp_path / "data", "imdb", (20,), np.int64)
    for target, frameworks, profile, repeats in CASES:
        e = study.experiment(target)
        # The workloads whose data this test has: MNIST, IMDB, data generated in the run, or none (a collective).
        workloads = [w for w in e.workloads if specs.load(w)["dataset"] in ("mnist", "imdb", "generated", "none")]
        m = plan.Matrix(frameworks, tuple(workloads), e.device, profile, repeats, "real", experiment=e)
        runs = plan.plan(m, ScriptRunner("ok"), "t", tmp_path / "r" / target, tmp_path / "data", threads=1)
        assert sorted(r.run_id for r in runs) == BEFORE_THE_MOVE[target], target


@pytest.mark.skipif(not SHARED_REFERENCE.is_dir(), reason=f"needs the study notes' tables at {SHARED_REFERENCE}")
def test_each_published_table_is_the_study_notes_copy_plus_rows_the_kit_transcribed_with_their_source():
    """The study notes' tables are copied unchanged, every row in its order; rows the kit transcribed from the papers
    (issue 30: numbers the text prints that the notes' tables lack) and tables the notes have none of (Shams et
    al.'s) come in beside them, each row naming where in the paper it is printed (its `source` column)."""
    shared = sorted(p.name for p in SHARED_REFERENCE.glob("*.csv"))
    published = sorted(s.file for s in studies.sources())  # the SOURCES.md tables name these
    assert shared and set(shared) <= set(published) and "shams2017.csv" in published
    for name in published:
        kit = studies.reference_file(name).read_text().splitlines()
        notes = (SHARED_REFERENCE / name).read_text().splitlines() if name in shared else kit[:1]
        assert kit[0] == notes[0], name
        left = iter(kit)
        assert all(line in left for line in notes), f"{name}: a row of the study notes' copy is changed or gone"
        added = list(csv.DictReader([kit[0], *(line for line in kit[1:] if line not in set(notes))]))
        assert all(r.get("source", "").strip() for r in added), f"{name}: a transcribed row names no source"


def test_a_studys_reference_is_what_its_sources_table_names():
    for name in studies.names():
        folder = studies.folder(name)
        named = study.load_study(name).reference
        assert all((folder.reference_dir / f).is_file() for f in named), name
        # Every table in the folder is named by its SOURCES.md: published (the table) or the kit's own mapping (text).
        text = (folder.reference_dir / studies.SOURCES_FILE).read_text()
        assert all(f"`{p.name}`" in text for p in folder.reference_dir.glob("*.csv")), name
    assert study.load_study("ilkarman").reference == ("ilkarman_dlf.csv",)
    assert study.load_study("shi").reference == ("shi2016_table7.csv", "shi2016_table8.csv")


def test_a_toy_study_folder_is_planned_run_and_reported_with_no_other_file_edited(tmp_path, monkeypatch):
    shutil.copytree(TOY, tmp_path / "studies" / "toy")
    monkeypatch.setenv(studies.PATH_VAR, str(tmp_path / "studies"))
    assert studies.names()[-1] == "toy" and "toy-mlp-synthetic" in specs.known_workloads()
    experiment = study.experiment("toy-cpu")
    m = plan.build_matrix(["pytorch"], list(experiment.workloads), "cpu", "smoke", 2, "real", experiment=experiment)
    runs = plan.plan(m, ScriptRunner("ok"), "toy", tmp_path / "results" / "toy", tmp_path / "data", threads=1)
    assert [r.label for r in runs] == [f"pytorch toy-mlp-synthetic cpu repeat {n}" for n in (1, 2)]
    campaign = tmp_path / "campaign"
    for run in runs:  # the planned runs as finished run folders, each faster than the toy's published 10 s
        make_run(campaign, "pytorch", "toy-mlp-synthetic", run.request["repeat"], run_id=run.run_id,
                 training_time=5.0, profile="smoke", data_source="generated")
    assert any(s.__name__ == "toy_section" for s in sections())
    md = analyze(campaign, tmp_path / "report").report_md.read_text()
    assert "## Toy et al.: the published time beside the kit's" in md
    assert "Published: 10 s; this campaign holds 2 runs of toy-mlp-synthetic." in md
    toy_rows = [line for line in md.splitlines() if "Toy-1" in line and "|" in line]
    assert toy_rows and "reproduced" in toy_rows[0] and "not reproduced" not in toy_rows[0]


def test_a_toy_study_folder_gets_its_make_targets_with_no_other_file_edited(tmp_path):
    # The Makefile generates the targets of the studies on DLREPRO_STUDIES_PATH into a git-ignored file of their own
    # (campaign/targets.py); the committed targets.mk, the kit's own studies', is left as it is.
    shutil.copytree(TOY, tmp_path / "studies" / "toy")
    env = {**os.environ, studies.PATH_VAR: str(tmp_path / "studies")}
    committed = (REPO / "targets.mk").read_text()
    made_before = set((REPO / ".targets").glob("*.mk"))

    def make(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["make", "--no-print-directory", *args], cwd=REPO, env=env, capture_output=True,
                              text=True, timeout=300)

    try:
        dry, listed, gpu = make("-n", "toy-cpu", "toy-all-cpu"), make("help"), make("toy-gpu")
    finally:
        for made in set((REPO / ".targets").glob("*.mk")) - made_before:
            made.unlink()
        if not made_before and (REPO / ".targets").is_dir() and not any((REPO / ".targets").iterdir()):
            (REPO / ".targets").rmdir()
    assert dry.returncode == 0, dry.stderr
    assert '--target toy-cpu --workloads "" --campaign "toy-cpu"' in dry.stdout
    assert '--target toy-cpu --workloads "" --campaign "toy-all-cpu"' in dry.stdout
    assert "toy-cpu; whole study: toy-all-cpu, toy-gpu = toy-all-gpu" in listed.stdout
    # No GPU experiment: its GPU whole-study target stops in one line.
    assert gpu.returncode != 0
    assert [line for line in gpu.stderr.splitlines() if line.startswith("error:")] == [
        "error: study toy has no GPU experiment; run make toy-all-cpu"]
    assert (REPO / "targets.mk").read_text() == committed and "toy" not in committed


def test_a_toy_study_is_gone_when_its_folder_is_off_the_path(tmp_path, monkeypatch):
    shutil.copytree(TOY, tmp_path / "studies" / "toy")
    monkeypatch.setenv(studies.PATH_VAR, str(tmp_path / "studies"))
    assert "Toy-1" in {c.id for c in studies.claims()}
    monkeypatch.delenv(studies.PATH_VAR)
    assert "toy" not in studies.names() and "Toy-1" not in {c.id for c in studies.claims()}


@pytest.mark.parametrize("name, head, workloads, text", [
    ("shi", 'title = "S"\nclaims = "S"\norder = 9\n', {},
     "two study folders are named 'shi': "),
    ("s", 'title = "S"\nclaims = "S"\n', {}, "s/study.toml has no whole-number [study] order; write order = <n>"),
    ("s", 'title = "S"\nclaims = "S"\norder = 9\n', {"cnn-mnist": 'name = "cnn-mnist"\n'},
     "workload 'cnn-mnist' is defined twice: "),
    ("s-1", 'title = "S"\nclaims = "S"\norder = 9\n', {}, "is not named as a Python module; name it with letters"),
])
def test_a_bad_study_folder_is_refused_in_one_line(tmp_path, monkeypatch, name, head, workloads, text):
    add_study(monkeypatch, tmp_path, name, workloads=workloads, head=head)
    with pytest.raises(UsageError) as caught:
        studies.workload_files()
    assert text in str(caught.value) and "\n" not in str(caught.value)
