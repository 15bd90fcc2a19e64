"""Bad input through the Makefile: one line naming the problem and the fix, non-zero exit."""

import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.frameworks import known_frameworks
from campaign.specs import known_workloads

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
    (["RUNNER=slurm"], "error: unknown runner 'slurm'; choose from: local, docker, system, charliecloud (RUNNER=...)"),
    (["EXECUTOR=pbs"], "error: unknown executor 'pbs'; choose from: local, slurm, kubernetes (EXECUTOR=...)"),
    (["EXECUTOR=slurm", "WAIT=later"], "error: WAIT must be yes or no, got 'later'; set WAIT=yes or WAIT=no"),
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
