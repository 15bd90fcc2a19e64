"""bench/blas.py: the BLAS and OpenMP libraries a run's process really loaded, read from that process.

Every check runs a real process that does real BLAS work, and holds its record against what the
kernel says the process had mapped (/proc/<pid>/maps, read from outside by the test) and, where one
exists, against the library's own account (NumPy's build configuration). The slow tests run the
entrypoint for real: two Theano runs whose THEANO_FLAGS blas.ldflags name two different BLAS
(Debian's OpenBLAS and Debian's reference BLAS) must record two different libraries.
"""

import ctypes.util
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from bench import blas, request, schema
from campaign import plan
from campaign.runners.local import LocalRunner
from images import envs

REPO = Path(__file__).resolve().parents[2]
# Debian's reference BLAS (libblas3 + libblas-dev), beside OpenBLAS (libopenblas-dev) in its own folder.
REFERENCE_BLAS_DIR = Path("/usr/lib/x86_64-linux-gnu/blas")
# A child process: load the BLAS files named in argv through ctypes and multiply with each, multiply through
# NumPy (and SciPy's BLAS wrappers with --scipy), map the files after --data as plain data, print what
# bench.blas reads, then wait until the test has read its /proc/<pid>/maps.
CHILD = textwrap.dedent("""
    import ctypes, json, mmap, sys
    import numpy as np
    args = sys.argv[1:]
    data_files = args[args.index("--data") + 1:] if "--data" in args else []
    n = 32
    a = (ctypes.c_double * (n * n))(*([1.0] * (n * n)))
    c = (ctypes.c_double * (n * n))()
    for path in args[:args.index("--data")] if "--data" in args else args:
        if path == "--scipy":
            import scipy.linalg.blas
            scipy.linalg.blas.dgemm(1.0, np.ones((n, n)), np.ones((n, n)))
            continue
        lib = ctypes.CDLL(path)
        one, zero = ctypes.c_double(1.0), ctypes.c_double(0.0)
        lib.cblas_dgemm(101, 111, 111, n, n, n, one, a, n, a, n, zero, c, n)  # row-major, no transpose
        assert c[0] == n, c[0]
    x = np.ones((64, 64))
    assert (x @ x)[0, 0] == 64
    files = [open(p, "rb") for p in data_files]
    held = [mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) for f in files]
    from bench import blas
    print(json.dumps(blas.loaded_libraries()), flush=True)
    sys.stdin.readline()
""")


def _maps_lines(pid: int) -> list:
    """The file of each mapping /proc/<pid>/maps shows in that process (a loaded library has several)."""
    with open(f"/proc/{pid}/maps") as fh:
        return [f[5].strip() for f in (line.split(None, 5) for line in fh) if len(f) == 6]


def _maps_paths(pid: int) -> set:
    """The files /proc/<pid>/maps shows mapped into that process."""
    return set(_maps_lines(pid))


