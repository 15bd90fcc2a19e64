"""GPU pre-flight: can this host's driver and GPUs run an image built for CUDA x.y?

Checked once before a GPU campaign starts with the docker runner, so a mismatch stops the campaign
with one clear line instead of failing every run half an hour in. Three ways it cannot work:

- the Docker engine has no NVIDIA runtime (the NVIDIA Container Toolkit is not installed), so a
  container gets no GPU at all;
- the host driver is older than the minimum the image's CUDA runtime needs;
- the image's CUDA predates the GPU's compute capability (e.g. a CUDA 10 image on a Hopper GPU:
  CUDA 10 knows kernels up to sm_75, Hopper is sm_90 and needs CUDA 11.8). The paper-era GPU images
  are CUDA 9.0 and 9.2 builds (tensorflow-gpu 1.11, mxnet-cu90 1.3.0, torch 0.4.1 cu92, cupy-cuda92
  4.5.0): they run on GPUs up to Volta (sm_70/72), such as the Tesla P4 (sm_61) the paper used, and
  are refused on Ampere, Ada and Hopper; the refusal names GPUs that can run them.

The checks are pure functions of versions, so they are unit-tested without a GPU.
"""

from __future__ import annotations

from dataclasses import dataclass

from bench.errors import UsageError

# Minimum Linux driver per CUDA runtime (NVIDIA's CUDA toolkit release notes, table 3). From 11.1
# on, a runtime runs on any driver of its major release's first version (minor version
# compatibility), so one entry covers each major release.
MIN_DRIVER: dict[tuple[int, int], str] = {
    (9, 0): "384.81",
    (9, 1): "390.46",
    (9, 2): "396.26",
    (10, 0): "410.48",
    (10, 1): "418.39",
    (10, 2): "440.33",
    (11, 0): "450.36.06",
    (11, 1): "450.80.02",
    (12, 0): "525.60.13",
    (13, 0): "580.65.06",
}

# The first CUDA release that can build kernels for each compute capability.
MIN_CUDA_FOR_CC: dict[tuple[int, int], tuple[int, int]] = {
    (3, 5): (5, 0), (3, 7): (5, 0), (5, 0): (6, 0), (5, 2): (6, 5), (6, 0): (8, 0), (6, 1): (8, 0),
    (7, 0): (9, 0), (7, 2): (9, 2), (7, 5): (10, 0), (8, 0): (11, 0), (8, 6): (11, 1), (8, 7): (11, 4),
    (8, 9): (11, 8), (9, 0): (11, 8), (10, 0): (12, 8), (10, 3): (12, 9), (12, 0): (12, 8), (12, 1): (12, 9),
}


# GPUs named in a refusal as examples of what an image can run on, by compute capability. The DLBench
# paper measured on a Tesla P4 (6.1); its era's CUDA 9.x builds know kernels up to 7.0 (9.0) or 7.2 (9.2).
EXAMPLE_GPUS: dict[tuple[int, int], str] = {
    (3, 7): "Tesla K80", (5, 2): "Tesla M60", (6, 0): "Tesla P100", (6, 1): "Tesla P4",
    (7, 0): "Tesla V100", (7, 5): "Tesla T4", (8, 0): "A100", (8, 6): "A10", (8, 9): "L4", (9, 0): "H100",
}
PAPER_GPU = (6, 1)
PAPER_NOTE = ", the DLBench paper's GPU"


@dataclass(frozen=True)
class HostGpu:
    """What the host offers: whether the engine has an NVIDIA runtime, the driver, and the GPUs."""

    nvidia_runtime: bool
    driver: str | None
    compute_capabilities: tuple[str, ...] = ()
    gpu_names: tuple[str, ...] = ()


def parse_version(text: str) -> tuple[int, ...]:
    """'535.104.05' -> (535, 104, 5); raises UsageError for text that is not dotted numbers."""
    try:
        return tuple(int(part) for part in str(text).strip().split("."))
    except ValueError:
        raise UsageError(f"'{text}' is not a version number", "expected dotted numbers such as 535.104.05") from None


