"""Paper-era framework modules, trained here on Python 3.11 through the kit's own entrypoint.

CPython 3.6 cannot be had on these machines, but four paper-era releases install on 3.11 (MXNet
1.3.0, Chainer 4.5.0, Theano 1.0.2, Keras 2.2.4 on Theano). Each gets a hash-locked test
environment (locks/<framework>.txt or locks/<framework>/requirements.txt beside this file, built by
images.envs without `pip check`: MXNet 1.3.0 declares numpy < 1.15, which has no 3.11 build) and the
3.11 shims of py311/ on its PYTHONPATH: they live here, never in an image.

A run is what a campaign makes of it: a run request (era 'paper') resolved on the host from the
workload's smoke spec (three epochs, so the loss can fall), learnable data in the prepared-data
format on disk (the probe's generators, tests/bench/frameworks/probe.py), and
`python -m bench run --request ... --out ...`, with the monitor beside it.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

from bench import atomic, request, schema
from bench.prepared import ARRAYS_FILE, FORMAT_VERSION, META_FILE, ROLES
from campaign import requests, specs
from data.npz import write_npz
from images import envs
from tests.bench.frameworks import probe

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[3]
SHIMS = HERE / "py311"
EPOCHS = 3


def test_env(framework: str) -> envs.EnvInfo:
    """The framework's paper-era test environment for Python 3.11 (built on first use): locks/<framework>.txt,
    or locks/<framework>/requirements.txt where the lock needs images.envs' files beside it (an sdist's
    build-requirements.txt and pip-install-args, which would apply to every lock in one folder)."""
    folder = HERE / "locks" / framework
    lock = folder / envs.LOCK_NAME if folder.is_dir() else HERE / "locks" / f"{framework}.txt"
    return envs.ensure_lock_env(lock, f"{framework}-paper-py311", check=False)


def python_version(framework: str) -> str:
    """The Python version of the framework's test environment: the one its runs really ran on."""
    return subprocess.run([str(test_env(framework).python), "-c", "import platform; print(platform.python_version())"],
                          capture_output=True, text=True, check=True).stdout.strip()


