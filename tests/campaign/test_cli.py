"""Bad input through the Makefile: one line naming the problem and the fix, non-zero exit."""

import subprocess
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


def test_gpu_target_without_gpu_names_the_cpu_variant():
    from bench.gpu import probe

    if probe().available:
        pytest.skip("this machine has an NVIDIA GPU")
    proc = make("gpu-lstm")
    assert proc.returncode != 0
    [line] = error_lines(proc)
    assert "gpu-lstm needs an NVIDIA GPU, but none is available" in line
    assert line.endswith("run the CPU variant instead: make cpu-lstm")
