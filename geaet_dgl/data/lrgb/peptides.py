"""Peptides-Func and Peptides-Struct (LRGB) through DGL's Peptides datasets, offline.

DGL's ``PeptidesFunctionalDataset`` / ``PeptidesStructuralDataset`` read two
published files from ``data_dir/Peptides-func_<hash of its URL>/``
(``Peptides-struc_<hash>/`` for Struct; :func:`peptides_files` names them):

* a gzip CSV of the 15,535 peptides with a ``smiles`` column and the targets.
  Func: ``labels``, a list of 10 zeros and ones per row (the functional
  classes). Struct: 11 columns ``Inertia_mass_a`` ... ``Plane_best_fit``, which
  DGL standardises to zero mean and unit (sample) standard deviation over the
  whole file, as LRGB does;
* a pickle ``{'train' | 'val' | 'test': int array}`` of row indices, LRGB's
  stratified split 10,873 / 2,331 / 2,331 (DGL's ``get_idx_split``).

DGL turns each SMILES into a graph with OGB's ``smiles2graph`` (RDKit) and
caches the graphs in ``Peptides-*.bin`` next to the files. Its ``download``
(the only place DGL checks the files' MD5 against the published checksums) is
replaced by an error, so nothing reaches for the network; files put in place by
hand are checked against DGL's checksums here instead (``check_md5``).

Graphs carry ``ndata['feat']`` (N, 9) and ``edata['feat']`` (E, 3) int64 OGB
atom and bond features, read by the ``embedding`` encoders (vocabularies
:data:`ATOM_VOCAB_SIZES` / :data:`BOND_VOCAB_SIZES`, OGB's feature dims), and
the Laplacian PE of the unnormalised Laplacian (the reference's
``laplacian_norm: none``). Labels: Func (G, 10) float32 in {0, 1} (multi-label;
BCE, average precision); Struct (G, 11) float32 standardised targets (L1, MAE).

Example
-------
>>> splits = load_peptides("peptides-struct", "data", pe_k=10)  # doctest: +SKIP
>>> splits.train.labels.shape  # doctest: +SKIP
torch.Size([10873, 11])
"""
from __future__ import annotations

import ast
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Tuple, Union

import numpy as np
import pandas as pd
import dgl.data.lrgb as dgl_lrgb
import torch
from dgl.data import PeptidesFunctionalDataset, PeptidesStructuralDataset
from ogb.utils.features import get_atom_feature_dims, get_bond_feature_dims

from ...atomic import atomic_write
from ..dataset import DatasetSplits, GraphDataset
from ..encodings.apply import EncodingCache, EncodingPlan
from ..errors import DataError
from ..library_output import dgl_progress_bars
from ..options import LoadOptions

PathLike = Union[str, os.PathLike]
SPLITS = ("train", "val", "test")
NUM_PEPTIDES = 15535
PEPTIDES_SIZES = {"train": 10873, "val": 2331, "test": 2331}
ATOM_VOCAB_SIZES: List[int] = list(get_atom_feature_dims())  # [119, 5, 12, 12, 10, 6, 6, 2, 2]
BOND_VOCAB_SIZES: List[int] = list(get_bond_feature_dims())  # [5, 6, 2]
STRUCT_TARGETS = ("Inertia_mass_a", "Inertia_mass_b", "Inertia_mass_c", "Inertia_valence_a", "Inertia_valence_b",
                  "Inertia_valence_c", "length_a", "length_b", "length_c", "Spherocity", "Plane_best_fit")
NUM_FUNC_CLASSES = 10


class _Offline:
    """Mixin: DGL's ``download`` (and its MD5 check) becomes a one-line error."""

    def download(self):  # DGL hook
        raise DataError(f"Peptides files are missing under {self.raw_path}; put DGL's "
                        f"{Path(self.raw_data_path).name} and {Path(self.split_data_path).name} there")


