"""``load_dataset(name, ...)``: one entry point for every dataset the package knows."""

import math
import os
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Union

from .dataset import DatasetSplits
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
from .nodes.node_graph import is_node_graph_file, load_node_graph
from .nodes.node_sets import NODE_SETS, load_node_set, node_set_present
from .nodes.ogbn import OGBN, load_ogbn, ogbn_present
from .ogbg.code2 import load_code2
from .ogbg.graphprop import OGBG, load_ogbg, ogbg_present
from .ogbg.pcqm4mv2 import SIZES as PCQM4MV2_SIZES, VARIANTS as PCQM4MV2_VARIANTS, load_pcqm4mv2, pcqm4mv2_present
from .own_files.graph_files import GRAPH_FILE, FileSplit
from .own_files.hetero_files import load_file
from .superpixels.cifar10 import load_cifar10
from .superpixels.dgl_files import CIFAR10_SPEC, superpixels_present
from .superpixels.mnist import load_mnist

PathLike = Union[str, os.PathLike]


#: Options only some loaders read (``DataOptions.generate`` / ``.depth``); the others ignore them.
_DATASET_OPTIONS = ("generate", "depth")


def _drop(kwargs: dict, names) -> dict:
    for key in names:
        kwargs.pop(key, None)
    return kwargs


def _mnist(data_dir: Optional[PathLike], **kwargs) -> DatasetSplits:
    _drop(kwargs, _DATASET_OPTIONS)
    if data_dir is None:
        raise DataError(
            "dataset 'mnist' needs data_dir (where its superpixel files are or will be built); pass data_dir"
        )
    return load_mnist(data_dir, **kwargs)


def _cifar10(data_dir: Optional[PathLike], **kwargs) -> DatasetSplits:
    _needs_dir("cifar10", data_dir)
    _drop(kwargs, ("mnist_images",) + _DATASET_OPTIONS)
    return load_cifar10(data_dir, **kwargs)


#: Options only one loader reads; load_dataset drops them for every other dataset.
_ONLY_FOR = {"cifar_images": "cifar10", **{key: GRAPH_FILE for key in ("data_file", "task", "split_file", "split",
                                                                      "target_ntype")}}
#: Options only a graph file and the named node sets read.
_SPLIT_OPTIONS = ("split_seed", "split_index")


SYNTHETIC_DEFAULT_SIZES = {"train": 256, "val": 64, "test": 64}
_IGNORED_BY_SYNTHETIC = ("progress", "mnist_images", "workers", "num_val") + _DATASET_OPTIONS


def _synthetic(data_dir: Optional[PathLike], **kwargs) -> DatasetSplits:
    """Synthetic splits; accepts the MNIST keyword names so callers can switch datasets freely.

    ``limit_train``/``limit_val``/``limit_test`` set the split sizes (defaults
    256/64/64); MNIST-only options (``progress``, ``mnist_images``, ...) are
    ignored; ``data_dir`` is not used.
    """
    for key in _IGNORED_BY_SYNTHETIC:
        kwargs.pop(key, None)
    sizes = {split: kwargs.pop(f"limit_{split}", None) for split in SYNTHETIC_DEFAULT_SIZES}
    sizes = {split: SYNTHETIC_DEFAULT_SIZES[split] if n is None else n for split, n in sizes.items()}
    return synthetic_splits(num_train=sizes["train"], num_val=sizes["val"], num_test=sizes["test"], **kwargs)


def _needs_dir(name: str, data_dir: Optional[PathLike]) -> None:
    if data_dir is None:
        raise DataError(f"dataset {name!r} needs data_dir (where DGL's files are); pass data_dir / --data-dir")


def _sbm(name: str) -> Callable[..., DatasetSplits]:
    def load(data_dir: Optional[PathLike], **kwargs) -> DatasetSplits:
        _needs_dir(name, data_dir)
        _drop(kwargs, ("mnist_images", "workers", "depth"))
        return load_sbm(name, data_dir, **kwargs)

    return load


def _zinc(data_dir: Optional[PathLike], **kwargs) -> DatasetSplits:
    _needs_dir("zinc", data_dir)
    _drop(kwargs, ("mnist_images", "workers") + _DATASET_OPTIONS)
    return load_zinc(data_dir, **kwargs)


def _tree(data_dir: Optional[PathLike], **kwargs) -> DatasetSplits:
    """TreeNeighbourMatch of radius ``depth`` (default 3); generated in memory, ``data_dir`` unused."""
    _drop(kwargs, ("mnist_images", "workers", "progress", "generate"))
    return load_tree(kwargs.pop("depth", None) or 3, **kwargs)


