"""Raw file formats the datasets are published in: reading (strictly) and writing.

IDX (MNIST): a 4-byte magic ``00 00 <type> <ndim>``, ``ndim`` big-endian uint32 sizes, then the
values, big-endian, row-major. Usually gzip-compressed. http://yann.lecun.com/exdb/mnist/
"""

from __future__ import annotations

import gzip
import io
import struct
import zlib
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
