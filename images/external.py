"""Files a lock needs that no package index carries, trusted on first use (torch 0.4.1).

torch 0.4.1 exists only in PyTorch's own wheel archive (whl/cpu, whl/cu90, whl/cu92: one
``torch-0.4.1-cp36-cp36m-linux_x86_64.whl`` each), and no sha256 of those files is published. A lock
names such a file in a comment line, relative to the archive:

    # external: torch==0.4.1 cpu/torch-0.4.1-cp36-cp36m-linux_x86_64.whl

The first build that needs it downloads it on the host, records its sha256 in ``versions.local.lock``
beside versions.lock (git-ignored: it is this machine's observation, not the project's), and keeps the
file in a cache folder named by that sha256. Every later build uses the cached file, or downloads it
again and refuses it when its sha256 differs from the recorded one. The build puts the file into the
build context's wheelhouse and a ``name==version --hash=sha256:...`` line into the staged lock, so
pip inside the image installs it with --require-hashes like every other pin; the image's labels
carry the sha256 too.

Environment variables: DLREPRO_TORCH_ARCHIVE (the archive's base URL; default PyTorch's own),
DLREPRO_LOCAL_LOCK (the local lock file; default <repo>/versions.local.lock),
DLREPRO_EXTERNAL_CACHE (where fetched files are kept; default ~/.cache/dlrepro/external).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import time
import tomllib
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from bench import atomic
from bench.errors import UsageError
from images import envs

ARCHIVE_VAR = "DLREPRO_TORCH_ARCHIVE"
DEFAULT_ARCHIVE = "https://download.pytorch.org/whl"
LOCAL_LOCK_VAR = "DLREPRO_LOCAL_LOCK"
CACHE_VAR = "DLREPRO_EXTERNAL_CACHE"
_LINE = re.compile(r"(?m)^# external: ([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+) ([A-Za-z0-9._+/-]+\.whl)\b")
_CHUNK = 1 << 20


@dataclass(frozen=True)
class ExternalPin:
    """One file a lock names outside the index: name==version, at `path` below the archive."""

    name: str
    version: str
    path: str

    @property
    def filename(self) -> str:
        """The wheel's file name (the same for the cpu, cu90 and cu92 builds of torch 0.4.1)."""
        return self.path.rsplit("/", 1)[-1]

    def url(self, archive: str | None = None) -> str:
        """Where the file is fetched from: the archive ($DLREPRO_TORCH_ARCHIVE) plus its path."""
        return f"{(archive or archive_url()).rstrip('/')}/{self.path}"

    def line(self) -> str:
        """The lock's comment line naming it."""
        return f"# external: {self.name}=={self.version} {self.path}"


@dataclass(frozen=True)
class FetchedFile:
    """An external pin's file on this machine and the sha256 it was trusted with."""

    pin: ExternalPin
    path: Path
    sha256: str


def archive_url() -> str:
    """PyTorch's wheel archive, or the mirror $DLREPRO_TORCH_ARCHIVE names."""
    return os.environ.get(ARCHIVE_VAR, "").strip() or DEFAULT_ARCHIVE


def local_lock_path() -> Path:
    """versions.local.lock beside versions.lock (or $DLREPRO_LOCAL_LOCK)."""
    return Path(os.environ.get(LOCAL_LOCK_VAR) or envs.REPO_ROOT / "versions.local.lock")


def cache_dir() -> Path:
    """Where fetched files are kept, one folder per sha256."""
    default = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "dlrepro" / "external"
    return Path(os.environ.get(CACHE_VAR) or default)


def pins_of(lock_text: str) -> list[ExternalPin]:
    """The external pins a lock names in its `# external:` lines."""
    return [ExternalPin(m.group(1), m.group(2), m.group(3)) for m in _LINE.finditer(lock_text)]


def recorded() -> dict[str, dict]:
    """archive path -> {"sha256", "url", "first_fetched"} from the local lock (empty when there is none)."""
    path = local_lock_path()
    if not path.is_file():
        return {}
    try:
        return tomllib.loads(path.read_text()).get("external", {})
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path} is not valid TOML ({exc})", "fix it, or delete it to trust the files anew") from None


