"""Training and scoring a transductive node task: one graph with train / val / test node masks.

:class:`NodeTask` is the training loop's task (:mod:`.task`) on a
:class:`~geaet_dgl.data.nodes.node_graph.NodeGraph`: the same loop,
checkpoints, exact resume and signals as every task, with

* training batches from :mod:`~.node_batches` (``--sampler full|cluster|random``),
  each a graph on which the model runs unchanged; the loss and the training
  metric read only the batch's nodes in ``train_mask`` (a batch without any
  is skipped, its step still counted);
* validation and test scored on the whole graph
  (:func:`~.evaluation.evaluate_node_splits`,
  :func:`~geaet_dgl.inference.layerwise.full_graph_forward`): every node
  sees its whole graph, whatever the batches were, and one pass scores both.

Normalisation across nodes in cut batches
-----------------------------------------
BatchNorm trains on each batch's nodes and scores with its running
statistics, as for graph batches. GEANet's softmax over the nodes of a graph
(``scope`` graph or batch: one graph either way) runs over the batch's nodes
in training and over all nodes at inference. Its double normalisation reads
the column sums :math:`c_s = \\sum_j \\exp s_{js}` only through their ratios
(:math:`a_{is} = \\mathrm{softmax}_t(s_{it} - \\log c_t)`), and a random node
subset of fraction f has :math:`c_s \\approx f\\,c_s^{full}` for every slot:
``random`` batches estimate the full graph's normalisation without bias;
``cluster`` batches (several METIS parts drawn at random) approximately.
So the model keeps the paper's per-graph normalisation; the measured
accuracies of ``cluster`` and ``random`` against ``full``
(docs/your-own-graphs.md) are the check.
"""
from __future__ import annotations

import logging
from typing import Any, Dict, List, Optional, Tuple

import torch
from torch import nn

from ..config import ConfigError, ModelConfig
from ..data.nodes.node_graph import MASKS, NodeGraph, node_frame
from ..inference.layerwise import available_bytes, inference_bytes
from ..nn import sparse_input
from ..nn.self_attention import MAX_DENSE_NODES
from .evaluation import evaluate_node_splits
from .node_batches import make_node_sampler, masked_rows
from .task import Step, Steps, Task

log = logging.getLogger(__name__)

GIB = 2.0 ** 30


def training_bytes(model: ModelConfig, num_nodes: int, num_edges: int) -> int:
    """Rough peak bytes of one training step (forward activations of every layer kept, backward) on a batch."""
    return 2 * model.num_layers * inference_bytes(model, num_nodes, num_edges)


def check_batches_fit(model: ModelConfig, sampler, batch_size: int, device: torch.device,
                      budget: Optional[int] = None) -> None:
    """Refuse a run whose batches the dense Transformer cannot take, or whose full-graph step would not fit.

    ``budget`` defaults to :func:`~geaet_dgl.inference.layerwise.available_bytes`.
    """
    largest = sampler.max_batch_nodes(batch_size)
    if model.attention == "transformer" and largest > MAX_DENSE_NODES:
        raise ConfigError(
            f"model.attention=transformer attends densely within a batch, at most {MAX_DENSE_NODES:,} nodes, but "
            f"{sampler.kind} batches of this graph hold up to {largest:,}; use smaller batches (--sampler cluster "
            "or random with more --set data.num_parts or a smaller --batch-size) or --set model.attention=none")
    if sampler.kind != "full":
        return
    graph = sampler.graph
    need = training_bytes(model, graph.num_nodes(), graph.num_edges())
    have = budget if budget is not None else available_bytes(device)
    if need > have:
        raise ConfigError(
            f"a full-graph training step on {graph.num_nodes():,} nodes and {graph.num_edges():,} edges needs about "
            f"{need / GIB:.1f} GiB, but {have / GIB:.1f} GiB are free; train on sampled batches: --sampler cluster "
            "--set data.num_parts=K (METIS parts, --batch-size of them per step) or --sampler random")


class NodeTask(Task):
    """One graph with node masks as the training loop's task (see :mod:`.task`).

    The loop asks it for the epoch's batches (:meth:`train_batches`), the
    loss, outputs and targets of a batch's training nodes (:meth:`training_step`)
    and the validation and test results (:meth:`score_splits`).
    ``run.data.sampler`` / ``run.data.num_parts`` choose the batches,
    ``run.train.batch_size`` the parts per step. One process only.
    """

    def __init__(self, run, data: NodeGraph, device: torch.device, dist=None):
        if dist is not None and dist.enabled:
            raise ConfigError("training on one graph with node masks runs in one process; drop --nproc")
        self.run, self.data, self.device = run, data, device
        self.sampler = make_node_sampler(data, run.data.sampler, run.data.num_parts,
                                         batch_size=run.train.batch_size)
        check_batches_fit(run.model, self.sampler, run.train.batch_size, device)
        log.info("one graph, %d nodes, %d edges; %s batches: %d steps per epoch", data.graph.num_nodes(),
                 data.graph.num_edges(), self.sampler.kind, self.sampler.steps_per_epoch(run.train.batch_size))
        feat = data.graph.ndata.get("feat") if data.graph.is_homogeneous else None
        if run.model.node_encoder == "linear" and feat is not None and sparse_input.reads_sparsely(feat):
            nonzero = int(torch.count_nonzero(feat))
            log.info("node features: %d of %d values non-zero (%.1f %%), read as a sparse matrix by the first maps",
                     nonzero, feat.numel(), 100 * nonzero / feat.numel())

    def train_batches(self, epoch: int, start_step: int) -> Steps:
        """The training batches of ``epoch`` from ``start_step`` on (see :class:`~.node_batches.EpochBatches`)."""
        cfg = self.run.train
        return self.sampler.epoch_batches(cfg.batch_size, cfg.seed, epoch, start_step, self.run.workers)

    def training_step(self, model: nn.Module, batch: Any, loss_fn: Any) -> Optional[Step]:
        """The loss, outputs and labels of the batch's training nodes; None when it has none (no step)."""
        graph = batch.to(self.device)
        ntype = self.data.target_ntype
        count = int(node_frame(graph, ntype)[MASKS["train"]].sum())
        if count == 0:
            return None
        output, labels = masked_rows(graph, model(graph), "train", ntype)
        return Step(loss_fn(output, labels), output, labels, count)

    def score_splits(self, model: nn.Module, loss_fn: Any, epoch: int) -> Tuple[Dict[str, float], Dict[str, float]]:
        """Validation and test results from one full-graph pass."""
        results = evaluate_node_splits(model, self.data, loss_fn, self.run.train.metric, self.device)
        return results["val"], results["test"]

    def degree_graphs(self) -> List[Any]:
        return [self.data.graph]

    def sizes(self) -> Dict[str, int]:
        return self.data.sizes()
