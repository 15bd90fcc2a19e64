"""RoIAlign as two matrices (bench/detection/roialign.py) against cases worked on paper from its docstring's rule.

Spatial scale 1 unless said: a RoI's pixels are feature cells, cell k spans [k, k + 1). With aligned=True the box
moves half a cell up and left, so a bin of size b starting at s samples s + (k + 0.5) * b / ratio; a sample below
-1 or above the size is zero, one in [-1, 0) is taken as 0, one at or past the last cell is the last cell.
"""

import numpy as np
import pytest

from bench.detection import roialign
from bench.errors import UsageError


def one(features, roi, output=1, ratio=2, aligned=True, scale=1.0):
    """The pooled (C, output, output) of one RoI, through the matrices."""
    features = np.asarray(features, np.float64)
    rows, cols = roialign.matrices([roi], scale, output, ratio, features.shape[1], features.shape[2], aligned)
    return roialign.pool(features, rows, cols)[0]


def delta(height, width, y, x):
    """A one-channel map that is 1 at cell (y, x) and 0 elsewhere: pooling it reads one matrix product's weight."""
    f = np.zeros((1, height, width))
    f[0, y, x] = 1.0
    return f


def test_one_cell_aligned_ratio_one_reads_that_cell_exactly():
    # RoI [1, 2) x [1, 2): start 1 - 0.5 = 0.5, extent 1, one sample at 0.5 + 0.5 = 1.0: cell 1 exactly
    rows, cols = roialign.matrices([[1, 1, 2, 2]], 1.0, 1, 1, 4, 4)
    np.testing.assert_array_equal(rows[0, 0], [0, 1, 0, 0])
    np.testing.assert_array_equal(cols[0, 0], [0, 1, 0, 0])


def test_one_cell_aligned_ratio_two_blends_the_neighbours():
    # samples at 0.5 + 0.25 = 0.75 (0.25 of cell 0, 0.75 of cell 1) and 0.5 + 0.75 = 1.25 (0.75 of 1, 0.25 of 2):
    # their mean is (0.125, 0.75, 0.125, 0) on each axis
    rows, cols = roialign.matrices([[1, 1, 2, 2]], 1.0, 1, 2, 4, 4)
    np.testing.assert_allclose(rows[0, 0], [0.125, 0.75, 0.125, 0])
    np.testing.assert_allclose(cols[0, 0], [0.125, 0.75, 0.125, 0])
    # the corner cell (0, 0) then weighs 0.125 * 0.125 = 1/64, cell (1, 1) 0.75 * 0.75 = 9/16, (3, 3) nothing
    assert one(delta(4, 4, 0, 0), [1, 1, 2, 2])[0, 0, 0] == pytest.approx(1 / 64)
    assert one(delta(4, 4, 1, 1), [1, 1, 2, 2])[0, 0, 0] == pytest.approx(9 / 16)
    assert one(delta(4, 4, 3, 3), [1, 1, 2, 2])[0, 0, 0] == 0


def test_bins_of_ratio_cells_pool_their_cells_mean_exactly():
    # RoI [0, 4) both ways, output 2, ratio 2: start -0.5, bins of 2 cells, samples at -0.5 + 0.5 = 0.0 and
    # -0.5 + 1.5 = 1.0 in bin 0, 2.0 and 3.0 in bin 1: each bin is the plain mean of its 2 x 2 cells
    rows, cols = roialign.matrices([[0, 0, 4, 4]], 1.0, 2, 2, 4, 4)
    np.testing.assert_array_equal(rows[0], [[0.5, 0.5, 0, 0], [0, 0, 0.5, 0.5]])
    np.testing.assert_array_equal(cols[0], rows[0])
    f = np.arange(16, dtype=np.float64).reshape(1, 4, 4) ** 2  # not linear: a blend would show
    # bin (0, 0): (0 + 1 + 16 + 25) / 4 = 10.5; (0, 1): (4 + 9 + 36 + 49) / 4 = 24.5;
    # (1, 0): (64 + 81 + 144 + 169) / 4 = 114.5; (1, 1): (100 + 121 + 196 + 225) / 4 = 160.5
    np.testing.assert_allclose(one(f, [0, 0, 4, 4], output=2)[0], [[10.5, 24.5], [114.5, 160.5]])


def test_first_cell_clamps_a_sample_in_minus_one_to_zero():
    # RoI [0, 1): start -0.5, samples -0.25 (>= -1: taken as 0, all of cell 0) and 0.25 (0.75 of 0, 0.25 of 1):
    # mean (0.875, 0.125, 0, 0)
    rows, _ = roialign.matrices([[0, 0, 1, 1]], 1.0, 1, 2, 4, 4)
    np.testing.assert_allclose(rows[0, 0], [0.875, 0.125, 0, 0])


