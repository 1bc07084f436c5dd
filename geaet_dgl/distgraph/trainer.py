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

Training
--------
:class:`DistNodeTask` is the training loop's task (:mod:`geaet_dgl.training.task`):
the loop (:class:`~geaet_dgl.training.trainer.Trainer`) owns the optimiser,
schedule, resume, history, best epoch, checkpoints and summary, as for every
other run. Validation and test are scored every epoch on the same node
batches (batch context); once training ends the launcher scores ``best.pt`` on
the whole graph (:mod:`.launch`).

The one-process counterpart is the single-graph trainer with ``--sampler
random`` (:mod:`geaet_dgl.training.node_task`); a distributed run is compared
with it.
"""
from __future__ import annotations

import math
import os
from typing import Any, Dict, List, Optional, Tuple

import dgl
import torch
from torch import nn

from ..training import run_dir as files
from ..training.batching import epoch_seed
from ..training.checkpoint import load_checkpoint
from ..training.distributed import SINGLE_PROCESS, DistContext
from ..training.metrics import MetricAccumulator
from ..training.run_config import RunConfig
from ..training.task import Step, Steps, Task
from ..training.trainer import Trainer

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
        # the servers' answers arrive in any order: edges in id order, so that a run repeats itself bit for bit
        order = torch.argsort(eids)
        src, dst, eids = src[order], dst[order], eids[order]
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


class NodeBatches(Steps):
    """One trainer's node batches of an epoch from a step on (see :func:`epoch_batches`)."""

    def __init__(self, source: "DistSource", batches: List[torch.Tensor], start_step: int):
        self.source, self.batches, self.start_step = source, batches, start_step
        self.total = len(batches)

    def __iter__(self):
        for nodes in self.batches[self.start_step:]:
            yield self.source.batch(nodes)

    def batch_indices(self, step: int) -> List[int]:
        return self.batches[step].tolist()


class DistNodeTask(Task):
    """Node batches of one graph served by DGL's graph servers, as the training loop's task.

    ``run.train.batch_size`` is the nodes of one trainer's batch; every
    trainer takes the same number of steps per epoch (see the module
    docstring), and the loss of a step is scaled so that DDP's average is the
    mean over the training nodes of all trainers' batches.
    """

    #: one torch seed for every trainer, as partitioned runs were seeded before the one loop
    reseed_ranks = False

    def __init__(self, run: RunConfig, source: "DistSource", device: torch.device,
                 context: DistContext = SINGLE_PROCESS):
        self.run, self.source, self.device, self.context = run, source, device, context
        self.nodes = source.node_ids()
        per_rank = context.max_floats([float(len(self.nodes))], device)[0]
        self.num_batches = max(1, math.ceil(per_rank / run.train.batch_size))

    def _epoch_batches(self, epoch: int) -> List[torch.Tensor]:
        return epoch_batches(self.nodes, self.num_batches, self.run.train.seed, epoch, self.context.rank)

    def train_batches(self, epoch: int, start_step: int) -> Steps:
        return NodeBatches(self.source, self._epoch_batches(epoch), start_step)

    def training_step(self, model: nn.Module, batch: dgl.DGLGraph, loss_fn: Any) -> Optional[Step]:
        """The scaled loss of the batch's training nodes; a zero loss when it has none (the DDP step goes on)."""
        mask = batch.ndata["train_mask"]
        total = self.context.sum_floats([float(mask.sum())], self.device)[0]
        output = model(batch)
        target = batch.ndata["label"]
        if not mask.any():
            return Step(output.sum() * 0.0, None, None, 0)
        mean = loss_fn(output[mask], target[mask])
        loss = mean * (float(mask.sum()) * self.context.world_size / total)
        return Step(loss, output[mask], target[mask], int(mask.sum()), logged_loss=float(mean))

    @torch.no_grad()
    def score_splits(self, model: nn.Module, loss_fn: Any, epoch: int) -> Tuple[Dict[str, float], Dict[str, float]]:
        """Val and test metrics over every trainer's batches of ``epoch`` (batch context, not the whole graph)."""
        model.eval()
        accumulators = {split: MetricAccumulator(self.run.train.metric) for split in EVAL_SPLITS}
        for batch_nodes in self._epoch_batches(epoch):
            graph = self.source.batch(batch_nodes)
            output = model(graph)
            for split, accumulator in accumulators.items():
                mask = graph.ndata[f"{split}_mask"]
                if mask.any():
                    target = graph.ndata["label"][mask]
                    accumulator.update(output[mask], target, float(loss_fn(output[mask], target)), num_graphs=0)
        scores = {split: self.context.merge_accumulators(acc).compute() for split, acc in accumulators.items()}
        return scores["val"], scores["test"]

    def sizes(self) -> Dict[str, int]:
        return {"nodes": int(self.source.graph.num_nodes())}


def train_on_source(run: RunConfig, run_dir: str, source: "DistSource", context: DistContext = SINGLE_PROCESS,
                    resume: bool = False) -> Optional[Dict[str, Any]]:
    """Train ``run`` on node batches of ``source`` with the training loop; rank 0 writes the run files and
    returns the summary.

    ``run.train.batch_size`` is the nodes of one trainer's batch. A resumed run
    (``resume=True``) continues from ``last.pt`` (trainer 0's, sent to every trainer).
    """
    device = torch.device("cpu")
    trainer = Trainer(run, run_dir, DistNodeTask(run, source, device, context), progress=False, dist=context)
    if resume:  # trainer 0's last.pt, sent to every trainer (the other machines need no copy)
        trainer.restore(context.broadcast_object(load_checkpoint(os.path.join(run_dir, files.LAST))
                                                 if context.is_main else None))
    elif context.is_main:
        files.write_config(run_dir, run.to_dict())
    summary = trainer.fit()
    context.barrier()
    return summary if context.is_main else None
