"""What a paper-era run cannot show, checked inside the framework's paper image (CPython 3.6: no postponed
annotations, no walrus), against the image's own bench/ and the module a run loads.

    python inimage.py CHECKS.json      (harness.run_in_image mounts this file at /checks and the data at /data)

CHECKS.json: {"framework", "padding": {workload: spec}, "evaluations": a spec or null, "extra": names of
EXTRA checks, "extra_specs": {an EXTRA check's name: the spec whose trainer it reads} (those checks get the
trainer as a second argument), "data": {workload: its prepared folder}, "detector": {"spec", "data"} or null}.
Prints one JSON object: {"versions", "padding": {workload: max |logits(padded) - logits(padding cut off)|},
"evaluations": [accuracy, accuracy again] or null, each extra check's result under its name, and "detector":
detector_check's result or null}. The trainers are not trained: a model that read the
padding would change its logits under any weights, and dropout left on at test time would make two
evaluations of the same weights differ.
"""

import json
import re
import sys

import numpy as np

from bench import prepared
from bench.frameworks import load

SEED = 1234
ROWS = 8  # test sequences of one length compared at once
DETECTOR_ROWS = ([0, 1, 2, 3], [0, 1])  # the detector's training and test images (as tests/bench/detection/probe)
DETECTOR_EPOCHS = 3


def data_of(folder, spec):
    """The prepared arrays under the roles the spec's [arrays] table binds, as a run reads them."""
    return prepared.bind_roles(prepared.load(folder), spec.get("arrays"))


def same_length_rows(lengths):
    """The first ROWS test rows as long as the first one, and that length."""
    length = int(lengths[0])
    return np.flatnonzero(lengths == length)[:ROWS], length


def padding_diff(module, trainer, data):
    """Largest change of the logits when the source's post-padding is cut off."""
    rows, length = same_length_rows(data.test["len"])
    batch = {role: values[rows] for role, values in data.test.items()}
    cut = dict(batch, x=np.ascontiguousarray(batch["x"][:, :length]))
    padded_logits = np.asarray(trainer.outputs(batch))
    if module.NAME == "keras" and "x_dec" not in batch:
        # A Keras Sequential fixes its input width: the same weights in a model built for the cut width.
        narrow = module.build_model(trainer.spec_model, length)
        narrow.set_weights(trainer.model.get_weights())
        cut_logits = np.asarray(narrow.predict_on_batch(cut["x"].astype(np.int32)))
    else:
        cut_logits = np.asarray(trainer.outputs(cut))
    return float(np.abs(padded_logits - cut_logits).max())


def keras_weight_decay(module):
    """Three steps of a Dense layer with Keras 2.2.4's SGD (momentum) and Adam and decoupled weight decay
    through the module's constraint hook, beside the rule in NumPy (float64): w = w (1 - lr wd) + the
    optimizer's step from the gradient at w. {optimizer: {"keras": weights, "rule": weights}}."""
    keras = module.keras
    x = np.array([[1.0, 2.0], [0.5, -1.0], [-1.5, 0.25]], dtype="float32")
    y = np.array([[1.0], [0.0], [2.0]], dtype="float32")
    out = {}
    for opt in ({"name": "sgd", "lr": 0.1, "momentum": 0.5, "weight_decay": 0.05},
                {"name": "adam", "lr": 0.1, "beta1": 0.9, "beta2": 0.999, "epsilon": 1e-7, "weight_decay": 0.05}):
        model = keras.models.Sequential([keras.layers.Dense(1, input_shape=(2,), kernel_initializer="ones")])
        module._add_weight_decay(model, opt["lr"], opt["weight_decay"])
        model.compile(optimizer=module.make_optimizer(opt), loss="mse")
        w, b = np.ones((2, 1)), np.zeros(1)
        slots = [np.zeros_like(w), np.zeros_like(b), np.zeros_like(w), np.zeros_like(b)]
        for t in range(1, 4):
            model.train_on_batch(x, y)
            err = x.dot(w) + b - y
            grads = [2 * x.T.dot(err) / len(x), 2 * err.mean(axis=0)]
            params = []
            for i, (p, g) in enumerate(zip((w, b), grads)):
                if opt["name"] == "sgd":
                    slots[i] = opt["momentum"] * slots[i] - opt["lr"] * g
                    step = slots[i]
                else:
                    slots[i] = 0.9 * slots[i] + 0.1 * g
                    slots[i + 2] = 0.999 * slots[i + 2] + 0.001 * g ** 2
                    lr_t = opt["lr"] * np.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t)
                    step = -lr_t * slots[i] / (np.sqrt(slots[i + 2]) + opt["epsilon"])
                params.append(p * (1 - opt["lr"] * opt["weight_decay"]) + step)
            w, b = params
        out[opt["name"]] = {"keras": [v.ravel().tolist() for v in model.get_weights()],
                            "rule": [w.ravel().tolist(), b.ravel().tolist()]}
    return out


