"""OGB graph property prediction (``ogbg-molhiv``, ``-molpcba``, ``-ppa``, ``-code2``) through OGB's DGL loader.

The files
---------
OGB publishes each dataset as a zip holding one folder (``hiv/``, ``pcba/``,
``ogbg_ppi_medium/``, ``code2/``) with ``RELEASE_v1.txt``, ``mapping/``,
``raw/`` (``edge.csv.gz``, ``num-node-list.csv.gz``, ``num-edge-list.csv.gz``,
``graph-label.csv.gz``, ``node-feat.csv.gz`` and ``edge-feat.csv.gz`` where the
dataset has them, code2 also ``node_is_attributed`` / ``node_dfs_order`` /
``node_depth.csv.gz``) and ``split/<split>/{train,valid,test}.csv.gz``
(``scaffold``, ``species``, ``project``). Unzip it into ``--data-dir`` and
rename the folder to OGB's dataset folder (``ogbg_molhiv``, ``ogbg_molpcba``,
``ogbg_ppa``, ``ogbg_code2``): that is where
``ogb.graphproppred.DglGraphPropPredDataset(name, root=data_dir)`` looks. OGB
processes ``raw/`` once into ``processed/dgl_data_processed`` (adding the
inverse of every edge, except for code2) and reads that afterwards. Nothing is
downloaded: a missing file is a one-line error saying where it goes (OGB
itself would start a download, or wait for an answer on stdin when the
release marker is missing).

What the graphs become
----------------------
* molhiv, molpcba: ``ndata['feat']`` (N, 9) and ``edata['feat']`` (E, 3)
  int64 OGB atom and bond features, read by the ``embedding`` encoders with
  OGB's vocabularies (GraphGPS's ``Atom`` / ``Bond``: OGB's AtomEncoder /
  BondEncoder, a sum of one embedding per column). Labels: molhiv (G,) int64
  in {0, 1} (one logit, ROC-AUC by OGB's Evaluator); molpcba (G, 128) float32
  with NaN where a molecule was not assayed (BCE on the labelled entries,
  average precision, OGB's ``eval_ap``).
* ppa: no node features in OGB's files, so ``ndata['feat']`` is (N, 1) zeros
  for the ``constant`` node encoder (GraphGPS's ``PPANode``: one learned
  vector); ``edata['feat']`` (E, 7) float32 (``PPAEdge``: a linear map).
  Labels (G,) int64 in 0..36 (accuracy).
* code2: see :mod:`.code2` (AST node features, augmented edges, subtoken
  sequences).

Laplacian PEs use the unnormalised Laplacian (GraphGPS's ogbg configs:
``laplacian_norm: none``) and are cached in ``<folder>/geaet_cache``.
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Sequence, Tuple, Union

import dgl
import torch

from ..dataset import DatasetSplits, GraphDataset
from ..encodings.apply import EncodingCache, EncodingPlan, file_stamp
from ..errors import DataError
from ..library_output import quiet_ogb
from ..options import LoadOptions

log = logging.getLogger(__name__)
PathLike = Union[str, os.PathLike]

SPLIT_NAMES = (("train", "train"), ("val", "valid"), ("test", "test"))  # ours, OGB's
RELEASE = "RELEASE_v1.txt"
PROCESSED = Path("processed") / "dgl_data_processed"


@dataclass(frozen=True)
class OgbgSpec:
    """One OGB graph property dataset: where its files are and what it holds."""

    name: str
    archive: str  # the published zip and the folder inside it
    split: str  # OGB's split folder
    num_tasks: int  # label columns (OGB's 'num tasks')
    num_classes: int  # classes (2 for a binary task: one logit), tasks (multi-label), or the vocabulary
    metric: str  # our metric name
    sizes: Tuple[int, int, int]  # train / valid / test graphs of the published split
    raw_files: Tuple[str, ...]

    @property
    def folder(self) -> str:
        return self.name.replace("-", "_")

    @property
    def url(self) -> str:
        mol = "csv_mol_download/" if self.name.startswith("ogbg-mol") else ""
        return f"http://snap.stanford.edu/ogb/data/graphproppred/{mol}{self.archive}.zip"


_GRAPH_FILES = ("edge.csv.gz", "num-node-list.csv.gz", "num-edge-list.csv.gz", "graph-label.csv.gz")
_MOL_FILES = _GRAPH_FILES + ("node-feat.csv.gz", "edge-feat.csv.gz")

OGBG: Dict[str, OgbgSpec] = {
    "ogbg-molhiv": OgbgSpec("ogbg-molhiv", "hiv", "scaffold", 1, 2, "roc_auc", (32_901, 4_113, 4_113), _MOL_FILES),
    "ogbg-molpcba": OgbgSpec("ogbg-molpcba", "pcba", "scaffold", 128, 128, "average_precision",
                             (350_343, 43_793, 43_793), _MOL_FILES),
    "ogbg-ppa": OgbgSpec("ogbg-ppa", "ogbg_ppi_medium", "species", 1, 37, "accuracy", (78_200, 45_100, 34_800),
                         _GRAPH_FILES + ("edge-feat.csv.gz",)),
    "ogbg-code2": OgbgSpec("ogbg-code2", "code2", "project", 1, 5_002, "f1_subtoken", (407_976, 22_817, 21_948),
                           _GRAPH_FILES + ("node-feat.csv.gz", "node_is_attributed.csv.gz",
                                           "node_dfs_order.csv.gz", "node_depth.csv.gz")),
}
SPLIT_FILES = ("train.csv.gz", "valid.csv.gz", "test.csv.gz")
PPA_EDGE_FEATS = 7


def _spec(name: str) -> OgbgSpec:
    key = str(name).lower()
    if key not in OGBG:
        raise DataError(f"unknown OGB graph dataset {name!r}; choose one of {', '.join(OGBG)}")
    return OGBG[key]


def ogbg_root(name: str, data_dir: PathLike) -> Path:
    """The folder OGB reads ``name`` from: ``<data_dir>/ogbg_<name>`` (or OGB's ``..._dgl`` variant if present)."""
    spec = _spec(name)
    dgl_variant = Path(data_dir) / f"{spec.folder}_dgl"
    return dgl_variant if dgl_variant.is_dir() else Path(data_dir) / spec.folder


def where_files_go(name: str, data_dir: PathLike) -> str:
    """The fix for missing files: download, unzip, rename."""
    spec = _spec(name)
    return (f"download {spec.url}, unzip it into {os.fspath(data_dir)} and rename {spec.archive}/ to "
            f"{spec.folder}/ (so that {Path(data_dir) / spec.folder / RELEASE} exists)")


def missing_files(name: str, data_dir: PathLike) -> List[Path]:
    """The files OGB needs for ``name`` that are not under ``data_dir`` (empty: ready to load)."""
    spec = _spec(name)
    root = ogbg_root(name, data_dir)
    needed = [root / RELEASE] + [root / "split" / spec.split / f for f in SPLIT_FILES]
    if not (root / PROCESSED).is_file():
        needed += [root / "raw" / f for f in spec.raw_files]
    return [p for p in needed if not p.is_file()]


def ogbg_present(name: str, data_dir: PathLike) -> bool:
    """Whether every file OGB reads for ``name`` is under ``data_dir`` (contents not checked)."""
    return not missing_files(name, data_dir)


def _ogb_dataset(name: str, data_dir: PathLike):
    with quiet_ogb():
        from ogb.graphproppred import DglGraphPropPredDataset

        return DglGraphPropPredDataset(name, root=os.fspath(data_dir))


def read_ogbg(name: str, data_dir: PathLike):
    """OGB's dataset object for ``name`` (graphs, labels, split), read offline.

    Raises
    ------
    DataError
        A missing file (named, with where it goes) or files OGB cannot read.
    """
    spec = _spec(name)
    missing = missing_files(spec.name, data_dir)
    if missing:
        raise DataError(f"{spec.name}: {missing[0]} is missing"
                        f"{f' (and {len(missing) - 1} more)' if len(missing) > 1 else ''}; "
                        f"{where_files_go(spec.name, data_dir)}")
    root = ogbg_root(spec.name, data_dir)
    try:
        return _ogb_dataset(spec.name, data_dir)
    except Exception as exc:
        processed = root / PROCESSED
        if processed.is_file() and all((root / "raw" / f).is_file() for f in spec.raw_files):
            log.warning("%s: %s is unreadable (%s); processing raw/ again", spec.name, processed, exc)
            processed.unlink()
            try:
                return _ogb_dataset(spec.name, data_dir)
            except Exception as again:
                exc = again
        raise DataError(f"{spec.name}: OGB could not read {root} ({type(exc).__name__}: "
                        f"{' '.join(str(exc).split())[:200]}); {where_files_go(spec.name, data_dir)}") from exc


def read_split(spec: OgbgSpec, dataset, root: Path) -> Dict[str, torch.Tensor]:
    """OGB's split as ``{'train' | 'val' | 'test': (n,) int64}``, checked against the graph count."""
    raw = dataset.get_idx_split()
    split = {}
    for ours, theirs in SPLIT_NAMES:
        idx = torch.as_tensor(raw[theirs]).reshape(-1).long()
        if idx.numel() and (int(idx.min()) < 0 or int(idx.max()) >= len(dataset)):
            raise DataError(f"{spec.name}: split/{spec.split}/{theirs}.csv.gz names graph {int(idx.max())} but "
                            f"{root} holds {len(dataset)} graphs; {where_files_go(spec.name, root.parent)}")
        split[ours] = idx
    return split


def _labels(spec: OgbgSpec, labels: torch.Tensor) -> torch.Tensor:
    """OGB's (G, tasks) labels -> ours: (G,) int64 for one task, (G, T) float32 (NaN kept) for several."""
    if spec.num_tasks == 1:
        return labels.reshape(-1).long()
    return labels.reshape(len(labels), spec.num_tasks).float()


def _node_features(spec: OgbgSpec, graphs: Sequence[dgl.DGLGraph]) -> None:
    """ppa: (N, 1) zero node features (its files have none); GraphGPS's PPANode embeds them to one vector."""
    if spec.name == "ogbg-ppa":
        for g in graphs:
            g.ndata["feat"] = torch.zeros(g.num_nodes(), 1)


#: The Laplacian of this dataset's LapPE unless ``LoadOptions.laplacian_norm`` says otherwise (the reference config's;
#: :data:`~geaet_dgl.data.registry.LAPLACIAN_NORM` must agree: ``predict`` encodes new graphs with it).
DEFAULT_LAPLACIAN_NORM = "none"


def load_ogbg(name: str, options: LoadOptions) -> DatasetSplits:
    """``name``'s published split, read by OGB's DGL loader, with Laplacian PE (and RWSE if ``rwse_k``).

    Parameters
    ----------
    name : {'ogbg-molhiv', 'ogbg-molpcba', 'ogbg-ppa'} (code2: :func:`.code2.load_code2`)
    options : LoadOptions
        ``data_dir``: holds OGB's folder (see the module docstring). ``pe_k`` (default 0: none):
        Laplacian eigenvectors per node; ``laplacian_norm`` (default ``'none'``, ``L = D - A``, as
        GraphGPS's ogbg configs); ``rwse_k``: also ``ndata['rwse']``. ``limit_train``, ``limit_val``,
        ``limit_test``: the first N graphs of a split, in OGB's split order. ``progress``: a bar while
        computing encodings.

    Returns
    -------
    DatasetSplits
        ``num_classes``: 2 (molhiv, read by one logit), 128 (molpcba) or 37 (ppa).
    """
    data_dir = options.data_dir
    spec = _spec(name)
    if spec.name == "ogbg-code2":
        raise DataError("ogbg-code2 is prepared by geaet_dgl.data.ogbg.code2.load_code2 (load_dataset picks it)")
    dataset = read_ogbg(spec.name, data_dir)
    root = ogbg_root(spec.name, data_dir)
    split = read_split(spec, dataset, root)
    labels = _labels(spec, dataset.labels)
    if len(labels) != len(dataset.graphs):
        raise DataError(f"{spec.name}: {root} holds {len(labels)} labels for {len(dataset.graphs)} graphs; "
                        f"{where_files_go(spec.name, data_dir)}")
    def prepare(graphs):
        _node_features(spec, graphs)
        return graphs

    parts = split_parts(dataset.graphs, split, labels, root, prepare, options)
    return DatasetSplits(train=parts["train"], val=parts["val"], test=parts["test"], num_classes=spec.num_classes,
                         name=spec.name, source=f"OGB {spec.name} read by ogb.graphproppred.DglGraphPropPredDataset "
                                                f"from {root}", encoding_plan=parts_plan(root))


def parts_plan(root) -> EncodingPlan:
    """Where the one path after the loader caches the parts' encodings (default: none, ``'none'`` Laplacian):
    ``root/geaet_cache``, stamped with the processed file (so a new one recomputes them)."""
    stamp = file_stamp(root / PROCESSED)
    return EncodingPlan({part: EncodingCache(root / "geaet_cache", part, stamp) for part, _ in SPLIT_NAMES},
                        default_norm=DEFAULT_LAPLACIAN_NORM)


def split_parts(graphs, split, labels, root, prepare, options: LoadOptions):
    """``{part: GraphDataset}`` of the train / val / test indices in ``split`` (each cut to its
    ``options`` limit, None: all): the graphs passed through ``prepare(list) -> list``, without encodings
    (:func:`parts_plan` says where they are cached)."""
    parts = {}
    for (part, _), limit in zip(SPLIT_NAMES, options.limits):
        idx = split[part] if limit is None else split[part][:limit]
        chosen = prepare([graphs[i] for i in idx.tolist()])
        parts[part] = GraphDataset(chosen, labels[idx])
    return parts
