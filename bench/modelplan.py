"""The model plan: a workload spec's model validated and its shape math done once, framework-free.

``plan(spec)`` checks spec['model'] against the layer types the framework modules translate and
works out, for every layer, its input and output shape and, for convolutions and pools, the
padding on each side (TensorFlow's 'same' rule: the extra row or column goes after). A framework
module maps each planned layer to its own layer type and reads sizes from the plan instead of
tracking shapes itself, so every framework builds the same model from the same numbers.

Shapes are channels-last and batch-free: an image is (H, W, C), a sequence is its per-step
features, a vector its features; token ids (what an embedding reads) have no features.

Residual networks: a `residual` layer is a block, `layers` its branch (planned recursively, like a
stack), added to a shortcut and followed by `activation`; `repeat = N` plans N blocks in a row (the
repeats after the first run the branch with every conv's stride 1, so they keep their shape). The
shortcut is the identity where the branch keeps the block's shape; where it changes it, "projection"
plans a 1x1 conv (no bias) with the branch's stride and the branch's output channels, then a
batchnorm, and "identity" is a SpecError. A planned block is one Layer whose `branch` and `shortcut`
are planned layer lists, so a framework recurses with its own per-layer builder.

Parallel branches (GoogLeNet's Inception modules): a `concat` layer's `branches` is a list of layer
lists, each planned from the concat's input (recursively, like a residual branch); their outputs must
agree on H and W, and the concat's output stacks their channels in the order given. A planned concat
is one Layer whose `branches` holds the planned lists (Layer.branch and shortcut stay None).

Local response normalization (`lrn`) follows TensorFlow's convention (tf.nn.local_response_normalization),
per pixel across channels: out[c] = x[c] / (bias + alpha * sum(x[c'] ** 2))**beta, the sum over the
2 * depth_radius + 1 channels c - depth_radius .. c + depth_radius that exist (no wrap, none padded in), alpha
NOT divided by that window (PyTorch, MXNet and Caffe divide theirs: lrn_size() gives the window to convert
with). Defaults are TensorFlow's (depth_radius 5, bias 1, alpha 1, beta 0.5). No parameters; shape unchanged.

A `gru` is cuDNN's GRU ("reset_after": r * (W_hn h + b_hn), two bias vectors per gate set; gru_params()), read
over every step of its input, padding included (no real lengths, no initial state).

A features model (`model.output = "features"`, ilkarman's ResNet-50 feature extraction) has no classifier: its
last layer's output, a vector (e.g. after global_avgpool), is what the network computes, ModelPlan.kind is
"features" and no loss is planned; it runs only under the inference protocol (bench/measurement.py), which
times forward passes. `output = "classes"` (the default) is every other model: the last layer a dense classifier.

Batchnorm follows Keras' convention: `momentum` m updates moving = m * moving + (1 - m) * batch
(PyTorch's momentum is 1 - m); the defaults (0.9, epsilon 1e-5) are PyTorch's and He et al.'s Torch.
Its gamma and beta are trainable parameters, its moving mean and variance are not.
CPython 3.6-clean, standard library only.
"""

from typing import Any, Dict, List, NamedTuple, Optional, Tuple

from bench import measurement

IMAGE, SEQUENCE, VECTOR, TOKENS = "image", "sequence", "vector", "tokens"

