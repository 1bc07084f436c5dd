"""Tiny ogbg-molhiv / -molpcba / -ppa / -code2 folders in the exact layout OGB's DglGraphPropPredDataset reads.

``<data_dir>/ogbg_<name>/`` with ``RELEASE_v1.txt``, ``mapping/``, ``raw/*.csv.gz`` (no header;
node ids local to each graph; every edge once, OGB adds the inverse ones except for code2) and
``split/<split>/{train,valid,test}.csv.gz``, so that OGB's own processing (raw ->
processed/dgl_data_processed) runs on them. Molecules are real (their atom and bond features come
from OGB's ``smiles2graph``); ppa's graphs and code2's ASTs are random.
"""
from pathlib import Path
from typing import Dict, List

import numpy as np
import pandas as pd
from ogb.utils import smiles2graph

from geaet_dgl.data.ogbg.graphprop import OGBG, RELEASE

#: Small drug-like molecules (aromatic rings, charges, stereo), none with a single atom.
SMILES = [
    "CCO", "CC(=O)O", "c1ccccc1", "CC(=O)Oc1ccccc1C(=O)O", "CN1C=NC2=C1C(=O)N(C(=O)N2C)C",
    "C[C@@H](N)C(=O)O", "O=C([O-])c1ccccc1", "CCN(CC)CC", "C1CCNCC1", "c1ccncc1",
    "CC(C)Cc1ccc(C(C)C(=O)O)cc1", "OC1=CC=CC=C1", "NC(=O)N", "C#N", "FC(F)(F)c1ccccc1", "CCOC(=O)C",
]
#: Not in file order, so a loader that ignores the split files is caught.
SPLIT = {"train": [9, 0, 3, 12, 5, 14, 7, 1, 10, 15], "valid": [8, 2, 13], "test": [6, 4, 11]}
PPA_CLASSES = 37


def _csv(path: Path, values) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(np.asarray(values)).to_csv(path, header=False, index=False, compression="gzip")


def _common(root: Path, num_nodes: List[int], edges: List[np.ndarray], labels, split: Dict[str, list],
            split_name: str) -> None:
    (root / "mapping").mkdir(parents=True, exist_ok=True)
    (root / RELEASE).write_text("# Release note\n")
    _csv(root / "raw" / "edge.csv.gz", np.concatenate(edges).astype(np.int64))
    _csv(root / "raw" / "num-node-list.csv.gz", np.asarray(num_nodes)[:, None])
    _csv(root / "raw" / "num-edge-list.csv.gz", np.asarray([len(e) for e in edges])[:, None])
    _csv(root / "raw" / "graph-label.csv.gz", labels)
    for part, index in split.items():
        _csv(root / "split" / OGBG[root.name.replace("_", "-")].split / f"{part}.csv.gz",
             np.asarray(index, dtype=np.int64)[:, None])


def molecule_labels(name: str, seed: int = 0) -> np.ndarray:
    """molhiv (G, 1) {0, 1} with both classes in every split; molpcba (G, 128) {0, 1, NaN}."""
    rng = np.random.default_rng(seed)
    if name == "ogbg-molhiv":
        return (np.arange(len(SMILES)) % 2)[:, None].astype(np.int64)
    labels = rng.integers(0, 2, (len(SMILES), 128)).astype(np.float64)
    labels[rng.random(labels.shape) < 0.3] = np.nan
    return labels


def write_molecule_fixture(name: str, data_dir: Path, seed: int = 0) -> dict:
    """``ogbg-molhiv`` or ``ogbg-molpcba`` from :data:`SMILES`; -> the arrays written."""
    root = Path(data_dir) / OGBG[name].folder
    graphs = [smiles2graph(s) for s in SMILES]
    edges = [g["edge_index"].T[::2] for g in graphs]  # smiles2graph lists each bond both ways: OGB's files once
    labels = molecule_labels(name, seed)
    _common(root, [g["num_nodes"] for g in graphs], edges, labels, SPLIT, OGBG[name].split)
    _csv(root / "raw" / "node-feat.csv.gz", np.concatenate([g["node_feat"] for g in graphs]))
    _csv(root / "raw" / "edge-feat.csv.gz", np.concatenate([g["edge_feat"][::2] for g in graphs]))
    pd.DataFrame({"smiles": SMILES}).to_csv(root / "mapping" / "mol.csv.gz", index=False, compression="gzip")
    return {"graphs": graphs, "labels": labels, "split": SPLIT, "root": root}


