"""ogbg-code2: predict a Python method's name (its subtokens) from its AST, as GraphGPS prepares it.

OGB's DGL loader (:mod:`.graphprop`) gives each AST as a graph whose nodes
are in DFS order with ``ndata['feat']`` (N, 2) (node type, node attribute),
``node_is_attributed``, ``node_dfs_order`` and ``node_depth`` (N, 1), AST
edges parent -> child, and the label: the method name's subtokens. GraphGPS
(``master_loader.preformat_OGB_Graph`` with OGB's ``examples/graphproppred/code2``
utilities) then:

* keeps the first 1,000 nodes of a larger AST and the edges among them
  (``clip_graphs_to_size``);
* adds the inverse AST edges, a "next token" edge between consecutive
  attributed nodes (in node order) and its inverse (``augment_edge``):
  ``edata['feat']`` (E, 2) int64 is (is next-token edge, is inverse);
* builds the vocabulary from the training split's names: the 5,000 most
  frequent subtokens (ties in order of first appearance) get ids 0..4,999,
  ``__UNK__`` 5,000 and ``__EOS__`` 5,001 (``get_vocab_mapping``);
* trains on the first 5 subtokens as ids, padded with ``__EOS__`` (``encode_seq_to_arr``).

Our graphs carry ``ndata['feat']`` (N, 3) int64 (type, attribute, depth; the
``ast`` encoder caps the depth at 20, GraphGPS's ``ASTNodeEncoder``) and the
edge features above (the ``embedding`` encoder with vocabularies [2, 2] is
GraphGPS's ``ASTEdgeEncoder``). A graph's label row (float32, one width for
the dataset) holds the 5 training ids, then the whole reference name as ids
in a dataset-wide vocabulary (the training vocabulary, ``__UNK__``,
``__EOS__``, then every other subtoken) padded with NaN: the F1 metric
compares predictions with the whole reference name, as OGB's ``Evaluator``
does with strings (a predicted ``__UNK__`` never matches a reference subtoken).
"""
from __future__ import annotations

import os
from collections import Counter
from typing import Dict, List, Sequence, Tuple, Union

import dgl
import numpy as np
import torch

from ..dataset import DatasetSplits
from ..errors import DataError
from ..options import LoadOptions
from .graphprop import OGBG, ogbg_root, parts_plan, read_ogbg, read_split, split_parts, where_files_go

PathLike = Union[str, os.PathLike]

NUM_VOCAB = 5_000  # GraphGPS's num_vocab
MAX_SEQ_LEN = 5  # GraphGPS's max_seq_len
SIZE_LIMIT = 1_000  # GraphGPS's clip_graphs_to_size limit for code2
UNK, EOS = "__UNK__", "__EOS__"
#: GraphGPS's ASTNodeEncoder vocabularies: node types, node attributes, depths 0..20.
AST_VOCAB_SIZES = [98, 10_030, 21]
MAX_DEPTH = 20


def vocabulary(sequences: Sequence[Sequence[str]], num_vocab: int = NUM_VOCAB) -> Dict[str, int]:
    """GraphGPS's ``get_vocab_mapping`` -> vocab2idx: the ``num_vocab`` most frequent subtokens (ties by first
    appearance) get ids 0, 1, ...; ``__UNK__`` is ``num_vocab`` and ``__EOS__`` ``num_vocab + 1`` (also when
    fewer subtokens exist, as in GraphGPS; the sequence head always has ``num_vocab + 2`` outputs)."""
    counts: Counter = Counter()
    order: List[str] = []
    for seq in sequences:
        for word in seq:
            if word not in counts:
                order.append(word)
            counts[word] += 1
    ranked = np.argsort(-np.array([counts[w] for w in order], dtype=np.int64), kind="stable")[:num_vocab]
    vocab2idx = {order[i]: rank for rank, i in enumerate(ranked)}
    vocab2idx[UNK], vocab2idx[EOS] = num_vocab, num_vocab + 1
    return vocab2idx


def encode_sequence(seq: Sequence[str], vocab2idx: Dict[str, int], max_seq_len: int = MAX_SEQ_LEN) -> List[int]:
    """GraphGPS's ``encode_seq_to_arr``: the first ``max_seq_len`` subtokens as ids (``__UNK__`` if unknown),
    padded with ``__EOS__``."""
    padded = list(seq[:max_seq_len]) + [EOS] * max(0, max_seq_len - len(seq))
    return [vocab2idx.get(word, vocab2idx[UNK]) for word in padded]


