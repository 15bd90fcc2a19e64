"""bench/dataparallel.py: the rank count of a request, the refusals, each rank's shard, the merged iterations.csv
(slowest rank, mean loss, every rank's steps), the throughput arithmetic, and (slow) lenet-mnist trained over two
real Gloo ranks through `python -m bench run`, ending with the same parameters on both. The rank processes
themselves: tests/bench/test_loopback.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bench import dataparallel, iterations, schema
from bench.errors import UsageError
from bench.prepared import PreparedData
from tests.runrecord import minimal_request

REPO = Path(__file__).resolve().parents[2]
ITERATIONS = {"protocol": "iterations", "warmup": 1, "iterations": 2}


def test_the_rank_count_is_the_sweeps_and_one_without():
    assert dataparallel.ranks(minimal_request()) == 1
    spec = {"name": "cnn-mnist", "dataset": "mnist", "measurement": ITERATIONS}
    assert dataparallel.ranks(minimal_request(spec=spec, sweep={"ranks": 4})) == 4
    assert dataparallel.ranks(minimal_request(spec=spec, sweep={"threads": 2})) == 1


def test_frameworks_without_the_hook_are_refused_in_one_line():
    assert dataparallel.refusal("pytorch", "current") is None
    assert dataparallel.refusal("tensorflow", "current") == \
        "tensorflow has no data-parallel hook (bench/dataparallel.py)"
    assert "not paper" in dataparallel.refusal("pytorch", "paper")
    spec = {"name": "cnn-mnist", "dataset": "mnist", "measurement": ITERATIONS}
    req = minimal_request(framework="mxnet", spec=spec, sweep={"ranks": 2})
    with pytest.raises(UsageError, match="mxnet has no data-parallel hook") as caught:
        dataparallel.run(req, None, None, Path("."), {}, 0.0)
    assert "FRAMEWORKS=pytorch" in caught.value.fix
    epochs = minimal_request(sweep={"ranks": 2})  # no measurement table: the epoch protocol
    with pytest.raises(UsageError, match="2 data-parallel ranks need the iteration protocol"):
        dataparallel.run(epochs, None, None, Path("."), {}, 0.0)


def test_each_rank_trains_its_own_disjoint_rows_and_only_rank_0_holds_the_test_split():
    data = PreparedData({"arrays_sha256": "x"}, train={"x": np.arange(10)[:, None], "y": np.arange(10)},
                        test={"x": np.arange(4)[:, None], "y": np.arange(4)})
    shards = [dataparallel.shard(data, r, 3) for r in range(3)]
    assert [s.y_train.tolist() for s in shards] == [[0, 3, 6, 9], [1, 4, 7], [2, 5, 8]]
    assert all((s.x_train[:, 0] == s.y_train).all() for s in shards)  # the roles stay row-aligned
    assert [len(s.y_test) for s in shards] == [4, 1, 1]


def test_a_step_takes_its_slowest_ranks_time_and_the_mean_of_their_losses():
    rank0 = [{"iteration": 1, "phase": "warmup", "time_s": 0.5, "loss": 2.0},
             {"iteration": 2, "phase": "measured", "time_s": 0.1, "loss": 1.0}]
    rank1 = [{"iteration": 1, "phase": "warmup", "time_s": 0.4, "loss": 3.0},
             {"iteration": 2, "phase": "measured", "time_s": 0.3, "loss": 2.0}]
    assert dataparallel.merge([rank0, rank1]) == [
        {"iteration": 1, "phase": "warmup", "time_s": 0.5, "loss": 2.5},
        {"iteration": 2, "phase": "measured", "time_s": 0.3, "loss": 1.5}]


def test_a_rank_with_fewer_steps_cannot_shorten_the_merged_file():
    step = {"iteration": 1, "phase": "measured", "time_s": 0.1, "loss": 1.0}
    full = [step, dict(step, iteration=2)]
    with pytest.raises(ValueError, match=r"different numbers of steps \(2, 1, 2 for ranks 0..2\)"):
        dataparallel.merge([full, full[:1], full])
    assert len(dataparallel.merge([full, full, full])) == 2


def test_images_per_ms_is_ranks_times_batch_over_the_mean_step_in_ms():
    # Shams et al.'s unit: 2 ranks x 64 images every 0.05 s = 128 images / 50 ms.
    assert dataparallel.images_per_ms(2 * 64, 0.05) == pytest.approx(2.56)
    record = {"timing": {"iteration_time_s": {"mean": 0.04}}, "results": {}}
    dataparallel.record_throughput(record, 100, [1000] * 4)
    assert record["results"] == {"ranks": 4, "images_per_ms": pytest.approx(10.0)}
    # A rank whose shard is smaller than a batch trains its whole shard each step; one device is one rank.
    dataparallel.record_throughput(record, 100, [1000, 60])
    assert record["results"] == {"ranks": 2, "images_per_ms": pytest.approx(4.0)}
    dataparallel.record_throughput(record, 100, [40])
    assert record["results"] == {"ranks": 1, "images_per_ms": pytest.approx(1.0)}


class Counting:
    """A trainer whose steps take no time; it counts the barrier waits seen before each step."""

    def __init__(self) -> None:
        self.waits = self.steps = 0
        self.before: list[int] = []
        self.evaluated = False

    def step(self) -> float:
        self.steps += 1
        self.before.append(self.waits)
        return 1.0

    def synchronize(self) -> None:
        pass

    def evaluate(self) -> float:
        self.evaluated = True
        return 0.5


def test_a_rank_waits_at_the_barrier_before_every_step_and_only_rank_0_evaluates(tmp_path):
    trainer = Counting()

    def barrier() -> None:
        trainer.waits += 1

    record = {"timing": {}, "results": {}}
    iterations.run(trainer, 2, 3, tmp_path, record, "pytorch", "current", barrier=barrier, evaluate=False)
    assert trainer.before == [1, 2, 3, 4, 5] and not trainer.evaluated
    assert "test_accuracy" not in record["results"] and record["results"]["final_loss"] == 1.0


# -- the real thing --------------------------------------------------------------------------------------
def _planned(data_root: Path, ranks: int) -> dict:
    """lenet-mnist's smoke request as make shams-scaleup-cpu plans it at `ranks`, on 2 threads."""
    from campaign import requests, specs
    from campaign.study import apply_point, experiment

    target = experiment("shams-scaleup-cpu")
    spec = apply_point(specs.load("lenet-mnist", "smoke"), {"ranks": ranks}, target.measurement_for("smoke"))
    return requests.resolve(framework="pytorch", era="current", workload="lenet-mnist", profile="smoke", spec=spec,
                            dataset=requests.find_dataset(data_root, "mnist", "synthetic"), device="cpu", threads=2,
                            seed=0, repeat=1, campaign="t", runner="local",
                            environment=requests.Environment("cd" * 32), sweep={"ranks": ranks})


