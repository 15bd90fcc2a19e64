"""PASCAL VOC2012 detection (Everingham et al. 2010): the trainval tar, prepared and synthetic.

Published as ``VOCtrainval_11-May-2012.tar`` (1,999,639,040 bytes; manifest.toml pins its sha256):
VOCdevkit/VOC2012/JPEGImages/<id>.jpg, Annotations/<id>.xml (one <object> per object: <name>, <difficult>,
<bndbox> with xmin, ymin, xmax, ymax as 1-based inclusive pixel indices) and ImageSets/Main/train.txt and
val.txt (one id a line: 5,717 and 5,823 images). VOC2012's test annotations are not public, so the
study's "test" split is val, as DLBench's (Sec 4.3) was.

Prepared (prepare_voc2012: the image sizes of Ren et al. 2015 / py-faster-rcnn's defaults, short side
600 and long side at most 1000; prepare_voc for others). Images have different sizes, so the pixels of a
split are one flat array and every other array has one row per image (bench/prepared.py subsets rows
of the arrays whose length is the image count, and keeps the flat pixels whole), per <split> in train, test:

    pixels_<split>          uint8 (P,)      every resized image's RGB bytes, row-major (H, W, 3), one after another
    offset_<split>          int64 (N,)      where image i starts in pixels_<split>
    shape_<split>           int32 (N, 2)    resized (height, width)
    original_shape_<split>  int32 (N, 2)    (height, width) of the JPEG
    scale_<split>           float64 (N,)    resized / original (one factor for both axes)
    boxes_<split>           float32 (N, K, 4)  [x1, y1, x2, y2] in the resized image, 0-based with the "+0" extent
                                               of bench/detection: (xmin - 1, ymin - 1, xmax, ymax) * scale;
                                               rows past y_<split>[i] are 0
    original_boxes_<split>  float32 (N, K, 4)  the annotation's [xmin, ymin, xmax, ymax] as written (1-based),
                                               what the VOC evaluation (bench/detection/voc_eval.py) compares with
    labels_<split>          int64 (N, K)    index into VOC_CLASSES (the devkit's order); -1 past the objects
    difficult_<split>       bool (N, K)     the annotation's <difficult> (0 where absent, as py-faster-rcnn)
    y_<split>               int64 (N,)      objects per image (real rows of boxes / labels / difficult)
    id_<split>              str (N,)        the image id, e.g. 2008_000008, in the order of the split's list

K is the most objects any image of the split has. Resizing follows py-faster-rcnn's prep_im_for_blob:
scale = S / short side, unless that makes the long side round above M, then M / long side; the size is
round(side * scale) and the filter Pillow's bilinear (py-faster-rcnn used OpenCV's: pixels differ slightly,
boxes do not). Every image is kept (py-faster-rcnn drops none of VOC2012 train either); flipping, an
augmentation, is the training loop's.

Reading JPEGs needs Pillow (on the host through images/host/requirements.txt); it is imported only here.

Synthetic: the same tar layout with small JPEGs of coloured rectangles on noise, 1-3 objects each, some
difficult, some with person-layout <part>s and one without a <difficult> element, plus the per-class
lists the real tar has beside train.txt and val.txt.
"""

from __future__ import annotations

import io
import tarfile
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench.atomic import write_bytes as write_bytes_atomic
from bench.detection.images import resized_size, scale_for
from bench.errors import UsageError
from data.formats import RawFormatError, tar_add
from data.npz import Arrays

VOC2012_ARCHIVE = "VOCtrainval_11-May-2012.tar"
DEVKIT = "VOCdevkit/VOC2012/"
# The devkit's class order (VOCinit.m VOCopts.classes): labels are indices into it.
VOC_CLASSES = (
    "aeroplane", "bicycle", "bird", "boat", "bottle", "bus", "car", "cat", "chair", "cow",
    "diningtable", "dog", "horse", "motorbike", "person", "pottedplant", "sheep", "sofa", "train", "tvmonitor",
)
# The prepared split -> the devkit's list it reads: the public val half is the test split.
SPLITS = {"train": "train", "test": "val"}
# Ren et al. 2015 Sec 3.3 / py-faster-rcnn's config (TRAIN.SCALES = (600,), MAX_SIZE = 1000).
SHORT_SIDE = 600
MAX_SIDE = 1000