class OfflinePeptidesFunctionalDataset(_Offline, PeptidesFunctionalDataset):
    """DGL's Peptides-Func that raises instead of downloading."""


class OfflinePeptidesStructuralDataset(_Offline, PeptidesStructuralDataset):
    """DGL's Peptides-Struct that raises instead of downloading.

    DGL 2.1 collects each row's targets as a pandas ``Series`` and then calls
    ``torch.as_tensor`` on the list, which recent pandas/torch refuse; only that
    last conversion is redone here, everything else is DGL's processing.
    """

    def process(self):  # DGL hook
        try:
            super().process()
        except ValueError as exc:
            # Only that final conversion fails this way, after every row was read.
            done = isinstance(self.labels, list) and self.labels and len(self.labels) == len(self.graphs)
            if not done or "Series" not in str(exc) or not isinstance(self.labels[0], pd.Series):
                raise
            self.labels = torch.from_numpy(np.stack([row.to_numpy(dtype=np.float32) for row in self.labels]))


class _FuncPaths(PeptidesFunctionalDataset):
    def _load(self):  # only asks DGL for its paths and checksums
        pass


class _StructPaths(PeptidesStructuralDataset):
    def _load(self):  # only asks DGL for its paths and checksums
        pass


@dataclass(frozen=True)
class _Kind:
    title: str
    offline: type
    paths: type
    num_targets: int
    columns: Tuple[str, ...]  # the CSV columns DGL reads


_KINDS: Dict[str, _Kind] = {
    "peptides-func": _Kind("Peptides-Func", OfflinePeptidesFunctionalDataset, _FuncPaths, NUM_FUNC_CLASSES,
                           ("smiles", "labels")),
    "peptides-struct": _Kind("Peptides-Struct", OfflinePeptidesStructuralDataset, _StructPaths,
                             len(STRUCT_TARGETS), ("smiles",) + STRUCT_TARGETS),
}


@dataclass(frozen=True)
class PeptidesFiles:
    """Where DGL reads and caches one Peptides dataset, and where the files come from."""

    folder: Path
    csv: Path
    split: Path
    processed: Path
    csv_url: str
    split_url: str


def _kind(name: str) -> _Kind:
    key = str(name).lower()
    if key not in _KINDS:
        raise DataError(f"unknown Peptides dataset {name!r}; choose one of {', '.join(_KINDS)}")
    return _KINDS[key]


def _root(data_dir: PathLike) -> str:
    return str(Path(data_dir).expanduser().resolve())


def peptides_files(name: str, data_dir: PathLike) -> PeptidesFiles:
    """The files DGL reads (``csv``, ``split``) and writes (``processed``) for ``name`` under ``data_dir``."""
    probe = _kind(name).paths(raw_dir=_root(data_dir))
    return PeptidesFiles(folder=Path(probe.raw_path), csv=Path(probe.raw_data_path),
                         split=Path(probe.split_data_path), processed=Path(probe.graph_path),
                         csv_url=probe.url.strip(), split_url=probe.url_stratified_split.strip())


def published_md5(name: str) -> Tuple[str, str]:
    """``(csv, split)`` MD5 checksums of the published files, as DGL records them."""
    probe = _kind(name).paths(raw_dir=os.curdir)  # no file is touched
    return probe.md5sum_data, probe.md5sum_stratified_split


def peptides_present(name: str, data_dir: PathLike) -> bool:
    """Both published files of ``name`` are under ``data_dir`` (not checked further)."""
    files = peptides_files(name, data_dir)
    return files.csv.is_file() and files.split.is_file()


def _md5(path: Path) -> str:
    digest = hashlib.md5(usedforsecurity=False)  # a file checksum, as DGL compares it
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _brief(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:200]}" if text else type(exc).__name__


