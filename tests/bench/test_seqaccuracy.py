"""The study authors' sequence-accuracy definitions (bench/seqaccuracy.py) on batches worked by hand, and a trainer's
outputs scored in batches."""

import numpy as np
import pytest

from bench import seqaccuracy


def logits_for(predicted, classes=4):
    """(rows, steps, classes) logits whose argmax is `predicted`."""
    predicted = np.asarray(predicted)
    out = np.zeros(predicted.shape + (classes,), np.float32)
    np.put_along_axis(out, predicted[..., None], 1.0, axis=-1)
    return out


# Two rows of 5 steps, padded with 0 after their y_len real steps (the last real one an <end>, id 3).
Y = np.array([[2, 1, 3, 0, 0], [1, 3, 0, 0, 0]])
Y_LEN = np.array([3, 2])
# Row 1: real steps right, right, wrong; the step after them right (pad); the last pad wrong.
# Row 2: real steps wrong, right; the three pads right.
PREDICTED = np.array([[2, 1, 1, 0, 2], [2, 3, 0, 0, 0]])


def test_the_three_definitions_count_what_the_notebooks_count():
    found = seqaccuracy.hits(logits_for(PREDICTED), Y, Y_LEN)
    assert found["real_tokens"].tolist() == [3, 5]  # 2 of row 1's 3 real steps, 1 of row 2's 2
    assert found["padding_counted"].tolist() == [7, 10]  # every step: + row 1's 1 of 2 pads, row 2's 3 of 3
    assert found["end_step_counted"].tolist() == [5, 7]  # real steps and the one after each: + 1 + 1


def test_without_lengths_every_definition_counts_every_step():
    found = seqaccuracy.hits(logits_for(PREDICTED), Y, None)
    assert {name: v.tolist() for name, v in found.items()} == {name: [7, 10] for name in seqaccuracy.DEFINITIONS}


def test_a_row_filling_its_steps_has_no_step_after_them():
    found = seqaccuracy.hits(logits_for([[1, 2, 3]]), np.array([[1, 2, 0]]), np.array([3]))
    assert found["end_step_counted"].tolist() == found["real_tokens"].tolist() == [2, 3]


def test_logits_that_are_not_one_row_of_steps_per_label_row_are_refused():
    with pytest.raises(ValueError, match=r"logits of shape \(10, 4\) do not match labels of shape \(2, 5\)"):
        seqaccuracy.hits(logits_for(PREDICTED).reshape(10, 4), Y, Y_LEN)


class Recorder:
    """A trainer whose outputs are the fixed predictions of the rows it is given (by the row's first input)."""

    def __init__(self):
        self.batches = []

    def outputs(self, batch):
        self.batches.append(sorted(batch))
        return logits_for(PREDICTED[batch["x"][:, 0]])


def test_measure_scores_the_test_split_in_batches_from_the_trainers_outputs():
    test = {"x": np.array([[0], [1]]), "x_dec": np.zeros((2, 5), int), "y": Y, "y_len": Y_LEN}
    trainer = Recorder()
    got = seqaccuracy.measure(trainer, test, batch_size=1)
    assert got == pytest.approx({"real_tokens": 3 / 5, "padding_counted": 7 / 10, "end_step_counted": 5 / 7})
    assert trainer.batches == [["x", "x_dec"], ["x", "x_dec"]]  # inputs only, one row each: the labels stay here