def record(key: str, sha256: str, url: str) -> None:
    """Record `key`'s sha256 (and where it came from) in the local lock, keeping every other entry."""
    entries = recorded()
    entries[key] = {"sha256": sha256, "url": url,
                    "first_fetched": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    lines = ["# versions.local.lock: sha256 of files no index publishes a digest for, as this machine first",
             "# fetched them (trust on first use; images/external.py). Not in git. Delete an entry to trust",
             "# a new file for it.", ""]
    for key in sorted(entries):
        lines.append(f"[external.{json.dumps(key)}]")
        lines += [f"{k} = {json.dumps(v)}" for k, v in sorted(entries[key].items())]
        lines.append("")
    atomic.write_text(local_lock_path(), "\n".join(lines))


def file_sha256(path: Path) -> str:
    """The sha256 of a file, read in chunks (wheels are hundreds of MB)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def stream(url: str, dest_dir: Path) -> tuple[Path, str]:
    """Stream url into a temporary file in dest_dir; (its path, its sha256). Raises URLError or OSError,
    leaving nothing behind."""
    dest_dir.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    fd, tmp = tempfile.mkstemp(prefix=".fetch-", suffix=".partial", dir=dest_dir)
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=60) as resp:
            for chunk in iter(lambda: resp.read(_CHUNK), b""):
                digest.update(chunk)
                out.write(chunk)
    except BaseException:
        os.unlink(tmp)
        raise
    return Path(tmp), digest.hexdigest()


class ArchiveUnreachable(UsageError):
    """The file cannot be had from the archive (no route, refused, not found): unlike a file that differs from
    the recorded one, a reason to skip the image that needs it where others are built beside it."""


def _download(url: str, dest_dir: Path) -> tuple[Path, str]:
    """stream(), an unreachable archive reported in one line."""
    try:
        return stream(url, dest_dir)
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise ArchiveUnreachable(f"cannot fetch {url} ({reason})",
                                 f"check the network or proxy, or set {ARCHIVE_VAR} to a mirror of PyTorch's "
                                 "wheel archive") from None


def fetch(pin: ExternalPin) -> FetchedFile:
    """The pin's file, from the cache or the archive; recorded on first use, refused when it changed."""
    known = recorded().get(pin.path, {}).get("sha256")
    if known:
        cached = cache_dir() / known / pin.filename
        if cached.is_file() and file_sha256(cached) == known:
            return FetchedFile(pin, cached, known)
    url = pin.url()
    tmp, sha = _download(url, cache_dir())
    if known and sha != known:
        tmp.unlink()
        raise UsageError(
            f"{url} has sha256 {sha}, but {local_lock_path().name} recorded {known} when {pin.path} was first "
            "fetched",
            f"if the archive really changed the file, delete the [external.\"{pin.path}\"] entry from "
            f"{local_lock_path()} to trust the new one",
        )
    final = cache_dir() / sha / pin.filename
    final.parent.mkdir(parents=True, exist_ok=True)
    os.replace(tmp, final)
    if not known:
        record(pin.path, sha, url)
        print(f"trusting {pin.path} on first use: sha256 {sha} (recorded in {local_lock_path().name})",
              file=sys.stderr, flush=True)
    return FetchedFile(pin, final, sha)


def fetch_all(lock_text: str) -> list[FetchedFile]:
    """Every external pin of a lock, fetched (or taken from the cache)."""
    return [fetch(pin) for pin in pins_of(lock_text)]


def stage(files: list[FetchedFile], lock_dir: Path, wheel_dir: Path) -> None:
    """Put the files into a build context: each into wheel_dir, a hash line into lock_dir/requirements.txt."""
    lock = lock_dir / envs.LOCK_NAME
    lines = [f"{f.pin.name}=={f.pin.version} \\\n    --hash=sha256:{f.sha256}\n" for f in files]
    if lines:
        lock.write_text(lock.read_text().rstrip("\n") + "\n" + "".join(lines))
    for f in files:
        target = wheel_dir / f.pin.filename
        if target.exists():
            target.unlink()  # a wheelhouse copy of the same name may be another build (cpu vs cu92)
        link_or_copy(f.path, target)


def link_or_copy(src: Path, dst: Path) -> None:
    """Put src at dst: a hard link where one will do (no copy of a large wheel), else a copy."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)