def _pil() -> Any:
    try:
        from PIL import Image
    except ImportError:
        raise UsageError("VOC's JPEG images need Pillow, which this Python lacks",
                         "install it (pip install -r images/host/requirements.txt), then rerun") from None
    return Image


# ---------------------------------------------------------------- reading the tar


@dataclass(frozen=True)
class VocObject:
    """One annotated object: its class name, box [xmin, ymin, xmax, ymax] (1-based, inclusive) and difficult flag."""

    name: str
    box: tuple[float, float, float, float]
    difficult: bool = False
    parts: tuple[tuple[str, tuple[int, int, int, int]], ...] = ()


def parse_annotation(xml: bytes, where: str) -> list[VocObject]:
    """The objects of one Annotations/<id>.xml, in file order (RawFormatError when it is not VOC XML)."""
    try:
        root = ET.fromstring(xml)
    except ET.ParseError as err:
        raise RawFormatError(f"{where} is not valid XML ({err})") from None
    objects = []
    for obj in root.findall("object"):
        name, box = (obj.findtext("name") or "").strip(), obj.find("bndbox")  # the object's own, not its parts'
        if name not in VOC_CLASSES or box is None:
            raise RawFormatError(f"{where} has an object that is not a VOC class with a bndbox ({name!r})")
        try:
            coords = tuple(float(box.findtext(k)) for k in ("xmin", "ymin", "xmax", "ymax"))
        except (TypeError, ValueError):
            raise RawFormatError(f"{where}: the bndbox of a {name} lacks a numeric xmin, ymin, xmax or ymax") from None
        difficult = (obj.findtext("difficult") or "0").strip()
        objects.append(VocObject(name, coords, difficult not in ("", "0")))
    return objects


def _member_bytes(tar: tarfile.TarFile, members: dict[str, tarfile.TarInfo], name: str, archive: str) -> bytes:
    member = members.get(DEVKIT + name)
    handle = tar.extractfile(member) if member is not None else None
    if handle is None:
        raise RawFormatError(f"{archive} lacks {DEVKIT}{name}")
    return handle.read()


def _split_ids(text: bytes) -> list[str]:
    return [line.strip() for line in text.decode("ascii", errors="replace").splitlines() if line.strip()]


def _open_image(tar: tarfile.TarFile, members: dict[str, tarfile.TarInfo], image_id: str, archive: str) -> Any:
    """The JPEG of an image id, opened (Pillow reads the header now and the pixels when asked)."""
    body = _member_bytes(tar, members, f"JPEGImages/{image_id}.jpg", archive)
    try:
        return _pil().open(io.BytesIO(body))
    except OSError as err:  # Pillow's UnidentifiedImageError is an OSError
        raise _bad_jpeg(archive, image_id, err) from None


def _bad_jpeg(archive: str, image_id: str, err: OSError) -> RawFormatError:
    return RawFormatError(f"{archive}: {DEVKIT}JPEGImages/{image_id}.jpg is not a readable JPEG ({err})")


def _layout(tar: tarfile.TarFile, members: dict[str, tarfile.TarInfo], ids: list[str], archive: str,
            short_side: int, max_side: int) -> dict[str, np.ndarray]:
    """From the JPEG headers alone: each image's original shape, scale, resized shape and offset."""
    n = len(ids)
    out = {"offset": np.zeros(n, np.int64), "shape": np.zeros((n, 2), np.int32),
           "original_shape": np.zeros((n, 2), np.int32), "scale": np.zeros(n, np.float64)}
    position = 0
    for row, image_id in enumerate(ids):
        with _open_image(tar, members, image_id, archive) as image:
            width, height = image.size
        scale = scale_for(height, width, short_side, max_side)
        out["offset"][row], out["scale"][row], out["original_shape"][row] = position, scale, (height, width)
        out["shape"][row] = resized_size(height, width, scale)
        position += int(out["shape"][row].prod()) * 3
    return out