# Keys that may stay None (not required): the activation (linear), a pool's stride (= its size) and
# an LSTM's initial state (zeros; "encoder" = the encoder's final state, encoder-decoder models only).
OPTIONAL_KEYS = {"activation", "stride", "initial_state"}
# Pools: a window over each channel; stride None = the pool size (no overlap).
POOLS = ("maxpool2d", "avgpool2d")
# Layers with a window over the image, whose planned Layer carries its padding (Pads).
WINDOWED = ("conv2d",) + POOLS
# What a residual branch or a concat branch may hold: image-to-image layers, no nested blocks.
BRANCH_LAYER_TYPES = WINDOWED + ("batchnorm", "activation", "dropout", "lrn")
# Keys each layer type accepts, with defaults (None = required unless in OPTIONAL_KEYS). Anything else is a spec error:
# silently ignoring a key would let two frameworks build different models from one spec.
LAYER_KEYS = {
    "conv2d": {"filters": None, "kernel": None, "activation": None, "padding": "valid", "stride": 1, "bias": True},
    "maxpool2d": {"pool": None, "stride": None, "padding": "valid"},  # stride None = pool (no overlap)
    # 'same' averages the real (unpadded) values only, as TensorFlow does: see pool_counts().
    "avgpool2d": {"pool": None, "stride": None, "padding": "valid"},
    "global_avgpool": {},  # image -> vector: each channel's mean over H x W
    "batchnorm": {"momentum": 0.9, "epsilon": 1e-5},  # Keras' convention for momentum (see above)
    # TensorFlow's convention and defaults (see above): alpha per channel of the window, not divided by it.
    "lrn": {"depth_radius": 5, "bias": 1.0, "alpha": 1.0, "beta": 0.5},
    "activation": {"activation": None},  # a bare nonlinearity (after a batchnorm); required here
    "residual": {"layers": None, "shortcut": "projection", "activation": None, "repeat": 1},
    "concat": {"branches": None},  # image -> image: the branches' outputs stacked on channels
    "dropout": {"rate": None},
    "flatten": {},
    "dense": {"units": None, "activation": None},
    "embedding": {"input_dim": None, "output_dim": None},
    "lstm": {"units": None, "use_lengths": False, "return_sequences": False, "initial_state": None},
    # cuDNN's GRU (reset_after: two bias vectors per gate set, see gru_params()); reads every step, padding included.
    "gru": {"units": None, "return_sequences": False},
}
HIDDEN_ACTIVATIONS = (None, "linear", "relu", "tanh", "sigmoid")
SHORTCUTS = ("identity", "projection")
# The loss a spec names -> (label kind, the output activation the loss absorbs).
# "sequence": integer labels at every time step (N, T), logits (N, T, classes); the loss and the
# accuracy count only each row's first y_len steps (all steps when the data has no y_len), and
# both are means over counted tokens (token-level accuracy, as the paper reports for PTB).
LOSSES = {
    "categorical_crossentropy": ("categorical", "softmax"),
    "binary_crossentropy": ("binary", "sigmoid"),
    "sparse_categorical_crossentropy": ("sequence", "softmax"),
}
ARCHITECTURES = ("stack", "encoder_decoder")
# A detector (bench/detection/detector.py: Faster R-CNN) is planned there; its ModelPlan (kind "detection") holds
# its trunk's and head's layers, what the layer checks and switches read.
DETECTOR, DETECTION = "faster_rcnn", "detection"
# model.output: what the network ends with. "classes": a dense classifier whose activation the loss absorbs;
# "features": the last layer's vector as it is, no classifier and no loss (the inference protocol only).
CLASSES, FEATURES = "classes", "features"
OUTPUTS = (CLASSES, FEATURES)


class SpecError(ValueError):
    """The workload spec asks for something the framework modules do not translate."""


class Shape(NamedTuple):
    """A batch-free tensor shape: kind (image, sequence, vector or tokens) and its dims."""

    kind: str
    dims: Tuple[int, ...]  # (H, W, C) for an image, (features,) for a sequence step or a vector, () for tokens

    @property
    def features(self) -> int:
        """The last axis: channels of an image, features of a sequence step or a vector."""
        return self.dims[-1]

    @property
    def size(self) -> int:
        """Numbers per example (a flattened image's length)."""
        n = 1
        for d in self.dims:
            n *= d
        return n


class Pads(NamedTuple):
    """Zeros (or -inf for a pool) added on each side of an image before a conv or pool."""

    top: int
    bottom: int
    left: int
    right: int

    @property
    def symmetric(self) -> bool:
        """Whether a framework's own symmetric `padding=(top, left)` argument gives the same result."""
        return self.top == self.bottom and self.left == self.right


