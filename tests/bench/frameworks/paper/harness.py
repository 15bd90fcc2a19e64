"""Paper-era framework modules trained in their real paper images, the way a campaign runs them.

Each framework's runs go through the kit's docker runner (campaign/runners/docker.py) in the
framework's paper image (era 'paper', CPU variant: CPython 3.6.15, the study's versions), built or
reused by images.build exactly as `make images ERA=paper` leaves it: a fresh container per run,
read-only root, no network, a non-root user, the image's entrypoint. A run is what a campaign makes
of it (campaign.requests.resolve, campaign.execute.execute_one): the workload's smoke spec with
EPOCHS epochs (so the loss can fall), learnable data in the prepared-data format under a data root
(the probe's generators, tests/bench/frameworks/probe.py), published into
<root>/results/CAMPAIGN/<run-id>, which the analysis reads like any campaign's. The `python -m
campaign run` command line cannot change a spec (epochs, an absurd learning rate), so the tests call
the same functions it does.

What a run cannot show (the LSTM's padding invariance, dropout off at test time) is checked by
inimage.py beside this file, run in the same image by run_in_image: a container of the same bounds
with that one script mounted read-only and a data root at /data. A framework's runs and its checks
are two background jobs (paper_fixture, checks_fixture: tests/background.py's two lanes).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from bench import atomic, prepared, schema
from bench.prepared import ARRAYS_FILE, FORMAT_VERSION, META_FILE, ROLES
from campaign import requests, specs
from campaign.execute import execute_one
from campaign.plan import PlannedRun
from campaign.runners import container_limits
from campaign.runners.docker import DockerRunner, bounds, container_user
from data.npz import write_npz
from images import build as images
from tests import background
from tests.bench.frameworks import check, probe

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[3]
ERA = "paper"
CAMPAIGN = "paper-images"  # the results folder the runs are published in
EPOCHS = 3
PYTHON = "3.6.15"  # the paper base's CPython, inside every paper image
WORKLOADS = check.PROBED  # every DLBench CNN and LSTM workload: each paper module runs them all
PADDED = check.PADDED  # the workloads whose LSTM reads real lengths
NAN_WORKLOAD = "cnn-mnist"
# The probe's absurd learning rate (tests/bench/frameworks/probe.py nan_check): near float32's largest, so the
# loss overflows within a few steps on any CPU's kernels.
NAN_LR = 1e38
RUN_TIMEOUT_S = 900
INIMAGE_SCRIPT = "inimage.py"
# inimage.py's EXTRA checks that read a workload's trainer (built as a run builds it): the workload whose smoke spec
# and probe data go with the check.
EXTRA_WORKLOADS = {"mnist_layers": "cnn-mnist"}
CHECKS_MOUNT, DATA_MOUNT = "/checks", "/data"


def pinned(framework: str, package: str) -> str:
    """The version the framework's paper image lock (images/<framework>/paper/requirements.txt) pins."""
    lock = REPO / "images" / framework / ERA / "requirements.txt"
    found = re.search(rf"^{re.escape(package)}==(\S+)", lock.read_text(), re.MULTILINE)
    assert found, f"{package} is not pinned in {lock}"
    return found.group(1)


def write_prepared(data_root: Path, spec: dict) -> requests.Dataset:
    """Learnable data shaped like the workload's dataset, written as its synthetic prepared dataset under
    `data_root` (the array names the spec's [arrays] table reads; the probe makes them under their roles),
    found again the way a campaign finds it (campaign.requests.find_dataset)."""
    folder = prepared.prepared_dir(data_root, spec["dataset"], "synthetic")
    if not (folder / META_FILE).exists():  # a workload's NaN run reads the same data as its own run
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
    return requests.find_dataset(data_root, spec["dataset"], "synthetic")


def smoke_spec(workload: str, edit: Callable[[dict], None] | None = None) -> dict:
    """The workload's smoke spec with EPOCHS epochs; `edit` may change it further."""
    spec = specs.load(workload, "smoke")
    spec["training"]["epochs"] = EPOCHS
    if edit is not None:
        edit(spec)
    return spec


def absurd_learning_rate(spec: dict) -> None:
    """A spec edit: plain SGD at NAN_LR, which must end the run with a non-finite loss (cause 'nan')."""
    spec["training"]["optimizer"] = {"name": "sgd", "lr": NAN_LR, "momentum": 0.0}


@dataclass
class PaperRuns:
    """A framework's runs in its paper image: {workload: run folder}, the NaN run's folder, the image
    (its id and the digest run.json records), the data root, and how long the runs took."""

    framework: str
    runs: dict[str, Path]
    nan: Path | None
    image_id: str
    image_digest: str
    data_root: Path
    campaign_dir: Path
    seconds: float

    def record(self, workload: str) -> dict:
        """The workload's run.json, validated (bench.schema.read_run), once it shows status ok (else its log's end)."""
        return finished(self.runs[workload])


