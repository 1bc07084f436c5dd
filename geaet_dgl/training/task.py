"""The task seam: what one kind of training data does inside the one training loop.

The loop (:class:`~.trainer.Trainer`) owns everything a run has in common: the
model's seeded construction, the optimiser (which clips the gradient norm), the
learning-rate schedule, exact resume, signals, history rows in
``metrics.jsonl``, the best epoch, early stopping, ``best.pt`` / ``last.pt`` and
``summary.json``. A task, like a LightningModule's steps, provides only

==========================  ===============================================================
:meth:`Task.train_batches`  the training batches of an epoch from a step on (:class:`Steps`)
:meth:`Task.training_step`  one batch -> a :class:`Step` (the loss to minimise and the rows
                            the training metric reads), or None: nothing to learn, no step
:meth:`Task.score_splits`   the validation and test results of the weights after an epoch
:meth:`Task.degree_graphs`  the training graphs PNA's degree statistics come from
:meth:`Task.build_model`    the network (default: the GEAET ``run.model`` describes)
:meth:`Task.sizes`          what the summary reports as the data's size
==========================  ===============================================================

Three tasks exist: :class:`~.graph_task.GraphTask` (batches of graphs),
:class:`~.node_task.NodeTask` (one graph with node masks, sampled batches) and
:class:`~geaet_dgl.distgraph.trainer.DistNodeTask` (node batches served by DGL's graph
servers). :func:`~.trainer.make_task` picks the first two from the data. A new task
implements these methods and hands an instance to ``Trainer(run, run_dir, task, ...)``.
"""
from __future__ import annotations

from typing import Any, Dict, Iterator, List, NamedTuple, Optional, Tuple

import torch
from torch import nn

from ..config import ModelConfig
from ..models import build_model


class Step(NamedTuple):
    """One training batch's result, as :meth:`Task.training_step` returns it.

    ``loss`` (0-dim) is what the optimiser minimises; ``output`` / ``target``
    the rows the training metric reads (None: this rank has none this step,
    yet it steps with the others); ``count`` those rows (graphs, or training
    nodes), for the speed; ``logged_loss`` the mean loss the metric records
    (default ``loss``).
    """

    loss: torch.Tensor
    output: Optional[torch.Tensor]
    target: Optional[torch.Tensor]
    count: int
    logged_loss: Optional[float] = None


class Steps:
    """An epoch's remaining training batches: iterate for them; ``total`` is the epoch's step
    count, ``batch_indices(step)`` what step ``step`` is made of (for messages)."""

    total: int

    def __iter__(self) -> Iterator[Any]:
        raise NotImplementedError

    def batch_indices(self, step: int) -> List[int]:
        raise NotImplementedError


class Task:
    """What one kind of training data does inside the loop (see the module docstring)."""

    #: In a multi-process run every rank reseeds torch after the shared initialisation (own dropout
    #: masks). False keeps one seed for every rank (the partitioned runs' original seeding).
    reseed_ranks = True

    def build_model(self, config: ModelConfig) -> nn.Module:
        """The network the loop trains, built right after the loop seeded every generator (it needs a
        ``num_parameters`` property); default the GEAET (or HeteroGEAET) ``config`` describes."""
        return build_model(config)

    def train_batches(self, epoch: int, start_step: int) -> Steps:
        """The training batches of 0-based ``epoch`` from ``start_step`` on, in a (seed, epoch)-fixed order."""
        raise NotImplementedError

    def training_step(self, model: nn.Module, batch: Any, loss_fn: Any) -> Optional[Step]:
        """Forward one batch (``model`` in train mode) -> its :class:`Step`; None: nothing to learn from."""
        raise NotImplementedError

    def score_splits(self, model: nn.Module, loss_fn: Any, epoch: int) -> Tuple[Dict[str, float], Dict[str, float]]:
        """The validation and test results (``{"loss", "metric", ...}``) of ``model``'s weights after 0-based
        ``epoch`` (whose training batches a task may score on)."""
        raise NotImplementedError

    def degree_graphs(self) -> List[Any]:
        """Training graphs for PNA's degree statistics ([] when the task has none at hand)."""
        return []

    def sizes(self) -> Dict[str, int]:
        """The data's size per split, as ``summary.json`` reports it (``num_graphs``)."""
        raise NotImplementedError