class Layer:
    """One planned layer: the spec's layer with defaults filled in (read it like a dict), its
    position, input and output shapes, (conv2d and pools) the padding on each side, (residual)
    its planned branch and shortcut (an empty shortcut is the identity) and (concat) its planned
    branches."""

    def __init__(self, index: int, spec: Dict[str, Any], input: Shape, output: Shape,
                 pads: Optional[Pads] = None, branch: Optional[List["Layer"]] = None,
                 shortcut: Optional[List["Layer"]] = None,
                 branches: Optional[List[List["Layer"]]] = None) -> None:
        self.index = index
        self.spec = spec
        self.input = input
        self.output = output
        self.pads = pads
        self.branch = branch
        self.shortcut = shortcut
        self.branches = branches

    @property
    def type(self) -> str:
        """The layer type (one of LAYER_KEYS)."""
        return self.spec["type"]

    def __getitem__(self, key: str) -> Any:
        return self.spec[key]

    def get(self, key: str, default: Any = None) -> Any:
        """spec.get(key, default)."""
        return self.spec.get(key, default)

    def __repr__(self) -> str:
        return f"Layer({self.index}, {self.type}, {self.input} -> {self.output}, pads={self.pads})"


class ModelPlan:
    """The layers to build, with shapes, and how the final activation is folded into the loss.

    An encoder-decoder model (architecture "encoder_decoder") runs `encoder` over x (reading len)
    and `layers` over x_dec; the encoder's last LSTM's final (h, c), taken at each sequence's last
    real step, is the initial state of the decoder LSTM marked initial_state = "encoder". The last
    layer is dense without activation: its softmax or sigmoid is applied inside the loss.
    """

    def __init__(self, layers: List[Layer], kind: str, input_shape: Optional[Tuple[int, ...]],
                 encoder: Optional[List[Layer]] = None) -> None:
        self.layers = layers
        # "categorical" (integer labels, logits per class), "binary" (one logit), "sequence", "features"
        # (no classifier: the last layer's vector, never trained: model.output = "features") or "detection"
        # (a detector's trunk and head: bench/detection/detector.py plans the rest)
        self.kind = kind
        self.input_shape = input_shape  # (H, W, C) for images, None for token sequences
        self.encoder = encoder

    @property
    def all_layers(self) -> List[Layer]:
        """Encoder layers (if any), then the main stack's."""
        return (self.encoder or []) + self.layers

    @property
    def flat_layers(self) -> List[Layer]:
        """Every planned layer, residual blocks' branch and shortcut layers and concat branches' layers
        included (after the block)."""
        return _flatten_blocks(self.all_layers)

    @property
    def lstm_units(self) -> List[int]:
        """Units of every LSTM layer, encoder first (each adds 4 x units as a second bias in cuDNN style)."""
        return [layer["units"] for layer in self.all_layers if layer.type == "lstm"]