def _check_csv(kind: _Kind, files: PeptidesFiles) -> None:
    """Refuse a CSV DGL cannot read before it reads it (DGL ``eval``s Func's label cells)."""
    fix = f"replace it with the published file from {files.csv_url}"
    try:
        frame = pd.read_csv(files.csv)
    except Exception as exc:
        raise DataError(f"{files.csv} is not a readable gzip CSV ({_brief(exc)}); {fix}") from exc
    missing = [column for column in kind.columns if column not in frame.columns]
    if missing:
        raise DataError(f"{files.csv} lacks the column(s) {', '.join(missing)} DGL reads for {kind.title}; {fix}")
    if "labels" in kind.columns:
        for row, cell in enumerate(frame["labels"]):
            try:
                value = ast.literal_eval(str(cell))
            except (ValueError, SyntaxError):
                value = None
            if not isinstance(value, (list, tuple)) or len(value) != kind.num_targets \
                    or any(v not in (0, 1) for v in value):
                raise DataError(f"{files.csv} row {row}: labels {str(cell)[:60]!r} is not a list of "
                                f"{kind.num_targets} zeros and ones; {fix}")
    else:
        values = frame[list(STRUCT_TARGETS)].apply(pd.to_numeric, errors="coerce").to_numpy(dtype=np.float64)
        bad = ~np.isfinite(values)
        if bad.any():
            row, col = (int(i) for i in np.argwhere(bad)[0])
            raise DataError(f"{files.csv} row {row}: target {STRUCT_TARGETS[col]} is not a finite number; {fix}")


def _read_dgl(kind: _Kind, files: PeptidesFiles, csv_md5: str, progress: bool = True):
    """DGL's dataset, reprocessed when its graph cache was built from another CSV."""
    stamp = files.processed.with_name(files.processed.name + ".source-md5")
    fresh = files.processed.is_file() and stamp.is_file() and stamp.read_text().strip() == csv_md5
    if not fresh:
        _check_csv(kind, files)
    try:
        with dgl_progress_bars(dgl_lrgb, progress):
            data = kind.offline(raw_dir=str(files.folder.parent), force_reload=not fresh, verbose=False)
    except DataError:
        raise
    except Exception as exc:
        raise DataError(f"DGL could not turn {files.csv} into graphs ({_brief(exc)}); replace it with the "
                        f"published file from {files.csv_url}") from exc
    if not fresh:
        with atomic_write(stamp, "w") as handle:
            handle.write(csv_md5 + "\n")
    return data


def _check_graphs(kind: _Kind, data, files: PeptidesFiles) -> None:
    labels = data.labels
    if tuple(labels.shape) != (len(data.graphs), kind.num_targets):
        raise DataError(f"{kind.title} from {files.csv}: labels of shape {tuple(labels.shape)}, expected "
                        f"({len(data.graphs)}, {kind.num_targets}); delete {files.processed} and load again")
    for what, vocab in (("ndata", ATOM_VOCAB_SIZES), ("edata", BOND_VOCAB_SIZES)):
        parts = [(g.ndata if what == "ndata" else g.edata)["feat"] for g in data.graphs]
        feats = torch.cat([p.reshape(-1, len(vocab)) if p.numel() else p.new_zeros(0, len(vocab)) for p in parts])
        if feats.numel() and (bool((feats < 0).any()) or bool((feats >= torch.tensor(vocab)).any())):
            raise DataError(f"{kind.title}: {what}['feat'] outside OGB's vocabularies {vocab}; delete "
                            f"{files.processed} and load again")


def _read_split(kind: _Kind, data, files: PeptidesFiles) -> Dict[str, torch.Tensor]:
    fix = f"replace it with the published file from {files.split_url}"
    try:
        raw = data.get_idx_split()
    except Exception as exc:
        raise DataError(f"DGL could not read the split file {files.split} ({_brief(exc)}); {fix}") from exc
    if not isinstance(raw, dict) or not set(SPLITS) <= set(raw):
        raise DataError(f"{files.split} is not a dict with keys {', '.join(SPLITS)}; {fix}")
    split = {}
    for name in SPLITS:
        idx = torch.as_tensor(raw[name]).reshape(-1)
        if idx.is_floating_point() or idx.dtype == torch.bool:
            raise DataError(f"{files.split}: the {name} indices are not integers; {fix}")
        idx = idx.long()
        if idx.numel() and (int(idx.min()) < 0 or int(idx.max()) >= len(data)):
            raise DataError(f"{files.split}: {name} index outside 0..{len(data) - 1} (the CSV has {len(data)} "
                            f"rows); {fix}")
        split[name] = idx
    every = torch.cat([split[name] for name in SPLITS])
    if torch.unique(every).numel() != every.numel():
        raise DataError(f"{files.split}: a row appears twice in the splits; {fix}")
    return split


