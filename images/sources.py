"""Where a lock's files come from: the package index, or an index the lock declares for some files.

Every lock takes its files from the package index pip is set up with (its default, or PIP_INDEX_URL)
unless ``sources.toml`` beside it names files that index lacks and the index that carries them. The
current PyTorch CPU lock pins ``torch==2.13.0+cpu``, a file only PyTorch's CPU wheel index publishes:

    [[file]]
    lock = "requirements.txt"
    file = "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl"
    index = "https://download.pytorch.org/whl/cpu"
    about = "PyTorch's CPU wheel index"
    override = "DLREPRO_TORCH_CPU_INDEX"

Before a lock is installed (``images.envs`` for the local runner, ``images.build`` for an image) each
declared file is looked for, in order, in the local wheel folders (DLREPRO_WHEELHOUSE, else
PIP_FIND_LINKS and --find-links in DLREPRO_PIP_ARGS; then the find-links of pip's own configuration),
in the cache (images/external.py's, one folder per sha256), and on the declared index (the PEP 503
page ``<index>/<project>/``; the variable named by ``override`` replaces the index, e.g. a mirror).
A file counts as found only when its sha256 is one the lock accepts for that pin, so adding or
changing a source can never change what is installed: the lock's hashes decide. pip is then pointed
at the file's folder with --find-links; an image build gets the file in its context's wheelhouse,
since a build cannot reach a loopback or host-only index. Nothing here enters an environment's or an
image's identity (envs.env_sha256, build.inputs_sha256): the same hashes install the same files.

When a file is in no folder and the index cannot give it, one line names the file, the lock, the
address tried and the two ways to supply it.
"""

from __future__ import annotations

import html.parser
import os
import re
import shlex
import subprocess
import sys
import tomllib
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from bench.errors import UsageError
from images import envs, external

SOURCES_NAME = "sources.toml"
WHEELHOUSE_VAR = "DLREPRO_WHEELHOUSE"
# What the fix of a missing file names as the folders pip and the kit take files from.
FOLDER_VARS = f"PIP_FIND_LINKS or {WHEELHOUSE_VAR}"
# A declared override must be one of the kit's own variables, never an arbitrary one.
_OVERRIDE = re.compile(r"DLREPRO_[A-Z0-9_]+")
# name-version-...whl, as wheel file names are spelled (PEP 427).
_WHEEL = re.compile(r"([A-Za-z0-9_.]+)-([^-]+)-[^-]+-[^-]+-[^-]+\.whl")
_TIMEOUT_S = 60


def norm(name: str) -> str:
    """A project name as PEP 503 normalizes it (the index page's folder name)."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class IndexedFile:
    """One file a lock takes from a declared index instead of the package index."""

    lock: Path
    filename: str
    index: str
    about: str
    override: str

    @property
    def project(self) -> str:
        """The normalized project name (torch)."""
        return norm(_WHEEL.fullmatch(self.filename).group(1))

    @property
    def version(self) -> str:
        """The version the wheel's file name carries (2.13.0+cpu)."""
        return _WHEEL.fullmatch(self.filename).group(2)

    def index_url(self) -> str:
        """The declared index, or the one its override variable names (a mirror, a loopback index)."""
        return (os.environ.get(self.override, "").strip() or self.index).rstrip("/") + "/"

    def page_url(self) -> str:
        """The index's page listing the project's files (PEP 503)."""
        return f"{self.index_url()}{self.project}/"

    def accepted(self) -> set[str]:
        """The sha256 values the lock accepts for this file's name==version (empty: not pinned there)."""
        from images.lockfile import parse_lock  # lockfile imports build, which imports this module

        pin = parse_lock(self.lock.read_text()).get(self.project, {})
        return set(pin.get("sha256", [])) if pin.get("version") == self.version else set()


def declared(lock: Path) -> list[IndexedFile]:
    """The files `lock` takes from a declared index (sources.toml beside it); [] for the package index alone."""
    path = Path(lock).with_name(SOURCES_NAME)
    if not path.is_file():
        return []
    try:
        entries = tomllib.loads(path.read_text()).get("file", [])
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{envs._show(path)} is not valid TOML ({exc})", "fix it (see images/sources.py)") from None
    found = []
    for entry in entries:
        if entry.get("lock") != Path(lock).name:
            continue
        item = IndexedFile(Path(lock), str(entry.get("file", "")), str(entry.get("index", "")),
                           str(entry.get("about", "the declared index")), str(entry.get("override", "")))
        if not (_WHEEL.fullmatch(item.filename) and item.index.startswith(("https://", "http://"))
                and _OVERRIDE.fullmatch(item.override)):
            raise UsageError(f"{envs._show(path)}: bad [[file]] entry {entry}",
                             "give file (a wheel's name), index (an http(s) URL) and override (DLREPRO_...)")
        found.append(item)
    return found


def env_paths(var: str) -> list[Path]:
    """The folders a ':'-separated variable names."""
    return [Path(p) for p in os.environ.get(var, "").split(os.pathsep) if p]


def wheelhouses() -> list[Path]:
    """Local wheel folders: $DLREPRO_WHEELHOUSE, else PIP_FIND_LINKS and --find-links in DLREPRO_PIP_ARGS."""
    if WHEELHOUSE_VAR in os.environ:
        found = env_paths(WHEELHOUSE_VAR)
    else:
        found = [Path(p) for p in os.environ.get("PIP_FIND_LINKS", "").split()]
        args = shlex.split(os.environ.get(envs.PIP_ARGS_VAR, ""))
        found += [Path(args[i + 1]) for i, a in enumerate(args[:-1]) if a in ("--find-links", "-f")]
        found += [Path(a.split("=", 1)[1]) for a in args if a.startswith("--find-links=")]
    return [p for p in found if p.is_dir()]


