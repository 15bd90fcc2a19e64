"""The BLAS and OpenMP libraries this process has really loaded, read at run time.

Wu et al. compare BLAS libraries (OpenBLAS vs MKL, Eigen vs MKL for TensorFlow); a run can only be
put on either side if its record says which library did the work, so it is read from the process,
never assumed from settings or lock files: ``loaded_libraries()`` lists every shared library mapped
into this process (``/proc/self/maps``) that is an OpenMP runtime (by its name) or answers a BLAS's
own identifying call (ctypes, the way threadpoolctl does, without needing threadpoolctl: most framework
environments lack it): OpenBLAS (``openblas_get_config``, also with the ``scipy_`` prefix and ``64_``
suffix of NumPy's bundled builds), MKL (``MKL_Get_Version_String``), BLIS (``bli_info_get_version_str``);
a file named as a BLAS that exports gemm but none of those calls is a BLAS of ``api`` "other" (e.g.
Debian's reference BLAS; its file path says which). Every loaded library is asked, so a BLAS linked
statically into a framework's own library shows as that library when it exports the BLAS's calls
(PyTorch's libtorch_cpu answers as MKL); TensorFlow's Eigen and oneDNN export none, so for TensorFlow
``library_settings()`` records the oneDNN switch as the process saw it. A function counts only when it
lies in the file's own mapped addresses (a Python extension such as SciPy's ``cython_blas`` reaches
OpenBLAS's functions through its dependencies, but is no BLAS), and a file is only opened with
RTLD_NOLOAD, so reading never loads anything into the run.

Call it after the framework has trained: frameworks load their BLAS lazily. OpenBLAS names the kernels it
chose for this CPU (``architecture``: its core, e.g. Haswell, SkylakeX); ``cpu_flags()`` records the CPU's
instruction sets those choices are made by, so a time ratio between two runs can be read against both.

Linux only (``/proc``); elsewhere nothing is recorded. Standard library only, CPython 3.6-clean.
"""

import ctypes
import os
import re
import sys
from typing import Any, Dict, List, Optional, Tuple

MAPS = "/proc/self/maps"
KINDS = ("blas", "openmp")
# A file whose name holds one of these and that exports gemm is a BLAS even when it does not say which.
BLAS_NAMES = ("blas", "blis", "atlas")
# OpenMP runtimes by file name: GNU's, Intel's, LLVM's.
OPENMP_NAMES = (("libgomp", "gomp"), ("libiomp", "iomp"), ("libomp", "llvm"))
# NumPy >= 1.22 bundles OpenBLAS built with 64-bit integers ('64_' suffix), NumPy 2 with a 'scipy_' prefix too.
_AFFIXES = [(prefix, suffix) for prefix in ("", "scipy_") for suffix in ("", "64_")]
# Any CPU BLAS exports double-precision gemm, Fortran or C interface.
_GEMM = ("dgemm_", "cblas_dgemm")
_OPENBLAS_PARALLEL = {0: "sequential", 1: "pthreads", 2: "openmp"}
_MKL_LAYERS = {0: "intel", 1: "sequential", 2: "pgi", 3: "gnu", 4: "tbb", -1: "not specified"}
# Environment variables a loaded framework reads to pick its kernels (oneDNN on CPUs; cuDNN autotuning, the
# cudnn_autotune sweep: bench/switches.py): {module: (variable, ...)}.
SETTING_VARS = {"tensorflow": ("TF_ENABLE_ONEDNN_OPTS", "TF_CUDNN_USE_AUTOTUNE"),
                "mxnet": ("MXNET_CUDNN_AUTOTUNE_DEFAULT",)}
_VERSION = re.compile(r"[0-9]+(?:\.[0-9]+)+")
CPUINFO = "/proc/cpuinfo"
# The instruction sets a BLAS (OpenBLAS's DYNAMIC_ARCH core, MKL's and oneDNN's code paths) chooses its kernels by,
# oldest first: the CPU features behind a run's time, recorded beside the kernels chosen (run.json host.cpu_flags).
KERNEL_FLAGS = ("sse4_2", "avx", "fma", "avx2", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16",
                "amx_tile")