def theano_strided_same(module):
    """A stride-2 'same' conv over an even input (TensorFlow's rule pads 0 before and 1 after): its explicit
    pads and the shapes of its output and of every parameter's gradient. Theano infers the conv's output shape
    from the input-shape hint, which must be the padded input's, or the gradient fails to build."""
    from bench import modelplan
    theano, T = module.theano, module.T
    spec = {"name": "strided-same", "family": "cnn", "training": {"loss": "categorical_crossentropy"},
            "model": {"input_shape": [8, 8, 3], "num_classes": 4, "layers": [
                {"type": "conv2d", "filters": 4, "kernel": 3, "stride": 2, "padding": "same", "activation": "relu"},
                {"type": "flatten"}, {"type": "dense", "units": 4, "activation": "softmax"}]}}
    net = module.SpecNet(modelplan.plan(spec), 0)
    x = T.tensor4("x")
    out = net.forward(x, None, False)
    fn = theano.function([x], [out] + theano.grad(out.sum(), net.params))
    values = fn(np.random.RandomState(0).rand(2, 3, 8, 8).astype("float32"))
    return {"pads": list(net.steps[0]["explicit_pads"]), "shapes": [list(v.shape) for v in values]}


# -- mnist_layers: the model read back through the framework's own introspection ----------------------
# One neutral entry per layer, in forward order: {"kind": conv | maxpool | dropout | flatten | dense, "out": the
# per-example output shape, channels first ([32, 26, 26], [9216]), "params": the layer's weights and biases}, and by
# kind: "act" (conv, dense): the activation the framework applies right after the layer, folded into it ("relu",
# or "linear" where none: every kit module's last dense gives logits, the softmax is inside its loss), "kernel"
# (conv) and "pool" (maxpool): the window, "rate" (dropout): the drop probability as the framework's graph or layer
# holds it as a value. Nothing here reads the kit's plan (bench/modelplan.py) or the spec: that is the path under test.
def _entry(kind, out):
    """A neutral layer entry of `kind` with per-example output shape `out` (activation, if any, still to come)."""
    entry = {"kind": kind, "out": [int(d) for d in out], "params": 0}
    if kind in ("conv", "dense"):
        entry["act"] = "linear"
    return entry


def _channels_first(dims):
    """A per-example channels-last image shape (H, W, C) as [C, H, W]; any other shape as it is."""
    dims = [int(d) for d in dims]
    return dims[-1:] + dims[:-1] if len(dims) == 3 else dims


def _size(shape):
    """The number of values in an array of `shape` (1 for a scalar's empty shape)."""
    return int(np.prod([int(d) for d in shape]))


KERAS_KINDS = {"Conv2D": "conv", "MaxPooling2D": "maxpool", "Dropout": "dropout", "Flatten": "flatten",
               "Dense": "dense"}


