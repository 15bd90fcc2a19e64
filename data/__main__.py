"""Command line: ``python -m data {download,synthetic,prepare,list,forget}`` (run from the repo root).

  python -m data download  [--datasets mnist imdb] [--mirror URL] [--root data]
      fetch each file (user mirror first, then the manifest's mirrors), verify sha256 (for a file
      with no published digest: its size on the first download, whose sha256 is then recorded in
      <root>/raw/digests.local.json, and that digest later), then prepare into <root>/prepared/<dataset>/
  python -m data synthetic [--datasets mnist imdb] [--root data] [--seed 0] [--size mnist=12000:2000]
      write synthetic files in the real formats to <root>/synthetic/raw/<dataset>/ and
      prepare them into <root>/prepared/<dataset>-synthetic/ (no network)
  python -m data prepare   [--datasets ...] [--root data] [--force]
      prepare already-downloaded raw files again
  python -m data list      [--root data]
      datasets in the manifest and what exists under the root
  python -m data forget    DATASET [--root data]
      drop the sha256s recorded on first download for DATASET, and its raw files, so the next
      download records a new copy

The user mirror (``--mirror BASE`` or DLREPRO_MIRROR=BASE) serves <BASE>/<dataset>/<file>;
BASE may be http(s)://, file:// or a local folder. Errors are one line, ``error: <problem>; <fix>``,
with exit status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from bench.atomic import name_the_path
from bench.errors import UsageError, run_cli
from bench.prepared import META_FILE, SOURCES
from data import digests, synthetic
from data.download import MIRROR_ENV, PART_SUFFIX, download
from data.manifest import Manifest, load_manifest
from data.paths import DEFAULT_ROOT, prepared_dir, raw_dir
from data.prepare import prepare


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m data", description="Download, verify, prepare datasets.")
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p: argparse.ArgumentParser, datasets: bool = True) -> None:
        p.add_argument("--root", type=Path, default=DEFAULT_ROOT, help="data root folder (default: data)")
        p.add_argument("--manifest", type=Path, help="another manifest TOML instead of data/manifest.toml")
        if datasets:
            # nargs="*": a target whose workloads all generate their data in the run (bench/generated.py)
            # asks for none (`--datasets` with nothing after it), which downloads nothing, not everything.
            p.add_argument("--datasets", nargs="*", metavar="NAME", help="datasets (default: all; none if empty)")
        p.add_argument("-q", "--quiet", action="store_true", help="no progress output on stderr")

    p = sub.add_parser("download", help="download, verify (sha256) and prepare real datasets")
    common(p)
    p.add_argument("--mirror", metavar="URL",
                   help=f"base URL tried first, as <URL>/<dataset>/<file> (default: ${MIRROR_ENV})")
    p.add_argument("--retries", type=int, default=2, help="resumes of a cut transfer per source (default 2)")
    p.add_argument("--timeout", type=float, default=60.0, help="network timeout in seconds (default 60)")
    p.add_argument("--no-prepare", action="store_true", help="only download and verify")

    p = sub.add_parser("synthetic", help="make and prepare synthetic data in the real formats (no network)")
    common(p)
    p.add_argument("--seed", type=int, default=0, help="generator seed (default 0)")
    p.add_argument("--size", action="append", default=[], metavar="DATASET=TRAIN:TEST",
                   help="examples per split, e.g. mnist=12000:2000 (defaults: "
                   + ", ".join(f"{k}={a}:{b}" for k, (a, b) in sorted(synthetic.DEFAULT_SIZES.items())) + ")")

    p = sub.add_parser("prepare", help="prepare downloaded raw files again")
    common(p)
    p.add_argument("--force", action="store_true", help="even when the prepared folder is up to date")

    p = sub.add_parser("list", help="datasets of the manifest and their state under --root")
    common(p, datasets=False)

    p = sub.add_parser("forget", help="drop a dataset's sha256s recorded on first download, and its raw files")
    common(p, datasets=False)
    p.add_argument("dataset", help="the dataset whose recorded digests to drop")
    return parser


def _pick(requested: list[str] | None, known: list[str]) -> list[str]:
    """The requested datasets (all when not given, none when given empty), each checked before any work starts."""
    for name in requested or []:
        if name not in known:
            raise UsageError(f"unknown dataset '{name}'", f"choose from: {', '.join(known)}")
    if requested == []:
        print("no dataset to download or prepare (the workloads generate their data in the run)")
    return known if requested is None else list(dict.fromkeys(requested))


def _sizes(specs: list[str]) -> dict[str, tuple[int, int]]:
    sizes = {}
    for spec in specs:
        try:
            name, counts = spec.split("=", 1)
            train, test = (int(v) for v in counts.split(":", 1))
        except ValueError:
            raise UsageError(f"bad --size '{spec}'", "write DATASET=TRAIN:TEST, e.g. mnist=12000:2000") \
                from None
        synthetic.check_dataset(name)
        sizes[name] = (train, test)
    return sizes


def _report(folder: Path) -> None:
    meta = json.loads((folder / META_FILE).read_text(encoding="utf-8"))
    counts = meta.get("counts", {})
    sizes = f"{counts.get('train')} train / {counts.get('test')} test"
    print(f"{meta['dataset']}: {folder} ({meta['source']}, {sizes}, arrays_sha256 {meta['arrays_sha256']})")


def _list(manifest: Manifest, root: Path) -> None:
    for name in manifest.names():
        spec = manifest.get(name)
        size = sum(f.size or 0 for f in spec.files)
        have = sum((raw_dir(root, name) / f.name).is_file() for f in spec.files)
        ready = [src for src in SOURCES if (prepared_dir(root, name, src) / META_FILE).is_file()]
        files = f"{len(spec.files)} file{'s' if len(spec.files) != 1 else ''}"
        pins = "".join(f"; {_first_download_text(root, name, f.name)}" for f in spec.files if f.first_download)
        megabytes = f"{size / 1e6:.1f} MB" if all(f.size is not None for f in spec.files) else "size not pinned"
        print(f"{name:10} {files}, {megabytes}; downloaded {have}/{len(spec.files)}; "
              f"prepared: {', '.join(ready) or 'none'}{pins}")
        if spec.description:
            print(f"{'':10} {spec.description}")


def _first_download_text(root: Path, dataset: str, name: str) -> str:
    """What `list` says about a file with no published digest: the recorded sha256, or that none is yet."""
    recorded = digests.recorded(digests.lock_for(raw_dir(root, dataset)), dataset, name)
    if recorded is None:
        return f"{name}: no published sha256, recorded on first download (size verified; none recorded yet)"
    return f"{name}: sha256 recorded on first download, size verified: {recorded}"


def _forget(manifest: Manifest, root: Path, dataset: str) -> None:
    """Drop a dataset's recorded digests and its raw files (they would be recorded again as they are)."""
    spec = manifest.get(dataset)
    raw = raw_dir(root, dataset)
    if not any(f.first_download for f in spec.files):
        raise UsageError(f"every file of {dataset} has a published sha256 in the manifest: nothing was recorded "
                         "to forget", f"to fetch a file again, delete it from {raw} and run 'python -m data download "
                         f"--datasets {dataset}'")
    lock = digests.lock_for(raw)
    dropped = digests.forget(lock, dataset)
    removed = []
    for file in (f for f in spec.files if f.first_download):
        for path in (raw / file.name, raw / (file.name + PART_SUFFIX)):
            if path.is_file():
                path.unlink()
                removed.append(str(path))
    print(f"{dataset}: forgot the sha256 recorded on first download for {', '.join(dropped) or 'no file'} "
          f"(in {lock}); removed {', '.join(removed) or 'no raw file'}. The next download records a new copy.")