_MKTEMP = threading.Lock()


def mktemp(tmp_path_factory, name: str) -> Path:
    """tmp_path_factory.mktemp(name) from a background lane: pytest makes the session's base folder on first use,
    not thread-safely (two lanes at once get different ones, and mktemp refuses the second): one at a time."""
    with _MKTEMP:
        return tmp_path_factory.mktemp(name)


def runner(data_root: Path) -> DockerRunner:
    """The docker runner of a CPU campaign in the paper era, reading requests' data under `data_root`."""
    return DockerRunner(device="cpu", era=ERA, data_root=data_root)


def run_paper(framework: str, root: Path, workloads: tuple[str, ...], nan: bool = True, threads: int = 1,
              timeout_s: int = RUN_TIMEOUT_S) -> PaperRuns:
    """Prepare the framework's paper image (built or reused: images.build), then run each workload (smoke,
    EPOCHS epochs, `threads` threads, each within `timeout_s`) and, with `nan`, NAN_WORKLOAD at an absurd
    learning rate, one after another through campaign.execute.execute_one, published into root/results/CAMPAIGN."""
    data_root, campaign_dir = root / "data", root / "results" / CAMPAIGN
    campaign_dir.mkdir(parents=True, exist_ok=True)
    docker = runner(data_root)
    environment = docker.prepare(framework)  # before the clock starts: a missing image is built here
    started = time.perf_counter()
    planned = [(w, smoke_spec(w)) for w in workloads]
    if nan:
        planned.append(("nan", smoke_spec(NAN_WORKLOAD, absurd_learning_rate)))
    out: dict[str, Path] = {}
    for name, spec in planned:
        workload = spec["name"]
        request = requests.resolve(
            framework=framework, era=ERA, workload=workload, profile="smoke", spec=spec,
            dataset=write_prepared(data_root, spec), device="cpu", threads=threads, seed=0, repeat=1,
            campaign=CAMPAIGN, runner=docker.name, environment=environment)
        execute_one(PlannedRun(request, f"{framework} {name} {ERA}"), docker, campaign_dir, timeout_s)
        out[name] = campaign_dir / request["run_id"]
    seconds = time.perf_counter() - started
    _say_times(framework, out, seconds)
    nan_run = out.pop("nan", None)
    return PaperRuns(framework, out, nan_run, environment.env_id, environment.image_digest or "", data_root,
                     campaign_dir, seconds)


def _say_times(framework: str, runs: dict[str, Path], seconds: float) -> None:
    parts = []
    for name, run_dir in runs.items():
        timing = json.loads((run_dir / schema.RUN_FILE).read_text())["timing"]
        parts.append(f"{name}={timing.get('setup_time_s') or 0:.0f}+{timing.get('training_time_s') or 0:.0f}")
    sys.stderr.write(f"paper image {framework}: {len(runs)} runs in {seconds:.0f} s (setup+training s: "
                     f"{', '.join(parts)})\n")


def run_in_image(framework: str, data_root: Path, checks: dict, timeout: int = 900) -> dict:
    """inimage.py in a container of the framework's paper image (the one its runs get: DockerRunner.prepare), as
    bounded as a run's (read-only root, tmpfs /tmp, no network, the host user, no capabilities), one thread,
    `data_root` at /data; `checks` is its input (see inimage.py). Its JSON last line of output."""
    image_id = runner(data_root).prepare(framework).env_id
    folder = data_root / "inimage"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "checks.json").write_text(json.dumps(checks))
    user = container_user()
    client = images.client()
    container = client.containers.create(
        image=image_id, entrypoint=["/opt/venv/bin/python", f"{CHECKS_MOUNT}/{INIMAGE_SCRIPT}"],
        command=[f"{DATA_MOUNT}/inimage/checks.json"], user=f"{user[0]}:{user[1]}", network_mode="none",
        volumes={str(HERE / INIMAGE_SCRIPT): {"bind": f"{CHECKS_MOUNT}/{INIMAGE_SCRIPT}", "mode": "ro"},
                 str(data_root): {"bind": DATA_MOUNT, "mode": "ro"}},
        environment={"HOME": "/tmp", "TMPDIR": "/tmp", "DLREPRO_THREADS": "1", "PYTHONUNBUFFERED": "1"},
        security_opt=["no-new-privileges"], cap_drop=["ALL"], detach=True, **bounds(container_limits()))
    try:
        container.start()
        status = container.wait(timeout=timeout)["StatusCode"]
        output = container.logs(stdout=True, stderr=True).decode(errors="replace")
    finally:
        container.remove(force=True)
    assert status == 0, f"{INIMAGE_SCRIPT} in {framework}'s image: exit {status}\n{output[-4000:]}"
    return {**json.loads(output.strip().splitlines()[-1]), "framework": framework}


