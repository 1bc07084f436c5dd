"""Evaluation: one pass over a split, and re-scoring a saved checkpoint.

Evaluation batches are the split in order, ``train.batch_size`` graphs each,
exactly as during training (the trainer scores every epoch with :func:`evaluate`),
so a checkpoint re-scored later reproduces the metric the run recorded (the
batch-wide GEANet softmax depends on the batch).
"""
from __future__ import annotations

import os
from typing import Any, Callable, Dict, Mapping, Optional, Sequence

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

from ..data import collate_for
from ..data.node_graph import MASKS, NodeGraph, node_frame
from ..threads import apply_threads
from ..training.batching import EpochBatchSampler, make_epoch_loader, move_batch
from ..training.losses import get_loss
from ..training.metrics import MetricAccumulator
from ..training.run_config import check_data_fits, load_splits
from .geaet import fold_for_inference
from .layerwise import full_graph_forward
from .trained_run import open_trained_run

SPLITS = ("train", "val", "test")


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
    loader = make_epoch_loader(dataset, collate_for(dataset), batch_size, shuffle=False, seed=0, epoch=0,
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


def evaluate_checkpoint(path: "os.PathLike | str", split: str = "test", data: Optional[Mapping[str, Any]] = None,
                        device: str = "cpu", workers: int = 0, progress: bool = True, fold: bool = True,
                        threads: Optional[int] = None, allow_changed_data: bool = False) -> Dict[str, Any]:
    """Rebuild the model and its data from a checkpoint alone and score one split.

    Parameters
    ----------
    path : path-like
        A ``best.pt`` / ``last.pt`` written by training.
    split : {'train', 'val', 'test'}
    data : mapping, optional
        :class:`DataOptions` fields replacing the checkpoint's (``data_dir``,
        ``limit_test``, ...); by default the data the run used.
    device : {'cpu', 'cuda'}
    fold : bool
        Score with the folded inference model (as training does), or the model itself.
    threads : int, optional
        CPU threads (see :mod:`geaet_dgl.threads`); ``None``: the cores this
        process may use.
    allow_changed_data : bool
        Score data that changed since the run was trained (with the run's own
        split of a graph file) instead of refusing it.

    Returns
    -------
    dict
        ``{"split", "metric_name", "metric", "loss", "threads"}`` (and the
        metrics logged beside the main one, e.g. ``"hits@1"`` for link prediction).
    """
    if split not in SPLITS:
        raise ValueError(f"split={split!r} is not one of {', '.join(SPLITS)}")
    threads = apply_threads(threads)
    run, model, _ = open_trained_run(path, data, device=device, workers=workers, threads=threads)
    torch_device = torch.device(run.device)
    splits = load_splits(run.data, run.model, progress=progress, allow_changed_data=allow_changed_data)
    check_data_fits(run.model, splits)
    if isinstance(splits, NodeGraph):  # one graph with node masks: scored on the whole graph
        result = evaluate_node_splits(model.to(torch_device), splits, get_loss(run.train.loss), run.train.metric,
                                      torch_device, splits=(split,))[split]
        return {"split": split, "metric_name": run.train.metric, **result, "threads": threads}
    result = evaluate(model.to(torch_device), getattr(splits, split), get_loss(run.train.loss), run.train.metric,
                      run.train.batch_size, torch_device, run.workers, fold=fold)
    return {"split": split, "metric_name": run.train.metric, **result, "threads": threads}