def write_ppa_fixture(data_dir: Path, seed: int = 0, num_graphs: int = 16) -> dict:
    """Random ppa-like graphs: 7 float edge features, no node features, labels in 0..36."""
    rng = np.random.default_rng(seed)
    root = Path(data_dir) / OGBG["ogbg-ppa"].folder
    num_nodes = rng.integers(4, 9, num_graphs).tolist()
    edges = []
    for n in num_nodes:
        src = rng.integers(0, n, 2 * n)
        edges.append(np.stack([src, (src + rng.integers(1, n, 2 * n)) % n], axis=1))  # no self loops
    labels = rng.integers(0, PPA_CLASSES, num_graphs)[:, None]
    feats = rng.random((sum(len(e) for e in edges), 7)).round(3)
    _common(root, num_nodes, edges, labels, SPLIT, OGBG["ogbg-ppa"].split)
    _csv(root / "raw" / "edge-feat.csv.gz", feats)
    return {"num_nodes": num_nodes, "edges": edges, "labels": labels, "edge_feat": feats, "split": SPLIT}


#: Subtokens of the fixture's method names.
WORDS = ["get", "set", "name", "value", "to", "string", "is", "valid", "read", "file", "init", "add", "item"]


def _ast(rng, n: int):
    """A random tree on ``n`` nodes renumbered in DFS preorder: -> (parent -> child edges, depths)."""
    parent = [-1] + [int(rng.integers(0, i)) for i in range(1, n)]
    children = {i: [c for c in range(n) if parent[c] == i] for i in range(n)}
    order, stack = [], [0]
    while stack:
        node = stack.pop()
        order.append(node)
        stack.extend(reversed(children[node]))
    new = {old: i for i, old in enumerate(order)}
    depth = [0] * n
    for old in order[1:]:
        depth[new[old]] = depth[new[parent[old]]] + 1
    edges = np.array([[new[parent[old]], new[old]] for old in order[1:]], dtype=np.int64)
    return edges, np.array(depth)


def write_code2_fixture(data_dir: Path, seed: int = 0, num_graphs: int = 16) -> dict:
    """Random ASTs with 6-40 nodes, OGB's code2 raw files (no inverse edges added by OGB) and method names of
    1-7 subtokens (longer than GraphGPS's 5, and words only the validation / test names use)."""
    rng = np.random.default_rng(seed)
    root = Path(data_dir) / OGBG["ogbg-code2"].folder
    sizes = rng.integers(6, 41, num_graphs).tolist()
    trees = [_ast(rng, n) for n in sizes]
    names = [" ".join(rng.choice(WORDS[:10], int(rng.integers(1, 8)))) for _ in range(num_graphs)]
    for index in SPLIT["test"]:
        names[index] += " item"  # a subtoken outside the training vocabulary
    _common(root, sizes, [edges for edges, _ in trees], np.asarray(names, dtype=object)[:, None], SPLIT,
            OGBG["ogbg-code2"].split)
    feat = np.concatenate([np.stack([rng.integers(0, 98, n), rng.integers(0, 10030, n)], axis=1) for n in sizes])
    attributed = rng.integers(0, 2, sum(sizes))
    _csv(root / "raw" / "node-feat.csv.gz", feat)
    _csv(root / "raw" / "node_is_attributed.csv.gz", attributed[:, None])
    _csv(root / "raw" / "node_dfs_order.csv.gz", np.concatenate([np.arange(n) for n in sizes])[:, None])
    _csv(root / "raw" / "node_depth.csv.gz", np.concatenate([depth for _, depth in trees])[:, None])
    return {"sizes": sizes, "trees": trees, "names": [n.split(" ") for n in names], "feat": feat,
            "attributed": attributed, "split": SPLIT}
