"""Bad input through the Makefile: one line naming the problem and the fix, non-zero exit."""

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.frameworks import known_frameworks
from campaign.specs import known_workloads
from images import external
from tests.mountspace import MountSpace, digests

REPO = Path(__file__).resolve().parents[2]


def make(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "--no-print-directory", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=600)


def error_lines(proc: subprocess.CompletedProcess) -> list[str]:
    return [line for line in proc.stderr.splitlines() if line.startswith("error:")]


@pytest.mark.parametrize("args, text", [
    (["FRAMEWORKS=pytorch foo"],
     f"error: unknown framework 'foo' for the current era; choose from: {', '.join(known_frameworks())} "
     "(FRAMEWORKS=...)"),
    (["WORKLOADS=cnn-foo"],
     f"error: unknown workload 'cnn-foo'; choose from: {', '.join(known_workloads())} (WORKLOADS=...)"),
    (["PROFILE=fast"],
     "error: unknown profile 'fast' for workload 'cnn-mnist'; choose from: paper, quick, smoke (PROFILE=...)"),
    (["REPEATS=many"], "error: REPEATS must be a positive whole number, got 'many'; set e.g. REPEATS=5"),
    (["PARALLEL=0"], "error: PARALLEL must be a positive whole number, got '0'; set e.g. PARALLEL=1"),
    (["RUNNER=slurm"], "error: unknown runner 'slurm'; choose from: charliecloud, docker, local, system (RUNNER=...)"),
    (["EXECUTOR=pbs"], "error: unknown executor 'pbs'; choose from: local, kubernetes, slurm (EXECUTOR=...)"),
    (["EXECUTOR=slurm", "WAIT=later"], "error: WAIT must be yes or no, got 'later'; set WAIT=yes or WAIT=no"),
    (["RETRY_FAILED=maybe"],
     "error: RETRY_FAILED must be yes or no, got 'maybe'; set RETRY_FAILED=yes or RETRY_FAILED=no"),
    (["EXECUTOR=kubernetes", "RUNNER=local"],
     "error: EXECUTOR=kubernetes runs the kit images, not the local runner's environments; use RUNNER=docker, "
     "with the images pushed (make push REGISTRY=...)"),
    (["DATA=real", "CAMPAIGN=clitest-missing-data"],
     "error: dataset 'mnist' (real) is not prepared in data/prepared/mnist; run 'make download DATASETS=mnist'"),
])
def test_bad_input_is_one_clear_line(args, text, tmp_path):
    if "DATA=real" in args and (REPO / "data" / "prepared" / "mnist").exists():
        pytest.skip("real MNIST is prepared on this machine")
    defaults = {"WORKLOADS": "cnn-mnist", "FRAMEWORKS": "pytorch", "DATA": "synthetic"}
    given = {a.split("=", 1)[0] for a in args}
    argv = [f"{k}={v}" for k, v in defaults.items() if k not in given] + args
    proc = make("run", "CAMPAIGN=clitest", *argv) if "CAMPAIGN" not in given else make("run", *argv)
    assert proc.returncode != 0
    assert error_lines(proc) == [text], proc.stderr
    assert not (REPO / "results" / "clitest").exists()


def no_gpu_here() -> None:
    from bench.gpu import probe

    if probe().available:
        pytest.skip("this machine has an NVIDIA GPU")


@pytest.mark.parametrize("target, cpu", [("gpu-lstm", "cpu-lstm"), ("shi-gpu", "shi-cpu"), ("shams-gpu", "shams-cpu")])
def test_gpu_target_without_gpu_names_the_cpu_variant(target, cpu):
    no_gpu_here()
    start = time.monotonic()
    proc = make(target)
    assert time.monotonic() - start < 30  # stops before the host environment, data or runs
    assert proc.returncode != 0
    [line] = error_lines(proc)
    assert f"{target} needs an NVIDIA GPU, but none is available" in line
    assert line.endswith(f"run the CPU variant instead: make {cpu}")


@pytest.mark.parametrize("target, first, cpu", [("wu-gpu", "wu-gpu-defaults", "wu-cpu"),
                                                ("ilkarman-gpu", "ilkarman-train-gpu", "ilkarman-cpu")])
