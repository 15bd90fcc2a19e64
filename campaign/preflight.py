"""GPU pre-flight: can this host's driver and GPUs run an image built for CUDA x.y?

Checked once per framework before a GPU campaign starts (the docker and local runners' prepare), so
a mismatch stops the campaign with one clear line instead of failing every run half an hour in.
The ways it cannot work, each reported as one line naming the fix (all of them at once):

- the Docker engine has no NVIDIA runtime (the NVIDIA Container Toolkit is not installed), so a
  container gets no GPU at all (docker runner only);
- the host driver is older than the minimum the image's CUDA runtime needs (MIN_DRIVER, with CUDA's
  minor-version compatibility: any 11.x from 11.1 on runs on >= 450.80.02, 12.x on >= 525.60.13,
  13.x on >= 580.65.06);
- the image's CUDA predates the GPU's compute capability (e.g. a CUDA 10 image on a Hopper GPU:
  CUDA 10 knows kernels up to sm_75, Hopper is sm_90 and needs CUDA 11.8); the CUDA libraries the
  framework calls (cuBLAS, cuDNN) have no kernels for it;
- the framework's own build ships no kernels the GPU can run (images/frameworks.toml, per era and
  framework, [gpu]: the build's CUDA, its cubins `sm` and its PTX `ptx`): older than the build's
  oldest (a Tesla P100, 6.0, with the CUDA 13.0 torch build, 7.5 and newer) or newer than its
  newest with no PTX to compile for it (a Hopper GPU with mxnet-cu112, kernels up to 8.6).

Kernels for compute capability x.y run on GPUs of the same major version x and a newer minor one
(CUDA's binary compatibility: Turing runs Volta's sm_70 kernels, Ada Ampere's sm_86 ones), so both
checks count those. The paper-era GPU images are CUDA 9.0 and 9.2 builds (tensorflow-gpu 1.11,
mxnet-cu90 1.3.0, torch 0.4.1 cu92, cupy-cuda92 4.5.0): they run on GPUs up to Turing (sm_7x), such
as the Tesla P4 (sm_61) the paper used, and are refused on Ampere, Ada and Hopper; the refusal names
GPUs that can run them.

The checks are pure functions of versions and the table, so they are unit-tested without a GPU.
"""

from __future__ import annotations

from dataclasses import dataclass

from bench.errors import UsageError

# Minimum Linux driver per CUDA runtime (NVIDIA's CUDA toolkit release notes, table 3). From 11.1
# on, CUDA's minor-version compatibility holds: an x.y runtime runs on the driver of its major
# release's minimum (MINOR_VERSION_COMPATIBLE_FROM; one entry per major release: 11.1, 12.0, 13.0),
# not only on the x.y release's own newer one. (Its documented limit: a driver older than the
# toolkit cannot JIT-compile that toolkit's PTX; the kernel check below counts PTX as runnable.)
MINOR_VERSION_COMPATIBLE_FROM = (11, 1)
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

