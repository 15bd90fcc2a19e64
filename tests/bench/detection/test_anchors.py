"""Anchors at stride 16, scales (8, 16, 32), ratios (0.5, 1, 2), worked by hand: side s * 16, width
side / sqrt(r), height side * sqrt(r), centred at (8, 8) (offset 0.5), ratio-major, location-major on the grid."""

import math

import numpy as np
import pytest

from bench.detection import anchors
from bench.errors import UsageError

R2 = math.sqrt(2)


def test_the_first_cell_base_anchors_by_hand():
    base = anchors.base_anchors(16, (8, 16, 32), (0.5, 1, 2), offset=0.5)
    assert base.shape == (9, 4)
    # ratio 0.5, scale 8: side 128, width 128 * sqrt 2, height 128 / sqrt 2, halves 64 sqrt 2 and 32 sqrt 2
    np.testing.assert_allclose(base[0], [8 - 64 * R2, 8 - 32 * R2, 8 + 64 * R2, 8 + 32 * R2])
    np.testing.assert_allclose(base[0], [-82.50966799, -37.25483400, 98.50966799, 53.25483400])
    # ratio 0.5, scale 16: side 256, halves 128 sqrt 2 and 64 sqrt 2
    np.testing.assert_allclose(base[1], [8 - 128 * R2, 8 - 64 * R2, 8 + 128 * R2, 8 + 64 * R2])
    # ratio 1: squares of side 128, 256, 512 centred at (8, 8)
    np.testing.assert_allclose(base[3:6], [[-56, -56, 72, 72], [-120, -120, 136, 136], [-248, -248, 264, 264]])
    # ratio 2, scale 8: the transpose of ratio 0.5's
    np.testing.assert_allclose(base[6], [8 - 32 * R2, 8 - 64 * R2, 8 + 32 * R2, 8 + 64 * R2])


def test_every_base_anchor_has_area_side_squared_and_its_ratio():
    base = anchors.base_anchors(16, (8, 16, 32), (0.5, 1, 2))
    w, h = base[:, 2] - base[:, 0], base[:, 3] - base[:, 1]
    np.testing.assert_allclose(w * h, np.tile([128.0 ** 2, 256.0 ** 2, 512.0 ** 2], 3))
    np.testing.assert_allclose(h / w, np.repeat([0.5, 1, 2], 3))


def test_offset_zero_centres_on_the_origin():
    np.testing.assert_allclose(anchors.base_anchors(16, (8,), (1,), offset=0)[0], [-64, -64, 64, 64])


def test_grid_count_and_order():
    grid = anchors.grid_anchors(2, 3, 16, (8, 16, 32), (0.5, 1, 2))
    assert grid.shape == (54, 4) == (anchors.count(2, 3), 4)
    # row 9 is location (y 0, x 1), anchor 0: the first anchor moved 16 pixels right
    np.testing.assert_allclose(grid[9], [-82.50966799 + 16, -37.25483400, 98.50966799 + 16, 53.25483400])
    # row (1 * 3 + 2) * 9 + 4 = 49 is location (y 1, x 2), anchor 4 (ratio 1, scale 16): [-120, -120, 136, 136]
    # moved by (32, 16)
    np.testing.assert_allclose(grid[49], [-88, -104, 168, 152])
    np.testing.assert_allclose(grid[:9], anchors.base_anchors())


@pytest.mark.parametrize("call, message", [
    (lambda: anchors.base_anchors(0), "stride"),
    (lambda: anchors.base_anchors(16, (8,), ()), "ratios"),
    (lambda: anchors.base_anchors(16, (8, -1), (1,)), "scales"),
    (lambda: anchors.base_anchors(16, offset=1.0), "offset"),
    (lambda: anchors.grid_anchors(0, 3), "feature map size"),
    (lambda: anchors.grid_anchors(2.5, 3), "feature map size"),
])
def test_bad_input_is_one_line_usage_error(call, message):
    with pytest.raises(UsageError, match=message):
        call()
