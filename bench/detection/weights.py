"""The detector's weights in one framework-neutral layout, and the initial weights every framework starts from.

A detector's weights are a dict of float32 arrays keyed by where they sit in the plan (bench/detection/detector.py):

    trunk.<i>.kernel / .bias                       a conv2d of the trunk's layer i: kernel (out, in, kh, kw)
    trunk.<i>.gamma / .beta / .mean / .var         a batchnorm: scale, shift, moving mean, moving variance (C,)
    trunk.<i>.branch.<j>.<...>, trunk.<i>.shortcut.<j>.<...>   the layers inside a residual block
    trunk.<i>.branches.<b>.<j>.<...>               the layers inside a concat's branch b
    head.<...>                                     the head's layers, named the same way
    rpn_conv / rpn_logits / rpn_deltas .kernel (out, in, kh, kw) and .bias (out,)
    classes / boxes .kernel (out, in) and .bias (out,)

Convolution kernels are (out, in, kh, kw) and dense kernels (out, in), the cross-correlation every framework's
conv computes (the kernel as it is applied, not flipped); a framework with another layout (HWIO, (in, out))
transposes when it sets them (`channels_last` gives Keras' and TensorFlow's). The RPN's 4A delta channels are
(anchor, coordinate): channel 4a + k.

`placed` is every framework's set_weights but its walk and its write: each neutral array beside the network's
weight it goes to, every count and shape checked before any is written.

`initial` is how every framework's detector starts, so that two frameworks train the same network from the same
numbers (a departure from the paper, whose six code bases each started from their own ImageNet weights; none is
reachable here): He-normal convolutions over their output fan (torchvision's ResNet), batchnorm at the identity,
the RPN's convs and the class outputs normal with std 0.01 and the box outputs with std 0.001, biases zero
(py-faster-rcnn's ResNet-50 prototxts). Each array is drawn from its own RandomState seeded by (seed, crc32 of its
name), so it does not depend on the order of the others. CPython 3.6-clean, NumPy only.
"""

import zlib
from collections import OrderedDict
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from bench.detection.detector import DetectorPlan
from bench.modelplan import Layer, SpecError

Entry = Tuple[str, Tuple[int, ...]]
BATCHNORM = ("gamma", "beta", "mean", "var")
# What `initial` draws, and its source.
INITIAL = ("He-normal convolutions over the output fan (torchvision's ResNet); batchnorm at the identity; RPN convs "
           "and class outputs normal std 0.01, box outputs std 0.001, biases zero (py-faster-rcnn's ResNet-50 "
           "prototxts); one seeded draw per array (bench/detection/weights.py)")
RPN_STD, CLASS_STD, BOX_STD = 0.01, 0.01, 0.001


def layout(detector: DetectorPlan) -> List[Entry]:
    """Every weight's (name, shape) in the neutral layout (module docstring), in the plan's order."""
    entries = list(_planned(detector.trunk, "trunk")) + list(_planned(detector.head, "head"))
    c, k, a = detector.trunk_channels, detector.settings["rpn"]["channels"], detector.num_anchors
    f, n = detector.features, detector.num_classes
    for name, shape in (("rpn_conv", (k, c, 3, 3)), ("rpn_logits", (a, k, 1, 1)), ("rpn_deltas", (4 * a, k, 1, 1)),
                        ("classes", (n, f)), ("boxes", (4 * n, f))):
        entries += [(name + ".kernel", shape), (name + ".bias", (shape[0],))]
    return entries


def owners(detector: DetectorPlan) -> List[Tuple[str, List[str]]]:
    """Every weighted layer as (its name, its weights' names), in the plan's order (layout's, grouped): what a
    framework walks beside its own layers, e.g. the trunk's owners beside its conv and batchnorm modules in order."""
    grouped = OrderedDict()  # type: Dict[str, List[str]]
    for name, _ in layout(detector):
        grouped.setdefault(name.rsplit(".", 1)[0], []).append(name)
    return list(grouped.items())


def _planned(layers: List[Layer], prefix: str) -> Iterator[Entry]:
    for layer in layers:
        name = f"{prefix}.{layer.index}"
        if layer.type == "conv2d":
            kh, kw = _pair(layer["kernel"])
            yield name + ".kernel", (layer["filters"], layer.input.dims[-1], kh, kw)
            if layer["bias"]:
                yield name + ".bias", (layer["filters"],)
        elif layer.type == "batchnorm":
            for part in BATCHNORM:
                yield f"{name}.{part}", (layer.input.dims[-1],)
        elif layer.type == "dense":
            yield name + ".kernel", (layer["units"], layer.input.features)
            yield name + ".bias", (layer["units"],)
        elif layer.type in ("embedding", "lstm", "gru"):
            raise SpecError(f"a detector's {prefix} layer {layer.index} is a {layer.type}: its trunk and head hold "
                            "image layers only")
        for sub, inner in (("branch", layer.branch), ("shortcut", layer.shortcut)):
            for entry in _planned(inner or [], f"{name}.{sub}"):
                yield entry
        for b, branch in enumerate(layer.branches or []):
            for entry in _planned(branch, f"{name}.branches.{b}"):
                yield entry


