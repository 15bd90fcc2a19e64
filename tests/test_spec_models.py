"""How every framework reads a spec's model (bench/frameworks/_common.py) and binds data roles."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from bench import dataset, spec
from bench.errors import UsageError
from bench.frameworks import _common


@pytest.mark.parametrize("name", spec.known_workloads())
def test_every_shipped_spec_is_valid(name):
    model = _common.model_layers(spec.load(name))
    assert model.layers[-1]["type"] == "dense" and model.layers[-1]["activation"] is None
    assert _common.optimizer_settings(spec.load(name))["name"] in _common.OPTIMIZER_DEFAULTS


def test_language_model_predicts_every_step():
    model = _common.model_layers(spec.load("lstm-ptb"))
    assert model.kind == "sequence" and model.encoder is None
    assert model.lstm_units == [1024, 1024]
    broken = copy.deepcopy(spec.load("lstm-ptb"))
    broken["model"]["layers"][3]["return_sequences"] = False
    with pytest.raises(_common.SpecError, match="return_sequences"):
        _common.model_layers(broken)


def test_encoder_decoder_hands_over_one_state():
    model = _common.model_layers(spec.load("seq2seq-manythings"))
    assert [layer["type"] for layer in model.encoder] == ["embedding", "lstm"]
    assert model.encoder[-1]["use_lengths"] and model.lstm_units == [256, 256]
    assert [layer["initial_state"] for layer in model.layers if layer["type"] == "lstm"] == ["encoder"]
    for change, message in (
        (lambda s: s["model"]["layers"][1].update(initial_state=None), "exactly one decoder LSTM"),
        (lambda s: s["model"]["layers"][1].update(units=128), "exactly one decoder LSTM"),
        (lambda s: s["model"]["layers"][1].update(initial_state="zeros"), "may only be"),
        (lambda s: s["model"]["encoder"][1].update(return_sequences=True), "encoder must end"),
        (lambda s: s["model"].update(architecture="stack"), "needs architecture"),
        (lambda s: s["model"].update(architecture="tree"), "unsupported architecture"),
    ):
        broken = copy.deepcopy(spec.load("seq2seq-manythings"))
        change(broken)
        with pytest.raises(_common.SpecError, match=message):
            _common.model_layers(broken)


def test_adadelta_is_keras_2s_for_every_framework():
    assert _common.optimizer_settings(spec.load("lstm-ptb")) == {
        "name": "adadelta", "lr": 1.0, "rho": 0.95, "epsilon": 1e-7, "weight_decay": 0.0}


def test_token_mask_counts_leading_steps():
    y = np.zeros((2, 4), dtype=np.int64)
    assert _common.token_mask(y, np.array([1, 3])).tolist() == [[True, False, False, False],
                                                                 [True, True, True, False]]
    assert _common.token_mask(y, None).all()


def _prepared(**arrays: np.ndarray) -> dataset.PreparedData:
    return dataset.PreparedData(meta={"dataset": "manythings"}, train=dict(arrays), test=dict(arrays))


def test_bind_roles_renames_and_drops_what_plays_no_role():
    src, tgt = np.ones((3, 5), np.int32), np.full((3, 5), 2, np.int32)
    data = _prepared(src=src, src_len=np.full(3, 5), tgt_in=tgt, tgt_out=tgt + 1, tgt_len=np.full(3, 4), y=tgt + 1)
    bound = dataset.bind_roles(data, spec.load("seq2seq-manythings")["arrays"])
    assert set(bound.train) == {"x", "len", "x_dec", "y", "y_len"}
    assert bound.x_train is src and (bound.y_test == 3).all()
    ptb = dataset.bind_roles(_prepared(x=src, y=tgt, tokens=np.arange(9)), None)
    assert set(ptb.train) == {"x", "y"}  # the whole token stream is not a role


def test_bind_roles_names_a_missing_array_and_the_fix():
    with pytest.raises(UsageError, match="no array 'src_train'.*make download"):
        dataset.bind_roles(_prepared(x=np.ones((2, 2)), y=np.ones(2)), {"x": "src"})
    with pytest.raises(UsageError, match="unknown roles"):
        dataset.bind_roles(_prepared(x=np.ones((2, 2)), y=np.ones(2)), {"labels": "y"})
