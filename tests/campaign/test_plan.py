"""Campaign planning: validated input, canonical ids, resolved requests, a folder keeps its settings."""

import numpy as np
import pytest

from bench import request
from bench.errors import UsageError
from campaign import plan, requests, specs
from images.external import ArchiveUnreachable
from tests.campaign.scriptrunner import ScriptRunner, planned, prepared_mnist
from tests.declarations import declare


def test_run_ids_do_not_depend_on_the_order_of_names():
    a = plan.build_matrix(["pytorch", "keras"], ["lstm-imdb", "cnn-mnist"], "cpu", "quick", "2", "real")
    b = plan.build_matrix(["keras", "pytorch", "keras"], ["cnn-mnist", "lstm-imdb"], "cpu", "quick", 2, "real")
    assert a == b


@pytest.mark.parametrize("args, text", [
    ((["tensorflow1"], ["cnn-mnist"], "cpu", "quick", "2", "real"),
     "unknown framework 'tensorflow1' for the current era"),
    ((["pytorch"], ["cnn-mnist"], "cpu", "quick", "two", "real"), "REPEATS must be a positive whole number"),
    ((["pytorch"], ["cnn-mnist"], "cpu", "quick", "0", "real"), "REPEATS must be a positive whole number"),
    ((["pytorch"], ["cnn-mnist"], "tpu", "quick", "1", "real"), "unknown device 'tpu'"),
    ((["pytorch"], ["cnn-mnist"], "cpu", "quick", "1", "fake"), "unknown data source 'fake'"),
    ((["pytorch"], ["cnn-mnist"], "cpu", "quick", "1", "real", 0, "1998"), "unknown era '1998'"),
])
def test_bad_matrix_input(args, text):
    with pytest.raises(UsageError, match=text):
        plan.build_matrix(*args)


def test_missing_data_names_the_download(tmp_path):
    m = plan.Matrix(("pytorch",), ("cnn-mnist",), "cpu", "smoke", 1, "real")
    with pytest.raises(UsageError, match="make download DATASETS=mnist"):
        plan.plan(m, ScriptRunner("ok"), "t", tmp_path / "r", tmp_path / "data", 1)


def test_every_run_is_a_resolved_request(tmp_path):
    runs = planned(tmp_path, ScriptRunner("ok"), repeats=2)
    assert [r.request["repeat"] for r in runs] == [1, 2] and len({r.run_id for r in runs}) == 2
    req = runs[0].request
    assert request.validate(req) is req and req["run_id"] == request.run_id(req)
    # the profile applied on the host; the authors' code differences of the run's framework only
    assert req["spec"] == specs.for_framework(specs.load("cnn-mnist", "smoke"), "pytorch")
    assert set(req["spec"]["authors"]) == {"pytorch"}
    assert req["environment"] == {"env_id": "env-pytorch", "image_digest": None}
    assert req["data"]["path"] == "prepared/mnist"  # relative to the data root: no host path in the request
    # smoke: 512 of 600 train rows and 256 of 300 test rows, sorted, the same for every framework and repeat
    rows = req["data"]["train_indices"]
    assert len(rows) == 512 and rows == sorted(set(rows)) and max(rows) < 600
    assert rows == runs[1].request["data"]["train_indices"] == requests.subset_indices(600, 512)
    assert len(req["data"]["test_indices"]) == 256


def test_subset_indices_are_fixed_and_whole_splits_are_none():
    assert requests.subset_indices(10, None) is None and requests.subset_indices(10, 10) is None
    assert requests.subset_indices(1000, 5) == requests.subset_indices(1000, 5)
    assert requests.subset_indices(1000, 5) == np.sort(np.random.default_rng(0).permutation(1000)[:5]).tolist()


def test_a_campaign_keeps_its_profile_data_and_threads(tmp_path):
    runner = ScriptRunner("ok")
    runs = planned(tmp_path, runner)
    campaign_dir = tmp_path / "results" / "t"
    assert (campaign_dir / plan.SETTINGS_FILE).exists()
    done = sorted(p.name for p in campaign_dir.iterdir())
    m = plan.Matrix(("pytorch",), ("cnn-mnist",), "cpu", "smoke", 2, "real")
    again = plan.plan(m, runner, "t", campaign_dir, tmp_path / "data", threads=1)  # same settings: resumes
    assert [r.run_id for r in again] == [r.run_id for r in runs]
    with pytest.raises(UsageError) as caught:
        plan.plan(m, runner, "t", campaign_dir, tmp_path / "data", threads=2)
    assert str(caught.value) == (f"campaign folder {campaign_dir} holds runs made with THREADS=1, not THREADS=2; "
                                 "resume it with THREADS=1, or choose another CAMPAIGN name")
    quick = plan.Matrix(("pytorch",), ("cnn-mnist",), "cpu", "quick", 2, "real")
    with pytest.raises(UsageError, match="PROFILE=smoke, not PROFILE=quick"):
        plan.plan(quick, runner, "t", campaign_dir, tmp_path / "data", threads=1)
    assert sorted(p.name for p in campaign_dir.iterdir()) == done  # nothing written or removed


