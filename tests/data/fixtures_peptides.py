"""Tiny Peptides-Func / Peptides-Struct files in the exact raw format DGL's LRGB loaders read.

A gzip CSV (``smiles`` + ``labels`` for Func, ``smiles`` + the 11 structural
targets for Struct) and a split pickle ``{'train'|'val'|'test': int64 array}``,
written where DGL looks for them, so DGL's own processing (OGB's
``smiles2graph``) runs on them.
"""
import hashlib
import pickle
from pathlib import Path

import numpy as np
import pandas as pd

from geaet_dgl.data.lrgb import peptides
from geaet_dgl.data.lrgb.peptides import STRUCT_TARGETS, peptides_files

#: Small real peptides (di- and tripeptides, aspartame), stereo and aromatic rings included.
SMILES = [
    "NCC(=O)NCC(=O)O",  # Gly-Gly
    "C[C@H](N)C(=O)NCC(=O)O",  # Ala-Gly
    "N[C@@H](Cc1ccccc1)C(=O)NCC(=O)O",  # Phe-Gly
    "O=C(NCC(=O)O)[C@@H]1CCCN1",  # Pro-Gly
    "NCC(=O)N[C@@H](CO)C(=O)N[C@@H](C)C(=O)O",  # Gly-Ser-Ala
    "NCCCC[C@H](N)C(=O)NCC(=O)O",  # Lys-Gly
    "N[C@@H](CS)C(=O)NCC(=O)O",  # Cys-Gly
    "C[C@H](NC(=O)[C@@H](N)Cc1c[nH]c2ccccc12)C(=O)O",  # Trp-Ala
    "CSCC[C@H](N)C(=O)N[C@@H](CCC(=O)O)C(=O)O",  # Met-Glu
    "COC(=O)[C@H](Cc1ccccc1)NC(=O)[C@@H](N)CC(=O)O",  # aspartame (Asp-Phe-OMe)
]
#: Not in file order, so a loader that ignores the split file is caught.
SPLIT = {"train": [7, 0, 3, 5, 9, 1], "val": [8, 2], "test": [6, 4]}


def func_labels() -> np.ndarray:
    """(10, 10) {0, 1}: every split has a label column with both a positive and a negative."""
    rows = np.arange(len(SMILES))[:, None]
    cols = np.arange(10)[None, :]
    return ((rows * 7 + cols * 3) % 5 < 2).astype(np.int64)


def struct_targets(seed: int = 0) -> np.ndarray:
    """(10, 11) raw targets on different scales (DGL standardises each column)."""
    rng = np.random.default_rng(seed)
    return rng.normal(size=(len(SMILES), len(STRUCT_TARGETS))) * np.arange(1, 12) + np.arange(11) * 10


def write_peptides_fixture(name: str, data_dir: Path, seed: int = 0, split=None) -> dict:
    """Write the CSV and split pickle of ``name`` under ``data_dir``; -> what was written."""
    files = peptides_files(name, data_dir)
    files.folder.mkdir(parents=True, exist_ok=True)
    split = {key: np.asarray(value, dtype=np.int64) for key, value in (split or SPLIT).items()}
    if name == "peptides-func":
        targets = func_labels()
        frame = pd.DataFrame({"smiles": SMILES, "labels": [str(list(map(int, row))) for row in targets]})
    else:
        targets = struct_targets(seed)
        frame = pd.DataFrame({"smiles": SMILES, **{col: targets[:, i] for i, col in enumerate(STRUCT_TARGETS)}})
    frame.to_csv(files.csv, index=False, compression="gzip")
    with open(files.split, "wb") as handle:
        pickle.dump(split, handle)
    return {"files": files, "smiles": SMILES, "targets": targets, "split": split}


def md5(path: Path) -> str:
    return hashlib.md5(Path(path).read_bytes()).hexdigest()


def accept_as_published(monkeypatch, name: str, data_dir: Path) -> None:
    """Make the loader take the fixture files of ``name`` for the published ones (their MD5)."""
    files = peptides_files(name, data_dir)
    digests = (md5(files.csv), md5(files.split))
    original = peptides.published_md5
    monkeypatch.setattr(peptides, "published_md5", lambda key: digests if key == name else original(key))
