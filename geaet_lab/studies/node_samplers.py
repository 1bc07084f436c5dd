"""The samplers compared on one graph with node masks: full, cluster and random, against logistic regression.

:func:`compare_samplers` trains the same run once per sampler (``full``,
``cluster``, ``random``; the other settings equal) and fits a multinomial
logistic regression on the node features alone (:func:`logistic_regression`, trained by the same loop),
so that one table shows whether sampling costs accuracy and whether the graph
helps. ``benchmarks/sampler_accuracy.py`` runs it on a planted-partition graph
and on a kNN graph of MNIST images (docs/your-own-graphs.md).

Example
-------
>>> from geaet_dgl.data.generated.node_graphs import planted_partition
>>> logistic_regression(planted_partition(300, 3, 0.05, 0.005, signal=3.0, seed=0))["test_metric"] > 0.9
True
"""
from __future__ import annotations

import contextlib
import logging
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import dgl
import torch
from torch import nn

from geaet_dgl.config import TrainConfig
from geaet_dgl.training.metrics import MetricAccumulator
from geaet_dgl.training.node_batches import SAMPLERS
from geaet_dgl.config import RunConfig
from geaet_dgl.training.task import Step, Steps, Task
from geaet_dgl.training.trainer import Trainer

PathLike = Union[str, os.PathLike]


class LinearProbe(nn.Module):
    """Multinomial logistic regression on node features: (N, F) -> (N, C) logits."""

    def __init__(self, in_feats: int, classes: int, seed: int):
        super().__init__()
        generator = torch.Generator().manual_seed(seed)
        self.weight = nn.Parameter(torch.randn(in_feats, classes, generator=generator) * 0.01)
        self.bias = nn.Parameter(torch.zeros(classes))

    @property
    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def forward(self, feat: torch.Tensor) -> torch.Tensor:
        return feat @ self.weight + self.bias


class FeatureTask(Task):
    """Logistic regression on one graph's standardised node features as a task of the training loop:
    ``steps_per_epoch`` full-batch steps per epoch on the ``train_mask`` nodes, scored on ``val_mask`` /
    ``test_mask`` after each epoch."""

    def __init__(self, graph: dgl.DGLGraph, seed: int = 0, steps_per_epoch: int = 1):
        self.steps_per_epoch = steps_per_epoch
        feat = graph.ndata["feat"].float()
        self.feat = (feat - feat.mean(0)) / feat.std(0).clamp(min=1e-6)
        self.label = graph.ndata["label"].long()
        self.masks = {name: graph.ndata[f"{name}_mask"].bool() for name in ("train", "val", "test")}
        self.classes = int(self.label[self.masks["train"] | self.masks["val"] | self.masks["test"]].max()) + 1
        self.seed = seed

    def build_model(self, config: Any) -> nn.Module:
        return LinearProbe(self.feat.shape[1], self.classes, self.seed)

    def train_batches(self, epoch: int, start_step: int) -> FullBatch:
        return FullBatch(self.steps_per_epoch, start_step)

    def training_step(self, model: nn.Module, batch: Any, loss_fn: Any) -> Step:
        train = self.masks["train"]
        output = model(self.feat[train])
        return Step(loss_fn(output, self.label[train]), output, self.label[train], int(train.sum()))

    @torch.no_grad()
    def score_splits(self, model: nn.Module, loss_fn: Any, epoch: int) -> Tuple[Dict[str, float], Dict[str, float]]:
        output = model(self.feat)
        scores = []
        for split in ("val", "test"):
            mask = self.masks[split]
            accumulator = MetricAccumulator("accuracy")
            accumulator.update(output[mask], self.label[mask], float(loss_fn(output[mask], self.label[mask])), 1)
            scores.append(accumulator.compute())
        return scores[0], scores[1]

    def sizes(self) -> Dict[str, int]:
        return {split: int(mask.sum()) for split, mask in self.masks.items()}


class FullBatch(Steps):
    """The ``total`` full-batch steps of an epoch from ``start_step`` on (each batch is the whole graph)."""

    def __init__(self, total: int, start_step: int):
        self.total, self.start_step = total, start_step

    def __iter__(self):
        return iter([None] * (self.total - self.start_step))

    def batch_indices(self, step: int) -> List[int]:
        return [0]