def test_generated_data_need_no_dataset_and_no_data_root(tmp_path):
    # FCN-S beside FCN-R: only MNIST is needed (and downloaded by its make target); FCN-S's data come in its request.
    assert plan.datasets_needed(["fcn-s-synthetic", "fcn-r-mnist", "alexnet-s-synthetic"]) == ["mnist"]
    m = plan.Matrix(("pytorch", "keras"), ("alexnet-s-synthetic", "fcn-s-synthetic"), "cpu", "smoke", 2, "real")
    runs = plan.plan(m, ScriptRunner("ok"), "t", tmp_path / "r", tmp_path / "no-data", 1)
    assert len(runs) == 8 and not (tmp_path / "no-data").exists()
    for run in runs:
        data = run.request["data"]
        assert (data["source"], data["path"], data["train_indices"]) == ("generated", "", None)
        assert data["generated"]["train_examples"] == 8 and data["generated"]["seed"] == 0
    # Same bytes in: one data identity per workload, for every framework and repeat.
    shas = {(r.request["workload"], r.request["data"]["arrays_sha256"]) for r in runs}
    assert len(shas) == 2


def test_a_generated_workload_without_row_counts_names_the_fix():
    spec = specs.load("alexnet-s-synthetic")
    spec["data"]["train_subset"] = None
    with pytest.raises(UsageError, match=r"train_subset and test_subset in every profile; fix studies/shi/workloads/"
                                         r"alexnet-s-synthetic.toml"):
        requests.generated_data(spec)


def test_a_collective_workload_plans_only_frameworks_with_a_collective_module(tmp_path, capsys):
    from campaign.study import experiment

    m = plan.Matrix(("pytorch", "tensorflow"), ("allreduce-shams",), "cpu", "smoke", 2, "real",
                    experiment=experiment("shams-allreduce-cpu"))
    runs = plan.plan(m, ScriptRunner("ok"), "t", tmp_path / "r", tmp_path / "no-data", 1)
    assert [r.request["framework"] for r in runs] == ["pytorch", "pytorch"] and not (tmp_path / "no-data").exists()
    assert runs[0].request["spec"]["measurement"] == {"protocol": "iterations", "warmup": 1, "iterations": 3}
    assert ("skipping allreduce-shams for tensorflow: tensorflow has no collective module (bench/collectives); "
            "collective runs go with FRAMEWORKS=pytorch and ERA=current") in capsys.readouterr().out


def test_a_ranks_sweep_plans_more_ranks_only_for_frameworks_that_train_data_parallel(tmp_path, capsys):
    from campaign.study import experiment
    from tests.campaign.scriptrunner import prepared_mnist

    prepared_mnist(tmp_path / "data")
    m = plan.Matrix(("pytorch", "tensorflow"), ("lenet-mnist",), "cpu", "smoke", 1, "real",
                    experiment=experiment("shams-scaleup-cpu"))
    runs = plan.plan(m, ScriptRunner("ok"), "t", tmp_path / "r", tmp_path / "data", 1)
    assert sorted((r.request["framework"], r.request["sweep"]["ranks"]) for r in runs) == [
        ("pytorch", 1), ("pytorch", 2), ("tensorflow", 1)]
    assert len({r.run_id for r in runs}) == 3  # the rank count is part of each run's id
    said = [line for line in capsys.readouterr().out.splitlines() if line.startswith("skipping")]
    assert said == ["skipping lenet-mnist for tensorflow at ranks 2: tensorflow has no data-parallel hook "
                    "(bench/dataparallel.py); data-parallel runs go with FRAMEWORKS=pytorch and ERA=current"]


def test_a_gpu_run_over_several_ranks_needs_one_gpu_per_rank(tmp_path, capsys):
    from campaign.study import experiment
    from tests.campaign.scriptrunner import prepared_mnist

    m = plan.Matrix(("pytorch", "tensorflow"), ("allreduce-shams",), "gpu", "smoke", 1, "real",
                    experiment=experiment("shams-allreduce-gpu"))
    runs = plan.plan(m, ScriptRunner("ok"), "t", tmp_path / "r", tmp_path / "no-data", 1)
    assert [(r.request["framework"], r.gpus) for r in runs] == [("pytorch", 2)]  # the collective's 2 ranks
    assert "skipping allreduce-shams for tensorflow: tensorflow has no collective module" in capsys.readouterr().out
    prepared_mnist(tmp_path / "data")
    m = plan.Matrix(("pytorch",), ("lenet-mnist",), "gpu", "smoke", 1, "real",
                    experiment=experiment("shams-scaleup-gpu"))
    runs = plan.plan(m, ScriptRunner("ok"), "t2", tmp_path / "r2", tmp_path / "data", 1)
    assert [(r.request["sweep"]["ranks"], r.gpus) for r in runs] == [(1, 1), (2, 2), (4, 4)]
    m = plan.Matrix(("pytorch",), ("lenet-mnist",), "cpu", "smoke", 1, "real",
                    experiment=experiment("shams-scaleup-cpu"))
    assert {r.gpus for r in plan.plan(m, ScriptRunner("ok"), "t3", tmp_path / "r3", tmp_path / "data", 1)} == {0}


