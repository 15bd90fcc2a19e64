"""VOC2012 (data/voc.py): the manifest pin, the tar's layout, and the prepared arrays, with hand-worked sizes."""

from __future__ import annotations

import io
import tarfile

import numpy as np
import pytest

from bench import prepared
from bench.errors import UsageError
from data import download as dl
from data import voc
from data.formats import RawFormatError
from data.manifest import load_manifest
from data.prepare import find_preparer
from tests.data.fixtures import DATASET_SIZES, fetch_and_prepare, manifest_for, served, synthetic_files

VOC_SIZES = DATASET_SIZES["voc2012"]
RED, GREEN, BLUE = (200, 30, 60), (40, 180, 90), (20, 60, 220)


@pytest.fixture(autouse=True)
def _no_user_mirror(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(dl.MIRROR_ENV, raising=False)


def solid(height: int, width: int, colour: tuple[int, int, int]) -> np.ndarray:
    return np.broadcast_to(np.array(colour, np.uint8), (height, width, 3)).copy()


def hand_worked_tar(tmp_path):
    """Train: A 100 wide x 50 high (a dog, a difficult cat), B 40 x 60 (a person with a head part, no
    <difficult>); val: C 30 x 30 (a tvmonitor). Boxes 1-based inclusive, as VOC writes them."""
    a = voc.VocImage("2012_000001", solid(50, 100, RED),
                     (voc.VocObject("dog", (11, 6, 30, 25)), voc.VocObject("cat", (1, 1, 100, 50), True)))
    b = voc.VocImage("2012_000002", solid(60, 40, GREEN),
                     (voc.VocObject("person", (5, 5, 20, 30), parts=(("head", (6, 6, 9, 9)),)),), omit_difficult=True)
    c = voc.VocImage("2012_000003", solid(30, 30, BLUE), (voc.VocObject("tvmonitor", (1, 1, 30, 30)),))
    (tmp_path / voc.VOC2012_ARCHIVE).write_bytes(voc.voc_tar_bytes([a, b], [c]))
    return tmp_path


def test_the_manifest_pins_the_published_tar_and_names_its_prepare_step():
    spec = load_manifest().get("voc2012")
    (file,) = spec.files
    assert file.name == "VOCtrainval_11-May-2012.tar" and file.size == 1999639040
    assert file.sha256 == "e14f763270cf193d0b5f74b169f44157a4b0c6efa708f4dd0ff78ee691763bcb"  # TFDS voc.txt
    assert file.urls[0] == "https://host.robots.ox.ac.uk/pascal/VOC/voc2012/VOCtrainval_11-May-2012.tar"
    assert find_preparer(spec.prepare).func is voc.prepare_voc2012


def test_scale_follows_py_faster_rcnn():
    # A 500 x 375 image (VOC's commonest): 600/375 = 1.6, long side 800 <= 1000.
    assert voc.scale_for(375, 500, 600, 1000) == pytest.approx(1.6)
    # 200 x 500: 600/200 = 3 would make the long side 1500 > 1000, so 1000/500 = 2.
    assert voc.scale_for(200, 500, 600, 1000) == pytest.approx(2.0)
    # 300 x 501: 2 * 501 = 1002 rounds above 1000 -> 1000/501; 3 x 5 to 6 / 10: 2 * 5 = 10 is not above -> 2.
    assert voc.scale_for(300, 501, 600, 1000) == pytest.approx(1000 / 501)
    assert voc.scale_for(3, 5, 6, 10) == 2.0
    assert voc.resized_size(300, 501, 1000 / 501) == (599, 1000)  # 598.8 rounds to 599


def test_prepare_resizes_images_and_scales_boxes(tmp_path):
    arrays, meta = voc.prepare_voc(hand_worked_tar(tmp_path), short_side=20, max_side=30)
    # A: 20/50 = .4 would make the width 40 > 30 -> .3: 15 x 30. B: 20/40 = .5, height 30 <= 30: 30 x 20.
    np.testing.assert_allclose(arrays["scale_train"], [0.3, 0.5])
    assert arrays["shape_train"].tolist() == [[15, 30], [30, 20]]
    assert arrays["original_shape_train"].tolist() == [[50, 100], [60, 40]]
    assert arrays["offset_train"].tolist() == [0, 15 * 30 * 3] and arrays["pixels_train"].size == 1350 + 1800
    first = arrays["pixels_train"][:1350].reshape(15, 30, 3).astype(int)
    second = arrays["pixels_train"][1350:].reshape(30, 20, 3).astype(int)
    assert np.abs(first - RED).max() <= 4 and np.abs(second - GREEN).max() <= 4  # JPEG of a solid colour
    # Boxes 0-based, "+0" extent, times the scale: dog (10, 5, 30, 25) * .3, cat (0, 0, 100, 50) * .3,
    # person (4, 4, 20, 30) * .5: the annotated widths (xmax - xmin + 1) kept.
    np.testing.assert_allclose(arrays["boxes_train"], [[[3.0, 1.5, 9.0, 7.5], [0.0, 0.0, 30.0, 15.0]],
                                                       [[2.0, 2.0, 10.0, 15.0], [0.0, 0.0, 0.0, 0.0]]], rtol=1e-6)
    np.testing.assert_array_equal(arrays["original_boxes_train"][0], [[11, 6, 30, 25], [1, 1, 100, 50]])
    # Devkit order: cat 7, dog 11, person 14, tvmonitor 19; the person's <part> bndbox is not its box.
    assert arrays["labels_train"].tolist() == [[11, 7], [14, -1]] and arrays["y_train"].tolist() == [2, 1]
    assert arrays["difficult_train"].tolist() == [[False, True], [False, False]]  # absent <difficult>: 0
    assert arrays["id_train"].tolist() == ["2012_000001", "2012_000002"]
    # val is the test split: C 30 x 30 -> 20/30, 20 x 20; box (0, 0, 30, 30) * 2/3.
    assert arrays["shape_test"].tolist() == [[20, 20]] and arrays["labels_test"].tolist() == [[19]]
    np.testing.assert_allclose(arrays["boxes_test"][0, 0], [0, 0, 20, 20], rtol=1e-6)
    assert meta["class_names"][19] == "tvmonitor" and meta["objects"] == {"train": 3, "test": 1}


def test_the_synthetic_tar_has_the_published_layout_and_the_same_bytes_each_time(tmp_path):
    files = synthetic_files(tmp_path / "a", "voc2012")
    assert files == synthetic_files(tmp_path / "b", "voc2012")
    with tarfile.open(fileobj=io.BytesIO(files[voc.VOC2012_ARCHIVE])) as tar:
        names = set(tar.getnames())
        train = tar.extractfile("VOCdevkit/VOC2012/ImageSets/Main/train.txt").read().decode().split()
        val = tar.extractfile("VOCdevkit/VOC2012/ImageSets/Main/val.txt").read().decode().split()
    assert (len(train), len(val)) == VOC_SIZES and not set(train) & set(val)
    for image_id in train + val:
        assert {f"{voc.DEVKIT}JPEGImages/{image_id}.jpg", f"{voc.DEVKIT}Annotations/{image_id}.xml"} <= names
    assert "VOCdevkit/VOC2012/ImageSets/Main/aeroplane_train.txt" in names


def test_the_synthetic_tar_downloads_prepares_and_loads_by_rows(tmp_path):
    files = synthetic_files(tmp_path / "src", "voc2012")
    with served(files) as server:
        out = fetch_and_prepare("voc2012", manifest_for({"voc2012": files}, [server.url + "/a/"]), tmp_path / "root")
    whole = prepared.load(out)
    assert whole.meta["counts"] == {"train": VOC_SIZES[0], "test": VOC_SIZES[1]}
    assert whole.meta["raw_verification"] == {voc.VOC2012_ARCHIVE: "manifest sha256"}
    rows = prepared.load(out, train_indices=[2, 0], test_indices=[1])
    # Per-image rows are picked; the flat pixels stay whole, so each picked offset still finds its image.
    assert rows.train["pixels"].size == whole.train["pixels"].size and len(rows.train["offset"]) == 2
    start, (height, width) = int(rows.train["offset"][0]), rows.train["shape"][0]
    expected = whole.train["pixels"][int(whole.train["offset"][2]):][:height * width * 3]
    np.testing.assert_array_equal(rows.train["pixels"][start:start + height * width * 3], expected)
    np.testing.assert_array_equal(rows.train["boxes"], whole.train["boxes"][[2, 0]])
    # Every box lies in its resized image and has a class; padding rows are -1.
    for split in ("train", "test"):
        data = getattr(whole, split)
        for row, count in enumerate(data["y"]):
            boxes = data["boxes"][row, :count]
            assert (boxes[:, :2] >= 0).all() and (boxes[:, 2] <= data["shape"][row, 1] + 1e-4).all()
            assert (boxes[:, 3] <= data["shape"][row, 0] + 1e-4).all()
            assert (data["labels"][row, :count] >= 0).all() and (data["labels"][row, count:] == -1).all()


def test_annotations_that_are_not_voc_are_refused():
    with pytest.raises(RawFormatError, match="not valid XML"):
        voc.parse_annotation(b"<annotation><object>", "x.xml")
    with pytest.raises(RawFormatError, match="not a VOC class"):
        voc.parse_annotation(b"<annotation><object><name>unicorn</name><bndbox/></object></annotation>", "x.xml")
    with pytest.raises(RawFormatError, match="numeric xmin"):
        voc.parse_annotation(b"<annotation><object><name>cat</name><bndbox><xmin>1</xmin></bndbox></object>"
                             b"</annotation>", "x.xml")
    (cat,) = voc.parse_annotation(b"<annotation><object><name>cat</name><difficult>1</difficult><bndbox><xmin>1"
                                  b"</xmin><ymin>2.5</ymin><xmax>3</xmax><ymax>4</ymax></bndbox></object></annotation>",
                                  "x.xml")
    assert cat == voc.VocObject("cat", (1.0, 2.5, 3.0, 4.0), True)


def test_a_tar_without_a_list_or_an_image_is_refused(tmp_path):
    image = voc.VocImage("2012_000001", solid(20, 20, RED), (voc.VocObject("cat", (1, 1, 5, 5)),))
    body = voc.voc_tar_bytes([image], [])
    names = []
    with tarfile.open(fileobj=io.BytesIO(body)) as src, tarfile.open(tmp_path / voc.VOC2012_ARCHIVE, "w") as dst:
        for member in src.getmembers():
            names.append(member.name)
            if not member.name.endswith(".jpg"):  # drop the JPEG
                dst.addfile(member, src.extractfile(member) if member.isfile() else None)
    with pytest.raises(RawFormatError, match="lacks VOCdevkit/VOC2012/JPEGImages/2012_000001.jpg"):
        voc.prepare_voc(tmp_path, 20, 30)
    (tmp_path / voc.VOC2012_ARCHIVE).write_bytes(b"not a tar")
    with pytest.raises(RawFormatError, match="not a readable tar"):
        voc.prepare_voc(tmp_path, 20, 30)
    with pytest.raises(UsageError, match="short side 40, max side 30"):
        voc.prepare_voc(tmp_path, 40, 30)


def test_prepared_ground_truth_feeds_the_voc_evaluation(tmp_path):
    from bench.detection import voc_eval

    arrays, meta = voc.prepare_voc(hand_worked_tar(tmp_path), short_side=20, max_side=30)
    truth = [{"boxes": arrays["original_boxes_train"][i, :n], "labels": arrays["labels_train"][i, :n],
              "difficult": arrays["difficult_train"][i, :n]} for i, n in enumerate(arrays["y_train"])]
    found = [dict(t, scores=np.ones(len(t["labels"]))) for t in truth]
    result = voc_eval.evaluate(found, truth, meta["class_names"])
    # dog and person are found exactly (AP 1); the cat is difficult (its detection ignored, no AP); the
    # other 17 classes have no object: no AP either.
    assert result["map"] == 1.0 and sorted(k for k, v in result["ap"].items() if v is not None) == ["dog", "person"]
    assert len(result["no_ground_truth"]) == 18
