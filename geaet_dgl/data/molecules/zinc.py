"""ZINC (the 12k subset of Benchmarking GNNs) through DGL's ``ZINCDataset``, offline.

DGL reads ``data_dir/zinc_<hash of its URL>/ZincDGL_{train,valid,test}.bin``
(``dgl.save_graphs`` files with the graphs and ``{'g_label': (G,)}``
constrained solubility): 10,000 / 1,000 / 1,000 molecules. Its ``download``
is replaced by an error, so nothing reaches for the network; unpack DGL's
``ZINC12k.zip`` into the folder :func:`zinc_files` names.

Graphs carry ``ndata['feat']`` (N, 1) int64 atom types (28) and
``edata['feat']`` (E, 1) int64 bond types (4), read by the ``embedding``
encoders (``node_vocab_sizes=[28]``, ``edge_vocab_sizes=[4]``); labels are
(G,) float32 regression targets (L1 loss, MAE).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Dict, Union

import torch
from dgl.data import ZINCDataset

from ..dataset import DatasetSplits, GraphDataset
from ..encodings.apply import EncodingPlan, beside
from ..errors import DataError
from ..options import LoadOptions

PathLike = Union[str, os.PathLike]
DGL_MODES = {"train": "train", "val": "valid", "test": "test"}
NUM_ATOM_TYPES = 28
NUM_BOND_TYPES = 4
ZINC_SIZES = {"train": 10000, "val": 1000, "test": 1000}


class OfflineZINCDataset(ZINCDataset):
    """DGL's ZINC dataset that raises instead of downloading."""

    def download(self):  # DGL hook
        raise DataError(f"ZINC files are missing under {self.raw_path}; unpack DGL's ZINC12k.zip there")


class _Probe(ZINCDataset):
    def _load(self):  # only asks DGL for its paths
        pass


def zinc_files(data_dir: PathLike) -> Dict[str, Path]:
    """``{'train'|'val'|'test': path}`` of the files DGL reads under ``data_dir``."""
    root = str(Path(data_dir).expanduser().resolve())
    return {split: Path(_Probe(mode=mode, raw_dir=root).graph_path) for split, mode in DGL_MODES.items()}


def zinc_present(data_dir: PathLike) -> bool:
    return all(p.is_file() for p in zinc_files(data_dir).values())


#: The Laplacian of this dataset's LapPE unless ``LoadOptions.laplacian_norm`` says otherwise (the reference config's;
#: :data:`~geaet_dgl.data.registry.LAPLACIAN_NORM` must agree: ``predict`` encodes new graphs with it).
DEFAULT_LAPLACIAN_NORM = "sym"


def load_zinc(options: LoadOptions) -> DatasetSplits:
    """ZINC-12k splits (graph regression) from ``options.data_dir``, with Laplacian PE (``pe_k``, default 8;
    ``'sym'`` Laplacian) and RWSE if ``rwse_k``.

    Returns
    -------
    DatasetSplits
        ``num_classes=1`` (one regression target); labels (G,) float32.
    """
    data_dir = options.data_dir
    files = zinc_files(data_dir)
    missing = [str(p) for p in files.values() if not p.is_file()]
    if missing:
        raise DataError(f"ZINC data is missing ({', '.join(missing)}); unpack DGL's ZINC12k.zip into "
                        f"{files['train'].parent}")
    limits = options.limit_of
    root = str(Path(data_dir).expanduser().resolve())
    splits, caches = {}, {}
    for split, mode in DGL_MODES.items():
        try:
            data = OfflineZINCDataset(mode=mode, raw_dir=root)
            count = len(data) if limits[split] is None else min(limits[split], len(data))
            pairs = [data[i] for i in range(count)]
        except DataError:
            raise
        except Exception as exc:
            raise DataError(f"DGL could not read {files[split]} ({type(exc).__name__}: {exc}); replace it with "
                            "DGL's ZincDGL file") from exc
        graphs = [g for g, _ in pairs]
        for g in graphs:
            g.ndata["feat"] = g.ndata["feat"].long().reshape(g.num_nodes(), 1)
            g.edata["feat"] = g.edata["feat"].long().reshape(g.num_edges(), 1)
            if g.num_nodes() and int(g.ndata["feat"].max()) >= NUM_ATOM_TYPES:
                raise DataError(f"ZINC {split}: atom type outside 0..{NUM_ATOM_TYPES - 1} in {files[split]}")
            if g.num_edges() and int(g.edata["feat"].max()) >= NUM_BOND_TYPES:
                raise DataError(f"ZINC {split}: bond type outside 0..{NUM_BOND_TYPES - 1} in {files[split]}")
        labels = torch.stack([torch.as_tensor(y).reshape(()) for _, y in pairs]).float() if pairs \
            else torch.zeros(0)
        caches[split] = beside(files[split], mode)
        splits[split] = GraphDataset(graphs, labels)
    return DatasetSplits(train=splits["train"], val=splits["val"], test=splits["test"], num_classes=1,
                         name="zinc", source=f"DGL ZINC-12k files in {files['train'].parent}",
                         encoding_plan=EncodingPlan(caches, default_k=8, default_norm=DEFAULT_LAPLACIAN_NORM))
