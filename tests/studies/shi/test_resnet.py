"""Shi et al.'s ResNet-56 on CIFAR-10 (studies/shi/workloads/resnet56-cifar10.toml): the residual vocabulary
of bench/modelplan.py in a workload. The paper-era framework modules do not translate it, so a paper-era
campaign skips it (one line per framework) instead of starting runs that would fail; every current-era framework builds
the same network, trained at the smoke sizes through `python -m campaign run` (the local runner's
environments, DLREPRO_VENV_ROOT) on synthetic CIFAR-10."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from bench import atomic, hashing, modelplan
from bench.frameworks import capabilities
from campaign import plan, specs
from tests.campaign.scriptrunner import ScriptRunner
from tests.declarations import declare
from tests.plancount import trainable
from tests.smokecampaign import smoke_runs

FRAMEWORKS = ("pytorch", "tensorflow", "mxnet", "keras", "chainer", "theano")
# He et al.'s ResNet-56 with projection shortcuts where the shape changes and no conv biases (hand count in
# tests/bench/test_modelplan.py: test_resnet56_has_the_hand_counted_parameters).
RESNET56_PARAMS = 855_770


def test_resnet56_is_shis_network_at_table_7s_batch():
    spec = specs.load("resnet56-cifar10")
    assert (spec["study"], spec["dataset"], spec["training"]["batch_size"]) == ("shi", "cifar10", 128)
    blocks = [layer for layer in spec["model"]["layers"] if layer["type"] == "residual"]
    assert [b["repeat"] for b in blocks] == [9, 9, 9]
    assert [b["layers"][0]["filters"] for b in blocks] == [16, 32, 64]
    assert [b["layers"][0].get("stride", 1) for b in blocks] == [1, 2, 2]
    assert spec["training"]["optimizer"] == {"name": "sgd", "lr": 0.01, "momentum": 0.9, "weight_decay": 1e-4}
    assert "option A" in spec["choices"]["shortcut"]  # the departure is named
    quick = specs.load("resnet56-cifar10", "quick")  # the warm-up epoch: a few mini-batches of the paper's size
    assert quick["training"]["batch_size"] == 128 and quick["data"]["train_subset"] // 128 <= 4


def _prepared_cifar10(data_root: Path) -> None:
    """A tiny prepared CIFAR-10 in the real format (arrays.npz + meta.json)."""
    folder = data_root / "prepared" / "cifar10"
    folder.mkdir(parents=True)
    arrays = {f"{k}_{split}": np.zeros((n, 32, 32, 3) if k == "x" else n, np.uint8 if k == "x" else np.int64)
              for split, n in (("train", 100), ("test", 50)) for k in ("x", "y")}
    np.savez(folder / "arrays.npz", **arrays)
    meta = {"format_version": 1, "dataset": "cifar10", "arrays_sha256": hashing.sha256_file(folder / "arrays.npz")}
    atomic.write_text(folder / "meta.json", json.dumps(meta))


@pytest.mark.parametrize(("era", "dlbench_layers_only", "planned"), [
    ("paper", True, 0), ("paper", False, 2), ("current", False, 2)])
def test_a_campaign_skips_resnet56_with_one_line_where_a_module_has_only_dlbenchs_layers(
        tmp_path, capsys, monkeypatch, era, dlbench_layers_only, planned):
    # Today's 2018 modules build ResNet-56 (their declarations); one with DLBench's layers only is refused in one line.
    if dlbench_layers_only:
        for fw in ("keras", "pytorch"):
            declare(monkeypatch, fw, era)
    _prepared_cifar10(tmp_path / "data")
    matrix = plan.build_matrix(["pytorch", "keras"], ["resnet56-cifar10"], "cpu", "smoke", 1, "real", era=era)
    runs = plan.plan(matrix, ScriptRunner("ok"), "t", tmp_path / "results" / "t", tmp_path / "data", threads=1)
    assert len(runs) == planned
    skipped = [line for line in capsys.readouterr().out.splitlines() if line.startswith("skipping")]
    assert skipped == ([] if planned else [
        f"skipping resnet56-cifar10 for {fw}: the paper-era {fw} module does not translate activation, batchnorm, "
        "global_avgpool, residual, conv2d with bias = false (run it with ERA=current)" for fw in ("keras", "pytorch")])
    assert capabilities.untranslated("pytorch", "paper", specs.load("cnn-cifar10")) == []


@pytest.mark.slow
def test_every_framework_trains_resnet56_with_the_hand_counted_parameters(tmp_path):
    runs = {fw: run for (_, fw), run in smoke_runs(tmp_path, FRAMEWORKS, ["resnet56-cifar10"],
                                                   datasets=["cifar10"]).items()}
    assert sorted(runs) == sorted(FRAMEWORKS)
    for framework, run in runs.items():
        assert run["status"] == "ok", (framework, run["failure"])
        kernels = run["device_used"]["kernels"]
        assert "batchnorm" in kernels and "residual" in kernels, framework
    counts = {framework: run["model"]["trainable_params"] for framework, run in runs.items()}
    assert counts == dict.fromkeys(FRAMEWORKS, RESNET56_PARAMS)
    sys.stderr.write("resnet56 smoke training seconds: " + ", ".join(
        f"{fw}={run['timing']['training_time_s']:.2f}" for fw, run in sorted(runs.items())) + "\n")


def test_resnet50_is_he_et_al_s_with_torchvisions_parameter_count():
    spec = specs.load("resnet50-synthetic")
    assert (spec["dataset"], spec["training"]["batch_size"], spec["model"]["input_shape"]) == (
        "generated", 16, [224, 224, 3])
    model = modelplan.plan(spec)
    blocks = [layer for layer in model.layers if layer.type == "residual"]
    assert len(blocks) == 3 + 4 + 6 + 3
    assert [b.output.dims for b in blocks if b.shortcut] == [(56, 56, 256), (28, 28, 512), (14, 14, 1024),
                                                             (7, 7, 2048)]  # a projection opens each stage
    # Hand count per bottleneck stage (in -> mid -> mid -> out; the first block's projection in -> out):
    def stage(n: int, c_in: int, mid: int) -> int:
        out = 4 * mid
        body = mid * mid * 9 + mid * out + 2 * (2 * mid) + 2 * out  # 3x3, last 1x1, 3 BNs (first 1x1 below)
        return n * body + c_in * mid + (n - 1) * out * mid + c_in * out + 2 * out  # first 1x1s, projection + BN
    hand = 7 * 7 * 3 * 64 + 2 * 64 + stage(3, 64, 64) + stage(4, 256, 128) + stage(6, 512, 256) + stage(3, 1024, 512)
    hand += 2048 * 1000 + 1000
    assert hand == trainable(model.layers) == 25_557_032
    assert capabilities.untranslated("mxnet", "paper", spec) == []  # MXNet 1.3.0's Gluon has every block it needs


@pytest.mark.slow
def test_every_framework_trains_resnet50_on_generated_images(tmp_path):
    # Generated data (bench/generated.py): nothing prepared, the data root is never read.
    runs = {fw: run for (_, fw), run in smoke_runs(tmp_path, FRAMEWORKS, ["resnet50-synthetic"]).items()}
    assert sorted(runs) == sorted(FRAMEWORKS)
    for framework, run in runs.items():
        assert run["status"] == "ok", (framework, run["failure"])
    counts = {framework: run["model"]["trainable_params"] for framework, run in runs.items()}
    assert counts == dict.fromkeys(FRAMEWORKS, 25_557_032)
    sys.stderr.write("resnet50 smoke training seconds: " + ", ".join(
        f"{fw}={run['timing']['training_time_s']:.2f}" for fw, run in sorted(runs.items())) + "\n")
