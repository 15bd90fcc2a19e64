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
  workload spec with the profile applied.
- ``data``: ``dataset``, ``source`` (real or synthetic), ``arrays_sha256``, ``path`` (the prepared
  folder on the host; runners may mount it elsewhere), ``train_indices`` and ``test_indices``
  (sorted row numbers of the subset, or null for the whole split).
- ``device`` (cpu or gpu), ``threads`` (null = all the run may use), ``seed``, ``repeat``.
- ``campaign``, ``runner``; ``environment``: ``env_id`` (lock sha256 or image id) and
  ``image_digest`` (docker runs); ``monitor``: false only to time the monitor's own cost.

Standard library only, CPython 3.6-clean.
"""

import json
from pathlib import Path
from typing import Optional

from bench import atomic, hashing
from bench.errors import UsageError

REQUEST_VERSION = 1
REQUEST_FILE = "request.json"
DEVICES = ("cpu", "gpu")
ERAS = ("current", "paper")

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
DATA_FIELDS = {
    "dataset": (str,),
    "source": (str,),
    "arrays_sha256": (str,),
    "path": (str,),
    "train_indices": _OPT_LIST,
    "test_indices": _OPT_LIST,
}
ENVIRONMENT_FIELDS = {"env_id": (str,), "image_digest": _OPT_STR}


class RequestError(UsageError):
    """A request file that does not match this format; one line naming the field and the fix."""

    def __init__(self, where: str, problem: str) -> None:
        super().__init__(f"{where}: {problem}", "write it again from its campaign (make the same target again)")


def identity(request: dict) -> dict:
    """What a run is: its id is the hash of this (the same inputs always give the same id, and a
    reordered framework list or a resumed campaign finds the runs already made)."""
    return {
        "framework": request["framework"], "env": request["environment"]["env_id"], "workload": request["spec"],
        "dataset": request["data"]["arrays_sha256"], "device": request["device"], "seed": request["seed"],
        "repeat": request["repeat"],
    }


def run_id(request: dict) -> str:
    """The content-derived id of a request's run."""
    return hashing.content_hash(identity(request))


def _check(obj, fields, where):
    if not isinstance(obj, dict):
        raise RequestError(where, f"expected an object, got {type(obj).__name__}")
    unknown = sorted(set(obj) - set(fields))
    if unknown:
        raise RequestError(where, f"unknown fields {unknown}")
    for name, types in fields.items():
        if name not in obj:
            raise RequestError(where, f"missing field '{name}'")
        value = obj[name]
        if (isinstance(value, bool) and bool not in types) or not isinstance(value, types):
            expected = " or ".join(t.__name__ for t in types)
            raise RequestError(where, f"field '{name}' has type {type(value).__name__}, expected {expected}")


def validate(request: dict, where: str = REQUEST_FILE) -> dict:
    """Check a request object; return it unchanged or raise RequestError (a UsageError)."""
    _check(request, FIELDS, where)
    if request["request_version"] != REQUEST_VERSION:
        raise RequestError(where, f"request_version {request['request_version']!r} is not {REQUEST_VERSION}")
    _check(request["data"], DATA_FIELDS, f"{where}: data")
    _check(request["environment"], ENVIRONMENT_FIELDS, f"{where}: environment")
    if request["device"] not in DEVICES:
        raise RequestError(where, f"device {request['device']!r} is not one of {DEVICES}")
    if request["era"] not in ERAS:
        raise RequestError(where, f"era {request['era']!r} is not one of {ERAS}")
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


def make(*, framework: str, era: str, workload: str, profile: str, spec: dict, data: dict, device: str,
         threads: Optional[int], seed: int, repeat: int, campaign: str, runner: str, env_id: str,
         image_digest: Optional[str] = None, monitor: bool = True) -> dict:
    """A validated request with its run_id filled in."""
    request = {
        "request_version": REQUEST_VERSION, "run_id": "", "framework": framework, "era": era,
        "workload": workload, "profile": profile, "spec": spec, "data": data, "device": device,
        "threads": threads, "seed": seed, "repeat": repeat, "campaign": campaign, "runner": runner,
        "environment": {"env_id": env_id, "image_digest": image_digest}, "monitor": monitor,
    }
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
