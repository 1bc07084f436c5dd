"""Learning curves of a run as a PNG: loss (left) and the metric (right) per epoch for train / val / test.

Drawn with Pillow (``PIL.ImageDraw``: axes, ticks, one line per split, a legend). Pillow imports in about
25 ms; matplotlib took 0.5 s to import and 0.4 s to draw, about a tenth of a whole run on a small graph
(docs/node-classification.md#time-to-a-result).
"""
from __future__ import annotations

import math
import os
from typing import Dict, List, Optional, Sequence, Tuple, Union

from PIL import Image, ImageDraw, ImageFont

from ..atomic import atomic_write

SPLITS = ("train", "val", "test")
#: Line colours of the splits (matplotlib's first three).
COLOURS = {"train": (31, 119, 180), "val": (255, 127, 14), "test": (44, 160, 44)}
WIDTH, HEIGHT = 1000, 400
#: Room around a panel's plot area: left (tick labels), top (title), right, bottom (tick labels, x label).
MARGIN = (64, 28, 16, 44)
GRID, AXES, TEXT = (225, 225, 225), (60, 60, 60), (0, 0, 0)
Box = Tuple[int, int, int, int]


def plot_curves(history: List[Dict[str, float]], metric_name: str, path: Union[str, os.PathLike]) -> None:
    """Loss (left) and ``metric_name`` (right) per epoch for train / val / test, written to ``path`` (PNG).

    ``history`` rows carry ``epoch`` and ``{split}_loss`` / ``{split}_metric``
    for the splits train, val and test (as ``metrics.jsonl`` does); missing or
    non-finite values leave a gap in their line.
    """
    image = Image.new("RGB", (WIDTH, HEIGHT), "white")
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default()
    epochs = [float(row["epoch"]) for row in history]
    for index, (key, title) in enumerate((("loss", "loss"), ("metric", metric_name))):
        left = index * WIDTH // 2
        box = (left + MARGIN[0], MARGIN[1], left + WIDTH // 2 - MARGIN[2], HEIGHT - MARGIN[3])
        series = {split: [_finite(row.get(f"{split}_{key}")) for row in history] for split in SPLITS}
        _panel(draw, font, box, epochs, series, title)
    with atomic_write(path) as handle:
        image.save(handle, format="PNG")


def _finite(value) -> Optional[float]:
    """``value`` as a float, or None where it is missing or not finite."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _panel(draw: ImageDraw.ImageDraw, font, box: Box, epochs: Sequence[float],
           series: Dict[str, List[Optional[float]]], title: str) -> None:
    """One plot: grid, axes with ticks, a line per split, the legend and the title, inside ``box``."""
    x0, y0, x1, y1 = box
    values = [v for line in series.values() for v in line if v is not None]
    x_range = _padded(min(epochs, default=0.0), max(epochs, default=1.0))
    y_range = _padded(min(values, default=0.0), max(values, default=1.0))

    def to_pixel(x: float, y: float) -> Tuple[float, float]:
        return (x0 + (x - x_range[0]) / (x_range[1] - x_range[0]) * (x1 - x0),
                y1 - (y - y_range[0]) / (y_range[1] - y_range[0]) * (y1 - y0))

    for tick in _ticks(*y_range):
        _, y = to_pixel(x_range[0], tick)
        draw.line([(x0, y), (x1, y)], fill=GRID)
        label = f"{tick:.3g}"
        draw.text((x0 - 6 - draw.textlength(label, font=font), y - 5), label, fill=TEXT, font=font)
    for tick in _ticks(*x_range, integer=True):
        x, _ = to_pixel(tick, y_range[0])
        draw.line([(x, y1), (x, y1 + 4)], fill=AXES)
        label = f"{tick:g}"
        draw.text((x - draw.textlength(label, font=font) / 2, y1 + 7), label, fill=TEXT, font=font)
    draw.rectangle(box, outline=AXES)
    for split, line in series.items():
        for segment in _segments(epochs, line):
            points = [to_pixel(x, y) for x, y in segment]
            if len(points) == 1:
                (px, py), = points
                draw.ellipse((px - 2, py - 2, px + 2, py + 2), fill=COLOURS[split])
            else:
                draw.line(points, fill=COLOURS[split], width=2)
    draw.rectangle((x1 - 76, y0 + 4, x1 - 6, y0 + 10 + 14 * len(SPLITS)), fill="white", outline=GRID)
    for row, split in enumerate(SPLITS):  # the legend, top right
        y = y0 + 8 + 14 * row
        draw.line([(x1 - 70, y + 5), (x1 - 50, y + 5)], fill=COLOURS[split], width=2)
        draw.text((x1 - 44, y), split, fill=TEXT, font=font)
    draw.text(((x0 + x1 - draw.textlength(title, font=font)) / 2, y0 - 18), title, fill=TEXT, font=font)
    draw.text(((x0 + x1 - draw.textlength("epoch", font=font)) / 2, y1 + 22), "epoch", fill=TEXT, font=font)


def _padded(low: float, high: float) -> Tuple[float, float]:
    """``(low, high)`` widened by 5 % (by 1 where they are equal) so no point sits on the frame."""
    if high <= low:
        return low - 1.0, high + 1.0
    pad = 0.05 * (high - low)
    return low - pad, high + pad


def _ticks(low: float, high: float, integer: bool = False, count: int = 5) -> List[float]:
    """About ``count`` round tick values inside ``[low, high]`` (steps of 1, 2 or 5 times a power of ten)."""
    raw = (high - low) / count
    step = 10 ** math.floor(math.log10(raw))
    step *= next(m for m in (1, 2, 5, 10) if step * m >= raw)
    if integer:
        step = max(1.0, round(step))
    first = math.ceil(low / step) * step
    return [first + i * step for i in range(int((high - first) / step) + 1)]


def _segments(xs: Sequence[float], ys: Sequence[Optional[float]]) -> List[List[Tuple[float, float]]]:
    """The runs of consecutive points of a line whose values exist (a missing value breaks the line)."""
    segments: List[List[Tuple[float, float]]] = [[]]
    for x, y in zip(xs, ys):
        if y is None:
            if segments[-1]:
                segments.append([])
        else:
            segments[-1].append((x, y))
    return [segment for segment in segments if segment]
