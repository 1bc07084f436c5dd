"""PCQM-Contact (LRGB): inductive link prediction of 3D atom contacts, from LRGB's raw files, offline.

The files, in the layout GraphGPS's ``PygPCQM4Mv2ContactDataset(root)`` uses
(so ``data_dir`` may be GraphGPS's own ``datasets`` folder)::

    data_dir/pcqm4m-v2-contact/530k/raw/pcqm4m-contact.tsv.gz    LRGB's release (MD5 f7ffb279...)
    data_dir/pcqm4m-v2-contact/530k/530k_shuffle_split_dict.pt   LRGB's split (MD5 e7951276...)

``pcqm4m-contact.tsv.gz`` is a gzipped TSV with one column, ``cxsmiles``:
one Chemaxon extended SMILES per PCQM4Mv2 training molecule (3,378,606
rows), hydrogens explicit, in which every atom in contact carries the atom
property ``contact``: ``;``-separated contact ids, each id held by exactly two
atoms (closer than 3.5 A in the 3D conformer, at least 5 bonds apart). The
``530k`` subset keeps rows 0, 6, 12, ... and drops the molecules without a
contact: 529,434 graphs. The split file is a ``torch.save`` of
``{'train', 'val', 'test'}`` index arrays into those graphs (476,490 /
26,472 / 26,472); with ``generate=True`` a missing one is written as GraphGPS
regenerates it (``numpy.random.default_rng(42)`` permutation, 90/5/5).

As in GraphGPS, a molecule is read with ``MolFromSmiles(cxsmiles,
sanitize=False)`` (sanitising would remove the explicit hydrogens the contacts
refer to, so ``ogb.utils.smiles2graph`` itself cannot be used) and featurised by OGB's ``atom_to_feature_vector`` /
``bond_to_feature_vector``, the featurisers of ``ogb.utils.smiles2graph``:
``ndata['feat']`` (N, 9) and ``edata['feat']`` (E, 3) int64 for the
``embedding`` encoders, each bond as two directed edges. The targets of a
graph are its contact pairs in both directions, sorted, (P, 2) int64 node ids
(``GraphDataset(level='link')``). The parsed graphs are cached next to the
raw file (``processed/geaet_dgl_530k.pt``, keyed by the raw file's size and
mtime); Laplacian PEs use the unnormalised Laplacian, as GraphGPS's
``pcqm-contact-GPS.yaml`` does.
"""
from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Dict, List, Optional, Union

import dgl
import numpy as np
import torch
from ogb.utils.features import atom_to_feature_vector, bond_to_feature_vector

from ...atomic import atomic_write
from ..dataset import DatasetSplits, GraphDataset
from ..encodings.apply import EncodingCache, EncodingPlan
from ..errors import DataError
from ..options import LoadOptions

log = logging.getLogger(__name__)

PathLike = Union[str, os.PathLike]
SUBSET = "530k"
SUBSET_STEP = 6  # the 530k subset keeps every 6th molecule of the full file
SPLIT = "shuffle"
SPLIT_NAMES = ("train", "val", "test")
PCQM_CONTACT_SIZES = {"train": 476_490, "val": 26_472, "test": 26_472}
NUM_GRAPHS = 529_434
CACHE_FORMAT = 1
CHUNK_ROWS = SUBSET_STEP * 20_000  # rows read at a time; a multiple of 6, so every chunk starts on a kept row


def pcqm_contact_files(data_dir: PathLike) -> Dict[str, Path]:
    """``{'raw': the TSV, 'split': the shuffle split file, 'processed': our parsed-graph cache}``."""
    folder = Path(data_dir).expanduser() / "pcqm4m-v2-contact" / SUBSET
    return {"raw": folder / "raw" / "pcqm4m-contact.tsv.gz",
            "split": folder / f"{SUBSET}_{SPLIT}_split_dict.pt",
            "processed": folder / "processed" / f"geaet_dgl_{SUBSET}.pt"}


def pcqm_contact_present(data_dir: PathLike) -> bool:
    files = pcqm_contact_files(data_dir)
    return files["raw"].is_file() and files["split"].is_file()