def _by_name(name: str, loader: Callable[..., DatasetSplits]) -> Callable[..., DatasetSplits]:
    """A loader of the family ``loader`` that reads ``name`` from ``data_dir``."""
    def load(data_dir: Optional[PathLike], **kwargs) -> DatasetSplits:
        _needs_dir(name, data_dir)
        _drop(kwargs, ("mnist_images", "workers") + _DATASET_OPTIONS)
        return loader(name, data_dir, **kwargs)

    return load


def _pcqm_contact(data_dir: Optional[PathLike], **kwargs) -> DatasetSplits:
    _needs_dir("pcqm-contact", data_dir)
    _drop(kwargs, ("mnist_images", "workers", "depth"))
    return load_pcqm_contact(data_dir, **kwargs)


def _node_set(name: str) -> Callable[..., DatasetSplits]:
    """A named node set through DGL's own loader (:mod:`.nodes.node_sets`); ``data_dir`` is DGL's raw_dir."""
    def load(data_dir: Optional[PathLike], **kwargs) -> DatasetSplits:
        _needs_dir(name, data_dir)
        _drop(kwargs, ("mnist_images", "workers") + _DATASET_OPTIONS)
        return load_node_set(name, data_dir, **kwargs)

    return load


def _graph_file(data_dir: Optional[PathLike], **kwargs) -> DatasetSplits:
    """The user's own DGL graph file (``data_file``); ``data_dir`` unused."""
    _drop(kwargs, ("mnist_images", "workers") + _DATASET_OPTIONS)
    data_file = kwargs.pop("data_file", None)
    if not data_file:
        raise DataError("dataset 'file' needs the graph file: pass --dataset PATH.bin or --data-file PATH")
    file_split = FileSplit.pop_from(kwargs)
    if is_node_graph_file(data_file):  # one graph (or heterograph) with train/val/test node masks
        return load_node_graph(data_file, file_split=file_split, **kwargs)
    return load_file(data_file, file_split=file_split, **kwargs)


LOADERS: Dict[str, Callable[..., DatasetSplits]] = {
    "cifar10": _cifar10,
    "mnist": _mnist, "synthetic": _synthetic, "pattern": _sbm("pattern"), "cluster": _sbm("cluster"),
    "zinc": _zinc, "tree": _tree, "voc": _by_name("voc", load_lrgb_superpixels),
    "coco": _by_name("coco", load_lrgb_superpixels),
    "peptides-func": _by_name("peptides-func", load_peptides),
    "peptides-struct": _by_name("peptides-struct", load_peptides),
    "pcqm-contact": _pcqm_contact, GRAPH_FILE: _graph_file,
    "ogbn-arxiv": _by_name("ogbn-arxiv", load_ogbn), "ogbn-products": _by_name("ogbn-products", load_ogbn),
    **{name: _by_name(name, load_ogbg) for name in OGBG if name != "ogbg-code2"},
    "ogbg-code2": _by_name("ogbg-code2", lambda name, data_dir, **kwargs: load_code2(data_dir, **kwargs)),
    **{name: _by_name(name, load_pcqm4mv2) for name in PCQM4MV2_VARIANTS},
    "malnet-tiny": _by_name("malnet-tiny", lambda name, data_dir, **kwargs: load_malnet_tiny(data_dir, **kwargs)),
    **{name: _node_set(name) for name in NODE_SETS},
}


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


def load_dataset(name: str, data_dir: Optional[PathLike] = None, **kwargs) -> DatasetSplits:
    """Load dataset ``name`` (case-insensitive).

    Parameters
    ----------
    name : str
        ``'mnist'`` (:func:`.superpixels.mnist.load_mnist`), ``'cifar10'``
        (:func:`.superpixels.cifar10.load_cifar10`; ``cifar_images`` reaches only it),
        ``'pattern'`` / ``'cluster'``
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
        ``split_seed``), ``'tree'``
        (:func:`.generated.tree.load_tree`, ``depth=r``; ``data_dir`` ignored) or
        ``'synthetic'`` (:func:`.generated.synthetic.synthetic_splits`; ``data_dir``
        ignored, the ``limit_*`` keywords give the split sizes).
    data_dir : path-like, optional
    **kwargs
        Passed to the loader.

    Returns
    -------
    DatasetSplits
    """
    key = str(name).lower()
    if key not in LOADERS:
        raise DataError(f"unknown dataset {name!r}; choose one of {', '.join(sorted(LOADERS))}")
    for option, owner in _ONLY_FOR.items():
        if key != owner:
            kwargs.pop(option, None)
    if key != GRAPH_FILE and key not in NODE_SETS:
        _drop(kwargs, _SPLIT_OPTIONS)
    elif key == GRAPH_FILE:
        kwargs.pop("split_index", None)
    return LOADERS[key](data_dir, **kwargs)