def _keras_layers(module, trainer):
    """Keras 2.2.4: model.layers (the Sequential's, its InputLayer left out by Keras): each layer's class, its
    weights' shapes, output_shape (channels_last), activation, kernel_size / pool_size and Dropout.rate; the total
    from model.count_params()."""
    K = module.K
    model = trainer.model
    layers = []
    for layer in model.layers:
        name = type(layer).__name__
        entry = _entry(KERAS_KINDS.get(name, name), _channels_first(layer.output_shape[1:]))
        entry["params"] = sum(_size(K.int_shape(w)) for w in layer.weights)
        if "act" in entry:
            entry["act"] = layer.activation.__name__
        if name == "Conv2D":
            entry["kernel"] = list(layer.kernel_size)
        elif name == "MaxPooling2D":
            entry["pool"] = list(layer.pool_size)
        elif name == "Dropout":
            entry["rate"] = float(layer.rate)
        layers.append(entry)
    return layers, int(model.count_params())


TF_KINDS = {"Conv2D": "conv", "MaxPool": "maxpool", "RandomUniform": "dropout", "Reshape": "flatten",
            "MatMul": "dense"}
TF_ACTIVATIONS = {"Relu": "relu", "Tanh": "tanh", "Sigmoid": "sigmoid"}


def _tf_dropout(tf, op):
    """A dropout's (keep probability, output tensor) from its RandomUniform op: TensorFlow 1.11's nn.dropout adds
    the constant keep_prob to the uniform noise, floors it (the 0/1 mask) and multiplies x / keep_prob by it."""
    todo, seen = [op], set()
    while todo:
        current = todo.pop(0)
        if current in seen:
            continue
        seen.add(current)
        if current.type == "Floor":
            keep = [float(tf.make_ndarray(t.op.get_attr("value"))) for t in current.inputs[0].op.inputs
                    if t.op.type == "Const"]
            return keep[0], current.outputs[0].consumers()[0].outputs[0]
        todo.extend(c for t in current.outputs for c in t.consumers())
    raise RuntimeError("no dropout mask (Floor) after " + op.name)


def _tensorflow_layers(module, trainer):
    """TensorFlow 1.11: the ops the logits are computed from (their creation order, which is the forward order):
    Conv2D, MaxPool, the dropout's RandomUniform, Reshape, MatMul open a layer; a Relu (Tanh, Sigmoid) after one is its
    activation;
    every trainable variable read by an op goes to the layer that op belongs to (its size from the variable's
    shape). Shapes are the tensors' static ones (NHWC); the total is the sum of tf.trainable_variables()' sizes."""
    tf = module.tf
    graph = trainer.graph
    position = {op: i for i, op in enumerate(graph.get_operations())}
    ancestors, todo = set(), [trainer.logits.op]
    while todo:
        op = todo.pop()
        if op not in ancestors:
            ancestors.add(op)
            todo.extend(t.op for t in op.inputs)
    with graph.as_default():
        variables = tf.trainable_variables()
    read = {v.value().name: v for v in variables}  # a variable as its ops read it (its snapshot)
    layers = []
    for op in sorted(ancestors, key=position.get):
        kind = TF_KINDS.get(op.type)
        if kind == "dropout":
            keep, out = _tf_dropout(tf, op)
            entry = _entry(kind, _channels_first(out.shape.as_list()[1:]))
            entry["rate"] = round(1.0 - keep, 6)  # keep_prob is a float32 constant
            layers.append(entry)
        elif kind is not None:
            layers.append(_entry(kind, _channels_first(op.outputs[0].shape.as_list()[1:])))
            if kind == "conv":
                layers[-1]["kernel"] = op.inputs[1].shape.as_list()[:2]
            elif kind == "maxpool":
                layers[-1]["pool"] = list(op.get_attr("ksize"))[1:3]
        elif op.type in TF_ACTIVATIONS and layers:
            layers[-1]["act"] = TF_ACTIVATIONS[op.type]
        for t in op.inputs:
            if t.name in read and layers:
                layers[-1]["params"] += read[t.name].shape.num_elements()
    return layers, sum(v.shape.num_elements() for v in variables)


