"""Tiny named node sets in the exact raw layout DGL's own loader classes read from their raw_dir.

Each writer puts its files in ``raw_folder(name, data_dir)`` (DGL's ``<dgl name>_<url hash>/``) and returns
what it wrote, in node order, so tests can compare DGL's processed graph with it:

* Planetoid (cora, citeseer, pubmed): ``ind.<dgl name>.{x,y,tx,ty,allx,ally,graph}`` pickles (scipy CSR
  features, one-hot numpy labels, a dict of adjacency lists) and ``ind.<dgl name>.test.index`` (one id a
  line, not sorted). DGL's split is fixed: train = the first len(y) nodes, val = the next 500, test = the
  test index; so the graph has at least len(y) + 500 nodes.
* geom-gcn (cornell, ..., squirrel, actor): ``out1_node_feature_label.txt`` (header, then
  ``id<TAB>f1,f2,...<TAB>label``; Actor: the ids of the nonzero features, rows in any order),
  ``out1_graph_edges.txt`` (header, then ``a<TAB>b``) and ``<name>_split_0.6_0.2_<k>.npz`` for k in 0..9.
* heterophilous (roman-empire, ...): ``<name>.npz`` with ``edges`` (E, 2), ``node_features``,
  ``node_labels``, ``train_masks`` / ``val_masks`` / ``test_masks`` (S, N).
* GNN benchmark (amazon-*, coauthor-*): ``<dgl name>.npz``, adjacency and features as CSR parts
  (``adj_data/indices/indptr/shape``, ``attr_...``) and ``labels``.
* Wiki-CS: ``data.json`` with ``features``, ``labels``, ``links`` (adjacency lists) and ``train_masks`` /
  ``val_masks`` / ``stopping_masks`` (S lists of N flags) and ``test_mask``.

DGL reorders the GNN-benchmark and Wiki-CS graphs (reverse Cuthill-McKee): their features carry the
written node id in column 0 so that tests can map DGL's nodes back to the written ones.
"""
from __future__ import annotations

import json
import pickle
from collections import defaultdict
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from geaet_dgl.data.nodes.node_sets import node_set_spec, raw_folder

NUM_FEATS = 6


def _ring_edges(rng, num_nodes: int, extra: int):
    """A ring (every node has an edge) plus ``extra`` random edges without self-loops."""
    src = np.concatenate([np.arange(num_nodes), rng.integers(0, num_nodes, extra)])
    dst = np.concatenate([(np.arange(num_nodes) + 1) % num_nodes, np.zeros(extra, dtype=np.int64)])
    dst[num_nodes:] = (src[num_nodes:] + rng.integers(1, num_nodes, extra)) % num_nodes
    return src.astype(np.int64), dst.astype(np.int64)


def _folder(name: str, data_dir) -> Path:
    folder = raw_folder(name, data_dir)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _pickle(path: Path, obj) -> None:
    with open(path, "wb") as handle:
        pickle.dump(obj, handle)


