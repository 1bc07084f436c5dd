"""``load_with(name, options)``: one entry point for every dataset the package knows.

Every loader takes one :class:`~.options.LoadOptions` (``load_X(options)``, or
``load_X(name, options)`` for a family), so :data:`LOADERS` maps each name to a
callable of the options alone; :func:`load_dataset` is the keyword shorthand
(``load_dataset('zinc', 'data', pe_k=8)``).
"""

import functools
import math
import os
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Union

from .dataset import DatasetSplits
from .encodings.apply import EncodingPlan, encode_splits
from .encodings.se_cache import StructuralSpec, attach_structural
from .errors import DataError
from .generated.sbm import load_sbm, sbm_present
from .generated.synthetic import synthetic_splits
from .generated.tree import DEFAULT_PERMUTATIONS, load_tree
from .lrgb.pcqm_contact import NUM_GRAPHS as NUM_PCQM_CONTACT, PCQM_CONTACT_SIZES, load_pcqm_contact, pcqm_contact_present
from .lrgb.peptides import NUM_PEPTIDES, PEPTIDES_SIZES, load_peptides, peptides_present
from .lrgb.voc_coco import SUPERPIXEL_TASKS, load_lrgb_superpixels, superpixel_present
from .lrgb.voc_coco import input_transform as voc_coco_transform
from .malnet.tiny import MALNET_TINY_SIZES, load_malnet_tiny, malnet_present
from .molecules.zinc import ZINC_SIZES, load_zinc, zinc_present
from .nodes.node_graph import NodeGraph, is_node_graph_file, load_node_graph
from .nodes.node_sets import NODE_SETS, load_node_set, node_set_present
from .nodes.ogbn import OGBN, load_ogbn, ogbn_present
from .ogbg.code2 import load_code2
from .ogbg.graphprop import OGBG, load_ogbg, ogbg_present
from .ogbg.pcqm4mv2 import SIZES as PCQM4MV2_SIZES, VARIANTS as PCQM4MV2_VARIANTS, load_pcqm4mv2, pcqm4mv2_present
from .options import LoadOptions
from .own_files.graph_files import GRAPH_FILE
from .own_files.hetero_files import load_file
from .superpixels.cifar10 import load_cifar10
from .superpixels.dgl_files import CIFAR10_SPEC, superpixels_present
from .superpixels.mnist import load_mnist

PathLike = Union[str, os.PathLike]
Loader = Callable[[LoadOptions], DatasetSplits]

SYNTHETIC_DEFAULT_SIZES = {"train": 256, "val": 64, "test": 64}


def load_synthetic(options: LoadOptions) -> DatasetSplits:
    """Random MNIST-shaped splits (:func:`.generated.synthetic.synthetic_splits`), for tests.

    ``limit_train``/``limit_val``/``limit_test`` set the split sizes (defaults
    256/64/64) and ``seed`` (default 0) is read; ``data_dir`` is not used. The graphs come without encodings:
    the plan asks the one path for ``pe_k`` (default 8), ``rwse_k`` and ``laplacian_norm`` (default ``'sym'``),
    computed without a cache or progress bar.
    """
    sizes = {split: SYNTHETIC_DEFAULT_SIZES[split] if n is None else n for split, n in options.limit_of.items()}
    splits = synthetic_splits(num_train=sizes["train"], num_val=sizes["val"], num_test=sizes["test"],
                              seed=options.or_default("seed", 0), pe_k=None)
    splits.encoding_plan = EncodingPlan(dict.fromkeys(("train", "val", "test")), default_k=8, progress=False)
    return splits


def _graph_file(options: LoadOptions) -> DatasetSplits:
    """The user's own DGL graph file (``data_file``): one graph with node masks, or graphs; ``data_dir`` unused."""
    if not options.data_file:
        raise DataError("dataset 'file' needs the graph file: pass --dataset PATH.bin or --data-file PATH")
    if is_node_graph_file(options.data_file):  # one graph (or heterograph) with train/val/test node masks
        return load_node_graph(options)
    return load_file(options)


def _named(loader: Callable[[str, LoadOptions], DatasetSplits], name: str) -> Loader:
    """``loader`` of a family of datasets, bound to ``name``."""
    return functools.partial(loader, name)