def _pixels(tar: tarfile.TarFile, members: dict[str, tarfile.TarInfo], ids: list[str], archive: str,
            layout: dict[str, np.ndarray]) -> np.ndarray:
    """Every image decoded, RGB, resized (Pillow bilinear) into one flat array allocated once (the real
    train split is about 8 GB at short side 600: a list of images then a concatenation would need twice that)."""
    total = int(layout["offset"][-1] + layout["shape"][-1].prod() * 3) if len(ids) else 0
    pixels = np.zeros(total, np.uint8)
    for row, image_id in enumerate(ids):
        height, width = (int(v) for v in layout["shape"][row])
        try:
            with _open_image(tar, members, image_id, archive) as image:
                rgb = image.convert("RGB")  # VOC has a few grey-scale JPEGs
                if rgb.size != (width, height):
                    rgb = rgb.resize((width, height), _pil().BILINEAR)
                start = int(layout["offset"][row])
                pixels[start:start + height * width * 3] = np.asarray(rgb, dtype=np.uint8).reshape(-1)
        except OSError as err:  # a truncated JPEG fails when decoded
            raise _bad_jpeg(archive, image_id, err) from None
    return pixels


def _objects(annotations: list[list[VocObject]], scale: np.ndarray) -> dict[str, np.ndarray]:
    """Boxes (resized, 0-based, and as annotated), labels and difficult flags, one row per image, padded."""
    n, most = len(annotations), max((len(o) for o in annotations), default=0)
    out = {"boxes": np.zeros((n, most, 4), np.float32), "original_boxes": np.zeros((n, most, 4), np.float32),
           "labels": np.full((n, most), -1, np.int64), "difficult": np.zeros((n, most), bool),
           "y": np.array([len(o) for o in annotations], np.int64)}
    for row, found in enumerate(annotations):
        if not found:
            continue
        original = np.array([o.box for o in found], np.float64)
        out["original_boxes"][row, :len(found)] = original
        # The devkit's inclusive pixels [xmin, xmax] cover [xmin - 1, xmax) 0-based: the kit's "+0" extent
        # (bench/detection: width = x2 - x1) keeps the annotated width xmax - xmin + 1.
        out["boxes"][row, :len(found)] = (original - [1.0, 1.0, 0.0, 0.0]) * scale[row]
        out["labels"][row, :len(found)] = [VOC_CLASSES.index(o.name) for o in found]
        out["difficult"][row, :len(found)] = [o.difficult for o in found]
    return out


def _split_arrays(tar: tarfile.TarFile, members: dict[str, tarfile.TarInfo], ids: list[str], archive: str,
                  short_side: int, max_side: int) -> dict[str, np.ndarray]:
    """One split's arrays (the module docstring's table, without the _<split> suffix)."""
    annotations = [parse_annotation(_member_bytes(tar, members, f"Annotations/{i}.xml", archive),
                                    f"{archive}: {DEVKIT}Annotations/{i}.xml") for i in ids]
    out = _layout(tar, members, ids, archive, short_side, max_side)
    out.update(_objects(annotations, out["scale"]))
    out["pixels"] = _pixels(tar, members, ids, archive, out)
    out["id"] = np.array(ids, dtype=str)
    return out


