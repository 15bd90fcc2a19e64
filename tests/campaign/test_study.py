"""Studies as data (campaign/study.py): the study files, their experiments as make targets, sweeps and the
measurement protocol planned into run requests, and bad study files refused in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

import studies
from bench.errors import UsageError
from campaign import plan, specs, study
from tests.campaign.scriptrunner import ScriptRunner, prepared_mnist
from tests.studies.folders import add_study

REPO = Path(__file__).resolve().parents[2]


def test_dlbench_is_a_study_whose_experiments_are_the_make_targets():
    dlbench = study.load_study("dlbench")
    assert dlbench.claims == "DLBench"
    assert list(dlbench.experiments) == ["cpu-cnn", "gpu-cnn", "cpu-lstm", "gpu-lstm", "cpu-frcnn", "gpu-frcnn", "demo"]
    demo = dlbench.experiments["demo"]
    assert (demo.device, demo.workloads, demo.measurement, demo.points()) == ("cpu", ("cnn-mnist", "lstm-imdb"),
                                                                             None, [{}])
    for name in dlbench.reference:
        assert (REPO / "studies" / "dlbench" / "reference" / name).is_file(), name
    # The demo runs with its own settings (the Makefile), left out of `make dlbench-cpu` (campaign/targets.py).
    assert not demo.aggregate and all(e.aggregate for name, e in study.experiments().items() if name != "demo")


def test_each_study_file_names_a_study_with_claims():
    # A claim may be decided by another study's experiment (Shi-3 on DLBench's cpu-cnn runs); each study
    # file names the study its own claims carry.
    assert {study.load_study(name).claims for name in study.known_studies()} <= {c.study for c in studies.claims()}


def test_doubling_threads_go_past_the_physical_cores():
    assert study.doubling_threads(2) == [1, 2, 4]
    assert study.doubling_threads(16) == [1, 2, 4, 8, 16, 32]
    assert study.doubling_threads(6) == [1, 2, 4, 8]


def _study_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, experiments: str) -> None:
    add_study(monkeypatch, tmp_path / "studies", "s", experiments)


def _where(tmp_path: Path, text: str) -> str:
    """An expected message with the study file named as the error names it: whole, as a folder outside the kit."""
    return text.replace("s/study.toml", f"{tmp_path}/studies/s/study.toml")


@pytest.fixture(autouse=True)
def _fresh_cache():
    study.load_study.cache_clear()
    yield
    study.load_study.cache_clear()


def test_a_sweep_and_a_protocol_enter_each_request_and_its_run_id(tmp_path, monkeypatch):
    _study_file(tmp_path, monkeypatch, '[experiments.s-cpu]\ndevice = "cpu"\nworkloads = ["cnn-mnist"]\n'
                'measurement = { protocol = "iterations", warmup = 2, iterations = 5 }\n'
                'sweep = { threads = [1, 2], batch_size = [8, 16] }\n')
    experiment = study.experiment("s-cpu")
    assert experiment.points() == [{"batch_size": 8, "threads": 1}, {"batch_size": 8, "threads": 2},
                                   {"batch_size": 16, "threads": 1}, {"batch_size": 16, "threads": 2}]
    prepared_mnist(tmp_path / "data")
    m = plan.build_matrix(["pytorch"], list(experiment.workloads), "cpu", "smoke", 1, "real", experiment=experiment)
    runs = plan.plan(m, ScriptRunner("ok"), "t", tmp_path / "results" / "t", tmp_path / "data", threads=None)
    assert len({r.run_id for r in runs}) == 4
    for run in runs:
        req = run.request
        assert req["threads"] == req["sweep"]["threads"]
        assert req["spec"]["training"]["batch_size"] == req["sweep"]["batch_size"]
        assert req["spec"]["measurement"] == {"protocol": "iterations", "warmup": 2, "iterations": 5}
    assert runs[0].label == "pytorch cnn-mnist cpu batch_size 8 threads 1 repeat 1"


def test_without_a_sweep_or_protocol_the_run_ids_are_those_of_the_plain_matrix(tmp_path):
    prepared_mnist(tmp_path / "data")
    runner = ScriptRunner("ok")
    plain = plan.Matrix(("pytorch",), ("cnn-mnist",), "cpu", "smoke", 2, "real")
    via = plan.Matrix(("pytorch",), ("cnn-mnist",), "cpu", "smoke", 2, "real", experiment=study.experiment("demo"))
    ids = [r.run_id for r in plan.plan(plain, runner, "a", tmp_path / "a", tmp_path / "data", threads=1)]
    assert [r.run_id for r in plan.plan(via, runner, "b", tmp_path / "b", tmp_path / "data", threads=1)] == ids
    assert all("sweep" not in r.request for r in plan.plan(via, runner, "b", tmp_path / "b", tmp_path / "data", 1))


@pytest.mark.parametrize("body, text", [
    ('[experiments.x]\ndevice = "tpu"\nworkloads = ["cnn-mnist"]\n', "[experiments.x] of s/study.toml "
     "has device 'tpu'; set device = \"cpu\" or \"gpu\""),
    ('[experiments.x]\ndevice = "cpu"\nworkloads = ["cnn-nope"]\n', "names unknown workload 'cnn-nope'; choose from:"),
    ('[experiments.x]\ndevice = "cpu"\nworkloads = ["cnn-mnist"]\nrepeats = 3\n', "sets unknown key 'repeats'"),
    ('[experiments.x]\ndevice = "cpu"\nworkloads = ["cnn-mnist"]\nsweep = { gpus = [1, 2] }\n',
     "sweeps unknown axis 'gpus'; sweep only threads, batch_size"),
    ('[experiments.x]\ndevice = "cpu"\nworkloads = ["cnn-mnist"]\nsweep = { threads = [0, 2] }\n',
     "sweeps threads over [0, 2]; give a list of positive whole numbers or \"doubling\""),
    ('[experiments.x]\ndevice = "cpu"\nworkloads = ["cnn-mnist"]\nmeasurement = { protocol = "laps" }\n',
     "measurement protocol 'laps' is not one of epochs, iterations"),
    ('', "s/study.toml declares no experiment; add an [experiments.<target>] table"),
    ('[experiments.x]\ndevice = "cpu"\nworkloads = ["cnn-mnist"]\naggregate = "no"\n',
     "[experiments.x] of s/study.toml sets aggregate = 'no'; write aggregate = false, or leave it out"),
])
def test_a_bad_study_file_is_refused_in_one_line(tmp_path, monkeypatch, body, text):
    _study_file(tmp_path, monkeypatch, body)
    with pytest.raises(UsageError) as caught:
        study.load_study("s")
    assert _where(tmp_path, text) in str(caught.value) and "\n" not in str(caught.value)


def test_an_unknown_target_names_the_choices():
    with pytest.raises(UsageError,
                       match="unknown campaign target 'cpu-rnn'; choose from: cpu-cnn, cpu-frcnn, cpu-lstm, demo"):
        study.experiment("cpu-rnn")


def test_a_profile_replaces_the_experiments_measurement_keys(tmp_path, monkeypatch):
    _study_file(tmp_path, monkeypatch, '[experiments.s-cpu]\ndevice = "cpu"\nworkloads = ["cnn-mnist"]\n'
                'measurement = { protocol = "iterations", warmup_epochs = 1, iterations = 200 }\n'
                'profiles.smoke = { measurement = { iterations = 3 } }\n')
    experiment = study.experiment("s-cpu")
    assert experiment.measurement_for("paper")["iterations"] == 200
    assert experiment.measurement_for("smoke") == {"protocol": "iterations", "warmup_epochs": 1, "iterations": 3}
    prepared_mnist(tmp_path / "data")
    m = plan.build_matrix(["pytorch"], ["cnn-mnist"], "cpu", "smoke", 1, "real", experiment=experiment)
    (run,) = plan.plan(m, ScriptRunner("ok"), "t", tmp_path / "results" / "t", tmp_path / "data", threads=1)
    assert run.request["spec"]["measurement"]["iterations"] == 3


def _refused_in_one_line(tmp_path, monkeypatch, body, text):
    """A cnn-mnist CPU experiment with `body` added is refused by a one-line error containing `text`."""
    _study_file(tmp_path, monkeypatch, '[experiments.x]\ndevice = "cpu"\nworkloads = ["cnn-mnist"]\n' + body)
    with pytest.raises(UsageError) as caught:
        study.load_study("s")
    assert _where(tmp_path, text) in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize("body, text", [
    ('profiles.quick = { measurement = { iterations = 5 } }\n', "sets a measurement but the experiment has none"),
    ('measurement = { protocol = "iterations", warmup = 1, iterations = 9 }\n'
     'profiles.quick = { measurement = { iterations = 0 } }\n', "iterations is 0; it must be a whole number >= 1"),
    ('measurement = { protocol = "iterations", warmup = 1, iterations = 9 }\nprofiles.quick = { repeats = 2 }\n',
     "sets unknown key 'repeats'; use only measurement"),
])
def test_a_bad_profile_measurement_is_refused(tmp_path, monkeypatch, body, text):
    _refused_in_one_line(tmp_path, monkeypatch, body, text)


def test_an_explicit_epoch_protocol_leaves_the_spec_and_the_run_id_alone():
    from campaign import specs

    spec = specs.load("cnn-mnist", "smoke")
    assert study.apply_point(spec, {}, {"protocol": "epochs"}) == spec


def test_every_gpu_experiment_names_its_cpu_counterpart_in_its_own_study():
    # What `make <gpu target>` offers on a machine without a GPU: data in the study file, not a guess.
    found = study.experiments()
    gpu = {name: e for name, e in found.items() if e.device == "gpu"}
    assert {name: e.cpu for name, e in gpu.items()}.items() >= {"gpu-cnn": "cpu-cnn", "gpu-lstm": "cpu-lstm",
                                                                "shi-gpu": "shi-cpu", "shams-gpu": "shams-cpu"}.items()
    for name, e in gpu.items():
        assert e.cpu is not None, name
        assert (found[e.cpu].device, found[e.cpu].study) == ("cpu", e.study), name
    assert all(e.cpu is None for e in found.values() if e.device == "cpu")


_CPU_AND_GPU = ('[experiments.s-cpu]\ndevice = "cpu"\nworkloads = ["cnn-mnist"]\n\n'
                '[experiments.s-gpu]\ndevice = "gpu"\nworkloads = ["cnn-mnist"]\n')


@pytest.mark.parametrize("cpu, text", [
    ('"s-cpux"', "[experiments.s-gpu] of s/study.toml sets cpu = 's-cpux', which is not a CPU "
                 "experiment of this study; choose from: s-cpu"),
    ('"s-gpu"', "sets cpu = 's-gpu', which is not a CPU experiment of this study; choose from: s-cpu"),
    ('"cpu-cnn"', "sets cpu = 'cpu-cnn', which is not a CPU experiment of this study; choose from: s-cpu"),
    ("3", "sets cpu = 3; only a GPU experiment names its CPU counterpart"),
    (None, "[experiments.s-gpu] of s/study.toml names no CPU counterpart (what `make s-gpu` offers "
           "without a GPU); write cpu = \"<target>\" under it; choose from: s-cpu"),
])
def test_a_gpu_experiments_cpu_must_be_a_cpu_experiment_of_its_study(tmp_path, monkeypatch, cpu, text):
    _study_file(tmp_path, monkeypatch, _CPU_AND_GPU + (f"cpu = {cpu}\n" if cpu else ""))
    with pytest.raises(UsageError) as caught:
        study.load_study("s")
    assert _where(tmp_path, text) in str(caught.value) and "\n" not in str(caught.value)


def test_a_cpu_experiment_names_no_cpu_counterpart(tmp_path, monkeypatch):
    _study_file(tmp_path, monkeypatch, '[experiments.s-cpu]\ndevice = "cpu"\nworkloads = ["cnn-mnist"]\n'
                'cpu = "s-cpu"\n')
    with pytest.raises(UsageError, match=r"sets cpu = 's-cpu' but runs on the CPU; only a GPU experiment names"):
        study.load_study("s")


def test_a_gpu_experiments_cpu_counterpart_is_read(tmp_path, monkeypatch):
    _study_file(tmp_path, monkeypatch, _CPU_AND_GPU + 'cpu = "s-cpu"\n')
    assert study.experiment("s-gpu").cpu == "s-cpu"
    assert study.experiment("s-cpu").cpu is None


def test_an_experiments_batch_size_enters_the_spec_and_the_run_id(tmp_path, monkeypatch):
    _study_file(tmp_path, monkeypatch, '[experiments.s-cpu]\ndevice = "cpu"\nworkloads = ["cnn-mnist"]\n\n'
                '[experiments.b-cpu]\ndevice = "cpu"\nworkloads = ["cnn-mnist"]\nbatch_sizes = { "cnn-mnist" = 32 }\n')
    prepared_mnist(tmp_path / "data")

    def planned(target: str) -> list:
        experiment = study.experiment(target)
        m = plan.build_matrix(["pytorch"], ["cnn-mnist"], "cpu", "quick", 2, "real", experiment=experiment)
        return plan.plan(m, ScriptRunner("ok"), target, tmp_path / "results" / target, tmp_path / "data", threads=1)

    plain, batched = planned("s-cpu"), planned("b-cpu")
    assert [r.request["spec"]["training"]["batch_size"] for r in plain] == [128, 128]
    assert [r.request["spec"]["training"]["batch_size"] for r in batched] == [32, 32]
    assert not {r.run_id for r in plain} & {r.run_id for r in batched}
    assert all("sweep" not in r.request for r in batched)  # not a sweep point: the spec says it


def test_a_profile_with_a_batch_size_of_its_own_keeps_it():
    # lstm32-ptb: 256 (paper and quick), 16 under smoke; shi-gpu runs it at Table 7's GPU batch, 128.
    shi_gpu = study.experiment("shi-gpu")
    assert [shi_gpu.batch_size_for("lstm32-ptb", p) for p in ("paper", "quick", "smoke")] == [128, 128, None]
    assert shi_gpu.batch_size_for("fcn-r-mnist", "paper") is None
    spec = specs.load("lstm32-ptb", "quick")
    assert study.apply_point(spec, {}, None, 128)["training"]["batch_size"] == 128
    assert spec["training"]["batch_size"] == 256  # the workload's spec is left alone
    assert study.apply_point(spec, {}, None, None) == spec


@pytest.mark.parametrize("body, text", [
    ('batch_sizes = { "lstm-imdb" = 64 }\n', "[experiments.x] of s/study.toml sets a batch size for "
     "'lstm-imdb', which it does not run; name one of its workloads: cnn-mnist"),
    ('batch_sizes = { "cnn-mnist" = 0 }\n', "sets cnn-mnist's batch size to 0; give a positive whole number"),
    ('batch_sizes = { "cnn-mnist" = 6.5 }\n', "sets cnn-mnist's batch size to 6.5; give a positive whole number"),
    ('batch_sizes = 64\n', "sets batch_sizes = 64; write batch_sizes = { \"<workload>\" = 128 }"),
    ('batch_sizes = { "cnn-mnist" = 64 }\nsweep = { batch_size = [8, 16] }\n',
     "sets batch_sizes and sweeps batch_size; drop one of them"),
])
def test_a_bad_batch_size_table_is_refused_in_one_line(tmp_path, monkeypatch, body, text):
    _refused_in_one_line(tmp_path, monkeypatch, body, text)


# -- ranks: data-parallel workers (bench/dataparallel.py) -------------------------------------------------
_ITERATIONS = 'measurement = { protocol = "iterations", warmup = 1, iterations = 9 }\n'


@pytest.mark.parametrize("body, text", [
    (_ITERATIONS + 'sweep = { ranks = [0, 2] }\n', "sweeps ranks over [0, 2]; give a list of positive whole numbers"),
    (_ITERATIONS + 'sweep = { ranks = "doubling" }\n', "sweeps ranks over 'doubling'; give a list of positive"),
    (_ITERATIONS + 'sweep = { ranks = [1.5] }\n', "sweeps ranks over [1.5]"),
    ('sweep = { ranks = [1, 2] }\n', "sweeps ranks without the iteration protocol"),
    (_ITERATIONS + 'split_batch = true\n', "sets split_batch = True without a ranks sweep"),
    (_ITERATIONS + 'sweep = { ranks = [1, 2] }\nsplit_batch = "yes"\n', "sets split_batch = 'yes'"),
])
def test_a_bad_ranks_sweep_is_refused_in_one_line(tmp_path, monkeypatch, body, text):
    _refused_in_one_line(tmp_path, monkeypatch, body, text)


def test_ranks_enter_the_request_and_its_id_but_not_the_spec_unless_the_batch_is_split():
    from campaign import specs

    spec = specs.load("fcn-r-mnist", "smoke")  # batch 64
    protocol = {"protocol": "iterations", "warmup": 1, "iterations": 2}
    assert study.apply_point(spec, {"ranks": 4}, protocol)["training"] == spec["training"]
    assert study.apply_point(spec, {"ranks": 4}, protocol, split_batch=True)["training"]["batch_size"] == 16
    assert study.apply_point(spec, {"ranks": 1}, protocol, split_batch=True)["training"]["batch_size"] == 64
    with pytest.raises(UsageError, match="batch size 64 does not split between 3 ranks") as caught:
        study.apply_point(spec, {"ranks": 3}, protocol, split_batch=True)
    assert "\n" not in str(caught.value)


def test_the_scale_up_experiments_sweep_ranks():
    cpu, gpu, shi = (study.experiment(t) for t in ("shams-scaleup-cpu", "shams-scaleup-gpu", "shi-multigpu"))
    assert (cpu.device, cpu.workloads, cpu.points(), cpu.split_batch) == (
        "cpu", ("lenet-mnist", "convnet-cifar10"), [{"ranks": 1}, {"ranks": 2}], False)
    assert (gpu.device, gpu.cpu, [p["ranks"] for p in gpu.points()], len(gpu.workloads)) == (
        "gpu", "shams-scaleup-cpu", [1, 2, 4], 5)
    # Shi et al.'s Table 8 splits its mini-batch (FCN-R 4096) between the GPUs.
    assert (shi.cpu, shi.split_batch, shi.batch_sizes, [p["ranks"] for p in shi.points()]) == (
        "shi-cpu", True, {"fcn-r-mnist": 4096}, [1, 2, 4])
    assert set(shi.workloads) == {"fcn-r-mnist", "alexnet-r-cifar10", "resnet56-cifar10"}


# -- learning_rate: the optimizer's lr (Wu et al.'s learning-rate sweep) -------------------------------------
def test_a_learning_rate_sweep_sets_the_optimizers_lr_in_each_request_and_its_run_id(tmp_path, monkeypatch):
    _study_file(tmp_path, monkeypatch, '[experiments.s-cpu]\ndevice = "cpu"\nworkloads = ["cnn-mnist"]\n'
                'sweep = { learning_rate = [1e-4, 0.01, 1] }\n')
    experiment = study.experiment("s-cpu")
    assert experiment.points() == [{"learning_rate": 1e-4}, {"learning_rate": 0.01}, {"learning_rate": 1}]
    prepared_mnist(tmp_path / "data")
    m = plan.build_matrix(["pytorch"], ["cnn-mnist"], "cpu", "smoke", 1, "real", experiment=experiment)
    runs = plan.plan(m, ScriptRunner("ok"), "t", tmp_path / "results" / "t", tmp_path / "data", threads=1)
    assert len({r.run_id for r in runs}) == 3
    spec = specs.load("cnn-mnist", "smoke")
    for run in runs:
        optimizer = run.request["spec"]["training"]["optimizer"]
        # Only the rate changes: the optimizer's other settings are the spec's.
        assert optimizer == {**spec["training"]["optimizer"], "lr": run.request["sweep"]["learning_rate"]}
    assert spec["training"]["optimizer"]["lr"] == 0.01  # the workload's spec is left alone
    assert runs[0].label == "pytorch cnn-mnist cpu learning_rate 0.0001 repeat 1"


def test_a_learning_rate_point_leaves_the_spec_it_was_applied_to_alone():
    spec = specs.load("cnn-mnist", "smoke")
    before = {**spec["training"]["optimizer"]}
    out = study.apply_point(spec, {"learning_rate": 0.5, "batch_size": 8}, None)
    assert (out["training"]["optimizer"]["lr"], out["training"]["batch_size"]) == (0.5, 8)
    assert spec["training"]["optimizer"] == before and spec["training"]["batch_size"] != 8


@pytest.mark.parametrize("values", ["[0, 1e-3]", "[-0.1]", "[true]", '["fast"]', "[]", "0.01"])
def test_a_bad_learning_rate_sweep_is_refused_in_one_line(tmp_path, monkeypatch, values):
    _refused_in_one_line(tmp_path, monkeypatch, f"sweep = {{ learning_rate = {values} }}\n",
                         "sweeps learning_rate over")
    with pytest.raises(UsageError, match="give a list of positive numbers$"):
        study.load_study("s")


def test_batch_size_and_thread_sweeps_still_take_whole_numbers_only(tmp_path, monkeypatch):
    _refused_in_one_line(tmp_path, monkeypatch, "sweep = { batch_size = [0.5] }\n",
                         "sweeps batch_size over [0.5]; give a list of positive whole numbers")