def clip_and_augment(graph: dgl.DGLGraph, size_limit: int = SIZE_LIMIT) -> dgl.DGLGraph:
    """GraphGPS's ``clip_graphs_to_size`` then ``augment_edge`` on one OGB code2 graph -> our graph."""
    n = min(graph.num_nodes(), size_limit)
    src, dst = graph.edges()
    inside = (src < n) & (dst < n)
    src, dst = src[inside], dst[inside]
    attributed = torch.nonzero(graph.ndata["is_attributed"][:n].reshape(-1) == 1).reshape(-1)
    next_src, next_dst = attributed[:-1], attributed[1:]
    parts = [(src, dst, (0, 0)), (dst, src, (0, 1)), (next_src, next_dst, (1, 0)), (next_dst, next_src, (1, 1))]
    out = dgl.graph((torch.cat([p[0] for p in parts]), torch.cat([p[1] for p in parts])), num_nodes=n)
    out.edata["feat"] = torch.cat([torch.tensor(p[2], dtype=torch.int64).expand(len(p[0]), 2) for p in parts])
    feat = graph.ndata["feat"][:n].long()
    depth = graph.ndata["depth"][:n].reshape(-1, 1).long()
    out.ndata["feat"] = torch.cat([feat, depth], dim=1)
    return out


def label_rows(sequences: Sequence[Sequence[str]], vocab2idx: Dict[str, int]) -> Tuple[torch.Tensor, List]:
    """(G, MAX_SEQ_LEN + R) float32 label rows (see the module docstring) and the dataset-wide vocabulary
    (a list: id -> subtoken; None for the training ids no subtoken has)."""
    full: List = [None] * (max(vocab2idx.values()) + 1)
    for word, i in vocab2idx.items():
        full[i] = word
    full_ids = dict(vocab2idx)
    for seq in sequences:
        for word in seq:
            if word not in full_ids:
                full_ids[word] = len(full)
                full.append(word)
    width = max((len(seq) for seq in sequences), default=0)
    rows = torch.full((len(sequences), MAX_SEQ_LEN + width), float("nan"))
    for i, seq in enumerate(sequences):
        rows[i, :MAX_SEQ_LEN] = torch.tensor(encode_sequence(seq, vocab2idx), dtype=torch.float32)
        rows[i, MAX_SEQ_LEN:MAX_SEQ_LEN + len(seq)] = torch.tensor([full_ids[w] for w in seq], dtype=torch.float32)
    return rows, full


def load_code2(options: LoadOptions) -> DatasetSplits:
    """ogbg-code2's project split as GraphGPS prepares it (see the module docstring), from ``options.data_dir``,
    with the encodings ``options`` ask for (none by default; ``'none'`` Laplacian) and its limits.

    Returns
    -------
    DatasetSplits
        ``num_classes`` = 5,002 (the training vocabulary, ``__UNK__``, ``__EOS__``);
        ``vocabulary`` attribute: the dataset-wide subtokens, index = id in the label rows (None: unused id).
    """
    spec, data_dir = OGBG["ogbg-code2"], options.data_dir
    dataset = read_ogbg(spec.name, data_dir)
    root = ogbg_root(spec.name, data_dir)
    split = read_split(spec, dataset, root)
    sequences = [list(map(str, seq)) for seq in dataset.labels]
    if len(sequences) != len(dataset.graphs):
        raise DataError(f"{spec.name}: {root} holds {len(sequences)} names for {len(dataset.graphs)} graphs; "
                        f"{where_files_go(spec.name, data_dir)}")
    for key in ("is_attributed", "depth"):
        if key not in dataset.graphs[0].ndata:
            raise DataError(f"{spec.name}: {root} has no node_{key}.csv.gz data; {where_files_go(spec.name, data_dir)}")
    vocab2idx = vocabulary([sequences[i] for i in split["train"].tolist()], NUM_VOCAB)
    labels, full_vocab = label_rows(sequences, vocab2idx)
    parts = split_parts(dataset.graphs, split, labels, root, lambda graphs: [clip_and_augment(g) for g in graphs],
                        options)
    splits = DatasetSplits(train=parts["train"], val=parts["val"], test=parts["test"], num_classes=NUM_VOCAB + 2,
                           name=spec.name, source=f"OGB {spec.name} read by ogb.graphproppred.DglGraphPropPredDataset "
                                                  f"from {root}, prepared as GraphGPS does",
                           encoding_plan=parts_plan(root))
    splits.vocabulary = full_vocab
    return splits
