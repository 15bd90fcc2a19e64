"""Where raw and prepared data live under a data root (default ``data/`` in the repo).

<root>/raw/<dataset>/                  downloaded files, each sha256-verified
<root>/raw/digests.local.json          sha256s recorded on first download (data/digests.py; not in git)
<root>/synthetic/raw/<dataset>/        synthetic files in the same formats
<root>/prepared/<dataset>[-synthetic]/ arrays.npz + meta.json (bench.prepared.prepared_dir)
"""

from __future__ import annotations

from pathlib import Path

from bench.prepared import check_source, prepared_dir

DEFAULT_ROOT = Path("data")

__all__ = ["DEFAULT_ROOT", "prepared_dir", "raw_dir"]


def raw_dir(root: Path, dataset: str, source: str = "real") -> Path:
    """Folder of a dataset's raw files: <root>/raw/<dataset> or <root>/synthetic/raw/<dataset>."""
    check_source(source)
    base = Path(root) if source == "real" else Path(root) / "synthetic"
    return base / "raw" / dataset
