"""Resolving one run into its run request (bench/request.py): everything decided here, on the host.

The entrypoint inside an image reads only the request, so whatever needs the host's libraries is
settled here: the workload spec resolved against a profile (TOML, campaign/specs.py), the rows of
a subset (NumPy's current generator), and the prepared dataset's identity, or, for a workload whose
data are generated in the run (dataset = "generated": bench/generated.py), their recipe and sha256.
"""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bench import generated, prepared, request
from bench.errors import UsageError
from campaign import specs

# Subsets are drawn with this fixed seed so every framework and repeat sees the same examples.
SUBSET_SEED = 0


@dataclass(frozen=True)
class Dataset:
    """A prepared dataset as a request names it: where it is on this host (`folder`), its hash, its split
    sizes, the raw files it was prepared from ({name: {"sha256", "verified"}}; empty for folders prepared
    before that was recorded) and `path`, the folder relative to the data root it was found under (the
    request's data.path: no host path in an artifact; empty for a folder given alone, which the request
    then names as it is)."""

    name: str
    source: str
    folder: Path
    arrays_sha256: str
    sizes: dict[str, int]
    raw_files: dict[str, dict[str, str]] = field(default_factory=dict)
    path: str = ""


@dataclass(frozen=True)
class Environment:
    """What a runner prepared for a framework: its identity (lock sha256, image id, or the system
    runner's packages sha256) and, for containers, the image digest run.json records; for the system
    runner, the environment it found (request environment.system: bench/request.py); for a
    container wrapper, the image it runs (environment.container); the bounds it puts on each run
    (environment.limits: bench/request.py LIMIT_FIELDS)."""

    env_id: str
    image_digest: str | None = None
    system: dict | None = None
    container: dict | None = None
    limits: dict | None = None


def subset_indices(n: int, k: int | None) -> list[int] | None:
    """Sorted rows of a fixed-seed subset of k of n examples; None for the whole split."""
    if k is None or k >= n:
        return None
    return np.sort(np.random.default_rng(SUBSET_SEED).permutation(n)[:k]).tolist()


def find_dataset(data_root: Path, name: str, source: str) -> Dataset:
    """The prepared dataset `name` of `source` under data_root, or a UsageError naming how to make it.

    Its arrays' bytes are hashed (0.16 s for SVHN's 306 MB) before runs are planned on the digest its
    meta.json records: damaged arrays stop the campaign here, in one line, not each run in its setup.
    """
    folder = prepared.prepared_dir(data_root, name, source)
    try:
        meta = prepared.read_meta(folder)
    except UsageError:
        raise UsageError(f"dataset '{name}' ({source}) is not prepared in {folder}",
                         prepared.prepare_again(name, source)) from None
    problem = prepared.arrays_problem(folder, meta)
    if problem:
        raise UsageError(problem, "prepare it again: " + prepared.prepare_again(name, source))
    return Dataset(name, source, folder.resolve(), meta["arrays_sha256"], prepared.split_sizes(folder),
                   raw_files_of(meta), folder.relative_to(data_root).as_posix())


def raw_files_of(meta: dict) -> dict[str, dict[str, str]]:
    """{raw file: {"sha256", "verified"}} from a prepared dataset's meta.json (data/prepare.py)."""
    how = meta.get("raw_verification") or {}
    return {name: {"sha256": digest, "verified": how.get(name, "not recorded (prepared before it was)")}
            for name, digest in sorted((meta.get("raw_files") or {}).items())}


def generated_data(spec: dict) -> dict:
    """The request's data block of a workload whose data are generated in the run (bench/generated.py):
    its recipe and the arrays' sha256 (a UsageError when the spec lacks what the recipe needs)."""
    try:
        rec = generated.recipe(spec)
    except ValueError as exc:
        raise UsageError(str(exc), f"fix {specs.where(spec.get('name', '?'))}") from None
    # Making the arrays is what gives their sha256 (a paper profile's: ~0.3 s, 60-90 MB), and every framework,
    # repeat and sweep point of a workload has one recipe: each recipe's block is made once per process. The
    # cache's key is the recipe itself, frozen: its (field, value) pairs, lists as tuples.
    frozen = tuple(sorted((name, tuple(v) if isinstance(v, list) else v) for name, v in rec.items()))
    return copy.deepcopy(_request_data(frozen))  # a request of its own: no block shared between requests


@functools.cache
def _request_data(recipe: tuple[tuple[str, Any], ...]) -> dict:
    """generated.request_data of a frozen recipe (generated_data's cache key): the arrays made once."""
    return generated.request_data({name: list(v) if isinstance(v, tuple) else v for name, v in recipe})


def resolve(*, framework: str, era: str, workload: str, profile: str, spec: dict, dataset: Dataset | None,
            device: str, threads: int | None, seed: int, repeat: int, campaign: str, runner: str,
            environment: Environment, monitor: bool = True, sweep: dict | None = None) -> dict:
    """The run request of one run (validated, with its run_id); `sweep`: the study sweep's point it runs at
    ({axis: value}; None or empty: no sweep). `dataset`: the prepared dataset, None for generated data or none.
    `runner`: one of campaign.runners.discovered() (the payload checks only its form)."""
    from campaign.runners import check_name  # here: campaign.runners imports this module

    check_name(runner, auto=False)
    spec = specs.for_framework(spec, framework)
    if request.reads_no_data(spec):  # a collective: buffers it fills itself (bench/collectives)
        data = request.no_data()
    elif generated.is_generated(spec):
        data = dict(generated_data(spec))
    else:
        if dataset is None:
            raise UsageError(f"workload {workload} reads dataset '{spec['dataset']}', none was found",
                             "plan the run with its prepared dataset")
        window = spec["data"].get("window")  # windows the run cuts itself (bench/prepared.py): their count
        sizes = prepared.split_sizes(dataset.folder, window) if window else dataset.sizes
        data = {
            "dataset": dataset.name, "source": dataset.source, "arrays_sha256": dataset.arrays_sha256,
            "path": dataset.path or str(dataset.folder),
            "train_indices": subset_indices(sizes["train"], spec["data"].get("train_subset")),
            "test_indices": subset_indices(sizes["test"], spec["data"].get("test_subset")),
        }
    if dataset is not None and dataset.raw_files:  # not part of the run's identity: arrays_sha256 pins the data
        data["raw_files"] = dataset.raw_files
    return request.make(
        framework=framework, era=era, workload=workload, profile=profile, spec=spec, data=data, device=device,
        threads=threads, seed=seed, repeat=repeat, campaign=campaign, runner=runner, env_id=environment.env_id,
        image_digest=environment.image_digest, monitor=monitor, system=environment.system,
        container=environment.container, sweep=sweep or None, limits=environment.limits)
