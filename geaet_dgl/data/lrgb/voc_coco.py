"""PascalVOC-SP and COCO-SP (LRGB) through DGL's ``VOCSuperpixelsDataset`` / ``COCOSuperpixelsDataset``, offline.

Files
-----
The paper's configurations (the reference's ``vocsp.yaml`` / ``coco.yaml``)
use SLIC compactness 30 and region-boundary graphs (two superpixels are
linked if they share a boundary), so DGL reads ::

    data_dir/PascalVOC-SP_<hash of its URL>/slic_compactness_30/edge_wt_region_boundary/{train,val,test}.pickle
    data_dir/COCO-SP_<hash of its URL>/slic_compactness_30/edge_wt_region_boundary/{train,val,test}.pickle

the contents of DGL's ``voc_superpixels_edge_wt_region_boundary.zip`` /
``coco_superpixels_edge_wt_region_boundary.zip`` (:func:`superpixel_files`
names the folder). Each pickle is a list of ``(x (N, 14), edge_attr (E, 2),
edge_index (2, E), y (N,))`` tuples of tensors; DGL turns them into graphs
(COCO-SP: its ``label_remap`` maps COCO's category ids, 0..90 with ten ids
unused, onto 0..80) and caches them as ``processed_{split}.pkl`` beside the
pickles; delete those to process changed pickles again. Their ``download`` is
replaced by an error, so nothing reaches for the network.

Inputs
------
``ndata['feat']`` (N, 14) float32: per superpixel the mean, standard deviation,
maximum and minimum RGB values and the centroid (x, y) in pixels;
``edata['feat']`` (E, 2) float32: the two weights of the region-boundary edge. Both are
standardised with the dataset statistics the reference's ``VOCNode`` /
``VOCEdge`` (``COCONode`` / ``COCOEdge``) encoders subtract and divide by
before their linear map (``standardize=False`` keeps DGL's values). Labels are
per node, (N,) int64 in 0..20 (VOC, 21 classes) or 0..80 (COCO, 81 classes):
inductive node classification, ``level='node'`` splits, weighted cross-entropy
and macro F1 over the whole split.
"""
from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple, Union

import dgl
import dgl.data.lrgb as dgl_lrgb
import torch
from dgl.data import COCOSuperpixelsDataset, VOCSuperpixelsDataset

from ..dataset import DatasetSplits, GraphDataset
from ..encodings.apply import EncodingCache, EncodingPlan, file_stamp
from ..errors import DataError
from ..input_transform import apply_input_transform, standardize_transform
from ..library_output import dgl_progress_bars
from ..options import LoadOptions

PathLike = Union[str, os.PathLike]
SPLITS = ("train", "val", "test")
SLIC_COMPACTNESS = 30
CONSTRUCT_FORMAT = "edge_wt_region_boundary"
NODE_FEATS = 14
EDGE_FEATS = 2


@dataclass(frozen=True)
class SuperpixelTask:
    """One LRGB superpixel benchmark: DGL's class, sizes, and the reference's input statistics."""

    name: str
    title: str
    dgl_class: type
    archive: str
    num_classes: int
    sizes: Dict[str, int]
    node_mean: Tuple[float, ...]
    node_std: Tuple[float, ...]
    edge_mean: Tuple[float, ...]
    edge_std: Tuple[float, ...]


SUPERPIXEL_TASKS: Dict[str, SuperpixelTask] = {
    "voc": SuperpixelTask(
        name="voc", title="PascalVOC-SP", dgl_class=VOCSuperpixelsDataset,
        archive=f"voc_superpixels_{CONSTRUCT_FORMAT}.zip", num_classes=21,
        sizes={"train": 8498, "val": 1428, "test": 1429},
        node_mean=(4.5824501e-01, 4.3857411e-01, 4.0561178e-01, 6.7938097e-02, 6.5604292e-02, 6.5742709e-02,
                   6.5212941e-01, 6.2894762e-01, 6.0173863e-01, 2.7769071e-01, 2.6425251e-01, 2.3729359e-01,
                   1.9344997e+02, 2.3472206e+02),
        node_std=(2.5952947e-01, 2.5716761e-01, 2.7130592e-01, 5.4822665e-02, 5.4429270e-02, 5.4474957e-02,
                  2.6238337e-01, 2.6600540e-01, 2.7750680e-01, 2.5197381e-01, 2.4986187e-01, 2.6069802e-01,
                  1.1768297e+02, 1.4007195e+02),
        edge_mean=(0.07640745, 33.73478), edge_std=(0.0868775, 20.945076),
    ),
    "coco": SuperpixelTask(
        name="coco", title="COCO-SP", dgl_class=COCOSuperpixelsDataset,
        archive=f"coco_superpixels_{CONSTRUCT_FORMAT}.zip", num_classes=81,
        sizes={"train": 113286, "val": 5000, "test": 5000},
        node_mean=(4.6977347e-01, 4.4679317e-01, 4.0790915e-01, 7.0808627e-02, 6.8686441e-02, 6.8498217e-02,
                   6.7777938e-01, 6.5244222e-01, 6.2096798e-01, 2.7554795e-01, 2.5910738e-01, 2.2901227e-01,
                   2.4261935e+02, 2.8985367e+02),
        node_std=(2.6218116e-01, 2.5831082e-01, 2.7416739e-01, 5.7440419e-02, 5.6832556e-02, 5.7100497e-02,
                  2.5929087e-01, 2.6201612e-01, 2.7675411e-01, 2.5456995e-01, 2.5140920e-01, 2.6182330e-01,
                  1.5152475e+02, 1.7630779e+02),
        edge_mean=(0.07848548, 43.68736), edge_std=(0.08902349, 28.473562),
    ),
}


