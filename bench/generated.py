"""Generated data: random inputs made in the run process, for studies that fed their networks random
numbers (Shi et al.'s FCN-S and AlexNet-S) instead of a dataset.

A workload spec names ``dataset = "generated"`` (NAME). No dataset is downloaded or prepared for
it: the host puts a recipe into the run request (``data.generated``: RECIPE_FIELDS, from the spec's
model.input_shape and num_classes, the profile's train_subset and test_subset, and SEED) and the
entrypoint makes the arrays from it, in the run's own process. They look like a prepared image
dataset (bench/prepared.py), so every framework's input path takes them unchanged:

    x uint8 (N, *input_shape), y int64 (N,) in [0, num_classes)

The bytes come from SHAKE-256 (hashlib), one stream per array keyed by the seed and the array's
name, so they are the same on every Python >= 3.6 and every NumPy: the host works out their sha256
when it plans the run (the run's data identity, ``data.arrays_sha256``) and the entrypoint checks the
arrays it made against it, as it checks prepared data. Labels are uniform over the classes: test
accuracy means nothing here, so a run records no majority rate (dataset.test_majority_rate), and the
"not above guessing" checks leave it out.

CPython 3.6-clean, standard library and NumPy >= 1.14 only. NumPy is imported only where arrays are made:
bench.request imports this module, and the run must pin its thread count before NumPy's BLAS loads
(bench/__main__.py).
"""

import hashlib
from typing import Any, Dict, Optional, Tuple

NAME = "generated"      # a workload spec's dataset, and the request's data.dataset
SOURCE = "generated"    # the request's data.source and run.json's dataset.source
SEED = 0                # one set of bytes for every framework and repeat (same bytes in)
METHOD = "shake256-v1"  # how the bytes are made; another method is other data
# The recipe in a request's data.generated, each field's types.
RECIPE_FIELDS = {
    "method": (str,), "input_shape": (list,), "num_classes": (int,), "train_examples": (int,),
    "test_examples": (int,), "seed": (int,),
}
# Bytes of one label drawn from the stream: little-endian uint32, taken modulo num_classes.
_LABEL_BYTES = 4


def is_generated(spec: dict) -> bool:
    """Whether a workload spec's data are generated in the run (dataset = "generated")."""
    return spec.get("dataset") == NAME


def recipe(spec: dict, seed: int = SEED) -> dict:
    """The request's data.generated of a resolved workload spec (a ValueError naming what is missing)."""
    model, data = spec.get("model", {}), spec.get("data", {})
    out = {"method": METHOD, "input_shape": list(model.get("input_shape") or []),
           "num_classes": model.get("num_classes"), "train_examples": data.get("train_subset"),
           "test_examples": data.get("test_subset"), "seed": seed}
    problem = recipe_problem(out)
    if problem:
        raise ValueError("workload {} (dataset = \"{}\"): {}; give [model] input_shape and num_classes, and "
                         "train_subset and test_subset in every profile".format(spec.get("name", "?"), NAME, problem))
    return out


def recipe_problem(obj) -> Optional[str]:
    """What is wrong with a data.generated object (None if nothing)."""
    if not isinstance(obj, dict) or set(obj) != set(RECIPE_FIELDS):
        return f"data.generated must have exactly the fields {sorted(RECIPE_FIELDS)}"
    for name, types in RECIPE_FIELDS.items():
        if isinstance(obj[name], bool) or not isinstance(obj[name], types):
            return f"data.generated.{name} is not {' or '.join(t.__name__ for t in types)}"
    if obj["method"] != METHOD:
        return f"data.generated.method {obj['method']!r} is not {METHOD!r} (the method this kit generates with)"
    shape = obj["input_shape"]
    if not shape or any(isinstance(d, bool) or not isinstance(d, int) or d < 1 for d in shape):
        return "data.generated.input_shape must be positive whole numbers, e.g. [224, 224, 3]"
    for name in ("num_classes", "train_examples", "test_examples"):
        if obj[name] < 1:
            return f"data.generated.{name} must be at least 1"
    if obj["seed"] < 0:
        return "data.generated.seed must not be negative"
    return None


def _stream(seed: int, key: str, size: int) -> bytes:
    return hashlib.shake_256(f"dlrepro generated {METHOD} seed {seed} {key}".encode("ascii")).digest(size)


def arrays(rec: dict) -> Dict[str, Any]:
    """The arrays of a recipe: x_train, y_train, x_test, y_test (module docstring: dtypes, shapes)."""
    import numpy as np

    shape = tuple(rec["input_shape"])
    per_example = int(np.prod(shape))
    out = {}
    for split in ("train", "test"):
        n = rec[split + "_examples"]
        x = np.frombuffer(_stream(rec["seed"], "x_" + split, n * per_example), dtype=np.uint8)
        labels = np.frombuffer(_stream(rec["seed"], "y_" + split, n * _LABEL_BYTES), dtype="<u4")
        out["x_" + split] = x.reshape((n,) + shape).copy()  # writable, like arrays read from a file
        out["y_" + split] = (labels % rec["num_classes"]).astype(np.int64)
    return out


def arrays_sha256(named: Dict[str, Any]) -> str:
    """sha256 over the arrays in name order, each as its name, dtype, shape and C-order bytes."""
    import numpy as np

    digest = hashlib.sha256()
    for name in sorted(named):
        arr = np.ascontiguousarray(named[name])
        digest.update(f"{name} {arr.dtype.str} {list(arr.shape)}\n".encode("ascii"))
        digest.update(arr.tobytes())
    return digest.hexdigest()


def load(rec: dict) -> Tuple[Any, str]:
    """The recipe's data as a bench.prepared.PreparedData (x, y per split; meta names it) and its arrays' sha256."""
    from bench.prepared import PreparedData

    made = arrays(rec)
    digest = arrays_sha256(made)
    meta = {"dataset": NAME, "source": SOURCE, "arrays_sha256": digest, "num_classes": rec["num_classes"],
            "keys": sorted(made), "generated": dict(rec)}
    data = PreparedData(meta=meta)
    for key, arr in made.items():
        name, split = key.rsplit("_", 1)
        getattr(data, split)[name] = arr
    return data, digest


def request_data(rec: dict) -> dict:
    """A run request's data block for a recipe: no folder, no row selection, the arrays' sha256
    (worked out by making them once, on the host)."""
    return {"dataset": NAME, "source": SOURCE, "arrays_sha256": arrays_sha256(arrays(rec)), "path": "",
            "train_indices": None, "test_indices": None, "generated": dict(rec)}


def data_problem(data: dict) -> Optional[str]:
    """What is wrong with a request's data block as far as generated data go (None if nothing):
    generated data carry a recipe and no folder or rows; other data carry no recipe."""
    generated = data.get("source") == SOURCE or data.get("dataset") == NAME or "generated" in data
    if not generated:
        return None
    if data.get("source") != SOURCE or data.get("dataset") != NAME:
        return f"generated data need data.dataset and data.source both \"{NAME}\""
    if "generated" not in data:
        return "generated data need data.generated (the recipe the run makes them from)"
    if data.get("path") or data.get("train_indices") is not None or data.get("test_indices") is not None:
        return "generated data have no folder or rows: data.path must be \"\" and the indices null"
    return recipe_problem(data["generated"])
