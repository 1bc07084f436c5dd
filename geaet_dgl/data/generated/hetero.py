"""Generated heterographs: a task that needs another node type, and random schemas for benchmarks.

:func:`author_paper_graphs`: graphs of 4 to 8 papers and their authors.
Each paper has 1 to 3 authors of its own, papers cite papers. A paper's
features are noise; its class is the sign of its authors' first feature, and
half the papers of each graph are in each class. So a
model can only label a paper through the ``writes`` edges: without them it
is at chance (the tests check both).

:func:`random_heterographs`: graphs with ``num_ntypes`` node types and
``num_etypes`` relations between random type pairs, float features on every
type, for timing the heterograph model against its schema size.

Example
-------
>>> graphs, labels = author_paper_graphs(4, seed=0)
>>> graphs[0].ntypes, labels[0].shape == (graphs[0].num_nodes('paper'),)
(['author', 'paper'], True)
"""
from __future__ import annotations

from typing import List, Tuple

import dgl
import torch

WRITES = ("author", "writes", "paper")
CITES = ("paper", "cites", "paper")


def author_paper_graphs(num_graphs: int, seed: int = 0, feats: int = 4, without_writes: bool = False
                        ) -> Tuple[List[dgl.DGLGraph], List[torch.Tensor]]:
    """``num_graphs`` author/paper graphs and each graph's (P,) int64 paper classes.

    ``nodes['author'].data['feat']`` and ``nodes['paper'].data['feat']`` are
    (n, ``feats``) float. ``without_writes`` keeps the schema but drops every
    ``writes`` edge (the control: the label is then out of reach).
    """
    gen = torch.Generator().manual_seed(seed)
    graphs, labels = [], []
    for _ in range(num_graphs):
        papers = 2 * int(torch.randint(2, 5, (1,), generator=gen))
        label = torch.arange(papers) % 2
        label = label[torch.randperm(papers, generator=gen)]
        per_paper = torch.randint(1, 4, (papers,), generator=gen)
        paper_ids = torch.repeat_interleave(torch.arange(papers), per_paper)  # each author writes one paper
        authors = len(paper_ids)
        author_ids = torch.randperm(authors, generator=gen)
        author_feat = torch.randn(authors, feats, generator=gen)
        # The first feature's sign is the paper's class: half the papers of a graph are positive, so the
        # graph's authors as a whole say nothing about any one paper.
        author_feat[author_ids, 0] = author_feat[author_ids, 0].abs() * (2.0 * label[paper_ids] - 1.0)
        labels.append(label)
        if without_writes:
            author_ids, paper_ids = author_ids[:0], paper_ids[:0]
        cites = (torch.randint(0, papers, (papers,), generator=gen), torch.randint(0, papers, (papers,), generator=gen))
        g = dgl.heterograph({WRITES: (author_ids, paper_ids), CITES: cites},
                            num_nodes_dict={"author": authors, "paper": papers})
        g.nodes["author"].data["feat"] = author_feat
        g.nodes["paper"].data["feat"] = torch.randn(papers, feats, generator=gen)
        graphs.append(g)
    return graphs, labels


def random_heterographs(num_graphs: int, num_ntypes: int, num_etypes: int, nodes_per_type: int = 20,
                        edges_per_relation: int = 40, feats: int = 8, seed: int = 0) -> List[dgl.DGLGraph]:
    """Graphs of ``num_ntypes`` node types (``t0``, ``t1``, ...) and ``num_etypes`` relations ``r0``, ``r1``, ...

    Relation ``k`` joins types ``k mod T`` and ``(k + 1 + k // T) mod T``; every
    type has (``nodes_per_type``, ``feats``) float features, every relation
    ``edges_per_relation`` random edges and (E_r, ``feats``) features.
    """
    gen = torch.Generator().manual_seed(seed)
    relations = [(f"t{k % num_ntypes}", f"r{k}", f"t{(k + 1 + k // num_ntypes) % num_ntypes}")
                 for k in range(num_etypes)]
    graphs = []
    for _ in range(num_graphs):
        data = {rel: (torch.randint(0, nodes_per_type, (edges_per_relation,), generator=gen),
                      torch.randint(0, nodes_per_type, (edges_per_relation,), generator=gen)) for rel in relations}
        g = dgl.heterograph(data, num_nodes_dict={f"t{t}": nodes_per_type for t in range(num_ntypes)})
        for ntype in g.ntypes:
            g.nodes[ntype].data["feat"] = torch.randn(nodes_per_type, feats, generator=gen)
        for rel in g.canonical_etypes:
            g.edges[rel].data["feat"] = torch.randn(edges_per_relation, feats, generator=gen)
        graphs.append(g)
    return graphs