def write_planetoid_fixture(name: str, data_dir, seed: int = 0, num_train: int = 12, num_test: int = 40) -> dict:
    """Planetoid files; -> {'feat' (N, F) raw counts, 'label' (N,), 'edges', 'train'/'val'/'test' node ids}.

    citeseer: one id inside the test range is left out of the test index (Citeseer's isolated nodes), so
    DGL's fix-up gives that node zero features and no split.
    """
    spec = node_set_spec(name)
    rng = np.random.default_rng(seed)
    num_classes = 3
    num_allx = num_train + 500 + 8  # DGL's validation split is the 500 nodes after the training ones
    test_ids = np.arange(num_allx, num_allx + num_test + (1 if name == "citeseer" else 0))
    gap = None
    if name == "citeseer":
        gap = int(test_ids[len(test_ids) // 2])
        test_ids = test_ids[test_ids != gap]
    num_nodes = num_allx + num_test + (1 if gap is not None else 0)
    feat = rng.integers(0, 3, size=(num_nodes, NUM_FEATS)).astype(np.float32)
    feat[:, 0] += 1  # no empty row: DGL row-normalises
    label = rng.integers(0, num_classes, num_nodes)
    label[:num_classes] = np.arange(num_classes)  # every class in the training nodes
    if gap is not None:
        feat[gap] = 0
        label[gap] = 0
    onehot = np.eye(num_classes, dtype=np.int32)
    test_order = rng.permutation(test_ids)  # the file lists the test nodes in any order
    folder = _folder(name, data_dir)
    stem = f"ind.{spec.dgl_name}"
    _pickle(folder / f"{stem}.x", sp.csr_matrix(feat[:num_train]))
    _pickle(folder / f"{stem}.y", onehot[label[:num_train]])
    _pickle(folder / f"{stem}.allx", sp.csr_matrix(feat[:num_allx]))
    _pickle(folder / f"{stem}.ally", onehot[label[:num_allx]])
    _pickle(folder / f"{stem}.tx", sp.csr_matrix(feat[test_order]))
    _pickle(folder / f"{stem}.ty", onehot[label[test_order]])
    src, dst = _ring_edges(rng, num_nodes, 2 * num_nodes)
    keep = np.ones(len(src), dtype=bool)
    if gap is not None:  # the isolated node
        keep = (src != gap) & (dst != gap)
    adjacency = defaultdict(list, {i: [] for i in range(num_nodes)})  # every node a key, the isolated one too
    for a, b in zip(src[keep].tolist(), dst[keep].tolist()):
        adjacency[a].append(b)
        adjacency[b].append(a)
    _pickle(folder / f"{stem}.graph", adjacency)
    (folder / f"{stem}.test.index").write_text("".join(f"{i}\n" for i in test_order))
    return {"feat": feat, "label": label, "edges": set(zip(src[keep].tolist(), dst[keep].tolist())),
            "train": np.arange(num_train), "val": np.arange(num_train, num_train + 500), "test": np.sort(test_ids),
            "num_classes": num_classes, "gap": gap}


def write_geom_gcn_fixture(name: str, data_dir, seed: int = 0, num_nodes: int = 30) -> dict:
    """geom-gcn files with 10 splits; -> {'feat', 'label', 'edges' (a, b) as written, 'masks' (10, 3, N)}."""
    rng = np.random.default_rng(seed)
    num_classes = 3
    label = rng.integers(0, num_classes, num_nodes)
    folder = _folder(name, data_dir)
    if name == "actor":  # features as the ids of the nonzero columns
        columns = [np.sort(rng.choice(NUM_FEATS, size=rng.integers(1, 4), replace=False)) for _ in range(num_nodes)]
        columns[0] = np.array([0, NUM_FEATS - 1])  # the widest id occurs: DGL sizes the features by it
        feat = np.zeros((num_nodes, NUM_FEATS), dtype=np.float32)
        for i, cols in enumerate(columns):
            feat[i, cols] = 1
        order = rng.permutation(num_nodes)  # Actor's rows are not in id order
        rows = [f"{i}\t{','.join(str(c) for c in columns[i])}\t{label[i]}" for i in order]
        header = f"node_id\tfeature(feature_amount:{NUM_FEATS})\tlabel"
    else:
        feat = rng.integers(0, 2, size=(num_nodes, NUM_FEATS)).astype(np.float32)
        rows = [f"{i}\t{','.join(str(int(v)) for v in feat[i])}\t{label[i]}" for i in range(num_nodes)]
        header = "node_id\tfeature\tlabel"
    (folder / "out1_node_feature_label.txt").write_text("\n".join([header] + rows) + "\n")
    src, dst = _ring_edges(rng, num_nodes, num_nodes)
    (folder / "out1_graph_edges.txt").write_text(
        "\n".join(["node_id\tnode_id"] + [f"{a}\t{b}" for a, b in zip(src, dst)]) + "\n")
    masks = np.zeros((10, 3, num_nodes), dtype=np.uint8)
    for k in range(10):
        order = rng.permutation(num_nodes)
        train, val = int(0.48 * num_nodes), int(0.32 * num_nodes)
        masks[k, 0, order[:train]] = 1
        masks[k, 1, order[train:train + val]] = 1
        masks[k, 2, order[train + val:]] = 1
        np.savez(folder / f"{node_set_spec(name).dgl_name}_split_0.6_0.2_{k}.npz", train_mask=masks[k, 0],
                 val_mask=masks[k, 1], test_mask=masks[k, 2])
    return {"feat": feat, "label": label, "edges": set(zip(src.tolist(), dst.tolist())), "masks": masks.astype(bool),
            "num_classes": num_classes}


def write_heterophilous_fixture(name: str, data_dir, seed: int = 0, num_nodes: int = 40, num_splits: int = 10
                                ) -> dict:
    """``<name>.npz``; -> {'feat', 'label', 'edges', 'masks' (S, 3, N)}. Binary labels for the ROC-AUC sets."""
    spec = node_set_spec(name)
    rng = np.random.default_rng(seed)
    num_classes = 2 if spec.metric == "roc_auc" else 4
    label = rng.integers(0, num_classes, num_nodes)
    feat = rng.normal(size=(num_nodes, NUM_FEATS)).astype(np.float32)
    src, dst = _ring_edges(rng, num_nodes, num_nodes)
    masks = np.zeros((num_splits, 3, num_nodes), dtype=bool)
    for k in range(num_splits):
        order = rng.permutation(num_nodes)
        masks[k, 0, order[:20]] = True
        masks[k, 1, order[20:30]] = True
        masks[k, 2, order[30:]] = True
        for part in range(3):  # both classes in every part (ROC-AUC needs them)
            nodes = np.flatnonzero(masks[k, part])
            label[nodes[0]], label[nodes[1]] = 0, 1
    np.savez(_folder(name, data_dir) / f"{spec.dgl_name}.npz", edges=np.stack([src, dst], axis=1),
             node_features=feat, node_labels=label, train_masks=masks[:, 0], val_masks=masks[:, 1],
             test_masks=masks[:, 2])
    return {"feat": feat, "label": label, "edges": set(zip(src.tolist(), dst.tolist())), "masks": masks,
            "num_classes": num_classes}


def write_gnn_benchmark_fixture(name: str, data_dir, seed: int = 0, num_nodes: int = 50) -> dict:
    """Shchur et al.'s ``<dgl name>.npz`` (CSR parts); feature column 0 holds the written node id + 1."""
    spec = node_set_spec(name)
    rng = np.random.default_rng(seed)
    label = rng.integers(0, 4, num_nodes)
    feat = rng.integers(0, 3, size=(num_nodes, NUM_FEATS)).astype(np.float32)
    feat[:, 0] = np.arange(num_nodes) + 1
    src, dst = _ring_edges(rng, num_nodes, num_nodes)
    adj = sp.csr_matrix((np.ones(len(src), dtype=np.float32), (src, dst)), shape=(num_nodes, num_nodes))
    attr = sp.csr_matrix(feat)
    np.savez(_folder(name, data_dir) / f"{spec.dgl_name}.npz", adj_data=adj.data, adj_indices=adj.indices,
             adj_indptr=adj.indptr, adj_shape=np.array(adj.shape), attr_data=attr.data, attr_indices=attr.indices,
             attr_indptr=attr.indptr, attr_shape=np.array(attr.shape), labels=label)
    return {"feat": feat, "label": label, "edges": set(zip(src.tolist(), dst.tolist())), "num_classes": 4}


def write_wikics_fixture(data_dir, seed: int = 0, num_nodes: int = 40, num_splits: int = 20) -> dict:
    """Wiki-CS's ``data.json``; feature column 0 holds the written node id + 1; -> masks (S, 4, N): train, val,
    stopping, then the one test mask repeated."""
    rng = np.random.default_rng(seed)
    label = rng.integers(0, 3, num_nodes)
    feat = rng.normal(size=(num_nodes, NUM_FEATS)).round(4)
    feat[:, 0] = np.arange(num_nodes) + 1
    src, dst = _ring_edges(rng, num_nodes, num_nodes)
    links = [[] for _ in range(num_nodes)]
    for a, b in zip(src.tolist(), dst.tolist()):
        links[a].append(b)
    test = np.zeros(num_nodes, dtype=bool)
    test[rng.permutation(num_nodes)[:10]] = True
    rest = np.flatnonzero(~test)
    masks = np.zeros((num_splits, 4, num_nodes), dtype=bool)
    for k in range(num_splits):
        order = rng.permutation(rest)
        masks[k, 0, order[:10]] = True
        masks[k, 1, order[10:18]] = True
        masks[k, 2, order[18:24]] = True
        masks[k, 3] = test
    data = {"features": feat.tolist(), "labels": label.tolist(), "links": links,
            "train_masks": masks[:, 0].tolist(), "val_masks": masks[:, 1].tolist(),
            "stopping_masks": masks[:, 2].tolist(), "test_mask": test.tolist()}
    (_folder("wikics", data_dir) / "data.json").write_text(json.dumps(data))
    return {"feat": feat.astype(np.float32), "label": label, "edges": set(zip(src.tolist(), dst.tolist())),
            "masks": masks, "num_classes": 3}


def write_node_set_fixture(name: str, data_dir, seed: int = 0, **kwargs) -> dict:
    """The fixture of ``name``'s family."""
    family = node_set_spec(name).family
    if family == "planetoid":
        return write_planetoid_fixture(name, data_dir, seed, **kwargs)
    if family == "geom-gcn":
        return write_geom_gcn_fixture(name, data_dir, seed, **kwargs)
    if family == "heterophilous":
        return write_heterophilous_fixture(name, data_dir, seed, **kwargs)
    if family == "gnn-benchmark":
        return write_gnn_benchmark_fixture(name, data_dir, seed, **kwargs)
    return write_wikics_fixture(data_dir, seed, **kwargs)
