"""Performance switches as sweep axes: settings a user rarely looks at that change which kernels a framework runs,
ilkarman/DeepLearningFrameworks' lessons. Each is declared once as data (SWITCHES) and applied in the run's process
before the framework loads (apply()); the framework modules read the run's value with value().

- cudnn_autotune ("on", "off"; GPU runs only): whether cuDNN times its convolution algorithms and keeps the fastest
  (each module's setting elsewhere) or takes its heuristic choice: TF_CUDNN_USE_AUTOTUNE (TensorFlow, and Keras on
  it), MXNET_CUDNN_AUTOTUNE_DEFAULT, torch.backends.cudnn.benchmark, chainer.config.autotune. Claim ilkarman-1.
- rnn_kernel ("fused", "plain"): a gru layer as the framework's fused recurrent operator (cuDNN's on a GPU; PyTorch's
  and MXNet's fused CPU kernels; Keras' use_cudnn="auto", which on a CPU has no fused kernel to pick) or as its
  one-step cell applied step by step (nn.GRUCell, gluon.rnn.GRUCell under foreach, Keras' GRU with use_cudnn=False).
  The same parameters either way.
- layout ("channels_first", "channels_last"): the memory layout PyTorch's convolutions run in (the module's NCHW
  tensors, or torch.channels_last: NHWC strides over the same shapes and parameters).

Every axis's first value is what a run without the axis does. Every value enters the kit's own variable (flag());
where a library reads a variable of its own, that is set too. Which frameworks and eras have a switch, and the
library variables each value sets for them, are their declarations' (bench/frameworks/<framework>/__init__.py:
Era.switches). What a run really used is recorded by its module (run.json device_used.kernels) and, for the
libraries' variables, environment.library_settings (bench/blas.py).
A framework without a switch is refused at plan time in one line (refusal()), as GPU-only axes are on CPU
experiments (campaign/study.py).

Standard library only, CPython 3.6-clean: it runs before any framework is imported.
"""

import os
from typing import Dict, Iterable, NamedTuple, Optional, Tuple, Union

from bench.errors import UsageError
from bench.frameworks import capabilities

AUTOTUNE, RNN_KERNEL, LAYOUT = "cudnn_autotune", "rnn_kernel", "layout"


class Switch(NamedTuple):
    """One axis: its values (the first: what a run without it does) and whether it means anything on a CPU."""

    values: Tuple[str, ...]
    gpu_only: bool
    what: str  # the switch in a refusal: "<framework>'s module has no <what>"
    acts_on: Optional[str]  # the layer type it changes (a workload without one is refused); None: any workload


def library_variable(name: str, first: str, second: str) -> Dict[str, Dict[str, str]]:
    """A library variable set to 1 for the axis's first value, 0 for its second (a declaration's Era.switches)."""
    return {first: {name: "1"}, second: {name: "0"}}


SWITCHES = {
    AUTOTUNE: Switch(("on", "off"), True, "cuDNN autotuning switch", None),
    RNN_KERNEL: Switch(("fused", "plain"), False, "choice of recurrent kernel", "gru"),
    LAYOUT: Switch(("channels_first", "channels_last"), False, "choice of convolution layout", "conv2d"),
}


def feature(axis: str) -> capabilities.Feature:
    """The frameworks and eras whose modules have `axis`, from their declarations."""
    return capabilities.Feature(lambda framework, can: axis in can.switches, f"has no {SWITCHES[axis].what}",
                                f"the {axis} switch is written", f"{axis} sweeps")


def flag(axis: str) -> str:
    """The kit's variable holding a run's value of `axis` (DLREPRO_CUDNN_AUTOTUNE, ...)."""
    return "DLREPRO_" + axis.upper()


def refusal(axis: str, framework: str, era: str, value: str) -> Optional[str]:
    """Why `framework` of `era` cannot run at `value` of `axis` (one line), or None when it can."""
    switch, have = SWITCHES[axis], feature(axis)
    eras = have.eras(framework)
    if not eras:
        return (f"{framework}'s module has no {switch.what}; {axis} sweeps run with "
                f"FRAMEWORKS={' '.join(have.frameworks())}")
    if era not in eras:
        return f"the {axis} switch is written for the {' and '.join(eras)} era, not {era} (ERA={eras[0]})"
    if value not in switch.values:
        return f"{axis} is {' or '.join(switch.values)}, not '{value}'"
    return None


def inapplicable(axis: str, layer_types: Iterable[str]) -> Optional[str]:
    """Why `axis` changes nothing in a model of these layer types (one line), or None when it acts on one of them."""
    acts_on = SWITCHES[axis].acts_on
    if acts_on is None or acts_on in set(layer_types):
        return None
    return f"{axis} changes {acts_on} layers, which this model has none of"


def environment(axis: str, framework: str, value: str, era: str = "current") -> Dict[str, str]:
    """The variables that put `value` of `axis` in place for `framework` of `era` (its declaration's)."""
    return {flag(axis): value, **capabilities.era_of(framework, era).switches[axis].get(value, {})}


def apply(req: dict) -> Dict[str, str]:
    """Set the values the request's sweep point gives any switch, before its framework is imported; return
    {axis: value} of those set. A UsageError when the framework cannot switch, or a GPU-only axis is on a CPU run."""
    point = req.get("sweep") or {}
    chosen = {axis: point[axis] for axis in SWITCHES if axis in point}
    for axis, value in sorted(chosen.items()):
        why = refusal(axis, req["framework"], req["era"], value)
        if why:
            raise UsageError(f"the request asks for {axis} '{value}' but {why}",
                             "plan the run again (python -m campaign skips it)")
        if SWITCHES[axis].gpu_only and req["device"] != "gpu":
            raise UsageError(f"the request asks for {axis} '{value}' on {req['device']}, where it means nothing",
                             f"sweep {axis} in GPU experiments only")
    for axis, value in chosen.items():
        os.environ.update(environment(axis, req["framework"], value, req["era"]))
    return chosen


def value(axis: str) -> str:
    """This run's value of `axis` (flag(); unset: the axis's default, its first value)."""
    return os.environ.get(flag(axis)) or SWITCHES[axis].values[0]


def keras_use_cudnn() -> Union[str, bool]:
    """Keras' use_cudnn for this run's recurrent layers (TensorFlow's and Keras' modules): "auto", cuDNN's fused
    kernel where the layer and the device allow, or False where the rnn_kernel switch asks for the plain kernel."""
    return False if value(RNN_KERNEL) == "plain" else "auto"