# -- what every paper-image test asserts on a run folder -----------------------------------------------
def finished(run_dir: Path) -> dict:
    """The run's run.json, validated (bench.schema.read_run), once it shows status ok (else its log's end)."""
    record = schema.read_run(run_dir)
    log = (Path(run_dir) / schema.LOG_FILE).read_text(errors="replace")
    assert record["status"] == "ok", f"{record['config']['workload']}: {record['failure']}\n{log[-3000:]}"
    return record


def assert_paper_run(record: dict, paper: PaperRuns, version: str) -> None:
    """Era 'paper', the framework at `version` (its image lock's pin), every epoch done, on CPython 3.6.15 inside
    the container (the host record is the container's), the image named by the digest the runner prepared."""
    framework = paper.framework
    assert record["config"]["era"] == ERA and record["config"]["framework"] == framework
    env = record["environment"]
    assert env["framework_version"] == version == pinned(framework, framework)
    assert record["host"]["python"] == env["python"] == env["framework_build"]["python"] == PYTHON
    assert env["runner"] == "docker" and env["env_id"] == paper.image_id
    assert env["image_digest"] == paper.image_digest and paper.image_digest
    # The kit's paper base (make base ERA=paper) says what it is from its own /etc/dlrepro/base.json.
    assert env["base"]["era"] == ERA and env["base"]["python"] == PYTHON
    assert record["results"]["epochs_completed"] == EPOCHS


def assert_loss_falls(run_dir: Path) -> list[dict]:
    """EPOCHS epochs of finite losses in (0, 10), the last below the first, accuracies in [0, 1]; the metrics."""
    metrics = schema.read_metrics(run_dir)
    assert [m["epoch"] for m in metrics] == list(range(1, EPOCHS + 1))
    losses = [m["loss"] for m in metrics]
    assert all(math.isfinite(loss) and 0 < loss < 10 for loss in losses), losses
    assert losses[-1] < losses[0], f"loss did not fall: {losses}"
    assert all(0.0 <= m["test_accuracy"] <= 1.0 and 0.0 <= m["train_accuracy"] <= 1.0 for m in metrics)
    return metrics


def assert_monitor_sampled(run_dir: Path) -> None:
    """The in-run monitor ran in the container: monitor.csv has samples with the process's memory."""
    rows = list(schema.read_monitor(run_dir))
    assert rows, "monitor.csv has no samples"
    assert any(row["proc_rss_mb"] for row in rows)
    assert "disabled" not in schema.read_run(run_dir)["monitor"]


def assert_nan_failed(paper: PaperRuns) -> None:
    """The absurd learning rate's run: failed with cause 'nan', the module's own NonFiniteLoss, in the image."""
    record = schema.read_run(paper.nan)
    assert record["status"] == "failed" and record["failure"]["cause"] == "nan", record["failure"]
    assert re.match(r"NonFiniteLoss: (loss|parameters) became .*(nan|inf)", record["failure"]["message"]), \
        record["failure"]["message"]
    assert record["config"]["era"] == ERA and record["spec"]["training"]["optimizer"]["lr"] == NAN_LR
    assert record["environment"]["image_digest"] == paper.image_digest


def assert_authors_model(checks: dict, expected: list[dict], total: int) -> None:
    """inimage.py's mnist_layers (the cnn-mnist model as the framework's own introspection reports it) is the authors'
    notebook's: the same neutral layer list, entry by entry, and `total` parameters by the framework's own count,
    which the expected layers add up to. A mismatch names each layer that differs, both ways round."""
    assert sum(layer["params"] for layer in expected) == total, "the expected layers do not add up to the total"
    got = checks["mnist_layers"]
    diffs = []
    for i in range(max(len(got["layers"]), len(expected))):
        have = got["layers"][i] if i < len(got["layers"]) else None
        want = expected[i] if i < len(expected) else None
        if have != want:  # keys in one order on both lines, so the two read side by side
            have, want = (None if d is None else {k: d[k] for k in sorted(d)} for d in (have, want))
            diffs.append(f"  layer {i}: {checks['framework']} reports {have}\n  {' ' * len(str(i))}        "
                         f"the notebook has {want}")
    if got["total"] != total:
        diffs.append(f"  total: {checks['framework']} counts {got['total']:,} parameters, the notebook {total:,}")
    assert not diffs, f"{checks['framework']}'s cnn-mnist is not the authors' model:\n" + "\n".join(diffs)