def test_a_gpu_study_target_without_gpu_names_the_whole_studys_cpu_target(target, first, cpu):
    # wu-gpu and ilkarman-gpu run several experiments: the CPU counterpart named is the study's whole CPU target.
    no_gpu_here()
    start = time.monotonic()
    proc = make(target)
    assert time.monotonic() - start < 30 and proc.returncode != 0
    [line] = error_lines(proc)
    assert line.startswith(f"error: {first} needs an NVIDIA GPU") and line.endswith(f"make {cpu}")


@pytest.mark.parametrize("target, cpu", [("shi-gpu", "shi-cpu"), ("gpu-cnn", "cpu-cnn"), ("gpu-lstm", "cpu-lstm"),
                                         ("shams-gpu", "shams-cpu")])
def test_check_gpu_names_the_cpu_counterpart_its_study_file_gives(target, cpu):
    # The GPU experiment's `cpu` in its study file (gpu-cnn also runs SVHN, which cpu-cnn does not).
    no_gpu_here()
    proc = subprocess.run([sys.executable, "-m", "campaign", "check-gpu", target], cwd=REPO, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2
    assert error_lines(proc) == [line for line in proc.stderr.splitlines() if line.strip()]
    [line] = error_lines(proc)
    assert line.startswith(f"error: {target} needs an NVIDIA GPU") and line.endswith(f"make {cpu}")


@pytest.mark.parametrize("target", ["cpu-cnn", "shi-cpu", "shams-cpu"])
def test_check_gpu_passes_a_cpu_experiment_at_once(target):
    proc = subprocess.run([sys.executable, "-m", "campaign", "check-gpu", target], cwd=REPO, capture_output=True,
                          text=True, timeout=60)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")


PLAIN_RULE = "letters, digits, '.', '_' and '-', starting with a letter or digit, no '..'"


# CI builds the paper base beside the fast tests (.ci/run: builds), which records the stand-in's digest in
# versions.local.lock at the repository root whenever it gets there: not something a refused command wrote.
BUILT_BESIDE = {external.local_lock_path().name}


def tree(*folders: Path) -> dict[str, list[str]]:
    """The names in each folder (what a refused command must leave as it was), less what CI builds beside."""
    return {str(f): sorted(p.name for p in f.iterdir() if p.name not in BUILT_BESIDE) if f.is_dir() else []
            for f in folders}


@pytest.mark.parametrize("name", ["..", "../clitest-sibling", "/tmp/clitest-absolute", ".hidden", "a/b"])
def test_a_campaign_name_that_is_not_a_plain_name_is_refused_and_nothing_is_written(name):
    # b68cc0f: runs, leases and reports went to results/.. and reports/.. (the repository root), results/../x, or
    # (campaign run) the absolute path itself.
    watched = tree(REPO, REPO / "results", REPO / "reports")
    line = f"error: CAMPAIGN must be a plain name ({PLAIN_RULE}), got '{name}'; set e.g. CAMPAIGN=my-campaign"
    for proc in (make("run", f"CAMPAIGN={name}", "WORKLOADS=cnn-mnist", "FRAMEWORKS=pytorch", "DATA=synthetic"),
                 make("analyze", f"CAMPAIGN={name}"),
                 make("cpu-cnn", f"CAMPAIGN={name}", "FRAMEWORKS=pytorch", "DATA=synthetic")):
        assert proc.returncode != 0
        assert error_lines(proc) == [line], proc.stderr
        assert "campaign '" not in proc.stdout and "report written" not in proc.stdout
    assert tree(REPO, REPO / "results", REPO / "reports") == watched
    assert not Path("/tmp/clitest-absolute").exists()


@pytest.mark.parametrize("setting, line", [
    ("TIMEOUT=abc", "TIMEOUT must be a positive number of seconds, got 'abc'; set e.g. TIMEOUT=3600, or leave it empty "
                    "for the study's 24 h"),
    ("TIMEOUT=0", "TIMEOUT must be a positive number of seconds, got '0'; set e.g. TIMEOUT=3600, or leave it empty "
                  "for the study's 24 h"),
    ("TIMEOUT=nan", "TIMEOUT must be a positive number of seconds, got 'nan'; set e.g. TIMEOUT=3600, or leave it "
                    "empty for the study's 24 h"),
    ("TIMEOUT=-5", "TIMEOUT must be a positive number of seconds, got '-5'; set e.g. TIMEOUT=3600, or leave it empty "
                   "for the study's 24 h"),
    ("THREADS=0", "THREADS must be a positive whole number, got '0'; set e.g. THREADS=2"),
    ("REPEATS=0", "REPEATS must be a positive whole number, got '0'; set e.g. REPEATS=5"),
    ("PARALLEL=two", "PARALLEL must be a positive whole number, got 'two'; set e.g. PARALLEL=1"),
    ("GPUS=first", "GPUS must be 'all' or comma-separated GPU indices, got 'first'; set GPUS=all or e.g. GPUS=0,2"),
    ("FRAMEWORKS=foo", f"unknown framework 'foo' for the current era; choose from: {', '.join(known_frameworks())} "
                       "(FRAMEWORKS=...)"),
    ("PROFILE=fast", "unknown profile 'fast' for workload 'cnn-mnist'; choose from: paper, quick, smoke (PROFILE=...)"),
    ("ERA=future", "unknown era 'future'; choose from: current, paper (ERA=...)"),
    ("RUNNER=slurm", "unknown runner 'slurm'; choose from: charliecloud, docker, local, system (RUNNER=...)"),
    ("WORKLOADS=../workloads/cnn-mnist",
     f"unknown workload '../workloads/cnn-mnist'; choose from: {', '.join(known_workloads())} (WORKLOADS=...)"),
])
def test_a_campaign_target_checks_every_setting_before_any_data_is_made(setting, line):
    # b68cc0f: the data stage ran first (downloading, or writing synthetic data), then the run stage refused
    # the setting, TIMEOUT=abc with argparse's usage text; TIMEOUT=0, nan and -5 were accepted.
    start = time.monotonic()
    proc = make("cpu-cnn", "DATA=synthetic", *(["FRAMEWORKS=pytorch"] if "FRAMEWORKS" not in setting else []), setting)
    assert time.monotonic() - start < 30
    assert proc.returncode != 0
    assert error_lines(proc) == [f"error: {line}"], proc.stderr
    assert proc.stdout == ""  # the data stage prints each dataset it prepared


# A campaign's writes, through the command line's error handling (bench.errors.run_cli) as `campaign run` does;
# the runs are ScriptRunner's (no framework environment to build), the read-only file system is real.
DRIVER = """
import sys
from pathlib import Path

from bench.errors import run_cli
from campaign import execute, plan
from data import synthetic
from tests.campaign.scriptrunner import ScriptRunner

root, repeats = Path(sys.argv[1]), int(sys.argv[2])
runner = ScriptRunner("ok")
synthetic.make_synthetic("mnist", root / "data", sizes=(60, 20), progress=False)
matrix = plan.Matrix(("pytorch",), ("cnn-mnist",), "cpu", "smoke", repeats, "synthetic")
runs = plan.plan(matrix, runner, "t", root / "results" / "t", root / "data", threads=1)
sys.exit(run_cli(lambda argv: execute.execute(runs, runner, root / "results" / "t", 10) and 0, []))
"""


def test_a_read_only_results_folder_is_one_line_and_the_runs_there_are_kept(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    first = subprocess.run([sys.executable, "-c", DRIVER, str(tmp_path), "1"], cwd=REPO, env=env, capture_output=True,
                           text=True, timeout=120)
    assert first.returncode == 0, first.stderr
    results = tmp_path / "results"
    before = digests(results)
    with MountSpace() as mountspace:
        mountspace.read_only(results)
        proc = mountspace.run(sys.executable, "-c", DRIVER, tmp_path, "2", cwd=REPO, env=env)
        assert proc.returncode == 2
        [line] = proc.stderr.splitlines()
        assert re.fullmatch(rf"error: {re.escape(str(results / 't' / '.claims'))}/\w+ is on a read-only file system; "
                            r"make it writable or work in a writable copy, then run the same command again \(finished "
                            r"work is kept\)", line), line
        assert digests(results) == before
