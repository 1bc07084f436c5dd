"""PATTERN and CLUSTER (Benchmarking GNNs' SBM node-classification tasks) through DGL's loaders.

Loading
-------
:func:`load_sbm` runs DGL's own ``PATTERNDataset`` / ``CLUSTERDataset`` with
``raw_dir=data_dir``; DGL reads ``data_dir/<name>_<hash of its URL>/
SBM_PATTERN_{train,valid,test}.bin`` (``CLUSTER_{...}.bin``), files written by
``dgl.save_graphs``. Their ``download`` is replaced by an error, so nothing
ever reaches for the network: the files must be there (unpack DGL's
``SBM_PATTERN.zip`` / ``SBM_CLUSTER.zip`` into the folder
:func:`sbm_files` names), or be generated (``generate=True``).

Inputs as the reference reads them (PyG ``GNNBenchmarkDataset``): node
features one-hot, ``ndata['feat']`` (N, 3) for PATTERN (the random signal in
{0, 1, 2}) and (N, 7) for CLUSTER (0 = unlabelled, c + 1 = the one labelled
node of cluster c); ``edata['feat']`` (E, 1) as DGL stores it; per-node labels
(PATTERN: 1 if the node belongs to the planted pattern; CLUSTER: its cluster
0..5), so the splits have ``level='node'``.

Generation
----------
:func:`generate_pattern_graph` / :func:`generate_cluster_graph` follow the
Benchmarking-GNNs generation notebooks (Dwivedi et al. 2020, Sec. C.5/C.6):

* PATTERN: an SBM ``G`` of 5 communities, each of a size drawn uniformly
  from ``randint(5, 35)`` (5..34), edge probability p = 0.5 inside a community
  and q = 0.35 between; node signal uniform in {0, 1, 2}. 100 patterns
  ``P`` of 20 nodes are drawn once per dataset (edges with p_P = 0.5, signal in
  {0, 1, 2}); each graph appends one of them, chosen uniformly, and links
  every (pattern, G) node pair with probability q_P = 0.5. Nodes are then
  shuffled. Label 1 for pattern nodes, 0 otherwise.
* CLUSTER: an SBM of 6 clusters of sizes ``randint(5, 35)``, p = 0.55,
  q = 0.25; all node features 0 except one node per cluster, chosen
  uniformly, whose feature is its cluster index + 1; label = cluster index;
  nodes shuffled.

Generated files are written in DGL's format and place, with a
``geaet_build.json`` note, and then read back by DGL like published ones.
"""
from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Tuple, Union

import dgl
import numpy as np
import torch
from dgl.data import CLUSTERDataset, PATTERNDataset

from ...atomic import atomic_write
from ..dataset import DatasetSplits, GraphDataset
from ..encodings.apply import EncodingPlan, beside
from ..errors import DataError
from ..options import LoadOptions

log = logging.getLogger(__name__)

PathLike = Union[str, os.PathLike]
DGL_MODES = {"train": "train", "val": "valid", "test": "test"}
BUILD_INFO = "geaet_build.json"


@dataclass(frozen=True)
class SBMParams:
    """Parameters of one Benchmarking-GNNs SBM task."""

    num_communities: int
    size_min: int  # inclusive
    size_max: int  # exclusive (numpy randint)
    p: float
    q: float
    vocab_size: int = 3
    num_patterns: int = 0
    pattern_size: int = 0
    p_pattern: float = 0.0
    q_pattern: float = 0.0


PATTERN_PARAMS = SBMParams(num_communities=5, size_min=5, size_max=35, p=0.5, q=0.35, vocab_size=3,
                           num_patterns=100, pattern_size=20, p_pattern=0.5, q_pattern=0.5)
CLUSTER_PARAMS = SBMParams(num_communities=6, size_min=5, size_max=35, p=0.55, q=0.25)

#: name -> (DGL class, file name pattern, number of classes, node feature width, benchmark split sizes)
SBM_TASKS = {
    "pattern": (PATTERNDataset, "SBM_PATTERN_{mode}.bin", 2, 3, {"train": 10000, "val": 2000, "test": 2000}),
    "cluster": (CLUSTERDataset, "CLUSTER_{mode}.bin", 6, 7, {"train": 10000, "val": 1000, "test": 1000}),
}


def _offline(cls):
    """DGL's dataset class ``cls`` whose download raises instead of reaching the network."""

    class Offline(cls):
        def download(self):  # DGL hook
            raise DataError(f"{self.name} files are missing under {self.raw_path}; place DGL's files there "
                            "or generate them (--set data.generate=true)")

    Offline.__name__ = f"Offline{cls.__name__}"
    return Offline


def _probe(cls):
    class Probe(cls):
        def _load(self):  # only asks DGL for its paths
            pass

    return Probe


def sbm_files(name: str, data_dir: PathLike) -> Dict[str, Path]:
    """``{'train'|'val'|'test': path}`` of the files DGL reads for ``name`` under ``data_dir``."""
    cls, pattern, *_ = SBM_TASKS[name]
    probe = _probe(cls)(raw_dir=str(Path(data_dir).expanduser().resolve()))
    folder = Path(probe.save_path)
    return {split: folder / pattern.format(mode=mode) for split, mode in DGL_MODES.items()}


