"""bench/prepared.py: binding a workload's prepared arrays to the roles a framework module reads."""

from __future__ import annotations

import numpy as np
import pytest

from bench import prepared
from bench.errors import UsageError
from bench.frameworks import common
from campaign import specs


def _prepared(**arrays: np.ndarray) -> prepared.PreparedData:
    return prepared.PreparedData(meta={"dataset": "manythings"}, train=dict(arrays), test=dict(arrays))


def test_roles_are_the_framework_contracts():
    assert prepared.ROLES == common.ROLES


def test_bind_roles_renames_and_drops_what_plays_no_role():
    src, tgt = np.ones((3, 5), np.int32), np.full((3, 5), 2, np.int32)
    data = _prepared(src=src, src_len=np.full(3, 5), tgt_in=tgt, tgt_out=tgt + 1, tgt_len=np.full(3, 4), y=tgt + 1)
    bound = prepared.bind_roles(data, specs.load("seq2seq-manythings")["arrays"])
    assert set(bound.train) == {"x", "len", "x_dec", "y", "y_len"}
    assert bound.x_train is src and (bound.y_test == 3).all()
    ptb = prepared.bind_roles(_prepared(x=src, y=tgt, tokens=np.arange(9)), None)
    assert set(ptb.train) == {"x", "y"}  # the whole token stream is not a role


def test_bind_roles_names_a_missing_array_and_the_fix():
    with pytest.raises(UsageError, match="no array 'src_train'.*make download"):
        prepared.bind_roles(_prepared(x=np.ones((2, 2)), y=np.ones(2)), {"x": "src"})
    with pytest.raises(UsageError, match="unknown roles"):
        prepared.bind_roles(_prepared(x=np.ones((2, 2)), y=np.ones(2)), {"labels": "y"})
