"""python -m data (data/__main__.py): advice that works, and a full disk or a read-only data root in one line."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from bench.errors import UsageError
from data.__main__ import main
from data.paths import prepared_dir, raw_dir
from data.prepare import prepare
from tests.mountspace import MountSpace, digests

REPO = Path(__file__).resolve().parents[2]
IMAGES = "train-images-idx3-ubyte.gz"
SMALL = ["--datasets", "mnist", "--size", "mnist=60:20", "-q"]
AGAIN = "then run the same command again (finished work is kept)"


def test_following_the_advice_for_a_damaged_synthetic_file_recovers(tmp_path, capsys):
    # b68cc0f: synthetic.json still vouched for the deleted file, so the advised command said "is missing"
    # again and again.
    args = ["synthetic", "--root", str(tmp_path), *SMALL]
    assert main(args) == 0
    prepared, raw = prepared_dir(tmp_path, "mnist", "synthetic"), raw_dir(tmp_path, "mnist", "synthetic")
    before = digests(prepared)
    (raw / IMAGES).write_bytes(b"not a gzip file")
    with pytest.raises(UsageError) as advice:
        prepare("mnist", raw, prepared, source="synthetic", progress=False)
    assert advice.value.fix == f"delete the file named above from {raw} and run 'python -m data synthetic " \
                               "--datasets mnist'"
    (raw / IMAGES).unlink()
    assert main(args) == 0
    assert "error" not in capsys.readouterr().err
    assert digests(prepared) == before


def test_a_damaged_synthetic_file_is_written_again_by_the_same_command(tmp_path):
    args = ["synthetic", "--root", str(tmp_path), *SMALL]
    assert main(args) == 0
    prepared, raw = prepared_dir(tmp_path, "mnist", "synthetic"), raw_dir(tmp_path, "mnist", "synthetic")
    before, raw_before = digests(prepared), digests(raw)
    (raw / IMAGES).write_bytes(b"not a gzip file")
    assert main(args) == 0
    assert (digests(prepared), digests(raw)) == (before, raw_before)


def test_a_full_disk_is_one_line_naming_the_folder_and_keeps_what_was_prepared(tmp_path):
    # A real 2 MiB file system: the small MNIST fits, a larger one does not.
    with MountSpace() as mountspace:
        root = tmp_path / "disk"
        root.mkdir()
        mountspace.tmpfs(root, "2m")
        data = root / "data"
        command = [sys.executable, "-m", "data", "synthetic", "--root", data, "--datasets", "mnist", "-q"]
        first = mountspace.run(*command, "--size", "mnist=60:20", cwd=REPO)
        assert first.returncode == 0, first.stderr
        prepared = mountspace.path(prepared_dir(data, "mnist", "synthetic"))
        before = digests(prepared)
        proc = mountspace.run(*command, "--size", "mnist=20000:2000", cwd=REPO)
        assert proc.returncode == 2
        images = raw_dir(data, "mnist", "synthetic") / IMAGES
        assert proc.stderr == (f"error: no space left on the device holding {images}; free some space there (df -h "
                               f"shows it), {AGAIN}\n")
        assert digests(prepared) == before
        assert not [p for p in mountspace.path(data).rglob("*") if p.name.endswith((".tmp", ".partial"))]


def test_a_read_only_data_root_is_one_line_naming_the_folder(tmp_path):
    with MountSpace() as mountspace:
        data = tmp_path / "data"
        data.mkdir()
        mountspace.read_only(data)
        proc = mountspace.run(sys.executable, "-m", "data", "synthetic", "--root", data, *SMALL, cwd=REPO)
        assert proc.returncode == 2
        assert proc.stderr == (f"error: {data / 'synthetic'} is on a read-only file system; make it writable or "
                               f"work in a writable copy, {AGAIN}\n")
        assert list(data.iterdir()) == []


def test_a_folder_this_user_may_not_write_is_one_line_naming_it():
    # Root writes anywhere: the command runs as nobody, on a folder root owns (mode 755).
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("needs root and util-linux's setpriv to run the command as another user")
    def as_nobody(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, *argv],
                              cwd=REPO, capture_output=True, text=True, timeout=120,
                              env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})

    if as_nobody("-c", "import data, numpy").returncode != 0:
        pytest.skip("this Python or the checkout is not readable by another user here")
    top = Path(tempfile.mkdtemp(prefix="dlrepro-eacces-"))
    try:
        top.chmod(0o755)
        data = top / "data"
        data.mkdir(mode=0o755)
        proc = as_nobody("-m", "data", "synthetic", "--root", str(data), *SMALL)
        assert proc.returncode == 2
        assert proc.stderr == (f"error: permission denied: {data / 'synthetic'}; give this user access to it (chown "
                               f"or chmod), {AGAIN}\n")
        assert list(data.iterdir()) == []
    finally:
        shutil.rmtree(top)