def _pair(kernel) -> Tuple[int, int]:
    return (kernel, kernel) if isinstance(kernel, int) else (int(kernel[0]), int(kernel[1]))


def initial(detector: DetectorPlan, seed: int) -> Dict[str, np.ndarray]:
    """The initial weights (module docstring) under `seed`, in the plan's order."""
    weights = OrderedDict()
    for name, shape in layout(detector):
        weights[name] = _draw(name, shape, seed)
    return weights


def _draw(name: str, shape: Tuple[int, ...], seed: int) -> np.ndarray:
    owner, part = name.rsplit(".", 1)
    if part in ("bias", "beta", "mean"):
        return np.zeros(shape, np.float32)
    if part in ("gamma", "var"):
        return np.ones(shape, np.float32)
    std = {"rpn_conv": RPN_STD, "rpn_logits": RPN_STD, "rpn_deltas": RPN_STD, "classes": CLASS_STD,
           "boxes": BOX_STD}.get(owner)
    if std is None:  # a planned conv2d or dense: He-normal over the output fan (out x kh x kw)
        std = float(np.sqrt(2.0 / (shape[0] * int(np.prod(shape[2:])))))
    rng = np.random.RandomState([int(seed) & 0xFFFFFFFF, zlib.crc32(name.encode("ascii"))])
    return (rng.standard_normal(shape) * std).astype(np.float32)


def check(detector: DetectorPlan, weights: Dict[str, np.ndarray]) -> None:
    """Refuse weights that are not exactly the layout's names and shapes, in one line naming the first difference."""
    expected = OrderedDict(layout(detector))
    missing = [name for name in expected if name not in weights]
    extra = [name for name in weights if name not in expected]
    if missing or extra:
        what = f"has no {missing[0]!r}" if missing else f"has an unknown {extra[0]!r}"
        raise SpecError(f"the detector's weights {what}: give exactly the names of bench/detection/weights.layout "
                        f"({len(expected)} of them)")
    for name, shape in expected.items():
        if tuple(np.shape(weights[name])) != shape:
            raise SpecError(f"the detector's weight {name} is {tuple(np.shape(weights[name]))}, not {shape}: convert "
                            "it to bench/detection/weights.py's layout")


def channels_last(name: str, value: np.ndarray) -> np.ndarray:
    """A neutral array in Keras' (and TensorFlow's) layout: conv kernels (out, in, kh, kw) to HWIO (kh, kw, in, out),
    dense kernels (out, in) to (in, out), vectors as they are."""
    if name.endswith(".kernel"):
        return np.transpose(value, (2, 3, 1, 0) if value.ndim == 4 else (1, 0))
    return value


def placed(detector: DetectorPlan, weights: Dict[str, np.ndarray], layers: Sequence[Any],
           targets_of: Callable[[Any], Sequence[Any]], shape_of: Callable[[Any], Tuple[int, ...]],
           convert: Optional[Callable[[str, np.ndarray], np.ndarray]] = None) -> List[Tuple[Any, np.ndarray]]:
    """(target, float32 array) for every weight, in the plan's order, once every count and shape is checked:
    `layers` are the network's weighted layers in `owners`' order, `targets_of(layer)` a layer's weights in its
    names' order (an absent bias left out), `shape_of(target)` a weight's shape, `convert(name, array)` a neutral
    array in the network's layout (default: as it is). Raises ValueError naming the first difference: a write in
    place (copy_, set_data, assign, x[...] =) would broadcast a wrong shape, and a refused dict writes nothing."""
    check(detector, weights)
    owned = owners(detector)
    if len(layers) != len(owned):
        raise ValueError(f"the network has {len(layers)} weighted layers, the plan {len(owned)}")
    out = []  # type: List[Tuple[Any, np.ndarray]]
    for layer, (owner, names) in zip(layers, owned):
        targets = list(targets_of(layer))
        if len(targets) != len(names):
            raise ValueError(f"{owner}: the network's layer has {len(targets)} weights, the plan {len(names)}")
        for target, name in zip(targets, names):
            value = np.asarray(weights[name], np.float32)
            value = np.ascontiguousarray(convert(name, value) if convert is not None else value)
            if tuple(shape_of(target)) != value.shape:
                raise ValueError(f"{name}: the network's weight is {tuple(shape_of(target))}, the plan's "
                                 f"{value.shape} in the network's layout")
            out.append((target, value))
    return out
