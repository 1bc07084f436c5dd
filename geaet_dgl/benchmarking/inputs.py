"""Synthetic input graphs shaped like a preset's dataset, and pre-built batches.

``mnist`` (3 node features: intensity, x, y; 66-75 nodes, mean ~70.5 like the
real MNIST superpixel graphs) and ``cifar10`` (5 node features: r, g, b, x, y;
85-150 nodes, mean ~117.5 like CIFAR10) carry 8-NN edges with one weight
feature and an 8-frequency Laplacian PE. ``pattern`` graphs come from our
generator of the benchmark's SBM (:func:`geaet_dgl.data.generated.sbm.generate_pattern_graph`:
44-180 nodes, about 50 edges per node), with one-hot node features, per-node
labels and 16-step RWSE, as the PATTERN loader gives them. ``peptides-struct``
graphs are peptide-sized random molecules (100-200 atoms: a backbone chain with
side branches and a few ring closures, both edge directions), with integer OGB
atom (9) and bond (3) features inside the preset's vocabularies, 11 regression
targets per graph and 10 Laplacian eigenvectors of the unnormalised Laplacian, as
the Peptides loader gives them; ``peptides-func`` the same molecules with 10 targets
in {0, 1} per graph. ``zinc`` graphs are ZINC-sized random molecules (9-37 atoms,
about 2.15 directed bonds per atom, a few rings) with one integer atom type (28) and
bond type (4) per atom and bond, (G,) float targets and 20-step RWSE, as the ZINC
loader gives them. ``cluster`` graphs come from our CLUSTER SBM generator (40-190
nodes, one-hot (N, 7) inputs, six classes per node). ``voc`` and ``coco`` graphs are
region-boundary superpixel graphs (350-500 superpixels at random positions, each
linked to its 5 nearest both ways: about 6 edges per node, VOC has 5.65) with standardised
(N, 14) node and (E, 2) edge float features and per-node labels in 0..20 / 0..80,
as the LRGB superpixel loaders give them. Each carries the encodings its preset's
model reads; ``benchmark --config`` recomputes them for the file's model. ``ogbg-molhiv`` graphs (``benchmark --config``
only) are random molecules of molhiv's shape (6-60 atoms, OGB's 9 atom and 3 bond
columns, (G,) {0, 1} labels).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Tuple

import dgl
import numpy as np
import torch

from ..data import GraphDataset, collate_for, synthetic_mnist_like
from ..config.reference_yaml import REFERENCE_PRESETS
from ..config.presets import get_preset


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
#: presets whose inputs are molecules with OGB features
MOLECULE_PRESETS = ("peptides-struct",)
#: presets whose graphs are generated without encodings, then given those the preset's model reads
PLAIN_GENERATORS = ("peptides-func", "zinc", "ogbg-molhiv", "cluster", "voc", "coco")
SUPPORTED_PRESETS = tuple(SYNTHETIC_SHAPES) + NODE_LEVEL_PRESETS + MOLECULE_PRESETS + PLAIN_GENERATORS


class UnsupportedPreset(ValueError):
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


def synthetic_graphs(preset: str, num_graphs: int, seed: int = 0) -> GraphDataset:
    """``num_graphs`` random graphs with the node/edge features and PE the preset's model reads."""
    key = check_supported(preset)
    if key in NODE_LEVEL_PRESETS:
        return _synthetic_pattern(num_graphs, get_preset(key).model.pe_k, seed)
    if key in MOLECULE_PRESETS:
        return _synthetic_molecules(num_graphs, get_preset(key).model, seed)
    if key in PLAIN_GENERATORS:
        return _with_encodings(plain_synthetic_graphs(key, num_graphs, seed), get_preset(key).model, key)
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
    from ..data.generated.sbm import PATTERN_PARAMS, generate_pattern_graph, make_patterns, one_hot_inputs
    from ..data.encodings.positional_encoding import random_walk_se

    rng = np.random.default_rng(seed)
    patterns = make_patterns(rng)
    graphs = [generate_pattern_graph(rng, patterns) for _ in range(num_graphs)]
    labels = one_hot_inputs(graphs, PATTERN_PARAMS.vocab_size, "pattern", "synthetic")
    for g in graphs:
        g.ndata["rwse"] = random_walk_se(g, rwse_k)
    return GraphDataset(graphs, labels, level="node")