MXNET_KINDS = {"Convolution": "conv", "Pooling": "maxpool", "Dropout": "dropout", "Flatten": "flatten",
               "FullyConnected": "dense"}


def _mxnet_layers(module, trainer):
    """MXNet 1.3.0 Gluon: the network called on a symbol, the symbol's JSON nodes in order (Convolution, Pooling,
    Dropout, Flatten, FullyConnected open a layer, an Activation after one is its activation; attrs kernel, p,
    pool_type), the inputs of each node that are parameters (their shapes from infer_shape), and each node's output
    shape from infer_shape of the symbol's internals (NCHW); the total from the Gluon parameters (collect_params)."""
    mx = module.mx
    sym = trainer.net(mx.sym.var("data"))
    data = (1,) + tuple(trainer.test.arrays["x"].shape[1:])
    arg_shapes, _, _ = sym.infer_shape(data=data)
    params = {name: shape for name, shape in zip(sym.list_arguments(), arg_shapes) if name != "data"}
    internals = sym.get_internals()
    _, out_shapes, _ = internals.infer_shape(data=data)
    outputs = dict(zip(internals.list_outputs(), out_shapes))
    nodes = json.loads(sym.tojson())["nodes"]
    layers = []
    for node in nodes:
        op, attrs = node["op"], node.get("attrs") or node.get("attr") or node.get("param") or {}
        kind = MXNET_KINDS.get(op)
        if op == "Pooling" and attrs.get("pool_type") != "max":
            kind = "pool_" + attrs.get("pool_type", "")
        if kind is not None:
            entry = _entry(kind, outputs[node["name"] + "_output"][1:])
            if op == "Convolution":
                entry["kernel"] = [int(k) for k in re.findall(r"\d+", attrs["kernel"])]
            elif op == "Pooling":
                entry["pool"] = [int(k) for k in re.findall(r"\d+", attrs["kernel"])]
            elif op == "Dropout":
                entry["rate"] = float(attrs["p"])
            layers.append(entry)
        elif op == "Activation" and layers:
            layers[-1]["act"] = attrs["act_type"]
        for source, _, _ in node["inputs"]:
            name = nodes[source]["name"]
            if nodes[source]["op"] == "null" and name in params and layers:
                layers[-1]["params"] += _size(params[name])
    total = sum(_size(p.shape) for p in trainer.net.collect_params().values() if p.grad_req != "null")
    return layers, total


CHAINER_KINDS = {"Convolution2DFunction": "conv", "MaxPooling2D": "maxpool", "Dropout": "dropout",
                 "Reshape": "flatten", "LinearFunction": "dense"}
CHAINER_ACTIVATIONS = {"ReLU": "relu", "Tanh": "tanh", "Sigmoid": "sigmoid"}


def _chainer_layers(module, trainer):
    """Chainer 4.5.0: one forward pass of one test image in training mode (so the dropouts are in the graph), its
    function nodes from chainer.computational_graph in rank order (Convolution2DFunction, MaxPooling2D, Dropout,
    Reshape, LinearFunction open a layer, a ReLU (Tanh, Sigmoid) after one is its activation), their output nodes'
    shapes (NCHW),
    the parameters among their inputs, kh/kw and dropout_ratio; the total from the chain's params()."""
    chainer = module.chainer
    with chainer.using_config("train", True), chainer.using_config("enable_backprop", True):
        y = trainer.model(trainer.test["x"][:1])
    graph = chainer.computational_graph.build_computational_graph([y])
    functions = sorted((n for n in graph.nodes if isinstance(n, chainer.FunctionNode)), key=lambda n: n.rank)
    params = {id(p.node): p for p in trainer.model.params()}
    layers = []
    for fn in functions:
        name = type(fn).__name__
        kind = CHAINER_KINDS.get(name)
        if kind is not None:
            entry = _entry(kind, fn.outputs[0]().shape[1:])
            if name == "Convolution2DFunction":
                entry["kernel"] = list(fn.inputs[1].shape[2:])
            elif name == "MaxPooling2D":
                entry["pool"] = [fn.kh, fn.kw]
            elif name == "Dropout":
                entry["rate"] = float(fn.dropout_ratio)
            layers.append(entry)
        elif name in CHAINER_ACTIVATIONS and layers:
            layers[-1]["act"] = CHAINER_ACTIVATIONS[name]
        for node in fn.inputs:
            if id(node) in params and layers:
                layers[-1]["params"] += int(params[id(node)].size)
    return layers, int(sum(p.size for p in trainer.model.params()))


