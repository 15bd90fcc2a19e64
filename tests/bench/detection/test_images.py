"""One prepared VOC image as the detector reads it (bench/detection/images.py), from a prepared split built by hand
in data/voc.py's documented layout (the arrays without their _<split> suffix); every pixel and box is worked in the
comment beside it.

Image "a": a 2 x 2 JPEG prepared at 2 x 2, read at short side 4 (scale 2: a 2 x 2 -> 4 x 4 bilinear upsample),
two objects. Image "b": a 3 x 5 JPEG prepared at 4 x 7 (scale 4/3: round(3 * 4/3) = 4, round(5 * 4/3) = 7, no
resize here), one difficult object. Size divisor 8: both pad to 8 x 8.
"""

import numpy as np
import pytest

from bench.detection import images
from bench.errors import UsageError

IMAGE = {"short_side": 4, "max_side": 100, "size_divisor": 8, "flip": True}

A_RED = [[0, 0], [0, 160]]       # a corner: bilinear makes 160 * p_i * p_j of it
A_GREEN = [[255, 255], [255, 255]]
A_BLUE = [[0, 40], [80, 120]]    # linear: 80 * p_i + 40 * p_j
B_PIXELS = np.arange(4 * 7 * 3, dtype=np.uint8).reshape(4, 7, 3)


def prepared():
    a = np.stack([A_RED, A_GREEN, A_BLUE], axis=-1).astype(np.uint8)  # (2, 2, 3)
    return {
        "pixels": np.concatenate([a.reshape(-1), B_PIXELS.reshape(-1)]),
        "offset": np.array([0, 12], np.int64),
        "shape": np.array([[2, 2], [4, 7]], np.int32),
        "original_shape": np.array([[2, 2], [3, 5]], np.int32),
        "scale": np.array([1.0, 4 / 3]),
        "boxes": np.zeros((2, 2, 4), np.float32),  # the prepared size's boxes: example() takes the annotation's
        "original_boxes": np.array([[[1, 1, 2, 2], [2, 1, 2, 2]], [[2, 1, 4, 3], [0, 0, 0, 0]]], np.float32),
        "labels": np.array([[14, 6], [11, -1]], np.int64),
        "difficult": np.array([[False, False], [True, False]]),
        "y": np.array([2, 1], np.int64),
        "id": np.array(["2008_000001", "2008_000002"]),
    }


def split():
    return images.Split(prepared(), IMAGE)


# Upsampling 2 -> 4 with half-pixel centres: source position (i + 0.5) * 2/4 - 0.5 = -0.25, 0.25, 0.75, 1.25,
# clamped to [0, 1]: p = 0, 0.25, 0.75, 1 (the weight of source row 1).
P = np.array([0, 0.25, 0.75, 1])


def test_upsampled_pixels_by_hand():
    ex = split().example(0)
    assert (ex.height, ex.width, ex.scale) == (4, 4, 2.0)
    assert ex.pixels.shape == (1, 8, 8, 3) and ex.pixels.dtype == np.float32
    red = np.array([[0, 0, 0, 0], [0, 10, 30, 40], [0, 30, 90, 120], [0, 40, 120, 160]]) / 255  # 160 p_i p_j
    blue = (80 * P[:, None] + 40 * P[None, :]) / 255  # row 1: 20 + (0, 10, 30, 40)
    np.testing.assert_allclose(ex.pixels[0, :4, :4, 0], red, atol=1e-6)
    np.testing.assert_allclose(ex.pixels[0, :4, :4, 1], 1.0, atol=1e-6)
    np.testing.assert_allclose(ex.pixels[0, :4, :4, 2], blue, atol=1e-6)
    assert blue[1, 2] == pytest.approx(50 / 255)


def test_padding_is_zero_past_the_image():
    ex = split().example(0)
    assert not ex.pixels[0, 4:].any() and not ex.pixels[0, :, 4:].any()
    assert ex.pixels[0, :4, :4, 1].min() > 0.99  # the green channel fills the image itself


def test_boxes_from_the_annotation_scaled():
    ex = split().example(0)
    # (xmin - 1, ymin - 1, xmax, ymax) * 2: [1, 1, 2, 2] -> [0, 0, 4, 4]; [2, 1, 2, 2] -> [2, 0, 4, 4]
    np.testing.assert_allclose(ex.boxes, [[0, 0, 4, 4], [2, 0, 4, 4]])
    np.testing.assert_array_equal(ex.original_boxes, [[1, 1, 2, 2], [2, 1, 2, 2]])
    np.testing.assert_array_equal(ex.classes, [15, 7])  # labels + 1: 0 is the background
    np.testing.assert_array_equal(ex.difficult, [False, False])
    assert ex.image_id == "2008_000001"


