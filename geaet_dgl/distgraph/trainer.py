"""Training GEAET on node batches of one graph served by DGL's graph servers.

Batches: METIS parts of each trainer's share, ``--batch-size`` of them per step
-------------------------------------------------------------------------------
``train.batch_size`` counts the same thing as for ``--sampler cluster`` in one
process: METIS parts per step (per trainer, as ``--batch-size`` is per process
with ``--nproc``). Each trainer takes its share of the nodes
(``dgl.distributed.node_split`` of all nodes: an even share, taken from its own
partition first), asks the servers once for the edges the share induces
(``dgl.distributed.sample_neighbors`` with fanout -1, the edges whose source is
outside the share dropped) and cuts it with DGL's METIS
(``dgl.metis_partition_assignment``) into its part of the run's ``data.num_parts``
parts (0, the default: parts of about 1000 nodes, as one process cuts the whole
graph; ``ceil(num_parts / trainers)`` per trainer). Every epoch it shuffles its
parts with a (seed, epoch, rank) generator and groups them into batches of
``batch_size`` parts; every trainer takes the same number of steps (that of the
trainer with the most parts). A batch is the subgraph its nodes induce in the
*whole* graph (in-edges from every server, edges from other partitions
included), with features, labels, masks and encodings pulled from the
``DistTensor`` s: an ordinary graph on which the MPNN, the attention and GEANet
run unchanged, like a ClusterGCN batch in one process.

Loss and statistics
-------------------
The loss counts the training nodes of a batch. Every trainer scales its sum
by ``world_size / (training nodes in all trainers' batches of this step)``,
so DDP's gradient average is the gradient of the mean over the combined
batch; BatchNorm is DistributedBatchNorm (moments of the combined batch) as
for ``--nproc`` on graph files, and the metrics of every epoch merge all
trainers' predictions (:meth:`~geaet_dgl.training.distributed.DistContext.merge_accumulators`).

Scoring
-------
Validation and test are scored every epoch on every node of the graph, each
trainer its share, and the trainers' predictions are merged, so ``best.pt``
is the epoch with the best validation metric over the whole validation set.
``data.dist_scoring`` says how a trainer runs the model (eval mode) on its share:

* ``halo``: once, on the subgraph induced by the share and the share's
  in-neighbours (the halo), so every scored node keeps all its in-edges;
  GEANet's softmax over the nodes of a graph runs over that subgraph (see
  :mod:`geaet_dgl.training.node_task` for why a large node subset estimates
  it). Its memory follows share + halo: on a graph with ogbn-products'
  degrees the halo of half the nodes is nearly the other half, so the pass
  holds about the whole graph.
* ``parts``: on its METIS parts, ``train.batch_size`` of them per pass, each
  pass the subgraph its nodes induce in the whole graph (the training
  batches, in a fixed order): memory bounded by a batch, edges between
  batches unseen (ClusterGCN's inference).
* ``auto`` (the default): ``halo`` while the halo is at most
  :data:`HALO_SCORING_LIMIT` of the share's nodes or the one pass is small
  (:func:`~geaet_dgl.inference.layerwise.inference_bytes` of share + halo at
  most :data:`~geaet_dgl.inference.layerwise.ONE_PASS_BYTES`), else
  ``parts``; the trainer logs which. The choice depends on the graph, its
  partitions and the model only, never on the machine.

Training
--------
:class:`DistNodeTask` is the training loop's task (:mod:`geaet_dgl.training.task`):
the loop (:class:`~geaet_dgl.training.trainer.Trainer`) owns the optimiser,
schedule, exact resume (to the step: the batches of an epoch are a pure
function of (seed, epoch, rank) and the METIS parts, every trainer's RNG state
is in ``last.pt``), history, best epoch, checkpoints and summary, as for every
other run.

The one-process counterpart is the single-graph trainer with ``--sampler
cluster`` (:mod:`geaet_dgl.training.node_task`); a distributed run is compared
with it.
"""
from __future__ import annotations

import logging
import math
import os
from typing import Any, Dict, Iterator, List, Optional, Tuple

import dgl
import torch
from torch import nn

from ..atomic import atomic_write
from ..inference.layerwise import ONE_PASS_BYTES, inference_bytes
from ..training import run_dir as files
from ..training.batching import epoch_seed
from ..training.checkpoint import load_checkpoint
from ..training.distributed import SINGLE_PROCESS, DistContext
from ..training.metrics import MetricAccumulator
from ..config import RunConfig
from ..training.task import Step, Steps, Task
from ..training.node_batches import default_num_parts
from ..training.trainer import Trainer

