"""Training GEAET on node batches of one graph, local or served by DGL's graph servers.

Batches
-------
Every epoch each trainer shuffles *its* nodes (``dgl.distributed.node_split``
of all nodes: an even share, mostly from its own partition) with a
(seed, epoch, rank) generator and cuts them into ``B`` near-equal batches
(``B`` agreed by all trainers, so DistributedDataParallel steps together).
A batch is the subgraph its nodes induce in the *whole* graph: DGL's
distributed ``in_subgraph`` asks every server for the in-edges of the
batch's nodes (edges from other partitions included), the edges whose source
is outside the batch are dropped, and features, labels, masks and the
whole-graph encodings are pulled from the ``DistTensor`` s. So each batch is
an ordinary graph and the MPNN, the attention and GEANet run on it
unchanged; the random node batching of SGFormer and Polynormer.

Loss and statistics
-------------------
The loss counts the training nodes of a batch. Every trainer scales its sum
by ``world_size / (training nodes in all trainers' batches of this step)``,
so DDP's gradient average is the gradient of the mean over the combined
batch; BatchNorm is DistributedBatchNorm (moments of the combined batch) as
for ``--nproc`` on graph files, and the metrics of every epoch merge all
trainers' predictions (:meth:`~geaet_dgl.training.distributed.DistContext.merge_accumulators`).

The one-process counterpart is the single-graph trainer with ``--sampler
random`` (:mod:`geaet_dgl.training.node_task`); a distributed run is compared
with it.
"""
from __future__ import annotations

import logging
import math
import os
import time
from typing import Any, Dict, List, Optional

import dgl
import torch

from ..models import build_model
from ..training import run_dir as files
from ..training.batching import epoch_seed
from ..training.checkpoint import load_checkpoint, save_checkpoint
from ..training.distributed import (SINGLE_PROCESS, DistContext, check_resume_world_size, convert_sync_batchnorm,
                                    wrap_model)
from ..training.losses import get_loss
from ..training.metrics import MetricAccumulator, is_improvement
from ..training.run_config import RunConfig
from ..training.schedule import build_optimizer, build_scheduler, clip_gradients

log = logging.getLogger(__name__)

NODE_KEYS = ("feat", "label", "train_mask", "val_mask", "test_mask", "lap_pe", "lap_eigval", "rwse")
EVAL_SPLITS = ("val", "test")


class DistSource:
    """A ``dgl.distributed.DistGraph`` as the batch source of one trainer (see the module docstring)."""

    def __init__(self, graph: Any):
        self.graph = graph
        self.node_keys = [k for k in NODE_KEYS if k in graph.ndata]
        self.edge_keys = ["feat"] if "feat" in graph.edata else []

    def node_ids(self) -> torch.Tensor:
        import dgl.distributed as dd

        everyone = torch.ones(self.graph.num_nodes(), dtype=torch.bool)
        return dd.node_split(everyone, self.graph.get_partition_book(), force_even=True)

    def batch(self, nodes: torch.Tensor) -> dgl.DGLGraph:
        import dgl.distributed as dd

        nodes = torch.sort(nodes).values
        # every in-edge (fanout -1); dd.in_subgraph would do, but in DGL 2.1.0 its server side unpacks the
        # 4-field LocalSampledGraph into 3 names (graph_services.py, InSubgraphRequest) and the server dies
        frontier = dd.sample_neighbors(self.graph, nodes, -1)
        src, dst = frontier.edges()
        eids = frontier.edata[dgl.EID]
        local = torch.full((self.graph.num_nodes(),), -1, dtype=torch.int64)
        local[nodes] = torch.arange(len(nodes))
        keep = local[src] >= 0
        batch = dgl.graph((local[src[keep]], local[dst[keep]]), num_nodes=len(nodes))
        for key in self.node_keys:
            batch.ndata[key] = self.graph.ndata[key][nodes]
        for key in ("train_mask", "val_mask", "test_mask"):  # DGL stores bool features as uint8
            batch.ndata[key] = batch.ndata[key].bool()
        for key in self.edge_keys:
            batch.edata[key] = self.graph.edata[key][eids[keep]]
        return batch


def epoch_batches(nodes: torch.Tensor, num_batches: int, seed: int, epoch: int, rank: int) -> List[torch.Tensor]:
    """``nodes`` shuffled by (seed, epoch, rank), cut into ``num_batches`` near-equal batches."""
    generator = torch.Generator().manual_seed(epoch_seed(seed, epoch, stream=11 + rank))
    order = nodes[torch.randperm(len(nodes), generator=generator)]
    return [part for part in torch.tensor_split(order, num_batches) if len(part)]


