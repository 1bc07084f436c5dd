"""Tiny files in the exact formats DGL's PATTERN/CLUSTER/ZINC loaders read (``dgl.save_graphs``)."""
from pathlib import Path

import dgl
import numpy as np
import torch

from geaet_dgl.data.generated.sbm import sbm_files
from geaet_dgl.data.molecules.zinc import zinc_files


def _molecule(rng: np.random.Generator) -> dgl.DGLGraph:
    """A chain of 4..9 atoms with one ring bond, both directions, as DGL's ZINC graphs are stored."""
    n = int(rng.integers(4, 10))
    pairs = [(i, i + 1) for i in range(n - 1)] + [(0, n - 1)]
    src = [a for a, b in pairs] + [b for a, b in pairs]
    dst = [b for a, b in pairs] + [a for a, b in pairs]
    g = dgl.graph((torch.tensor(src), torch.tensor(dst)), num_nodes=n)
    g.ndata["feat"] = torch.from_numpy(rng.integers(0, 28, size=n)).long()  # (N,) atom types
    bonds = torch.from_numpy(rng.integers(1, 4, size=len(pairs))).long()
    g.edata["feat"] = torch.cat([bonds, bonds])  # (E,) bond types, same both ways
    return g


def write_zinc_fixture(data_dir: Path, sizes=(6, 3, 3), seed: int = 0) -> dict:
    """ZincDGL_{train,valid,test}.bin with ``{'g_label': (G,)}``; -> {split: (graphs, labels)}."""
    rng = np.random.default_rng(seed)
    out = {}
    for (split, path), count in zip(zinc_files(data_dir).items(), sizes):
        graphs = [_molecule(rng) for _ in range(count)]
        labels = torch.from_numpy(rng.normal(size=count)).float()
        path.parent.mkdir(parents=True, exist_ok=True)
        dgl.save_graphs(str(path), graphs, {"g_label": labels})
        out[split] = (graphs, labels)
    return out


def write_sbm_fixture(name: str, data_dir: Path, sizes=(4, 2, 2), seed: int = 0) -> dict:
    """SBM_PATTERN_* / CLUSTER_* files as DGL stores them (int64 feat, int16 label, (E, 1) edge feat)."""
    rng = np.random.default_rng(seed)
    vocab, classes = (3, 2) if name == "pattern" else (7, 6)
    out = {}
    for (split, path), count in zip(sbm_files(name, data_dir).items(), sizes):
        graphs = []
        for _ in range(count):
            n = int(rng.integers(6, 12))
            adj = np.triu(rng.random((n, n)) < 0.4, 1)
            adj = adj | adj.T
            src, dst = np.nonzero(adj)
            g = dgl.graph((torch.from_numpy(src), torch.from_numpy(dst)), num_nodes=n)
            g.ndata["feat"] = torch.from_numpy(rng.integers(0, vocab, size=n)).long()
            g.ndata["label"] = torch.from_numpy(rng.integers(0, classes, size=n)).to(torch.int16)
            g.edata["feat"] = torch.ones(g.num_edges(), 1)
            graphs.append(g)
        path.parent.mkdir(parents=True, exist_ok=True)
        dgl.save_graphs(str(path), graphs)
        out[split] = graphs
    return out
