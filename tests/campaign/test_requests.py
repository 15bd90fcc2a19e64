"""Resolving runs into requests (campaign/requests.py): the data block of a workload whose data are generated in
the run is made once per recipe and handed to each request as its own; a prepared dataset is planned on only when
its arrays' bytes are those its meta.json records."""

from __future__ import annotations

import hashlib

import pytest

from bench import generated, prepared
from bench.errors import UsageError
from campaign import requests, specs
from data import synthetic
from tests.data.fixtures import MNIST_SIZES


def test_generated_data_are_made_once_per_recipe_and_each_request_gets_its_own():
    spec = specs.load("fcn-s-synthetic", "smoke")
    before = requests._request_data.cache_info()
    first, second = requests.generated_data(spec), requests.generated_data(dict(spec))
    # The block is what making the arrays gives, uncached.
    assert first == second == generated.request_data(generated.recipe(spec))
    after = requests._request_data.cache_info()
    assert after.hits - before.hits >= 1 and after.currsize >= 1
    first["generated"]["seed"] = 99  # one request's block changed: the next request's is not
    assert requests.generated_data(spec)["generated"]["seed"] == generated.SEED


def test_another_recipe_is_other_data():
    smoke, quick = specs.load("fcn-s-synthetic", "smoke"), specs.load("fcn-s-synthetic", "quick")
    a, b = requests.generated_data(smoke), requests.generated_data(quick)
    assert a["arrays_sha256"] != b["arrays_sha256"]
    assert (a["generated"]["train_examples"], b["generated"]["train_examples"]) == (8, 256)
    # The batch size is not part of the recipe: an experiment's batch size (campaign/study.py) shares the data.
    other_batch = {**smoke, "training": {**smoke["training"], "batch_size": 2}}
    assert requests.generated_data(other_batch) == a


def test_planning_refuses_prepared_arrays_whose_bytes_are_not_the_ones_meta_records(tmp_path):
    """Runs are planned on meta.json's arrays_sha256 only once the bytes have it (their sha256, not the record)."""
    folder = synthetic.make_synthetic("mnist", tmp_path, sizes=MNIST_SIZES, progress=False)
    recorded = requests.find_dataset(tmp_path, "mnist", "synthetic").arrays_sha256
    arrays = folder / prepared.ARRAYS_FILE
    arrays.write_bytes(arrays.read_bytes()[:-1])
    with pytest.raises(UsageError) as err:
        requests.find_dataset(tmp_path, "mnist", "synthetic")
    found = hashlib.sha256(arrays.read_bytes()).hexdigest()
    assert str(err.value) == (f"{arrays} has sha256 {found}, not the {recorded} its meta.json "
                              "records; prepare it again: run 'python -m data synthetic --datasets mnist' "
                              "(make demo does it)")


def test_a_request_and_its_run_json_name_the_data_relative_to_the_data_root_and_no_host_path(tmp_path):
    """A checkout in a home folder must not put the user's name into artifacts meant to be shared; the run id
    never depended on the data's folder (only on its arrays' sha256), so it is the same on every machine."""
    from bench import request, schema
    from campaign.runners import container_limits
    from tests.runrecord import minimal_request

    root = tmp_path / "alice-home" / "data"
    synthetic.make_synthetic("mnist", root, sizes=MNIST_SIZES, progress=False)
    dataset = requests.find_dataset(root, "mnist", "synthetic")
    environment = requests.Environment("sha256:" + "12" * 32, "sha256:" + "12" * 32,
                                       limits=container_limits("1g", "100").record())
    req = requests.resolve(framework="pytorch", era="current", workload="cnn-mnist", profile="smoke",
                           spec=specs.load("cnn-mnist", "smoke"), dataset=dataset, device="cpu", threads=1, seed=0,
                           repeat=1, campaign="t", runner="docker", environment=environment)
    assert req["data"]["path"] == "prepared/mnist-synthetic"
    assert request.data_folder(req["data"], root) == (root / "prepared" / "mnist-synthetic").resolve()
    before = dict(req, data=dict(req["data"], path=str(dataset.folder)))  # as b68cc0f planned it
    assert request.run_id(before) == req["run_id"]
    run_dir = tmp_path / "run"
    request.write(run_dir, req)
    schema.write_run(run_dir, schema.finish(schema.run_record(req), None))
    for name in (request.REQUEST_FILE, schema.RUN_FILE):
        text = (run_dir / name).read_text()
        assert str(tmp_path) not in text and "alice" not in text, name
    recorded = schema.read_run(run_dir)
    assert recorded["dataset"]["path"] == "prepared/mnist-synthetic"
    assert recorded["environment"]["limits"] == {"memory_bytes": 2**30, "pids": 100, "read_only_root": True,
                                                 "init": True}
    with pytest.raises(UsageError, match=r"data.path '\.\./x' leaves the data root"):
        minimal_request(data=dict(req["data"], path="../x"))