# The first CUDA release that can build kernels for each compute capability (11.0: Thor, sm_110 from
# CUDA 13.0 on; CUDA 12.8 called it sm_101).
MIN_CUDA_FOR_CC: dict[tuple[int, int], tuple[int, int]] = {
    (3, 5): (5, 0), (3, 7): (5, 0), (5, 0): (6, 0), (5, 2): (6, 5), (6, 0): (8, 0), (6, 1): (8, 0),
    (7, 0): (9, 0), (7, 2): (9, 2), (7, 5): (10, 0), (8, 0): (11, 0), (8, 6): (11, 1), (8, 7): (11, 4),
    (8, 9): (11, 8), (9, 0): (11, 8), (10, 0): (12, 8), (10, 3): (12, 9), (11, 0): (13, 0), (12, 0): (12, 8),
    (12, 1): (12, 9),
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
    """What the host offers: whether the engine has an NVIDIA runtime, the driver, and the GPUs the
    campaign uses (compute capability, name and NVML index of each)."""

    nvidia_runtime: bool | None  # None: no container engine in between (the local runner)
    driver: str | None
    compute_capabilities: tuple[str, ...] = ()
    gpu_names: tuple[str, ...] = ()
    gpu_indices: tuple[int, ...] = ()  # NVML indices of the GPUs above, when not 0, 1, ...


def host_gpu(nvidia_runtime: bool | None, gpus=()) -> HostGpu:
    """The host's driver and GPUs as NVML reports them here (the payload's probe), limited to `gpus`
    (GpuSlots: the GPUs the campaign uses; all when empty). `nvidia_runtime`: the engine's answer,
    None where no container engine is in between (the local runner)."""
    from bench.gpu import probe

    status = probe()
    wanted = {g.index for g in gpus}
    devices = [d for d in status.devices if d.get("compute_capability") and (not wanted or d["index"] in wanted)]
    return HostGpu(nvidia_runtime=nvidia_runtime, driver=status.driver,
                   compute_capabilities=tuple(d["compute_capability"] for d in devices),
                   gpu_names=tuple(d["name"] for d in devices), gpu_indices=tuple(d["index"] for d in devices))


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
    """The oldest Linux driver that runs a CUDA `cuda` runtime (x.y): from 11.1 on, its major
    release's minimum (minor-version compatibility: 12.9 runs on 525.60.13, like 12.0); before,
    the newest release's entry not newer than x.y within its major release."""
    want = _major_minor(cuda)
    same_major = sorted(v for v in MIN_DRIVER if v[0] == want[0] and v <= want)
    if want >= MINOR_VERSION_COMPATIBLE_FROM:
        same_major = [v for v in same_major if v >= MINOR_VERSION_COMPATIBLE_FROM][:1]
    if not same_major:
        raise UsageError(f"CUDA {cuda} is not in the pre-flight table",
                         "add its minimum driver to MIN_DRIVER in campaign/preflight.py")
    return MIN_DRIVER[same_major[-1]]


def min_cuda(compute_capability: str) -> tuple[int, int]:
    """The first CUDA release whose kernels a GPU of `compute_capability` ('9.0') runs. Kernels built
    for an older minor version of the GPU's major one run on it (CUDA's binary compatibility: a Tesla
    T4, 7.5, runs CUDA 9.0's sm_70 kernels; an L4, 8.9, runs sm_86 ones); a GPU of a major version
    the table does not know needs at least the newest release in it."""
    cc = _major_minor(compute_capability)
    same_major = [c for c in MIN_CUDA_FOR_CC if c[0] == cc[0] and c <= cc]
    if same_major:
        return min(MIN_CUDA_FOR_CC[c] for c in same_major)
    older = [c for c in MIN_CUDA_FOR_CC if c <= cc]
    return max(MIN_CUDA_FOR_CC.values()) if older else (0, 0)


def newest_cc(cuda: str) -> tuple[int, int]:
    """The newest compute capability a CUDA `cuda` (x.y) release builds kernels for."""
    want = _major_minor(cuda)
    known = [cc for cc, first in MIN_CUDA_FOR_CC.items() if first <= want]
    if not known:
        raise UsageError(f"CUDA {cuda} is older than any GPU in the pre-flight table",
                         "add its compute capabilities to campaign/preflight.py")
    return max(known)


def gpus_that_can(cuda: str) -> str:
    """Words naming the GPUs an image built for CUDA `cuda` runs on: up to the major version of
    newest_cc (binary compatibility: kernels for x.0 run on every x.y)."""
    top = newest_cc(cuda)
    fits = sorted((cc for cc in EXAMPLE_GPUS if cc[0] <= top[0]), reverse=True)
    picked = fits[:2] + ([PAPER_GPU] if PAPER_GPU in fits[2:] else [])
    names = ", ".join(f"{EXAMPLE_GPUS[cc]} ({cc[0]}.{cc[1]}{PAPER_NOTE if cc == PAPER_GPU else ''})"
                      for cc in picked)
    return f"GPUs of compute capability {top[0]}.x or older run it, e.g. {names}"


@dataclass(frozen=True)
class GpuBuild:
    """What a GPU image's framework build ships (images/frameworks.toml, [<era>.frameworks.<fw>.gpu]):
    its CUDA, the compute capabilities it has cubins for (`sm`: each runs on GPUs of the same major
    version and the same or a newer minor one) and those it carries PTX for (`ptx`: the driver
    compiles it for any GPU of that capability or newer)."""

    framework: str
    era: str
    cuda: str
    sm: tuple[str, ...]
    ptx: tuple[str, ...] = ()
    source: str = ""

    def runs_on(self, compute_capability: str) -> bool:
        """Whether a cubin or the PTX of the build runs on a GPU of `compute_capability`."""
        cc = _major_minor(compute_capability)
        cubin = any(major == cc[0] and minor <= cc[1] for major, minor in map(_major_minor, self.sm))
        return cubin or any(ptx <= cc for ptx in map(_major_minor, self.ptx))

    def kernels(self) -> str:
        """'7.5, 8.0, 8.6, 9.0, 10.0, 12.0 and PTX 12.0' (or '... and no PTX')."""
        ptx = f"PTX {', '.join(self.ptx)}" if self.ptx else "no PTX"
        return f"{', '.join(self.sm)} and {ptx}"


def gpu_build(framework: str, era: str) -> GpuBuild | None:
    """The GPU build of `framework` in `era` from images/frameworks.toml; None where it has none."""
    from images.build import era_packages  # host tooling only: keeps this module's import light

    table = era_packages().get(era, {}).get("frameworks", {}).get(framework, {}).get("gpu")
    if table is None:
        return None
    return GpuBuild(framework, era, str(table["cuda"]), tuple(table["sm"]), tuple(table.get("ptx", ())),
                    str(table.get("source", "")))


def gpu_builds() -> list[GpuBuild]:
    """Every GPU build images/frameworks.toml lists, era by era."""
    from images.build import era_packages

    return [b for era, table in era_packages().items() for fw in table.get("frameworks", {})
            if (b := gpu_build(fw, era)) is not None]


@dataclass(frozen=True)
class Problem:
    """One reason the image cannot use the host's GPUs, and its fix."""

    problem: str
    fix: str


def _gpu_groups(host: HostGpu) -> list[tuple[str, str, list[int]]]:
    """(compute capability, name, NVML indices) per kind of GPU: eight H100s are one problem, not eight."""
    groups: dict[tuple[str, str], list[int]] = {}
    for i, cc in enumerate(host.compute_capabilities):
        name = host.gpu_names[i] if i < len(host.gpu_names) else "GPU"
        index = host.gpu_indices[i] if i < len(host.gpu_indices) else i
        groups.setdefault((cc, name), []).append(index)
    return [(cc, name, indices) for (cc, name), indices in groups.items()]


def _who(name: str, indices: list[int]) -> str:
    return f"{name} (GPU{'s' if len(indices) > 1 else ''} {', '.join(map(str, indices))})"


def _examples(build: GpuBuild) -> str:
    """Up to three example GPUs the build runs on (its CUDA knows them too), oldest first."""
    fits = [cc for cc in sorted(EXAMPLE_GPUS) if build.runs_on(f"{cc[0]}.{cc[1]}")
            and min_cuda(f"{cc[0]}.{cc[1]}") <= _major_minor(build.cuda)]
    picked = fits[:1] + fits[-2:] if len(fits) > 3 else fits
    return ", ".join(f"{EXAMPLE_GPUS[cc]} ({cc[0]}.{cc[1]})" for cc in picked)


def _elsewhere(build: GpuBuild, cc: str) -> str:
    """Where else the kit has a build of the framework that runs on `cc`, as words for a fix."""
    others = [b for b in gpu_builds() if b.framework == build.framework and b.era != build.era
              and b.runs_on(cc) and min_cuda(cc) <= _major_minor(b.cuda)]
    if others:
        return "; or its " + ", ".join(f"{b.era}-era image (ERA={b.era}, CUDA {b.cuda})" for b in others) + \
            " runs on it"
    return f"; or leave {build.framework} out (FRAMEWORKS=...)"


def _kernel_problem(build: GpuBuild, image: str, cc: str, who: str) -> Problem | None:
    """The build has no cubin or PTX for compute capability `cc`: too old or too new for it."""
    if build.runs_on(cc):
        return None
    known = sorted(map(_major_minor, build.sm + build.ptx))
    if _major_minor(cc) < known[0]:
        why = f"older than the oldest it supports ({known[0][0]}.{known[0][1]})"
    elif _major_minor(cc) > known[-1]:
        why = "newer than its kernels, and it has no PTX the driver could compile for it"
    else:
        why = "none of its kernels is of that major version, and it has no older PTX the driver could compile"
    return Problem(
        f"{image} has no kernels for {who}, compute capability {cc}: {why}; its {build.framework} build "
        f"(CUDA {build.cuda}) ships {build.kernels()}",
        f"run it on GPUs it supports, e.g. {_examples(build)}{_elsewhere(build, cc)}",
    )


def _compatible(cuda: str) -> str:
    """Words saying which runtimes a major release's minimum driver runs, where minor-version
    compatibility holds."""
    major = _major_minor(cuda)[0]
    return f" (it runs every CUDA {major}.x runtime)" if _major_minor(cuda) >= MINOR_VERSION_COMPATIBLE_FROM else ""


def problems(host: HostGpu, image_cuda: str | None, image: str, build: GpuBuild | None = None) -> list[Problem]:
    """Every reason `image` (words naming it: 'image dlrepro/pytorch:current-gpu-...', or a local
    environment's build; built for CUDA `image_cuda`, its framework build `build` when known) cannot
    use the host's GPUs; empty when it can. `image_cuda` None = the image has no CUDA."""
    found: list[Problem] = []
    if host.nvidia_runtime is False:
        found.append(Problem(
            "the Docker engine has no NVIDIA runtime, so containers cannot see the GPU",
            "install the NVIDIA Container Toolkit and restart dockerd (nvidia-ctk runtime configure "
            "--runtime=docker), or use RUNNER=local",
        ))
    if image_cuda is None:
        return found + [Problem(f"{image} carries no CUDA runtime (a CPU image)",
                                "build the GPU variant: VARIANT=gpu")]
    if host.driver is None:
        return found + [Problem("no NVIDIA driver answers on this host",
                                "install the NVIDIA driver, or run the cpu-* target")]
    need = min_driver(image_cuda)
    if parse_version(host.driver) < parse_version(need):
        found.append(Problem(
            f"the host driver {host.driver} is too old for {image} (CUDA {image_cuda} needs driver >= {need})",
            f"upgrade the NVIDIA driver to {need} or newer{_compatible(image_cuda)}, or use an image built for "
            "an older CUDA",
        ))
    cuda = _major_minor(image_cuda)
    for cc, name, indices in _gpu_groups(host):
        who = _who(name, indices)
        first = min_cuda(cc)
        if cuda < first:
            found.append(Problem(
                f"{image} carries CUDA {image_cuda}, which has no kernels for {who} (compute capability "
                f"{cc} needs CUDA >= {first[0]}.{first[1]})",
                gpus_that_can(image_cuda) + (_elsewhere(build, cc) if build is not None else
                                             "; on this GPU use the current-era GPU image (ERA=current VARIANT=gpu)"),
            ))
        elif build is not None:
            kernel = _kernel_problem(build, image, cc, who)
            if kernel is not None:
                found.append(kernel)
    return found


def check(host: HostGpu, image_cuda: str | None, image: str, build: GpuBuild | None = None) -> None:
    """Raise one UsageError naming every problem and its fix (problems()) when `image` cannot use
    the host's GPUs; return None when it can. One problem reads as itself; several as one line,
    numbered, each with its fix."""
    found = problems(host, image_cuda, image, build)
    if len(found) == 1:
        raise UsageError(found[0].problem, found[0].fix)
    if found:
        listed = "; ".join(f"({i}) {p.problem} -- fix: {p.fix}" for i, p in enumerate(found, 1))
        raise UsageError(f"the GPU pre-flight found {len(found)} problems: {listed}",
                         "fix each as named, then run the same command again")
