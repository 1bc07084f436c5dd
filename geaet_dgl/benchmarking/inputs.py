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
the Peptides loader gives them. ``zinc`` and ``ogbg-molhiv`` graphs (``benchmark --config``
only) are random molecules of ZINC's (9-37 atoms, one atom type in 28 and bond type in 4 per
atom and bond, (G,) float targets) and molhiv's shape (6-60 atoms, OGB's 9 atom and 3 bond
columns, (G,) {0, 1} labels), generated without encodings: ``benchmark --config`` computes those
the file's model reads.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Tuple

import dgl
import numpy as np
import torch

from ..data import GraphDataset, collate_for, synthetic_mnist_like
from ..interop.reference_config import REFERENCE_PRESETS
from ..presets import get_preset


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
#: datasets whose graphs are generated without encodings (``benchmark --config`` adds those its model reads)
PLAIN_GENERATORS = ("zinc", "ogbg-molhiv")
SUPPORTED_PRESETS = tuple(SYNTHETIC_SHAPES) + NODE_LEVEL_PRESETS + MOLECULE_PRESETS


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
    from ..data.positional_encoding import random_walk_se

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
    from ..data.positional_encoding import laplacian_pe

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


#: dataset -> (atoms min, max, ring closures per atom, atom vocabularies, bond vocabularies)
_MOLECULE_SHAPES = {
    "zinc": (9, 37, 1 / 8, [28], [4]),
    "ogbg-molhiv": (6, 60, 1 / 10, [119, 5, 12, 12, 10, 6, 6, 2, 2], [5, 6, 2]),
}


def plain_synthetic_graphs(dataset: str, num_graphs: int, seed: int = 0) -> GraphDataset:
    """``num_graphs`` random molecules shaped like ``dataset`` (one of :data:`PLAIN_GENERATORS`), with integer
    atom (N, A) and bond (E, B) features in its vocabularies and no encodings; ZINC's (G,) float targets,
    molhiv's (G,) int64 labels in {0, 1}."""
    if dataset not in PLAIN_GENERATORS:
        raise UnsupportedPreset(f"no plain generator for {dataset!r}; choose one of {', '.join(PLAIN_GENERATORS)}")
    rng = np.random.default_rng(seed)
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
    else:
        targets = torch.from_numpy(rng.integers(0, 2, num_graphs))
    return GraphDataset(graphs, targets)


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
    """The preset's training loss as ``f(output, labels)``: cross-entropy, PATTERN's weighted cross-entropy,
    or Peptides-Struct's L1."""
    from ..training.losses import get_loss

    key = check_supported(preset)
    name = get_preset(key).train.loss
    if name not in ("cross_entropy", "weighted_cross_entropy", "l1"):
        raise UnsupportedPreset(f"preset {preset!r} uses loss {name!r}, not benchmarked")
    return get_loss(name)
