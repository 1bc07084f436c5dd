"""A graph file's train / val / test split: a split file (JSON or NPZ), a run's recorded split, or seeded fractions.

Part of :mod:`.graph_files`' loading of a file; :func:`split_indices` cuts a split.
"""
from __future__ import annotations

import json
import os
import re
from typing import Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import torch

from ..errors import DataError, first_line

PathLike = Union[str, os.PathLike]

SPLITS = ("train", "val", "test")
DEFAULT_SPLIT = (0.8, 0.1, 0.1)


def split_indices(num_graphs: int, path: PathLike, split_file: Optional[PathLike] = None,
                  fractions: Optional[Sequence[float]] = None, seed: int = 0,
                  legacy: bool = False) -> Dict[str, List[int]]:
    """``{'train', 'val', 'test'}`` -> sorted graph indices, from ``split_file`` or a seeded random split.

    ``fractions`` (default 0.8/0.1/0.1) are positive and add up to 1; the
    random split is a permutation seeded by ``seed``, cut into
    :func:`split_sizes` graphs for train, val and test. ``legacy``: the cut
    of runs that predate the recorded split (``data.split_indices``):
    ``round(f * G)`` for val and test, the rest for train (or ``round(f * G)``
    where the fractions add up to less than 1), so those runs keep their split.
    """
    if split_file is not None:
        return read_split_file(split_file, num_graphs, path)
    if legacy:
        fractions = split_fractions(fractions, allow_unused=True)
        n_val, n_test = (int(round(f * num_graphs)) for f in fractions[1:])
        n_train = num_graphs - n_val - n_test if sum(fractions) > 1 - 1e-6 else int(round(fractions[0] * num_graphs))
    else:
        fractions = split_fractions(fractions)
        n_train, n_val, n_test = split_sizes(num_graphs, fractions)
    if min(n_train, n_val, n_test) < 1:
        raise DataError(f"{os.fspath(path)} has {num_graphs} graphs: too few for the split {list(fractions)} "
                        f"({n_train}/{n_val}/{n_test}); every split needs a graph: add graphs or pass a --split-file")
    order = torch.randperm(num_graphs, generator=torch.Generator().manual_seed(int(seed))).tolist()
    cuts = {"train": order[:n_train], "val": order[n_train:n_train + n_val],
            "test": order[n_train + n_val:n_train + n_val + n_test]}
    return {name: sorted(indices) for name, indices in cuts.items()}


def recorded_split(indices: Dict[str, List[int]], num_graphs: int, path: PathLike) -> Dict[str, List[int]]:
    """A run's recorded split, checked against the file as it is now (every index still a graph of it)."""
    if not isinstance(indices, dict) or any(not isinstance(indices.get(name), list) for name in SPLITS):
        raise DataError(f"the run's recorded split of {os.fspath(path)} is damaged (data.split_indices must map "
                        "train/val/test to index lists); use another checkpoint of the run")
    for name in SPLITS:
        outside = [i for i in indices[name] if not isinstance(i, int) or not 0 <= i < num_graphs]
        if outside:
            raise DataError(f"the run's {name} split names graph {outside[0]} but {os.fspath(path)} now holds "
                            f"{num_graphs} graphs; restore the file the run was trained on")
    return {name: list(indices[name]) for name in SPLITS}


def split_sizes(num_graphs: int, fractions: Sequence[float]) -> Tuple[int, int, int]:
    """Graphs per split: ``floor(f * G)`` each, the graphs left over go to the largest remainders, ties to test,
    then val (so rounding never shrinks an evaluation split below its share: 25 graphs at 0.8/0.1/0.1 give
    20/2/3, not 21/2/2)."""
    exact = [f * num_graphs for f in fractions]
    sizes = [int(np.floor(x + 1e-9)) for x in exact]
    order = sorted(range(3), key=lambda i: (-(exact[i] - sizes[i]), -i))  # largest remainder; ties: test, val
    for i in order[:max(0, num_graphs - sum(sizes))]:
        sizes[i] += 1
    return sizes[0], sizes[1], sizes[2]


