"""Which nodes train, validate and test: a public split chosen by index, or a seeded random split.

Benchmarks publish their splits as masks with one column per split: geom-gcn's
WebKB / Actor / Wikipedia sets and Platonov et al.'s heterophilous sets have
10, Wiki-CS 20 training / validation splits with one test mask. The
Planetoid sets have one. DGL's loaders return them as ``(N,)`` or ``(N, S)``
bool masks; :func:`select_split` picks column ``K`` of every mask that has
columns (a ``(N,)`` mask serves every split) and :func:`split_count` says how
many there are. Sets without a published split (Amazon, Coauthor) take
:func:`seeded_split`: a random permutation of the nodes, seeded, cut 60/20/20.

Example
-------
>>> import torch
>>> masks = {"train": torch.eye(4, 2).bool(), "val": torch.eye(4, 2).flip(0).bool(), "test": torch.ones(4).bool()}
>>> split_count(masks)
2
>>> select_split(masks, 1, "toy")["train"].tolist()
[False, True, False, False]
>>> sizes = {k: int(v.sum()) for k, v in seeded_split(10, seed=0).items()}
>>> sizes
{'train': 6, 'val': 2, 'test': 2}
"""
from __future__ import annotations

from typing import Dict, Mapping, Sequence

import torch

from ..errors import DataError

SPLITS = ("train", "val", "test")
#: The seeded split of the sets that publish none (Shchur et al.'s Amazon and Coauthor graphs).
SEEDED_FRACTIONS = (0.6, 0.2, 0.2)


def split_count(masks: Mapping[str, torch.Tensor]) -> int:
    """Public splits in ``masks`` (``{'train': (N,) or (N, S) bool, ...}``): the most columns of any mask."""
    counts = {1 if mask.ndim == 1 else int(mask.shape[1]) for mask in masks.values()}
    multi = counts - {1}
    if len(multi) > 1:
        raise DataError(f"the split masks have {sorted(counts)} columns; each mask needs one column per split "
                        "(or one column shared by every split)")
    return multi.pop() if multi else 1


def check_split_index(index: int, count: int, where: str, option: str = "--split-index") -> None:
    """Refuse a split index outside ``0..count-1`` (one line naming the range); ``option``: how the user gave it
    (``--split-index``, or ``--splits`` for one index of a list)."""
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < count:
        given = f"--split-index {index}" if option == "--split-index" else f"split {index} of --splits"
        if count == 1:
            fix = "drop it (or pass 0)" if option == "--split-index" else "list 0 only, or drop --splits"
            raise DataError(f"{where} has one split; {given} is out of range: {fix}")
        fix = "pick one of" if option == "--split-index" else "list splits of"
        raise DataError(f"{where} has {count} public splits (0..{count - 1}); {given} is out of "
                        f"range: {fix} 0..{count - 1}, or train on all of them with --splits all")


def select_split(masks: Mapping[str, torch.Tensor], index: int, where: str) -> Dict[str, torch.Tensor]:
    """Split ``index`` of ``masks`` -> ``{'train': (N,) bool, 'val': ..., 'test': ...}``.

    A ``(N, S)`` mask gives its column ``index``; a ``(N,)`` mask is the same
    for every split (Wiki-CS's test mask, Planetoid's split).
    """
    check_split_index(index, split_count(masks), where)
    return {name: (mask if mask.ndim == 1 else mask[:, index]).bool() for name, mask in masks.items()}


def seeded_split(num_nodes: int, seed: int, fractions: Sequence[float] = SEEDED_FRACTIONS) -> Dict[str, torch.Tensor]:
    """A random split of ``num_nodes`` nodes: disjoint ``(N,)`` bool masks covering every node.

    The nodes are permuted by ``torch.randperm`` with a generator seeded by
    ``seed``; the first ``round(f_train * N)`` train, the next
    ``round(f_val * N)`` validate, the rest test. The same seed gives the same
    split on every machine (torch's CPU generator).
    """
    if len(fractions) != 3 or any(f <= 0 for f in fractions) or abs(sum(fractions) - 1) > 1e-6:
        raise DataError(f"split fractions {list(fractions)} must be three positive numbers summing to 1")
    order = torch.randperm(num_nodes, generator=torch.Generator().manual_seed(int(seed)))
    num_train = int(round(fractions[0] * num_nodes))
    num_val = int(round(fractions[1] * num_nodes))
    parts = {"train": order[:num_train], "val": order[num_train:num_train + num_val],
             "test": order[num_train + num_val:]}
    masks = {}
    for name, nodes in parts.items():
        mask = torch.zeros(num_nodes, dtype=torch.bool)
        mask[nodes] = True
        masks[name] = mask
    return masks