def test_last_cell_clamps_a_sample_past_the_last_row_to_it():
    # RoI [3, 4) of 4 cells: start 2.5, samples 2.75 (0.25 of 2, 0.75 of 3) and 3.25 (its lower neighbour is the
    # last row: all of cell 3): mean (0, 0, 0.125, 0.875)
    rows, cols = roialign.matrices([[3, 3, 4, 4]], 1.0, 1, 2, 4, 4)
    np.testing.assert_allclose(rows[0, 0], [0, 0, 0.125, 0.875])
    np.testing.assert_allclose(cols[0, 0], [0, 0, 0.125, 0.875])


def test_a_sample_beyond_the_size_is_zero_and_one_at_the_size_is_the_last_cell():
    # x in [4, 6) of a 4-wide map: start 3.5, extent 2, samples 3.5 + 0.5 = 4.0 (= the size: the last cell) and
    # 3.5 + 1.5 = 5.0 (> 4: zero): the column weights are (0, 0, 0, 0.5), summing to 0.5
    _, cols = roialign.matrices([[4, 0, 6, 1]], 1.0, 1, 2, 4, 4)
    np.testing.assert_allclose(cols[0, 0], [0, 0, 0, 0.5])


def test_a_sample_below_minus_one_is_zero():
    # y in [-4, -2): start -4.5, samples -4 and -3, both below -1: the rows are zero, so the whole bin is
    rows, _ = roialign.matrices([[0, -4, 1, -2]], 1.0, 1, 2, 4, 4)
    assert not rows.any()
    assert not one(np.ones((2, 4, 4)), [0, -4, 1, -2]).any()


def test_a_roi_far_outside_pools_zero():
    features = np.random.RandomState(0).uniform(1, 2, (3, 5, 6))
    np.testing.assert_array_equal(one(features, [100, 100, 120, 130], output=3), np.zeros((3, 3, 3)))
    np.testing.assert_array_equal(one(features, [-50, -40, -20, -30], output=2), np.zeros((3, 2, 2)))


def test_two_by_two_output_of_a_linear_map_by_hand():
    # f[h, w] = 10 h + w on 4 x 4; RoI [0, 4) both ways, output 2, ratio 1: start -0.5, bins of 2, samples at
    # 0.5 (half of 0 and 1) and 2.5 (half of 2 and 3): f at (0.5, 0.5) = 5.5, (0.5, 2.5) = 7.5, (2.5, 0.5) = 25.5,
    # (2.5, 2.5) = 27.5
    f = (10 * np.arange(4)[:, None] + np.arange(4)[None, :])[None].astype(np.float64)
    np.testing.assert_allclose(one(f, [0, 0, 4, 4], output=2, ratio=1)[0], [[5.5, 7.5], [25.5, 27.5]])


def test_spatial_scale_maps_pixels_to_cells():
    # at 1/16 a cell per pixel, the pixel RoI [16, 32) is cell [1, 2): the same weights as the first case
    rows, cols = roialign.matrices([[16, 16, 32, 32]], 1 / 16, 1, 2, 4, 4)
    np.testing.assert_allclose(rows[0, 0], [0.125, 0.75, 0.125, 0])
    np.testing.assert_allclose(cols[0, 0], [0.125, 0.75, 0.125, 0])


def test_unaligned_has_no_half_cell_shift():
    # aligned=False, RoI [1, 2), ratio 1: start 1, extent 1, the sample at 1.5: half of cell 1, half of cell 2
    rows, _ = roialign.matrices([[1, 1, 2, 2]], 1.0, 1, 1, 4, 4, aligned=False)
    np.testing.assert_allclose(rows[0, 0], [0, 0.5, 0.5, 0])


def test_unaligned_clamps_the_size_to_one_cell_and_aligned_does_not():
    # a 0.2-cell RoI [1, 1.2): unaligned, extent max(0.2, 1) = 1: sample 1 + 0.5 = 1.5 (half of 1, half of 2);
    # aligned, start 0.5, extent 0.2: sample 0.5 + 0.1 = 0.6 (0.4 of cell 0, 0.6 of cell 1)
    unaligned, _ = roialign.matrices([[1, 1, 1.2, 1.2]], 1.0, 1, 1, 4, 4, aligned=False)
    aligned, _ = roialign.matrices([[1, 1, 1.2, 1.2]], 1.0, 1, 1, 4, 4, aligned=True)
    np.testing.assert_allclose(unaligned[0, 0], [0, 0.5, 0.5, 0])
    np.testing.assert_allclose(aligned[0, 0], [0.4, 0.6, 0, 0])


