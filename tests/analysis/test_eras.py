"""Runs carry their era: the era column, eras never pooled, the paper-era vs current-era table, and the
note on paper-era runs that ran outside the study's Python.

One hand-made campaign holds both eras of the same workloads (mxnet and chainer on cnn-mnist, two repeats
each; the paper-era runs on Python 3.11 outside their image, a test environment) and one paper-era-only Theano
lstm-imdb run that failed with a NaN loss. It is analysed once; expected numbers are computed by hand below.
Paper-era runs in their image (the docker runner) carry what their run.json records of the image's base
(environment.base, from `make base ERA=paper`), the Python's build and the BLAS's kernels; those are made
apart, as the runs of a real paper-era image record them.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from analysis import analyze
from analysis.context import ReportContext
from analysis.document import Heading, Para, render_markdown
from analysis.eras import era_pairs, missing_era_commands, outside_image_text, unpaired_cells
from analysis.runs import load_campaign
from analysis.sections import Section
from analysis.sections.claims import claims_section
from analysis.sections.departures import departures_section
from analysis.sections.eras import era_comparison_section
from analysis.sections.overview import overview_section
from analysis.significance import framework_pair_tests
from analysis.summary import summarize
from analysis.transfer import device_pairs
from tests.analysis.reading import read_csv, report_context
from tests.resultrows import row
from tests.runfactory import make_run

T_975_DF1 = 12.706204736  # Student-t quantile t(0.975, 1), from a printed table
TEST_ENV = "paper-era framework versions on Python 3.11, outside their image: a test environment"
# The run-table columns of what a run ran on beside the versions.
RECORDED = ("python_build", "blas_core", "cpu_flags", "base_debian", "base_source")

# (framework, era) -> framework version, training times and accuracies (fractions) of repeats 1 and 2.
RUNS = {
    ("mxnet", "current"): ("1.9.1", (100.0, 104.0), (0.98, 0.99)),
    ("mxnet", "paper"): ("1.3.0", (230.0, 234.0), (0.97, 0.98)),
    ("chainer", "current"): ("7.8.1", (300.0, 300.0), (0.95, 0.95)),
    ("chainer", "paper"): ("4.5.0", (200.0, 202.0), (0.99, 0.99)),
}


def build_campaign(campaign: Path) -> Path:
    """Both eras of mxnet and chainer on cnn-mnist, plus a failed paper-era theano lstm-imdb run."""
    for (fw, era), (version, times, accs) in RUNS.items():
        for repeat, (t, acc) in enumerate(zip(times, accs), 1):
            make_run(campaign, fw, "cnn-mnist", repeat, era=era, framework_version=version, training_time=t,
                     accuracy=acc, curve=(acc - 0.02, acc - 0.01, acc),
                     cpu=(80.0, 90.0, 100.0) if era == "paper" else (40.0, 50.0, 60.0))
    make_run(campaign, "theano", "lstm-imdb", 1, era="paper", framework_version="1.0.2", status="failed",
             cause="nan", message="loss is nan after epoch 1")
    return campaign


@pytest.fixture(scope="module")
def analysed(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The two-era campaign, analysed once."""
    root = tmp_path_factory.mktemp("eras")
    campaign = build_campaign(root / "results" / "both")
    result = analyze(campaign, root / "reports" / "both")
    return {"campaign": campaign, "out": root / "reports" / "both",
            "md": result.report_md.read_text(encoding="utf-8")}


def section_text(section: Section, ctx: ReportContext) -> str:
    """One section of the report as Markdown."""
    return render_markdown(section(ctx))


# --- The era column and no pooling ----------------------------------------------------------

