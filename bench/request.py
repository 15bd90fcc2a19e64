"""The run request: one run, fully resolved on the host, the only thing the entrypoint reads.

The host (campaign/) resolves a workload spec against a profile, picks the subset rows, finds the
prepared dataset and its hash, and fixes device, threads, seed and environment; the result is one
JSON object, written as ``request.json`` into the run folder before the run starts. Inside an
image the entrypoint reads nothing else (no TOML, no spec files), so an image of any Python can
run it, and any run can be re-executed from its own folder:

    python -m bench run --request results/<campaign>/<run-id>/request.json --out <new folder>

Fields (all required; ``validate`` checks them on write and on read):

- ``request_version``; ``run_id``: content_hash of the run's identity (``identity``), recomputed
  and checked on read, so an edited request cannot pose as the run it was.
- ``framework``, ``era`` (``current`` or ``paper``), ``workload``, ``profile``, ``spec``: the
  workload spec with the profile applied; its optional ``measurement`` table (the timing protocol,
  bench/measurement.py) is checked here.
- ``data``: ``dataset``, ``source`` (real, synthetic or generated), ``arrays_sha256``, ``path`` (the
  prepared folder relative to the data root, e.g. ``prepared/mnist``, so that no host path is in an
  artifact meant to be shared; each runner resolves it under its own data root and mounts or passes
  that folder: data_folder; requests before it name the absolute host folder, still read),
  ``train_indices`` and ``test_indices``
  (sorted row numbers of the subset, or null for the whole split). Generated data (bench/generated.py:
  random inputs made in the run) have dataset and source "generated", path "", null indices and
  ``data.generated``, the recipe they are made from; no other data have that field. A workload that
  reads no data (``dataset = "none"``: a collective, bench/collectives, times buffers it fills itself)
  has dataset and source "none", arrays_sha256 and path "" and null indices (``no_data``).
- ``device`` (cpu or gpu), ``threads`` (null = all the run may use), ``seed``, ``repeat``.
- ``campaign``, ``runner`` (the name of the host runner that launched it, a plain name here: RUNNER_RULE);
  ``environment``: ``env_id`` (lock sha256, image id,
  or for the system runner the sha256 of the installed packages) and ``image_digest`` (docker
  runs); ``monitor``: false only to time the monitor's own cost.

Optional (absent from older requests, checked when present): ``environment.system``, which system
runs must carry and others must not: the Python the run uses (``python``, ``executable``), the
sha256 of its installed packages (``packages_sha256``, equal to ``env_id``) and how they were
listed (``packages_source``: ``pip freeze``, or ``importlib.metadata`` where pip is absent), the
versions the framework module reports (``frameworks``, its own package ``framework_package``)
and the CUDA it was built for (``cuda``, null for a CPU build). ``data.raw_files``: {file name:
{"sha256", "verified"}}, the raw files the data was prepared from and how each was verified (e.g.
"sha256 recorded on first download, size verified"); not part of the run's identity, since
arrays_sha256 already pins the data, so run ids stay as they were. ``environment.container``, which
runs through an HPC container wrapper (WRAPPERS) must carry and others must not: ``wrapper``, the
``reference`` of the image it ran (a Charliecloud image directory, named under CH_IMAGES) and that image's ``sha256``
(beside the kit image's ``image_digest`` it was made from). ``environment.limits`` (LIMIT_FIELDS):
the bounds the runner puts on the run's process, null where it applies none: ``memory_bytes`` (with no
swap), ``pids`` (processes and threads at once), ``read_only_root`` (the root filesystem is read-only,
with a tmpfs where frameworks write) and ``init`` (an init process reaps orphans and forwards signals).
Not part of the run's identity: the same run under other bounds keeps its id.

Standard library only, CPython 3.6-clean.
"""

import json
import os
from pathlib import Path
from typing import Optional

from bench import atomic, generated, hashing, measurement, names
from bench.errors import UsageError

REQUEST_VERSION = 1
REQUEST_FILE = "request.json"
DEVICES = ("cpu", "gpu")
ERAS = ("current", "paper")
# The runners are the host's (campaign/runners/<name>.py, found there): the host checks a request's runner against
# them when it makes the request (campaign.requests.resolve), the payload, which cannot import host code, its form
# (a plain name) on write and on read, and what the system and wrapper runners' records must carry (below).
RUNNER_RULE = "a runner's name, " + names.RULE
WRAPPERS = ("charliecloud",)
CONTAINER_FIELDS = {"wrapper": (str,), "reference": (str,), "sha256": (str,)}
SYSTEM_RUNNER = "system"
PACKAGES_SOURCES = ("pip freeze", "importlib.metadata")