def _child_maps(*args: str, threads: int = 1) -> tuple:
    """(bench.blas's record, the file of each mapping in its /proc/<pid>/maps) of a child running CHILD."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "OPENBLAS_NUM_THREADS": str(threads)}
    proc = subprocess.Popen([sys.executable, "-c", CHILD, *args], cwd=REPO, env=env, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        line = proc.stdout.readline()
        assert line, proc.stderr.read()
        mapped = _maps_lines(proc.pid)  # read while the child waits: after it printed its record
        proc.stdin.write("\n")
        proc.stdin.flush()
        assert proc.wait(timeout=60) == 0, proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
    return json.loads(line), mapped


def _child_record(*args: str, threads: int = 1) -> tuple:
    """(bench.blas's record, the set of files its /proc/<pid>/maps held) of a child running CHILD with `args`."""
    record, lines = _child_maps(*args, threads=threads)
    return record, set(lines)


def _debian_openblas() -> str:
    name = ctypes.util.find_library("openblas")
    if name is None:
        pytest.skip("Debian's OpenBLAS is not installed (apt-get install libopenblas-dev)")
    return name


def _blas(record: list) -> dict:
    """{filepath: entry} of the BLAS entries of a record."""
    return {lib["filepath"]: lib for lib in record if lib["kind"] == "blas"}


def test_a_process_records_the_blas_numpy_loaded_as_numpy_and_the_kernel_see_it():
    record, mapped = _child_record(threads=1)
    found = _blas(record)
    assert found, record
    assert set(found) <= mapped  # every recorded file was mapped into that process
    (path, entry), = found.items()  # NumPy's bundled OpenBLAS, and nothing else
    assert entry["api"] == "openblas" and "numpy.libs" in path
    numpy_blas = np.__config__.CONFIG["Build Dependencies"]["blas"]  # NumPy's own account of its build
    assert entry["version"] == numpy_blas["version"]
    assert entry["architecture"] and entry["architecture"] in numpy_blas["openblas configuration"]
    assert entry["num_threads"] == 1 and entry["threading_layer"] in ("pthreads", "openmp", "sequential")


def test_the_number_of_threads_is_read_from_the_library_not_the_request():
    record, _ = _child_record(threads=2)
    assert [lib["num_threads"] for lib in record if lib["api"] == "openblas"] == [2]


def test_two_processes_with_different_blas_record_different_libraries():
    debian = _debian_openblas()
    plain, _ = _child_record()
    both, mapped = _child_record(debian)
    added = set(_blas(both)) - set(_blas(plain))
    assert len(added) == 1, (plain, both)
    path = added.pop()
    assert path in mapped and "numpy.libs" not in path and path.startswith("/usr/lib")
    assert _blas(both)[path]["api"] == "openblas" and _blas(both)[path]["version"]


def test_a_blas_file_mapped_as_data_is_not_recorded_nor_loaded():
    debian = _debian_openblas()
    path = os.path.realpath(next(p for p in ("/usr/lib/x86_64-linux-gnu/" + debian, "/usr/lib/" + debian)
                                 if os.path.exists(p)))
    record, mapped = _child_maps("--data", path)
    assert mapped.count(path) == 1  # the kernel lists the one data mapping, and reading loaded nothing
    assert path not in _blas(record)  # it was never dlopen'ed: no BLAS of the run


def test_an_extension_module_that_reaches_blas_through_its_dependencies_is_no_blas():
    pytest.importorskip("scipy")
    record, mapped = _child_record("--scipy")
    names = [os.path.basename(p) for p in mapped]
    assert any("cython_blas" in n or "_fblas" in n for n in names)  # SciPy's wrappers were mapped
    recorded = [os.path.basename(p) for p in _blas(record)]
    assert not [n for n in recorded if ".cpython-" in n], recorded
    assert any("scipy.libs" in p for p in _blas(record)), record  # the OpenBLAS SciPy bundles


def test_libraries_off_the_list_of_names_are_not_read(tmp_path):
    maps = tmp_path / "maps"
    libm = next(p for p in blas.mapped_files() if os.path.basename(p).startswith("libm."))  # this process's
    maps.write_text(f"7f0000000000-7f0000001000 r-xp 00000000 08:01 1 {libm}\n"
                    "7f0000002000-7f0000003000 r-xp 00000000 08:01 2 /nonexistent/libopenblas.so.0\n")
    assert blas.loaded_libraries(str(maps)) == []  # libm is no BLAS; a file not loaded is not read
    assert blas.loaded_libraries(str(tmp_path / "absent")) is None  # no maps (not Linux): unknown


def test_the_onednn_switch_is_recorded_only_when_tensorflow_is_loaded(monkeypatch):
    monkeypatch.setenv("TF_ENABLE_ONEDNN_OPTS", "0")
    monkeypatch.delitem(sys.modules, "tensorflow", raising=False)
    assert blas.library_settings() == {}


# -- real runs (slow) ------------------------------------------------------------------------------
def _theano_request(tmp_path: Path) -> Path:
    """The request.json of a smoke run of Wu et al.'s Theano LeNet on synthetic MNIST, one thread."""
    subprocess.run([sys.executable, "-m", "data", "synthetic", "--root", str(tmp_path / "data"), "--datasets",
                    "mnist"], cwd=REPO, check=True)
    matrix = plan.Matrix(("theano",), ("wu-theano-lenet",), "cpu", "smoke", 1, "synthetic")
    runs = plan.plan(matrix, LocalRunner(), "blas", tmp_path / "results", tmp_path / "data", threads=1)
    request.write(tmp_path / "req", runs[0].request)
    return tmp_path / "req" / request.REQUEST_FILE


def _run_watched(python: Path, req: Path, out: Path, env: dict) -> set:
    """Run `python -m bench run` and return every file its /proc/<pid>/maps showed while it ran."""
    proc = subprocess.Popen([str(python), "-m", "bench", "run", "--request", str(req), "--out", str(out)],
                            cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO), **env},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seen = set()
    deadline = time.monotonic() + 900
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            seen |= _maps_paths(proc.pid)
        except (OSError, IndexError):  # between exit and reaping
            pass
        time.sleep(0.05)
    if proc.poll() is None:
        proc.kill()
    output = proc.communicate()[0]
    assert proc.returncode == 0, output[-3000:]
    return seen


