"""The local digest lock: sha256s recorded on first download, for files no public source pins.

A manifest entry with ``sha256 = "first-download"`` (data/manifest.py FIRST_DOWNLOAD) has no
published digest, only a published size. Its first download is kept when the size matches, and its
sha256 is then recorded here; every later download, and every prepare, must match that digest.

The lock is ``<root>/raw/digests.local.json``, beside the datasets' raw folders (``<root>/raw/<dataset>/``),
so deleting a dataset's folder to fetch it again keeps the record. It is this machine's observation,
not the project's, so it is not in git (the default root's raw/ folder is git-ignored). Its shape:

    {"format_version": 1, "files": {"<dataset>/<file name>": {"sha256": hex, "size": bytes,
                                    "recorded_at": ISO 8601 UTC, "source_url": where it came from}}}

``python -m data forget <dataset>`` drops a dataset's entries (and its raw files), so the next
download is a first download again.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from bench import atomic
from bench.errors import UsageError

LOCK_NAME = "digests.local.json"
LOCK_VERSION = 1
# How a prepared dataset and every run.json say a raw file was verified.
VERIFIED_MANIFEST = "manifest sha256"
VERIFIED_FIRST_DOWNLOAD = "sha256 recorded on first download, size verified"
VERIFIED_SYNTHETIC = "synthetic, generated here"


def lock_path(raw_parent: Path) -> Path:
    """The lock in ``raw_parent``: the folder that holds the datasets' raw folders (<root>/raw)."""
    return Path(raw_parent) / LOCK_NAME


def lock_for(raw_dataset_dir: Path) -> Path:
    """The lock that covers one dataset's raw folder (<root>/raw/<dataset>/ -> <root>/raw/LOCK_NAME)."""
    return lock_path(Path(raw_dataset_dir).parent)


def key(dataset: str, name: str) -> str:
    """A file's key in the lock: <dataset>/<file name>."""
    return f"{dataset}/{name}"


def read(path: Path) -> dict[str, dict[str, Any]]:
    """The lock's entries {<dataset>/<file>: entry}; empty when there is no lock yet."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as err:
        raise UsageError(f"{path} cannot be read as JSON ({err})",
                         "fix it, or delete it to record the digests again on the next download") from None
    files = doc.get("files") if isinstance(doc, dict) else None
    if not isinstance(files, dict) or any(not isinstance(e, dict) or not isinstance(e.get("sha256"), str)
                                          for e in files.values()):
        raise UsageError(f"{path} is not a digest lock ({{'files': {{name: {{'sha256': ...}}}}}})",
                         "fix it, or delete it to record the digests again on the next download")
    return files


def recorded(path: Path, dataset: str, name: str) -> str | None:
    """The sha256 recorded for one file, or None when none was recorded."""
    entry = read(path).get(key(dataset, name))
    return entry["sha256"] if entry else None


def record(path: Path, dataset: str, name: str, sha256: str, size: int, source_url: str) -> None:
    """Record one file's digest (atomically; other entries are kept)."""
    files = read(path)
    files[key(dataset, name)] = {
        "sha256": sha256, "size": size, "source_url": source_url,
        "recorded_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }
    _write(path, files)


def forget(path: Path, dataset: str) -> list[str]:
    """Drop every entry of ``dataset`` from the lock; return the file names dropped."""
    files = read(path)
    prefix = key(dataset, "")
    dropped = sorted(k for k in files if k.startswith(prefix))
    if dropped:
        _write(path, {k: v for k, v in files.items() if k not in dropped})
    return [k[len(prefix):] for k in dropped]


def _write(path: Path, files: dict[str, dict[str, Any]]) -> None:
    doc = {"format_version": LOCK_VERSION,
           "note": "sha256 of files with no published digest, as first downloaded on this machine "
                   "(data/digests.py); not in git. Reset one dataset: python -m data forget <dataset>",
           "files": dict(sorted(files.items()))}
    atomic.write_text(path, json.dumps(doc, indent=1) + "\n")


def reset_fix(dataset: str, lock: Path) -> str:
    """How to accept a new copy of a dataset whose digest was recorded on first download."""
    return (f"if the source really changed the file, run 'python -m data forget {dataset}' (drops its entries "
            f"from {lock} and its raw files; or delete them by hand) and download again to record the new copy")


def mismatch_error(dataset: str, path: Path, recorded_sha: str, got: str, lock: Path) -> UsageError:
    """The one-line refusal of a local copy whose sha256 differs from the one recorded on first download."""
    return UsageError(
        f"{path} has sha256 {got}, but sha256 {recorded_sha} was recorded on its first download (in {lock})",
        reset_fix(dataset, lock),
    )