def split_fractions(fractions: Union[None, str, Sequence[float]], allow_unused: bool = False
                    ) -> Tuple[float, float, float]:
    """``(train, val, test)`` fractions: default 0.8/0.1/0.1; text such as ``"0.7,0.2,0.1"`` (``--set``) is parsed.

    Raises DataError unless there are three positive numbers adding up to 1 (fewer would leave graphs in no
    split without a word: list the graphs to use in a split file instead); ``allow_unused``: at most 1.
    """
    if fractions is None:
        fractions = DEFAULT_SPLIT
    elif isinstance(fractions, str):
        fractions = [part for part in re.split(r"[,\s]+", fractions.strip("[] ")) if part]
    try:
        parsed = tuple(float(f) for f in fractions)
    except (TypeError, ValueError):
        parsed = ()
    if len(parsed) != 3 or min(parsed) <= 0 or sum(parsed) > 1 + 1e-6:
        raise DataError(f"split fractions {fractions!r} must be three positive numbers (train val test) adding "
                        "up to 1, e.g. --split 0.8 0.1 0.1")
    if sum(parsed) < 1 - 1e-6 and not allow_unused:
        raise DataError(f"split fractions {' '.join(map(str, parsed))} add up to {sum(parsed):g}: "
                        f"{1 - sum(parsed):.0%} of the graphs would be in no split; make them add up to 1, or list "
                        "the graphs to use in a --split-file")
    return parsed  # type: ignore[return-value]


def read_split_file(split_file: PathLike, num_graphs: int, path: PathLike) -> Dict[str, List[int]]:
    """Read and check a split file: JSON ``{"train": [...], "val": [...], "test": [...]}`` or an NPZ with those keys.

    ``valid`` is read as ``val``. Indices must be integers in ``0..G-1``, none
    twice, no index in two splits, no split empty.
    """
    split_file = os.fspath(split_file)
    if not os.path.isfile(split_file):
        raise DataError(f"split file {split_file} does not exist; pass a JSON or NPZ file with train/val/test "
                        "index lists")
    try:
        if split_file.lower().endswith(".npz"):
            with np.load(split_file, allow_pickle=False) as archive:
                raw = {key: archive[key].tolist() for key in archive.files}
        else:
            with open(split_file) as handle:
                raw = json.load(handle)
    except Exception as exc:  # noqa: BLE001 - OSError, bad JSON, and whatever numpy / zipfile raise on a damaged NPZ
        raise DataError(f"split file {split_file} cannot be read ({type(exc).__name__}: {first_line(exc)}); write "
                        "JSON {\"train\": [...], \"val\": [...], \"test\": [...]} or np.savez(train=..., val=..., "
                        "test=...)") from exc
    if not isinstance(raw, dict):
        raise DataError(f"split file {split_file} holds a {type(raw).__name__}; it must map train/val/test to "
                        "index lists")
    if "val" not in raw and "valid" in raw:
        raw["val"] = raw.pop("valid")
    missing = [name for name in SPLITS if name not in raw]
    if missing:
        raise DataError(f"split file {split_file} has no {', '.join(missing)} list (it has "
                        f"{', '.join(map(str, raw)) or 'nothing'}); give train, val and test index lists")
    owner: Dict[int, str] = {}
    result = {}
    for name in SPLITS:
        values = raw[name]
        if not isinstance(values, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            raise DataError(f"split file {split_file}: {name} must be a list of integer graph indices")
        if not values:
            raise DataError(f"split file {split_file}: the {name} list is empty; give every split at least one graph")
        for position, index in enumerate(values):
            if not 0 <= index < num_graphs:
                raise DataError(f"split file {split_file}: {name}[{position}] = {index} is out of range for "
                                f"{os.fspath(path)} ({num_graphs} graphs, indices 0..{num_graphs - 1}); fix the index")
            if index in owner:
                where = "twice in " + name if owner[index] == name else f"in both {owner[index]} and {name}"
                raise DataError(f"split file {split_file}: graph {index} is {where}; each graph belongs to one "
                                "split at most")
            owner[index] = name
        result[name] = sorted(values)
    return result
