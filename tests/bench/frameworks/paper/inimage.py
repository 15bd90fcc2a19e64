"""What a paper-era run cannot show, checked inside the framework's paper image (CPython 3.6: no postponed
annotations, no walrus), against the image's own bench/ and the module a run loads.

    python inimage.py CHECKS.json      (harness.run_in_image mounts this file at /checks and the data at /data)

CHECKS.json: {"framework", "padding": {workload: spec}, "evaluations": a spec or null, "extra": names of
EXTRA checks, "data": {workload: its prepared folder}, "detector": {"spec", "data"} or null}. Prints one JSON
object: {"versions", "padding": {workload: max |logits(padded) - logits(padding cut off)|}, "evaluations":
[accuracy, accuracy again] or null, each extra check's result under its name, and "detector":
detector_check's result or null}. The trainers are not trained: a model that read the
padding would change its logits under any weights, and dropout left on at test time would make two
evaluations of the same weights differ.
"""

import json
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


EXTRA = {"keras_weight_decay": keras_weight_decay, "theano_strided_same": theano_strided_same}


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
        trainer = module.make_trainer(spec, data_of(checks["data"][spec["name"]], spec), "cpu", SEED)
        out["evaluations"] = [trainer.evaluate(), trainer.evaluate()]
    for name in checks.get("extra") or ():
        out[name] = EXTRA[name](module)
    detector = checks.get("detector")
    out["detector"] = detector_check(module, detector["spec"], detector["data"]) if detector else None
    print(json.dumps(out, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