# Where a relative data.path is resolved when the runner gives no folder (--data): this variable, else
# the kit's data root in the current folder (a run folder re-run from a checkout finds its data there).
DATA_ROOT_VAR = "DLREPRO_DATA_ROOT"
DEFAULT_DATA_ROOT = "data"

_OPT_INT = (int, type(None))
_OPT_STR = (str, type(None))
_OPT_LIST = (list, type(None))
FIELDS = {
    "request_version": (int,),
    "run_id": (str,),
    "framework": (str,),
    "era": (str,),
    "workload": (str,),
    "profile": (str,),
    "spec": (dict,),
    "data": (dict,),
    "device": (str,),
    "threads": _OPT_INT,
    "seed": (int,),
    "repeat": (int,),
    "campaign": (str,),
    "runner": (str,),
    "environment": (dict,),
    "monitor": (bool,),
}
# sweep: the point of a study experiment's sweep the run is at ({axis: value}, e.g. {"threads": 4};
# campaign/study.py names the axes); absent for runs of no sweep, whose ids it leaves as they were.
OPTIONAL_FIELDS = {"sweep": (dict,)}
DATA_FIELDS = {
    "dataset": (str,),
    "source": (str,),
    "arrays_sha256": (str,),
    "path": (str,),
    "train_indices": _OPT_LIST,
    "test_indices": _OPT_LIST,
}
OPTIONAL_DATA_FIELDS = {"raw_files": (dict,), "generated": (dict,)}
# A workload spec's dataset, and the request's data.dataset and data.source, when the run reads no data.
NO_DATA = "none"
# data.source: a prepared dataset's (bench.prepared.SOURCES), data generated in the run, or none.
DATA_SOURCES = ("real", "synthetic", generated.SOURCE, NO_DATA)
RAW_FILE_FIELDS = {"sha256": (str,), "verified": (str,)}
ENVIRONMENT_FIELDS = {"env_id": (str,), "image_digest": _OPT_STR}
OPTIONAL_ENVIRONMENT_FIELDS = {"system": (dict,), "container": (dict,), "limits": (dict,)}
LIMIT_FIELDS = {"memory_bytes": _OPT_INT, "pids": _OPT_INT, "read_only_root": (bool,), "init": (bool,)}
SYSTEM_FIELDS = {
    "python": (str,),
    "executable": (str,),
    "packages_sha256": (str,),
    "packages_source": (str,),
    "frameworks": (dict,),
    "framework_package": (str,),
    "cuda": _OPT_STR,
}


class RequestError(UsageError):
    """A request file that does not match this format; one line naming the field and the fix."""

    def __init__(self, where: str, problem: str) -> None:
        super().__init__(f"{where}: {problem}", "write it again from its campaign (make the same target again)")


# The spec's record of where the study authors' own code differs from it (campaign/specs.py): it documents a run
# and defines nothing in it, so it is left out of the run's identity (rewording a note keeps a campaign's runs).
AUTHORS_KEY = "authors"


def identity(request: dict) -> dict:
    """What a run is: its id is the hash of this (the same inputs always give the same id, and a
    reordered framework list or a resumed campaign finds the runs already made)."""
    workload = {key: value for key, value in request["spec"].items() if key != AUTHORS_KEY}
    ident = {
        "framework": request["framework"], "env": request["environment"]["env_id"], "workload": workload,
        "dataset": request["data"]["arrays_sha256"], "device": request["device"], "seed": request["seed"],
        "repeat": request["repeat"],
    }
    if request.get("sweep"):  # a sweep point is part of what the run is (threads is not, otherwise)
        ident["sweep"] = request["sweep"]
    return ident


def run_id(request: dict) -> str:
    """The content-derived id of a request's run."""
    return hashing.content_hash(identity(request))


def _check(obj, fields, where, optional=None):
    optional = optional or {}
    if not isinstance(obj, dict):
        raise RequestError(where, f"expected an object, got {type(obj).__name__}")
    unknown = sorted(set(obj) - set(fields) - set(optional))
    if unknown:
        raise RequestError(where, f"unknown fields {unknown}")
    for name, types in list(fields.items()) + [(n, t) for n, t in optional.items() if n in obj]:
        if name not in obj:
            raise RequestError(where, f"missing field '{name}'")
        value = obj[name]
        if (isinstance(value, bool) and bool not in types) or not isinstance(value, types):
            expected = " or ".join(t.__name__ for t in types)
            raise RequestError(where, f"field '{name}' has type {type(value).__name__}, expected {expected}")