def test_flip_mirrors_pixels_and_boxes():
    plain, flipped = split().example(0), split().example(0, flip=True)
    np.testing.assert_array_equal(flipped.pixels[0, :4, :4], plain.pixels[0, :4, ::-1][:, 4:])
    # the red corner is now at the bottom left: row 3 reads 160, 120, 40, 0
    np.testing.assert_allclose(flipped.pixels[0, 3, :4, 0], np.array([160, 120, 40, 0]) / 255, atol=1e-6)
    assert not flipped.pixels[0, :, 4:].any()  # the padding stays at the right
    # x1' = W - x2, x2' = W - x1 with W = 4: [0, 0, 4, 4] -> [0, 0, 4, 4]; [2, 0, 4, 4] -> [0, 0, 2, 4]
    np.testing.assert_allclose(flipped.boxes, [[0, 0, 4, 4], [0, 0, 2, 4]])
    np.testing.assert_array_equal(flipped.original_boxes, plain.original_boxes)  # the annotation as written


def test_an_image_at_its_prepared_size_is_read_as_is():
    ex = split().example(1)
    assert (ex.height, ex.width) == (4, 7) and ex.scale == pytest.approx(4 / 3)
    np.testing.assert_allclose(ex.pixels[0, :4, :7], B_PIXELS / 255.0, atol=1e-7)
    assert ex.pixels.shape == (1, 8, 8, 3) and not ex.pixels[0, 4:].any() and not ex.pixels[0, :, 7:].any()
    # one object (y = 1): [2, 1, 4, 3] -> (1, 0, 4, 3) * 4/3 = (4/3, 0, 16/3, 4); the -1 row past it is dropped
    np.testing.assert_allclose(ex.boxes, [[4 / 3, 0, 16 / 3, 4]])
    np.testing.assert_array_equal(ex.classes, [12])
    np.testing.assert_array_equal(ex.difficult, [True])  # kept, flagged: the evaluation needs it
    assert len(split()) == 2


def test_flipped_box_of_an_odd_width():
    # W = 7: (4/3, 0, 16/3, 4) -> (7 - 16/3, 0, 7 - 4/3, 4) = (5/3, 0, 17/3, 4)
    np.testing.assert_allclose(split().example(1, flip=True).boxes, [[5 / 3, 0, 17 / 3, 4]])


def test_a_missing_array_names_it_and_the_fix():
    arrays = prepared()
    del arrays["difficult"]
    with pytest.raises(UsageError) as info:
        images.Split(arrays, IMAGE)
    assert "'difficult'" in info.value.problem and "not a detection dataset" in info.value.problem
    assert "DATA=synthetic" in info.value.fix and "make download" in info.value.fix


def test_scale_for_short_side_and_max_side():
    assert images.scale_for(375, 500, 600, 1000) == 1.6              # 600 / 375; long side 800 <= 1000
    assert images.scale_for(500, 375, 600, 1000) == 1.6              # either orientation
    assert images.scale_for(300, 1000, 600, 1000) == 1.0             # 600 / 300 = 2 would make 2000: 1000 / 1000
    assert images.scale_for(3, 5, 4, 6) == pytest.approx(1.2)        # 4/3 makes round(6.67) = 7 > 6: 6 / 5
    assert images.scale_for(3, 5, 4, 7) == pytest.approx(4 / 3)      # round(6.67) = 7 is not above 7


def test_resized_size_rounds_and_keeps_one_pixel():
    assert images.resized_size(375, 500, 1.6) == (600, 800)
    assert images.resized_size(3, 5, 4 / 3) == (4, 7)                # 4, 6.67
    assert images.resized_size(1, 100, 0.001) == (1, 1)              # 0.001 and 0.1 round to 0: at least 1


def test_interpolation_weights_up_and_down():
    np.testing.assert_allclose(images._interpolation(2, 4), [[1, 0], [0.75, 0.25], [0.25, 0.75], [0, 1]])
    # 4 -> 2: positions (i + 0.5) * 2 - 0.5 = 0.5, 2.5: halves of rows (0, 1) and (2, 3)
    np.testing.assert_allclose(images._interpolation(4, 2), [[0.5, 0.5, 0, 0], [0, 0, 0.5, 0.5]])
    # 4 -> 1: position 0.5 * 4 - 0.5 = 1.5, rows 1 and 2 only (no antialiasing)
    np.testing.assert_allclose(images._interpolation(4, 1), [[0, 0.5, 0.5, 0]])
    np.testing.assert_allclose(images._interpolation(3, 3), np.eye(3))


def test_resize_downsample_has_no_antialiasing():
    column = np.array([0, 10, 20, 1000], np.float32)[:, None, None]  # (4, 1, 1)
    assert images.resize(column, 1, 1)[0, 0, 0] == pytest.approx(15)  # (10 + 20) / 2: 0 and 1000 are skipped
