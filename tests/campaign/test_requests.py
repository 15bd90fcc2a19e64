"""Resolving runs into requests (campaign/requests.py): the data block of a workload whose data are generated in
the run is made once per recipe and handed to each request as its own."""

from __future__ import annotations

from bench import generated
from campaign import requests, specs


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
