"""Tiny ogbn-arxiv / ogbn-products folders in the exact layout OGB's DglNodePropPredDataset reads.

``<data_dir>/ogbn_<name>/`` with ``RELEASE_v1.txt``, ``raw/*.csv.gz`` (no header, one row per
edge / node: OGB's read_csv_graph_raw) and ``split/<split>/{train,valid,test}.csv.gz``, so that
OGB's own processing (raw -> processed/dgl_data_processed) runs on them.
"""
from pathlib import Path

import numpy as np
import pandas as pd

from geaet_dgl.data.nodes.ogbn import OGBN, RELEASE

NUM_NODES = 40
NUM_FEATS = 5


def _csv(path: Path, values) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(np.asarray(values)).to_csv(path, header=False, index=False, compression="gzip")


def write_ogbn_fixture(name: str, data_dir: Path, seed: int = 0) -> dict:
    """Write ``name``'s folder under ``data_dir``; -> the arrays written (edges, feat, label, split)."""
    spec = OGBN[name]
    rng = np.random.default_rng(seed)
    root = Path(data_dir) / spec.folder
    src = rng.integers(0, NUM_NODES, 120)
    dst = (src + rng.integers(1, NUM_NODES, 120)) % NUM_NODES  # no self loops
    feat = rng.normal(size=(NUM_NODES, NUM_FEATS)).round(6) + 0.5  # floats, as OGB's feature files
    label = rng.integers(0, spec.num_classes, NUM_NODES)
    order = rng.permutation(NUM_NODES)  # split indices not in node order
    split = {"train": np.sort(order[:20]), "valid": order[20:28], "test": order[28:36]}  # 4 nodes in none
    (root / RELEASE).parent.mkdir(parents=True, exist_ok=True)
    (root / RELEASE).write_text("# Release note\n")
    _csv(root / "raw" / "edge.csv.gz", np.stack([src, dst], axis=1))
    _csv(root / "raw" / "num-node-list.csv.gz", [NUM_NODES])
    _csv(root / "raw" / "num-edge-list.csv.gz", [len(src)])
    _csv(root / "raw" / "node-feat.csv.gz", feat)
    _csv(root / "raw" / "node-label.csv.gz", label[:, None])
    if name == "ogbn-arxiv":
        _csv(root / "raw" / "node_year.csv.gz", rng.integers(1990, 2020, NUM_NODES)[:, None])
    for part, index in split.items():
        _csv(root / "split" / spec.split / f"{part}.csv.gz", index[:, None])
    return {"src": src, "dst": dst, "feat": feat, "label": label, "split": split}