def molecule_graph(cxsmiles: str) -> Optional[dict]:
    """One CXSMILES -> ``{'node_feat' (N, 9), 'src', 'dst' (E,), 'edge_feat' (E, 3), 'pairs' (P, 2)}``
    int64 numpy arrays, or None if the molecule has no contact (LRGB leaves those out).

    Raises
    ------
    ValueError
        RDKit cannot read it, or a contact id is not held by exactly two atoms.
    """
    from rdkit import Chem

    mol = Chem.MolFromSmiles(cxsmiles, sanitize=False)
    if mol is None:
        raise ValueError("RDKit cannot parse it")
    # OGB's degree and H-count features need implicit valences, which RDKit's parser computes without
    # sanitising only for some inputs (e.g. CXSMILES with coordinates): compute them, still unsanitised.
    mol.UpdatePropertyCache(strict=False)
    holders: Dict[int, List[int]] = {}
    for atom in mol.GetAtoms():
        if atom.HasProp("contact"):
            for value in atom.GetProp("contact").split(";"):
                holders.setdefault(int(value), []).append(atom.GetIdx())
    if not holders:
        return None
    for contact in range(max(holders) + 1):
        atoms = set(holders.get(contact, ()))
        if len(atoms) != 2:
            raise ValueError(f"contact id {contact} is held by {len(atoms)} atoms, not 2")
    pairs = sorted({(a, b) for i, j in holders.values() for a, b in ((i, j), (j, i))})
    src, dst, edge_feat = [], [], []
    for bond in mol.GetBonds():
        i, j = bond.GetBeginAtomIdx(), bond.GetEndAtomIdx()
        feat = bond_to_feature_vector(bond)
        src += [i, j]
        dst += [j, i]
        edge_feat += [feat, feat]
    return {"node_feat": np.array([atom_to_feature_vector(a) for a in mol.GetAtoms()], dtype=np.int64),
            "src": np.array(src, dtype=np.int64), "dst": np.array(dst, dtype=np.int64),
            "edge_feat": np.array(edge_feat, dtype=np.int64).reshape(-1, 3),
            "pairs": np.array(pairs, dtype=np.int64)}


def _read_cxsmiles(path: Path) -> List[str]:
    """The 530k subset's CXSMILES (every 6th row of the TSV's ``cxsmiles`` column), read in chunks."""
    import pandas as pd

    kept: List[str] = []
    try:
        for chunk in pd.read_csv(path, sep="\t", usecols=["cxsmiles"], chunksize=CHUNK_ROWS):
            kept += [str(s) for s in chunk["cxsmiles"].iloc[::SUBSET_STEP]]
    except Exception as exc:
        reason = (str(exc).strip().splitlines() or [""])[0]
        raise DataError(f"cannot read {path} as LRGB's TSV with a 'cxsmiles' column ({type(exc).__name__}: "
                        f"{reason}); download pcqm4m-contact.tsv.gz again") from exc
    return kept


def _parse_all(path: Path, progress: bool) -> Dict[str, torch.Tensor]:
    """Every kept molecule of the raw file, concatenated into flat tensors."""
    from tqdm.auto import tqdm

    parts = []
    for number, smiles in enumerate(tqdm(_read_cxsmiles(path), desc="PCQM-Contact molecules", unit="mol",
                                         disable=not progress)):
        try:
            graph = molecule_graph(smiles)
        except Exception as exc:
            line = number * SUBSET_STEP + 2  # 1-based, after the header line
            reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise DataError(f"{path}: line {line} is not a valid contact CXSMILES ({reason}); download "
                            "pcqm4m-contact.tsv.gz again") from exc
        if graph is not None:
            parts.append(graph)
    empty = {"node_feat": np.zeros((0, 9), np.int64), "edge_feat": np.zeros((0, 3), np.int64),
             "src": np.zeros(0, np.int64), "dst": np.zeros(0, np.int64), "pairs": np.zeros((0, 2), np.int64)}
    flat = {key: torch.from_numpy(np.concatenate([p[key] for p in parts] + [value]))
            for key, value in empty.items()}
    sizes = {f"num_{name}": torch.tensor([len(p[key]) for p in parts], dtype=torch.int64)
             for name, key in (("nodes", "node_feat"), ("edges", "src"), ("pairs", "pairs"))}
    # Small dtypes on disk: OGB's vocabularies fit a byte, molecules' node ids an int32.
    return {"node_feat": flat["node_feat"].to(torch.uint8), "edge_feat": flat["edge_feat"].to(torch.uint8),
            "src": flat["src"].to(torch.int32), "dst": flat["dst"].to(torch.int32),
            "pairs": flat["pairs"].to(torch.int32), **sizes}


def _stamp(path: Path) -> str:
    stat = path.stat()
    return f"{stat.st_size}:{stat.st_mtime_ns}"


def _processed(files: Dict[str, Path], progress: bool) -> Dict[str, torch.Tensor]:
    """The parsed graphs: from our cache if it matches the raw file, else parsed (minutes) and cached."""
    stamp = _stamp(files["raw"])
    if files["processed"].is_file():
        try:
            cached = torch.load(files["processed"], map_location="cpu", weights_only=True)
            if cached.get("format") == CACHE_FORMAT and cached.get("stamp") == stamp:
                return cached["tensors"]
        except Exception as exc:  # unreadable or truncated: parse again
            log.warning("ignoring the unreadable cache %s (%s)", files["processed"], exc)
    tensors = _parse_all(files["raw"], progress)
    with atomic_write(files["processed"]) as handle:
        torch.save({"format": CACHE_FORMAT, "stamp": stamp, "tensors": tensors}, handle)
    return tensors


def shuffle_split(num_graphs: int, seed: int = 42) -> Dict[str, np.ndarray]:
    """GraphGPS's ``create_shuffle_split``: a seeded permutation cut 90/5/5 -> index arrays."""
    order = np.random.default_rng(seed=seed).permutation(num_graphs)
    train_end = int((1 - 0.05 - 0.05) * num_graphs)
    rest = order[train_end:]
    return {"train": order[:train_end], "val": rest[:int(0.5 * len(rest))], "test": rest[int(0.5 * len(rest)):]}


