"""Paper-era locks (DLBench Table 2): every pin resolves on the package index to a real file for
CPython 3.6 / manylinux1 x86_64, whose sha256 is the lock's; what the index does not carry is
written in versions.lock with where it comes from. Needs the package index (slow); nothing is
installed or downloaded beyond metadata (pip --dry-run --no-deps --report)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from images import lockfile

REPO = Path(__file__).resolve().parents[2]
TABLE_2 = {"tensorflow": {"tensorflow": "1.11.0"}, "keras": {"keras": "2.2.4", "tensorflow": "1.11.0"},
           "mxnet": {"mxnet": "1.3.0"}, "theano": {"theano": "1.0.2"}, "chainer": {"chainer": "4.5.0"}}


def _lock(fw: str) -> dict[str, dict]:
    return lockfile.parse_lock((REPO / "images" / fw / "paper" / "requirements.txt").read_text())


@pytest.mark.parametrize("fw", sorted(TABLE_2))
def test_paper_lock_pins_table_2_versions(fw):
    pins = _lock(fw)
    for name, version in TABLE_2[fw].items():
        assert pins[name]["version"] == version
        assert len(pins[name]["sha256"]) == 1, "one file per pin: the one for CPython 3.6 / manylinux1"


def test_torch_0_4_1_is_external_and_versions_lock_says_where_from():
    assert "torch" not in _lock("pytorch") if (REPO / "images/pytorch/paper/requirements.txt").exists() else True
    lock = tomllib.loads((REPO / "versions.lock").read_text())
    assert "download.pytorch.org" in lock["images"]["pytorch/paper/cpu"]["sources"]
    for fw in ("tensorflow", "mxnet", "chainer"):
        assert lock["images"][f"{fw}/paper/cpu"]["sources"], f"{fw}: where the GPU build's CUDA comes from"


@pytest.mark.slow
@pytest.mark.parametrize("fw", sorted(TABLE_2) + ["pytorch"])
def test_every_paper_pin_resolves_with_the_locked_sha256(fw):
    pins = _lock(fw)
    _, sdists, _ = lockfile.paper_pins(fw)
    sdist_names = {s.split("==")[0] for s in sdists}
    wheels = [f"{n}=={p['version']}" for n, p in sorted(pins.items()) if n not in sdist_names]
    found = lockfile.pip_report(wheels, with_deps=False) if wheels else []
    for sdist in sorted(sdist_names):
        found += lockfile.pip_report([f"{sdist}=={pins[sdist]['version']}"], with_deps=False, binary_only=False)
    resolved = {item["name"]: item for item in found}
    assert set(resolved) == set(pins)
    for name, pin in pins.items():
        item = resolved[name]
        assert item["version"] == pin["version"]
        assert [item["sha256"]] == pin["sha256"], f"{name}: the index's file is not the locked one"
        assert item["url"].endswith(".whl") or name in sdist_names, f"{name} must be a wheel for cp36 manylinux1"