@pytest.mark.parametrize(("target", "era", "epochs_only", "planned"), [
    ("shams-cpu", "paper", True, []), ("shams-cpu", "paper", False, ["mxnet", "pytorch"]),
    ("shams-cpu", "current", True, ["mxnet", "pytorch"]), (None, "paper", True, ["mxnet", "pytorch"]),
])
def test_a_campaign_plans_no_run_a_module_has_no_protocol_for(tmp_path, capsys, monkeypatch, target, era, epochs_only,
                                                              planned):
    # A module whose trainer has no step() (declared so, tests/declarations.py) is refused an iterations experiment
    # per framework at plan time, an epochs one (no target) runs; today's 2018 modules have step() (their own
    # declarations, epochs_only False: bench/frameworks/<fw>/__init__.py).
    from campaign.study import experiment
    from tests.campaign.scriptrunner import prepared_mnist

    if epochs_only:
        for fw in ("mxnet", "pytorch"):
            declare(monkeypatch, fw, "paper")
    prepared_mnist(tmp_path / "data")
    m = plan.Matrix(("mxnet", "pytorch"), ("lenet-mnist",), "cpu", "smoke", 1, "real", era=era,
                    experiment=experiment(target) if target else None)
    runs = plan.plan(m, ScriptRunner("ok"), "t", tmp_path / "r", tmp_path / "data", 1)
    assert [r.request["framework"] for r in runs] == planned
    out = capsys.readouterr().out.splitlines()
    # Only a framework with a run to plan has its environment prepared (an image built): none for a refused one.
    assert [line.split()[2] for line in out if line.startswith("environment for")] == planned
    said = [line for line in out if line.startswith("skipping")]
    assert said == ([] if planned else [
        f"skipping lenet-mnist for {fw}: the iterations protocol's step() is written for the current era, not "
        "paper; iterations runs go with ERA=current" for fw in ("mxnet", "pytorch")])


def test_a_module_is_refused_the_layer_types_it_does_not_translate(monkeypatch):
    spec = specs.load("googlenet-synthetic", "smoke")
    assert plan.refusal("chainer", "paper", spec, {}) is None  # Chainer 4.5.0 has concat and average pooling
    declare(monkeypatch, "chainer", "paper")
    assert plan.refusal("chainer", "paper", spec, {}) == (
        "the paper-era chainer module does not translate concat, global_avgpool (run it with ERA=current)")
    assert plan.refusal("chainer", "current", spec, {}) is None


class _NoTorchArchive(ScriptRunner):
    """PyTorch's environment needs a file whose archive cannot be reached (PyTorch 0.4.1's, in the paper era)."""

    def prepare(self, framework: str):
        if framework == "pytorch":
            raise ArchiveUnreachable("cannot fetch https://archive.invalid/torch.whl (no route)",
                                     "set DLREPRO_TORCH_ARCHIVE to a mirror")
        return super().prepare(framework)


def test_a_framework_whose_environment_cannot_be_had_is_left_out_beside_others_in_one_line(tmp_path, capsys):
    prepared_mnist(tmp_path / "data")
    both = plan.Matrix(("pytorch", "keras"), ("cnn-mnist",), "cpu", "smoke", 2, "real")
    runs = plan.plan(both, _NoTorchArchive("ok"), "t", tmp_path / "r", tmp_path / "data", 1)
    assert {run.request["framework"] for run in runs} == {"keras"} and len(runs) == 2
    out = capsys.readouterr().out
    assert ("skipping pytorch: its environment cannot be made: cannot fetch https://archive.invalid/torch.whl "
            "(no route); set DLREPRO_TORCH_ARCHIVE to a mirror, then run it with FRAMEWORKS=pytorch\n") in out
    # Asked for alone, it is the campaign's error.
    alone = plan.Matrix(("pytorch",), ("cnn-mnist",), "cpu", "smoke", 2, "real")
    with pytest.raises(ArchiveUnreachable):
        plan.plan(alone, _NoTorchArchive("ok"), "t", tmp_path / "r", tmp_path / "data", 1)