def in_image_checks(framework: str, root: Path, padding: tuple[str, ...] = PADDED, evaluations: bool = False,
                    extra: tuple[str, ...] = ()) -> dict:
    """inimage.py's output (and "framework"): the padding check on `padding`'s workloads, with `evaluations` two
    evaluations of NAN_WORKLOAD's trainer, and the `extra` checks it names (those of EXTRA_WORKLOADS on their
    workload's trainer), on the probe's data under root/data."""
    data_root = root / "data"
    built = {name: EXTRA_WORKLOADS[name] for name in extra if name in EXTRA_WORKLOADS}
    names = list(dict.fromkeys([*padding, *([NAN_WORKLOAD] if evaluations else []), *built.values()]))
    for workload in names:
        write_prepared(data_root, smoke_spec(workload))
    data = {w: str(prepared.prepared_dir(Path(DATA_MOUNT), specs.load(w)["dataset"], "synthetic")) for w in names}
    return run_in_image(framework, data_root, {
        "framework": framework, "padding": {w: smoke_spec(w) for w in padding},
        "evaluations": smoke_spec(NAN_WORKLOAD) if evaluations else None, "extra": list(extra),
        "extra_specs": {name: smoke_spec(w) for name, w in built.items()}, "data": data})


def paper_fixture(framework: str, module: str, weight: float):
    """A module-scoped fixture `paper`: the framework's PaperRuns of every workload (WORKLOADS) and the NaN run,
    run once, in the background beside the other frameworks' (tests/background.py: two lanes, one thread per
    run, on CI's two cores; `weight`: its rough seconds on them)."""

    def run(tmp_path_factory) -> PaperRuns:
        return run_paper(framework, mktemp(tmp_path_factory, f"{framework}-paper"), WORKLOADS)

    return background.fixture(f"paper image {framework} runs", run, weight=weight, module=module, fixture_name="paper")


def checks_fixture(framework: str, module: str, weight: float, evaluations: bool = False,
                   extra: tuple[str, ...] = ()):
    """A module-scoped fixture `checks`: in_image_checks' output, run once, in the background as a job of its own
    (Theano's cold compiles make it minutes: a lane of its own evens the two lanes out)."""

    def run(tmp_path_factory) -> dict:
        started = time.perf_counter()
        out = in_image_checks(framework, mktemp(tmp_path_factory, f"{framework}-checks"), evaluations=evaluations,
                              extra=extra)
        sys.stderr.write(f"paper image {framework}: {INIMAGE_SCRIPT} in {time.perf_counter() - started:.0f} s\n")
        return out

    return background.fixture(f"paper image {framework} checks", run, weight=weight, module=module,
                              fixture_name="checks")


# -- the tests every paper-image module makes in the same words (imported there, collected with its `paper`) ----
SHARED_TESTS = [
    "test_run_is_a_valid_paper_era_run",
    "test_loss_falls",
    "test_monitor_sampled_the_run",
    "test_info_records_threads_and_kernels",
    "test_non_finite_loss_fails_the_run_as_nan",
    "test_lstm_reads_the_last_real_step",
    "test_versions_in_the_image_are_the_locks",
]


@pytest.mark.parametrize("workload", WORKLOADS)
def test_run_is_a_valid_paper_era_run(paper, workload):
    record = paper.record(workload)
    assert record["config"]["workload"] == workload
    assert_paper_run(record, paper, pinned(paper.framework, paper.framework))
    env = record["environment"]
    assert env["packages"]["numpy"] == pinned(paper.framework, "numpy")
    assert record["environment"]["limits"]["read_only_root"] is True  # the runner's bounds, as recorded


@pytest.mark.parametrize("workload", WORKLOADS)
def test_loss_falls(paper, workload):
    paper.record(workload)
    metrics = assert_loss_falls(paper.runs[workload])
    if workload == NAN_WORKLOAD:  # learnable data: it must beat chance
        assert metrics[-1]["test_accuracy"] > 1 / specs.load(workload)["model"]["num_classes"] + 0.05, metrics


@pytest.mark.parametrize("workload", WORKLOADS)
def test_monitor_sampled_the_run(paper, workload):
    paper.record(workload)
    assert_monitor_sampled(paper.runs[workload])


@pytest.mark.parametrize("workload", WORKLOADS)
def test_info_records_threads_and_kernels(paper, workload):
    # The device, one thread obeyed (the request's threads=1), the layout, the spec's optimizer, the family's kernel.
    check.assert_info_basics(paper.record(workload)["device_used"], workload)


def test_non_finite_loss_fails_the_run_as_nan(paper):
    assert_nan_failed(paper)


def test_lstm_reads_the_last_real_step(checks):
    # Cutting the post-padding off changes no logit: each LSTM's state is the one at the last real token.
    padding = checks["padding"]
    assert set(padding) == set(PADDED)
    assert all(diff < 1e-5 for diff in padding.values()), padding


def test_versions_in_the_image_are_the_locks(checks):
    versions, framework = checks["versions"], checks["framework"]
    assert versions[framework] == pinned(framework, framework)
    assert (versions["numpy"], versions["python"]) == (pinned(framework, "numpy"), PYTHON)
