"""Check the paper-era locks against the package index's own metadata, not through the resolver.

images.lockfile resolves the paper-era locks with pip for CPython 3.6; a pip that ignores the target
Python (pip 23.2 did, for Requires-Python: pypa/pip#12216) writes pins that cannot install. This check
takes another path: for every pin of every paper-era lock it reads the index's PEP 691 JSON listing
of the project (``Accept: application/vnd.pypi.simple.v1+json`` on ``<index>/simple/<name>/``), finds
the file whose sha256 the lock holds, and fails when

- no file of that project has the sha256, or the file is another version than the pin,
- the file's ``requires-python`` excludes the image's Python (3.6.15),
- a wheel's tags cannot install on CPython 3.6 (cp36m, abi3 or none) on manylinux1 or manylinux2010
  x86_64 (an sdist is reported as one: the caller decides which sdists are expected).

The index is the one pip is configured with ($PIP_INDEX_URL, else ``pip config``'s index-url, else
pip's own default). Wheel names and specifiers are parsed with pip's vendored copy of ``packaging``
(a parser, not pip's resolver: the host environment has ``packaging`` only as a dependency of other
tools).

    python -m images.indexcheck [LOCK ...]     (default: every paper-era lock)
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from pip._vendor.packaging.specifiers import InvalidSpecifier, SpecifierSet
from pip._vendor.packaging.tags import Tag, compatible_tags, cpython_tags
from pip._vendor.packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)

from bench.errors import UsageError, run_cli

PEP691 = "application/vnd.pypi.simple.v1+json"
# The paper-era images' Python (python:3.6.15-slim-buster) and the platforms their locks target.
PYTHON = "3.6.15"
PLATFORMS = ("manylinux1_x86_64", "manylinux_2_5_x86_64", "manylinux2010_x86_64", "manylinux_2_12_x86_64")
ABIS = ("cp36m", "abi3", "none")
_PIN = re.compile(r"(?m)^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s\\;]+)((?:\s*\\\s*\n\s*--hash=sha256:[0-9a-f]{64})*)")


def supported_tags() -> frozenset[Tag]:
    """Every wheel tag CPython 3.6 on manylinux1/manylinux2010 x86_64 installs."""
    found = set(cpython_tags((3, 6), abis=list(ABIS), platforms=list(PLATFORMS)))
    found |= set(compatible_tags((3, 6), "cp36", list(PLATFORMS)))
    return frozenset(found)


def index_url() -> str:
    """The simple-index URL pip uses here: $PIP_INDEX_URL, `pip config`'s index-url, or pip's default."""
    if os.environ.get("PIP_INDEX_URL", "").strip():
        return os.environ["PIP_INDEX_URL"].split()[0].rstrip("/")
    proc = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True)
    for line in proc.stdout.splitlines():
        key, _, value = line.partition("=")
        if key.endswith(".index-url") and value.strip("'\""):
            return value.strip("'\"").rstrip("/")
    from pip._internal.models.index import PyPI  # pip's own default index

    return PyPI.simple_url.rstrip("/")


@dataclass
class Index:
    """The index's PEP 691 listings, one request per project."""

    url: str
    timeout: float = 60.0

    def __post_init__(self) -> None:
        self._cache: dict[str, list[dict]] = {}

    def files(self, name: str) -> list[dict]:
        """The project's files as the index lists them (filename, hashes, requires-python, yanked)."""
        key = canonicalize_name(name)
        if key not in self._cache:
            req = urllib.request.Request(f"{self.url}/{key}/", headers={"Accept": PEP691})
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                    kind = resp.headers.get("Content-Type", "")
                    body = resp.read()
            except (urllib.error.URLError, OSError) as exc:
                raise UsageError(f"cannot read {self.url}/{key}/ ({getattr(exc, 'reason', exc)})",
                                 "check the network, or point PIP_INDEX_URL at an index that answers") from None
            if PEP691 not in kind:
                raise UsageError(f"{self.url}/{key}/ answered {kind or 'no content type'}, not PEP 691 JSON",
                                 "use an index that serves application/vnd.pypi.simple.v1+json")
            self._cache[key] = json.loads(body)["files"]
        return self._cache[key]


@dataclass(frozen=True)
class Finding:
    """One locked file as the index describes it."""

    name: str
    version: str
    sha256: str
    filename: str | None
    problem: str | None
    sdist: bool = False


