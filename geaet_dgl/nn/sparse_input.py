"""Node features that are mostly zeros (bag-of-words) read as a sparse matrix by the first linear maps.

Cora's 1,433 word indicators are 1.3 % non-zero: a dense ``X W^T`` of its 2,708 nodes, the input dropout's
(N, F) random mask and the weight gradient ``G^T X`` are most of an epoch (docs/node-classification.md, "Time
to a result"). Read as a sparse COO matrix, the same maps touch only the non-zeros (about 9x less time on
Cora for dropout, map and gradient together). The arithmetic is the same up to float32 rounding; the input
dropout draws one random number per non-zero instead of one per entry, which is the same distribution (a
zero stays zero either way) but another random stream, so fixed-seed runs differ from dense ones.

:func:`sparse_features` decides per feature tensor (float, 2-D, at least :data:`MIN_WIDTH` columns, at most
:data:`MAX_DENSITY` non-zero) and keeps the sparse copy while the tensor lives and is not modified in place,
so a full-graph run converts its features once. The layers that read raw features
(:class:`~geaet_dgl.models.encoders.LinearEncoder`, the first maps of the raw-feature branches) call
:func:`linear`, which accepts either form.
"""
from __future__ import annotations

import weakref
from typing import Dict, Optional, Tuple

import torch
from torch import nn

#: the largest share of non-zero entries read sparsely (the sparse product wins well below it on CPU)
MAX_DENSITY = 0.1
#: the fewest feature columns read sparsely (narrow inputs: the dense map is cheap anyway)
MIN_WIDTH = 128

# id(dense tensor) -> (its version counter when converted, the sparse copy or None); entries leave with the tensor
_CACHE: Dict[int, Tuple[int, Optional[torch.Tensor]]] = {}


def density(feat: torch.Tensor) -> float:
    """Share of non-zero entries of ``feat`` (1.0 for an empty tensor)."""
    return float(torch.count_nonzero(feat)) / feat.numel() if feat.numel() else 1.0


def reads_sparsely(feat: torch.Tensor) -> bool:
    """Whether :func:`sparse_features` turns ``feat`` (N, F) into a sparse matrix."""
    return (feat.dim() == 2 and feat.is_floating_point() and not feat.is_sparse and feat.shape[1] >= MIN_WIDTH
            and feat.shape[0] > 0 and density(feat) <= MAX_DENSITY)


def sparse_features(feat: torch.Tensor) -> torch.Tensor:
    """(N, F) dense ``feat`` -> the same values as a coalesced sparse COO (N, F) matrix where
    :func:`reads_sparsely`, else ``feat`` itself. Converted once per tensor (and again after an in-place change)."""
    if feat.is_sparse or feat.requires_grad:
        return feat
    key = id(feat)
    cached = _CACHE.get(key)
    if cached is None or cached[0] != feat._version:
        if cached is None:
            weakref.finalize(feat, _CACHE.pop, key, None)
        cached = (feat._version, feat.to_sparse().coalesce() if reads_sparsely(feat) else None)
        _CACHE[key] = cached
    return feat if cached[1] is None else cached[1]


def dropout(feat: torch.Tensor, module: Optional[nn.Dropout]) -> torch.Tensor:
    """``module`` (an ``nn.Dropout`` or None) on dense ``feat``, or on the stored values of a sparse one."""
    if module is None or not module.training or not feat.is_floating_point():
        return feat
    if not feat.is_sparse:
        return module(feat)
    values = nn.functional.dropout(feat.values(), module.p, module.training)
    return torch.sparse_coo_tensor(feat.indices(), values, feat.shape, is_coalesced=True)


def linear(layer: nn.Linear, feat: torch.Tensor) -> torch.Tensor:
    """``layer(feat)`` for a dense or sparse COO (N, in) ``feat``: (N, out), dense."""
    if not feat.is_sparse:
        return layer(feat)
    feat = feat.to(layer.weight.dtype)
    if layer.bias is None:
        return torch.sparse.mm(feat, layer.weight.t())
    return torch.sparse.addmm(layer.bias, feat, layer.weight.t())


def to_dtype(feat: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``feat.to(dtype)`` for dense and sparse features alike."""
    return feat if feat.dtype == dtype else feat.to(dtype)
