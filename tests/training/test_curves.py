"""curves.png: the loss and metric panels with one line per split, gaps where a value is missing or not finite,
written atomically."""
import math

from PIL import Image

from geaet_dgl.training.curves import COLOURS, WIDTH, HEIGHT, _segments, _ticks, plot_curves


def _history(epochs=30):
    return [{"epoch": e, "train_loss": 2.0 / e, "val_loss": 2.2 / e, "test_loss": 2.3 / e,
             "train_metric": 1 - 1 / (e + 1), "val_metric": 0.8 - 0.5 / (e + 1), "test_metric": 0.7}
            for e in range(1, epochs + 1)]


def _colour_columns(image, colour, x_from, x_to):
    pixels = image.load()
    return {x for x in range(x_from, x_to) for y in range(HEIGHT) if pixels[x, y] == colour}


def test_each_panel_draws_every_split(tmp_path):
    path = tmp_path / "curves.png"
    plot_curves(_history(), "accuracy", path)
    image = Image.open(path).convert("RGB")
    assert image.size == (WIDTH, HEIGHT)
    for colour in COLOURS.values():
        left = _colour_columns(image, colour, 0, WIDTH // 2)
        right = _colour_columns(image, colour, WIDTH // 2, WIDTH)
        assert len(left) > 100 and len(right) > 100  # a line across each panel, not only the legend's swatch
    assert [p.name for p in tmp_path.iterdir()] == ["curves.png"]  # no temporary file left


def test_missing_and_non_finite_values_leave_gaps_and_one_epoch_draws(tmp_path):
    rows = _history(10)
    rows[4]["val_loss"] = float("nan")
    rows[5]["val_loss"] = None
    plot_curves(rows, "roc_auc", tmp_path / "a.png")
    plot_curves(_history(1), "accuracy", tmp_path / "b.png")  # a single point per line
    assert Image.open(tmp_path / "b.png").size == (WIDTH, HEIGHT)
    ys = [r["val_loss"] if r["val_loss"] is None or not math.isnan(r["val_loss"]) else None for r in rows]
    assert [len(s) for s in _segments([r["epoch"] for r in rows], ys)] == [4, 4]


def test_ticks_are_round_and_inside_the_range():
    ticks = _ticks(0.0, 1.0)
    assert len(ticks) == 6 and all(abs(t - r) < 1e-9 for t, r in zip(ticks, [0, 0.2, 0.4, 0.6, 0.8, 1.0]))
    ticks = _ticks(3.0, 187.0, integer=True)
    assert all(3.0 <= t <= 187.0 and t == int(t) for t in ticks) and 3 <= len(ticks) <= 10
