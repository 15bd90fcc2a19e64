"""bench/blas.py: the BLAS and OpenMP libraries a run's process really loaded, read from that process.

Every check runs a real process that does real BLAS work, and holds its record against what the
kernel says the process had mapped (/proc/<pid>/maps, read from outside by the test) and, where one
exists, against the library's own account (NumPy's build configuration). The slow test here holds a
BLAS linked into a framework's own library to that framework's account; the real runs at two different
BLAS are in tests/bench/test_blas_backends.py.
"""

import ctypes.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from bench import blas
from images import envs
from tests.procmaps import maps_lines

REPO = Path(__file__).resolve().parents[2]
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


def _child_maps(*args: str, threads: int = 1, coretype: str | None = None) -> tuple:
    """(bench.blas's record, the file of each mapping in its /proc/<pid>/maps) of a child running CHILD
    (OPENBLAS_CORETYPE=`coretype` where given: the kernel a DYNAMIC_ARCH OpenBLAS is told to use)."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "OPENBLAS_NUM_THREADS": str(threads)}
    if coretype is not None:
        env["OPENBLAS_CORETYPE"] = coretype
    proc = subprocess.Popen([sys.executable, "-c", CHILD, *args], cwd=REPO, env=env, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        line = proc.stdout.readline()
        assert line, proc.stderr.read()
        mapped = maps_lines(proc.pid)  # read while the child waits: after it printed its record
        proc.stdin.write("\n")
        proc.stdin.flush()
        assert proc.wait(timeout=60) == 0, proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
    return json.loads(line), mapped


def _child_record(*args: str, threads: int = 1, coretype: str | None = None) -> tuple:
    """(bench.blas's record, the set of files its /proc/<pid>/maps held) of a child running CHILD with `args`."""
    record, lines = _child_maps(*args, threads=threads, coretype=coretype)
    return record, set(lines)


# OpenBLAS's x86-64 kernels that use AVX-512 (driver/others/dynamic.c): a DYNAMIC_ARCH build picks one
# only on a CPU whose flags include avx512f.
AVX512_KERNELS = {"skylakex", "cooperlake", "sapphirerapids"}


def _cpu_flags() -> set:
    """This CPU's feature flags, as the kernel lists them."""
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def _dynamic_arch(numpy_blas: dict) -> bool:
    """Whether NumPy's OpenBLAS picks its kernel at load time (from the CPU or OPENBLAS_CORETYPE)."""
    return "DYNAMIC_ARCH" in numpy_blas["openblas configuration"].split()


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
    kernel = entry["architecture"]
    if not _dynamic_arch(numpy_blas):  # one kernel, fixed at build time: the configuration names it
        assert kernel and kernel in numpy_blas["openblas configuration"]
    elif os.environ.get("OPENBLAS_CORETYPE"):  # told which kernel to use
        assert kernel.lower() == os.environ["OPENBLAS_CORETYPE"].lower()
    else:
        # Chosen from this CPU at load time; the configuration names only the build's default target
        # (e.g. Haswell), which an AVX-512 CPU does not run.
        assert kernel and (kernel.lower() not in AVX512_KERNELS or "avx512f" in _cpu_flags()), kernel
    assert entry["num_threads"] == 1 and entry["threading_layer"] in ("pthreads", "openmp", "sequential")


def test_the_kernel_recorded_is_the_one_openblas_chose_in_that_process():
    # Sandybridge's kernels need AVX alone, which every x86-64 CPU NumPy's wheels run on has: told to
    # use them, the process's OpenBLAS reports them, whatever this machine's CPU would have chosen.
    if not _dynamic_arch(np.__config__.CONFIG["Build Dependencies"]["blas"]) or "avx" not in _cpu_flags():
        pytest.skip("NumPy's OpenBLAS has one kernel fixed at build time (no DYNAMIC_ARCH), or no AVX here")
    record, _ = _child_record(coretype="Sandybridge")
    assert [lib["architecture"] for lib in record if lib["kind"] == "blas"] == ["Sandybridge"]


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
    monkeypatch.delitem(sys.modules, "mxnet", raising=False)
    assert blas.library_settings() == {}


# -- real runs (slow; Theano's and TensorFlow's switches run in tests/bench/test_blas_backends.py) -----------
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


def test_run_json_names_the_files_of_the_runs_environment_relative_to_it():
    from bench import entrypoint

    x = np.ones((64, 64))
    assert (x @ x)[0, 0] == 64  # NumPy's OpenBLAS, a file of this environment, is loaded
    environment: dict = {}
    entrypoint.record_libraries(environment)
    paths = [lib["filepath"] for lib in environment["libraries"]]
    inside = [p for p in paths if p.startswith(blas.ENV_PREFIX + "/")]
    assert inside and not any(os.path.realpath(sys.prefix) in p for p in paths), paths
    assert all(os.path.isfile(blas.host_path(p, sys.prefix)) for p in paths)  # each names the file it was
    assert blas.host_path("/usr/lib/libgomp.so.1", sys.prefix) == "/usr/lib/libgomp.so.1"  # the system's: as is


# A child that multiplies through NumPy and prints what bench.blas reads (its OpenBLAS printed its core at load).
NUMPY_CHILD = ("import json, numpy as np; x = np.ones((64, 64)); assert (x @ x)[0, 0] == 64; "
               "from bench import blas; print(json.dumps(blas.loaded_libraries()))")


def _core_said_and_recorded(python: str) -> tuple:
    """(the core NumPy's OpenBLAS says it chose, OPENBLAS_VERBOSE=2's 'Core: <name>' line; the BLAS entries
    bench.blas recorded) of a child on `python`."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "OPENBLAS_VERBOSE": "2"}
    env.pop("OPENBLAS_CORETYPE", None)
    proc = subprocess.run([python, "-c", NUMPY_CHILD], cwd=REPO, capture_output=True, text=True, timeout=300,
                          env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    said = [line.split(":", 1)[1].strip() for line in proc.stderr.splitlines() if line.startswith("Core:")]
    return said, [lib for lib in json.loads(proc.stdout.strip().splitlines()[-1]) if lib["kind"] == "blas"]


def test_the_core_recorded_is_the_one_numpys_openblas_says_it_chose():
    said, found = _core_said_and_recorded(sys.executable)
    if not said:
        pytest.skip("NumPy's OpenBLAS has one kernel fixed at build time (it prints no 'Core:' line)")
    assert [lib["architecture"] for lib in found] == said, (found, said)
    kernel = said[0].lower()
    assert kernel not in AVX512_KERNELS or "avx512f" in blas.cpu_flags()  # the CPU features it was chosen by


@pytest.mark.slow
def test_the_core_is_read_from_numpy_1s_openblas_in_a_framework_environment():
    """Chainer's environment holds NumPy 1.26, whose bundled OpenBLAS names its calls with the '64_' suffix
    (NumPy 2's with the 'scipy_' prefix too): the record reads the core there as well."""
    said, found = _core_said_and_recorded(str(envs.ensure_env("chainer").python))
    assert [os.path.basename(lib["filepath"]).startswith("libopenblas64_") for lib in found] == [True], found
    if said:
        assert [lib["architecture"] for lib in found] == said
    assert found[0]["architecture"], found


def test_cpu_flags_are_the_kernel_choosing_ones_of_the_first_processor_in_order(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu avx512f sse4_2 avx2 fma avx mmx\n\n"
                       "processor\t: 1\nflags\t\t: fpu sse4_2\n")
    assert blas.cpu_flags(str(cpuinfo)) == ["sse4_2", "avx", "fma", "avx2", "avx512f"]
    assert blas.cpu_flags(str(tmp_path / "absent")) is None  # not Linux: unknown, not 'none'
    here = _cpu_flags()
    assert blas.cpu_flags() == [flag for flag in blas.KERNEL_FLAGS if flag in here]


def test_the_openblas_version_is_read_only_where_its_config_line_names_one():
    assert blas.openblas_version("OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Haswell MAX_THREADS=64") == "0.3.21"
    # OpenBLAS 0.3.0.dev in the paper era's NumPy 1.14.6 wheel (its real line, read in the paper-era MXNet image):
    # no version, so none is recorded (its second word once was, as 'NO_AFFINITY').
    assert blas.openblas_version("DYNAMIC_ARCH NO_AFFINITY Barcelona MAX_THREADS=64") is None
