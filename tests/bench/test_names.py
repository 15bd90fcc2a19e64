"""bench/names.py: the one rule for a user-given name the kit makes a path of, and where it is applied."""

from __future__ import annotations

import pytest

from bench.errors import UsageError
from bench.names import MAX_LENGTH, RULE, check_plain, is_plain
from campaign import specs
from data.manifest import Manifest
from images import envs

NOT_PLAIN = ["", ".", "..", "../x", "x/..", "a/b", "/abs", ".hidden", "-option", "a..b", "a b", "a\nb", "a\\b", "é",
             "x" * (MAX_LENGTH + 1)]


@pytest.mark.parametrize("name", ["demo", "cpu-cnn", "bench-lstm-imdb-20250101T000000Z", "v1.2_b", "A",
                                  "x" * MAX_LENGTH])
def test_plain_names(name):
    assert is_plain(name) and check_plain(name, "CAMPAIGN", "demo") == name


@pytest.mark.parametrize("name", NOT_PLAIN)
def test_names_that_could_leave_their_folder_or_hide_are_refused_in_one_line(name):
    assert not is_plain(name)
    with pytest.raises(UsageError) as err:
        check_plain(name, "CAMPAIGN", "my-campaign")
    assert str(err.value) == f"CAMPAIGN must be a plain name ({RULE}), got '{name}'; set e.g. CAMPAIGN=my-campaign"


@pytest.mark.parametrize("name", ["../workloads/cnn-mnist", "../studies/shi", "/etc/passwd"])
def test_a_workload_name_is_not_a_path(name):
    # b68cc0f: WORKLOADS=../workloads/cnn-mnist read the workloads folder's cnn-mnist.toml by way of a path.
    with pytest.raises(UsageError, match=rf"^unknown workload '{name}'; choose from: "):
        specs.load(name)


def test_a_manifest_dataset_name_is_a_plain_name():
    table = {"files": [{"name": "a.gz", "sha256": "0" * 64}]}
    with pytest.raises(UsageError) as err:
        Manifest.from_dict({"datasets": {"../x": table}}, "m.toml")
    assert str(err.value) == f"m.toml: dataset '../x' is not a plain name ({RULE}); rename its table"
    assert Manifest.from_dict({"datasets": {"x": table}}).names() == ["x"]


@pytest.mark.parametrize("framework, era", [("../pytorch", "current"), ("pytorch", "..")])
def test_an_environment_name_is_a_plain_name(framework, era):
    with pytest.raises(UsageError, match="^bad environment name"):
        envs.ensure_env(framework, era)