log = logging.getLogger(__name__)

NODE_KEYS = ("feat", "label", "train_mask", "val_mask", "test_mask", "lap_pe", "lap_eigval", "rwse")
EVAL_SPLITS = ("val", "test")
#: Nodes of a trainer's share whose in-edges it reads at once at its start (the edges held at a time).
IN_EDGE_CHUNK = 65536
#: ``data.dist_scoring=auto`` scores a share with its halo while the halo has at most this many nodes per node of the
#: share, else on its METIS parts (see the module docstring).
HALO_SCORING_LIMIT = 0.5
#: In the run directory: every trainer's METIS parts (``trainer-K.pt``), what ``--resume`` trains on.
PARTS_DIR = "trainer-parts"


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

    def in_edges(self, nodes: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Every in-edge of ``nodes`` (sorted global IDs) from every server -> ``(src, dst, eid)``, global IDs."""
        import dgl.distributed as dd

        # every in-edge (fanout -1); dd.in_subgraph would do, but in DGL 2.1.0 its server side unpacks the
        # 4-field LocalSampledGraph into 3 names (graph_services.py, InSubgraphRequest) and the server dies
        frontier = dd.sample_neighbors(self.graph, nodes, -1)
        src, dst = frontier.edges()
        eids = frontier.edata[dgl.EID]
        # the servers' answers arrive in any order: sorted by (dst, src, edge ID), batches, METIS parts and sums are
        # the same in every run
        order = torch.argsort(eids)
        src, dst, eids = src[order], dst[order], eids[order]
        order = torch.sort(dst * self.graph.num_nodes() + src, stable=True).indices
        return src[order], dst[order], eids[order]

    def batch(self, nodes: torch.Tensor) -> dgl.DGLGraph:
        """The subgraph ``nodes`` induce in the whole graph, with their features, labels, masks and encodings."""
        nodes = torch.sort(nodes).values
        src, dst, eids, _ = self.edges_inside(nodes, nodes)
        batch = dgl.graph((src, dst), num_nodes=len(nodes))
        for key in self.node_keys:
            batch.ndata[key] = self.graph.ndata[key][nodes]
        for key in ("train_mask", "val_mask", "test_mask"):  # DGL stores bool features as uint8
            batch.ndata[key] = batch.ndata[key].bool()
        for key in self.edge_keys:
            batch.edata[key] = self.graph.edata[key][eids]
        return batch

    def edges_inside(self, nodes: torch.Tensor, ends: torch.Tensor
                     ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """The in-edges of ``ends`` (sorted, a run of ``nodes``) whose source is in ``nodes`` (sorted global IDs)
        -> (their sources and destinations as local IDs of ``nodes``, their edge IDs, the sources outside)."""
        src, dst, eids = self.in_edges(ends)
        local, keep = local_ids(nodes, src)
        return local[keep], local_ids(nodes, dst[keep])[0], eids[keep], src[~keep]

    def induced_structure(self, nodes: torch.Tensor, chunk: int = IN_EDGE_CHUNK
                          ) -> Tuple[dgl.DGLGraph, torch.Tensor, int]:
        """The subgraph ``nodes`` (sorted global IDs) induce, without features, read ``chunk`` nodes' in-edges at a
        time -> (graph on the local IDs ``0..len(nodes)-1``, the sorted in-neighbours outside ``nodes`` (the
        halo), the number of in-edges of ``nodes``). Edges in the order :meth:`in_edges` gives them."""
        src_parts, dst_parts, outside, count = [], [], [], 0
        for start in range(0, len(nodes), chunk):
            src, dst, _, elsewhere = self.edges_inside(nodes, nodes[start:start + chunk])
            src_parts.append(src)
            dst_parts.append(dst)
            outside.append(torch.unique(elsewhere))
            count += len(src) + len(elsewhere)
        halo = torch.unique(torch.cat(outside)) if outside else nodes[:0]
        structure = dgl.graph((torch.cat(src_parts), torch.cat(dst_parts)), num_nodes=len(nodes)) if src_parts \
            else dgl.graph(([], []), num_nodes=len(nodes))
        return structure, halo, count


def local_ids(nodes: torch.Tensor, ids: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """Positions of ``ids`` in ``nodes`` (sorted global IDs) -> (local IDs, which of ``ids`` are in ``nodes``); the
    local ID of an id not in ``nodes`` is meaningless. A binary search: no lookup table over the whole graph."""
    if not len(nodes):
        return torch.zeros_like(ids), torch.zeros_like(ids, dtype=torch.bool)
    position = torch.searchsorted(nodes, ids)
    return position, nodes[position.clamp(max=len(nodes) - 1)] == ids


def total_parts(num_parts: int, num_nodes: int, world_size: int) -> int:
    """METIS parts of the whole graph: ``data.num_parts`` (0: about ``NODES_PER_PART`` nodes each), at least one
    per trainer."""
    return max(world_size, num_parts or default_num_parts(num_nodes))


def metis_parts(structure: dgl.DGLGraph, nodes: torch.Tensor, count: int) -> List[torch.Tensor]:
    """``nodes`` (global IDs of ``structure``'s nodes) in ``count`` METIS parts of ``structure`` (DGL's METIS),
    each sorted; empty parts dropped."""
    if count <= 1 or structure.num_nodes() <= count:
        return [nodes] if count <= 1 else [part for part in torch.tensor_split(nodes, count) if len(part)]
    assignment = dgl.metis_partition_assignment(structure, count)
    return [nodes[assignment == k] for k in range(count) if bool((assignment == k).any())]


def scoring_mode(setting: str, halo_nodes: int, share_nodes: int, pass_bytes: int = 0) -> str:
    """``halo`` or ``parts``: how a trainer scores its share (``data.dist_scoring``; ``auto`` picks ``halo`` while
    ``halo_nodes <= HALO_SCORING_LIMIT * share_nodes`` or the pass over share and halo takes at most
    ``ONE_PASS_BYTES``, ``pass_bytes`` its estimate)."""
    if setting != "auto":
        return setting
    small = halo_nodes <= HALO_SCORING_LIMIT * share_nodes or pass_bytes <= ONE_PASS_BYTES
    return "halo" if small else "parts"


def epoch_groups(num_parts: int, num_batches: int, seed: int, epoch: int, rank: int) -> List[List[int]]:
    """Part indices ``0..num_parts-1`` shuffled by (seed, epoch, rank), cut into ``num_batches`` near-equal groups."""
    generator = torch.Generator().manual_seed(epoch_seed(seed, epoch, stream=11 + rank))
    order = torch.randperm(num_parts, generator=generator)
    return [group.tolist() for group in torch.tensor_split(order, num_batches)]


def saved_parts(path: Optional[str], nodes: torch.Tensor) -> Optional[List[torch.Tensor]]:
    """The METIS parts a trainer saved at the start of its run (None: no file, or parts of other nodes)."""
    if path is None or not os.path.isfile(path):
        return None
    parts = torch.load(path)
    if not parts or not torch.equal(torch.sort(torch.cat(parts)).values, nodes):
        log.warning("%s holds parts of other nodes than this trainer's; cutting its nodes again", path)
        return None
    return parts


class NodeBatches(Steps):
    """One trainer's batches of an epoch from a step on: each the subgraph a group of its parts induces."""

    def __init__(self, source: "DistSource", parts: List[torch.Tensor], groups: List[List[int]], start_step: int):
        self.source, self.parts, self.groups, self.start_step = source, parts, groups, start_step
        self.total = len(groups)

    def nodes(self, step: int) -> torch.Tensor:
        group = self.groups[step]
        if not group:  # fewer parts than steps on this trainer: a batch of nothing but its first part (no loss)
            return self.parts[0]
        return torch.cat([self.parts[k] for k in group])

    def __iter__(self):
        for step in range(self.start_step, self.total):
            graph = self.source.batch(self.nodes(step))
            if not self.groups[step]:
                graph.ndata["train_mask"] = torch.zeros_like(graph.ndata["train_mask"])
            yield graph

    def batch_indices(self, step: int) -> List[int]:
        return self.nodes(step).tolist()


class DistNodeTask(Task):
    """Node batches of one graph served by DGL's graph servers, as the training loop's task.

    ``run.train.batch_size`` is METIS parts per trainer and step, as the
    one-process ``--sampler cluster`` counts them (parts per step): each
    trainer cuts its nodes into its share of ``data.num_parts`` parts
    (see the module docstring); every trainer takes the same number of
    steps, and the loss of a step is scaled so that DDP's average is the
    mean over the training nodes of all trainers' batches. Validation and
    test are scored on each trainer's whole share of the graph, with its halo
    or in batches of its parts (``data.dist_scoring``).
    """

    #: one torch seed for every trainer, as partitioned runs were seeded before the one loop
    reseed_ranks = False

    def __init__(self, run: RunConfig, source: "DistSource", device: torch.device,
                 context: DistContext = SINGLE_PROCESS, parts_file: Optional[str] = None, resume: bool = False):
        self.run, self.source, self.device, self.context = run, source, device, context
        self.nodes = torch.sort(source.node_ids()).values
        num_nodes = int(source.graph.num_nodes())
        parts_here = math.ceil(total_parts(run.data.num_parts, num_nodes, context.world_size) / context.world_size)
        structure, halo_nodes, in_edge_count = source.induced_structure(self.nodes)
        self.parts = saved_parts(parts_file, self.nodes) if resume else None
        if self.parts is None:
            self.parts = metis_parts(structure, self.nodes, parts_here)
            if parts_file is not None:  # METIS may cut the same graph differently in another run: --resume reads these
                os.makedirs(os.path.dirname(parts_file), exist_ok=True)
                with atomic_write(parts_file) as handle:
                    torch.save(self.parts, handle)
        most = context.max_floats([float(len(self.parts))], device)[0]
        self.num_batches = max(1, math.ceil(most / run.train.batch_size))
        del structure
        # scoring: this trainer's nodes with their in-neighbours as context (the halo), or its METIS parts
        halo = len(halo_nodes)
        pass_edges = in_edge_count * (len(self.nodes) + halo) // max(len(self.nodes), 1)  # at the share's in-degree
        self.scoring = scoring_mode(run.data.dist_scoring, halo, len(self.nodes),
                                    inference_bytes(run.model, len(self.nodes) + halo, pass_edges))
        self.score_nodes: Optional[torch.Tensor] = None
        if self.scoring == "halo":
            self.score_nodes = torch.sort(torch.cat([self.nodes, halo_nodes])).values
            self.score_own = torch.isin(self.score_nodes, self.nodes)
            how = f"scored in one pass with its {halo} halo nodes"
        else:
            how = (f"scored on its METIS parts, {run.train.batch_size} per pass (data.dist_scoring="
                   f"{run.data.dist_scoring}: its halo of {halo} nodes is {halo / max(len(self.nodes), 1):.0%} of "
                   "its share)")
        log.info("trainer %d: %d nodes in %d METIS parts (%d to %d nodes), %d steps of %d parts per epoch; %s",
                 context.rank, len(self.nodes), len(self.parts), min(len(p) for p in self.parts),
                 max(len(p) for p in self.parts), self.num_batches, run.train.batch_size, how)

    def _groups(self, epoch: int) -> List[List[int]]:
        return epoch_groups(len(self.parts), self.num_batches, self.run.train.seed, epoch, self.context.rank)

    def train_batches(self, epoch: int, start_step: int) -> Steps:
        return NodeBatches(self.source, self.parts, self._groups(epoch), start_step)

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

    def score_passes(self) -> Iterator[Tuple[torch.Tensor, Optional[torch.Tensor]]]:
        """The node sets a scoring pass runs the model on -> ``(sorted global IDs, which are this trainer's)``
        (None: all of them): the share with its halo, or ``train.batch_size`` METIS parts at a time."""
        if self.scoring == "halo":
            yield self.score_nodes, self.score_own
            return
        step = self.run.train.batch_size
        for start in range(0, len(self.parts), step):
            yield torch.sort(torch.cat(self.parts[start:start + step])).values, None

    @torch.no_grad()
    def score_splits(self, model: nn.Module, loss_fn: Any, epoch: int) -> Tuple[Dict[str, float], Dict[str, float]]:
        """Val and test metrics of every node: each trainer scores its own nodes (see the module docstring), and
        the trainers' predictions are merged."""
        model.eval()
        accumulators = {split: MetricAccumulator(self.run.train.metric) for split in EVAL_SPLITS}
        for nodes, own in self.score_passes():
            graph = self.source.batch(nodes)
            output = model(graph)
            for split, accumulator in accumulators.items():
                mask = graph.ndata[f"{split}_mask"] if own is None else graph.ndata[f"{split}_mask"] & own
                if mask.any():
                    target = graph.ndata["label"][mask]
                    accumulator.update(output[mask], target, float(loss_fn(output[mask], target)), num_graphs=0)
            del graph, output
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
    parts_file = os.path.join(run_dir, PARTS_DIR, f"trainer-{context.rank}.pt")
    task = DistNodeTask(run, source, device, context, parts_file=parts_file, resume=resume)
    trainer = Trainer(run, run_dir, task, progress=False, dist=context)
    if resume:  # trainer 0's last.pt, sent to every trainer (the other machines need no copy)
        trainer.restore(context.broadcast_object(load_checkpoint(os.path.join(run_dir, files.LAST))
                                                 if context.is_main else None))
    elif context.is_main:
        files.write_config(run_dir, run.to_dict())
    summary = trainer.fit()
    context.barrier()
    return summary if context.is_main else None