def validate(request: dict, where: str = REQUEST_FILE) -> dict:
    """Check a request object; return it unchanged or raise RequestError (a UsageError)."""
    _check(request, FIELDS, where, OPTIONAL_FIELDS)
    if "sweep" in request:
        sweep = request["sweep"]
        if not sweep or any(not isinstance(k, str) or isinstance(v, bool) or not isinstance(v, (int, float, str))
                            for k, v in sweep.items()):
            raise RequestError(where, "sweep must map axis names to numbers or words, e.g. {\"threads\": 4}")
    if request["request_version"] != REQUEST_VERSION:
        raise RequestError(where, f"request_version {request['request_version']!r} is not {REQUEST_VERSION}")
    _check(request["data"], DATA_FIELDS, f"{where}: data", OPTIONAL_DATA_FIELDS)
    for name, entry in sorted(request["data"].get("raw_files", {}).items()):
        _check(entry, RAW_FILE_FIELDS, f"{where}: data.raw_files.{name}")
    if request["data"]["source"] not in DATA_SOURCES:
        raise RequestError(where, f"data.source {request['data']['source']!r} is not one of {DATA_SOURCES}")
    problem = generated.data_problem(request["data"]) or no_data_problem(request["spec"], request["data"])
    if problem:
        raise RequestError(where, problem)
    _check(request["environment"], ENVIRONMENT_FIELDS, f"{where}: environment", OPTIONAL_ENVIRONMENT_FIELDS)
    if not names.is_plain(request["runner"]):
        raise RequestError(where, f"runner {request['runner']!r} is not {RUNNER_RULE}")
    problem = (system_environment_problem(request["runner"], request["environment"])
               or container_problem(request["runner"], request["environment"])
               or limits_problem(request["environment"]) or data_path_problem(request["data"]["path"]))
    if problem:
        raise RequestError(where, problem)
    if request["device"] not in DEVICES:
        raise RequestError(where, f"device {request['device']!r} is not one of {DEVICES}")
    if request["era"] not in ERAS:
        raise RequestError(where, f"era {request['era']!r} is not one of {ERAS}")
    measurement.check(request["spec"].get("measurement"), f"{where}: spec")  # a MeasurementError when bad
    if request["threads"] is not None and request["threads"] < 1:
        raise RequestError(where, f"threads {request['threads']} must be at least 1 (or null)")
    for split in ("train_indices", "test_indices"):
        rows = request["data"][split]
        if rows is not None and any(isinstance(i, bool) or not isinstance(i, int) or i < 0 for i in rows):
            raise RequestError(where, f"data.{split} must be non-negative row numbers")
    expected = run_id(request)
    if request["run_id"] != expected:
        raise RequestError(where, f"run_id {request['run_id']} does not match its content (expected {expected})")
    return request


def no_data() -> dict:
    """The data block of a run that reads no data (its workload spec's dataset is NO_DATA)."""
    return {"dataset": NO_DATA, "source": NO_DATA, "arrays_sha256": "", "path": "",
            "train_indices": None, "test_indices": None}


def reads_no_data(spec: dict) -> bool:
    """Whether a workload spec reads no data (dataset = "none": a collective, bench/collectives)."""
    return spec.get("dataset") == NO_DATA


def no_data_problem(spec: dict, data: dict) -> Optional[str]:
    """What is wrong with a request's data block as far as "no data" goes (None if nothing): a spec that
    reads none has exactly no_data(), and no other spec has data.source "none"."""
    if reads_no_data(spec):
        block = json.dumps(no_data(), sort_keys=True)
        return None if data == no_data() else f"a workload that reads no data needs the data block {block}"
    if data.get("source") == NO_DATA or data.get("dataset") == NO_DATA:
        return "data.source \"none\" is only for a workload whose spec has dataset = \"none\""
    return None


def system_environment_problem(runner: str, environment: dict) -> Optional[str]:
    """What is wrong with an environment block's `system` part for a run of `runner` (None if
    nothing): system runs must carry a well-formed one naming their env_id, other runs none."""
    system = environment.get("system")
    if runner != SYSTEM_RUNNER:
        return None if system is None else f"environment.system is only for {SYSTEM_RUNNER} runs, not {runner}"
    if not isinstance(system, dict):
        return "a system run needs environment.system (its Python, packages sha256 and framework versions)"
    for name, types in SYSTEM_FIELDS.items():
        value = system.get(name)
        if name not in system or isinstance(value, bool) or not isinstance(value, types):
            expected = " or ".join(t.__name__ for t in types)
            return f"environment.system.{name} is missing or not {expected}"
    digest = system["packages_sha256"]
    if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        return f"environment.system.packages_sha256 {digest!r} is not a sha256 hex digest"
    if environment.get("env_id") != digest:
        return "environment.env_id of a system run must be its environment.system.packages_sha256"
    if system["packages_source"] not in PACKAGES_SOURCES:
        return f"environment.system.packages_source {system['packages_source']!r} is not one of {PACKAGES_SOURCES}"
    return None