def test_run_table_records_era_framework_version_and_python(analysed: dict) -> None:
    rows = read_csv(analysed["out"] / "tables" / "runs.csv")
    assert {"era", "framework_version", "python"} <= set(rows[0])
    paper = next(r for r in rows if r["run_id"] == "mxnet-cnn-mnist-cpu-paper-r1")
    assert (paper["era"], paper["framework_version"], paper["python"]) == ("paper", "1.3.0", "3.11.7")
    current = next(r for r in rows if r["run_id"] == "mxnet-cnn-mnist-cpu-r1")
    assert (current["era"], current["framework_version"]) == ("current", "1.9.1")


def test_version_1_run_reads_as_current_era(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path / "old", "pytorch", "cnn-mnist", 1)
    run = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    run["schema_version"] = 1  # written before the era existed
    del run["config"]["era"], run["config"]["threads"]
    (run_dir / "run.json").write_text(json.dumps(run), encoding="utf-8")
    (row_,) = load_campaign(tmp_path / "old").rows
    assert row_["era"] == "current"


def test_eras_are_summarized_apart_never_as_repeats_of_one_cell(analysed: dict) -> None:
    cells = read_csv(analysed["out"] / "tables" / "summary.csv")
    mxnet = {c["era"]: c for c in cells if c["framework"] == "mxnet"}
    assert set(mxnet) == {"paper", "current"}
    assert (mxnet["paper"]["n_ok"], mxnet["current"]["n_ok"]) == ("2", "2")
    assert float(mxnet["paper"]["training_time_s_mean"]) == pytest.approx(232.0)  # (230 + 234) / 2
    assert float(mxnet["current"]["training_time_s_mean"]) == pytest.approx(102.0)  # (100 + 104) / 2
    assert mxnet["paper"]["run_ids"] == "mxnet-cnn-mnist-cpu-paper-r1;mxnet-cnn-mnist-cpu-paper-r2"


def test_comparisons_between_frameworks_and_devices_stay_within_an_era() -> None:
    cells = summarize([row("keras", "cnn-mnist", era="paper"), row("pytorch", "cnn-mnist", era="paper"),
                       row("pytorch", "cnn-mnist"), row("pytorch", "cnn-mnist", device="gpu", era="paper")])
    # keras vs pytorch is compared only in the paper era, where both ran on the CPU.
    pairs = {(t.group["era"], t.framework_a, t.framework_b) for t in framework_pair_tests(cells)}
    assert pairs == {("paper", "keras", "pytorch")}
    # The GPU run pairs with the paper-era CPU run only: a current-era CPU run and a paper-era GPU run are no
    # GPU/CPU speedup.
    assert [(c.key["framework"], g.key["era"]) for c, g in device_pairs(cells)] == [("pytorch", "paper")]


def test_tables_show_the_era_column_only_with_two_eras(analysed: dict, tmp_path: Path) -> None:
    md = analysed["md"]
    assert "| workload | framework | era | device | ok | failed | runs |" in md
    assert "| lstm-imdb | theano | paper | cpu | 0 | nan 1 |" in md
    assert "| framework | era | device | runner | version |" in md  # the environment, per era
    assert "| claim | study | era | statement |" in md  # claims tested on each era apart
    assert "cnn-mnist/cpu/paper: slowest mxnet (232 s, 97.50 %)" in md
    assert "cnn-mnist/cpu: slowest chainer (300 s, 95.00 %)" in md
    make_run(tmp_path / "one", "pytorch", "cnn-mnist", 1)
    one = section_text(overview_section, report_context(tmp_path / "one", tmp_path / "out"))
    assert "| workload | framework | device | ok | failed | runs |" in one


# --- Paper era vs current era ------------------------------------------------------------------

