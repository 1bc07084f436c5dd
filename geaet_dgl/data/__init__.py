"""Data layer: every dataset as DGL graphs with positional encodings, split into train / val / test.

Layout
------
The shared core sits at the top of the package; everything else is a
sub-package of one kind, whose docstring says what its modules hold and where
their files come from.

The core, shared by every loader:

``dataset``              :class:`GraphDataset` (``(graph, label)`` pairs at graph, node or link
                         level), :class:`DatasetSplits`, the ``collate*`` functions, :func:`make_loader`
``graph_batch``          :func:`batch_graphs`: ``dgl.batch`` of our homogeneous graphs without its per-graph cost
``options``              :class:`~.options.LoadOptions`: the one argument every loader takes (limits,
                         encodings wanted, progress, workers, seed, data_dir, per-dataset extras)
``registry``             :func:`load_with` / :func:`load_dataset` (name -> loader) and the table
                         ``geaet-dgl datasets`` prints
``schema``               one :class:`DatasetSchema` row per dataset: widths, classes, metric, files (``--dry-run``)
``validation``           load-time checks (empty graphs, non-finite features, labels out of range)
``run_splits``           :func:`~.run_splits.load_splits`: the splits a run's data options name, with the
                         encodings its model reads and its feature transforms, checked against what it recorded
``run_settings``         what a graph file or a named node set fixes in a run's settings (widths, encoders,
                         head, loss) and the option conflicts of a graph file or a sampler
``model_fit``            :func:`~.model_fit.check_data_fits`: the model's widths against the loaded data
``identity``             what a run's data was: a graph file's identity and a fingerprint of its splits
                         (:func:`~.identity.record_data`)
``input_transform``      feature transforms a loader applies (standardise, row-normalise), recorded by a run
``errors``               :class:`DataError`, raised for every problem a user can fix
``fresh_process``        a data build run in a forked child, so this process's heap stays clean
``library_output``       DGL's progress bars switched on or off, OGB's prints sent to the log

Sub-packages by kind:

``encodings/``           LapPE / RWSE (dense and sparse) and GraphGPS's structural encodings, per graph,
                         computed once per split and cached on disk next to the data
``own_files/``           the user's own ``dgl.save_graphs`` files: homogeneous graphs, heterographs
``nodes/``               one graph with node masks (:class:`~.nodes.node_graph.NodeGraph`): the user's one-graph file,
                         DGL's named node sets (cora, actor, roman-empire, wikics, ...) and their
                         splits, ogbn-arxiv / -products
``generated/``           PATTERN / CLUSTER (SBM, DGL's files or generated), TreeNeighbourMatch, synthetic
                         MNIST-like graphs, generated node graphs and heterographs
``superpixels/``         MNIST, CIFAR10: DGL's superpixel pickles, or built from raw images by SLIC
``lrgb/``                Peptides-Func / -Struct, PascalVOC-SP / COCO-SP, PCQM-Contact (LRGB files)
``molecules/``           ZINC (DGL's files)
``ogbg/``                ogbg-molhiv / -molpcba / -ppa / -code2 and PCQM4Mv2 through OGB's DGL loaders
``malnet/``              MalNet-Tiny from the raw files PyG's loader reads

Entry points
------------
``load_with(name, LoadOptions(...))`` / ``load_dataset(name, data_dir, **fields)``
    Every loader takes one :class:`~.options.LoadOptions` (``load_X(options)``, or
    ``load_X(name, options)`` for a family) and reads the fields it needs; the
    registry calls them all the same way. ``load_dataset`` is the keyword form:
    ``load_dataset('zinc', 'data', pe_k=8)`` is ``load_with('zinc', LoadOptions(data_dir='data', pe_k=8))``.
    ``'mnist'`` -> :func:`load_mnist`; ``'cifar10'`` -> :func:`load_cifar10`
    (graph classification, 10 classes); ``'pattern'``/``'cluster'`` -> :func:`load_sbm`
    (node-level splits; ``generate=True`` builds missing files offline);
    ``'zinc'`` -> :func:`load_zinc` (graph regression); ``'voc'``/``'coco'`` ->
    :func:`load_lrgb_superpixels` (PascalVOC-SP / COCO-SP, node-level splits);
    ``'pcqm-contact'`` -> :func:`load_pcqm_contact` (link-level splits);
    ``'peptides-func'``/``'peptides-struct'`` -> :func:`load_peptides`
    (LRGB graph-level multi-label / 11-target regression); ``'tree'`` -> :func:`load_tree`
    (TreeNeighbourMatch, ``depth=r``); ``'synthetic'`` -> :func:`~.registry.load_synthetic`;
    ``'file'`` -> :func:`load_graph_file` (the user's own ``dgl.save_graphs`` file, ``data_file=PATH``).
    The named node sets ``'cora'``, ``'actor'``, ... -> :func:`load_node_set` (DGL's own
    loaders; ``split_index``, ``split_seed``); ``'ogbn-arxiv'``/``'ogbn-products'`` ->
    :func:`~.nodes.ogbn.load_ogbn`; ``'ogbg-molhiv'``, ``-molpcba``, ``-ppa`` ->
    :func:`~.ogbg.graphprop.load_ogbg`, ``'ogbg-code2'`` -> :func:`~.ogbg.code2.load_code2`; ``'pcqm4mv2'`` (``-subset``, ``-inference``) ->
    :func:`~.ogbg.pcqm4mv2.load_pcqm4mv2`; ``'malnet-tiny'`` -> :func:`~.malnet.tiny.load_malnet_tiny`.
    ``registry.dataset_table(data_dir)`` lists them (``geaet-dgl datasets``).
    Every loader reads files already in ``data_dir`` (or generates them); none
    downloads, except DGL's own loaders for a named node set that is missing.
    Loaders return their graphs without encodings; ``load_dataset`` then applies
    the positional ones asked for by one path, :func:`~.encodings.apply.encode_splits`,
    with its cache beside the data (where the loader's ``encoding_plan`` says).
``make_loader(dataset, batch_size, shuffle, seed=0, num_workers=0)`` / ``collate(samples)``
    Seeded ``DataLoader`` yielding ``(dgl.batch(graphs), labels)``; for
    node-level datasets (``GraphDataset(level='node')``) the labels are the
    graphs' per-node labels concatenated (:func:`collate_nodes`;
    :func:`collate_for` picks the right one); for link-level datasets
    (``level='link'``) they are (P, 4) rows ``(src, dst, first, num_nodes)``
    of the positive pairs (:func:`collate_links`).
``laplacian_pe(g, k, norm='sym')`` / ``random_walk_se(g, k)``
    The reference's Laplacian eigenvector PE and RWSE for one graph.

Fields
------
Every graph carries ``ndata['feat']`` and ``edata['feat']``: float32 for the superpixel and synthetic sets
(MNIST (N, 3) = (intensity, row/28, col/28); CIFAR10 (N, 5) = (r, g, b,
row/32, col/32); both with a (E, 1) kNN weight; VOC / COCO (N, 14) and
(E, 2)), one-hot float32 for PATTERN (N, 3) / CLUSTER (N, 7), int64
vocabulary indices for the molecules (ZINC (N, 1) / (E, 1), Peptides and
PCQM-Contact (N, 9) / (E, 3)) and TreeNeighbourMatch ((N, 2) key, value;
zero (E, 1) edge features).
``ndata['lap_pe']`` / ``ndata['lap_eigval']`` (N, k) float32 when
``pe_k`` is set (``ndata['rwse']`` (N, k) when ``rwse_k`` is). The
family modules' docstrings give each dataset's labels. Problems a user can
fix raise :class:`DataError`.
"""