def _run(req: dict, folder: Path, data_root: Path) -> subprocess.CompletedProcess:
    from bench import request
    from images import envs

    request.write(folder, req)
    return subprocess.run([str(envs.ensure_env("pytorch").python), "-m", "bench", "run", "--request",
                           str(folder / request.REQUEST_FILE), "--out", str(folder), "--data",
                           str(request.data_folder(req["data"], data_root))], cwd=REPO, timeout=120,
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})


@pytest.mark.slow
def test_two_gloo_ranks_train_lenet_to_the_same_parameters(tmp_path):
    """Two ranks of PyTorch DDP on the CPU through the entrypoint: both end with the same parameters (their
    gradients were averaged), each trained its own rows, and run.json has the rank count and images per ms."""
    data = tmp_path / "data"
    subprocess.run([sys.executable, "-m", "data", "synthetic", "--root", str(data), "--datasets", "mnist", "-q"],
                   cwd=REPO, check=True)
    req = _planned(data, 2)
    folder = tmp_path / req["run_id"]
    proc = _run(req, folder, data)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    run = schema.read_run(folder)
    assert run["status"] == "ok" and run["config"]["sweep"] == {"ranks": 2}
    assert run["device_used"]["data_parallel"]["backend"] == "gloo"
    assert run["device_used"]["threads"]["intra_op"] == 1  # the run's 2 threads split between the 2 ranks
    ranks = [json.loads((folder / dataparallel.RANKS_DIR / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert ranks[0]["param_sha256"] == ranks[1]["param_sha256"] is not None  # DDP: the same model on every rank
    per_rank = [schema.read_iterations(folder / dataparallel.RANKS_DIR / f"rank{r}") for r in (0, 1)]
    assert [r["loss"] for r in per_rank[0]] != [r["loss"] for r in per_rank[1]]  # each trained its own rows
    rows = schema.read_iterations(folder)
    assert rows == dataparallel.merge(per_rank) and [r["phase"] for r in rows] == ["warmup"] * 2 + ["measured"] * 3
    results, timing = run["results"], run["timing"]
    assert timing == {**timing, **schema.summarize_iterations(rows)}
    batch = req["spec"]["training"]["batch_size"]
    assert results["ranks"] == 2 and results["images_per_ms"] == pytest.approx(
        2 * batch / (timing["iteration_time_s"]["mean"] * 1000))
    assert results["test_accuracy"] is not None and "Data-parallel" in timing["definition"]
    # The same request at one rank trains as every run does: no ranks, no per-rank files.
    one = _planned(data, 1)
    proc = _run(one, tmp_path / one["run_id"], data)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    single = schema.read_run(tmp_path / one["run_id"])
    assert not (tmp_path / one["run_id"] / dataparallel.RANKS_DIR).exists()
    assert "data_parallel" not in single["device_used"] and single["results"]["ranks"] == 1
    assert single["results"]["images_per_ms"] == pytest.approx(batch / (single["timing"]["iteration_time_s"]["mean"]
                                                                        * 1000))