def train_on_source(run: RunConfig, run_dir: str, source: "DistSource", context: DistContext = SINGLE_PROCESS,
                    resume: bool = False) -> Optional[Dict[str, Any]]:
    """Train ``run`` on node batches of ``source``; rank 0 writes the run files and returns the summary.

    ``run.train.batch_size`` is the nodes of one trainer's batch. A resumed run
    (``resume=True``) continues after the last finished epoch of ``last.pt``.
    """
    torch.manual_seed(run.train.seed)
    model = build_model(run.model)
    device = torch.device("cpu")
    if context.enabled and run.sync_bn:
        model = convert_sync_batchnorm(model, device)
    optimizer = build_optimizer(model.parameters(), run.train.lr, run.train.weight_decay, run.train.clip_grad_norm)
    scheduler = build_scheduler(optimizer, run.train.warmup_epochs, run.train.epochs)
    start, best, history = 0, None, []
    if resume:  # trainer 0's last.pt, sent to every trainer (the other machines need no copy)
        state = context.broadcast_object(load_checkpoint(os.path.join(run_dir, files.LAST)) if context.is_main
                                         else None)
        check_resume_world_size(state, context)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        start, best, history = state["epoch"], state["best"], list(state["history"])
    net = wrap_model(model, context, device)
    loss_fn = get_loss(run.train.loss)
    nodes = source.node_ids()
    per_rank = context.max_floats([float(len(nodes))], device)[0]
    num_batches = max(1, math.ceil(per_rank / run.train.batch_size))
    if context.is_main:
        files.write_config(run_dir, run.to_dict())
    for epoch in range(start, run.train.epochs):
        began = time.perf_counter()
        net.train()
        train_acc = MetricAccumulator(run.train.metric)
        for batch_nodes in epoch_batches(nodes, num_batches, run.train.seed, epoch, context.rank):
            graph = source.batch(batch_nodes)
            mask = graph.ndata["train_mask"]
            total = context.sum_floats([float(mask.sum())], device)[0]
            output = net(graph)
            target = graph.ndata["label"]
            if mask.any():
                mean = loss_fn(output[mask], target[mask])
                loss = mean * (float(mask.sum()) * context.world_size / total)
                train_acc.update(output[mask], target[mask], float(mean), num_graphs=0)
            else:  # no training node here this step: a zero loss keeps the DDP step in time
                loss = output.sum() * 0.0
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            clip_gradients(model.parameters(), run.train.clip_grad_norm)
            optimizer.step()
        scheduler.step()
        train_seconds = context.max_floats([time.perf_counter() - began], device)[0]
        scores = _evaluate(net, source, nodes, num_batches, run, epoch, context, loss_fn)
        train = context.merge_accumulators(train_acc).compute()
        row = {"epoch": epoch + 1, "train_loss": train["loss"], "train_metric": train["metric"],
               **{f"{split}_{key}": value for split, result in scores.items() for key, value in result.items()},
               "lr": optimizer.param_groups[0]["lr"], "train_seconds": train_seconds,
               "seconds": time.perf_counter() - began}
        seconds = context.max_floats([row["seconds"]], device)[0]
        row["seconds"] = seconds
        history.append(row)
        improved = is_improvement(run.train.metric, row["val_metric"], None if best is None else best["val_metric"])
        if improved:
            best = {"epoch": epoch + 1, "val_metric": row["val_metric"], "test_metric": row["test_metric"]}
        if context.is_main:
            log.info("epoch %d/%d: train loss %.4f | val %s %.4f | test %.4f (batches) | %.1f s", epoch + 1,
                     run.train.epochs, row["train_loss"], run.train.metric, row["val_metric"], row["test_metric"],
                     seconds)
            files.write_metrics(run_dir, history)
            kwargs = dict(run_config=run.to_dict(), model=model, optimizer=optimizer, scheduler=scheduler,
                          epoch=epoch + 1, step=0, global_step=(epoch + 1) * num_batches, best=best,
                          history=history, progress=None, ranks={"world_size": context.world_size})
            save_checkpoint(os.path.join(run_dir, files.LAST), **kwargs)
            if improved:
                save_checkpoint(os.path.join(run_dir, files.BEST), **kwargs)
        context.barrier()
    if not context.is_main:
        return None
    summary = {"epochs": run.train.epochs, "best_epoch": best["epoch"], "val_metric": best["val_metric"],
               "test_metric": best["test_metric"], "metric_name": run.train.metric,
               "params": sum(p.numel() for p in model.parameters()), "world_size": context.world_size,
               "seconds_per_epoch": sum(r["seconds"] for r in history) / max(len(history), 1),
               "train_seconds_per_epoch": sum(r["train_seconds"] for r in history) / max(len(history), 1),
               "train_losses": [r["train_loss"] for r in history]}
    files.write_json(os.path.join(run_dir, files.SUMMARY), summary)
    return summary


@torch.no_grad()
def _evaluate(net: torch.nn.Module, source: Any, nodes: torch.Tensor, num_batches: int, run: RunConfig, epoch: int,
              context: DistContext, loss_fn: Any) -> Dict[str, Dict[str, float]]:
    """Val and test metrics over every trainer's batches (batch context, not the whole graph)."""
    net.eval()
    accumulators = {split: MetricAccumulator(run.train.metric) for split in EVAL_SPLITS}
    for batch_nodes in epoch_batches(nodes, num_batches, run.train.seed, epoch, context.rank):
        graph = source.batch(batch_nodes)
        output = net(graph)
        for split, accumulator in accumulators.items():
            mask = graph.ndata[f"{split}_mask"]
            if mask.any():
                target = graph.ndata["label"][mask]
                accumulator.update(output[mask], target, float(loss_fn(output[mask], target)), num_graphs=0)
    return {split: context.merge_accumulators(acc).compute() for split, acc in accumulators.items()}
