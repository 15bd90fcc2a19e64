"""The prepared-data format: framework-neutral arrays every framework reads.

data/prepare.py writes it; the entrypoint reads it, inside or outside a container. A prepared
dataset is a folder with:

- ``arrays.npz``: x_train, y_train, x_test, y_test (+ len_train, len_test for sequences)
    images:    x uint8 (N, H, W, C), y int64 (N,)
    sequences: x int32 (N, maxlen) post-padded with 0, len int32 (N,) real lengths, y int64 (N,)
    seq2seq / language models add their own keys, named in meta.json; a workload's [arrays]
    table says which of them play which role (bind_roles). A language model's x / y are windows
    of its whole token streams (tokens_train, tokens_test); a workload whose spec sets data.window
    reads windows of that length instead, cut from the streams in the run (windows(), load()).
- ``meta.json``: {"format_version", "dataset", "source" ("real" | "synthetic"), "arrays_sha256",
    "num_classes", "keys", "raw_files": {name: sha256}, "raw_verification": {name: how it was
    verified, e.g. "manifest sha256"}, ...}

A run identifies its data by arrays_sha256; its request names the rows of a subset (the host
picks them: campaign/requests.py), so this reader needs no random generator. load() hashes the
bytes it reads (one streaming pass, then NumPy parses the same open file: the sha256 of SVHN's
306 MB takes about twice as long as parsing it) and refuses arrays other than those the run was
planned for before parsing them, so run.json's sha256 is that of the bytes trained on. A large array kept
whole (not one row per example: VOC2012's flat pixels, ~8 GB a split) is memory-mapped read-only instead of read
(_mapped): a run touches only its own images' bytes, and its peak memory is not the dataset's size.

CPython 3.6-clean, standard library and NumPy >= 1.14 only: data/ writes the format on the host,
and the entrypoint reads it inside images of every era.
"""

import json
import zipfile
from pathlib import Path
from typing import Dict, Optional, Sequence, Tuple

import numpy as np

from bench.errors import UsageError
from bench.hashing import sha256_file, sha256_stream

FORMAT_VERSION = 1
ARRAYS_FILE = "arrays.npz"
META_FILE = "meta.json"
SOURCES = ("real", "synthetic")
# What NumPy and zipfile raise on a truncated or overwritten .npz (EOFError: a member cut short).
_UNREADABLE = (zipfile.BadZipFile, ValueError, EOFError, OSError, KeyError)


class ArraysDiffer(UsageError):
    """Arrays whose bytes are not those the run was planned for (load()); `sha256` is that of the bytes found."""

    def __init__(self, problem: str, fix: str, sha256: str) -> None:
        super().__init__(problem, fix)
        self.sha256 = sha256


def prepare_again(dataset: str, source: str) -> str:
    """The fix for a missing, corrupt or changed prepared dataset: the command that prepares it (again)."""
    if source == "real":
        return f"run 'make download DATASETS={dataset}'"
    return f"run 'python -m data synthetic --datasets {dataset}' (make demo does it)"


def check_source(source: str) -> str:
    """Return source if it is a known data source, else raise a UsageError naming the choices."""
    if source not in SOURCES:
        raise UsageError(f"unknown data source '{source}'", f"choose from: {', '.join(SOURCES)} (DATA=...)")
    return source


def prepared_dir(root: Path, dataset: str, source: str = "real") -> Path:
    """Where a prepared dataset lives: <root>/prepared/<dataset> or <dataset>-synthetic."""
    check_source(source)
    return Path(root) / "prepared" / (dataset if source == "real" else f"{dataset}-synthetic")


class PreparedData:
    """Arrays of one dataset split into train and test, plus its meta.json."""

    def __init__(self, meta: dict, train: Optional[Dict[str, np.ndarray]] = None,
                 test: Optional[Dict[str, np.ndarray]] = None, sha256: Optional[str] = None) -> None:
        self.meta = meta
        self.train = {} if train is None else train
        self.test = {} if test is None else test
        self.sha256 = sha256  # of the arrays.npz bytes load() read; None for arrays made in memory

    def __getattr__(self, name: str) -> np.ndarray:
        # x_train, y_test, len_train, ...: shorthand for the split dicts.
        for suffix, split in (("_train", "train"), ("_test", "test")):
            if name.endswith(suffix) and split in self.__dict__:
                return self.__dict__[split][name[: -len(suffix)]]
        raise AttributeError(name)


def read_meta(folder: Path) -> dict:
    """meta.json of a prepared dataset, or a UsageError saying how to make it."""
    folder = Path(folder)
    path = folder / META_FILE
    if not path.exists() or not (folder / ARRAYS_FILE).exists():
        raise UsageError(
            f"prepared data not found in {folder}",
            "run 'make download' for the real datasets (or 'make demo' for synthetic data)",
        )
    try:
        meta = json.loads(path.read_text())
    except ValueError as err:
        raise UsageError(f"{path} is not valid JSON ({err})",
                         "delete the folder and run 'make download' again") from None
    if meta.get("format_version") != FORMAT_VERSION:
        raise UsageError(
            f"{path} has format_version {meta.get('format_version')!r}, this kit reads {FORMAT_VERSION}",
            "delete the folder and run 'make download' again",
        )
    return meta