def test_side_by_side_numbers_match_hand_computation(analysed: dict) -> None:
    loaded = load_campaign(analysed["campaign"])
    pairs = {p.key["framework"]: p for p in era_pairs(summarize(loaded.rows))}
    assert set(pairs) == {"chainer", "mxnet"}  # theano ran in the paper era only
    mxnet, chainer = pairs["mxnet"], pairs["chainer"]
    assert mxnet.time_ratio == pytest.approx(102.0 / 232.0)
    assert mxnet.accuracy_diff_pp == pytest.approx(98.5 - 97.5)
    assert mxnet.change_text() == "2.3× faster, accuracy within ±2 pp (+1.00 pp)"  # 232 / 102 = 2.27
    assert chainer.time_ratio == pytest.approx(300.0 / 201.0)
    assert chainer.change_text() == "1.5× slower, accuracy outside ±2 pp (-4.00 pp)"  # 300 / 201 = 1.49
    # Times 230, 234: s = sqrt(8), half-width t(.975, 1) * s / sqrt(2) = 25.4; accuracies 97, 98: 6.4.
    assert T_975_DF1 * math.sqrt(8) / math.sqrt(2) == pytest.approx(25.41, abs=0.01)
    expected = ("| cnn-mnist | mxnet | 1.3.0 (Python 3.11.7, local) | 1.9.1 (Python 3.11.7, local) | "
                "97.50 ± 6.4 (n=2) | 98.50 ± 6.4 (n=2) | +1.00 | 232 ± 25 (n=2) | 102 ± 25 (n=2) | 0.44× | "
                "90.0 ± 0 (n=2) | 50.0 ± 0 (n=2) | 600 ± 0 (n=2) | 600 ± 0 (n=2) | "
                "2.3× faster, accuracy within ±2 pp (+1.00 pp) |")
    assert expected in analysed["md"]
    section = analysed["md"].split("## Paper era vs current era")[1].split("\n## ")[0]
    assert "GPU util." not in section  # no run measured a GPU
    assert "Run in one era only, so not in the table (1): theano lstm-imdb (paper)" in section
    assert '`make cpu-lstm ERA=current FRAMEWORKS="theano" WORKLOADS="lstm-imdb" CAMPAIGN=both`' in section


def test_overlapping_intervals_are_said() -> None:
    rows = [row("pytorch", "cnn-mnist", repeat=r, time=t, era=era)
            for era, times in (("paper", (100.0, 120.0)), ("current", (105.0, 110.0)))
            for r, t in enumerate(times, 1)]
    (pair,) = era_pairs(summarize(rows))
    assert pair.time_change() == "1.0× faster (95 % intervals overlap)"  # 110 / 107.5 = 1.02


def test_no_workload_in_both_eras_is_one_line_naming_the_command(tmp_path: Path) -> None:
    campaign = tmp_path / "cpu-cnn"
    for workload in ("cnn-mnist", "cnn-cifar10", "cnn-cifar100"):
        make_run(campaign, "pytorch", workload, 1)
    ctx = report_context(campaign, tmp_path / "out")
    blocks = era_comparison_section(ctx)
    assert [type(b) for b in blocks] == [Heading, Para]
    assert blocks[1].text == ("No workload ran in both eras in this campaign; the other era's runs of the same "
                              'workloads: `make cpu-cnn ERA=paper FRAMEWORKS="pytorch"`.')
    # Run in one era each, on different workloads: each side's missing era, into the runs' own folder.
    make_run(campaign, "mxnet", "lstm-imdb", 1, era="paper")
    assert missing_era_commands(report_context(campaign, tmp_path / "out").cells) == [
        'make cpu-cnn ERA=paper FRAMEWORKS="pytorch"',
        'make cpu-lstm ERA=current FRAMEWORKS="mxnet" WORKLOADS="lstm-imdb" CAMPAIGN=cpu-cnn']


