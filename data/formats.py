"""Raw file formats the datasets are published in: reading (strictly) and writing.

IDX (MNIST): a 4-byte magic ``00 00 <type> <ndim>``, ``ndim`` big-endian uint32 sizes, then the
values, big-endian, row-major. Usually gzip-compressed. http://yann.lecun.com/exdb/mnist/

Tar archives (IMDB, CIFAR): members are read straight from the archive, never extracted, so a
hostile member name cannot write outside the data root; synthetic archives are written with
fixed metadata so the same content gives the same bytes.
"""

from __future__ import annotations

import gzip
import io
import struct
import tarfile
import zlib
from collections.abc import Collection
from pathlib import Path

import numpy as np

# IDX type byte -> numpy dtype (big-endian where it matters).
IDX_TYPES: dict[int, np.dtype] = {
    0x08: np.dtype(np.uint8),
    0x09: np.dtype(np.int8),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}
_IDX_CODES = {dtype.newbyteorder(">"): code for code, dtype in IDX_TYPES.items()}


class RawFormatError(ValueError):
    """A raw file is not in the format its dataset is published in (corrupt or wrong file)."""


def gunzip(path: Path) -> bytes:
    """The decompressed bytes of a gzip file, or RawFormatError when it is not valid gzip."""
    try:
        with open(path, "rb") as fh:
            return gzip.decompress(fh.read())
    except (gzip.BadGzipFile, EOFError, zlib.error) as err:
        raise RawFormatError(f"{Path(path).name} is not a valid gzip file ({err or 'truncated'})") from None


def parse_idx(data: bytes, name: str = "IDX data") -> np.ndarray:
    """Decode IDX bytes into a native-endian array; RawFormatError names what is wrong."""
    if len(data) < 4:
        raise RawFormatError(f"{name} is not an IDX file: only {len(data)} bytes")
    if data[0] != 0 or data[1] != 0 or data[2] not in IDX_TYPES:
        raise RawFormatError(f"{name} is not an IDX file: magic number 0x{data[:4].hex()}")
    dtype, ndim = IDX_TYPES[data[2]], data[3]
    header = 4 + 4 * ndim
    if len(data) < header:
        raise RawFormatError(f"{name}: IDX header truncated ({len(data)} bytes, {ndim} dimensions)")
    dims = struct.unpack(f">{ndim}I", data[4:header])
    count = int(np.prod(dims, dtype=np.int64))
    if len(data) - header != count * dtype.itemsize:
        raise RawFormatError(
            f"{name}: IDX data has {len(data) - header} bytes, dimensions {list(dims)} need "
            f"{count * dtype.itemsize}"
        )
    array = np.frombuffer(data, dtype=dtype, count=count, offset=header).reshape(dims)
    return array.astype(dtype.newbyteorder("="))  # a writable, native-endian copy


def read_idx(path: Path) -> np.ndarray:
    """Read an IDX file (gzip-compressed when its name ends in .gz)."""
    path = Path(path)
    data = gunzip(path) if path.suffix == ".gz" else path.read_bytes()
    return parse_idx(data, path.name)


def idx_bytes(array: np.ndarray) -> bytes:
    """Encode an array as IDX bytes (the inverse of parse_idx)."""
    dtype = array.dtype.newbyteorder(">")
    if dtype not in _IDX_CODES:
        raise ValueError(f"IDX cannot hold dtype {array.dtype}")
    head = bytes([0, 0, _IDX_CODES[dtype], array.ndim]) + struct.pack(f">{array.ndim}I", *array.shape)
    return head + np.ascontiguousarray(array, dtype=dtype).tobytes()


def gzip_bytes(data: bytes, inner_name: str, level: int = 6) -> bytes:
    """gzip ``data`` reproducibly: fixed mtime 0 and the given inner file name."""
    buf = io.BytesIO()
    with gzip.GzipFile(filename=inner_name, mode="wb", fileobj=buf, mtime=0, compresslevel=level) as gz:
        gz.write(data)
    return buf.getvalue()


def read_tar_members(archive: Path, names: Collection[str]) -> dict[str, bytes]:
    """The bytes of the regular files called ``names`` in a tar archive (any compression).

    A leading ``./`` of a member name is ignored; other members are skipped without being read.
    RawFormatError when the archive is unreadable or a named member is missing.
    """
    archive = Path(archive)
    wanted, found = set(names), {}
    try:
        with tarfile.open(archive, "r:*") as tar:
            for member in tar:
                name = member.name.removeprefix("./")
                if name in wanted and member.isfile():
                    handle = tar.extractfile(member)
                    found[name] = handle.read() if handle else b""
    except (tarfile.TarError, EOFError, zlib.error, OSError) as err:
        raise RawFormatError(f"{archive.name} is not a readable tar archive ({err or 'truncated'})") from None
    missing = sorted(wanted - set(found))
    if missing:
        raise RawFormatError(f"{archive.name} lacks {', '.join(missing)}")
    return found


def tar_add(tar: tarfile.TarFile, name: str, data: bytes | None = None) -> None:
    """Add a file (or a folder when data is None) with fixed metadata, for reproducible bytes."""
    info = tarfile.TarInfo(name)
    info.mtime, info.uid, info.gid, info.uname, info.gname = 1_300_000_000, 0, 0, "", ""
    if data is None:
        info.type, info.mode = tarfile.DIRTYPE, 0o755
        tar.addfile(info)
    else:
        info.size, info.mode = len(data), 0o644
        tar.addfile(info, io.BytesIO(data))