def test_a_constant_map_pools_the_constant_for_any_roi_inside():
    rng = np.random.RandomState(1)
    x1, y1 = rng.uniform(0, 60, 20), rng.uniform(0, 40, 20)
    rois = np.stack([x1, y1, x1 + rng.uniform(0.1, 100 - x1), y1 + rng.uniform(0.1, 80 - y1)], axis=1)
    features = np.full((2, 5, 7), 3.25)  # 80 x 100 pixels at 1/16 (rounded up)
    for aligned in (True, False):
        rows, cols = roialign.matrices(rois, 1 / 16, 4, 2, 5, 7, aligned)
        np.testing.assert_allclose(roialign.pool(features, rows, cols), 3.25, rtol=1e-6)
        np.testing.assert_allclose(roialign.reference(features, rois, 1 / 16, 4, 2, aligned), 3.25, rtol=1e-12)


def test_matrix_rows_sum_to_at_most_one_and_to_one_when_every_sample_is_inside():
    rng = np.random.RandomState(2)
    rois = rng.uniform(-40, 140, (50, 4))
    rois = np.concatenate([np.minimum(rois[:, :2], rois[:, 2:]), np.maximum(rois[:, :2], rois[:, 2:])], axis=1)
    rows, cols = roialign.matrices(rois, 1 / 16, 7, 2, 6, 8)
    assert rows.shape == (50, 7, 6) and cols.shape == (50, 7, 8)
    assert rows.dtype == cols.dtype == np.float32
    assert rows.min() >= 0 and cols.min() >= 0
    assert rows.sum(axis=2).max() <= 1 + 1e-6 and cols.sum(axis=2).max() <= 1 + 1e-6
    # a RoI within the map ([0, 96) x [0, 128) pixels = 6 x 8 cells): every sample is in [-0.5, size]
    inside, _ = roialign.matrices([[0, 0, 128, 96], [10, 20, 30, 40]], 1 / 16, 7, 2, 6, 8)
    np.testing.assert_allclose(inside.sum(axis=2), 1, rtol=1e-6)


@pytest.mark.parametrize("aligned", [True, False])
def test_pool_through_the_matrices_equals_the_per_sample_reference(aligned):
    rng = np.random.RandomState(3 + aligned)
    features = rng.standard_normal((3, 5, 7))
    centres = rng.uniform(-20, 130, (40, 2))  # centres across the border of the 80 x 112-pixel map (1/16)
    sizes = np.concatenate([rng.uniform(0.5, 12, (20, 2)), rng.uniform(12, 150, (20, 2))])  # sub-cell and large
    rois = np.concatenate([centres - sizes / 2, centres + sizes / 2], axis=1)
    rows, cols = roialign.matrices(rois, 1 / 16, 3, 2, 5, 7, aligned)
    ref = roialign.reference(features, rois, 1 / 16, 3, 2, aligned)
    assert ref.shape == (40, 3, 3, 3)
    np.testing.assert_allclose(roialign.pool(features, rows, cols), ref, rtol=1e-6, atol=1e-6)
    assert np.abs(ref).sum() > 0 and not np.all(ref[:, :, 0, 0] == ref[:, :, 1, 1])  # not a trivial comparison


def test_reference_agrees_with_the_hand_worked_cell():
    # the per-sample loop gives the same 9/16 for cell (1, 1) of the RoI [1, 2) x [1, 2) at ratio 2
    assert roialign.reference(delta(4, 4, 1, 1), [[1, 1, 2, 2]], 1.0, 1, 2)[0, 0, 0, 0] == pytest.approx(9 / 16)


def test_no_rois_give_empty_matrices():
    rows, cols = roialign.matrices(np.zeros((0, 4)), 1 / 16, 14, 2, 5, 7)
    assert rows.shape == (0, 14, 5) and cols.shape == (0, 14, 7)


@pytest.mark.parametrize("rois, output, ratio", [
    (np.zeros((2, 3)), 2, 2),                        # (R, 3): not boxes
    ([[0, 0, 1, np.nan]], 2, 2),                     # not finite
    ([[0, 0, 4, 4]], 0, 2),                          # output 0
    ([[0, 0, 4, 4]], 2, 0),                          # sampling ratio 0
    ([[0, 0, 4, 4]], 1.5, 2),                        # output not an integer
])
def test_bad_input_is_a_usage_error(rois, output, ratio):
    with pytest.raises(UsageError):
        roialign.matrices(rois, 1.0, output, ratio, 4, 4)
    with pytest.raises(UsageError):
        roialign.reference(np.ones((1, 4, 4)), rois, 1.0, output, ratio)