def _sbm_adjacency(rng: np.random.Generator, community: np.ndarray, p: float, q: float) -> np.ndarray:
    """Symmetric 0/1 adjacency: edge i~j with probability p (same community) or q, no self-loops."""
    n = community.shape[0]
    prob = np.where(community[:, None] == community[None, :], p, q)
    upper = np.triu(rng.random((n, n)) < prob, k=1)
    return upper | upper.T


def _community_sizes(rng: np.random.Generator, params: SBMParams) -> np.ndarray:
    return rng.integers(params.size_min, params.size_max, size=params.num_communities)


def _to_graph(adj: np.ndarray, feat: np.ndarray, label: np.ndarray) -> dgl.DGLGraph:
    """DGL's stored layout: both edge directions, ``feat`` int64 (N,), ``label`` int16 (N,), edge feat (E, 1)."""
    src, dst = np.nonzero(adj)
    g = dgl.graph((torch.from_numpy(src.astype(np.int64)), torch.from_numpy(dst.astype(np.int64))),
                  num_nodes=adj.shape[0])
    g.ndata["feat"] = torch.from_numpy(feat.astype(np.int64))
    g.ndata["label"] = torch.from_numpy(label.astype(np.int16))
    g.edata["feat"] = torch.ones(g.num_edges(), 1)
    return g


def make_patterns(rng: np.random.Generator, params: SBMParams = PATTERN_PARAMS) -> List[Tuple[np.ndarray, np.ndarray]]:
    """The ``num_patterns`` patterns of a PATTERN dataset: ``(adjacency (20, 20), signal (20,))`` each."""
    out = []
    for _ in range(params.num_patterns):
        adj = _sbm_adjacency(rng, np.zeros(params.pattern_size, np.int64), params.p_pattern, params.p_pattern)
        out.append((adj, rng.integers(0, params.vocab_size, size=params.pattern_size)))
    return out


def generate_pattern_graph(rng: np.random.Generator, patterns: List[Tuple[np.ndarray, np.ndarray]],
                           params: SBMParams = PATTERN_PARAMS) -> dgl.DGLGraph:
    """One PATTERN graph (see the module docstring); ``label`` 1 on the planted pattern's nodes."""
    community = np.repeat(np.arange(params.num_communities), _community_sizes(rng, params))
    base = _sbm_adjacency(rng, community, params.p, params.q)
    signal = rng.integers(0, params.vocab_size, size=community.shape[0])
    p_adj, p_signal = patterns[rng.integers(len(patterns))]
    n, m = base.shape[0], p_adj.shape[0]
    link = rng.random((m, n)) < params.q_pattern
    adj = np.block([[base, link.T], [link, p_adj]])
    feat = np.concatenate([signal, p_signal])
    label = np.concatenate([np.zeros(n, np.int64), np.ones(m, np.int64)])
    order = rng.permutation(n + m)
    return _to_graph(adj[np.ix_(order, order)], feat[order], label[order])


def generate_cluster_graph(rng: np.random.Generator, params: SBMParams = CLUSTER_PARAMS) -> dgl.DGLGraph:
    """One CLUSTER graph: ``label`` = cluster, ``feat`` = cluster + 1 on one random node per cluster, else 0."""
    community = np.repeat(np.arange(params.num_communities), _community_sizes(rng, params))
    adj = _sbm_adjacency(rng, community, params.p, params.q)
    feat = np.zeros(community.shape[0], np.int64)
    for c in range(params.num_communities):
        members = np.flatnonzero(community == c)
        feat[members[rng.integers(members.shape[0])]] = c + 1
    order = rng.permutation(community.shape[0])
    return _to_graph(adj[np.ix_(order, order)], feat[order], community[order])


def generate_sbm_files(name: str, data_dir: PathLike, sizes: Dict[str, int], seed: int = 0) -> Dict[str, Path]:
    """Write generated ``name`` splits of ``sizes`` graphs in DGL's format and place; return the paths."""
    if name not in SBM_TASKS:
        raise DataError(f"no SBM generator for {name!r}; choose pattern or cluster")
    files = sbm_files(name, data_dir)
    rng = np.random.default_rng(seed)
    patterns = make_patterns(rng) if name == "pattern" else None
    for split, path in files.items():
        graphs = [generate_pattern_graph(rng, patterns) if name == "pattern" else generate_cluster_graph(rng)
                  for _ in range(int(sizes[split]))]
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp.bin")
        dgl.save_graphs(str(tmp), graphs)
        os.replace(tmp, path)
    info = {"state": "complete", "source": "geaet_dgl SBM generator", "seed": seed,
            "sizes": {k: int(v) for k, v in sizes.items()}}
    with atomic_write(files["train"].parent / BUILD_INFO, "w") as handle:
        json.dump(info, handle, indent=2, sort_keys=True)
    log.info("generated %s %s into %s", name, info["sizes"], files["train"].parent)
    return files


