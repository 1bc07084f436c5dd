"""What the benchmark's synthetic graphs of each dataset look like: one :class:`DatasetShape` per dataset.

A row names a family of :mod:`geaet_dgl.data.generated.families` and the sizes, vocabularies and targets it is called with,
taken from the published statistics of the dataset (mean nodes and edges per graph, feature widths,
classes) and from what our loader of it gives (the schema: :mod:`geaet_dgl.data.schema`). The
families built before this table (MNIST / CIFAR10 kNN superpixels, PATTERN / CLUSTER SBMs,
Peptides, ZINC and molhiv molecules, VOC / COCO regions) keep their own rows in :mod:`.inputs`
and :data:`MOLECULES` here.

One-graph node sets are generated at their published size (nodes, directed edges, feature width,
classes, split fractions), except that no graph exceeds :data:`NODE_GRAPH_MAX_NODES` nodes:
ogbn-products (2,449,029 nodes, 123.7M directed edges) is scaled down to that many nodes at its
average degree (50.5), about 10.1M edges.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Optional, Tuple

import numpy as np

from geaet_dgl.config.presets import NODE_RECIPE_PRESETS
from geaet_dgl.data import GraphDataset
from geaet_dgl.data.nodes.node_sets import NODE_SETS
from geaet_dgl.data.nodes.ogbn import OGBN
from geaet_dgl.data.schema import CODE2_NODE_VOCAB, CODE2_SEQ_LEN, CODE2_VOCAB, OGB_ATOM_VOCAB, OGB_BOND_VOCAB
from geaet_dgl.data.generated import families

#: the largest one-graph node set the benchmark generates (a larger set is scaled down at its average degree)
NODE_GRAPH_MAX_NODES = 200_000


@dataclass(frozen=True)
class DatasetShape:
    """One dataset's synthetic graphs: ``family`` (a function of :mod:`geaet_dgl.data.generated.families`) called with ``params``.

    ``level``: ``graph``, ``node`` (labels on the nodes of many graphs), ``link`` or ``transductive`` (one
    graph with masks). ``note``: the sizes, as the docs state them. ``distinct``: at most this many different
    graphs, repeated to fill the batches (graphs whose encodings take seconds each: MalNet-Tiny's 1,400-node
    Laplacian eigenvectors); None: every graph is new.
    """

    name: str
    family: str
    params: Dict[str, object] = field(default_factory=dict, hash=False, compare=False)
    level: str = "graph"
    note: str = ""
    distinct: Optional[int] = None

    def generate(self, num_graphs: int, seed: int = 0, max_nodes: Optional[int] = None) -> GraphDataset:
        """``num_graphs`` graphs (one for a one-graph set), no larger than ``max_nodes`` nodes each if given."""
        rng = np.random.default_rng(seed)
        params = dict(self.params)
        if self.family == "one_node_graph":
            return _one_graph(rng, params, max_nodes)
        return getattr(families, self.family)(rng, num_graphs, max_nodes=max_nodes, **params)


def _one_graph(rng: np.random.Generator, params: dict, max_nodes: Optional[int]) -> GraphDataset:
    """A one-graph set scaled to ``max_nodes`` (and :data:`NODE_GRAPH_MAX_NODES`) at its average degree."""
    nodes, edges = params.pop("num_nodes"), params.pop("num_edges")
    cap = min(NODE_GRAPH_MAX_NODES, max_nodes or NODE_GRAPH_MAX_NODES)
    if nodes > cap:
        edges, nodes = int(edges * cap / nodes), cap
    return families.one_node_graph(rng, nodes, edges, **params)


#: molecule datasets -> (atoms min, max, ring closures per atom, atom vocabularies, bond vocabularies, target,
#: tasks): the mean of min and max is the dataset's mean atoms per graph
MOLECULES: Dict[str, tuple] = {
    "peptides-func": (100, 200, 1 / 30, OGB_ATOM_VOCAB, OGB_BOND_VOCAB, "multilabel", 10),
    "peptides-struct": (100, 200, 1 / 30, OGB_ATOM_VOCAB, OGB_BOND_VOCAB, "regression", 11),
    "zinc": (9, 37, 1 / 8, (28,), (4,), "regression", 1),
    "ogbg-molhiv": (6, 60, 1 / 10, OGB_ATOM_VOCAB, OGB_BOND_VOCAB, "binary", 1),
    "ogbg-molpcba": (6, 46, 1 / 10, OGB_ATOM_VOCAB, OGB_BOND_VOCAB, "multilabel-missing", 128),
    "pcqm4mv2": (4, 24, 1 / 8, OGB_ATOM_VOCAB, OGB_BOND_VOCAB, "regression-column", 1),
    "pcqm-contact": (10, 50, 1 / 15, OGB_ATOM_VOCAB, OGB_BOND_VOCAB, "contacts", 1),
}
for _name in ("pcqm4mv2-subset", "pcqm4mv2-inference"):
    MOLECULES[_name] = MOLECULES["pcqm4mv2"]

_MOLECULE_NOTES = {
    "ogbg-molpcba": "6-46 atoms (molpcba: mean 26.0), 128 {0, 1} tasks, about half missing (NaN)",
    "pcqm4mv2": "4-24 heavy atoms (PCQM4Mv2: mean 14.1), (G, 1) float HOMO-LUMO gaps",
    "pcqm-contact": "10-50 atoms with hydrogens (PCQM-Contact: mean 30.1), about one contact per 6 atoms, "
                    "(P, 2) pairs 3+ bonds apart, both directions",
}


def _molecule(name: str) -> DatasetShape:
    lo, hi, rings, atom_vocab, bond_vocab, target, tasks = MOLECULES[name]
    return DatasetShape(name, "molecules", dict(atoms=(lo, hi), rings_per_atom=rings, atom_vocab=atom_vocab,
                                                bond_vocab=bond_vocab, target=target, tasks=tasks),
                        level="link" if target == "contacts" else "graph",
                        note=_MOLECULE_NOTES.get(name) or _MOLECULE_NOTES.get(name.rsplit("-", 1)[0], ""))


#: published homophily family of each node set (edges inside a class: about 0.8, or about 0.2)
_HETEROPHILOUS = {"cornell", "texas", "wisconsin", "actor", "chameleon", "squirrel", "roman-empire", "amazon-ratings",
                  "minesweeper", "tolokers", "questions"}
#: node sets whose features are dense vectors (embeddings, counts); the others are bag-of-words
_DENSE_FEATURES = {"wikics", "roman-empire", "amazon-ratings", "minesweeper", "tolokers", "questions"}
#: split fractions of each family (Planetoid's and Wiki-CS's from their published node counts)
_SPLIT_FRACTIONS = {"geom-gcn": (0.48, 0.32, 0.20), "heterophilous": (0.5, 0.25, 0.25),
                    "gnn-benchmark": (0.6, 0.2, 0.2)}


def _node_set(name: str) -> DatasetShape:
    spec = NODE_SETS[name]
    edges = spec.edges * (2 if spec.family == "geom-gcn" else 1)  # geom-gcn's files list each edge one way
    if spec.family == "planetoid":
        split = (20 * spec.classes / spec.nodes, 500 / spec.nodes, 1000 / spec.nodes)
    elif spec.family == "wikics":
        split = (580 / spec.nodes, 1769 / spec.nodes, 5847 / spec.nodes)
    else:
        split = _SPLIT_FRACTIONS[spec.family]
    dense = name in _DENSE_FEATURES
    homophilous = name not in _HETEROPHILOUS
    params = dict(num_nodes=spec.nodes, num_edges=edges, feats=spec.features, classes=spec.classes, split=split,
                  homophily=0.8 if homophilous else 0.2, features="dense" if dense else "words",
                  row_norm=homophilous and not dense)
    return DatasetShape(name, "one_node_graph", params, level="transductive",
                        note=f"{spec.nodes:,} nodes, {edges:,} directed edges, {spec.features} "
                             f"{'dense' if dense else 'bag-of-words'} features, {spec.classes} classes")


def _ogbn(name: str, directed_edges: int, feats: int) -> DatasetShape:
    spec = OGBN[name]
    split = tuple(n / spec.num_nodes for n in spec.sizes)
    params = dict(num_nodes=spec.num_nodes, num_edges=directed_edges, feats=feats, classes=spec.num_classes,
                  split=split, homophily=0.65, features="dense")
    nodes = min(spec.num_nodes, NODE_GRAPH_MAX_NODES)
    scaled = "" if nodes == spec.num_nodes else f" (generated: {nodes:,} nodes at its average degree)"
    return DatasetShape(name, "one_node_graph", params, level="transductive",
                        note=f"{spec.num_nodes:,} nodes, {directed_edges:,} directed edges{scaled}, {feats} dense "
                             f"features, {spec.num_classes} classes")


DATASET_SHAPES: Dict[str, DatasetShape] = {shape.name: shape for shape in (
    *(_molecule(name) for name in MOLECULES),
    DatasetShape("ogbg-ppa", "random_float_edge_graphs",
                 dict(nodes=(186, 300), degree=18.6, edge_feats=7, num_classes=37),
                 note="186-300 nodes (ppa: mean 243.4, 50-300), 18.6 directed edges per node, (N, 1) zero node "
                      "input, (E, 7) float edge features, 37 classes"),
    DatasetShape("ogbg-code2", "ast_graphs",
                 dict(nodes=(20, 230), node_vocab=CODE2_NODE_VOCAB[:2], vocab=CODE2_VOCAB, seq_len=CODE2_SEQ_LEN),
                 note="ASTs of 20-230 nodes (code2: mean 125.2) with the loader's AST, inverse and next-token "
                      "edges, (G, 5 + 5) label rows"),
    DatasetShape("malnet-tiny", "call_graphs", dict(nodes=(300, 2500), calls_per_function=2.03, num_classes=5),
                 note="call graphs of 300-2,500 functions (MalNet-Tiny: mean 1,410 nodes, 2,860 edges), "
                      "LocalDegreeProfile (N, 5), 5 classes; 8 different graphs, repeated", distinct=8),
    DatasetShape("tree", "tree_graphs", dict(depth=3),
                 note="TreeNeighbourMatch of radius 3 (15 nodes), the loader's own trees, 8 classes"),
    DatasetShape("geaet", "random_float_edge_graphs",
                 dict(nodes=(20, 60), degree=6.0, edge_feats=1, num_classes=2, node_feats=1),
                 note="your own graph files: random graphs of 20-60 nodes, 6 edges per node, one float node and "
                      "edge feature, 2 classes"),
    DatasetShape("geaet-node", "one_node_graph",
                 dict(num_nodes=10_000, num_edges=100_000, feats=1, classes=2, split=(0.6, 0.2, 0.2)),
                 level="transductive",
                 note="your own one-graph file: 10,000 nodes, 100,000 directed edges, one float feature, 2 classes"),
    *(DatasetShape(name, "one_node_graph",
                   dict(num_nodes=10_000, num_edges=100_000, feats=1, classes=2, split=(0.6, 0.2, 0.2)),
                   level="transductive", note=f"your own one-graph file with the {name} recipe: as geaet-node's")
      for name in NODE_RECIPE_PRESETS),
    *(_node_set(name) for name in NODE_SETS),
    _ogbn("ogbn-arxiv", 2 * 1_166_243, 128),
    _ogbn("ogbn-products", 123_718_280, 100),
)}


def shape_of(name: str) -> Optional[DatasetShape]:
    """The row of ``name`` (lower case), or None."""
    return DATASET_SHAPES.get(name.lower())


def one_graph_size(name: str) -> Tuple[int, int]:
    """(nodes, directed edges) a one-graph set is generated with (after :data:`NODE_GRAPH_MAX_NODES`)."""
    params = DATASET_SHAPES[name].params
    nodes, edges = params["num_nodes"], params["num_edges"]
    if nodes > NODE_GRAPH_MAX_NODES:
        edges, nodes = int(edges * NODE_GRAPH_MAX_NODES / nodes), NODE_GRAPH_MAX_NODES
    return nodes, edges


def distinct_graphs(name: str, num_graphs: int) -> int:
    """How many different graphs to generate for ``num_graphs`` of dataset ``name`` (see ``DatasetShape.distinct``)."""
    shape = DATASET_SHAPES.get(name.lower())
    return num_graphs if shape is None or shape.distinct is None else min(num_graphs, shape.distinct)


def repeat_graphs(data: GraphDataset, num_graphs: int) -> GraphDataset:
    """``data``'s graphs and labels cycled to ``num_graphs`` items (graph level; the graphs are shared, not copied)."""
    if len(data) >= num_graphs or data.level != "graph":
        return data
    order = [i % len(data) for i in range(num_graphs)]
    return GraphDataset([data.graphs[i] for i in order], data.labels[order])
