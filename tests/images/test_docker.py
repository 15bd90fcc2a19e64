"""With a real Docker engine (slow; skipped with the reason when none answers): the current-era
PyTorch image builds from its lock, pip freeze inside it matches the lock, and a run's container
has no network, cannot write to the data mount, and does not run as root; a campaign's run of each image CI
builds (PyTorch and Keras) trains in a container that `docker inspect` shows bounded (read-only root
filesystem, memory and pids limits, an init process), with no host path in its request.json or run.json.

The base is the era's (images.build.base_image): $BASE_IMAGE when set (CI: images/base/make-base.sh, no
registry), else the Dockerfile's pinned default."""

from __future__ import annotations

import json
import threading
import time

import pytest

from bench.errors import UsageError
from campaign.runners.docker import _lend, _reclaim, container_config, container_user
from images import build as images
from images import lockfile
from tests.runrecord import minimal_request

pytestmark = pytest.mark.slow

PROBE = r"""
import json, os, socket, subprocess
out = {"uid": os.getuid(), "id_u": subprocess.run(["id", "-u"], capture_output=True, text=True).stdout.strip()}
try:
    socket.create_connection(("1.1.1.1", 443), timeout=3).close()
    out["network"] = "connected"
except OSError as exc:
    out["network"] = f"refused: {exc}"
try:
    socket.getaddrinfo("example.com", 443)
    out["dns"] = "resolved"
except OSError as exc:
    out["dns"] = f"failed: {exc}"
try:
    open("/data/written-by-run", "w").write("x")
    out["data_write"] = "written"
except OSError as exc:
    out["data_write"] = f"refused: {exc.strerror}"
out["data_read"] = open("/data/input.txt").read()
open("/out/result.txt", "w").write("ok")
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def pytorch_image(engine):
    return images.build(engine, images.ImageSpec("pytorch", "current", "cpu"), images.base_image(engine, "current"),
                        quiet=True)


def test_a_base_that_cannot_be_had_names_the_registry_free_route(engine):
    absent = "dlrepro/absent@sha256:" + "0" * 64
    with pytest.raises(UsageError) as caught:
        images.ensure_base(engine, absent)
    assert absent in caught.value.problem and "make base" in caught.value.fix


def test_image_carries_its_labels_and_runs_as_non_root(engine, pytorch_image):
    spec = images.ImageSpec("pytorch", "current", "cpu")
    planned = images.plan(engine, spec, images.base_image(engine, "current"))
    # Set in one place; an image also carries its base's labels (a local base's org.dlrepro.base-era, say).
    base_labels = engine.images.get(planned.base).labels or {} if planned.base else {}
    assert pytorch_image.labels == {**base_labels, **images.labels(spec, planned.base, (), planned.release)}
    assert pytorch_image.labels["org.dlrepro.lock-sha256"] == images.lock_sha256(spec)
    assert pytorch_image.attrs["Config"]["User"] == "10001:10001"
    assert pytorch_image.attrs["Config"]["Entrypoint"] == ["/opt/venv/bin/python", "-m", "bench"]


def test_pip_freeze_in_the_image_matches_the_lock(engine, pytorch_image):
    spec = images.ImageSpec("pytorch", "current", "cpu")
    assert lockfile.freeze_drift(spec.lock.read_text(), lockfile.image_freeze(engine, pytorch_image.id)) == []


def test_run_container_is_locked_down(engine, pytorch_image, tmp_path):
    data, out = tmp_path / "data", tmp_path / "out"
    data.mkdir()
    out.mkdir()
    (data / "input.txt").write_text("prepared arrays")
    req = minimal_request(runner="docker", env_id=pytorch_image.id, image_digest=images.digest(pytorch_image),
                          data={"dataset": "mnist", "source": "real", "arrays_sha256": "ab" * 32, "path": str(data),
                                "train_indices": None, "test_indices": None})
    user = container_user()
    cfg = container_config(req, out, user)
    cfg.update(entrypoint=["/opt/venv/bin/python", "-c", PROBE], command=[])
    _lend(out, user)
    container = engine.containers.create(**cfg)
    try:
        container.start()
        assert container.wait(timeout=120)["StatusCode"] == 0, container.logs().decode()
        result = json.loads(container.logs(stdout=True, stderr=False).decode().strip().splitlines()[-1])
    finally:
        container.remove(force=True)
        _reclaim(out)
    assert result["uid"] != 0 and result["id_u"] != "0"
    assert result["network"].startswith("refused"), result
    assert result["dns"].startswith("failed"), result
    assert result["data_write"].startswith("refused"), result
    assert result["data_read"] == "prepared arrays"
    assert not (data / "written-by-run").exists()
    assert (out / "result.txt").read_text() == "ok"


def _inspect_while_running(engine, run_id: str, seen: dict, done: threading.Event) -> None:
    """Put the HostConfig of the container labelled with `run_id` into `seen` as soon as it exists (the runner
    removes it when the run ends)."""
    while not done.is_set():
        for container in engine.containers.list(all=True, filters={"label": f"org.dlrepro.run-id={run_id}"}):
            seen.update(container.attrs["HostConfig"])
            return
        time.sleep(0.2)


@pytest.mark.parametrize("framework", ["pytorch", "keras"])  # the images CI builds (.ci/run)
def test_a_campaign_run_trains_in_a_bounded_container_and_names_no_host_path(engine, tmp_path, framework):
    from bench import request, schema
    from campaign import execute, plan, runners
    from campaign.runners.docker import DockerRunner
    from data import synthetic

    data_root = tmp_path / "data"
    synthetic.make_synthetic("mnist", data_root, sizes=(1024, 256), progress=False)
    limits = runners.container_limits("4g")  # the pids limit the host's default (4096 here)
    runner = DockerRunner(data_root=data_root, limits=limits)
    matrix = plan.Matrix((framework,), ("cnn-mnist",), "cpu", "smoke", 1, "synthetic")
    cdir = tmp_path / "results" / "bounded"
    (run,) = plan.plan(matrix, runner, "bounded", cdir, data_root, threads=1)
    seen: dict = {}
    done = threading.Event()
    watcher = threading.Thread(target=_inspect_while_running, args=(engine, run.run_id, seen, done), daemon=True)
    watcher.start()
    try:
        record = execute.execute_one(run, runner, cdir, 900)
    finally:
        done.set()
        watcher.join(timeout=10)
    print(framework, {k: seen.get(k) for k in ("ReadonlyRootfs", "Memory", "MemorySwap", "PidsLimit", "Init",
                                                "Tmpfs")})
    assert seen["ReadonlyRootfs"] is True and seen["Init"] is True
    assert seen["Memory"] == seen["MemorySwap"] == 4 * 2**30 and seen["PidsLimit"] == runners.default_pids()
    assert set(seen["Tmpfs"]) == {"/tmp"}
    assert record["status"] == "ok", record["failure"]
    assert record["environment"]["limits"] == limits.record() == schema.read_run(cdir / run.run_id)["environment"][
        "limits"]
    for name in (request.REQUEST_FILE, schema.RUN_FILE):
        text = (cdir / run.run_id / name).read_text()
        assert str(tmp_path) not in text and str(data_root) not in text, name
    assert schema.read_run(cdir / run.run_id)["dataset"]["path"] == "prepared/mnist-synthetic"


def test_a_campaign_stopped_by_sigterm_takes_its_container_down(engine, pytorch_image, tmp_path):
    # `kill` (or a CI's or service manager's stop) sends SIGTERM, not Ctrl-C: the campaign still kills its run's
    # container, publishes nothing, and exits as interrupted.
    import signal
    import subprocess
    import sys

    from data import synthetic

    data_root, results = tmp_path / "data", tmp_path / "results"
    synthetic.make_synthetic("mnist", data_root, progress=False)
    label = {"label": "org.dlrepro.campaign=sigterm"}
    cmd = [sys.executable, "-m", "campaign", "run", "--workloads", "cnn-mnist", "--device", "cpu",
           "--frameworks", "pytorch", "--profile", "quick", "--repeats", "1", "--runner", "docker",
           "--data", "synthetic", "--data-root", str(data_root), "--results", str(results),
           "--campaign", "sigterm", "--threads", "1"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 300
        while not engine.containers.list(filters=label) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
        assert engine.containers.list(filters=label), "the run's container never started"
        time.sleep(2)  # inside the run, not at its start
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, out
    assert "interrupted" in out
    assert not engine.containers.list(all=True, filters=label), "a container outlived its campaign"
    assert len(list((results / "sigterm").glob("*.partial"))) == 1
    assert not list((results / "sigterm").glob("*/run.json")), "a killed run is not a result"
