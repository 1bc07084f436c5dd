"""Synthetic input graphs shaped like a preset's dataset (every dataset a preset or a ``--config`` file can name),
and pre-built batches.

``mnist`` (3 node features: intensity, x, y; 66-75 nodes, mean ~70.5 like the
real MNIST superpixel graphs) and ``cifar10`` (5 node features: r, g, b, x, y;
85-150 nodes, mean ~117.5 like CIFAR10) carry 8-NN edges with one weight
feature and an 8-frequency Laplacian PE. ``pattern`` graphs come from our
generator of the benchmark's SBM (:func:`geaet_dgl.data.generated.sbm.generate_pattern_graph`:
44-180 nodes, about 50 edges per node), with one-hot node features, per-node
labels and 16-step RWSE, as the PATTERN loader gives them. ``cluster`` graphs come
from our CLUSTER SBM generator (40-190 nodes, one-hot (N, 7) inputs, six classes per node).
``voc`` and ``coco`` graphs are region-boundary superpixel graphs (350-500 superpixels
at random positions, each linked to its 5 nearest both ways: about 6 edges per node,
VOC has 5.65) with standardised (N, 14) node and (E, 2) edge float features and
per-node labels in 0..20 / 0..80, as the LRGB superpixel loaders give them.

Every other dataset has a row in :data:`.shapes.DATASET_SHAPES` (a family of
:mod:`geaet_dgl.data.generated.families` and its sizes): the molecules (Peptides: 100-200 atoms with OGB's 9
atom and 3 bond columns; ZINC: 9-37 atoms, one atom and bond type; ogbg-molhiv,
ogbg-molpcba, PCQM4Mv2 and PCQM-Contact's contact pairs), ogbg-ppa, ogbg-code2's ASTs,
MalNet-Tiny's call graphs, TreeNeighbourMatch, the user's own graph files, and the
one-graph node sets (Planetoid, geom-gcn, Platonov et al.'s, Amazon / Coauthor,
Wiki-CS, ogbn-arxiv / -products: one graph with train / val / test masks; a batch is
that whole graph, whatever the batch size, and a training step's loss reads the
``train_mask`` nodes, as the trainer's full-graph step does).

Each carries the encodings its preset's model reads; ``benchmark --config`` recomputes
them for the file's model.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

import dgl
import numpy as np
import torch

from geaet_dgl.data import GraphDataset, collate_for, synthetic_mnist_like
from geaet_dgl.interop.reference_yaml import REFERENCE_PRESETS
from geaet_dgl.config.presets import get_preset
from geaet_dgl.errors import GeaetError
from geaet_dgl.data.generated import families
from .shapes import DATASET_SHAPES, distinct_graphs, repeat_graphs


@dataclass(frozen=True)
class SyntheticShape:
    min_nodes: int
    max_nodes: int
    node_feats: int


#: preset -> shape of its synthetic graphs
SYNTHETIC_SHAPES: Dict[str, SyntheticShape] = {
    "mnist": SyntheticShape(min_nodes=66, max_nodes=75, node_feats=3),
    "cifar10": SyntheticShape(min_nodes=85, max_nodes=150, node_feats=5),
}
#: presets whose inputs are node-level SBM graphs
NODE_LEVEL_PRESETS = ("pattern",)
#: presets whose graphs are generated without encodings, then given those the preset's model reads
PLAIN_GENERATORS = ("cluster", "voc", "coco") + tuple(DATASET_SHAPES)
SUPPORTED_PRESETS = tuple(SYNTHETIC_SHAPES) + NODE_LEVEL_PRESETS + PLAIN_GENERATORS


class UnsupportedPreset(GeaetError, ValueError):
    """No synthetic input generator exists for this preset."""


def check_supported(preset: str) -> str:
    key = preset.lower()
    if key not in SUPPORTED_PRESETS:
        get_preset(key)  # an unknown name gets the presets' own error
        raise UnsupportedPreset(
            f"preset {preset!r} has no synthetic graph generator for benchmarking; supported presets: "
            f"{', '.join(SUPPORTED_PRESETS)}"
        )
    return key


def check_reference_preset(preset: str) -> str:
    """:func:`check_supported`, and the reference has a configuration of it (``REFERENCE_PRESETS``)."""
    key = check_supported(preset)
    if key not in REFERENCE_PRESETS:
        raise UnsupportedPreset(f"no reference mapping for preset {preset!r}; available: "
                                f"{', '.join(REFERENCE_PRESETS)}")
    return key


def is_transductive(dataset: str) -> bool:
    """Whether ``dataset``'s synthetic data is one graph with node masks (a batch is the whole graph)."""
    shape = DATASET_SHAPES.get(dataset.lower())
    return shape is not None and shape.level == "transductive"


