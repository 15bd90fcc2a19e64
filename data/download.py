"""Download a dataset's files: mirrors in order, resume, sha256 verification. Stdlib only.

For each file of a dataset the sources are tried in order:

1. the user mirror, when given (``--mirror BASE`` or the environment variable DLREPRO_MIRROR):
   ``<BASE>/<dataset>/<file name>``. BASE may be http(s)://, file:// or a local folder, so an
   air-gapped site can host its own copies (e.g. ``/srv/datasets/mnist/train-images-idx3-ubyte.gz``).
2. the manifest's URLs for the file (its dataset's mirrors).

Bytes stream into ``<file>.part``. An interrupted transfer keeps the .part and resumes it with
an HTTP Range request (a server that answers 200 instead of 206 sends the whole file, so the
.part is restarted). A file gets its final name only after it verified; a mismatch deletes the
.part and moves on to the next source. HTTPS uses Python's default SSL context, so the usual
SSL_CERT_FILE / SSL_CERT_DIR and https_proxy variables apply.

A file verifies when its sha256 equals the manifest's. A file the manifest marks "first-download"
(no published digest) verifies against the sha256 recorded on its first download in
<root>/raw/digests.local.json (data/digests.py); with nothing recorded yet, it verifies when its size
equals the manifest's, and its sha256 is then recorded there.
"""

from __future__ import annotations

import errno
import http.client
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.errors import UsageError
from data import digests
from data.fsutil import sha256_file
from data.manifest import FileSpec, Manifest, as_manifest
from data.paths import raw_dir

MIRROR_ENV = "DLREPRO_MIRROR"
PART_SUFFIX = ".part"
USER_AGENT = "dlrepro-data/1 (+python-urllib)"
READ_CHUNK = 1 << 16
# Errors that mean "this source did not work": try again (resume) or move to the next one.
_NETWORK_ERRORS = (urllib.error.URLError, http.client.HTTPException, OSError)


class _Interrupted(Exception):
    """The transfer stopped before the whole file arrived; the .part is kept for a resume."""


@dataclass(frozen=True)
class _Expected:
    """What a copy of one file must be: the manifest's sha256, the one recorded on its first download
    (``lock`` names where), or, with neither (``sha256`` None), the manifest's size."""

    sha256: str | None
    size: int | None
    lock: Path | None = None

    @property
    def first(self) -> bool:
        """Whether this is a first download: kept by its size, then its sha256 recorded in ``lock``."""
        return self.lock is not None and self.sha256 is None

    def check(self, got: str, size: int) -> str | None:
        """None when a copy with this sha256 and size verifies, else why not (one line)."""
        if self.sha256 is None:
            if size == self.size:
                return None
            return f"size mismatch: expected {self.size} bytes, got {size} (sha256 {got}; not recorded)"
        if got == self.sha256:
            return None
        if self.lock is not None:
            return (f"sha256 differs from the one recorded on first download: recorded {self.sha256}, "
                    f"got {got} ({size} bytes)")
        return f"sha256 mismatch: expected {self.sha256}, got {got} ({size} bytes)"

    def verified(self) -> str:
        """The progress line's word for a copy that verified."""
        if self.sha256 is None:
            return f"size verified ({self.size} bytes)"
        return "sha256 verified" + (" (recorded on first download)" if self.lock is not None else "")


def _expected(dataset: str, spec: FileSpec, lock: Path) -> _Expected:
    if spec.pinned:
        return _Expected(spec.sha256, spec.size)
    return _Expected(digests.recorded(lock, dataset, spec.name), spec.size, lock)


def user_mirror(mirror: str | None = None) -> str | None:
    """The user mirror base URL: ``mirror`` if given, else $DLREPRO_MIRROR, else None.

    A bare local path is turned into a file:// URL.
    """
    base = (mirror or os.environ.get(MIRROR_ENV, "")).strip().rstrip("/")
    if not base:
        return None
    if "://" not in base:
        base = Path(base).expanduser().resolve().as_uri()
    return base


def candidate_urls(dataset: str, spec: FileSpec, mirror: str | None = None) -> list[str]:
    """Every URL to try for one file, in order: user mirror first, then the manifest's."""
    urls = []
    base = user_mirror(mirror)
    if base:
        urls.append(f"{base}/{dataset}/{urllib.parse.quote(spec.name)}")
    urls += [u for u in spec.urls if u not in urls]
    return urls


def download(
    dataset: str,
    root: Path,
    *,
    mirror: str | None = None,
    manifest: Manifest | Mapping[str, Any] | None = None,
    retries: int = 2,
    timeout: float = 60.0,
    progress: bool = True,
) -> Path:
    """Fetch and verify every file of ``dataset`` into <root>/raw/<dataset>/; return that folder.

    ``manifest`` replaces data/manifest.toml (a Manifest or a dict of the TOML shape).
    ``retries`` is how many times an interrupted transfer is resumed from the same URL before
    the next source is tried. Raises UsageError (one line: what failed and the fix).
    """
    spec = as_manifest(manifest).get(dataset)
    dest = raw_dir(root, dataset)
    for file in spec.files:
        fetch_file(dataset, file, dest, mirror=mirror, retries=retries, timeout=timeout, progress=progress)
    return dest