def _version_of(filename: str) -> tuple[str, bool]:
    """(version, is_sdist) of a distribution file name; ValueError for anything else."""
    if filename.endswith(".whl"):
        return str(parse_wheel_filename(filename)[1]), False
    try:
        return str(parse_sdist_filename(filename)[1]), True
    except InvalidSdistFilename:
        raise ValueError(f"not a wheel or sdist: {filename}") from None


def check_file(name: str, version: str, sha256: str, files: list[dict], tags: frozenset[Tag]) -> Finding:
    """What is wrong with the locked file `sha256` of name==version on CPython 3.6 (problem None: nothing)."""
    match = next((f for f in files if f.get("hashes", {}).get("sha256") == sha256), None)
    if match is None:
        return Finding(name, version, sha256, None, f"no file of {name} on the index has sha256 {sha256}")
    filename = match["filename"]
    try:
        found_version, sdist = _version_of(filename)
    except (ValueError, InvalidWheelFilename) as exc:
        return Finding(name, version, sha256, filename, str(exc))
    if canonicalize_name(found_version) != canonicalize_name(version):
        return Finding(name, version, sha256, filename, f"{filename} is version {found_version}, not {version}")
    requires = match.get("requires-python") or ""
    try:
        if requires and PYTHON not in SpecifierSet(requires):
            return Finding(name, version, sha256, filename, f"{filename} requires Python {requires}", sdist)
    except InvalidSpecifier:
        return Finding(name, version, sha256, filename, f"{filename} has an unreadable requires-python {requires!r}")
    if not sdist and not (parse_wheel_filename(filename)[3] & tags):
        return Finding(name, version, sha256, filename,
                       f"{filename} does not install on CPython 3.6 / manylinux1 or manylinux2010 x86_64", sdist)
    return Finding(name, version, sha256, filename, None, sdist)


def lock_pins(text: str) -> list[tuple[str, str, list[str]]]:
    """(name, version, [sha256, ...]) of every `name==version --hash=...` pin of a lock."""
    return [(m.group(1), m.group(2), re.findall(r"sha256:([0-9a-f]{64})", m.group(3))) for m in _PIN.finditer(text)]


def check_lock(path: Path, index: Index, tags: frozenset[Tag] | None = None) -> list[Finding]:
    """One Finding per locked file of the lock at `path` (a pin without a hash is a problem too)."""
    tags = tags or supported_tags()
    out = []
    for name, version, hashes in lock_pins(Path(path).read_text()):
        if not hashes:
            out.append(Finding(name, version, "", None, f"{name}=={version} has no --hash"))
        for sha in hashes:
            out.append(check_file(name, version, sha, index.files(name), tags))
    return out


def paper_locks(images_dir: Path) -> list[Path]:
    """Every paper-era lock: requirements.txt, requirements-gpu.txt and build-requirements.txt."""
    return sorted(p for p in images_dir.glob("*/paper/*requirements*.txt"))


def main(argv: list[str]) -> int:
    """Check the locks named (default: every paper-era lock); print one line per problem."""
    from images import envs, external

    locks = [Path(a).resolve() for a in argv] or paper_locks(envs.IMAGES_DIR)
    index = Index(index_url())
    print(f"index: {index.url}")
    problems = 0
    for lock in locks:
        findings = check_lock(lock, index)
        bad = [f for f in findings if f.problem]
        sdists = sorted(f"{f.name}=={f.version}" for f in findings if f.sdist and not f.problem)
        outside = [f"{p.name}=={p.version} ({p.path})" for p in external.pins_of(lock.read_text())]
        problems += len(bad)
        note = f"; sdists: {', '.join(sdists)}" if sdists else ""
        note += f"; not on the index (trusted on first use): {', '.join(outside)}" if outside else ""
        shown = lock.relative_to(envs.REPO_ROOT) if lock.is_relative_to(envs.REPO_ROOT) else lock
        print(f"{shown}: {len(findings) - len(bad)} of {len(findings)} files install on CPython {PYTHON}{note}")
        for f in bad:
            print(f"  {f.name}=={f.version}: {f.problem}")
    if problems:
        raise UsageError(f"{problems} locked files cannot install on CPython {PYTHON}",
                         "re-resolve the locks with 'make lock' (pip >= 25 honours the target Python)")
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main, sys.argv[1:]))
