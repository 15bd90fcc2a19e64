"""The CPython 3.6.15 source the paper-era base is built from (images/base/make-paper-base.sh).

Docker Hub's python:3.6.15-slim-buster is the paper era's default base; where no registry answers,
`make base ERA=paper` builds CPython 3.6.15 itself, from one of:

- PYTHON_SOURCE=<path>: python.org's ``Python-3.6.15.tar.xz`` or ``Python-3.6.15.tgz``, accepted only at
  the sha256 python.org publishes for that file name (``PYTHON_ORG``);
- PYTHON_STANDIN=<path>: any other file, named as a stand-in for python.org's (e.g. a tree repacked from
  a mirror). No one publishes its digest, so it is trusted on first use like torch 0.4.1: its sha256 is
  recorded in versions.local.lock (images/external.py's local lock) and a later file of another digest
  is refused. The image's labels say it was built from a stand-in, and from which digest;
- neither: python.org's two files, fetched into a cache folder (DLREPRO_SOURCE_CACHE, default
  ~/.cache/dlrepro/sources) and accepted at those digests.

``python -m images.pythonsource resolve`` prints ``sha256 kind filename path`` (tab-separated) for the
shell script; ``record`` writes the base's record (/etc/dlrepro/base.json) and ``labels`` turns it into
the image's LABEL instructions, so both say the same thing.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
from dataclasses import dataclass
from pathlib import Path

from bench import atomic
from bench.errors import UsageError, run_cli
from images import external

VERSION = "3.6.15"
# python.org's published sha256 of each release file (the same digests pyenv and Spack pin).
PYTHON_ORG = {
    f"Python-{VERSION}.tar.xz": "6e28d7cdd6dd513dd190e49bca3972e20fcf455090ccf2ef3f1a227614135d91",
    f"Python-{VERSION}.tgz": "54570b7e339e2cfd72b29c7e2fdb47c0b7b18b7412e61de5b463fc087c13b043",
}
SOURCE_VAR = "PYTHON_SOURCE"
STANDIN_VAR = "PYTHON_STANDIN"
FTP_VAR = "DLREPRO_PYTHON_FTP"
DEFAULT_FTP = "https://www.python.org/ftp/python"
CACHE_VAR = "DLREPRO_SOURCE_CACHE"
# The stand-in's entry in versions.local.lock: one per machine, whatever the file is called, so a
# different file named as the stand-in later is refused rather than trusted beside the first.
STANDIN_KEY = f"stand-in/cpython-{VERSION}-source"
KIND_PYTHON_ORG = "python.org"
KIND_STANDIN = "stand-in"
# /etc/dlrepro/base.json key -> image label (the shared contract of issue 28).
LABELS = {
    "era": "base-era",
    "debian_release": "debian-release",
    "debian_version": "debian-version",
    "python": "python",
    "source": "python-source",
    "source_sha256": "python-source-sha256",
    "source_kind": "python-source-kind",
    "configure": "python-configure",
    "pgo": "python-pgo",
    "cc": "python-cc",
    "departs_from": "departs-from",
}
LABEL_PREFIX = "org.dlrepro."
REGISTRY_BASE = "python:3.6.15-slim-buster"


@dataclass(frozen=True)
class PythonSource:
    """A CPython source file on this machine, its sha256 and why it is trusted (python.org or stand-in)."""

    path: Path
    sha256: str
    kind: str

    def line(self) -> str:
        """What `resolve` prints for the shell script."""
        return "\t".join([self.sha256, self.kind, self.path.name, str(self.path)])


def cache_dir() -> Path:
    """Where python.org's files are fetched to ($DLREPRO_SOURCE_CACHE, default ~/.cache/dlrepro/sources)."""
    default = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "dlrepro" / "sources"
    return Path(os.environ.get(CACHE_VAR) or default)


def _existing(path: str, var: str) -> Path:
    found = Path(path).expanduser()
    if not found.is_file():
        raise UsageError(f"{var}={path} is not a file", f"give the path of a CPython {VERSION} source tarball")
    return found.resolve()


def python_org(path: str) -> PythonSource:
    """PYTHON_SOURCE: python.org's file, accepted only at the digest python.org publishes for its name."""
    found = _existing(path, SOURCE_VAR)
    expected = PYTHON_ORG.get(found.name)
    if expected is None:
        raise UsageError(f"{SOURCE_VAR}={path} is not one of python.org's files ({', '.join(PYTHON_ORG)})",
                         f"pass python.org's file under its own name, or name this one as a stand-in: "
                         f"{STANDIN_VAR}={path}")
    sha = external.file_sha256(found)
    if sha != expected:
        raise UsageError(f"{found} has sha256 {sha}, not python.org's {expected} for {found.name}",
                         f"use python.org's file unchanged, or name this one as a stand-in: {STANDIN_VAR}={path}")
    return PythonSource(found, sha, KIND_PYTHON_ORG)