def fetch_file(
    dataset: str,
    spec: FileSpec,
    dest_dir: Path,
    *,
    mirror: str | None = None,
    retries: int = 2,
    timeout: float = 60.0,
    progress: bool = True,
) -> Path:
    """Make ``dest_dir/<spec.name>`` exist and verified; return its path.

    It verifies by the manifest's sha256, or for a "first-download" file by the sha256 recorded in
    the lock beside ``dest_dir`` (<root>/raw/digests.local.json); with none recorded yet, by the
    manifest's size, and its sha256 is then recorded (also for a file already there).
    """
    dest_dir = Path(dest_dir)
    _mkdir(dest_dir)
    final = dest_dir / spec.name
    label = f"{dataset}/{spec.name}"
    say = _Say(progress)
    lock = digests.lock_for(dest_dir)
    expected = _expected(dataset, spec, lock)
    if final.exists():
        got = sha256_file(final)
        failure = expected.check(got, final.stat().st_size)
        if failure is None:
            say(f"{label}: already downloaded, {expected.verified()}")
            if expected.first:
                _record_first(dataset, final, lock, got, final.resolve().as_uri())
            return final
        # Only verified files are renamed to the final name, so this one came from elsewhere.
        say(f"{label}: existing file does not verify ({failure}); downloading it again")
        final.unlink()
    part = final.with_name(final.name + PART_SUFFIX)
    failures: list[str] = []
    for url in candidate_urls(dataset, spec, mirror):
        failure, got = _from_url(url, spec, expected, part, label, retries, timeout, say)
        if failure is None:
            os.replace(part, final)
            if expected.first:
                _record_first(dataset, final, lock, got, url)
            return final
        say(f"{label}: {url} failed: {failure}")
        failures.append(f"{url} ({failure})")
    raise _all_failed(dataset, spec, expected, failures, part.exists())


def _record_first(dataset: str, final: Path, lock: Path, sha256: str, source_url: str) -> None:
    """Record a first download's digest in the lock, and say so on stderr (even with --quiet: from now
    on every copy is held to this digest)."""
    size = final.stat().st_size
    try:
        digests.record(lock, dataset, final.name, sha256, size, source_url)
    except OSError as err:
        raise _write_error(lock, err) from err
    print(f"{dataset}/{final.name}: sha256 recorded on first download: {sha256} (size verified, {size} bytes; "
          f"in {lock})", file=sys.stderr, flush=True)


def _from_url(
    url: str, spec: FileSpec, expected: _Expected, part: Path, label: str, retries: int, timeout: float,
    say: _Say,
) -> tuple[str | None, str]:
    """Get one file from one URL into ``part`` and verify it: (None, its sha256) on success, else
    (the reason, "")."""
    resumes = 0
    restarted = False
    while True:
        kept = part.stat().st_size if part.exists() else 0
        try:
            _transfer(url, spec, part, label, timeout, say)
        except _Interrupted as err:
            if resumes < retries:
                resumes += 1
                say(f"{label}: {err}; resuming ({resumes}/{retries})")
                continue
            return f"interrupted: {err}", ""
        except _NETWORK_ERRORS as err:
            return _reason(err), ""
        got = sha256_file(part)
        size = part.stat().st_size
        failure = expected.check(got, size)
        if failure is None:
            say(f"{label}: {expected.verified()}")
            return None, got
        part.unlink()
        if kept and not restarted:
            # The bytes kept from an earlier attempt (maybe another source) may be the bad ones:
            # fetch this URL once more from the start before blaming it.
            restarted = True
            say(f"{label}: resumed file does not verify; downloading it again from the start")
            continue
        return failure, ""


def _transfer(url: str, spec: FileSpec, part: Path, label: str, timeout: float, say: _Say) -> None:
    """Append the missing bytes of ``url`` to ``part`` (all of them when there is no .part)."""
    offset = part.stat().st_size if part.exists() else 0
    if spec.size is not None and offset >= spec.size:
        if offset == spec.size:
            return  # already whole: only verification remains
        part.unlink()
        offset = 0
    headers = {"User-Agent": USER_AGENT}
    if offset:
        headers["Range"] = f"bytes={offset}-"
    try:
        response = urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=timeout)
    except urllib.error.HTTPError as err:
        if err.code == 416 and offset:
            return  # "range not satisfiable": the .part already holds the whole file; verify it
        raise
    with response:
        status = getattr(response, "status", None)  # None for file:// URLs
        if offset and status != 206:
            say(f"{label}: source ignored the resume request; starting over")
            offset = 0
        elif status == 206 and _range_start(content_range := response.headers.get("Content-Range")) != offset:
            raise http.client.HTTPException(f"unexpected Content-Range {content_range}")
        length = response.headers.get("Content-Length")
        body = int(length) if length and length.isdigit() else None
        total = offset + body if body is not None else spec.size
        if offset:
            say(f"{label}: resuming at {offset / 1e6:.1f} MB from {url}")
        else:
            say(f"{label}: downloading {url}")
        received = _stream(response, part, offset, _Meter(label, total, say.enabled))
    if body is not None and received < body:
        raise _Interrupted(f"connection closed after {offset + received} of {total} bytes")
    if body is None and spec.size is not None and offset + received < spec.size:
        raise _Interrupted(f"connection closed after {offset + received} of {spec.size} bytes")


