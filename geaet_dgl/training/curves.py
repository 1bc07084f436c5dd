"""Learning curves of a run as a PNG (matplotlib, Agg backend: no display needed)."""
from __future__ import annotations

import os
from typing import Dict, List, Union

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ..atomic import atomic_write  # noqa: E402


def plot_curves(history: List[Dict[str, float]], metric_name: str, path: Union[str, os.PathLike]) -> None:
    """Loss (left) and ``metric_name`` (right) per epoch for train / val / test.

    ``history`` rows carry ``epoch`` and ``{split}_loss`` / ``{split}_metric``
    for the splits train, val and test (as ``metrics.jsonl`` does).
    """
    epochs = [row["epoch"] for row in history]
    fig, (ax_loss, ax_metric) = plt.subplots(1, 2, figsize=(10, 4))
    for split in ("train", "val", "test"):
        ax_loss.plot(epochs, [row[f"{split}_loss"] for row in history], marker=".", label=split)
        ax_metric.plot(epochs, [row[f"{split}_metric"] for row in history], marker=".", label=split)
    ax_loss.set(xlabel="epoch", ylabel="loss", title="loss")
    ax_metric.set(xlabel="epoch", ylabel=metric_name, title=metric_name)
    for ax in (ax_loss, ax_metric):
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    with atomic_write(path) as handle:
        fig.savefig(handle, format="png", dpi=100)
    plt.close(fig)
