"""A tiny MalNet-Tiny in the raw layout PyG's ``MalNetTiny`` (and GraphGPS's copy) reads:
``MalNetTiny/raw/malnet-graphs-tiny/<type>/<family>/<sha>.edgelist`` (5 header lines, then ``src dst``) and
``MalNetTiny/raw/split_info_tiny/type/{train,val,test}.txt`` (``<type>/<family>/<sha>`` per line).

Each graph has an isolated node, a node with only a self-loop, repeated calls and a self-loop on a called
function, so that the isolated-node removal and the degree profile are exercised."""
import hashlib
from pathlib import Path

import numpy as np

from geaet_dgl.data.malnet.tiny import TYPES, malnet_files

FAMILIES = {"addisplay": "kuguo", "adware": "airpush", "benign": "benign", "downloader": "jiagu",
            "trojan": "artemis"}
PER_TYPE = 4  # 2 train, 1 val, 1 test


def _edges(rng, n: int):
    src = rng.integers(1, n, 3 * n)
    dst = (src + rng.integers(1, n - 1, 3 * n)) % n
    dst[dst == 0] = 1  # node 0 stays isolated
    chain = np.stack([np.arange(1, n - 1), np.arange(2, n)], axis=1)  # every node 1..n-1 is called or calls
    pairs = np.concatenate([np.stack([src, dst], axis=1), chain, [[n, n], [2, 2], [3, 4], [3, 4]]])  # n: loop only
    return pairs


def write_malnet_fixture(data_dir: Path, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    files = malnet_files(data_dir)
    split = {"train": [], "val": [], "test": []}
    graphs = {}
    for t in TYPES:
        folder = files["graphs"] / t / FAMILIES[t]
        folder.mkdir(parents=True, exist_ok=True)
        for i in range(PER_TYPE):
            sha = hashlib.sha256(f"{t}{i}{seed}".encode()).hexdigest().upper()
            pairs = _edges(rng, int(rng.integers(6, 12)))
            header = "# Directed graph\n# Android function call graph\n# Nodes: x Edges: y\n# FromNodeId\tToNodeId\n#\n"
            (folder / f"{sha}.edgelist").write_text(header + "".join(f"{a}\t{b}\n" for a, b in pairs))
            graphs[sha] = (pairs, TYPES.index(t))
            split["train" if i < 2 else "val" if i == 2 else "test"].append(f"{t}/{FAMILIES[t]}/{sha}")
    files["split"].mkdir(parents=True, exist_ok=True)
    for part, entries in split.items():
        entries = list(np.asarray(entries)[rng.permutation(len(entries))])  # not in type order
        split[part] = entries
        (files["split"] / f"{part}.txt").write_text("".join(e + "\n" for e in entries))
    return {"graphs": graphs, "split": split, "files": files}
