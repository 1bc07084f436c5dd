"""PCQM4Mv2 (OGB-LSC) through OGB's ``ogb.lsc.DglPCQM4Mv2Dataset``, offline, in GraphGPS's three variants.

The files
---------
OGB-LSC publishes ``pcqm4m-v2.zip``, one folder ``pcqm4m-v2/`` with
``RELEASE_v1.txt``, ``raw/data.csv.gz`` (columns ``idx``, ``smiles``,
``homolumogap``: 3,746,620 molecules, the gap NaN for the hidden test sets) and
``split_dict.pt`` (``{'train', 'valid', 'test-dev', 'test-challenge'}`` index
arrays: 3,378,606 / 73,545 / 147,037 / 147,432). Unzip it into ``--data-dir``:
``DglPCQM4Mv2Dataset(root=data_dir)`` reads ``data_dir/pcqm4m-v2/``, turns every
SMILES into a graph with OGB's ``smiles2graph`` (RDKit) once and keeps them in
``processed/dgl_data_processed``. Nothing is downloaded: a missing file is a
one-line error saying where it goes.

The variants (GraphGPS's ``PCQM4Mv2-<variant>``, ``master_loader.preformat_OGB_PCQM4Mv2``)
-------------------------------------------------------------------------------------------
``pcqm4mv2`` (``full``)
    OGB's ``train`` shuffled by ``numpy.random.default_rng(42)``: its first
    150,000 molecules are the validation set, the rest (3,228,606) the
    training set; OGB's ``valid`` (73,545, labelled) is the test set.
``pcqm4mv2-subset``
    The same, cut down for quick runs: the first 10 % of that training set
    (322,860), the first 50,000 of that validation set, OGB's ``valid`` as
    test set.
``pcqm4mv2-inference``
    OGB's ``valid`` / ``test-dev`` / ``test-challenge`` as train / val / test:
    for scoring a trained model on the challenge sets (``evaluate`` /
    ``predict``); val and test have no labels (NaN), so it does not train.

Graphs carry ``ndata['feat']`` (N, 9) and ``edata['feat']`` (E, 3) int64 OGB
atom / bond features (``embedding`` encoders with OGB's vocabularies, GraphGPS's
``Atom`` / ``Bond``); labels (G, 1) float32 HOMO-LUMO gaps in eV (L1, MAE).
Laplacian PEs use the unnormalised Laplacian (GraphGPS's ``pcqm4m-*`` configs).
"""
from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Dict, List, Union

import numpy as np
import torch

from ..dataset import DatasetSplits, GraphDataset
from ..encodings.apply import EncodingCache, EncodingPlan, file_stamp
from ..errors import DataError
from ..library_output import quiet_ogb
from ..options import LoadOptions

log = logging.getLogger(__name__)
PathLike = Union[str, os.PathLike]

URL = "https://dgl-data.s3-accelerate.amazonaws.com/dataset/OGB-LSC/pcqm4m-v2.zip"
FOLDER = "pcqm4m-v2"
RELEASE = "RELEASE_v1.txt"
PROCESSED = Path("processed") / "dgl_data_processed"
#: Our dataset name -> GraphGPS's variant.
VARIANTS = {"pcqm4mv2": "full", "pcqm4mv2-subset": "subset", "pcqm4mv2-inference": "inference"}
OGB_SPLITS = {"train": 3_378_606, "valid": 73_545, "test-dev": 147_037, "test-challenge": 147_432}
NUM_MOLECULES = 3_746_620
#: GraphGPS's constants: the validation molecules taken from OGB's train, the seed of that shuffle, and the
#: subset's training fraction and validation size.
VALID_FROM_TRAIN = 150_000
SHUFFLE_SEED = 42
SUBSET_TRAIN_FRACTION = 0.1
SUBSET_VALID = 50_000
SIZES = {
    "pcqm4mv2": (OGB_SPLITS["train"] - VALID_FROM_TRAIN, VALID_FROM_TRAIN, OGB_SPLITS["valid"]),
    "pcqm4mv2-subset": (int(SUBSET_TRAIN_FRACTION * (OGB_SPLITS["train"] - VALID_FROM_TRAIN)), SUBSET_VALID,
                        OGB_SPLITS["valid"]),
    "pcqm4mv2-inference": (OGB_SPLITS["valid"], OGB_SPLITS["test-dev"], OGB_SPLITS["test-challenge"]),
}


def pcqm4mv2_files(data_dir: PathLike) -> Dict[str, Path]:
    """``{'release', 'raw', 'split', 'processed'}``: the files OGB reads and writes under ``data_dir``."""
    folder = Path(data_dir) / FOLDER
    return {"release": folder / RELEASE, "raw": folder / "raw" / "data.csv.gz", "split": folder / "split_dict.pt",
            "processed": folder / PROCESSED}


def missing_files(data_dir: PathLike) -> List[Path]:
    """What OGB needs that is not there (``raw/data.csv.gz`` not once it is processed)."""
    files = pcqm4mv2_files(data_dir)
    needed = [files["release"], files["split"]] + ([] if files["processed"].is_file() else [files["raw"]])
    return [p for p in needed if not p.is_file()]


def pcqm4mv2_present(data_dir: PathLike) -> bool:
    return not missing_files(data_dir)