def synthetic_graphs(preset: str, num_graphs: int, seed: int = 0, max_nodes: Optional[int] = None) -> GraphDataset:
    """``num_graphs`` random graphs with the node/edge features and PE the preset's model reads.

    ``max_nodes`` caps the nodes of each graph of the families that take it (:mod:`geaet_dgl.data.generated.families`; the
    one-graph node sets are scaled to it at their average degree): small inputs for tests.
    A one-graph node set gives one graph whatever ``num_graphs``.
    """
    key = check_supported(preset)
    if key in NODE_LEVEL_PRESETS:
        return _synthetic_pattern(num_graphs, get_preset(key).model.pe_k, seed)
    if key in PLAIN_GENERATORS:
        data = plain_synthetic_graphs(key, distinct_graphs(key, num_graphs), seed, max_nodes=max_nodes)
        return repeat_graphs(_with_encodings(data, get_preset(key).model, key), num_graphs)
    shape = SYNTHETIC_SHAPES[key]
    cfg = get_preset(key).model
    data = synthetic_mnist_like(num_graphs, num_nodes=shape.max_nodes, min_nodes=shape.min_nodes,
                                k=cfg.pe_k, seed=seed, num_classes=cfg.out_feats)
    if shape.node_feats != 3:  # CIFAR10: three colour channels around the intensity, then (x, y)
        rng = np.random.default_rng(seed + 1)
        for g in data.graphs:
            feat = g.ndata["feat"]
            noise = torch.from_numpy(rng.normal(0.0, 0.05, (g.num_nodes(), shape.node_feats - 2)).astype(np.float32))
            colour = (feat[:, :1] + noise).clamp(0.0, 1.0)
            g.ndata["feat"] = torch.cat([colour, feat[:, 1:]], dim=1)
    return data


def _synthetic_pattern(num_graphs: int, rwse_k: int, seed: int) -> GraphDataset:
    """PATTERN-like graphs from our SBM generator, prepared as :func:`geaet_dgl.data.generated.sbm.load_sbm` prepares them."""
    from geaet_dgl.data.generated.sbm import PATTERN_PARAMS, generate_pattern_graph, make_patterns, one_hot_inputs
    from geaet_dgl.data.encodings.positional_encoding import random_walk_se

    rng = np.random.default_rng(seed)
    patterns = make_patterns(rng)
    graphs = [generate_pattern_graph(rng, patterns) for _ in range(num_graphs)]
    labels = one_hot_inputs(graphs, PATTERN_PARAMS.vocab_size, "pattern", "synthetic")
    for g in graphs:
        g.ndata["rwse"] = random_walk_se(g, rwse_k)
    return GraphDataset(graphs, labels, level="node")


def _with_encodings(data: GraphDataset, model, dataset: str) -> GraphDataset:
    """``data`` with the Laplacian PE / RWSE / structural encodings ``model`` reads, as the loaders attach them."""
    from geaet_dgl.data.encodings.pe_cache import attach_pe, compute_split_pe
    from geaet_dgl.data.registry import laplacian_norm_of
    from geaet_dgl.data.encodings.se_cache import attach_structural
    from geaet_dgl.data.run_splits import data_pe_sizes, structural_spec

    pe_k, rwse_k = data_pe_sizes(model)
    attach_pe(data.graphs, compute_split_pe(data.graphs, pe_k, laplacian_norm_of(dataset), rwse_k, progress=False))
    attach_structural(data.graphs, structural_spec(model))
    return data