def mapped_files(maps: str = MAPS) -> Dict[str, List[Tuple[int, int]]]:
    """{path: [(start, end) of each mapping]} of the shared libraries in the process whose maps file this is."""
    files = {}  # type: Dict[str, List[Tuple[int, int]]]
    with open(maps) as fh:
        for line in fh:
            fields = line.split(None, 5)
            if len(fields) == 6 and fields[5].startswith("/") and ".so" in os.path.basename(fields[5]):
                start, end = fields[0].split("-")
                files.setdefault(fields[5].rstrip("\n"), []).append((int(start, 16), int(end, 16)))
    return files


# How run.json names a library file inside the run's own environment (sys.prefix: a local runner's virtual
# environment under the checkout, an image's /opt/venv): relative to it, so a shared run.json names no
# folder of the host it ran on (a checkout in a home folder would name its user).
ENV_PREFIX = "<env>"


def shared_path(path: str, prefix: str = sys.prefix) -> str:
    """`path` as run.json records it: under the environment `prefix`, ENV_PREFIX + its path there; any other
    file (the system's libraries) as it is."""
    root = os.path.join(os.path.realpath(prefix), "")
    return ENV_PREFIX + "/" + path[len(root):] if path.startswith(root) else path


def host_path(filepath: str, prefix: str) -> str:
    """The file a recorded `filepath` (shared_path) names on the machine whose environment is at `prefix`."""
    if filepath.startswith(ENV_PREFIX + "/"):
        return os.path.join(os.path.realpath(prefix), filepath[len(ENV_PREFIX) + 1:])
    return filepath


def loaded_libraries(maps: str = MAPS) -> Optional[List[Dict[str, Any]]]:
    """run.json's environment.libraries: each BLAS and OpenMP runtime this process has loaded, as
    {kind, api, filepath, version, num_threads, threading_layer, architecture} (None where the library
    does not say), in file path order; None when the process's maps cannot be read (not Linux)."""
    try:
        files = mapped_files(maps)
    except OSError:
        return None
    found = []
    for path in sorted(files):
        entry = describe(path, files[path])
        if entry is not None:
            found.append(entry)
    return found


def describe(path: str, ranges: List[Tuple[int, int]]) -> Optional[Dict[str, Any]]:
    """The record of one loaded library file (mapped at `ranges`), or None when it is no BLAS or OpenMP
    runtime, or not loaded as a library."""
    name = os.path.basename(path).lower()
    lib = _Library.open(path, ranges)
    if lib is None:
        return None
    openmp = [api for prefix, api in OPENMP_NAMES if name.startswith(prefix)]
    if openmp:
        return _entry("openmp", openmp[0], path, num_threads=lib.call_int("omp_get_max_threads"))
    for probe in (_openblas, _mkl, _blis):
        entry = probe(lib, path)
        if entry is not None:
            return entry
    # MKL's other parts (libmkl_core, libmkl_avx2, ...) are named after no BLAS word: never 'other'.
    if any(word in name for word in BLAS_NAMES) and any(lib.function(s) is not None for s in _GEMM):
        return _entry("blas", "other", path)
    return None


def cpu_flags(cpuinfo: str = CPUINFO) -> Optional[List[str]]:
    """run.json's host.cpu_flags: the KERNEL_FLAGS this CPU has (its first processor's flags line), in
    KERNEL_FLAGS order; None when the file cannot be read or has no flags line (not Linux on x86)."""
    try:
        with open(cpuinfo, encoding="utf-8") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                if key.strip() == "flags":
                    present = set(value.split())
                    return [flag for flag in KERNEL_FLAGS if flag in present]
    except OSError:
        pass
    return None


def library_settings() -> Dict[str, Optional[str]]:
    """The environment variables that choose a loaded framework's CPU kernels, as this process sees them
    ({variable: value}, None when unset: the framework's default applies); empty when none is loaded."""
    return {var: os.environ.get(var) for module, names in sorted(SETTING_VARS.items())
            if module in sys.modules for var in names}