def sbm_present(name: str, data_dir: PathLike) -> bool:
    """All three split files of ``name`` are under ``data_dir``."""
    return all(p.is_file() for p in sbm_files(name, data_dir).values())


def one_hot_inputs(graphs: List[dgl.DGLGraph], width: int, name: str, split: str) -> torch.Tensor:
    """Replace ``feat`` by its one-hot (N, width) float32 and pop ``label``; -> node labels concatenated."""
    labels = []
    for g in graphs:
        feat = g.ndata["feat"].long().reshape(-1)
        if feat.numel() and (int(feat.min()) < 0 or int(feat.max()) >= width):
            raise DataError(f"{name} {split}: node feature values outside 0..{width - 1}; the files are not "
                            f"{name.upper()} data")
        g.ndata["feat"] = torch.nn.functional.one_hot(feat, width).float()
        labels.append(g.ndata.pop("label").long().reshape(-1))
        if "feat" in g.edata:
            g.edata["feat"] = g.edata["feat"].float().reshape(g.num_edges(), -1)
    return torch.cat(labels) if labels else torch.zeros(0, dtype=torch.int64)


#: The Laplacian of this dataset's LapPE unless ``LoadOptions.laplacian_norm`` says otherwise (the reference config's;
#: :data:`~geaet_dgl.data.registry.LAPLACIAN_NORM` must agree: ``predict`` encodes new graphs with it).
DEFAULT_LAPLACIAN_NORM = "sym"


def load_sbm(name: str, options: LoadOptions) -> DatasetSplits:
    """PATTERN or CLUSTER splits through DGL's loader (offline).

    Parameters
    ----------
    name : {'pattern', 'cluster'}
    options : LoadOptions
        ``data_dir``: DGL's ``raw_dir``. ``pe_k`` (default 8): Laplacian eigenpairs per graph
        (``ndata['lap_pe']``/``['lap_eigval']``); ``rwse_k``: also ``ndata['rwse']`` (N, rwse_k) (16 for
        the PATTERN preset). ``limit_train``, ``limit_val``, ``limit_test``: first ``n`` graphs of a split;
        also the sizes generated. ``generate``: generate the files with the benchmark's SBM parameters
        when absent (sizes: the limits, else the benchmark's 10k/2k/2k or 10k/1k/1k). ``seed``: generator
        seed (default 0).

    Returns
    -------
    DatasetSplits
        ``level='node'`` splits: ``(graph, (N,) int64 labels)``.
    """
    if name not in SBM_TASKS:
        raise DataError(f"unknown SBM dataset {name!r}; choose pattern or cluster")
    cls, _, num_classes, width, full_sizes = SBM_TASKS[name]
    data_dir, generate, seed = options.data_dir, options.generate, options.or_default("seed", 0)
    files = sbm_files(name, data_dir)
    limits = options.limit_of
    info_path = files["train"].parent / BUILD_INFO
    wanted = {split: limits[split] or full_sizes[split] for split in files}
    if not all(p.is_file() for p in files.values()):
        if not generate:
            missing = ", ".join(str(p) for p in files.values() if not p.is_file())
            raise DataError(f"{name} data is missing ({missing}); unpack DGL's SBM_{name.upper()}.zip into "
                            f"{files['train'].parent}, or build it offline with --set data.generate=true")
        generate_sbm_files(name, data_dir, wanted, seed=seed)
    elif info_path.is_file():  # an earlier, possibly smaller, generated set
        built = json.loads(info_path.read_text()).get("sizes", {})
        short = [split for split in files if built.get(split, 0) < wanted[split]]
        if short and generate:
            log.info("generated %s set %s is smaller than asked (%s); generating again", name, built, wanted)
            generate_sbm_files(name, data_dir, {s: max(wanted[s], built.get(s, 0)) for s in files}, seed=seed)
        elif short:
            log.warning("generated %s set has only %s graphs (asked for %s); pass --set data.generate=true to "
                        "generate more", name, built, wanted)
    source = (f"generated SBM graphs (geaet_dgl) in {files['train'].parent}" if info_path.is_file()
              else f"DGL files in {files['train'].parent}")
    offline = _offline(cls)
    splits, caches = {}, {}
    for split, mode in DGL_MODES.items():
        try:
            data = offline(mode=mode, raw_dir=str(Path(data_dir).expanduser().resolve()))
        except DataError:
            raise
        except Exception as exc:  # DGL's load_graphs on a bad file
            raise DataError(f"DGL could not read {files[split]} ({type(exc).__name__}: {exc}); delete it and "
                            "place or generate the data again") from exc
        count = len(data) if limits[split] is None else min(limits[split], len(data))
        graphs = [data[i] for i in range(count)]
        labels = one_hot_inputs(graphs, width, name, split)
        caches[split] = beside(files[split], f"{mode}")
        splits[split] = GraphDataset(graphs, labels, level="node")
    return DatasetSplits(train=splits["train"], val=splits["val"], test=splits["test"], num_classes=num_classes,
                         name=name, source=source,
                         encoding_plan=EncodingPlan(caches, default_k=8, default_norm=DEFAULT_LAPLACIAN_NORM))