from .dataset import DatasetSplits, GraphDataset, collate, collate_for, collate_links, collate_nodes, make_loader
from .encodings.positional_encoding import laplacian_pe, random_walk_se
from .errors import DataError
from .generated import load_sbm, load_tree, synthetic_mnist_like, synthetic_splits
from .lrgb import load_lrgb_superpixels, load_pcqm_contact, load_peptides
from .molecules import load_zinc
from .nodes.node_sets import load_node_set
from .options import FileSplit, LoadOptions
from .own_files.graph_files import GRAPH_FILE, load_graph_file
from .registry import load_dataset, load_with
from .superpixels import load_cifar10, load_mnist

__all__ = [
    "DataError",
    "GRAPH_FILE",
    "DatasetSplits",
    "FileSplit",
    "GraphDataset",
    "LoadOptions",
    "collate",
    "collate_for",
    "collate_links",
    "collate_nodes",
    "laplacian_pe",
    "load_cifar10",
    "load_dataset",
    "load_graph_file",
    "load_lrgb_superpixels",
    "load_mnist",
    "load_node_set",
    "load_pcqm_contact",
    "load_peptides",
    "load_sbm",
    "load_tree",
    "load_with",
    "load_zinc",
    "make_loader",
    "random_walk_se",
    "synthetic_mnist_like",
    "synthetic_splits",
]