def pip_find_links() -> list[Path]:
    """The local folders this machine's pip takes files from (`pip config list`: PIP_FIND_LINKS when it
    is set and not empty, which pip lets override its configuration files, else their find-links)."""
    try:
        out = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True,
                             timeout=60, stdin=subprocess.DEVNULL).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []  # no pip here (RUNNER=system): nothing configured to look at
    values = dict(re.findall(r"(?m)^(\S+?)\.find-links='(.*)'$", out))
    env = values.pop(":env:", "")
    chosen = env.split() if env else [v for value in values.values() for v in value.split()]
    return [Path(v.removeprefix("file://")) for v in chosen if Path(v.removeprefix("file://")).is_dir()]


def _locally(item: IndexedFile, accepted: set[str]) -> Path | None:
    """The file from a wheel folder or the cache, when one holds a copy the lock accepts."""
    def candidates():
        yield from (folder / item.filename for folder in wheelhouses())
        yield from (external.cache_dir() / sha / item.filename for sha in sorted(accepted))
        yield from (folder / item.filename for folder in pip_find_links())  # a subprocess: asked last

    return next((p for p in candidates() if p.is_file() and external.file_sha256(p) in accepted), None)


class _Links(html.parser.HTMLParser):
    """The href of every anchor of a PEP 503 page."""

    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        href = dict(attrs).get("href") if tag == "a" else None
        if href:
            self.hrefs.append(href)


def _file_url(item: IndexedFile) -> str:
    """The address the index's project page gives for the file (OSError/URLError when unreachable)."""
    page = item.page_url()
    with urllib.request.urlopen(page, timeout=_TIMEOUT_S) as resp:
        parser = _Links()
        parser.feed(resp.read().decode("utf-8", errors="replace"))
    for href in parser.hrefs:
        url = urllib.parse.urljoin(page, href)
        if urllib.parse.unquote(urllib.parse.urlsplit(url).path.rsplit("/", 1)[-1]) == item.filename:
            return urllib.parse.urldefrag(url).url
    raise FileNotFoundError("not listed there")


def missing(item: IndexedFile, reason: str) -> UsageError:
    """The one line for a declared file that neither a folder nor the index can give."""
    return UsageError(
        f"{item.filename} (pinned by {envs._show(item.lock)}) is in no local wheel folder and {item.page_url()} "
        f"does not give it ({reason})",
        f"set {item.override} to a mirror of {item.about} (a PEP 503 simple index), or put the file in a folder "
        f"named by {FOLDER_VARS}",
    )


def _reason(exc: Exception) -> str:
    if isinstance(exc, urllib.error.HTTPError):
        return f"HTTP {exc.code}"
    return str(getattr(exc, "reason", None) or exc)


def _from_index(item: IndexedFile, accepted: set[str]) -> Path:
    """Download the file from its index into the cache, kept only when the lock accepts its sha256."""
    try:
        url = _file_url(item)
        print(f"fetching {item.filename} from {item.about} ({url})", file=sys.stderr, flush=True)
        tmp, sha = external.stream(url, external.cache_dir())
    except (urllib.error.URLError, OSError) as exc:
        raise missing(item, _reason(exc)) from None
    if sha not in accepted:
        tmp.unlink()
        raise UsageError(f"{url} has sha256 {sha}, which {envs._show(item.lock)} does not accept for "
                         f"{item.project}=={item.version}",
                         f"point {item.override} at an index serving the locked file, or put that file in a "
                         f"folder named by {FOLDER_VARS}")
    final = external.cache_dir() / sha / item.filename
    final.parent.mkdir(parents=True, exist_ok=True)
    os.replace(tmp, final)
    return final


def find(item: IndexedFile) -> Path:
    """A local copy of the declared file that the lock accepts: from a wheel folder, the cache or the index."""
    accepted = item.accepted()
    if not accepted:
        raise UsageError(f"{envs._show(item.lock.with_name(SOURCES_NAME))} names {item.filename}, but "
                         f"{envs._show(item.lock)} pins no {item.project}=={item.version} with a hash",
                         "make the two agree (the lock decides; edit sources.toml)")
    return _locally(item, accepted) or _from_index(item, accepted)


def fetch_all(lock: Path) -> list[Path]:
    """Every file `lock` takes from a declared index, as local files the lock accepts."""
    return [find(item) for item in declared(lock)]


def find_links_args(files: list[Path]) -> list[str]:
    """pip options that let it take these files (one --find-links per folder)."""
    folders = dict.fromkeys(str(f.parent) for f in files)
    return [arg for folder in folders for arg in ("--find-links", folder)]


def describe(lock: Path) -> str:
    """Where a lock's files come from, in one line."""
    own = [f"{i.filename} from {i.about} ({i.index_url()}; {i.override})" for i in declared(lock)]
    own += [f"{pin.name}=={pin.version} from PyTorch's wheel archive ({pin.url()}; {external.ARCHIVE_VAR}), "
            "trusted on first use" for pin in external.pins_of(Path(lock).read_text())]
    rest = "everything else" if own else "every file"
    return "; ".join([*own, f"{rest} from the package index pip is set up with"])


def main(argv: list[str] | None = None) -> int:
    """`python -m images.sources [LOCK ...]`: where each lock's files come from (default: every lock)."""
    locks = [Path(a) for a in (sys.argv[1:] if argv is None else argv)]
    every = [*envs.IMAGES_DIR.glob("*/*/requirements*.txt"), *envs.IMAGES_DIR.glob("*/requirements.txt")]
    locks = locks or sorted(every)
    for lock in locks:
        print(f"{envs._show(lock.resolve())}: {describe(lock)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