#: The Laplacian of this dataset's LapPE unless ``LoadOptions.laplacian_norm`` says otherwise (the reference config's;
#: :data:`~geaet_dgl.data.registry.LAPLACIAN_NORM` must agree: ``predict`` encodes new graphs with it).
DEFAULT_LAPLACIAN_NORM = "none"


def load_peptides(name: str, options: LoadOptions) -> DatasetSplits:
    """Peptides-Func or Peptides-Struct splits (DGL's split) with Laplacian PE (and RWSE if ``rwse_k``).

    Parameters
    ----------
    name : {'peptides-func', 'peptides-struct'}
    options : LoadOptions
        ``data_dir``: the folder holding DGL's ``Peptides-func_<hash>/`` / ``Peptides-struc_<hash>/``.
        ``pe_k`` (default 10, LapPE-10 in the presets): Laplacian eigenvectors per node; ``laplacian_norm``
        (default ``'none'``, ``L = D - A``, as the reference's Peptides config); ``rwse_k``: also
        ``ndata['rwse']``. ``limit_train``, ``limit_val``, ``limit_test``: the first N graphs of a split, in
        the split file's order. ``progress``: a bar while computing encodings. ``check_md5``: refuse files
        whose MD5 differs from the published checksums DGL records.

    Returns
    -------
    DatasetSplits
        ``num_classes`` = number of targets (10 or 11); labels (G, T) float32.

    Raises
    ------
    DataError
        One line naming the file, the problem and the fix (missing, corrupt,
        another version, unreadable split).
    """
    kind = _kind(name)
    key = str(name).lower()
    files = peptides_files(key, options.data_dir)
    missing = [str(p) for p in (files.csv, files.split) if not p.is_file()]
    if missing:
        raise DataError(f"{kind.title} data is missing ({', '.join(missing)}); put DGL's {files.csv.name} "
                        f"({files.csv_url}) and {files.split.name} ({files.split_url}) into {files.folder}")
    digests = {path: _md5(path) for path in (files.csv, files.split)}
    if options.check_md5:
        for path, url, want in zip((files.csv, files.split), (files.csv_url, files.split_url), published_md5(key)):
            if digests[path] != want:
                raise DataError(f"{path} has MD5 {digests[path]}, not the published {want} (DGL's checksum): the "
                                f"file is corrupt or another version; download it again from {url}")
    data = _read_dgl(kind, files, digests[files.csv], options.progress)
    _check_graphs(kind, data, files)
    split = _read_split(kind, data, files)
    limits = options.limit_of
    stamp = f"{digests[files.csv]}:{digests[files.split]}"
    datasets, caches = {}, {}
    for part in SPLITS:
        idx = split[part] if limits[part] is None else split[part][:limits[part]]
        graphs = [data.graphs[i] for i in idx.tolist()]
        caches[part] = EncodingCache(files.folder / "geaet_cache", part, stamp)
        datasets[part] = GraphDataset(graphs, data.labels[idx].float())
    return DatasetSplits(train=datasets["train"], val=datasets["val"], test=datasets["test"],
                         num_classes=kind.num_targets, name=key, source=f"DGL {kind.title} files in {files.folder}",
                         encoding_plan=EncodingPlan(caches, default_k=10, default_norm=DEFAULT_LAPLACIAN_NORM))