def plain_synthetic_graphs(dataset: str, num_graphs: int, seed: int = 0, max_nodes: Optional[int] = None
                           ) -> GraphDataset:
    """``num_graphs`` graphs shaped like ``dataset``'s (one of :data:`PLAIN_GENERATORS`), features and labels only
    (``max_nodes``: see :func:`synthetic_graphs`)."""
    rng = np.random.default_rng(seed)
    if dataset == "cluster":
        return _plain_cluster(rng, num_graphs)
    if dataset in ("voc", "coco"):
        return families.region_superpixels(rng, num_graphs, num_classes=21 if dataset == "voc" else 81,
                                             max_nodes=max_nodes)
    if dataset in DATASET_SHAPES:
        return DATASET_SHAPES[dataset].generate(num_graphs, seed, max_nodes=max_nodes)
    raise UnsupportedPreset(f"no plain generator for {dataset!r}; choose one of {', '.join(PLAIN_GENERATORS)}")


def _plain_cluster(rng: np.random.Generator, num_graphs: int) -> GraphDataset:
    """CLUSTER graphs from our SBM generator, one-hot (N, 7) inputs and per-node labels as :func:`load_sbm` gives."""
    from geaet_dgl.data.generated.sbm import CLUSTER_PARAMS, generate_cluster_graph, one_hot_inputs

    graphs = [generate_cluster_graph(rng) for _ in range(num_graphs)]
    labels = one_hot_inputs(graphs, CLUSTER_PARAMS.num_communities + 1, "cluster", "synthetic")
    return GraphDataset(graphs, labels, level="node")


def batches_of(data: GraphDataset, batch_size: int, num_batches: int) -> List[Tuple[dgl.DGLGraph, torch.Tensor]]:
    """``num_batches`` batches of ``batch_size`` consecutive items of ``data``; a one-graph set's batch is its one
    graph (the same batch ``num_batches`` times)."""
    batch_of = collate_for(data)
    if len(data) == 1:
        return [batch_of([data[0]])] * num_batches
    return [batch_of([data[j] for j in range(i * batch_size, (i + 1) * batch_size)]) for i in range(num_batches)]


def prebuilt_batches(preset: str, batch_size: int, num_batches: int, device: torch.device, seed: int = 0,
                     max_nodes: Optional[int] = None) -> List[Tuple[dgl.DGLGraph, torch.Tensor]]:
    """``num_batches`` batches of ``batch_size`` synthetic graphs, batched and moved to ``device`` once
    (a one-graph node set: its whole graph, whatever ``batch_size``)."""
    if batch_size < 1 or num_batches < 1:
        raise ValueError(f"batch_size and num_batches must be >= 1, got {batch_size}, {num_batches}")
    count = 1 if is_transductive(preset) else batch_size * num_batches
    data = synthetic_graphs(preset, count, seed=seed, max_nodes=max_nodes)
    built = batches_of(data, batch_size, num_batches)
    moved = {}
    for graph, labels in built:
        if id(graph) not in moved:  # a one-graph set's one batch is moved once
            moved[id(graph)] = (graph.to(device), labels.to(device))
    return [moved[id(graph)] for graph, _ in built]


def loss_function(preset: str):
    """The preset's training loss as ``f(output, labels)``: cross-entropy, weighted cross-entropy (PATTERN,
    CLUSTER, VOC, COCO), L1 (Peptides-Struct, ZINC, PCQM4Mv2), BCE (Peptides-Func, molpcba), the link
    cross-entropy (PCQM-Contact) or the subtoken cross-entropy (ogbg-code2)."""
    from geaet_dgl.training.losses import LOSSES, get_loss

    key = check_supported(preset)
    name = get_preset(key).train.loss
    if name not in LOSSES:
        raise UnsupportedPreset(f"preset {preset!r} uses loss {name!r}, not benchmarked")
    return get_loss(name)
