"""Workload specs are data (studies/*/workloads/*.toml); profiles override only what they may."""

import pytest

from bench.errors import UsageError
from campaign import specs as spec
from tests.studies.folders import add_study


def test_paper_profile_is_the_study():
    wl = spec.load("lstm-imdb")
    assert wl["training"] == {"loss": "binary_crossentropy", "optimizer": {"name": "adam", "lr": 1e-3},
                              "batch_size": 64, "epochs": 50, "shuffle": True}
    assert wl["model"]["maxlen"] == 500 and wl["model"]["vocab_size"] == 5000
    assert wl["data"] == {"train_subset": None, "test_subset": None}
    assert spec.load("cnn-mnist")["training"]["epochs"] == 15


def test_quick_profile_overrides_epochs_and_subsets_only():
    paper, quick = spec.load("cnn-mnist"), spec.load("cnn-mnist", "quick")
    assert quick["training"]["epochs"] == 2 and quick["data"]["train_subset"] == 6000
    assert quick["model"] == paper["model"]
    assert quick["training"]["optimizer"] == paper["training"]["optimizer"]


@pytest.mark.parametrize("call, text", [
    (lambda: spec.load("cnn-nope"), f"unknown workload 'cnn-nope'; choose from: {', '.join(spec.known_workloads())}"),
    (lambda: spec.load("cnn-mnist", "fast"), "unknown profile 'fast' for workload 'cnn-mnist'; choose from"),
])
def test_bad_names_name_the_choices(call, text):
    with pytest.raises(UsageError) as err:
        call()
    assert str(err.value).startswith(text) and "\n" not in str(err.value)


def test_quick_ptb_and_manythings_replace_the_model_and_optimizer_and_say_why():
    paper, quick = spec.load("lstm-ptb"), spec.load("lstm-ptb", "quick")
    assert [layer["type"] for layer in paper["model"]["layers"]] == [
        "embedding", "lstm", "dropout", "lstm", "dropout", "dense"]
    assert [(layer["type"], layer.get("units")) for layer in quick["model"]["layers"]] == [
        ("embedding", None), ("lstm", 256), ("dropout", None), ("dense", 10000)]
    # Only the keys the profile names are replaced; the rest of [model] is the paper's.
    assert {k: v for k, v in quick["model"].items() if k != "layers"} == \
        {k: v for k, v in paper["model"].items() if k != "layers"}
    assert quick["training"]["optimizer"] == {"name": "adam", "lr": 0.01}
    assert paper["training"]["optimizer"]["name"] == "adadelta"
    assert "departure" not in quick  # the reason is for the report, not part of the run's spec (its id)
    s2s_paper, s2s_quick = spec.load("seq2seq-manythings"), spec.load("seq2seq-manythings", "quick")
    assert s2s_quick["model"] == s2s_paper["model"] and s2s_quick["training"]["optimizer"]["name"] == "adam"
    assert set(spec.departing_profiles("lstm-ptb")) == {"quick"}
    assert "One 256-unit LSTM" in spec.departing_profiles("lstm-ptb")["quick"]
    assert spec.departing_profiles("lstm-imdb") == {}


@pytest.mark.parametrize("profile, text", [
    ('optimizer = { name = "adam" }', "profile 'quick' of workload 'toy' changes the model or the optimizer "
                                      "without a 'departure'; say why in departure"),
    ('departure = "x"\nmodel = 3', "profile 'quick' of workload 'toy' sets 'model' to a value, not a table"),
    ('departure = "x"\n[profiles.quick.model]\nunits = 3',
     "profile 'quick' of workload 'toy' replaces unknown model key 'units'; use keys of [model] (layers, maxlen)"),
    ("seed = 3", "profile 'quick' of workload 'toy' sets unknown key 'seed'; use only batch_size, departure"),
])
def test_profile_model_and_optimizer_errors(tmp_path, monkeypatch, profile, text):
    toy = 'name = "toy"\n[model]\nmaxlen = 5\nlayers = []\n[training]\nepochs = 1\n[profiles.quick]\n' + profile + "\n"
    add_study(monkeypatch, tmp_path, "t", workloads={"toy": toy})
    with pytest.raises(UsageError) as err:
        spec.load("toy", "quick")
    assert str(err.value).startswith(text) and "\n" not in str(err.value)


GOOD_AUTHOR = ('aspect = "optimizer"\nauthors = "SGD with learning-rate decay"\nkit = "SGD, decoupled weight decay"\n'
               'source = "CPU Experiment/Source Code/Keras_x.ipynb, cell 7"\neffect = "negligible (estimated)"\n')


@pytest.mark.parametrize("authors, text", [
    ("[[authors.caffe]]\n" + GOOD_AUTHOR, "authors.caffe of workload 'toy' names no framework; use one of "),
    ("[[authors.keras]]\n" + GOOD_AUTHOR.replace('effect = "negligible (estimated)"\n', ""),
     "authors.keras entry 1 of workload 'toy' has keys ['aspect', 'authors', 'kit', 'source']; give exactly aspect, "),
    ("[[authors.keras]]\n" + GOOD_AUTHOR.replace('"optimizer"', '"speed"'),
     "authors.keras entry 1 of workload 'toy' has aspect 'speed', env None; use an aspect of architecture, "),
    ("[[authors.keras]]\n" + GOOD_AUTHOR + 'env = "tpu"\n', "authors.keras entry 1 of workload 'toy' has aspect "
     "'optimizer', env 'tpu'"),
    ("[[authors.keras]]\n" + GOOD_AUTHOR.replace('kit = "SGD, decoupled weight decay"', 'kit = " "'),
     "authors.keras entry 1 of workload 'toy' has an empty or non-text field"),
    ("[authors.keras]\n" + GOOD_AUTHOR, "authors.keras entry 1 of workload 'toy' has keys"),
])
def test_authors_code_entries_are_refused_in_one_line(tmp_path, monkeypatch, authors, text):
    toy = 'name = "toy"\n[model]\nmaxlen = 5\nlayers = []\n[training]\nepochs = 1\n' + authors
    add_study(monkeypatch, tmp_path, "t", workloads={"toy": toy})
    for call in (lambda: spec.load("toy"), lambda: spec.authors_code("toy")):
        with pytest.raises(UsageError) as err:
            call()
        assert str(err.value).startswith(text) and "\n" not in str(err.value), str(err.value)


def test_authors_code_travels_in_the_resolved_spec(tmp_path, monkeypatch):
    toy = ('name = "toy"\n[model]\nmaxlen = 5\nlayers = []\n[training]\nepochs = 1\n[[authors.keras]]\n'
           + GOOD_AUTHOR + 'env = "gpu"\n')
    add_study(monkeypatch, tmp_path, "t", workloads={"toy": toy})
    (entry,) = spec.load("toy")["authors"]["keras"]
    assert entry["env"] == "gpu" and entry["source"].endswith("cell 7")
    assert spec.authors_code("toy") == {"keras": [entry]}