def prepare_voc(raw: Path, short_side: int = SHORT_SIDE, max_side: int = MAX_SIDE,
                archive: str = VOC2012_ARCHIVE) -> tuple[Arrays, dict[str, Any]]:
    """The VOC trainval tar's Main train (-> train) and val (-> test) lists as the module docstring's arrays,
    images resized to short side `short_side`, long side at most `max_side`."""
    if not 0 < short_side <= max_side:
        raise UsageError(f"VOC image sizes short side {short_side}, max side {max_side}",
                         "give 0 < short side <= max side")
    path = Path(raw) / archive
    arrays: Arrays = {}
    counts = {}
    try:
        with tarfile.open(path, "r:") as tar:
            # Index every member once (the real tar has 17,125 JPEGs); a "./" prefix is tolerated.
            members = {(m.name[2:] if m.name.startswith("./") else m.name): m for m in tar.getmembers()}
            for split, listed in SPLITS.items():
                ids = _split_ids(_member_bytes(tar, members, f"ImageSets/Main/{listed}.txt", archive))
                counts[split] = len(ids)
                for key, value in _split_arrays(tar, members, ids, archive, short_side, max_side).items():
                    arrays[f"{key}_{split}"] = value
    except (tarfile.TarError, EOFError) as err:
        raise RawFormatError(f"{archive} is not a readable tar ({err or 'truncated'})") from None
    meta = {
        "task": "detection",
        "num_classes": len(VOC_CLASSES),
        "class_names": list(VOC_CLASSES),
        "short_side": short_side,
        "max_side": max_side,
        "splits": {split: f"ImageSets/Main/{listed}.txt" for split, listed in SPLITS.items()},
        "objects": {split: int(arrays[f"y_{split}"].sum()) for split in SPLITS},
        "layout": "pixels_<split> flat uint8 RGB (H, W, 3) per image at offset_<split>, shape_<split>; boxes_<split> "
                  "0-based [x1, y1, x2, y2] in the resized image, (xmin - 1, ymin - 1, xmax, ymax) * scale; "
                  "original_boxes_<split> "
                  "the annotation's 1-based [xmin, ymin, xmax, ymax]; labels -1 and boxes 0 past y_<split> objects",
        "resize": "py-faster-rcnn prep_im_for_blob: short side to short_side unless the long side rounds above "
                  "max_side; round(side * scale), Pillow bilinear",
    }
    return arrays, meta


def prepare_voc2012(raw: Path) -> tuple[Arrays, dict[str, Any]]:
    """VOCtrainval_11-May-2012.tar at Faster R-CNN's image size (short side 600, long side <= 1000)."""
    return prepare_voc(raw, SHORT_SIDE, MAX_SIDE)


# ---------------------------------------------------------------- writing the tar (synthetic data, tests)


@dataclass(frozen=True)
class VocImage:
    """One image of a VOC-format tar: its id, RGB pixels (H, W, 3) uint8 and annotated objects."""

    image_id: str
    pixels: np.ndarray
    objects: tuple[VocObject, ...]
    # Leave out <difficult> (some real VOC2012 objects have none); the reader then takes 0.
    omit_difficult: bool = False


def annotation_xml(image: VocImage) -> bytes:
    """The Annotations/<id>.xml of an image, in the devkit's layout."""
    height, width = image.pixels.shape[:2]
    root = ET.Element("annotation")
    for key, value in (("folder", "VOC2012"), ("filename", f"{image.image_id}.jpg")):
        ET.SubElement(root, key).text = value
    source = ET.SubElement(root, "source")
    for key, value in (("database", "The VOC2008 Database"), ("annotation", "PASCAL VOC2008"), ("image", "flickr")):
        ET.SubElement(source, key).text = value
    size = ET.SubElement(root, "size")
    for key, value in (("width", width), ("height", height), ("depth", 3)):
        ET.SubElement(size, key).text = str(value)
    ET.SubElement(root, "segmented").text = "0"
    for obj in image.objects:
        node = ET.SubElement(root, "object")
        ET.SubElement(node, "name").text = obj.name
        ET.SubElement(node, "pose").text = "Unspecified"
        ET.SubElement(node, "truncated").text = "0"
        if not image.omit_difficult:
            ET.SubElement(node, "difficult").text = "1" if obj.difficult else "0"
        _bndbox(node, obj.box)
        for part_name, part_box in obj.parts:  # person layout: parts have bndboxes of their own
            part = ET.SubElement(node, "part")
            ET.SubElement(part, "name").text = part_name
            _bndbox(part, part_box)
    return ET.tostring(root, encoding="utf-8")


def _bndbox(parent: ET.Element, box: Sequence[float]) -> None:
    node = ET.SubElement(parent, "bndbox")
    for key, value in zip(("xmin", "ymin", "xmax", "ymax"), box):
        ET.SubElement(node, key).text = f"{value:g}"


