"""Evaluation inside training: one pass over a split of graphs, or the node splits of one graph.

Evaluation batches are the split in order, ``train.batch_size`` graphs each,
exactly as during training (every epoch's scores come from :func:`evaluate`),
so a checkpoint re-scored later (:mod:`geaet_dgl.scoring`) reproduces the metric
the run recorded (the batch-wide GEANet softmax depends on the batch).
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Sequence

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

from ..data import collate_for
from ..data.nodes.node_graph import MASKS, NodeGraph, node_frame
from ..inference.geaet import fold_for_inference
from ..inference.layerwise import full_graph_forward
from .batching import EpochBatchSampler, epoch_sampler, make_epoch_loader, move_batch
from .metrics import MetricAccumulator


@torch.no_grad()
def evaluate(model: nn.Module, dataset: Dataset, loss_fn: Callable, metric: str, batch_size: int,
             device: torch.device, workers: int = 0, dist: Optional[Any] = None, fold: bool = True
             ) -> Dict[str, float]:
    """Score ``model`` (in eval mode) on ``dataset``: -> {"loss": mean loss, "metric": value}.

    With ``dist`` (a :class:`~geaet_dgl.training.distributed.DistContext` of several ranks) rank
    ``r`` scores batches ``r, r + N, ...`` of the same batches, and every rank
    returns the value one process would compute (see ``training/distributed.py``).
    With ``fold`` (the default) the batches go through
    :func:`~geaet_dgl.inference.fold_for_inference` of the model's current weights (rebuilt on
    every call, so never stale): the same outputs up to float rounding, faster.
    """
    model.eval()
    if fold:
        model = fold_for_inference(model)
    if dist is not None and dist.enabled:
        return _evaluate_sharded(model, dataset, loss_fn, metric, batch_size, device, workers, dist)
    accumulator = MetricAccumulator(metric)
    loader = make_epoch_loader(dataset, collate_for(dataset),
                               epoch_sampler(len(dataset), batch_size, shuffle=False, seed=0, epoch=0),
                               workers=workers, pin_memory=device.type == "cuda")
    for batch in loader:
        graph, labels = move_batch(batch, device)
        output = model(graph)
        accumulator.update(output, labels, loss_fn(output, labels).item(), graph.batch_size)
    return accumulator.compute()


def _evaluate_sharded(model, dataset, loss_fn, metric, batch_size, device, workers, dist) -> Dict[str, float]:
    """This rank's batches, then the per-batch sufficient statistics of all ranks merged in batch order."""
    sampler = EpochBatchSampler(len(dataset), batch_size, shuffle=False, seed=0, epoch=0)
    steps = list(range(dist.rank, sampler.total, dist.world_size))
    loader = DataLoader(dataset, batch_sampler=[sampler.batch_indices(step) for step in steps],
                        collate_fn=collate_for(dataset), num_workers=workers, pin_memory=device.type == "cuda")
    pieces = []
    for step, batch in zip(steps, loader):
        graph, labels = move_batch(batch, device)
        output = model(graph)
        piece = MetricAccumulator(metric)
        piece.update(output, labels, loss_fn(output, labels).item(), graph.batch_size)
        pieces.append((step, piece.state_dict()))
    accumulator = MetricAccumulator(metric)
    for _, state in sorted((p for rank_pieces in dist.all_gather_object(pieces) for p in rank_pieces),
                           key=lambda item: item[0]):
        accumulator.merge_state_dict(state)
    return accumulator.compute()


@torch.no_grad()
def evaluate_node_splits(model: nn.Module, data: NodeGraph, loss_fn, metric: str, device: torch.device,
                         splits: Sequence[str] = ("val", "test"), chunk_nodes: Optional[int] = None
                         ) -> Dict[str, Dict[str, float]]:
    """Score ``model`` on the whole graph once; -> ``{split: {"loss", "metric", ...}}`` over each split's mask.

    ``chunk_nodes`` forces layer-wise inference (see
    :func:`~.layerwise.full_graph_forward`); by default one pass when it fits
    in memory.
    """
    model.eval()
    graph = data.graph.to(device)
    output = full_graph_forward(model, graph, chunk_nodes=chunk_nodes)
    frame = node_frame(graph, data.target_ntype)  # a heterograph's rows are its target type's nodes
    results = {}
    for split in splits:
        mask = frame[MASKS[split]]
        rows, labels = output[mask], frame["label"][mask]
        accumulator = MetricAccumulator(metric)
        accumulator.update(rows, labels, loss_fn(rows, labels).item(), 1)
        results[split] = accumulator.compute()
    return results