def input_transform(task: SuperpixelTask) -> Dict[str, Any]:
    """The standardisation the loader applies, as a run records it (see :mod:`..input_transform`)."""
    return standardize_transform(task.node_mean, task.node_std, task.edge_mean, task.edge_std)


def _task(name: str) -> SuperpixelTask:
    key = str(name).lower()
    if key not in SUPERPIXEL_TASKS:
        raise DataError(f"unknown LRGB superpixel dataset {name!r}; choose one of {', '.join(SUPERPIXEL_TASKS)}")
    return SUPERPIXEL_TASKS[key]


def _url(task: SuperpixelTask) -> str:
    return task.dgl_class.urls[SLIC_COMPACTNESS][CONSTRUCT_FORMAT].strip()


def _missing_message(task: SuperpixelTask, folder: Path, missing: List[Path]) -> str:
    return (f"{task.title} data is missing: no {', '.join(p.name for p in missing)} in {folder}; unzip DGL's "
            f"{task.archive} ({_url(task)}) and move the .pickle files of its {Path(task.archive).stem}/ folder there")


@functools.lru_cache(maxsize=None)
def _offline(task_name: str) -> type:
    """DGL's dataset class for ``task_name`` whose download raises instead of reaching the network."""
    task = SUPERPIXEL_TASKS[task_name]

    class Offline(task.dgl_class):
        def download(self):  # DGL hook
            raise DataError(_missing_message(task, Path(self.save_path), [Path(self.raw_data_path)]))

    Offline.__name__ = f"Offline{task.dgl_class.__name__}"
    return Offline


@functools.lru_cache(maxsize=None)
def _probe(task_name: str) -> type:
    class Probe(SUPERPIXEL_TASKS[task_name].dgl_class):
        def _load(self):  # only asks DGL for its paths
            pass

    return Probe


def _dgl_args(split: str) -> dict:
    return {"split": split, "slic_compactness": SLIC_COMPACTNESS, "construct_format": CONSTRUCT_FORMAT}


def _root(data_dir: PathLike) -> str:
    return str(Path(data_dir).expanduser().resolve())


def superpixel_files(name: str, data_dir: PathLike) -> Dict[str, Path]:
    """``{'train'|'val'|'test': path}`` of the pickles DGL reads for ``name`` ('voc' or 'coco') under ``data_dir``."""
    probe = _probe(_task(name).name)
    return {split: Path(probe(raw_dir=_root(data_dir), **_dgl_args(split)).raw_data_path) for split in SPLITS}


def _processed(path: Path) -> Path:
    """DGL's cache of the graphs it built from ``path`` (``processed_{split}.pkl`` beside it)."""
    return path.with_name(f"processed_{path.stem}.pkl")


def superpixel_present(name: str, data_dir: PathLike) -> bool:
    """Every split of ``name`` is there, as DGL's pickle or DGL's processed cache of it."""
    return all(p.is_file() or _processed(p).is_file() for p in superpixel_files(name, data_dir).values())


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:200]}" if text else type(exc).__name__


def _take_inputs(graphs: List[dgl.DGLGraph], task: SuperpixelTask, split: str, standardize: bool,
                 statistics: Optional[SuperpixelTask] = None) -> torch.Tensor:
    """Check and (optionally) standardise ``feat`` in place, pop ``label``; -> node labels concatenated (int64)."""
    labels = []
    for index, g in enumerate(graphs):
        where = f"{task.title} {split} graph {index}"
        node, edge = g.ndata["feat"].float(), g.edata["feat"].float()
        if node.ndim != 2 or node.shape[1] != NODE_FEATS:
            raise DataError(f"{where}: node features of shape {tuple(node.shape)}, expected (N, {NODE_FEATS}); "
                            f"replace the pickles with those of DGL's {task.archive}")
        if edge.ndim != 2 or edge.shape[1] != EDGE_FEATS:
            raise DataError(f"{where}: edge features of shape {tuple(edge.shape)}, expected (E, {EDGE_FEATS}) "
                            f"({CONSTRUCT_FORMAT} graphs); replace the pickles with those of DGL's {task.archive}")
        label = g.ndata.pop("label").long().reshape(-1)
        bad = label[(label < 0) | (label >= task.num_classes)]
        if bad.numel():
            raise DataError(f"{where}: node label {int(bad[0])} outside 0..{task.num_classes - 1}; replace the "
                            f"pickles with those of DGL's {task.archive}")
        g.ndata["feat"], g.edata["feat"] = node, edge
        if standardize:
            apply_input_transform([g], input_transform(statistics or task))
        labels.append(label)
    return torch.cat(labels) if labels else torch.zeros(0, dtype=torch.int64)