def _theano_layers(module, trainer):
    """Theano 1.0.2: the training graph of the trainer's network (its forward with dropout, over the trainer's own
    input variable) in theano.gof.graph.io_toposort order, the nodes that depend on the input: AbstractConv2d, Pool,
    the dropout mask's mrg_uniform, Reshape, Dot open a layer, an activation's elementwise op after one
    (THEANO_ACTIVATIONS) is its activation; each float shared variable (a parameter; the random state is int32)
    goes to the layer of the first input-dependent node it feeds. The dropout rate is 1 - the constant the uniform
    noise is compared with; output shapes are the layers' outputs evaluated on one test image (NCHW); the total
    sums the shared variables."""
    theano = module.theano
    gof, SharedVariable = theano.gof.graph, theano.compile.SharedVariable
    x = trainer.inputs["x"]
    out = trainer.net.forward(x, None, deterministic=False)
    nodes = gof.io_toposort([x], [out])
    clients, on_path, anchors = {}, {x}, []  # anchors: (position, kind, node)
    for position, node in enumerate(nodes):
        for var in node.inputs:
            clients.setdefault(var, []).append(node)
        if any(var in on_path for var in node.inputs):
            on_path.update(node.outputs)
            kind = _theano_kind(node.op)
            if kind is not None:
                anchors.append((position, kind, node))
    layer_nodes = [a for a in anchors if not a[1].startswith("act:")]
    sample = [node.outputs[1] if kind == "dropout" else node.outputs[0] for _, kind, node in layer_nodes]
    fn = theano.function([x], sample, on_unused_input="ignore")
    values = fn(trainer.test_data["x"].get_value(borrow=True)[:1])
    layers = []
    for (_, kind, node), value in zip(layer_nodes, values):
        entry = _entry(kind, value.shape[1:])
        if kind == "conv":
            entry["kernel"] = list(node.inputs[1].get_value(borrow=True).shape[2:])
        elif kind == "maxpool":
            entry["pool"] = [int(k) for k in node.inputs[1].data]
        elif kind == "dropout":
            entry["rate"] = round(1.0 - _theano_keep(node.outputs[1], clients), 6)
        layers.append(entry)
    starts = [position for position, _, _ in layer_nodes]

    def layer_at(position):
        """The layer a node at `position` of the toposort belongs to: the last one opened at or before it."""
        return layers[max(i for i, start in enumerate(starts) if start <= position)]

    for position, kind, _ in anchors:
        if kind.startswith("act:"):
            layer_at(position)["act"] = kind[len("act:"):]
    index = {node: i for i, node in enumerate(nodes)}
    shared = [v for v in gof.inputs([out]) if isinstance(v, SharedVariable) and v.dtype == theano.config.floatX]
    for var in shared:
        todo, first = [var], None  # the first input-dependent node the parameter feeds
        while todo:
            for node in clients.get(todo.pop(), ()):
                if any(o in on_path for o in node.outputs) and any(i in on_path for i in node.inputs):
                    first = index[node] if first is None else min(first, index[node])
                else:
                    todo.extend(node.outputs)
        layer_at(first)["params"] += _size(var.get_value(borrow=True).shape)
    return layers, sum(_size(v.get_value(borrow=True).shape) for v in shared)


THEANO_KINDS = {"AbstractConv2d": "conv", "mrg_uniform": "dropout", "Reshape": "flatten", "Dot": "dense"}
# The elementwise op of each activation the graph builds: T.nnet.relu is 0.5 (x + |x|), T.tanh, T.nnet.sigmoid.
THEANO_ACTIVATIONS = {"Abs": "relu", "Tanh": "tanh", "ScalarSigmoid": "sigmoid"}


