"""The run request: defined once, validated on write and on read, its id recomputed from its content."""

import json

import pytest

from bench import request, schema
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


RAW = {"spa-eng.zip": {"sha256": "ef" * 32, "verified": "sha256 recorded on first download, size verified"}}


def test_the_authors_code_differences_are_recorded_and_not_part_of_the_id(tmp_path):
    spec = dict(minimal_request()["spec"])
    noted = dict(spec, authors={"keras": [{"aspect": "optimizer", "authors": "a", "kit": "k", "source": "s, cell 2",
                                           "effect": "e"}]})
    req = minimal_request(spec=noted)
    assert req["run_id"] == minimal_request(spec=spec)["run_id"]  # a note about the run, not what it is
    assert request.read(request.write(tmp_path, req))["spec"]["authors"] == noted["authors"]


def _with_raw_files(raw_files) -> dict:
    data = dict(minimal_request()["data"], raw_files=raw_files)
    return minimal_request(data=data)


def test_raw_files_are_optional_recorded_and_not_part_of_the_id(tmp_path):
    req = _with_raw_files(RAW)
    assert req["run_id"] == minimal_request()["run_id"]  # arrays_sha256 already pins the data
    assert request.read(request.write(tmp_path, req))["data"]["raw_files"] == RAW


@pytest.mark.parametrize("raw_files, message", [
    ([], "field 'raw_files' has type list"),
    ({"spa-eng.zip": {"sha256": "ef" * 32}}, "data.raw_files.spa-eng.zip: missing field 'verified'"),
    ({"spa-eng.zip": dict(RAW["spa-eng.zip"], size=3)}, "unknown fields \\['size'\\]"),
])
def test_bad_raw_files_are_refused(raw_files, message):
    with pytest.raises(request.RequestError, match=message):
        _with_raw_files(raw_files)


SYSTEM = {"python": "3.11.7", "executable": "/usr/bin/python3", "packages_sha256": "5a" * 32,
          "packages_source": "pip freeze", "frameworks": {"torch": "2.5.1", "cudnn": "90100"},
          "framework_package": "torch", "cuda": "12.4"}


def _system_request(**system) -> dict:
    return minimal_request(runner="system", env_id="5a" * 32, system=dict(SYSTEM, **system))


def test_a_system_run_carries_the_environment_it_found(tmp_path):
    req = _system_request()
    assert request.read(request.write(tmp_path, req))["environment"]["system"] == SYSTEM
    assert "system" not in minimal_request()["environment"]  # optional: other runners' requests lack it
    assert _system_request(packages_source="importlib.metadata", cuda=None)["environment"]["system"]["cuda"] is None


@pytest.mark.parametrize("make, message", [
    (lambda: minimal_request(runner="../slurm"), "runner '../slurm' is not a runner's name, letters, digits"),
    (lambda: minimal_request(runner="system", env_id="5a" * 32), "a system run needs environment.system"),
    (lambda: minimal_request(env_id="5a" * 32, system=SYSTEM), "environment.system is only for system runs, not local"),
    (lambda: minimal_request(runner="system", env_id="cd" * 32, system=SYSTEM),
     "env_id of a system run must be its environment.system.packages_sha256"),
    (lambda: _system_request(packages_source="conda list"), "packages_source 'conda list' is not one of"),
    (lambda: _system_request(packages_sha256="5A" * 32), "is not a sha256 hex digest"),
    (lambda: _system_request(frameworks=None), "environment.system.frameworks is missing or not dict"),
])
def test_a_bad_system_environment_is_refused(make, message):
    with pytest.raises(request.RequestError, match=message):
        make()


def test_a_system_run_without_its_cuda_field_is_refused():
    req = _system_request()
    del req["environment"]["system"]["cuda"]
    with pytest.raises(request.RequestError, match="environment.system.cuda is missing or not str or NoneType"):
        request.validate(req)


CONTAINER = {"wrapper": "charliecloud", "reference": "/shared/ch/pytorch-current-cpu", "sha256": "ef" * 32}


def test_a_charliecloud_run_names_the_image_it_ran_and_keeps_the_docker_runs_id(tmp_path):
    docker = minimal_request(runner="docker", image_digest="sha256:" + "12" * 32)
    ch = minimal_request(runner="charliecloud", image_digest="sha256:" + "12" * 32, container=CONTAINER)
    assert request.read(request.write(tmp_path, ch))["environment"]["container"] == CONTAINER
    assert ch["run_id"] == docker["run_id"]  # the same image, whichever way it was run: the same run
    record = schema.run_record(ch)
    assert record["environment"]["container"] == CONTAINER


@pytest.mark.parametrize("make, message", [
    (lambda: minimal_request(runner="charliecloud"), "a charliecloud run needs environment.container"),
    (lambda: minimal_request(container=CONTAINER), "environment.container is only for runs of"),
    (lambda: minimal_request(runner="charliecloud", container=dict(CONTAINER, sha256="xyz")),
     "is not a sha256 hex digest"),
    (lambda: minimal_request(runner="charliecloud", container=dict(CONTAINER, wrapper="apptainer")),
     "environment.container.wrapper must be 'charliecloud'"),
])
def test_a_bad_container_record_is_refused(make, message):
    with pytest.raises(request.RequestError, match=message):
        make()


NO_DATA_SPEC = {"name": "allreduce-x", "dataset": request.NO_DATA, "family": "collective"}


def test_a_workload_that_reads_no_data_has_the_empty_block_and_a_run_record_of_it(tmp_path):
    req = minimal_request(spec=NO_DATA_SPEC, data=request.no_data())
    request.write(tmp_path, req)
    assert request.read(tmp_path / request.REQUEST_FILE)["data"] == request.no_data()
    assert schema.run_record(req)["dataset"] == {"name": "none", "source": "none", "sha256": "", "path": ""}


@pytest.mark.parametrize("spec, data, message", [
    (NO_DATA_SPEC, dict(request.no_data(), path="/data/x"), "a workload that reads no data needs the data block"),
    (NO_DATA_SPEC, dict(request.no_data(), arrays_sha256="ab" * 32), "needs the data block"),
    ({"name": "cnn-mnist", "dataset": "mnist"}, request.no_data(), 'only for a workload whose spec has dataset'),
])
def test_no_data_and_a_spec_that_reads_some_do_not_mix(spec, data, message):
    with pytest.raises(request.RequestError, match=message):
        minimal_request(spec=spec, data=data)