LOADERS: Dict[str, Loader] = {
    "cifar10": load_cifar10, "mnist": load_mnist, "synthetic": load_synthetic,
    "pattern": _named(load_sbm, "pattern"), "cluster": _named(load_sbm, "cluster"),
    "zinc": load_zinc, "tree": load_tree, "voc": _named(load_lrgb_superpixels, "voc"),
    "coco": _named(load_lrgb_superpixels, "coco"),
    "peptides-func": _named(load_peptides, "peptides-func"),
    "peptides-struct": _named(load_peptides, "peptides-struct"),
    "pcqm-contact": load_pcqm_contact, GRAPH_FILE: _graph_file,
    "ogbn-arxiv": _named(load_ogbn, "ogbn-arxiv"), "ogbn-products": _named(load_ogbn, "ogbn-products"),
    **{name: _named(load_ogbg, name) for name in OGBG if name != "ogbg-code2"},
    "ogbg-code2": load_code2,
    **{name: _named(load_pcqm4mv2, name) for name in PCQM4MV2_VARIANTS},
    "malnet-tiny": load_malnet_tiny,
    **{name: _named(load_node_set, name) for name in NODE_SETS},
}

#: Datasets generated in memory or read from ``data_file``: every other one reads ``data_dir``.
_NO_DATA_DIR = ("synthetic", "tree", GRAPH_FILE)
_MNIST_NEEDS_DIR = "dataset 'mnist' needs data_dir (where its superpixel files are or will be built); pass data_dir"


# The Laplacian each loader takes its (ES)LapPE eigenvectors from by default (the reference config's):
# code that computes PE for new graphs of a dataset (``predict``) must use the same one.
LAPLACIAN_NORM: Dict[str, str] = {"peptides-func": "none", "peptides-struct": "none", "voc": "none", "coco": "none",
                                  "pcqm-contact": "none", **{name: "none" for name in OGBG},
                                  **{name: "none" for name in PCQM4MV2_VARIANTS}, "malnet-tiny": "none"}


def laplacian_norm_of(name: str) -> str:
    """The Laplacian normalisation of ``name``'s default PE: ``'none'`` (L = D - A) or ``'sym'``."""
    return LAPLACIAN_NORM.get(name.lower(), "sym")


def input_transform_of(name: str) -> Optional[dict]:
    """The input transform ``name``'s loader applies (see :mod:`.input_transform`): runs that predate its record
    (``data.input_transform``) were trained with it."""
    key = name.lower()
    return voc_coco_transform(SUPERPIXEL_TASKS[key]) if key in SUPERPIXEL_TASKS else None


@dataclass(frozen=True)
class DatasetInfo:
    """What ``geaet-dgl datasets`` shows about one dataset."""

    name: str
    task: str
    metric: str
    size: str
    present: Optional[Callable[[PathLike], bool]]  # None: generated, nothing to look for
    note: str = ""
    splits: str = "fixed"  # how the nodes / graphs are split: fixed, public splits, seeded


def _mnist_present(data_dir: Optional[PathLike]) -> Optional[bool]:
    from .superpixels.dgl_files import superpixel_layout

    layout = superpixel_layout(data_dir)
    return all(layout.has_split(s) for s in ("train", "test"))


def _tree_size() -> str:
    sizes = ", ".join(f"r={r}: {min(math.factorial(2 ** r), DEFAULT_PERMUTATIONS) * 2 ** r:,}" for r in (2, 3, 7))
    return sizes + " (80/20)"


_PEPTIDES_SIZE = ("/".join(f"{PEPTIDES_SIZES[s]:,}" for s in ("train", "val", "test"))
                  + f" ({NUM_PEPTIDES:,} peptides)")

_OGBG_TASKS = {"ogbg-molhiv": "graph binary classification", "ogbg-molpcba": "graph multi-label classif. (128)",
               "ogbg-ppa": "graph classification (37)", "ogbg-code2": "graph subtoken sequence (5 of 5,002)"}

_PCQM4MV2_NOTES = {
    "full": "OGB-LSC pcqm4m-v2.zip unzipped, read by OGB's DGL loader (RDKit); GraphGPS's PCQM4Mv2-full split",
    "subset": "the same files; GraphGPS's PCQM4Mv2-subset (10% of train, 50k val, OGB's valid as test)",
    "inference": "the same files; OGB's valid / test-dev / test-challenge (val and test unlabelled): evaluate only",
}

