"""Batches of graphs: the datasets and graph files, as the training loop's task (see :mod:`.task`).

Example
-------
>>> from geaet_dgl.data.generated import synthetic_splits
>>> from geaet_dgl.config.run import make_run_config
>>> run = make_run_config("synthetic", overrides={"model.num_layers": 1})
>>> GraphTask(run, synthetic_splits(8, 4, 4), torch.device("cpu")).sizes()
{'train': 8, 'val': 4, 'test': 4}
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import torch
from torch import nn

from ..data import DatasetSplits, collate_for
from .batching import epoch_sampler, make_epoch_loader, move_batch
from .distributed import SINGLE_PROCESS, DistContext
from .evaluation import evaluate
from ..data.model_fit import check_data_fits
from .task import Step, Steps, Task


class LoaderSteps(Steps):
    """A DataLoader over an :class:`~.batching.EpochBatchSampler`, as :meth:`Task.train_batches` returns it."""

    def __init__(self, loader):
        self.loader = loader
        self.total = loader.batch_sampler.total
        self.batch_indices = loader.batch_sampler.batch_indices

    def __iter__(self):
        return iter(self.loader)


class GraphTask(Task):
    """Batches of graphs with graph (or node, or link) targets: the datasets and graph files.

    ``run.train.batch_size`` graphs per batch (per process); validation and
    test scored with :func:`~.evaluation.evaluate` (sharded over the ranks).
    """

    def __init__(self, run, splits: DatasetSplits, device: torch.device, dist: DistContext = SINGLE_PROCESS):
        check_data_fits(run.model, splits)
        self.run, self.splits, self.device, self.dist = run, splits, device, dist

    def train_batches(self, epoch: int, start_step: int) -> Steps:
        cfg = self.run.train
        sampler = epoch_sampler(len(self.splits.train), cfg.batch_size, shuffle=True, seed=cfg.seed, epoch=epoch,
                                start_step=start_step, rank=self.dist.rank, world_size=self.dist.world_size)
        loader = make_epoch_loader(self.splits.train, collate_for(self.splits.train), sampler,
                                   workers=self.run.workers, pin_memory=self.device.type == "cuda")
        return LoaderSteps(loader)

    def training_step(self, model: nn.Module, batch: Any, loss_fn: Any) -> Optional[Step]:
        graph, labels = move_batch(batch, self.device)
        output = model(graph)
        return Step(loss_fn(output, labels), output, labels, graph.batch_size)

    def score_splits(self, model: nn.Module, loss_fn: Any, epoch: int) -> Tuple[Dict[str, float], Dict[str, float]]:
        cfg = self.run.train
        val = evaluate(model, self.splits.val, loss_fn, cfg.metric, cfg.batch_size, self.device, self.run.workers,
                       dist=self.dist)
        test = evaluate(model, self.splits.test, loss_fn, cfg.metric, cfg.batch_size, self.device, self.run.workers,
                        dist=self.dist)
        return val, test

    def degree_graphs(self) -> List[Any]:
        return self.splits.train.graphs

    def sizes(self) -> Dict[str, int]:
        return self.splits.sizes()