def test_unpaired_cells_and_a_workload_no_target_runs(tmp_path: Path) -> None:
    make_run(tmp_path / "svhn", "keras", "cnn-svhn", 1, profile="smoke", data_source="synthetic")
    ctx = report_context(tmp_path / "svhn", tmp_path / "out")
    assert [c.key["framework"] for c in unpaired_cells(ctx.cells)] == ["keras"]
    assert missing_era_commands(ctx.cells) == [
        'make run DEVICE=cpu ERA=paper FRAMEWORKS="keras" WORKLOADS="cnn-svhn" PROFILE=smoke DATA=synthetic '
        "CAMPAIGN=svhn"]
    # A campaign folder named like a target (make demo writes results/demo) is remade by that target.
    for workload in ("cnn-mnist", "lstm-imdb"):
        make_run(tmp_path / "demo", "pytorch", workload, 1, profile="quick", data_source="synthetic")
    assert missing_era_commands(report_context(tmp_path / "demo", tmp_path / "out").cells) == [
        'make demo ERA=paper FRAMEWORKS="pytorch" PROFILE=quick DATA=synthetic']


# --- Which Python the paper-era runs ran on ----------------------------------------------------

def test_paper_era_runs_on_python_311_are_called_a_test_environment(analysed: dict) -> None:
    md = analysed["md"]
    assert (f"{TEST_ENV[0].upper()}{TEST_ENV[1:]}, not the study's setup (CPython 3.6 in the paper-era images): "
            "5 of 5 paper-era runs.") in md  # the header's note
    assert f"| mxnet | 1.3.0 | 3.11.7 | local | {'cd' * 32} | {TEST_ENV} |" in md
    assert "No paper-era run here ran on CPython 3.6: the study's setup is checked by `make images ERA=paper`" in md
    # Claims resting on those runs say so; current-era verdicts carry no such caveat.
    claim4 = [line for line in md.splitlines() if line.startswith("| 4 | DLBench |")]
    assert [TEST_ENV in line for line in claim4] == [True, False]
    assert ("> 6 verdicts rest on paper-era versions outside their image: they show the checks run, and are not "
            "evidence about the paper.") in md  # real data and the paper profile: that is the only reason
    assert outside_image_text([row("mxnet", "cnn-mnist", era="current")]) == ""


def test_paper_era_runs_on_python_36_are_the_study_setup(tmp_path: Path) -> None:
    campaign = tmp_path / "study"
    make_run(campaign, "mxnet", "cnn-mnist", 1, era="paper", python="3.6.15", runner="docker",
             framework_version="1.3.0")
    ctx = report_context(campaign, tmp_path / "out")
    text = section_text(departures_section, ctx)
    assert "| mxnet | 1.3.0 | 3.6.15 | docker | sha256:" in text
    assert "the study's Python 3.6, in the paper-era image" in text
    assert TEST_ENV not in text and "No paper-era run here ran on CPython 3.6" not in text


# --- Paper-era runs in their image: base, Python build, BLAS kernels ------------------------------

# The record `make base ERA=paper` writes into the image (/etc/dlrepro/base.json) and each run copies.
STANDIN_BASE = {"era": "paper", "debian_release": "bullseye", "debian_version": "11.11", "python": "3.6.15",
                "source": "Python-3.6.15.tar.xz", "source_sha256": "ab" * 32, "source_kind": "stand-in",
                "configure": "--prefix=/usr/local --enable-shared", "pgo": "no",
                "cc": "gcc (Debian 10.2.1-6) 10.2.1 20210110", "departs_from": "(images.pythonsource's sentence)"}
PYTHON_ORG_BASE = dict(STANDIN_BASE, source_kind="python.org",
                       source_sha256="6e28d7cdd6dd513dd190e49bca3972e20fcf455090ccf2ef3f1a227614135d91", pgo="yes")


def _build(version: str, compiler: str, pgo: bool) -> dict:
    """environment.python_build as bench.pythonbuild records it."""
    return {"implementation": "CPython", "version": version, "compiler": compiler, "configure": ["--enable-shared"],
            "pgo": pgo, "lto": False, "opt": "-DNDEBUG -g -fwrapv -O3 -Wall"}


def _openblas(core: str) -> list:
    """environment.libraries of a run whose NumPy's OpenBLAS chose `core`."""
    return [{"kind": "blas", "api": "openblas", "filepath": "<env>/lib/python3.6/site-packages/numpy/.libs/"
             "libopenblasp-r0-382c8f3a.3.5.dev.so", "version": "0.3.5.dev", "num_threads": 2,
             "threading_layer": "pthreads", "architecture": core}]