@pytest.mark.slow
def test_two_theano_runs_with_different_blas_record_the_blas_each_loaded(tmp_path):
    if not (REFERENCE_BLAS_DIR / "libblas.so").exists():
        pytest.skip(f"Debian's reference BLAS is not installed in {REFERENCE_BLAS_DIR} (apt-get install libblas-dev)")
    _debian_openblas()
    req = _theano_request(tmp_path)
    python = envs.ensure_env("theano").python
    ldflags = {"openblas": "-lopenblas",  # the kit's default: Debian's OpenBLAS
               # Theano links with an rpath to each -L folder (THEANO_FLAGS is comma-separated: no -Wl here).
               "reference": f"-L{REFERENCE_BLAS_DIR} -lblas"}
    records, mapped = {}, {}
    for name, flags in ldflags.items():
        mapped[name] = _run_watched(python, req, tmp_path / name, {"THEANO_FLAGS": f"blas.ldflags={flags}"})
        records[name] = schema.read_run(tmp_path / name)  # validated on read
        assert records[name]["status"] == "ok", records[name]["failure"]
    found = {name: _blas(rec["environment"]["libraries"]) for name, rec in records.items()}
    for name in records:  # what each run recorded, its process had mapped
        assert set(found[name]) <= mapped[name], name
    # The system's BLAS beside the ones NumPy and SciPy bundle (site-packages/*.libs).
    (openblas_path, openblas), = [(p, lib) for p, lib in found["openblas"].items() if p.startswith("/usr/")]
    assert openblas["api"] == "openblas" and openblas["num_threads"] == 1  # the request's one thread
    reference = {p: lib for p, lib in found["reference"].items() if p.startswith(str(REFERENCE_BLAS_DIR) + "/")}
    assert [lib["api"] for lib in reference.values()] == ["other"]  # a BLAS that names itself as none we know
    assert not set(reference) & mapped["openblas"]  # the OpenBLAS run never loaded the reference BLAS
    # (The Theano module opens OpenBLAS to set its threads only when blas.ldflags links it: the reference run
    # loads none of the system's; tests/bench/test_blas_backends.py holds it to that.)


@pytest.mark.slow
def test_a_tensorflow_process_records_its_onednn_switch_apart_from_its_libraries():
    python = envs.ensure_env("tensorflow").python
    script = ("import json, tensorflow as tf; tf.matmul(tf.ones((64, 64)), tf.ones((64, 64))).numpy(); "
              "from bench import blas; print(json.dumps([blas.library_settings(), blas.loaded_libraries()]))")
    proc = subprocess.run([str(python), "-c", script], cwd=REPO, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(REPO), "TF_ENABLE_ONEDNN_OPTS": "0",
                               "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    settings, libraries = json.loads(proc.stdout.strip().splitlines()[-1])
    assert settings == {"TF_ENABLE_ONEDNN_OPTS": "0"}
    assert all(lib["kind"] in blas.KINDS for lib in libraries)


@pytest.mark.slow
def test_a_blas_linked_into_the_framework_is_recorded_as_the_framework_itself_reports_it():
    """PyTorch's CPU build links MKL into libtorch_cpu.so (no libmkl file is loaded): the record names MKL
    in that file, at the version PyTorch's own build configuration names."""
    python = envs.ensure_env("pytorch").python
    script = ("import json, torch; (torch.ones(64, 64) @ torch.ones(64, 64)).sum().item(); "
              "from bench import blas; print(json.dumps([torch.__config__.show(), blas.loaded_libraries()]))")
    proc = subprocess.run([str(python), "-c", script], cwd=REPO, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    config, libraries = json.loads(proc.stdout.strip().splitlines()[-1])
    mkl = [lib for lib in libraries if lib["api"] == "mkl"]
    assert [os.path.basename(lib["filepath"]) for lib in mkl] == ["libtorch_cpu.so"], libraries
    assert f"Math Kernel Library Version {mkl[0]['version']}" in config