def run(args: argparse.Namespace) -> int:
    """Carry out one parsed command; 0 when done (raises UsageError on bad input)."""
    manifest = load_manifest(args.manifest)
    progress = not args.quiet
    if args.command == "list":
        _list(manifest, args.root)
    elif args.command == "forget":
        _forget(manifest, args.root, args.dataset)
    elif args.command == "download":
        for name in _pick(args.datasets, manifest.names()):
            raw = download(name, args.root, mirror=args.mirror, manifest=manifest, retries=args.retries,
                           timeout=args.timeout, progress=progress)
            if args.no_prepare:
                print(f"{name}: {raw} (verified)")
            else:
                out = prepared_dir(args.root, name)
                _report(prepare(name, raw, out, manifest=manifest, progress=progress))
    elif args.command == "prepare":
        for name in _pick(args.datasets, manifest.names()):
            _report(prepare(name, raw_dir(args.root, name), prepared_dir(args.root, name), manifest=manifest,
                            force=args.force, progress=progress))
    elif args.command == "synthetic":
        names = _pick(args.datasets, synthetic.known())
        sizes = _sizes(args.size)
        for name in names:
            size = sizes.get(name)
            raw = synthetic.generate(name, args.root, sizes=size, seed=args.seed, progress=progress)
            folder = prepared_dir(args.root, name, "synthetic")
            _report(prepare(name, raw, folder, source="synthetic", manifest=manifest, progress=progress))
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit status (2 for a usage error, 130 when interrupted)."""
    args = _parser().parse_args(argv)
    return run_cli(_run_in_root, args)


def _run_in_root(args: argparse.Namespace) -> int:
    try:
        return run(args)
    except OSError as exc:
        name_the_path(exc, args.root)  # a full disk names no file: the data root is what filled up
        raise


if __name__ == "__main__":
    sys.exit(main())