def standin(path: str) -> PythonSource:
    """PYTHON_STANDIN: any file, its sha256 recorded on first use and refused when it differs later."""
    found = _existing(path, STANDIN_VAR)
    sha = external.file_sha256(found)
    known = external.recorded().get(STANDIN_KEY, {}).get("sha256")
    lock = external.local_lock_path()
    if known and sha != known:
        raise UsageError(
            f"the stand-in {found} has sha256 {sha}, but {lock.name} recorded {known} for the first CPython "
            f"{VERSION} stand-in",
            f"name the file of that sha256 again, or delete the [external.\"{STANDIN_KEY}\"] entry from {lock} to "
            "trust this one")
    if not known:
        external.record(STANDIN_KEY, sha, str(found))
        print(f"trusting the stand-in {found} on first use: sha256 {sha} (recorded in {lock.name})",
              file=sys.stderr, flush=True)
    return PythonSource(found, sha, KIND_STANDIN)


def _cached(name: str) -> PythonSource | None:
    path = cache_dir() / name
    if path.is_file() and external.file_sha256(path) == PYTHON_ORG[name]:
        return PythonSource(path, PYTHON_ORG[name], KIND_PYTHON_ORG)
    return None


def fetch() -> PythonSource:
    """Neither variable given: python.org's .tar.xz or .tgz, from the cache or fetched into it, at its digest."""
    for name in PYTHON_ORG:
        if found := _cached(name):
            return found
    ftp = (os.environ.get(FTP_VAR, "").strip() or DEFAULT_FTP).rstrip("/")
    reasons = []
    for name, expected in PYTHON_ORG.items():
        url = f"{ftp}/{VERSION}/{name}"
        try:
            tmp, sha = external.stream(url, cache_dir())
        except (urllib.error.URLError, OSError) as exc:
            reasons.append(f"{url}: {getattr(exc, 'reason', None) or exc}")
            continue
        if sha != expected:
            tmp.unlink()
            raise UsageError(f"{url} has sha256 {sha}, not python.org's {expected} for {name}",
                             f"fetch it again, or pass a copy as {SOURCE_VAR}=<path> (or {STANDIN_VAR}=<path>)")
        os.replace(tmp, cache_dir() / name)
        return PythonSource(cache_dir() / name, sha, KIND_PYTHON_ORG)
    raise UsageError(f"no CPython {VERSION} source given and python.org is not reachable ({'; '.join(reasons)})",
                     f"pass python.org's Python-{VERSION}.tar.xz or .tgz as {SOURCE_VAR}=<path>, or another copy "
                     f"as {STANDIN_VAR}=<path> (trusted on first use)")


def resolve(source: str | None = None, stand_in: str | None = None) -> PythonSource:
    """The source to build from: PYTHON_SOURCE, else PYTHON_STANDIN, else python.org's files (fetched)."""
    if source and stand_in:
        raise UsageError(f"both {SOURCE_VAR} and {STANDIN_VAR} are given", "give one of them")
    if source:
        return python_org(source)
    if stand_in:
        return standin(stand_in)
    return fetch()


def departs_from(record: dict) -> str:
    """One sentence: how a base built here differs from the registry's python:3.6.15-slim-buster."""
    origin = (f"python.org's {record['source']}" if record["source_kind"] == KIND_PYTHON_ORG
              else f"a stand-in for python.org's file ({record['source']}, sha256 {record['source_sha256']}, "
                   "not python.org's bytes)")
    pgo = "with PGO" if record["pgo"] == "yes" else "without PGO"
    return (f"CPython {record['python']} built here from {origin} on Debian {record['debian_version']} "
            f"{record['debian_release']} with {record['cc']}, {pgo}, vs. {REGISTRY_BASE}'s Debian 10 buster "
            "and PGO build (--enable-optimizations)")


def base_record(fields: dict[str, str]) -> dict[str, str]:
    """The record /etc/dlrepro/base.json holds: the given fields plus era, python and departs_from."""
    record = {"era": "paper", "python": VERSION, **fields}
    missing = sorted(set(LABELS) - set(record) - {"departs_from"})
    if missing:
        raise UsageError(f"the base record lacks {', '.join(missing)}", "pass every field to 'record'")
    record["departs_from"] = departs_from(record)
    return {key: record[key] for key in LABELS}


def label_lines(record: dict[str, str]) -> list[str]:
    """One Dockerfile LABEL instruction per field (for docker import --change), values JSON-quoted."""
    return [f"LABEL {LABEL_PREFIX}{LABELS[key]}={json.dumps(record[key])}" for key in LABELS]


def main(argv: list[str]) -> int:
    """resolve | record OUT key=value... | labels RECORD."""
    parser = argparse.ArgumentParser(prog="python -m images.pythonsource", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("resolve", help=f"the source from ${SOURCE_VAR}, ${STANDIN_VAR} or python.org")
    rec = sub.add_parser("record", help="write the base's JSON record")
    rec.add_argument("out", type=Path)
    rec.add_argument("fields", nargs="*", metavar="KEY=VALUE")
    lab = sub.add_parser("labels", help="a record's LABEL instructions, one a line")
    lab.add_argument("record", type=Path)
    args = parser.parse_args(argv)
    if args.command == "resolve":
        print(resolve(os.environ.get(SOURCE_VAR, "").strip() or None,
                      os.environ.get(STANDIN_VAR, "").strip() or None).line())
    elif args.command == "record":
        fields = dict(f.split("=", 1) for f in args.fields)
        atomic.write_text(args.out, json.dumps(base_record(fields), indent=2, sort_keys=True) + "\n")
    else:
        print("\n".join(label_lines(json.loads(args.record.read_text()))))
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main, sys.argv[1:]))