def logistic_regression(graph: dgl.DGLGraph, steps: int = 300, lr: float = 0.05, weight_decay: float = 1e-4,
                        seed: int = 0, run_dir: Optional[PathLike] = None, steps_per_epoch: int = 10
                        ) -> Dict[str, Any]:
    """A linear softmax classifier on ``ndata['feat']`` (standardised), trained by the training loop on the
    ``train_mask`` nodes (full batch, ``steps`` steps in epochs of ``steps_per_epoch``, AdamW and the cosine
    schedule); -> the run's summary, ``test_metric`` at the epoch of best validation accuracy. ``run_dir``:
    where the run's files go (default a temporary folder)."""
    run = RunConfig(preset="logistic-regression", train=TrainConfig(
        batch_size=1, lr=lr, weight_decay=weight_decay, epochs=max(1, steps // steps_per_epoch), warmup_epochs=0,
        clip_grad_norm=None, loss="cross_entropy", metric="accuracy", seed=seed))
    with tempfile.TemporaryDirectory() if run_dir is None else contextlib.nullcontext(run_dir) as folder:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        return Trainer(run, folder, FeatureTask(graph, seed, steps_per_epoch), progress=False).fit()


def compare_samplers(graph_file: PathLike, out: PathLike, overrides: Mapping[str, Any],
                     samplers: Sequence[str] = SAMPLERS, preset: str = None, threads: int = 1,
                     progress: bool = False) -> Dict[str, Dict[str, Any]]:
    """Train ``graph_file`` once per sampler into ``out/<sampler>``; -> ``{name: row}`` with the logistic
    regression as row ``'logistic regression'``.

    Each row: ``test_metric``, ``val_metric``, ``best_epoch``, ``params``, ``seconds`` (the whole run);
    every row a run directory ``out/<sampler>`` (the regression's ``out/logistic-regression``).
    """
    from geaet_dgl.training.new_run import make_run_config
    from geaet_dgl.training import train

    graphs, _ = dgl.load_graphs(os.fspath(graph_file))
    graph = graphs[0]
    for name in ("train_mask", "val_mask", "test_mask"):
        graph.ndata[name] = graph.ndata[name].bool()
    started = time.perf_counter()
    with quiet_training_log():  # its 300 one-step epochs would flood the log
        summary = logistic_regression(graph, run_dir=Path(out) / "logistic-regression")
    rows: Dict[str, Dict[str, Any]] = {"logistic regression": _row(summary, started)}
    for sampler in samplers:
        started = time.perf_counter()
        run = make_run_config(os.fspath(graph_file), preset=preset,
                              overrides={**overrides, "data.sampler": sampler}, threads=threads)
        summary = train(run, Path(out) / sampler, overwrite=True, progress=progress)
        rows[sampler] = _row(summary, started)
    return rows


def _row(summary: Mapping[str, Any], started: float) -> Dict[str, Any]:
    row = {key: summary[key] for key in ("test_metric", "val_metric", "best_epoch", "params")}
    row["seconds"] = time.perf_counter() - started
    return row


@contextlib.contextmanager
def quiet_training_log():
    """The library's INFO lines (a training run's one per epoch) held back, warnings still shown, while the block
    runs."""
    logger = logging.getLogger("geaet_dgl")
    previous = logger.level
    logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        logger.setLevel(previous)


def format_rows(rows: Mapping[str, Mapping[str, Any]]) -> str:
    """A markdown table of :func:`compare_samplers`' rows (accuracies in %)."""
    lines = ["| model | test accuracy (%) | val accuracy (%) | best epoch | seconds |", "|---|---|---|---|---|"]
    for name, row in rows.items():
        val = f"{100 * row['val_metric']:.2f}" if "val_metric" in row else ""
        seconds = f"{row['seconds']:.0f}" if "seconds" in row else ""
        lines.append(f"| {name} | {100 * row['test_metric']:.2f} | {val} | {row.get('best_epoch', '')} | {seconds} |")
    return "\n".join(lines)
