"""A tiny PCQM-Contact in LRGB's raw format: ``pcqm4m-contact.tsv.gz`` (column ``cxsmiles``) + split file.

Molecules carry explicit hydrogens and the atom property ``contact`` (``;``-separated
contact ids, each on two atoms), written by RDKit's ``MolToCXSmiles`` as LRGB's
notebook writes them. Each atom also carries ``orig`` (its index before RDKit
reorders the atoms for the SMILES), so tests can map the contacts back.
"""
import gzip
from pathlib import Path
from typing import Dict, List, Tuple

import numpy as np
import torch
from rdkit import Chem

from geaet_dgl.data.lrgb.pcqm_contact import pcqm_contact_files

#: (SMILES, contacts as pairs of atom indices of Chem.AddHs(MolFromSmiles(smiles))), kept in the 530k subset.
MOLECULES: List[Tuple[str, List[Tuple[int, int]]]] = [
    ("CCO", [(0, 8)]),
    ("c1ccccc1O", [(0, 3), (6, 12), (1, 4)]),
    ("CC(=O)N", []),  # no contact: LRGB leaves it out
    ("OCC(O)CO", [(0, 5), (0, 7)]),  # atom 0 in two contacts
    ("CC=CC", [(0, 3)]),
    ("C1CC1N", [(3, 4), (5, 9)]),
    ("CN(C)C", [(0, 2), (4, 8)]),
]
#: Indices into the kept graphs (the molecules with a contact, in order): train / val / test.
SPLIT = {"train": np.array([3, 0, 4, 1]), "val": np.array([5]), "test": np.array([2])}


def contact_cxsmiles(smiles: str, contacts: List[Tuple[int, int]]) -> str:
    mol = Chem.AddHs(Chem.MolFromSmiles(smiles))
    holders: Dict[int, List[str]] = {}
    for number, (a, b) in enumerate(contacts):
        holders.setdefault(a, []).append(str(number))
        holders.setdefault(b, []).append(str(number))
    for atom in mol.GetAtoms():
        atom.SetIntProp("orig", atom.GetIdx())
        if atom.GetIdx() in holders:
            atom.SetProp("contact", ";".join(holders[atom.GetIdx()]))
    return Chem.MolToCXSmiles(mol)


def write_tsv(path: Path, rows: List[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt") as handle:
        handle.write("cxsmiles\n" + "".join(f"{row}\n" for row in rows))


def write_pcqm_contact_fixture(data_dir: Path, split=True) -> List[str]:
    """Write the raw files under ``data_dir``; -> the CXSMILES of the kept rows (0, 6, 12, ...).

    The rows between the kept ones are not valid SMILES: only every 6th row may be read.
    """
    files = pcqm_contact_files(data_dir)
    kept = [contact_cxsmiles(smiles, contacts) for smiles, contacts in MOLECULES]
    rows = []
    for number, cxsmiles in enumerate(kept):
        rows.append(cxsmiles)
        if number < len(kept) - 1:
            rows += [f"not-a-molecule-{number}-{k}" for k in range(5)]
    write_tsv(files["raw"], rows)
    if split:
        torch.save(SPLIT, files["split"])
    return kept