def _where(data_dir: PathLike) -> str:
    return (f"download {URL} and unzip it into {os.fspath(data_dir)} (so that "
            f"{Path(data_dir) / FOLDER / RELEASE} exists)")


def variant_split(split_dict: Dict[str, torch.Tensor], variant: str) -> Dict[str, torch.Tensor]:
    """GraphGPS's ``train`` / ``val`` / ``test`` indices of ``variant`` from OGB's ``split_dict``."""
    if variant == "inference":
        return {"train": split_dict["valid"], "val": split_dict["test-dev"], "test": split_dict["test-challenge"]}
    shuffled = torch.from_numpy(np.random.default_rng(seed=SHUFFLE_SEED).permutation(split_dict["train"].numpy()))
    valid, train = shuffled[:VALID_FROM_TRAIN], shuffled[VALID_FROM_TRAIN:]
    if variant == "subset":
        train, valid = train[:int(SUBSET_TRAIN_FRACTION * len(train))], valid[:SUBSET_VALID]
    return {"train": train, "val": valid, "test": split_dict["valid"]}


def _read(data_dir: PathLike):
    missing = missing_files(data_dir)
    if missing:
        raise DataError(f"pcqm4mv2: {missing[0]} is missing; {_where(data_dir)}")
    try:
        with quiet_ogb():
            from ogb.lsc import DglPCQM4Mv2Dataset

            return DglPCQM4Mv2Dataset(root=os.fspath(data_dir))
    except Exception as exc:
        raise DataError(f"pcqm4mv2: OGB could not read {Path(data_dir) / FOLDER} ({type(exc).__name__}: "
                        f"{' '.join(str(exc).split())[:200]}); {_where(data_dir)}") from exc


def _split_dict(dataset, data_dir: PathLike) -> Dict[str, torch.Tensor]:
    files = pcqm4mv2_files(data_dir)
    try:
        raw = dataset.get_idx_split()
    except Exception as exc:
        raise DataError(f"pcqm4mv2: OGB could not read {files['split']} ({type(exc).__name__}); "
                        f"{_where(data_dir)}") from exc
    missing = [key for key in OGB_SPLITS if key not in raw]
    if missing:
        raise DataError(f"pcqm4mv2: {files['split']} lacks the split(s) {', '.join(missing)}; {_where(data_dir)}")
    split = {}
    for key in OGB_SPLITS:
        idx = torch.as_tensor(raw[key]).reshape(-1).long()
        if idx.numel() and (int(idx.min()) < 0 or int(idx.max()) >= len(dataset)):
            raise DataError(f"pcqm4mv2: {files['split']} names molecule {int(idx.max())} of {len(dataset)}; "
                            f"{_where(data_dir)}")
        split[key] = idx
    return split


#: The Laplacian of this dataset's LapPE unless ``LoadOptions.laplacian_norm`` says otherwise (the reference config's;
#: :data:`~geaet_dgl.data.registry.LAPLACIAN_NORM` must agree: ``predict`` encodes new graphs with it).
DEFAULT_LAPLACIAN_NORM = "none"


def load_pcqm4mv2(name: str, options: LoadOptions) -> DatasetSplits:
    """One of :data:`VARIANTS` with Laplacian PE (and RWSE if ``rwse_k``), read by OGB's LSC loader.

    Parameters
    ----------
    name : {'pcqm4mv2', 'pcqm4mv2-subset', 'pcqm4mv2-inference'}
    options : LoadOptions
        ``data_dir``: holds ``pcqm4m-v2/`` (see the module docstring). ``pe_k`` (default 0), ``rwse_k``,
        ``laplacian_norm`` (default ``'none'``): encodings (cached in ``pcqm4m-v2/geaet_cache``, per
        variant and split). ``limit_train``, ``limit_val``, ``limit_test``: the first N graphs of a split,
        in the variant's order.

    Returns
    -------
    DatasetSplits
        Labels (G, 1) float32 (NaN in the inference variant's val / test); ``num_classes`` 1.
    """
    key, data_dir = str(name).lower(), options.data_dir
    if key not in VARIANTS:
        raise DataError(f"unknown PCQM4Mv2 variant {name!r}; choose one of {', '.join(VARIANTS)}")
    dataset = _read(data_dir)
    split = variant_split(_split_dict(dataset, data_dir), VARIANTS[key])
    labels = torch.as_tensor(dataset.labels).reshape(-1, 1).float()
    files = pcqm4mv2_files(data_dir)
    stamp = file_stamp(files["processed"])
    limits = options.limit_of
    parts, caches = {}, {}
    for part in ("train", "val", "test"):
        idx = split[part] if limits[part] is None else split[part][:limits[part]]
        graphs = [dataset.graphs[i] for i in idx.tolist()]
        caches[part] = EncodingCache(files["processed"].parent.parent / "geaet_cache", f"{VARIANTS[key]}_{part}", stamp)
        parts[part] = GraphDataset(graphs, labels[idx])
    return DatasetSplits(train=parts["train"], val=parts["val"], test=parts["test"], num_classes=1, name=key,
                         source=f"OGB-LSC PCQM4Mv2 ({VARIANTS[key]} variant) read by ogb.lsc.DglPCQM4Mv2Dataset "
                                f"from {files['release'].parent}",
                         encoding_plan=EncodingPlan(caches, default_norm=DEFAULT_LAPLACIAN_NORM))