def windows(stream: np.ndarray, steps: int) -> Tuple[np.ndarray, np.ndarray]:
    """Non-overlapping windows x (N, steps) of a token stream and their next tokens y (N, steps).

    The one place windows are cut: data/ptb.py prepares its arrays with it, and load() cuts other
    lengths from the prepared token streams with it when a workload asks (its spec's data.window).
    N = (len(stream) - 1) // steps; the tokens after the last whole window are dropped.
    """
    steps = int(steps)
    if steps < 1:
        raise UsageError(f"a window of {steps} tokens cannot be cut", "set data.window to 1 or more")
    n = max(0, (len(stream) - 1) // steps)
    x = stream[: n * steps].reshape(n, steps)
    y = stream[1 : n * steps + 1].reshape(n, steps)
    return np.ascontiguousarray(x), np.ascontiguousarray(y)


def split_sizes(folder: Path, window: Optional[int] = None) -> Dict[str, int]:
    """Examples per split, {"train": n, "test": n}: the length of y_<split> (what subsets index), or with
    `window`, the number of `window`-token windows of each split's token stream (what load() then cuts)."""
    path = Path(folder) / ARRAYS_FILE
    try:
        with np.load(str(path)) as npz:
            if window is None:
                return {split: int(len(npz["y_" + split])) for split in ("train", "test")}
            return {split: max(0, (len(_stream(npz, split, folder)) - 1) // int(window))
                    for split in ("train", "test")}
    except _UNREADABLE as err:
        raise unreadable(path, err, _meta_or_empty(Path(folder))) from None


def unreadable(path: Path, err: BaseException, meta: dict) -> UsageError:
    """The one-line refusal of an arrays.npz NumPy cannot read (truncated, overwritten, not an npz)."""
    fix = prepare_again(meta.get("dataset", "<dataset>"), meta.get("source", "real"))
    return UsageError(f"{path} is not a readable .npz ({type(err).__name__}: {err})", f"prepare it again: {fix}")


def _meta_or_empty(folder: Path) -> dict:
    """meta.json for the wording of a fix, {} when even it cannot be read."""
    try:
        return read_meta(folder)
    except UsageError:
        return {}


def arrays_problem(folder: Path, meta: dict) -> Optional[str]:
    """Why `folder`'s arrays.npz is not the one `meta` (its meta.json) records, or None when its bytes are:
    what "up to date" means to data/prepare.py, and what planning checks before it trusts the digest."""
    path = Path(folder) / ARRAYS_FILE
    try:
        got = sha256_file(path)
    except OSError as err:
        return f"{path} cannot be read ({err.strerror or err})"
    if got != meta.get("arrays_sha256"):
        return f"{path} has sha256 {got}, not the {meta.get('arrays_sha256')} its {META_FILE} records"
    return None


def read_verified(fh, path: Path, planned: Optional[dict], meta: dict) -> str:
    """Hash the open arrays file `fh` (at `path`) to its end and rewind it; return the hex sha256.

    `planned`: the run request's data block; a file whose bytes are not the arrays it was planned for
    is refused (ArraysDiffer: one line naming the file, as the request names its folder, and the fix),
    before any array is parsed, so truncated or replaced arrays never reach a framework.
    """
    got = sha256_stream(fh)
    fh.seek(0)
    if planned is not None and got != planned["arrays_sha256"]:
        named = Path(planned["path"]) / ARRAYS_FILE if planned.get("path") else path  # not a container's mount
        raise ArraysDiffer(f"{named} has sha256 {got}, the run was planned for {planned['arrays_sha256']}",
                           _mismatch_fix(got, planned, meta), got)
    return got


def _mismatch_fix(got: str, planned: dict, meta: dict) -> str:
    """Arrays that match their own meta.json were prepared again after the run was planned: plan again.
    Any other difference is damage (a truncated or replaced file): prepare the folder again."""
    if got == meta.get("arrays_sha256"):
        return ("the folder was prepared again since the run was planned: run the campaign again "
                "to plan its runs for these arrays")
    return "prepare it again: " + prepare_again(planned["dataset"], planned["source"])


def _stream(npz, split: str, folder: Path) -> np.ndarray:
    """The whole token stream tokens_<split> of a prepared language-model dataset (a UsageError if none)."""
    key = "tokens_" + split
    if key not in npz.files:
        raise UsageError(
            f"the workload cuts windows of its own length (data.window), but {folder} has no token stream '{key}'",
            "use data.window only with a language-model dataset (ptb), or drop it to read the prepared windows")
    return npz[key]


def load(folder: Path, train_indices: Optional[Sequence[int]] = None,
         test_indices: Optional[Sequence[int]] = None, window: Optional[int] = None,
         planned: Optional[dict] = None) -> PreparedData:
    """Load a prepared dataset; keep only the given rows of each split (None = the whole split).

    `window`: a language model's sequence length where it differs from the prepared windows; x and y
    are then cut anew from the split's token stream (windows()) before the rows are picked, and the
    prepared arrays themselves (their sha256, other workloads' runs) stay as they are.
    `planned`: the run request's data block (dataset, source, arrays_sha256); arrays whose bytes differ
    from it are refused (read_verified). The result's sha256 is that of the bytes read.
    """
    folder = Path(folder)
    meta = read_meta(folder)
    path = folder / ARRAYS_FILE
    # One open file for the hash and the parse: a file replaced in between cannot slip through.
    with open(str(path), "rb") as fh:
        data = PreparedData(meta=meta, sha256=read_verified(fh, path, planned, meta))
        try:
            _read_rows(fh, folder, data, train_indices, test_indices, window)
        except _UNREADABLE as err:
            raise unreadable(path, err, meta) from None
    return data


def _read_rows(fh, folder: Path, data: PreparedData, train_indices: Optional[Sequence[int]],
               test_indices: Optional[Sequence[int]], window: Optional[int]) -> None:
    """Parse the open arrays file into data's splits, keeping the given rows (load())."""
    with np.load(fh) as npz:
        for split, rows in (("train", train_indices), ("test", test_indices)):
            keys = [key for key in npz.files if key.endswith("_" + split)]
            cut = {}  # type: Dict[str, np.ndarray]
            if window is not None:
                cut["x"], cut["y"] = windows(_stream(npz, split, folder), window)
            n = len(cut["y"]) if cut else len(npz["y_" + split])
            idx = None if rows is None else np.asarray(rows, dtype=np.int64)
            if idx is not None and len(idx) and (idx.min() < 0 or idx.max() >= n):
                raise UsageError(
                    f"the run request selects rows outside the {n} {split} examples of {folder}",
                    "plan the run again against this prepared dataset (its arrays changed)")
            for key in keys:
                name = key[: -len(split) - 1]
                mapped = None if name in cut else _mapped(npz, key, fh, n)
                arr = cut[name] if name in cut else (mapped if mapped is not None else npz[key])
                # Only per-example arrays are subset; others (PTB's token stream) are kept whole.
                getattr(data, split)[key[: -len(split) - 1]] = arr if idx is None or len(arr) != n else arr[idx]


# Arrays kept whole and at least this large are memory-mapped, not read (VOC2012's flat pixels: ~8 GB a split).
MAP_BYTES = 64 * 2 ** 20


class _Counted:
    """A file read through, counting the bytes read (where a file that cannot tell() its position is)."""

    def __init__(self, fh) -> None:
        self.fh, self.count = fh, 0

    def read(self, size: int = -1) -> bytes:
        data = self.fh.read(size)
        self.count += len(data)
        return data


def _mapped(npz, key: str, fh, rows: int) -> Optional[np.ndarray]:
    """A read-only memory map of member `key` of the open uncompressed npz (data/npz.py writes them stored) when it
    is a large 1-D array that is not one row per example (kept whole: only the rows a run touches are read);
    None otherwise (read as usual)."""
    info = npz.zip.getinfo(key + ".npy")
    if info.compress_type != zipfile.ZIP_STORED or info.file_size < MAP_BYTES:
        return None
    with npz.zip.open(info) as member:
        counted = _Counted(member)  # CPython 3.6's zip members cannot tell() their position: count what is read
        version = np.lib.format.read_magic(counted)
        header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, fortran, dtype = header(counted)
        start = counted.count  # the .npy header's length: the data follows it
    if len(shape) != 1 or shape[0] == rows or dtype.hasobject:
        return None
    fh.seek(info.header_offset)
    local = fh.read(30)  # the zip's local file header: the name's and the extra field's lengths at bytes 26-29
    offset = info.header_offset + 30 + int.from_bytes(local[26:28], "little") + int.from_bytes(local[28:30], "little")
    return np.memmap(fh.name, dtype=dtype, mode="r", offset=offset + start, shape=shape)


# The roles a framework module reads (bench/frameworks/common.py ROLES), each by default the
# prepared array of the same name.
ROLES = ("x", "len", "x_dec", "y", "y_len")


def bind_roles(data: PreparedData, arrays: Optional[Dict[str, str]]) -> PreparedData:
    """The arrays each split holds under their role names, as a workload's [arrays] table maps them.

    Roles the table does not name keep their own name (x, len, y, ...); arrays that play no role
    (PTB's whole token streams) are dropped, so frameworks see exactly what they train on.
    """
    mapping = {role: role for role in ROLES}
    mapping.update(arrays or {})
    unknown = set(mapping) - set(ROLES)
    if unknown:
        raise UsageError(
            f"the workload's [arrays] table names unknown roles {sorted(unknown)}",
            f"use only {', '.join(ROLES)}",
        )
    bound = PreparedData(meta=data.meta)
    for split in ("train", "test"):
        held = getattr(data, split)
        for role, name in mapping.items():
            if name in held:
                getattr(bound, split)[role] = held[name]
            elif name != role:
                raise UsageError(
                    f"prepared dataset {data.meta.get('dataset', '?')} has no array '{name}_{split}' "
                    f"(the workload reads it as '{role}')",
                    "prepare the dataset again with this kit version: make download (or DATA=synthetic)",
                )
    return bound