#: The Laplacian of this dataset's LapPE unless ``LoadOptions.laplacian_norm`` says otherwise (the reference config's;
#: :data:`~geaet_dgl.data.registry.LAPLACIAN_NORM` must agree: ``predict`` encodes new graphs with it).
DEFAULT_LAPLACIAN_NORM = "none"


def load_lrgb_superpixels(name: str, options: LoadOptions) -> DatasetSplits:
    """PascalVOC-SP (``name='voc'``) or COCO-SP (``'coco'``) splits through DGL's loader (offline).

    Parameters
    ----------
    name : {'voc', 'coco'}
    options : LoadOptions
        ``data_dir``: DGL's ``raw_dir``. ``pe_k``: Laplacian eigenpairs per graph
        (``ndata['lap_pe']``/``['lap_eigval']``, cached on disk; about 20 ms per graph on one core);
        ``None`` or 0 with no ``rwse_k`` computes and attaches nothing (the paper's configurations use
        no PE). ``rwse_k``: also ``ndata['rwse']`` (N, rwse_k). ``laplacian_norm`` (default ``'none'``,
        as ``posenc_LapPE.eigen.laplacian_norm`` in the reference's configs). ``limit_train``,
        ``limit_val``, ``limit_test``: first ``n`` graphs of a split (DGL still processes the whole
        pickle). ``progress``: DGL's and the encodings' progress bars. ``standardize``: standardise node
        and edge features with the reference encoders' statistics. ``statistics`` (``'voc'``/``'coco'``):
        whose statistics standardise the features (default: the dataset's own). GraphGPS's
        ``cocosuperpixels-GPS.yaml`` names the ``VOCNode``/``VOCEdge`` encoders, which standardise
        COCO-SP with PascalVOC-SP's means and standard deviations: ``statistics='voc'``.

    Returns
    -------
    DatasetSplits
        ``level='node'`` splits: ``(graph, (N,) int64 labels)``;
        ``num_classes`` 21 or 81.

    Example
    -------
    >>> splits = load_lrgb_superpixels('voc', LoadOptions(data_dir='data'))  # doctest: +SKIP
    >>> splits.node_feat_dim, splits.edge_feat_dim, splits.num_classes  # doctest: +SKIP
    (14, 2, 21)
    """
    data_dir, progress, standardize, statistics = options.data_dir, options.progress, options.standardize, \
        options.statistics
    task = _task(name)
    stats = _task(statistics) if statistics else task
    files = superpixel_files(task.name, data_dir)
    folder = files["train"].parent
    missing = [p for p in files.values() if not (p.is_file() or _processed(p).is_file())]
    if missing:
        raise DataError(_missing_message(task, folder, missing))
    limits = options.limit_of
    offline = _offline(task.name)
    splits, caches = {}, {}
    for split in SPLITS:
        try:
            with dgl_progress_bars(dgl_lrgb, progress):
                data = offline(raw_dir=_root(data_dir), verbose=False, **_dgl_args(split))
        except DataError:
            raise
        except Exception as exc:  # an unreadable pickle, a malformed tuple, an unknown COCO category id
            raise DataError(f"DGL could not read {files[split]} ({_one_line(exc)}); replace it with the {split}.pickle "
                            f"of DGL's {task.archive}") from exc
        count = len(data) if limits[split] is None else min(limits[split], len(data))
        graphs = [data[i] for i in range(count)]
        labels = _take_inputs(graphs, task, split, standardize, stats)
        source = files[split] if files[split].is_file() else _processed(files[split])
        caches[split] = EncodingCache(folder / "geaet_cache", split, file_stamp(source))
        splits[split] = GraphDataset(graphs, labels, level="node")
    return DatasetSplits(train=splits["train"], val=splits["val"], test=splits["test"],
                         num_classes=task.num_classes, name=task.name,
                         input_transform=input_transform(stats) if standardize else None,
                         source=f"DGL {task.title} pickles (SLIC compactness {SLIC_COMPACTNESS}, "
                                f"{CONSTRUCT_FORMAT}) in {folder}",
                         # nothing attached unless asked; RWSE alone too (before, rwse_k without pe_k was dropped)
                         encoding_plan=EncodingPlan(caches, default_norm=DEFAULT_LAPLACIAN_NORM, only_if_asked=True))