def container_problem(runner: str, environment: dict) -> Optional[str]:
    """What is wrong with an environment block's `container` part for a run of `runner` (None if
    nothing): runs through a container wrapper name the image they ran, other runs name none."""
    container = environment.get("container")
    if runner not in WRAPPERS:
        return None if container is None else f"environment.container is only for runs of {WRAPPERS}"
    if not isinstance(container, dict) or set(container) != set(CONTAINER_FIELDS):
        return f"a {runner} run needs environment.container with {sorted(CONTAINER_FIELDS)}"
    if container["wrapper"] != runner or not all(isinstance(container[k], str) for k in CONTAINER_FIELDS):
        return f"environment.container.wrapper must be {runner!r}, with string reference and sha256"
    if len(container["sha256"]) != 64 or set(container["sha256"]) - set("0123456789abcdef"):
        return "environment.container.sha256 {!r} is not a sha256 hex digest".format(container["sha256"])
    return None


def limits_problem(environment: dict) -> Optional[str]:
    """What is wrong with an environment block's `limits` (None if nothing, or when it has none)."""
    limits = environment.get("limits")
    if limits is None:
        return None
    if not isinstance(limits, dict) or set(limits) != set(LIMIT_FIELDS):
        return f"environment.limits needs exactly {sorted(LIMIT_FIELDS)}"
    for name, types in LIMIT_FIELDS.items():
        value = limits[name]
        if (isinstance(value, bool) and bool not in types) or not isinstance(value, types):
            return "environment.limits.{} must be {}".format(name, " or ".join(t.__name__ for t in types))
        if types is _OPT_INT and value is not None and value < 1:
            return f"environment.limits.{name} {value} must be positive (or null: not applied)"
    return None


def data_path_problem(path: str) -> Optional[str]:
    """What is wrong with a data.path (None if nothing): a relative one stays under the data root."""
    if path and not path.startswith("/") and ".." in path.split("/"):
        return f"data.path {path!r} leaves the data root ('..')"
    return None


def data_folder(data: dict, root=None) -> Optional[Path]:
    """The host folder of a request's data: None when it has none (generated in the run, or none read);
    an absolute data.path (requests before paths were relative) as it is; else data.path under `root`,
    by default $DLREPRO_DATA_ROOT, else data/ in the current folder (DEFAULT_DATA_ROOT)."""
    path = data["path"]
    if not path:
        return None
    if Path(path).is_absolute():
        return Path(path)
    base = root if root is not None else (os.environ.get(DATA_ROOT_VAR) or DEFAULT_DATA_ROOT)
    return Path(base).resolve() / path


def make(*, framework: str, era: str, workload: str, profile: str, spec: dict, data: dict, device: str,
         threads: Optional[int], seed: int, repeat: int, campaign: str, runner: str, env_id: str,
         image_digest: Optional[str] = None, monitor: bool = True, system: Optional[dict] = None,
         container: Optional[dict] = None, sweep: Optional[dict] = None, limits: Optional[dict] = None) -> dict:
    """A validated request with its run_id filled in (`system`: the system runner's environment.system;
    `container`: a wrapper runner's environment.container; `sweep`: its sweep point, if any; `limits`:
    the runner's environment.limits)."""
    request = {
        "request_version": REQUEST_VERSION, "run_id": "", "framework": framework, "era": era,
        "workload": workload, "profile": profile, "spec": spec, "data": data, "device": device,
        "threads": threads, "seed": seed, "repeat": repeat, "campaign": campaign, "runner": runner,
        "environment": {"env_id": env_id, "image_digest": image_digest}, "monitor": monitor,
    }
    if system is not None:
        request["environment"]["system"] = system
    if container is not None:
        request["environment"]["container"] = container
    if limits is not None:
        request["environment"]["limits"] = dict(limits)
    if sweep:
        request["sweep"] = dict(sweep)
    request["run_id"] = run_id(request)
    return validate(request, "new request")


def write(folder: Path, request: dict) -> Path:
    """Validate and atomically write request.json into folder; return its path."""
    path = Path(folder) / REQUEST_FILE
    validate(request, str(path))
    atomic.write_text(path, json.dumps(request, indent=1, sort_keys=True) + "\n")
    return path


def read(path: Path) -> dict:
    """Read and validate a request file; a RequestError (one line) when it is missing or malformed."""
    path = Path(path)
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"cannot read the run request {path} ({exc.strerror})",
                         "pass the request.json of a run folder (--request results/<campaign>/<run-id>/request.json)"
                         ) from None
    except ValueError as exc:
        raise RequestError(str(path), f"not valid JSON ({exc})") from None
    return validate(obj, str(path))
