"""A tiny PCQM4Mv2 folder in OGB-LSC's layout: ``pcqm4m-v2/RELEASE_v1.txt``, ``raw/data.csv.gz`` (``idx``,
``smiles``, ``homolumogap``; NaN for the hidden test sets) and ``split_dict.pt``, so that OGB's own
``DglPCQM4Mv2Dataset`` processing (``smiles2graph``) runs on it.

The published split holds 150,000 validation molecules out of OGB's train; :func:`small_variants` shrinks
GraphGPS's constants to the fixture's size.
"""
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from geaet_dgl.data.ogbg import pcqm4mv2
from tests.data.fixtures_ogbg import SMILES

#: Indices into SMILES (16 molecules): OGB's four splits, not in file order.
SPLIT = {"train": [9, 0, 3, 12, 5, 14, 7, 1, 10, 15], "valid": [8, 2, 13], "test-dev": [6, 4],
         "test-challenge": [11]}


def write_pcqm4mv2_fixture(data_dir: Path, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    files = pcqm4mv2.pcqm4mv2_files(data_dir)
    files["raw"].parent.mkdir(parents=True, exist_ok=True)
    files["release"].write_text("# Release note\n")
    gaps = rng.uniform(3.0, 9.0, len(SMILES)).round(6)
    gaps[SPLIT["test-dev"] + SPLIT["test-challenge"]] = np.nan
    pd.DataFrame({"idx": np.arange(len(SMILES)), "smiles": SMILES, "homolumogap": gaps}).to_csv(
        files["raw"], index=False, compression="gzip")
    torch.save({key: np.asarray(value, dtype=np.int64) for key, value in SPLIT.items()}, files["split"])
    return {"gaps": gaps, "split": SPLIT, "files": files}


def small_variants(monkeypatch) -> None:
    """GraphGPS's 150,000 / 50,000 / 10 % for the fixture: 3 validation molecules from train, 2 in the subset's
    validation set, half of the rest for the subset's training set."""
    monkeypatch.setattr(pcqm4mv2, "VALID_FROM_TRAIN", 3)
    monkeypatch.setattr(pcqm4mv2, "SUBSET_VALID", 2)
    monkeypatch.setattr(pcqm4mv2, "SUBSET_TRAIN_FRACTION", 0.5)