def _read_split(path: Path, num_graphs: int) -> Dict[str, torch.Tensor]:
    try:
        # LRGB's file pickles numpy arrays, which the weights-only loader refuses.
        raw = torch.load(path, map_location="cpu", weights_only=False)
        split = {name: torch.as_tensor(np.asarray(raw[name]), dtype=torch.int64).reshape(-1)
                 for name in SPLIT_NAMES}
    except Exception as exc:
        reason = (str(exc).strip().splitlines() or [""])[0]
        raise DataError(f"cannot read the split file {path} ({type(exc).__name__}: {reason}); download "
                        f"{path.name} again, or delete it and --set data.generate=true") from exc
    for name, index in split.items():
        if index.numel() and (int(index.min()) < 0 or int(index.max()) >= num_graphs):
            raise DataError(f"{path}: the {name} split indexes graph {int(index.max())} but the raw file has "
                            f"{num_graphs} graphs with contacts; the split does not belong to this file")
    return split


def _build(tensors: Dict[str, torch.Tensor], index: torch.Tensor) -> GraphDataset:
    starts = {key: torch.cat([torch.zeros(1, dtype=torch.int64), torch.cumsum(tensors[f"num_{key}"], 0)])
              for key in ("nodes", "edges", "pairs")}
    graphs, pairs = [], []
    for i in index.tolist():
        n0, n1 = int(starts["nodes"][i]), int(starts["nodes"][i + 1])
        e0, e1 = int(starts["edges"][i]), int(starts["edges"][i + 1])
        p0, p1 = int(starts["pairs"][i]), int(starts["pairs"][i + 1])
        g = dgl.graph((tensors["src"][e0:e1].long(), tensors["dst"][e0:e1].long()), num_nodes=n1 - n0)
        g.ndata["feat"] = tensors["node_feat"][n0:n1].long()
        g.edata["feat"] = tensors["edge_feat"][e0:e1].long()
        graphs.append(g)
        pairs.append(tensors["pairs"][p0:p1].long())
    counts = torch.tensor([len(p) for p in pairs], dtype=torch.int64)
    labels = torch.cat(pairs) if pairs else torch.zeros(0, 2, dtype=torch.int64)
    return GraphDataset(graphs, labels, level="link", counts=counts)


#: The Laplacian of this dataset's LapPE unless ``LoadOptions.laplacian_norm`` says otherwise (the reference config's;
#: :data:`~geaet_dgl.data.registry.LAPLACIAN_NORM` must agree: ``predict`` encodes new graphs with it).
DEFAULT_LAPLACIAN_NORM = "none"


def load_pcqm_contact(options: LoadOptions) -> DatasetSplits:
    """PCQM-Contact's shuffle split as link-level datasets, with Laplacian PE (and RWSE if ``rwse_k``).

    Parameters
    ----------
    options : LoadOptions
        ``data_dir``: the folder holding ``pcqm4m-v2-contact/`` (see the module docstring).
        ``limit_train``, ``limit_val``, ``limit_test``: the first N graphs of a split (in the split file's
        order). ``generate``: write a missing split file as GraphGPS would regenerate it. ``pe_k``
        (default 8), ``laplacian_norm`` (default ``'none'``), ``rwse_k``: the encodings.

    Returns
    -------
    DatasetSplits
        ``num_classes=1`` (one logit per pair); each item is ``(graph, (P, 2) contact pairs)``.
    """
    files = pcqm_contact_files(options.data_dir)
    if not files["raw"].is_file():
        raise DataError(f"PCQM-Contact data is missing ({files['raw']}); put LRGB's pcqm4m-contact.tsv.gz there "
                        "and its 530k_shuffle_split_dict.pt one folder up")
    if not files["split"].is_file() and not options.generate:
        raise DataError(f"the PCQM-Contact split file is missing ({files['split']}); put LRGB's "
                        f"{files['split'].name} there, or --set data.generate=true to regenerate it as GraphGPS does")
    tensors = _processed(files, options.progress)
    num_graphs = len(tensors["num_nodes"])
    if not files["split"].is_file():
        with atomic_write(files["split"]) as handle:
            torch.save(shuffle_split(num_graphs), handle)
    split = _read_split(files["split"], num_graphs)
    limits = options.limit_of
    stamp = f"{_stamp(files['raw'])}:{_stamp(files['split'])}"
    datasets, caches = {}, {}
    for name in SPLIT_NAMES:
        index = split[name][:limits[name]] if limits[name] is not None else split[name]
        dataset = _build(tensors, index)
        caches[name] = EncodingCache(files["processed"].parent / "geaet_cache", name, stamp)
        datasets[name] = dataset
    return DatasetSplits(train=datasets["train"], val=datasets["val"], test=datasets["test"], num_classes=1,
                         name="pcqm-contact", source=f"LRGB PCQM-Contact files in {files['raw'].parent.parent}",
                         encoding_plan=EncodingPlan(caches, default_k=8, default_norm=DEFAULT_LAPLACIAN_NORM))