def jpeg_bytes(pixels: np.ndarray, quality: int = 90) -> bytes:
    """RGB uint8 (H, W, 3) as baseline JPEG bytes (the same bytes for the same pixels and Pillow)."""
    buf = io.BytesIO()
    _pil().fromarray(np.ascontiguousarray(pixels, dtype=np.uint8), "RGB").save(buf, "JPEG", quality=quality)
    return buf.getvalue()


def voc_tar_bytes(train: Sequence[VocImage], val: Sequence[VocImage]) -> bytes:
    """A tar laid out like VOCtrainval_11-May-2012.tar holding these images, annotations and Main lists."""
    buf = io.BytesIO()
    images = list(train) + list(val)
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for folder in ("", "Annotations/", "ImageSets/", "ImageSets/Main/", "JPEGImages/"):
            tar_add(tar, DEVKIT + folder)
        for image in images:
            tar_add(tar, f"{DEVKIT}Annotations/{image.image_id}.xml", annotation_xml(image))
        lists = {"train": train, "val": val, "trainval": images}
        for listed, members in lists.items():
            tar_add(tar, f"{DEVKIT}ImageSets/Main/{listed}.txt", "".join(f"{i.image_id}\n" for i in members).encode())
            # The real tar's per-class lists (id, then 1 / -1 / 0 difficult-only): never read by prepare.
            for name in VOC_CLASSES[:2]:
                rows = "".join(f"{i.image_id} {_presence(i, name):2d}\n" for i in members)
                tar_add(tar, f"{DEVKIT}ImageSets/Main/{name}_{listed}.txt", rows.encode())
        for image in images:
            tar_add(tar, f"{DEVKIT}JPEGImages/{image.image_id}.jpg", jpeg_bytes(image.pixels))
    return buf.getvalue()


def _presence(image: VocImage, name: str) -> int:
    found = [o for o in image.objects if o.name == name]
    return -1 if not found else (1 if any(not o.difficult for o in found) else 0)


def synthetic_images(n: int, rng: np.random.Generator, first: int = 1) -> list[VocImage]:
    """`n` images of 48-96 x 48-96 pixels: noise with 1-3 filled rectangles, each a random VOC class, one in
    five difficult; every fourth image's objects lack <difficult>, and people get a head <part>."""
    images = []
    for k in range(n):
        height, width = (int(v) for v in rng.integers(48, 97, size=2))
        pixels = rng.integers(0, 64, size=(height, width, 3)).astype(np.uint8)
        objects = []
        for _ in range(int(rng.integers(1, 4))):
            x0, y0 = int(rng.integers(0, width - 16)), int(rng.integers(0, height - 16))
            x1, y1 = int(rng.integers(x0 + 12, width)), int(rng.integers(y0 + 12, height))
            pixels[y0:y1 + 1, x0:x1 + 1] = rng.integers(96, 256, size=3).astype(np.uint8)
            name = VOC_CLASSES[int(rng.integers(len(VOC_CLASSES)))]
            parts = ((("head", (x0 + 1, y0 + 1, x0 + 6, y0 + 6)),) if name == "person" else ())
            # Annotations are 1-based: pixel column x0 is xmin x0 + 1.
            objects.append(VocObject(name, (x0 + 1, y0 + 1, x1 + 1, y1 + 1), bool(rng.random() < 0.2), parts))
        images.append(VocImage(f"2012_{first + k:06d}", pixels, tuple(objects), omit_difficult=k % 4 == 3))
    return images


def write_voc2012(raw: Path, n_train: int, n_test: int, seed: int = 0) -> list[Path]:
    """Write a synthetic VOCtrainval_11-May-2012.tar into `raw`: n_train images in train.txt, n_test in val.txt."""
    rng = np.random.default_rng([seed, 0x0C2012])
    train = synthetic_images(n_train, rng, 1)
    val = synthetic_images(n_test, rng, 1 + n_train)
    path = Path(raw) / VOC2012_ARCHIVE
    write_bytes_atomic(path, voc_tar_bytes(train, val))
    return [path]
