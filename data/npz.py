"""A byte-reproducible .npz writer.

numpy.savez stamps every member with the current time, so the same arrays written twice give
different bytes, and the runs' dataset hash (arrays_sha256) would change with every prepare.
This writer fixes the timestamps and member order; numpy.load reads the result as usual.
"""

from __future__ import annotations

import zipfile
from collections.abc import Mapping
from pathlib import Path

import numpy as np

# What a prepare function returns besides its meta: arrays.npz members by key (x_train, y_test, ...).
Arrays = dict[str, np.ndarray]

_EPOCH = (1980, 1, 1, 0, 0, 0)  # the earliest time a zip entry can carry


def write_npz(path: Path, arrays: Mapping[str, np.ndarray]) -> None:
    """Write ``arrays`` as an uncompressed .npz (members sorted by name, fixed timestamps).

    Uncompressed because every training run loads the file and inflating costs more than the
    disk it saves.
    """
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        for key in sorted(arrays):
            info = zipfile.ZipInfo(f"{key}.npy", date_time=_EPOCH)
            info.external_attr = 0o644 << 16
            with zf.open(info, "w", force_zip64=True) as fh:
                np.lib.format.write_array(fh, np.ascontiguousarray(arrays[key]), allow_pickle=False)
