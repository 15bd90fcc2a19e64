"""The charliecloud runner: a converted directory image is used only while its content matches the
sha256 its record was written with (fast: a small fake converted tree, no ch-convert, no Docker)."""

import json
import os

import pytest

from bench.errors import UsageError
from campaign.runners import charliecloud as ch


@pytest.fixture
def converted(tmp_path, monkeypatch):
    """A small directory image under CH_IMAGES as ensure_image leaves it (its record beside its
    content), no Docker engine answering, and a stand-in ch-run on PATH (prepare() only looks for it)."""
    root = tmp_path / "images"
    target = root / "pytorch-current-cpu"
    (target / "opt" / "venv" / "bin").mkdir(parents=True)
    (target / "opt" / "venv" / "bin" / "python").write_text("#!/bin/sh\n")
    (target / "etc").mkdir()
    (target / "etc" / "os-release").write_text("ID=debian\n")
    os.symlink("os-release", target / "etc" / "release")
    record = {"docker_image_id": "sha256:" + "a" * 64, "image_digest": "kit/pytorch@sha256:" + "b" * 64,
              "tag": "kit/pytorch:current-cpu", "sha256": ch.tree_sha256(target)}
    (target / ch.RECORD).write_text(json.dumps(record))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ch-run").write_text("#!/bin/sh\nexit 0\n")
    (bin_dir / "ch-run").chmod(0o755)
    monkeypatch.setenv(ch.IMAGES_VAR, str(root))
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-docker.sock")
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    return target, record


def test_an_unchanged_image_is_prepared_with_its_recorded_identity(converted):
    target, record = converted
    env = ch.CharliecloudRunner().prepare("pytorch")
    # The image's folder name under CH_IMAGES: no host path (a home folder's user name) in the artifacts.
    assert env.container == {"wrapper": "charliecloud", "reference": target.name, "sha256": record["sha256"]}
    # ch-run mounts the image read-only with a private /tmp, and bounds nothing else: run.json says so.
    assert env.limits == {"memory_bytes": None, "pids": None, "read_only_root": True, "init": False}


@pytest.mark.parametrize("tamper", [
    lambda t: (t / "opt" / "venv" / "bin" / "python").write_text("#!/bin/sh\necho changed\n"),
    lambda t: (t / "etc" / "os-release").chmod(0o600),
    lambda t: (t / "etc" / "extra.conf").write_text("added\n"),
])
def test_an_image_changed_since_it_was_converted_is_refused_with_the_fix(converted, tamper):
    target, _ = converted
    tamper(target)
    runner = ch.CharliecloudRunner()
    with pytest.raises(UsageError) as exc:
        runner.prepare("pytorch")
    message = str(exc.value)
    assert f"the Charliecloud image {target} changed since it was converted" in message
    assert f"delete {target} and run again, so it is converted anew" in message
    with pytest.raises(UsageError, match="no Charliecloud image prepared for pytorch"):
        runner.launch({"framework": "pytorch"}, target.parent / "run", 10)  # nothing was prepared


def test_a_run_on_generated_data_binds_no_data_folder(tmp_path):
    from campaign import requests, specs
    from tests.runrecord import minimal_request

    spec = specs.load("fcn-s-synthetic", "smoke")
    req = minimal_request(workload="fcn-s-synthetic", spec=spec, data=requests.generated_data(spec))
    command = ch.ch_command(tmp_path / "image", req, tmp_path / "run")
    script = command[-1]
    assert script.startswith("exec ch-run ") and "mount" not in script and str(ch.DATA_MOUNT) not in script
    prepared = minimal_request(data={"dataset": "mnist", "source": "real", "arrays_sha256": "ab" * 32,
                                     "path": str(tmp_path / "data"), "train_indices": None, "test_indices": None})
    script = ch.ch_command(tmp_path / "image", prepared, tmp_path / "run")[-1]
    assert f"mount -o remount,bind,ro {tmp_path / 'data'}" in script and f"--data {ch.DATA_MOUNT}" in script