class _Library:
    """A loaded shared library and the addresses it is mapped at: its own functions, not its dependencies'."""

    def __init__(self, handle: ctypes.CDLL, ranges: List[Tuple[int, int]]) -> None:
        self.handle = handle
        self.ranges = ranges

    @classmethod
    def open(cls, path: str, ranges: List[Tuple[int, int]]) -> "Optional[_Library]":
        """The library at `path` if this process has it loaded (RTLD_NOLOAD: never loads it), else None."""
        try:
            return cls(ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_LAZY), ranges)
        except OSError:  # mapped as data, or unloaded since
            return None

    def function(self, name: str, restype: Any = ctypes.c_int) -> Any:
        """The function `name` defined in this file (None when absent, or found in a dependency)."""
        fn = getattr(self.handle, name, None)
        if fn is None:
            return None
        address = ctypes.cast(fn, ctypes.c_void_p).value or 0
        if not any(start <= address < end for start, end in self.ranges):
            return None
        fn.restype = restype
        return fn

    def call_int(self, name: str) -> Optional[int]:
        """The int that function `name` (no arguments) returns, or None when the file lacks it."""
        fn = self.function(name)
        return int(fn()) if fn is not None else None

    def call_text(self, name: str) -> Optional[str]:
        """The string that function `name` (no arguments) returns, or None."""
        fn = self.function(name, ctypes.c_char_p)
        return _text(fn()) if fn is not None else None


def _entry(kind: str, api: str, path: str, version: Optional[str] = None, num_threads: Optional[int] = None,
           threading_layer: Optional[str] = None, architecture: Optional[str] = None) -> Dict[str, Any]:
    return {"kind": kind, "api": api, "filepath": path, "version": version, "num_threads": num_threads,
            "threading_layer": threading_layer, "architecture": architecture}


def _text(raw: Optional[bytes]) -> Optional[str]:
    text = raw.decode("utf-8", "replace").strip() if raw else ""
    return text or None


def _openblas(lib: _Library, path: str) -> Optional[Dict[str, Any]]:
    """OpenBLAS: version from its config line ('OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Haswell
    MAX_THREADS=64'), the kernels it chose for this CPU, threads and threading model from its own calls."""
    for prefix, suffix in _AFFIXES:
        config = lib.call_text(prefix + "openblas_get_config" + suffix)
        if config is None:
            continue
        parallel = lib.call_int(prefix + "openblas_get_parallel" + suffix)
        return _entry("blas", "openblas", path, version=openblas_version(config),
                      num_threads=lib.call_int(prefix + "openblas_get_num_threads" + suffix),
                      threading_layer=_OPENBLAS_PARALLEL.get(parallel) if parallel is not None else None,
                      architecture=lib.call_text(prefix + "openblas_get_corename" + suffix))
    return None


def openblas_version(config: str) -> Optional[str]:
    """The version an OpenBLAS config line names ('OpenBLAS 0.3.21 DYNAMIC_ARCH ...' -> '0.3.21'); None for the
    lines of OpenBLAS before 0.3.4, which name no version ('DYNAMIC_ARCH NO_AFFINITY Barcelona MAX_THREADS=64',
    the paper era's NumPy 1.14 wheels)."""
    words = config.split()
    if len(words) > 1 and words[0] == "OpenBLAS" and _VERSION.match(words[1]):
        return words[1]
    return None


def _mkl(lib: _Library, path: str) -> Optional[Dict[str, Any]]:
    """MKL (libmkl_rt, or TensorFlow 1.x's libmklml): version string, max threads, threading layer
    (MKL_Set_Threading_Layer(-1) changes nothing and answers the layer in use, as threadpoolctl reads it)."""
    get_version = lib.function("MKL_Get_Version_String", None)
    if get_version is None:
        return None
    buf = ctypes.create_string_buffer(256)
    get_version(buf, len(buf))
    version = _VERSION.search(_text(buf.value) or "")
    set_layer = lib.function("MKL_Set_Threading_Layer")
    layer = _MKL_LAYERS.get(int(set_layer(ctypes.c_int(-1)))) if set_layer is not None else None
    return _entry("blas", "mkl", path, version=version.group(0) if version else None,
                  num_threads=lib.call_int("MKL_Get_Max_Threads"), threading_layer=layer)


def _blis(lib: _Library, path: str) -> Optional[Dict[str, Any]]:
    """BLIS: version string, threads, and whether it threads with OpenMP or pthreads."""
    version = lib.call_text("bli_info_get_version_str")
    if version is None:
        return None
    layer = None
    if lib.call_int("bli_info_get_enable_openmp"):
        layer = "openmp"
    elif lib.call_int("bli_info_get_enable_pthreads"):
        layer = "pthreads"
    return _entry("blas", "blis", path, version=version,
                  num_threads=lib.call_int("bli_thread_get_num_threads"), threading_layer=layer)