def _theano_kind(op):
    """What a Theano op on the input's path stands for: a layer's kind, "act:<name>" for an activation's op, or None."""
    name = type(op).__name__
    if name == "Pool":
        return "maxpool" if op.mode == "max" else "pool_" + op.mode
    if name == "Elemwise" and type(op.scalar_op).__name__ in THEANO_ACTIVATIONS:
        return "act:" + THEANO_ACTIVATIONS[type(op.scalar_op).__name__]
    return THEANO_KINDS.get(name)


def _theano_keep(sample, clients):
    """The keep probability of a dropout mask: the constant its uniform sample is compared with (`x < p`)."""
    todo = [sample]
    while todo:
        for node in clients.get(todo.pop(), ()):
            if type(node.op).__name__ == "Elemwise" and type(node.op.scalar_op).__name__ == "LT":
                other = node.inputs[1]
                while other.owner is not None:  # undefined_grad(p) wraps the constant
                    other = other.owner.inputs[0]
                return float(other.data)
            todo.extend(node.outputs)
    raise RuntimeError("no comparison after the dropout's uniform sample")


MNIST_INTROSPECTION = {"keras": _keras_layers, "tensorflow": _tensorflow_layers, "mxnet": _mxnet_layers,
                       "chainer": _chainer_layers, "theano": _theano_layers}


def mnist_layers(module, trainer):
    """The cnn-mnist trainer's model as the framework itself reports it: {"layers": the neutral list (see above),
    "total": the framework's own parameter count}."""
    layers, total = MNIST_INTROSPECTION[module.NAME](module, trainer)
    return {"layers": layers, "total": int(total)}


def detector_check(module, spec, folder):
    """A detector workload's trainer (the module's make_trainer) over the first DETECTOR_ROWS images of each split:
    DETECTOR_EPOCHS epochs (the loss and the mAP of each), then bench/detection/parity.py's fixed input."""
    from bench.detection import parity
    train_rows, test_rows = DETECTOR_ROWS
    trainer = module.make_trainer(spec, prepared.load(folder, train_rows, test_rows), "cpu", SEED)
    losses, maps = [], []
    for _ in range(DETECTOR_EPOCHS):
        losses.append(trainer.train_epoch()[0])
        maps.append(trainer.evaluate())
    return {"param_count": trainer.param_count(), "losses": losses, "maps": maps,
            "roi_op": trainer.info().get("roi_op"), "parity": parity.run(trainer)}


EXTRA = {"keras_weight_decay": keras_weight_decay, "theano_strided_same": theano_strided_same,
         "mnist_layers": mnist_layers}


def trainer_of(module, spec, checks):
    """The spec's trainer, built by the module's make_trainer on the spec's prepared data, as a run builds it."""
    return module.make_trainer(spec, data_of(checks["data"][spec["name"]], spec), "cpu", SEED)


def main(path):
    with open(path) as fh:
        checks = json.load(fh)
    module = load(checks["framework"], "paper")
    out = {"versions": module.versions(), "padding": {}, "evaluations": None}
    for workload, spec in sorted(checks["padding"].items()):
        data = data_of(checks["data"][workload], spec)
        trainer = module.make_trainer(spec, data, "cpu", SEED)
        out["padding"][workload] = padding_diff(module, trainer, data)
    spec = checks["evaluations"]
    if spec is not None:
        trainer = trainer_of(module, spec, checks)
        out["evaluations"] = [trainer.evaluate(), trainer.evaluate()]
    for name in checks.get("extra") or ():
        spec = (checks.get("extra_specs") or {}).get(name)
        out[name] = EXTRA[name](module, trainer_of(module, spec, checks)) if spec else EXTRA[name](module)
    detector = checks.get("detector")
    out["detector"] = detector_check(module, detector["spec"], detector["data"]) if detector else None
    print(json.dumps(out, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
