"""The run request: defined once, validated on write and on read, its id recomputed from its content."""

import json

import pytest

from bench import request
from bench.errors import UsageError
from tests.runrecord import minimal_request


def test_roundtrip_through_the_run_folder(tmp_path):
    req = minimal_request()
    path = request.write(tmp_path, req)
    assert path == tmp_path / request.REQUEST_FILE and request.read(path) == req


def test_the_id_is_the_hash_of_what_the_run_is():
    req = minimal_request()
    assert req["run_id"] == request.run_id(req)
    # What does not change the run's content does not change its id ...
    assert minimal_request(campaign="other", runner="docker", threads=2)["run_id"] == req["run_id"]
    # ... what does, does.
    for change in ({"seed": 7}, {"repeat": 2}, {"device": "gpu"}, {"env_id": "ee" * 32}, {"framework": "keras"},
                   {"spec": {"name": "cnn-mnist", "dataset": "mnist", "training": {"epochs": 3}}}):
        assert minimal_request(**change)["run_id"] != req["run_id"], change


@pytest.mark.parametrize("mutate, message", [
    (lambda r: r.pop("spec"), "missing field 'spec'"),
    (lambda r: r.update(extra=1), "unknown fields \\['extra'\\]"),
    (lambda r: r.update(threads=0), "threads 0 must be at least 1"),
    (lambda r: r.update(device="tpu"), "device 'tpu'"),
    (lambda r: r.update(era="1998"), "era '1998'"),
    (lambda r: r.update(monitor="yes"), "field 'monitor' has type str"),
    (lambda r: r.update(seed=True), "field 'seed' has type bool"),
    (lambda r: r["data"].update(train_indices=[1, -2]), "non-negative row numbers"),
    (lambda r: r["environment"].pop("image_digest"), "missing field 'image_digest'"),
    (lambda r: r.update(request_version=2), "request_version 2"),
    (lambda r: r.update(seed=5), "does not match its content"),  # an edited request cannot pose as its run
])
def test_a_bad_request_is_refused_on_write_and_on_read(tmp_path, mutate, message):
    req = minimal_request()
    mutate(req)
    with pytest.raises(request.RequestError, match=message):
        request.write(tmp_path, req)
    assert not (tmp_path / request.REQUEST_FILE).exists()
    (tmp_path / request.REQUEST_FILE).write_text(json.dumps(req))
    with pytest.raises(request.RequestError, match=message) as caught:
        request.read(tmp_path / request.REQUEST_FILE)
    assert "\n" not in str(caught.value) and "write it again from its campaign" in str(caught.value)


def test_missing_or_broken_files_name_the_fix(tmp_path):
    with pytest.raises(UsageError, match="cannot read the run request .*pass the request.json of a run folder"):
        request.read(tmp_path / "nope.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(request.RequestError, match="not valid JSON"):
        request.read(tmp_path / "bad.json")