DATASETS: Dict[str, DatasetInfo] = {
    "mnist": DatasetInfo("mnist", "graph classification (10)", "accuracy", "55,000/5,000/10,000",
                         _mnist_present, "DGL superpixel pickles, or built from MNIST IDX (--mnist-images)"),
    "cifar10": DatasetInfo("cifar10", "graph classification (10)", "accuracy", "45,000/5,000/10,000",
                           lambda d: superpixels_present(d, CIFAR10_SPEC),
                           "DGL superpixel pickles, or built from cifar-10-batches-py (--cifar-images)"),
    "pattern": DatasetInfo("pattern", "inductive node classification (2)", "balanced_accuracy",
                           "10,000/2,000/2,000", lambda d: sbm_present("pattern", d),
                           "DGL SBM_PATTERN files, or --set data.generate=true"),
    "cluster": DatasetInfo("cluster", "inductive node classification (6)", "balanced_accuracy",
                           "10,000/1,000/1,000", lambda d: sbm_present("cluster", d),
                           "DGL SBM_CLUSTER files, or --set data.generate=true"),
    "zinc": DatasetInfo("zinc", "graph regression", "mae",
                        "/".join(f"{ZINC_SIZES[s]:,}" for s in ("train", "val", "test")), zinc_present,
                        "DGL ZincDGL files (ZINC12k.zip)"),
    "voc": DatasetInfo("voc", "inductive node classification (21)", "f1_macro",
                       "/".join(f"{SUPERPIXEL_TASKS['voc'].sizes[s]:,}" for s in ("train", "val", "test")),
                       lambda d: superpixel_present("voc", d),
                       "LRGB PascalVOC-SP: DGL's voc_superpixels_edge_wt_region_boundary.zip (SLIC compactness 30)"),
    "coco": DatasetInfo("coco", "inductive node classification (81)", "f1_macro",
                        "/".join(f"{SUPERPIXEL_TASKS['coco'].sizes[s]:,}" for s in ("train", "val", "test")),
                        lambda d: superpixel_present("coco", d),
                        "LRGB COCO-SP: DGL's coco_superpixels_edge_wt_region_boundary.zip (SLIC compactness 30)"),
    "peptides-func": DatasetInfo("peptides-func", "graph multi-label classif. (10)", "average_precision",
                                 _PEPTIDES_SIZE, lambda d: peptides_present("peptides-func", d),
                                 "LRGB Peptides-Func: DGL's peptide_multi_class_dataset.csv.gz + split pickle"),
    "peptides-struct": DatasetInfo("peptides-struct", "graph regression (11)", "mae", _PEPTIDES_SIZE,
                                   lambda d: peptides_present("peptides-struct", d),
                                   "LRGB Peptides-Struct: DGL's peptide_structure_dataset.csv.gz + split pickle"),
    "pcqm-contact": DatasetInfo("pcqm-contact", "inductive link prediction", "mrr",
                                "/".join(f"{PCQM_CONTACT_SIZES[s]:,}" for s in ("train", "val", "test"))
                                + f" ({NUM_PCQM_CONTACT:,} molecules)", pcqm_contact_present,
                                "LRGB PCQM-Contact: pcqm4m-contact.tsv.gz + 530k_shuffle_split_dict.pt (GraphGPS "
                                "layout); Hits@1/3/10 logged too"),
    **{name: DatasetInfo(name, f"transductive node classification ({spec.num_classes})", "accuracy",
                         "/".join(f"{n:,}" for n in spec.sizes) + f" of {spec.num_nodes:,} nodes",
                         lambda d, name=name: ogbn_present(name, d),
                         f"OGB's {spec.archive}.zip unzipped as {spec.folder}/, read by OGB's DGL loader")
       for name, spec in OGBN.items()},
    **{name: DatasetInfo(name, _OGBG_TASKS[name], spec.metric, "/".join(f"{n:,}" for n in spec.sizes),
                         lambda d, name=name: ogbg_present(name, d),
                         f"OGB's {spec.archive}.zip unzipped as {spec.folder}/, read by OGB's DGL loader")
       for name, spec in OGBG.items()},
    **{name: DatasetInfo(name, "graph regression", "mae", "/".join(f"{n:,}" for n in PCQM4MV2_SIZES[name]),
                         pcqm4mv2_present, _PCQM4MV2_NOTES[variant])
       for name, variant in PCQM4MV2_VARIANTS.items()},
    "malnet-tiny": DatasetInfo("malnet-tiny", "graph classification (5)", "accuracy",
                               "/".join(f"{MALNET_TINY_SIZES[s]:,}" for s in ("train", "val", "test")), malnet_present,
                               "MalNet-Tiny edge lists + split_info_tiny in PyG's MalNetTiny/raw layout; "
                               "LocalDegreeProfile features"),
    **{name: DatasetInfo(name, f"transductive node classification ({spec.classes})", spec.metric,
                         f"{spec.split_sizes} of {spec.nodes:,} nodes", lambda d, name=name: node_set_present(name, d),
                         f"DGL's {spec.dgl_class} files (--data-dir is DGL's raw_dir, e.g. ~/.dgl)",
                         splits=spec.split_kind)
       for name, spec in NODE_SETS.items()},
    "tree": DatasetInfo("tree", "root classification (2^r)", "accuracy", _tree_size(), None,
                        "TreeNeighbourMatch, generated; --set data.depth=2..7"),
    "synthetic": DatasetInfo("synthetic", "graph classification (10)", "accuracy", "256/64/64 (limits)",
                             None, "random MNIST-shaped graphs, for tests"),
}