def _image_campaign(campaign: Path, base: dict | None) -> Path:
    """mxnet on cnn-mnist: two paper-era runs in their image (docker, CPython 3.6.15 built without PGO, on
    `base` when given) and two current-era runs in a locked environment (Python 3.11.7)."""
    for repeat in (1, 2):
        make_run(campaign, "mxnet", "cnn-mnist", repeat, era="paper", runner="docker", python="3.6.15",
                 framework_version="1.3.0", training_time=200.0,
                 environment={"python_build": _build("3.6.15", "GCC 10.2.1 20210110", False),
                              "libraries": _openblas("Haswell"), **({"base": base} if base else {})},
                 host={"cpu_flags": ["sse4_2", "avx", "fma", "avx2"]})
        make_run(campaign, "mxnet", "cnn-mnist", repeat, framework_version="1.9.1", training_time=100.0,
                 environment={"python_build": _build("3.11.7", "GCC 12.2.0", False), "libraries": _openblas("Zen")},
                 host={"cpu_flags": ["sse4_2", "avx", "fma", "avx2"]})
    return campaign


def test_paper_era_runs_in_their_image_show_image_base_python_build_and_blas_and_no_caveat(tmp_path: Path) -> None:
    ctx = report_context(_image_campaign(tmp_path / "both", STANDIN_BASE), tmp_path / "out")
    eras = section_text(era_comparison_section, ctx)
    paper = "[mxnet-cnn-mnist-cpu-paper-r1](<../both/mxnet-cnn-mnist-cpu-paper-r1>)"
    assert (f"| paper | mxnet | docker | sha256:{'ef' * 32} | made here: Debian 11.11 (bullseye), CPython 3.6.15 "
            f"from a stand-in source (Python-3.6.15.tar.xz, sha256 {'ab' * 32}) | 3.6.15 (no PGO, GCC 10.2.1 "
            f"20210110) | openblas (Haswell) | sse4_2 avx fma avx2 | {paper} ") in eras
    assert (f"| current | mxnet | local | {'cd' * 32} | — (no image) | 3.11.7 (no PGO, GCC 12.2.0) | openblas (Zen) "
            "| sse4_2 avx fma avx2 | ") in eras
    departures = section_text(departures_section, ctx)
    assert ("- CPython 3.6.15 built here (`make base ERA=paper`) from a stand-in source, Python-3.6.15.tar.xz "
            f"(sha256 {'ab' * 32}, trusted on first use: not python.org's file checked at its published digest), "
            "on Debian 11.11 (bullseye) instead of the registry image python:3.6.15-slim-buster's Debian 10 "
            f"(buster), without PGO (the registry image's CPython was built with PGO): {paper} ") in departures
    assert ("> 2 of 2 paper-era runs ran in images on a base made here, not on the registry's "
            "python:3.6.15-slim-buster (each run's run.json environment.base says which):") in departures
    assert "| mxnet | 1.3.0 | 3.6.15 | docker | sha256:" in departures
    assert "the study's Python 3.6, in the paper-era image" in departures
    # In their image: no "outside their image" anywhere, and no "no run ran on CPython 3.6".
    for text in (eras, departures, section_text(overview_section, ctx), section_text(claims_section, ctx)):
        assert "outside their image" not in text and "No paper-era run here ran on CPython 3.6" not in text
    rows = {r["run_id"]: r for r in ctx.campaign.rows}
    assert {k: rows["mxnet-cnn-mnist-cpu-paper-r1"][k] for k in RECORDED} == {
        "python_build": "no PGO, GCC 10.2.1 20210110", "blas_core": "Haswell", "cpu_flags": "sse4_2 avx fma avx2",
        "base_debian": "11.11 (bullseye)", "base_source": f"stand-in Python-3.6.15.tar.xz sha256:{'ab' * 32}"}