def run_json(framework: str, code: str, stdin: str = "", timeout: int = 900) -> dict:
    """`python -c code` in the framework's test environment (the repository and py311/ importable, one
    thread), fed `stdin`; the JSON object on its last line of output."""
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{SHIMS}", "DLREPRO_THREADS": "1"}
    proc = subprocess.run([str(test_env(framework).python), "-c", code], input=stdin, cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"exit {proc.returncode}:\n{proc.stderr[-4000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def write_prepared(folder: Path, spec: dict) -> requests.Dataset:
    """Learnable data shaped like the workload's dataset, written in the prepared-data format under
    the array names the spec's [arrays] table reads (the probe makes them under their roles)."""
    made = probe.probe_data(spec)
    names = {role: role for role in ROLES}
    names.update(spec.get("arrays") or {})
    arrays = {f"{names[role]}_{split}": values for split in ("train", "test")
              for role, values in getattr(made, split).items()}
    for split in ("train", "test"):  # the loader keys splits on y_* (data/manythings.py writes it too)
        arrays.setdefault(f"y_{split}", arrays[f"{names['y']}_{split}"])
    folder.mkdir(parents=True, exist_ok=True)
    write_npz(folder / ARRAYS_FILE, arrays)
    sha = hashlib.sha256((folder / ARRAYS_FILE).read_bytes()).hexdigest()
    meta = {"format_version": FORMAT_VERSION, "dataset": spec["dataset"], "source": "synthetic",
            "arrays_sha256": sha, "num_classes": spec["model"].get("num_classes"), "keys": sorted(arrays)}
    atomic.write_text(folder / META_FILE, json.dumps(meta, sort_keys=True))
    sizes = {split: len(arrays[f"{names['y']}_{split}"]) for split in ("train", "test")}
    return requests.Dataset(spec["dataset"], "synthetic", folder, sha, sizes)


def paper_request(framework: str, workload: str, data_root: Path, env: envs.EnvInfo,
                  edit: Callable[[dict], None] | None = None) -> dict:
    """The run request of `workload` (smoke sizes, EPOCHS epochs) for the paper-era `framework`;
    `edit` may change the spec first (e.g. an absurd learning rate: a run that must fail with 'nan')."""
    spec = specs.load(workload, "smoke")
    spec["training"]["epochs"] = EPOCHS
    if edit is not None:
        edit(spec)
    dataset = write_prepared(data_root / workload, spec)
    return requests.resolve(
        framework=framework, era="paper", workload=workload, profile="smoke", spec=spec, dataset=dataset,
        device="cpu", threads=1, seed=0, repeat=1, campaign="paper-py311", runner="local",
        environment=requests.Environment(env.lock_sha256))


def run(framework: str, workloads: list[str], root: Path, extra_env: dict[str, str] | None = None,
        timeout: int = 1800, edit: Callable[[dict], None] | None = None) -> dict[str, Path]:
    """Run each workload through the entrypoint in the framework's test environment; {workload: run dir}.

    Run folders land in root/results/paper-py311/<run-id>, as a campaign publishes them, so the
    analysis reads them like any campaign's.
    """
    env = test_env(framework)
    process_env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{SHIMS}", "PYTHONUNBUFFERED": "1",
                   **(extra_env or {})}
    out = {}
    for workload in workloads:
        req = paper_request(framework, workload, root / "data", env, edit)
        run_dir = root / "results" / "paper-py311" / req["run_id"]
        request.write(run_dir, req)
        with open(run_dir / schema.LOG_FILE, "w") as log:
            subprocess.run([str(env.python), "-m", "bench", "run", "--request", str(run_dir / request.REQUEST_FILE),
                            "--out", str(run_dir)], cwd=REPO, env=process_env, stdout=log,
                           stderr=subprocess.STDOUT, timeout=timeout)
        out[workload] = run_dir
    return out


# -- what every paper-era test asserts on a run folder ---------------------------------------------
def finished(run_dir: Path) -> dict:
    """The run's run.json, validated (bench.schema.read_run), once it shows status ok (else its log's end)."""
    record = schema.read_run(run_dir)
    log = (Path(run_dir) / schema.LOG_FILE).read_text(errors="replace")
    assert record["status"] == "ok", f"{record['config']['workload']}: {record['failure']}\n{log[-3000:]}"
    return record


def assert_paper_run(record: dict, framework: str, version: str, python: str) -> None:
    """Era 'paper', the framework at `version`, every epoch done, on the Python that really ran (`python`,
    the test environment's 3.11; CPython 3.6 in a paper-era image)."""
    assert record["config"]["era"] == "paper" and record["config"]["framework"] == framework
    assert record["environment"]["framework_version"] == version
    assert record["host"]["python"] == record["environment"]["python"] == python
    assert record["results"]["epochs_completed"] == EPOCHS


def assert_loss_falls(run_dir: Path) -> list[dict]:
    """EPOCHS epochs of finite positive losses, the last below the first, accuracies in [0, 1]; the metrics."""
    metrics = schema.read_metrics(run_dir)
    losses = [m["loss"] for m in metrics]
    assert len(losses) == EPOCHS and all(math.isfinite(loss) and loss > 0 for loss in losses), losses
    assert losses[-1] < losses[0], f"loss did not fall: {losses}"
    assert all(0.0 <= m["test_accuracy"] <= 1.0 for m in metrics)
    return metrics


def assert_monitor_sampled(run_dir: Path) -> None:
    """The in-run monitor ran: monitor.csv has samples with the process's memory, run.json no 'disabled'."""
    rows = list(schema.read_monitor(run_dir))
    assert rows, "monitor.csv has no samples"
    assert any(row["proc_rss_mb"] for row in rows)
    assert "disabled" not in schema.read_run(run_dir)["monitor"]
