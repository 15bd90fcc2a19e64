"""Paper-era locks (DLBench Table 2) checked against the package index's own metadata, not through the
resolver that wrote them: every locked file is found by its sha256 in the index's PEP 691 listing, and
its requires-python and wheel tags must admit CPython 3.6.15 on manylinux1/manylinux2010 x86_64
(images/indexcheck.py). The slow tests read the index over the network; the fast ones check the check
on listings made here, and what the locks must hold (Table 2 versions, psutil, pip 21.3.1 first)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from images import build as images
from images import external, indexcheck, lockfile

REPO = Path(__file__).resolve().parents[2]
PAPER = REPO / "images"
TABLE_2 = {"tensorflow": {"tensorflow": "1.11.0"}, "keras": {"keras": "2.2.4", "tensorflow": "1.11.0"},
           "mxnet": {"mxnet": "1.3.0"}, "theano": {"theano": "1.0.2"}, "chainer": {"chainer": "4.5.0"},
           "pytorch": {"torch": "0.4.1"}}
GPU_BUILDS = {"tensorflow": ("tensorflow-gpu", "9.0"), "keras": ("tensorflow-gpu", "9.0"),
              "mxnet": ("mxnet-cu90", "9.0"), "chainer": ("cupy-cuda92", "9.2"), "pytorch": ("torch", "9.2")}
# The GPU builds of Table 2's packages, where the package index names them apart.
GPU_NAMES = {"tensorflow": "tensorflow-gpu", "mxnet": "mxnet-cu90"}
LOCKS = indexcheck.paper_locks(PAPER)
# absl-py 2.5.0 is what the pip 23.2 resolution locked for TensorFlow 1.11: its only wheel requires Python >= 3.10.
ABSL_2_5_0 = "0f17b89f2a4eaaedc4f28c622998aa690564b3012a396a4ffad0821007fe03ba"
NUMPY_1_19_5_CP38 = "012426a41bc9ab63bb158635aecccc7610e3eff5d31d1eb43bc099debc979d94"


def _pins(path: Path) -> dict[str, dict]:
    text = path.read_text()
    pins = lockfile.parse_lock(text)
    pins |= {p.name: {"version": p.version, "sha256": []} for p in external.pins_of(text)}
    return pins


@pytest.mark.parametrize("fw", sorted(TABLE_2))
def test_paper_locks_pin_table_2_versions_with_psutil_and_one_file_each(fw):
    for variant in ("cpu", "gpu") if fw in GPU_BUILDS else ("cpu",):
        spec = images.ImageSpec(fw, "paper", variant)
        spec.check()
        pins = _pins(spec.lock)
        for name, version in TABLE_2[fw].items():
            name = GPU_NAMES.get(name, name) if variant == "gpu" else name
            assert pins[name]["version"] == version, (spec.lock, name)
        assert "psutil" in pins, f"{spec.lock}: the in-container monitor needs psutil"
        assert all(len(p["sha256"]) == 1 for n, p in pins.items() if n != "torch"), "one file per pin"


@pytest.mark.parametrize("fw", sorted(TABLE_2))
def test_every_paper_folder_installs_pip_21_3_1_first_and_builds_sdists_without_isolation(fw):
    folder = PAPER / fw / "paper"
    tools = lockfile.parse_lock((folder / "build-requirements.txt").read_text())
    assert tools["pip"]["version"] == "21.3.1", "pip >= 19 installs psutil's manylinux2010 wheel; 21.3.1 is 3.6's last"
    sdists = {s.split("==")[0] for v in ("cpu", "gpu") if (folder / lockfile.PINS_FILES[v]).is_file()
              for s in lockfile.paper_pins(fw, v).sdists}
    args = folder / "pip-install-args"
    assert ("--no-build-isolation" in args.read_text() if args.is_file() else False) == bool(sdists)
    staged = images.lock_files(images.ImageSpec(fw, "paper"))
    assert staged["build-requirements.txt"] == folder / "build-requirements.txt"


def test_sdists_are_the_ones_pins_in_marks():
    assert {fw: [s for v in ("cpu",) for s in lockfile.paper_pins(fw, v).sdists] for fw in TABLE_2} == {
        "tensorflow": ["termcolor==1.1.0"], "keras": ["termcolor==1.1.0"], "mxnet": [], "pytorch": [],
        "chainer": ["chainer==4.5.0"], "theano": ["theano==1.0.2"]}
    keras = _pins(PAPER / "keras" / "paper" / "requirements.txt")
    assert keras["termcolor"]["version"] == "1.1.0" and keras["h5py"]["version"].startswith("2.")


@pytest.mark.parametrize("fw", sorted(GPU_BUILDS))
def test_gpu_locks_state_the_cuda_they_carry_next_to_what_the_paper_says(fw):
    package, cuda = GPU_BUILDS[fw]
    spec = images.ImageSpec(fw, "paper", "gpu")
    assert package in _pins(spec.lock)
    assert images.cuda_of_lock(spec.lock.read_text()) == cuda
    assert images.labels(spec, None)["org.dlrepro.cuda"] == cuda
    entry = tomllib.loads(lockfile.LOCK_FILE.read_text())["images"][f"{fw}/paper/gpu"]
    assert entry["cuda"] == cuda and entry["paper_says"] == "CUDA 10.0, cuDNN 7.3" and entry["sources"]
    cpu = tomllib.loads(lockfile.LOCK_FILE.read_text())["images"][f"{fw}/paper/cpu"]
    assert cpu["cuda"] == "none"


def test_torch_0_4_1_is_external_per_build_and_versions_lock_says_where_from():
    cpu = external.pins_of((PAPER / "pytorch" / "paper" / "requirements.txt").read_text())
    gpu = external.pins_of((PAPER / "pytorch" / "paper" / "requirements-gpu.txt").read_text())
    assert [p.path for p in cpu] == ["cpu/torch-0.4.1-cp36-cp36m-linux_x86_64.whl"]
    assert [p.path for p in gpu] == ["cu92/torch-0.4.1-cp36-cp36m-linux_x86_64.whl"]
    lock = tomllib.loads(lockfile.LOCK_FILE.read_text())
    torch = lock["images"]["pytorch/paper/cpu"]["packages"]["torch"]
    assert torch["version"] == "0.4.1" and torch["sha256"] == [] and "first use" in torch["external"]
    assert "download.pytorch.org" in lock["images"]["pytorch/paper/gpu"]["sources"]


def test_base_is_the_last_buster_build_with_its_provenance():
    lock = tomllib.loads(lockfile.LOCK_FILE.read_text())["base"]["paper"]
    assert lock["image"] == ("python:3.6.15-slim-buster@sha256:"
                             "e10aa83604948c6d8d9f72a9a20193d84bb2dbe550b725eb5208387117fde065")
    assert lock["python"].startswith("3.6.15") and "public Dockerfiles" in lock["provenance"]
    assert "archive of retired releases" in lock["apt_source"]
    theano = tomllib.loads(lockfile.LOCK_FILE.read_text())["images"]["theano/paper/cpu"]["apt"]
    assert theano == {"buster": ["g++=4:8.3.0-1", "libopenblas-dev=0.3.5+ds-3"],
                      "bullseye": ["g++=4:10.2.1-1", "libopenblas-dev=0.3.13+ds-3+deb11u1"]}


# --- the check itself, on listings made here (no network) ----------------------------------------

def _file(filename: str, sha: str, requires: str | None = ">=3.6") -> dict:
    return {"filename": filename, "hashes": {"sha256": sha}, "requires-python": requires}


@pytest.mark.parametrize(("filename", "requires", "problem"), [
    ("absl_py-2.5.0-py3-none-any.whl", ">=3.10", "requires Python >=3.10"),
    ("numpy-1.19.5-cp38-cp38-manylinux1_x86_64.whl", ">=3.6", "does not install on CPython 3.6"),
    ("grpcio-1.48.2-cp36-cp36m-manylinux_2_17_x86_64.manylinux2014_x86_64.whl", None, "does not install"),
    ("numpy-1.19.4-cp36-cp36m-manylinux1_x86_64.whl", None, "is version 1.19.4, not 1.19.5"),
    ("psutil-7.2.2-cp36-abi3-manylinux2010_x86_64.manylinux_2_12_x86_64.manylinux_2_28_x86_64.whl", ">=3.6", None),
    ("mxnet-1.3.0-py2.py3-none-manylinux1_x86_64.whl", None, None),
    ("termcolor-1.1.0.tar.gz", None, None),
])
def test_check_file_reads_requires_python_tags_and_version(filename, requires, problem):
    version = filename.split("-")[1] if "1.19.4" not in filename else "1.19.5"
    version = version.removesuffix(".tar.gz")
    found = indexcheck.check_file("x", version, "a" * 64, [_file(filename, "a" * 64, requires)],
                                  indexcheck.supported_tags())
    assert (found.problem is None) if problem is None else (problem in found.problem), found
    assert found.sdist == filename.endswith(".tar.gz")


def test_check_file_fails_when_no_file_has_the_locked_sha256():
    found = indexcheck.check_file("six", "1.17.0", "b" * 64, [_file("six-1.17.0-py2.py3-none-any.whl", "c" * 64)],
                                  indexcheck.supported_tags())
    assert found.problem == f"no file of six on the index has sha256 {'b' * 64}"


def test_index_url_comes_from_pip_not_from_this_repository(monkeypatch):
    monkeypatch.setenv("PIP_INDEX_URL", "https://index.example/simple/ https://other.example/simple")
    assert indexcheck.index_url() == "https://index.example/simple"
    monkeypatch.delenv("PIP_INDEX_URL")
    assert indexcheck.index_url().startswith("http")


# --- against the index (slow: network) -------------------------------------------------------------

@pytest.fixture(scope="module")
def index():
    return indexcheck.Index(indexcheck.index_url())


@pytest.mark.slow
@pytest.mark.parametrize("lock", LOCKS, ids=lambda p: f"{p.parent.parent.name}-{p.name}")
def test_every_paper_pin_is_a_file_cpython_3_6_installs(index, lock):
    findings = indexcheck.check_lock(lock, index)
    assert findings and [f"{f.name}=={f.version}: {f.problem}" for f in findings if f.problem] == []
    fw = lock.parent.parent.name
    variant = "gpu" if lock.name == "requirements-gpu.txt" else "cpu"
    expected = [] if lock.name == "build-requirements.txt" else lockfile.paper_pins(fw, variant).sdists
    assert sorted(f"{f.name}=={f.version}" for f in findings if f.sdist) == sorted(expected)


@pytest.mark.slow
def test_the_check_fails_on_a_planted_pin(index, tmp_path):
    lock = tmp_path / "requirements.txt"
    text = (PAPER / "tensorflow" / "paper" / "requirements.txt").read_text()
    absl = lockfile.parse_lock(text)["absl-py"]
    text = text.replace(f"absl-py=={absl['version']} \\\n    --hash=sha256:{absl['sha256'][0]}",
                        f"absl-py==2.5.0 \\\n    --hash=sha256:{ABSL_2_5_0}")
    numpy = lockfile.parse_lock(text)["numpy"]
    text = text.replace(f"numpy=={numpy['version']} \\\n    --hash=sha256:{numpy['sha256'][0]}",
                        f"numpy==1.19.5 \\\n    --hash=sha256:{NUMPY_1_19_5_CP38}")
    lock.write_text(text)
    bad = {f.name: f.problem for f in indexcheck.check_lock(lock, index) if f.problem}
    assert bad == {"absl-py": "absl_py-2.5.0-py3-none-any.whl requires Python >=3.10",
                   "numpy": "numpy-1.19.5-cp38-cp38-manylinux1_x86_64.whl does not install on CPython 3.6 / "
                            "manylinux1 or manylinux2010 x86_64"}
