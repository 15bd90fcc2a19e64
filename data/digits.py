"""Hand-drawn-looking digits for the synthetic image datasets (MNIST-like and SVHN-like).

Each digit has a pen-stroke template (polylines in a unit box); :func:`render_digits` draws
randomly deformed variants of it (jittered control points, slant, scale, stroke width),
anti-aliased into a 20x20 box centred in a 32x32 canvas. Kept apart from data/synthetic.py so
that the per-dataset modules (data/svhn.py) can use it without importing the registries.
"""

from __future__ import annotations

import numpy as np

_TAU = 2 * np.pi


def _arc(cx: float, cy: float, rx: float, ry: float, start: float, stop: float, n: int = 10) -> list:
    """Points on an ellipse arc (angles in turns, 0 = right, 0.25 = down)."""
    t = np.linspace(start, stop, n) * _TAU
    return list(zip(cx + rx * np.cos(t), cy + ry * np.sin(t)))


# Strokes of each digit in a unit box (x right, y down): a list of polylines.
_STROKES: dict[int, list[list[tuple[float, float]]]] = {
    0: [_arc(0.5, 0.5, 0.32, 0.46, 0, 1, 16)],
    1: [[(0.35, 0.2), (0.55, 0.04), (0.55, 0.96)]],
    2: [_arc(0.5, 0.3, 0.3, 0.25, 0.55, 1.08, 8) + [(0.15, 0.95), (0.88, 0.95)]],
    3: [_arc(0.48, 0.28, 0.3, 0.22, 0.6, 1.25, 8), _arc(0.48, 0.72, 0.33, 0.25, 0.75, 1.4, 8)],
    4: [[(0.62, 0.96), (0.62, 0.04), (0.1, 0.66), (0.9, 0.66)]],
    5: [[(0.82, 0.05), (0.28, 0.05), (0.22, 0.44)] + _arc(0.5, 0.68, 0.32, 0.28, 0.62, 1.3, 9)],
    6: [[(0.72, 0.04), (0.3, 0.45)] + _arc(0.5, 0.7, 0.27, 0.26, 0.5, 1.5, 12)],
    7: [[(0.12, 0.06), (0.88, 0.06), (0.42, 0.96)]],
    8: [_arc(0.5, 0.27, 0.25, 0.23, 0.25, 1.25, 12), _arc(0.5, 0.72, 0.3, 0.25, -0.25, 0.75, 12)],
    9: [_arc(0.5, 0.3, 0.28, 0.26, 0, 1, 12), [(0.78, 0.3), (0.62, 0.96)]],
}
# Centres of the 32x32 canvas' pixels as (x, y), the points whose distance to the strokes is ink.
_PIXELS = np.stack(np.meshgrid(np.arange(32) + 0.5, np.arange(32) + 0.5), -1).reshape(-1, 2)
_PIXELS = _PIXELS.astype(np.float32)


def _segments(digit: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Control points of a digit and the (start, end) point index of each stroke segment."""
    points, starts, ends = [], [], []
    for line in _STROKES[digit]:
        base = len(points)
        points += line
        starts += range(base, base + len(line) - 1)
        ends += range(base + 1, base + len(line))
    return np.asarray(points, dtype=np.float32), np.asarray(starts), np.asarray(ends)


def render_digits(digit: int, count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` randomly deformed renderings of a digit, float32 (count, 32, 32) in [0, 1].

    32x32 with the 20x20 digit box centred, so a shift of up to 2 pixels can be cut out later.
    """
    points, starts, ends = _segments(digit)
    pts = points[None] + rng.normal(0, 0.03, (count, len(points), 2)).astype(np.float32)
    # Random slant, width and height, then into the 20x20 box centred at (16, 16).
    slant = rng.uniform(-0.35, 0.25, count)[:, None]
    sx, sy = rng.uniform(0.7, 1.05, count)[:, None], rng.uniform(0.85, 1.05, count)[:, None]
    x = (pts[..., 0] - 0.5) * sx + (pts[..., 1] - 0.5) * slant
    y = (pts[..., 1] - 0.5) * sy
    pts = np.stack([16 + 20 * x, 16 + 20 * y], -1).astype(np.float32)
    a, b = pts[:, starts][:, :, None], pts[:, ends][:, :, None]  # (count, segs, 1, 2)
    ab = b - a
    ap = _PIXELS - a  # (count, segs, 1024, 2)
    t = np.clip((ap * ab).sum(-1) / np.maximum((ab * ab).sum(-1), 1e-6), 0, 1)
    dist = np.sqrt(((ap - t[..., None] * ab) ** 2).sum(-1).min(axis=1))  # distance to the nearest stroke
    width = rng.uniform(1.4, 2.8, count)[:, None]
    ink = np.clip(width / 2 + 0.5 - dist, 0, 1) * rng.uniform(0.8, 1.0, count)[:, None]
    return ink.reshape(count, 32, 32).astype(np.float32)