def window(size: int, kernel: int, stride: int, padding: str) -> Tuple[int, int, int]:
    """(output size, padding before, padding after) of a conv or pool along one axis.

    'valid': no padding, floor((size - window) / stride) + 1. 'same': TensorFlow's rule,
    ceil(size / stride) outputs, total padding max((out - 1) * stride + window - size, 0), the
    smaller half before (so with stride > 1 or an even window the extra one goes after).
    """
    if padding == "valid":
        return (size - kernel) // stride + 1, 0, 0
    out = -(-size // stride)
    total = max((out - 1) * stride + kernel - size, 0)
    return out, total // 2, total - total // 2


def lrn_size(layer: Layer) -> int:
    """An lrn layer's window in channels, 2 * depth_radius + 1: the `size`/`nsize`/`n` of frameworks that name the
    window rather than its radius (and divide alpha by it: PyTorch and MXNet take alpha * size for the plan's alpha)."""
    return 2 * layer["depth_radius"] + 1


def gru_params(layer: Layer) -> int:
    """A gru layer's trainable parameters in cuDNN's form, the count every framework must report:
    3 gate sets (reset, update, candidate; each framework orders them its own way), each an input kernel,
    a recurrent kernel and two bias vectors (input and recurrent: "reset_after", the reset gate applied
    to the recurrent product after its bias, as cuDNN computes it and Keras 3 defaults to)."""
    units = layer["units"]
    return 3 * (layer.input.features * units + units * units + 2 * units)


def untranslated(model: ModelPlan, types: Tuple[str, ...], no_bias: bool = False) -> List[str]:
    """What of a plan a framework module lacks that translates only `types` (and conv2d without bias
    only if `no_bias`)."""
    layers = model.flat_layers
    missing = sorted({layer.type for layer in layers} - set(types))
    if not no_bias and any(layer.type == "conv2d" and not layer["bias"] for layer in layers):
        missing.append("conv2d with bias = false")
    return missing


def require(model: ModelPlan, types: Tuple[str, ...], who: str, no_bias: bool = False) -> None:
    """SpecError (one line) when the plan needs something `who` does not translate (see untranslated())."""
    missing = untranslated(model, types, no_bias)
    if missing:
        raise SpecError(f"{who} does not translate {', '.join(missing)} (only {', '.join(types)}); "
                        f"run this workload in the current era")


def pool_counts(layer: Layer) -> Tuple[List[int], List[int]]:
    """How many real (unpadded) values each output row and column of a pool window covers.

    An avgpool2d divides output (i, j)'s sum by rows[i] * cols[j] (TensorFlow's 'same' average); a
    framework without that option pads zeros, pools with the full window as divisor and rescales.
    """
    (h, w, _), (oh, ow, _) = layer.input.dims, layer.output.dims
    size, stride, pads = layer["pool"], layer["stride"], layer.pads
    return (_covered(h, oh, size, stride, pads.top), _covered(w, ow, size, stride, pads.left))


def _covered(size: int, out: int, window_size: int, stride: int, before: int) -> List[int]:
    counts = []
    for o in range(out):
        start = o * stride - before
        counts.append(min(start + window_size, size) - max(start, 0))
    return counts


def _flatten_blocks(layers: List[Layer]) -> List[Layer]:
    out = []
    for layer in layers:
        out.append(layer)
        if layer.branch is not None:
            out += _flatten_blocks(layer.branch) + _flatten_blocks(layer.shortcut or [])
        for branch in layer.branches or []:
            out += _flatten_blocks(branch)
    return out


def plan(spec: dict) -> ModelPlan:
    """Validate spec['model'] and the loss, and plan every layer's shapes and padding."""
    if spec["model"].get("architecture") == DETECTOR:
        # The detector plans its trunk and head itself (with these functions); its model's layers are theirs.
        from bench.detection import detector

        planned = detector.plan(spec)
        return ModelPlan(planned.trunk + planned.head, DETECTION, None)
    output = spec["model"].get("output", CLASSES)
    if output not in OUTPUTS:
        raise SpecError(f"model.output {output!r} is not one of {', '.join(OUTPUTS)}")
    if output == FEATURES:
        return _plan_features(spec)
    loss = spec["training"]["loss"]
    if loss not in LOSSES:
        raise SpecError(f"unsupported loss '{loss}'; supported: {', '.join(LOSSES)}")
    kind, out_activation = LOSSES[loss]
    model = spec["model"]
    architecture = model.get("architecture", "stack")
    if architecture not in ARCHITECTURES:
        raise SpecError(f"unsupported architecture {architecture!r}; supported: {', '.join(ARCHITECTURES)}")
    raw = _layer_list(model.get("layers") or [], "layer")
    encoder_decoder = architecture == "encoder_decoder"
    raw_encoder = _layer_list(model.get("encoder") or [], "encoder layer") if encoder_decoder else None
    last = raw[-1] if raw else {}
    if last.get("type") != "dense" or last.get("activation") not in (out_activation, None, "linear"):
        raise SpecError(f"the last layer must be dense with activation {out_activation} for loss {loss}")
    for i, layer in enumerate(raw[:-1]):
        for sub in [layer] + _sublayers(layer):
            if sub.get("activation") not in HIDDEN_ACTIVATIONS:
                raise SpecError(f"layer {i}: activation {sub['activation']!r} only allowed on the output layer")
    expected_units = 1 if kind == "binary" else model["num_classes"]
    if last["units"] != expected_units:
        raise SpecError(f"the output layer has {last['units']} units, the loss needs {expected_units}")
    lstms = [layer for layer in raw if layer["type"] == "lstm"]
    if kind == "sequence" and not all(layer["return_sequences"] for layer in lstms):
        raise SpecError(f"loss {loss} predicts every step: every LSTM needs return_sequences = true")
    if kind == "sequence" and not all(layer["return_sequences"] for layer in raw if layer["type"] == "gru"):
        raise SpecError(f"loss {loss} predicts every step: every GRU needs return_sequences = true")
    _check_initial_states(raw_encoder, lstms)
    raw[-1] = dict(last, activation=None)
    image = model.get("input_shape")
    input_shape = tuple(image) if image else None
    first = Shape(IMAGE, input_shape) if input_shape else Shape(TOKENS, ())
    encoder = _shapes(raw_encoder, Shape(TOKENS, ())) if raw_encoder is not None else None
    return ModelPlan(_shapes(raw, first), kind, input_shape, encoder)


def _plan_features(spec: dict) -> ModelPlan:
    """Plan a features model (model.output = "features"): a stack over images whose last layer gives a
    vector, hidden activations only, timed by the inference protocol (no loss: it is never trained)."""
    model = spec["model"]
    protocol = measurement.of_spec(spec)["protocol"]
    if protocol != measurement.INFERENCE:
        raise SpecError(f"a features model (model.output = \"{FEATURES}\") is only run forward, but the spec's "
                        f"measurement protocol is {protocol!r}: give it measurement = {{ protocol = "
                        f"\"{measurement.INFERENCE}\", warmup = W, iterations = N }}")
    if model.get("architecture", "stack") != "stack" or not model.get("input_shape"):
        raise SpecError("a features model must be a stack of layers over images (architecture \"stack\", "
                        "model.input_shape)")
    raw = _layer_list(model.get("layers") or [], "layer")
    for i, layer in enumerate(raw):
        for sub in [layer] + _sublayers(layer):
            if sub.get("activation") not in HIDDEN_ACTIVATIONS:
                raise SpecError(f"layer {i}: activation {sub['activation']!r}: a features model has no output layer")
    input_shape = tuple(model["input_shape"])
    layers = _shapes(raw, Shape(IMAGE, input_shape))
    if not layers or layers[-1].output.kind != VECTOR:
        got = layers[-1].output if layers else "no layers"
        raise SpecError(f"a features model must end with a vector (e.g. global_avgpool or flatten), not {got}")
    return ModelPlan(layers, FEATURES, input_shape)


def plan_images(raw_layers: List[dict], input_shape: Tuple[int, int, int], what: str) -> List[Layer]:
    """Plan a list of image layers (hidden activations only) from an (H, W, C) input: a detector's trunk or
    head (bench/detection/detector.py), which has no classifier of its own. `what` names the list in errors."""
    raw = _layer_list(raw_layers or [], what)
    for i, layer in enumerate(raw):
        for sub in [layer] + _sublayers(layer):
            if sub.get("activation") not in HIDDEN_ACTIVATIONS:
                raise SpecError(f"{what} {i}: activation {sub['activation']!r} is not a hidden activation")
    if not raw:
        raise SpecError(f"the {what}s are missing: give at least one layer")
    return _shapes(raw, Shape(IMAGE, tuple(input_shape)), what)


def output_values(model: ModelPlan) -> int:
    """Values the network computes per example: a features model's vector length (2,048 for ResNet-50
    cut after its global average pool), a classifier's logits."""
    return model.layers[-1].output.features


def _shapes(layers: List[dict], shape: Shape, where: str = "layer") -> List[Layer]:
    """Each layer with its input and output shape (and padding), in order; a residual layer with
    repeat N becomes N planned blocks."""
    planned = []  # type: List[Layer]
    for i, layer in enumerate(layers):
        if layer["type"] == "residual":
            for r in range(layer["repeat"]):
                block = _block(layer, shape, f"{where} {i}" + (f" (repeat {r + 1})" if r else ""), r > 0)
                block.index = len(planned)
                planned.append(block)
                shape = block.output
            continue
        if layer["type"] == "concat":
            block = _concat(layer, shape, f"{where} {i}")
            block.index = len(planned)
            planned.append(block)
            shape = block.output
            continue
        out, pads = _output(layer, shape, f"{where} {i}")
        planned.append(Layer(len(planned), layer, shape, out, pads))
        shape = out
    return planned


def _block(layer: dict, shape: Shape, where: str, repeated: bool) -> Layer:
    """One residual block: its branch planned, the shortcut chosen and planned, the shapes checked."""
    _need(shape, IMAGE, where, "residual")
    raw_branch = layer["layers"]
    if repeated:  # later repeats keep the shape: every conv at stride 1
        raw_branch = [dict(sub, stride=1) if sub["type"] == "conv2d" else sub for sub in raw_branch]
    branch = _shapes(raw_branch, shape, f"{where} branch layer")
    out = branch[-1].output
    if out == shape:
        return Layer(0, layer, shape, out, branch=branch, shortcut=[])
    if repeated:
        raise SpecError(f"{where}: a repeated residual block must keep its shape {shape.dims} "
                        f"(its branch gives {out.dims}); change only the first block's stride and filters")
    if layer["shortcut"] == "identity" or out.kind != IMAGE:
        raise SpecError(f"{where}: the residual branch gives {out.kind} {out.dims} but the identity shortcut "
                        f"keeps {shape.dims}; use shortcut = \"projection\" or make the branch keep the shape")
    stride = 1
    for sub in branch:
        if sub.type in WINDOWED:
            stride *= sub["stride"]
    norms = [sub for sub in branch if sub.type == "batchnorm"]
    norm = dict(norms[0].spec) if norms else dict(LAYER_KEYS["batchnorm"], type="batchnorm")
    raw_shortcut = [dict(LAYER_KEYS["conv2d"], type="conv2d", filters=out.features, kernel=1, stride=stride,
                         bias=False), norm]
    shortcut = _shapes(raw_shortcut, shape, f"{where} projection layer")
    if shortcut[-1].output != out:
        raise SpecError(f"{where}: the projection shortcut gives {shortcut[-1].output.dims} (1x1 conv, stride "
                        f"{stride}) but the residual branch gives {out.dims}; use 'same' padding in the branch")
    return Layer(0, layer, shape, out, branch=branch, shortcut=shortcut)


def _concat(layer: dict, shape: Shape, where: str) -> Layer:
    """Parallel branches from one input, their outputs stacked on channels: H and W must agree."""
    _need(shape, IMAGE, where, "concat")
    branches = [_shapes(raw, shape, f"{where} branch {b} layer") for b, raw in enumerate(layer["branches"])]
    outs = [branch[-1].output for branch in branches]
    sizes = sorted({out.dims[:2] for out in outs})
    if len(sizes) > 1:
        given = ", ".join(f"branch {b}: {out.dims}" for b, out in enumerate(outs))
        raise SpecError(f"{where} (concat): the branches' outputs differ in height x width ({given}); give every "
                        f"branch the same strides and 'same' padding so they agree")
    out = Shape(IMAGE, sizes[0] + (sum(o.features for o in outs),))
    return Layer(0, layer, shape, out, branches=branches)


def _output(layer: dict, shape: Shape, i: str) -> Tuple[Shape, Optional[Pads]]:
    kind = layer["type"]
    if kind in WINDOWED:
        h, w, c = _need(shape, IMAGE, i, kind).dims
        size = layer["kernel"] if kind == "conv2d" else layer["pool"]
        (h, top, bottom), (w, left, right) = (window(n, size, layer["stride"], layer["padding"]) for n in (h, w))
        channels = layer["filters"] if kind == "conv2d" else c
        if h < 1 or w < 1:
            raise SpecError(f"{i}: {kind} leaves no output (input {shape.dims})")
        return Shape(IMAGE, (h, w, channels)), Pads(top, bottom, left, right)
    if kind == "flatten":
        return Shape(VECTOR, (_need(shape, IMAGE, i, kind).size,)), None
    if kind == "global_avgpool":
        return Shape(VECTOR, (_need(shape, IMAGE, i, kind).features,)), None
    if kind == "lrn":  # across an image's channels, at every pixel
        return _need(shape, IMAGE, i, kind), None
    if kind == "batchnorm" and shape.kind not in (IMAGE, VECTOR):  # per channel of an image, per feature of a vector
        raise SpecError(f"{i}: batchnorm needs an image or a vector input (got {shape.kind} {shape.dims})")
    if kind == "dense":
        if shape.kind not in (SEQUENCE, VECTOR):  # on a sequence it maps the last axis: every time step
            raise SpecError(f"{i}: dense needs flat input (add a flatten; got {shape.kind} {shape.dims})")
        return Shape(shape.kind, (layer["units"],)), None
    if kind == "embedding":
        return Shape(SEQUENCE, (layer["output_dim"],)), None
    if kind in ("lstm", "gru"):
        _need(shape, SEQUENCE, i, kind)
        return Shape(SEQUENCE if layer["return_sequences"] else VECTOR, (layer["units"],)), None
    return shape, None  # dropout, batchnorm, activation


def _need(shape: Shape, kind: str, i: str, layer_type: str) -> Shape:
    if shape.kind != kind:
        raise SpecError(f"{i}: {layer_type} needs {'an' if kind == IMAGE else 'a'} {kind} input "
                        f"(got {shape.kind} {shape.dims})")
    return shape


def _layer_list(raw_layers: List[dict], what: str) -> List[Dict[str, Any]]:
    """Each layer of a list validated against LAYER_KEYS, with its defaults filled in."""
    layers = []
    for i, raw in enumerate(raw_layers):
        kind_of = raw.get("type")
        if kind_of not in LAYER_KEYS:
            raise SpecError(f"{what} {i}: unsupported type {kind_of!r}; supported: {', '.join(LAYER_KEYS)}")
        allowed = LAYER_KEYS[kind_of]
        unknown = set(raw) - set(allowed) - {"type"}
        if unknown:
            raise SpecError(f"{what} {i} ({kind_of}): unknown keys {sorted(unknown)}")
        layer = dict(allowed, type=kind_of)
        layer.update(raw)
        missing = [k for k, v in allowed.items() if v is None and k not in OPTIONAL_KEYS and layer[k] is None]
        if missing:
            raise SpecError(f"{what} {i} ({kind_of}): missing {missing}")
        if kind_of in POOLS and layer["stride"] is None:
            layer["stride"] = layer["pool"]
        if layer.get("padding") not in (None, "valid", "same"):
            raise SpecError(f"{what} {i} ({kind_of}): padding must be 'valid' or 'same'")
        if kind_of == "activation" and layer["activation"] in (None, "linear"):
            raise SpecError(f"{what} {i} (activation): name the nonlinearity, one of relu, tanh, sigmoid")
        if kind_of == "batchnorm" and not (0 <= layer["momentum"] < 1 and layer["epsilon"] > 0):
            raise SpecError(f"{what} {i} (batchnorm): momentum must be in [0, 1) (Keras' convention: "
                            f"moving = momentum * moving + (1 - momentum) * batch) and epsilon > 0")
        if kind_of == "lrn":
            _check_lrn(layer, f"{what} {i}")
        if kind_of == "residual":
            _check_residual(layer, f"{what} {i}")
        if kind_of == "concat":
            _check_concat(layer, f"{what} {i}")
        layers.append(layer)
    return layers


def _check_lrn(layer: Dict[str, Any], where: str) -> None:
    """An lrn's numbers: a whole depth_radius >= 0, bias > 0 and alpha >= 0 (so the base of the power stays
    positive), any real beta."""
    def number(key: str) -> bool:
        return isinstance(layer[key], (int, float)) and not isinstance(layer[key], bool)

    radius = layer["depth_radius"]
    if not isinstance(radius, int) or isinstance(radius, bool) or radius < 0:
        raise SpecError(f"{where} (lrn): depth_radius must be a whole number >= 0 (the window is 2 * depth_radius + 1 "
                        f"channels; got {radius!r})")
    if not all(number(key) for key in ("bias", "alpha", "beta")) or layer["bias"] <= 0 or layer["alpha"] < 0:
        raise SpecError(f"{where} (lrn): bias must be a number > 0, alpha >= 0 and beta a number (TensorFlow's "
                        f"convention; got bias {layer['bias']!r}, alpha {layer['alpha']!r}, beta {layer['beta']!r})")


def _check_residual(layer: Dict[str, Any], where: str) -> None:
    """A residual block's own keys; its branch layers validated (nested blocks are not supported)."""
    if layer["shortcut"] not in SHORTCUTS:
        raise SpecError(f"{where} (residual): shortcut must be one of {', '.join(SHORTCUTS)}")
    if not isinstance(layer["repeat"], int) or layer["repeat"] < 1:
        raise SpecError(f"{where} (residual): repeat must be a whole number >= 1")
    if not isinstance(layer["layers"], list) or not layer["layers"]:
        raise SpecError(f"{where} (residual): layers must be a non-empty list (the branch)")
    layer["layers"] = _layer_list(layer["layers"], f"{where} branch layer")
    if any(sub["type"] not in BRANCH_LAYER_TYPES for sub in layer["layers"]):
        raise SpecError(f"{where} (residual): a branch holds image layers only ({', '.join(BRANCH_LAYER_TYPES)})")


def _check_concat(layer: Dict[str, Any], where: str) -> None:
    """A concat's branches: two or more non-empty lists of image layers (nested blocks are not supported)."""
    branches = layer["branches"]
    if not isinstance(branches, list) or len(branches) < 2 or not all(isinstance(b, list) and b for b in branches):
        raise SpecError(f"{where} (concat): branches must be a list of two or more non-empty layer lists "
                        f"(a single branch is a plain stack: write its layers in place)")
    layer["branches"] = [_layer_list(raw, f"{where} branch {b} layer") for b, raw in enumerate(branches)]
    if any(sub["type"] not in BRANCH_LAYER_TYPES for branch in layer["branches"] for sub in branch):
        raise SpecError(f"{where} (concat): a branch holds image layers only ({', '.join(BRANCH_LAYER_TYPES)})")


def _sublayers(layer: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The layers inside a residual block or a concat (none for any other layer)."""
    if layer["type"] == "residual":
        return layer["layers"]
    if layer["type"] == "concat":
        return [sub for branch in layer["branches"] for sub in branch]
    return []


def _check_initial_states(encoder: Optional[List[dict]], decoder_lstms: List[dict]) -> None:
    """An encoder-decoder hands over exactly one state: encoder's last LSTM -> one decoder LSTM."""
    takers = [layer for layer in decoder_lstms if layer["initial_state"] is not None]
    if any(layer["initial_state"] != "encoder" for layer in takers):
        raise SpecError("an LSTM's initial_state may only be \"encoder\"")
    if encoder is None:
        if takers:
            raise SpecError('initial_state = "encoder" needs architecture = "encoder_decoder"')
        return
    enc_lstms = [layer for layer in encoder if layer["type"] == "lstm"]
    if not enc_lstms or encoder[-1]["type"] != "lstm" or encoder[-1]["return_sequences"]:
        raise SpecError("the encoder must end with an LSTM that returns its final state (return_sequences = false)")
    if len(takers) != 1 or takers[0]["units"] != encoder[-1]["units"]:
        raise SpecError('exactly one decoder LSTM needs initial_state = "encoder", with the encoder LSTM\'s units')