def _major_minor(cuda: str) -> tuple[int, int]:
    parts = parse_version(cuda)
    return parts[0], parts[1] if len(parts) > 1 else 0


def min_driver(cuda: str) -> str:
    """The oldest Linux driver that runs a CUDA `cuda` runtime (x.y)."""
    want = _major_minor(cuda)
    known = [v for v in MIN_DRIVER if v <= want and (v[0] == want[0] or v == max(MIN_DRIVER))]
    if not known:
        raise UsageError(f"CUDA {cuda} is not in the pre-flight table",
                         "add its minimum driver to campaign/preflight.py")
    return MIN_DRIVER[max(known)]


def min_cuda(compute_capability: str) -> tuple[int, int]:
    """The first CUDA release with kernels for `compute_capability` ('9.0'); newer-than-known GPUs
    need at least the newest release in the table."""
    cc = _major_minor(compute_capability)
    if cc in MIN_CUDA_FOR_CC:
        return MIN_CUDA_FOR_CC[cc]
    older = [c for c in MIN_CUDA_FOR_CC if c <= cc]
    return MIN_CUDA_FOR_CC[max(older)] if older else (0, 0)


def newest_cc(cuda: str) -> tuple[int, int]:
    """The newest compute capability a CUDA `cuda` (x.y) release builds kernels for."""
    want = _major_minor(cuda)
    known = [cc for cc, first in MIN_CUDA_FOR_CC.items() if first <= want]
    if not known:
        raise UsageError(f"CUDA {cuda} is older than any GPU in the pre-flight table",
                         "add its compute capabilities to campaign/preflight.py")
    return max(known)


def gpus_that_can(cuda: str) -> str:
    """Words naming the GPUs an image built for CUDA `cuda` runs on (compute capability up to newest_cc)."""
    top = newest_cc(cuda)
    fits = sorted((cc for cc in EXAMPLE_GPUS if cc <= top), reverse=True)
    picked = fits[:2] + ([PAPER_GPU] if PAPER_GPU in fits[2:] else [])
    names = ", ".join(f"{EXAMPLE_GPUS[cc]} ({cc[0]}.{cc[1]}{PAPER_NOTE if cc == PAPER_GPU else ''})"
                      for cc in picked)
    return f"GPUs of compute capability {top[0]}.{top[1]} or older run it, e.g. {names}"


def check(host: HostGpu, image_cuda: str | None, image: str) -> None:
    """Raise UsageError naming the problem and the fix when `image` (built for CUDA `image_cuda`)
    cannot use the host's GPUs; return None when it can. `image_cuda` None = the image has no CUDA."""
    if not host.nvidia_runtime:
        raise UsageError(
            "the Docker engine has no NVIDIA runtime, so containers cannot see the GPU",
            "install the NVIDIA Container Toolkit and restart dockerd (nvidia-ctk runtime configure "
            "--runtime=docker), or use RUNNER=local",
        )
    if image_cuda is None:
        raise UsageError(f"image {image} carries no CUDA runtime (a CPU image)", "build the GPU variant: VARIANT=gpu")
    if host.driver is None:
        raise UsageError("no NVIDIA driver answers on this host", "install the NVIDIA driver, or run the cpu-* target")
    need = min_driver(image_cuda)
    if parse_version(host.driver) < parse_version(need):
        raise UsageError(
            f"the host driver {host.driver} is too old for image {image} (CUDA {image_cuda} needs driver >= {need})",
            "upgrade the NVIDIA driver, or use an image built for an older CUDA",
        )
    cuda = _major_minor(image_cuda)
    for i, cc in enumerate(host.compute_capabilities):
        first = min_cuda(cc)
        if cuda < first:
            name = host.gpu_names[i] if i < len(host.gpu_names) else f"GPU {i}"
            raise UsageError(
                f"image {image} carries CUDA {image_cuda}, which has no kernels for {name} (compute capability "
                f"{cc} needs CUDA >= {first[0]}.{first[1]})",
                f"{gpus_that_can(image_cuda)}; on this GPU use the current-era GPU image (ERA=current VARIANT=gpu)",
            )