def dataset_table(data_dir: Optional[PathLike]) -> List[dict]:
    """One row per dataset: name, task, metric, size, splits, present (True/False/None = generated), note."""
    rows = []
    for info in DATASETS.values():
        if info.present is None:
            present = None
        elif data_dir is None:
            present = False
        else:
            try:
                present = bool(info.present(data_dir))
            except (DataError, OSError):
                present = False
        rows.append({"name": info.name, "task": info.task, "metric": info.metric, "size": info.size,
                     "splits": info.splits, "present": present, "note": info.note})
    return rows


def load_with(name: str, options: LoadOptions) -> DatasetSplits:
    """Load dataset ``name`` (case-insensitive) as ``options`` say, with the encodings they ask for.

    Every loader is called the same way (``LOADERS[name](options)``) and returns
    its splits without encodings; the one path after it, as DGL applies its
    transforms, then adds the positional encodings (LapPE, RWSE) where the
    loader's ``encoding_plan`` caches them (:func:`~.encodings.apply.encode_splits`)
    and the structural ones (``options.structural``) to every split's graphs,
    cached under ``data_dir/geaet_cache``.
    """
    key = str(name).lower()
    if key not in LOADERS:
        raise DataError(f"unknown dataset {name!r}; choose one of {', '.join(sorted(LOADERS))}")
    if options.data_dir is None and key not in _NO_DATA_DIR:
        raise DataError(_MNIST_NEEDS_DIR if key == "mnist" else
                        f"dataset {key!r} needs data_dir (where DGL's files are); pass data_dir / --data-dir")
    splits = encode_splits(LOADERS[key](options), options)
    cache = os.path.join(options.data_dir, "geaet_cache") if options.data_dir else None
    attach_structural_splits(splits, options.structural, cache, options.progress)
    return splits


def attach_structural_splits(splits: DatasetSplits, spec: StructuralSpec, cache_dir: Optional[str],
                             progress: bool = True) -> None:
    """Store the structural encodings of ``spec`` on every split's graphs (cached under ``cache_dir``)."""
    if not spec:
        return
    if isinstance(splits, NodeGraph):  # one graph with node masks
        attach_structural([splits.graph], spec, cache_dir, progress)
        return
    for split in ("train", "val", "test"):
        attach_structural(getattr(splits, split).graphs, spec, cache_dir, progress)


def load_dataset(name: str, data_dir: Optional[PathLike] = None, **fields) -> DatasetSplits:
    """Load dataset ``name`` (case-insensitive): :func:`load_with` of ``LoadOptions(data_dir=data_dir, **fields)``.

    Parameters
    ----------
    name : str
        ``'mnist'`` (:func:`.superpixels.mnist.load_mnist`), ``'cifar10'``
        (:func:`.superpixels.cifar10.load_cifar10`), ``'pattern'`` / ``'cluster'``
        (:func:`.generated.sbm.load_sbm`; ``generate=True`` builds missing files),
        ``'zinc'`` (:func:`.molecules.zinc.load_zinc`), ``'voc'`` / ``'coco'``
        (:func:`.lrgb.voc_coco.load_lrgb_superpixels`), ``'peptides-func'`` /
        ``'peptides-struct'`` (:func:`.lrgb.peptides.load_peptides`), ``'pcqm-contact'``
        (:func:`.lrgb.pcqm_contact.load_pcqm_contact`; link-level), ``'ogbn-arxiv'`` /
        ``'ogbn-products'`` (:func:`.nodes.ogbn.load_ogbn`; one graph with node masks), ``'ogbg-molhiv'`` /
        ``'ogbg-molpcba'`` / ``'ogbg-ppa'`` / ``'ogbg-code2'`` (:func:`.ogbg.graphprop.load_ogbg`),
        ``'pcqm4mv2'`` / ``'pcqm4mv2-subset'`` / ``'pcqm4mv2-inference'`` (:func:`.ogbg.pcqm4mv2.load_pcqm4mv2`),
        ``'malnet-tiny'`` (:func:`.malnet.tiny.load_malnet_tiny`), the named node sets
        ``'cora'``, ``'actor'``, ... (:func:`.nodes.node_sets.load_node_set`, DGL's own loaders; ``split_index``,
        ``split_seed``), ``'tree'`` (:func:`.generated.tree.load_tree`, ``depth=r``; ``data_dir`` ignored),
        ``'file'`` (the user's graph file, ``data_file=PATH``) or ``'synthetic'`` (:func:`load_synthetic`;
        ``data_dir`` ignored, the ``limit_*`` fields give the split sizes).
    data_dir : path-like, optional
    **fields
        The other :class:`~.options.LoadOptions` fields.

    Returns
    -------
    DatasetSplits
    """
    return load_with(name, LoadOptions(data_dir=data_dir, **fields))