def _random_molecule(rng: np.random.Generator, min_atoms: int = 100, max_atoms: int = 200,
                     rings_per_atom: float = 1 / 30) -> np.ndarray:
    """(2, B) bonds of a random molecule: a chain, side branches, ``n * rings_per_atom`` ring closures."""
    n = int(rng.integers(min_atoms, max_atoms + 1))
    backbone = max(2, n * 2 // 3)
    bonds = [(i, i + 1) for i in range(backbone - 1)]
    bonds += [(int(rng.integers(0, i)), i) for i in range(backbone, n)]  # side chains hang off earlier atoms
    for _ in range(int(n * rings_per_atom)):  # ring closures
        i = int(rng.integers(0, n - 6))
        bonds.append((i, i + 5))
    return np.unique(np.array(bonds, dtype=np.int64).T, axis=1)


def _synthetic_molecules(num_graphs: int, config, seed: int) -> GraphDataset:
    """Peptide-sized random molecules with OGB-style integer features, LapPE and (G, T) float targets."""
    from ..data.encodings.positional_encoding import laplacian_pe

    rng = np.random.default_rng(seed)
    graphs = []
    for _ in range(num_graphs):
        bonds = _random_molecule(rng)
        n = int(bonds.max()) + 1
        src = torch.from_numpy(np.concatenate([bonds[0], bonds[1]]))
        dst = torch.from_numpy(np.concatenate([bonds[1], bonds[0]]))
        g = dgl.graph((src, dst), num_nodes=n)
        atoms = np.stack([rng.integers(0, size, n) for size in config.node_vocab_sizes], axis=1)
        bond_feat = np.stack([rng.integers(0, size, bonds.shape[1]) for size in config.edge_vocab_sizes], axis=1)
        g.ndata["feat"] = torch.from_numpy(atoms)
        g.edata["feat"] = torch.from_numpy(np.concatenate([bond_feat, bond_feat]))
        g.ndata["lap_pe"], g.ndata["lap_eigval"] = laplacian_pe(g, config.pe_k, norm="none")
        graphs.append(g)
    targets = torch.from_numpy(rng.normal(size=(num_graphs, config.out_feats)).astype(np.float32))
    return GraphDataset(graphs, targets)


def _with_encodings(data: GraphDataset, model, dataset: str) -> GraphDataset:
    """``data`` with the Laplacian PE / RWSE / structural encodings ``model`` reads, as the loaders attach them."""
    from ..data.encodings.pe_cache import attach_pe, compute_split_pe
    from ..data.registry import laplacian_norm_of
    from ..data.encodings.se_cache import attach_structural
    from ..data.run_splits import data_pe_sizes, structural_spec

    pe_k, rwse_k = data_pe_sizes(model)
    attach_pe(data.graphs, compute_split_pe(data.graphs, pe_k, laplacian_norm_of(dataset), rwse_k, progress=False))
    attach_structural(data.graphs, structural_spec(model))
    return data


def plain_synthetic_graphs(dataset: str, num_graphs: int, seed: int = 0) -> GraphDataset:
    """``num_graphs`` graphs shaped like ``dataset``'s (one of :data:`PLAIN_GENERATORS`), features and labels only."""
    rng = np.random.default_rng(seed)
    if dataset in ("peptides-func", "zinc", "ogbg-molhiv"):
        return _plain_molecules(rng, num_graphs, dataset)
    if dataset == "cluster":
        return _plain_cluster(rng, num_graphs)
    if dataset in ("voc", "coco"):
        return _plain_superpixels(rng, num_graphs, num_classes=21 if dataset == "voc" else 81)
    raise UnsupportedPreset(f"no plain generator for {dataset!r}; choose one of {', '.join(PLAIN_GENERATORS)}")


#: dataset -> (atoms min, max, ring closures per atom, atom vocabularies, bond vocabularies)
_MOLECULE_SHAPES = {
    "peptides-func": (100, 200, 1 / 30, [119, 5, 12, 12, 10, 6, 6, 2, 2], [5, 6, 2]),
    "zinc": (9, 37, 1 / 8, [28], [4]),
    "ogbg-molhiv": (6, 60, 1 / 10, [119, 5, 12, 12, 10, 6, 6, 2, 2], [5, 6, 2]),
}


def _plain_molecules(rng: np.random.Generator, num_graphs: int, dataset: str) -> GraphDataset:
    """Random molecules with integer atom and bond features in the dataset's vocabularies; Peptides-Func's
    (G, 10) targets in {0, 1}, ZINC's (G,) float targets, molhiv's (G,) int64 labels in {0, 1}."""
    lo, hi, rings, atom_vocab, bond_vocab = _MOLECULE_SHAPES[dataset]
    graphs = []
    for _ in range(num_graphs):
        bonds = _random_molecule(rng, lo, hi, rings)
        n = int(bonds.max()) + 1
        g = dgl.graph((torch.from_numpy(np.concatenate([bonds[0], bonds[1]])),
                       torch.from_numpy(np.concatenate([bonds[1], bonds[0]]))), num_nodes=n)
        bond_feat = np.stack([rng.integers(0, size, bonds.shape[1]) for size in bond_vocab], axis=1)
        g.ndata["feat"] = torch.from_numpy(np.stack([rng.integers(0, size, n) for size in atom_vocab], axis=1))
        g.edata["feat"] = torch.from_numpy(np.concatenate([bond_feat, bond_feat]))
        graphs.append(g)
    if dataset == "zinc":
        targets = torch.from_numpy(rng.normal(size=num_graphs).astype(np.float32))
    elif dataset == "ogbg-molhiv":
        targets = torch.from_numpy(rng.integers(0, 2, num_graphs))
    else:
        targets = torch.from_numpy((rng.random((num_graphs, 10)) < 0.2).astype(np.float32))
    return GraphDataset(graphs, targets)


def _plain_cluster(rng: np.random.Generator, num_graphs: int) -> GraphDataset:
    """CLUSTER graphs from our SBM generator, one-hot (N, 7) inputs and per-node labels as :func:`load_sbm` gives."""
    from ..data.generated.sbm import CLUSTER_PARAMS, generate_cluster_graph, one_hot_inputs

    graphs = [generate_cluster_graph(rng) for _ in range(num_graphs)]
    labels = one_hot_inputs(graphs, CLUSTER_PARAMS.num_communities + 1, "cluster", "synthetic")
    return GraphDataset(graphs, labels, level="node")


def _plain_superpixels(rng: np.random.Generator, num_graphs: int, num_classes: int, neighbours: int = 5,
                       min_nodes: int = 350, max_nodes: int = 500) -> GraphDataset:
    """Region-boundary-like superpixel graphs: each node linked to its ``neighbours`` nearest, both ways."""
    graphs, labels = [], []
    for _ in range(num_graphs):
        n = int(rng.integers(min_nodes, max_nodes + 1))
        pos = rng.random((n, 2))
        dist = ((pos[:, None, :] - pos[None, :, :]) ** 2).sum(-1)
        np.fill_diagonal(dist, np.inf)
        near = np.argsort(dist, axis=1)[:, :neighbours]
        pairs = np.unique(np.sort(np.stack([np.repeat(np.arange(n), neighbours), near.reshape(-1)], 1), 1), axis=0)
        src = np.concatenate([pairs[:, 0], pairs[:, 1]])
        dst = np.concatenate([pairs[:, 1], pairs[:, 0]])
        g = dgl.graph((torch.from_numpy(src), torch.from_numpy(dst)), num_nodes=n)
        g.ndata["feat"] = torch.from_numpy(rng.normal(size=(n, 14)).astype(np.float32))
        g.edata["feat"] = torch.from_numpy(rng.normal(size=(g.num_edges(), 2)).astype(np.float32))
        graphs.append(g)
        labels.append(torch.from_numpy(rng.integers(0, num_classes, n)))
    return GraphDataset(graphs, torch.cat(labels), level="node")


def prebuilt_batches(preset: str, batch_size: int, num_batches: int, device: torch.device, seed: int = 0
                     ) -> List[Tuple[dgl.DGLGraph, torch.Tensor]]:
    """``num_batches`` batches of ``batch_size`` synthetic graphs, batched and moved to ``device`` once."""
    if batch_size < 1 or num_batches < 1:
        raise ValueError(f"batch_size and num_batches must be >= 1, got {batch_size}, {num_batches}")
    data = synthetic_graphs(preset, batch_size * num_batches, seed=seed)
    batch_of = collate_for(data)
    batches = []
    for i in range(num_batches):
        graph, labels = batch_of([data[j] for j in range(i * batch_size, (i + 1) * batch_size)])
        batches.append((graph.to(device), labels.to(device)))
    return batches


def loss_function(preset: str):
    """The preset's training loss as ``f(output, labels)``: cross-entropy, weighted cross-entropy (PATTERN,
    CLUSTER, VOC, COCO), L1 (Peptides-Struct, ZINC) or BCE (Peptides-Func)."""
    from ..training.losses import get_loss

    key = check_supported(preset)
    name = get_preset(key).train.loss
    if name not in ("cross_entropy", "weighted_cross_entropy", "l1", "bce"):
        raise UnsupportedPreset(f"preset {preset!r} uses loss {name!r}, not benchmarked")
    return get_loss(name)