def test_a_base_from_pythons_own_file_and_an_image_without_a_base_record(tmp_path: Path) -> None:
    ctx = report_context(_image_campaign(tmp_path / "org", PYTHON_ORG_BASE), tmp_path / "out")
    assert ("- CPython 3.6.15 built here (`make base ERA=paper`) from python.org's Python-3.6.15.tar.xz (sha256 "
            "6e28d7cdd6dd513dd190e49bca3972e20fcf455090ccf2ef3f1a227614135d91, its published digest), on Debian "
            "11.11 (bullseye) instead of the registry image python:3.6.15-slim-buster's Debian 10 (buster), with "
            "PGO, as the registry image's: ") in section_text(departures_section, ctx)
    ctx = report_context(_image_campaign(tmp_path / "registry", None), tmp_path / "out2")
    assert (f"| paper | mxnet | docker | sha256:{'ef' * 32} | no base record in the image | 3.6.15 (no PGO, GCC "
            "10.2.1 20210110) |") in section_text(era_comparison_section, ctx)
    departures = section_text(departures_section, ctx)
    assert "base made here" not in departures and "outside their image" not in departures


def test_the_caveat_stays_for_paper_era_runs_outside_their_image_whatever_their_python(tmp_path: Path) -> None:
    campaign = _image_campaign(tmp_path / "mixed", STANDIN_BASE)
    make_run(campaign, "mxnet", "cnn-mnist", 3, era="paper", python="3.6.15", framework_version="1.3.0")  # local
    ctx = report_context(campaign, tmp_path / "out")
    off = "paper-era framework versions on Python 3.6, outside their image: a test environment"
    departures = section_text(departures_section, ctx)
    assert f"| mxnet | 1.3.0 | 3.6.15 | local | {'cd' * 32} | {off} |" in departures
    assert f"> 1 of 3 paper-era runs: {off}." in departures
    assert "> 2 of 3 paper-era runs ran in images on a base made here" in departures  # the docker ones
    assert f"Paper-era side: {off}, not the study's setup" in section_text(era_comparison_section, ctx)
    records = [{**r, "python": None} for r in ctx.campaign.rows if r["runner"] == "local" and r["era"] == "paper"]
    assert outside_image_text(records) == ("paper-era framework versions on Python not recorded, outside their "
                                           "image: a test environment")


def test_what_is_unverified_about_paper_era_pytorch_is_said_where_its_runs_are_or_are_missing(tmp_path: Path) -> None:
    unverified = (
        "Paper-era PyTorch (what is unverified): torch 0.4.1's wheel comes from PyTorch's own wheel archive, which "
        "publishes no sha256 of it: it is trusted on first use (the digest the first build got is recorded in "
        "versions.local.lock and in the image's label org.dlrepro.external.torch, and a later build refuses any "
        "other file), so nothing checks that it is the file PyTorch published for the study; where the archive "
        "cannot be reached, the PyTorch paper-era image is not built.")
    campaign = _image_campaign(tmp_path / "torch", STANDIN_BASE)
    make_run(campaign, "pytorch", "cnn-mnist", 1)
    assert f"> No paper-era PyTorch run here. {unverified}" in section_text(
        era_comparison_section, report_context(campaign, tmp_path / "out"))
    make_run(campaign, "pytorch", "cnn-mnist", 1, era="paper", runner="docker", python="3.6.15",
             framework_version="0.4.1")
    ctx = report_context(campaign, tmp_path / "out2")
    assert f"> {unverified}" in section_text(era_comparison_section, ctx)
    assert f"> {unverified}" in section_text(departures_section, ctx)
    ctx = report_context(_image_campaign(tmp_path / "none", STANDIN_BASE), tmp_path / "out3")
    assert "PyTorch" not in section_text(era_comparison_section, ctx)
