"""Generated data (bench/generated.py): random inputs made in the run from a recipe the request carries, the
same bytes everywhere, checked against the sha256 the host planned, validated in the request and run.json."""

import copy
import json

import numpy as np
import pytest

from bench import entrypoint, generated, request, schema
from campaign import requests, specs
from tests.runrecord import minimal_request

RECIPE = {"method": generated.METHOD, "input_shape": [4, 5, 3], "num_classes": 7, "train_examples": 6,
          "test_examples": 3, "seed": 0}
# RECIPE's arrays' sha256, worked out once: the same on every Python >= 3.6 and every NumPy (SHAKE-256 bytes).
FIXED_SHA256 = "138d0cc38c8ff8662a148835417c972801be04c38e0561cb6d8dbebc0cb31655"


def test_the_recipe_comes_from_the_spec_and_its_profile():
    assert generated.recipe(specs.load("alexnet-s-synthetic", "smoke")) == {
        "method": generated.METHOD, "input_shape": [227, 227, 3], "num_classes": 1000, "train_examples": 8,
        "test_examples": 4, "seed": generated.SEED}
    assert generated.recipe(specs.load("fcn-s-synthetic", "quick"))["input_shape"] == [1, 1, 26752]
    spec = specs.load("fcn-s-synthetic")
    spec["data"]["test_subset"] = None  # every row count must be said: there is no whole split to fall back on
    with pytest.raises(ValueError, match="test_examples must be at least 1|test_examples is not int"):
        generated.recipe(spec)


def test_arrays_look_like_a_prepared_image_dataset_and_are_the_same_every_time():
    made = generated.arrays(RECIPE)
    assert made["x_train"].dtype == np.uint8 and made["x_train"].shape == (6, 4, 5, 3)
    assert made["x_test"].shape == (3, 4, 5, 3) and made["x_train"].flags.writeable
    for split, n in (("train", 6), ("test", 3)):
        y = made["y_" + split]
        assert y.dtype == np.int64 and y.shape == (n,) and 0 <= y.min() and y.max() < 7
    again = generated.arrays(copy.deepcopy(RECIPE))
    assert all(np.array_equal(made[k], again[k]) for k in made)
    assert generated.arrays_sha256(made) == generated.arrays_sha256(again)
    # The bytes are SHAKE-256's, not a NumPy generator's: pinned here so any change of method shows.
    assert generated.arrays_sha256(made) == FIXED_SHA256
    # Another seed, another row count: other data (the sha256 is the run's data identity).
    assert generated.arrays_sha256(generated.arrays(dict(RECIPE, seed=1))) != FIXED_SHA256
    assert generated.arrays_sha256(generated.arrays(dict(RECIPE, train_examples=5))) != FIXED_SHA256
    # Not constant: random bytes and labels.
    assert len(np.unique(made["x_train"])) > 50 and len(np.unique(generated.arrays(
        dict(RECIPE, test_examples=200))["y_test"])) == 7




def test_load_gives_the_roles_frameworks_read_and_its_sha256():
    data, digest = generated.load(RECIPE)
    assert sorted(data.train) == sorted(data.test) == ["x", "y"]
    assert data.meta["arrays_sha256"] == digest and data.meta["source"] == "generated"
    assert data.x_train.shape == (6, 4, 5, 3) and len(data.y_test) == 3


def _generated_request(**data_changes) -> dict:
    spec = specs.load("alexnet-s-synthetic", "smoke")
    data = dict(requests.generated_data(spec), **data_changes)
    return minimal_request(workload="alexnet-s-synthetic", spec=spec, data=data)


def test_the_host_plans_generated_data_without_a_dataset(tmp_path):
    spec = specs.load("fcn-s-synthetic", "smoke")
    req = requests.resolve(framework="pytorch", era="current", workload="fcn-s-synthetic", profile="smoke",
                           spec=spec, dataset=None, device="cpu", threads=1, seed=0, repeat=1, campaign="t",
                           runner="local", environment=requests.Environment("cd" * 32))
    data = req["data"]
    assert (data["dataset"], data["source"], data["path"]) == ("generated", "generated", "")
    assert data["train_indices"] is None and data["generated"] == generated.recipe(spec)
    assert data["arrays_sha256"] == generated.load(data["generated"])[1]
    assert request.read(request.write(tmp_path, req)) == req


@pytest.mark.parametrize("change, message", [
    ({"path": "/data/x"}, "data.path must be \"\""),
    ({"train_indices": [0, 1]}, "no folder or rows"),
    ({"source": "synthetic"}, "data.dataset and data.source both"),
    ({"dataset": "mnist"}, "data.dataset and data.source both"),
    ({"generated": dict(RECIPE, method="numpy")}, "method 'numpy' is not"),
    ({"generated": dict(RECIPE, input_shape=[0, 3])}, "input_shape must be positive"),
    ({"generated": dict(RECIPE, num_classes=True)}, "num_classes is not int"),
    ({"generated": {"seed": 0}}, "must have exactly the fields"),
])
def test_a_bad_generated_data_block_is_refused_on_write_and_on_read(tmp_path, change, message):
    req = _generated_request()
    req["data"].update(change)
    req["run_id"] = request.run_id(req)  # well-formed but for the change
    with pytest.raises(request.RequestError, match=message):
        request.write(tmp_path, req)
    (tmp_path / request.REQUEST_FILE).write_text(json.dumps(req))
    with pytest.raises(request.RequestError, match=message):
        request.read(tmp_path / request.REQUEST_FILE)


def test_prepared_data_carry_no_recipe_and_a_known_source():
    req = minimal_request()
    req["data"]["generated"] = dict(RECIPE)
    with pytest.raises(request.RequestError, match="data.dataset and data.source both"):
        request.validate(req)
    req = minimal_request()
    req["data"]["source"] = "invented"
    req["run_id"] = request.run_id(req)
    with pytest.raises(request.RequestError, match="data.source 'invented' is not one of"):
        request.validate(req)


def test_run_json_records_the_recipe_and_no_majority_rate(tmp_path):
    req = _generated_request()
    record = schema.run_record(req)
    assert record["dataset"]["generated"] == req["data"]["generated"]
    assert record["dataset"]["source"] == "generated" and record["dataset"]["sha256"] == req["data"]["arrays_sha256"]
    record["timing"].update(training_time_s=1.0, eval_time_s=0.1, setup_time_s=0.2, train_start_unix=0.0,
                            train_end_unix=1.0)
    schema.write_run(tmp_path, schema.finish(record, None))
    assert schema.read_run(tmp_path)["dataset"]["generated"] == req["data"]["generated"]
    record["dataset"]["generated"] = dict(RECIPE, seed=-1)
    with pytest.raises(schema.SchemaError, match="seed must not be negative"):
        schema.write_run(tmp_path / "bad", record)


def test_a_run_whose_generated_arrays_differ_from_the_planned_ones_fails_naming_both(tmp_path):
    req = _generated_request(arrays_sha256="00" * 32)
    req["monitor"] = False
    req["run_id"] = request.run_id(req)
    assert entrypoint.run(request.validate(req), tmp_path / "run") == 1
    run = schema.read_run(tmp_path / "run")
    # Data other than the planned ones is a failure of the setup, not of the framework (bench.failures).
    assert run["status"] == "failed" and run["failure"]["cause"] == "bad-data"
    assert "the generated data has arrays_sha256" in run["failure"]["message"]
    assert "00" * 32 in run["failure"]["message"] and run["dataset"]["path"] == ""