def _stream(response: Any, part: Path, offset: int, meter: _Meter) -> int:
    """Copy the response body to ``part`` (appending after ``offset`` bytes); return bytes copied."""
    received = 0
    try:
        with open(part, "ab" if offset else "wb") as out:
            while True:
                try:
                    chunk = response.read(READ_CHUNK)
                except (http.client.HTTPException, OSError) as err:
                    raise _Interrupted(_reason(err)) from err
                if not chunk:
                    break
                out.write(chunk)
                received += len(chunk)
                meter.update(offset + received)
            out.flush()
            os.fsync(out.fileno())
    except OSError as err:  # only local writes get here: reads were turned into _Interrupted
        raise _write_error(part, err) from err
    finally:
        meter.close(offset + received)
    return received


def _range_start(content_range: str | None) -> int | None:
    # "bytes 100-999/1000" -> 100
    try:
        unit, rest = (content_range or "").split(" ", 1)
        return int(rest.split("-", 1)[0]) if unit == "bytes" else None
    except ValueError:
        return None


def _reason(err: BaseException) -> str:
    if isinstance(err, urllib.error.HTTPError):
        text = f"HTTP {err.code} {err.reason}"
    elif isinstance(err, urllib.error.URLError):
        text = str(err.reason)
    elif isinstance(err, TimeoutError):
        text = "timed out"
    else:
        text = str(err) or type(err).__name__
    return " ".join(text.split())  # the final error must stay on one line


def _mkdir(folder: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise _write_error(folder, err) from err


def _write_error(path: Path, err: OSError) -> UsageError:
    if err.errno == errno.ENOSPC:
        return UsageError(
            f"disk full while writing {path}",
            "free space or choose another --root, then rerun (a partial download resumes)",
        )
    problem = f"cannot write {path} ({err.strerror or err})"
    return UsageError(problem, "check its permissions or use another --root")


def _all_failed(
    dataset: str, spec: FileSpec, expected: _Expected, failures: list[str], partial: bool
) -> UsageError:
    label = f"{dataset}/{spec.name}"
    tried = "; ".join(failures) if failures else "no URLs in the manifest"
    fixes = []
    if any("sha256 mismatch" in f for f in failures):
        fixes.append(
            f"a source serves a different file than the manifest's sha256 {spec.sha256}: "
            "fix or drop that copy (--mirror / DLREPRO_MIRROR)"
        )
    if expected.lock is not None and any("recorded on first download" in f for f in failures):
        fixes.append(digests.reset_fix(dataset, expected.lock))
    if any("size mismatch" in f for f in failures):
        fixes.append(
            f"a source serves a file of another size than the manifest's {spec.size} bytes, so not the "
            "published copy: fix or drop that copy (--mirror / DLREPRO_MIRROR), or give your copy's sha256 "
            "and size in a --manifest copy of data/manifest.toml"
        )
    if partial:
        fixes.append("rerun to resume the partial download")
    fixes.append(
        f"check the network (proxy: https_proxy; CA bundle: SSL_CERT_FILE), or host the files yourself "
        f"and pass --mirror BASE (or set {MIRROR_ENV}=BASE) serving BASE/{dataset}/{spec.name}"
    )
    return UsageError(f"could not download {label}; tried: {tried}", "; or ".join(fixes))


class _Say:
    """Status lines on stderr (silent when progress is off)."""

    def __init__(self, enabled: bool):
        self.enabled = enabled

    def __call__(self, message: str) -> None:
        if self.enabled:
            print(message, file=sys.stderr, flush=True)


class _Meter:
    """Percent / MB progress on stderr, at most once a second (in place on a terminal)."""

    INTERVAL_S = 1.0

    def __init__(self, label: str, total: int | None, enabled: bool):
        self.label = label
        self.total = total
        self.enabled = enabled
        self.last = time.monotonic()
        self.shown = False

    def _line(self, done: int) -> str:
        if self.total:
            percent = 100 * done / self.total
            return f"  {self.label}: {done / 1e6:.1f} of {self.total / 1e6:.1f} MB ({percent:.0f}%)"
        return f"  {self.label}: {done / 1e6:.1f} MB"

    def update(self, done: int) -> None:
        now = time.monotonic()
        if not self.enabled or now - self.last < self.INTERVAL_S:
            return
        self.last = now
        self.shown = True
        tty = sys.stderr.isatty()
        sys.stderr.write(("\r" if tty else "") + self._line(done) + ("" if tty else "\n"))
        sys.stderr.flush()

    def close(self, done: int) -> None:
        if self.enabled and self.shown and sys.stderr.isatty():
            sys.stderr.write("\r" + self._line(done) + "\n")
            sys.stderr.flush()
