"""The dataset manifest: which files make up each dataset, their sha256, and where to get them.

A file no public source pins a digest for has ``sha256 = "first-download"`` (FIRST_DOWNLOAD) and
must give its published ``size``: its first download is kept only at that size, and its sha256 is
then recorded in a local lock beside the data (data/digests.py) that every later download and
prepare must match.

The shipped manifest is data/manifest.toml. Code that needs another one (tests, a site with its
own copies) passes a :class:`Manifest` or a plain dict of the same shape as the TOML document
(``{"datasets": {name: {...}}}``, or just ``{name: {...}}``) wherever a ``manifest`` is accepted.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.errors import UsageError
from bench.names import RULE, is_plain

MANIFEST_FILE = Path(__file__).with_name("manifest.toml")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
# The sha256 of a file no public source pins: trusted on first download when its size matches the
# manifest's, then held to the digest recorded then (data/digests.py).
FIRST_DOWNLOAD = "first-download"


@dataclass(frozen=True)
class FileSpec:
    """One published file of a dataset."""

    name: str
    sha256: str
    size: int | None
    urls: tuple[str, ...]

    @property
    def pinned(self) -> bool:
        """Whether the manifest itself gives the digest (False for sha256 = "first-download")."""
        return self.sha256 != FIRST_DOWNLOAD

    @property
    def first_download(self) -> bool:
        """Whether the digest is recorded on first download (the manifest gives only the size)."""
        return self.sha256 == FIRST_DOWNLOAD


@dataclass(frozen=True)
class DatasetSpec:
    """One dataset: its files and the prepare function that turns them into arrays."""

    name: str
    files: tuple[FileSpec, ...]
    prepare: str
    description: str = ""
    homepage: str = ""

    def file(self, name: str) -> FileSpec:
        """The file called ``name`` (a KeyError names the dataset when it is not part of it)."""
        for spec in self.files:
            if spec.name == name:
                return spec
        raise KeyError(f"{self.name} has no file {name!r}")


@dataclass(frozen=True)
class Manifest:
    """All datasets of a manifest, by name."""

    datasets: Mapping[str, DatasetSpec]

    def names(self) -> list[str]:
        """Dataset names, sorted."""
        return sorted(self.datasets)

    def get(self, name: str) -> DatasetSpec:
        """The dataset called ``name``, or the one-line error the CLI prints for an unknown one."""
        if name not in self.datasets:
            raise UsageError(f"unknown dataset '{name}'", f"choose from: {', '.join(self.names())}")
        return self.datasets[name]

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any], origin: str = "manifest") -> Manifest:
        """Build and validate a manifest from the TOML document's shape (or its datasets table)."""
        tables = doc.get("datasets", doc)
        if not isinstance(tables, Mapping) or not tables:
            raise UsageError(f"{origin} lists no datasets", "add a [datasets.<name>] table")
        return cls({name: _dataset(name, table, origin) for name, table in tables.items()})


def _dataset(name: str, table: Any, origin: str) -> DatasetSpec:
    where = f"{origin}: dataset '{name}'"
    if not is_plain(name):  # it becomes raw/<name>/ and prepared/<name>/
        raise UsageError(f"{where} is not a plain name ({RULE})", "rename its table")
    if not isinstance(table, Mapping):
        raise UsageError(f"{where} is not a table", "write it as [datasets.<name>]")
    mirrors = [str(m) for m in table.get("mirrors", [])]
    files = table.get("files") or []
    if not files:
        raise UsageError(f"{where} lists no files", "add [[datasets.<name>.files]] entries")
    return DatasetSpec(
        name=name,
        files=tuple(_file(f, mirrors, where) for f in files),
        prepare=str(table.get("prepare", name)),
        description=str(table.get("description", "")),
        homepage=str(table.get("homepage", "")),
    )


def _file(entry: Mapping[str, Any], mirrors: list[str], where: str) -> FileSpec:
    name = str(entry.get("name", ""))
    # The name becomes a path under raw/<dataset>/: refuse anything that could escape it.
    if not is_plain(name):
        raise UsageError(f"{where} has a file with a bad name {name!r}", "use the published file name")
    sha = str(entry.get("sha256", "")).lower()
    if not _SHA256.match(sha) and sha != FIRST_DOWNLOAD:
        raise UsageError(f"{where}: file {name} has no valid sha256",
                         f"give 64 hex digits (or '{FIRST_DOWNLOAD}' with its size, where no digest is published)")
    size = entry.get("size")
    if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size < 0):
        raise UsageError(f"{where}: file {name} has a bad size {size!r}", "give bytes as an integer, or omit")
    if sha == FIRST_DOWNLOAD and size is None:
        # The size is all that checks a first download: without it any bytes would be recorded.
        raise UsageError(f"{where}: file {name} has sha256 '{FIRST_DOWNLOAD}' but no size",
                         "add size = <bytes> of the published file (a first download is kept only at that size)")
    urls = tuple(str(u) for u in entry.get("urls", ())) or tuple(m + name for m in mirrors)
    return FileSpec(name=name, sha256=sha, size=size, urls=urls)


def load_manifest(path: Path | None = None) -> Manifest:
    """Read and validate a manifest TOML file (default: data/manifest.toml)."""
    path = Path(path) if path is not None else MANIFEST_FILE
    try:
        with open(path, "rb") as fh:
            doc = tomllib.load(fh)
    except FileNotFoundError:
        raise UsageError(f"manifest {path} not found", "pass an existing file to --manifest") from None
    except tomllib.TOMLDecodeError as err:
        raise UsageError(f"manifest {path} is not valid TOML ({err})", "fix the file") from None
    return Manifest.from_dict(doc, origin=str(path))


def as_manifest(manifest: Manifest | Mapping[str, Any] | None) -> Manifest:
    """Accept a Manifest, a dict of the TOML shape, or None (the shipped manifest)."""
    if manifest is None:
        return load_manifest()
    if isinstance(manifest, Manifest):
        return manifest
    return Manifest.from_dict(manifest)
