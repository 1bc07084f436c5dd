"""Node features that are mostly zeros (bag-of-words) read as a sparse matrix by the first linear maps.

Cora's 1,433 word indicators are 1.3 % non-zero: a dense ``X W^T`` of its 2,708 nodes, the input dropout's
(N, F) random mask and the weight gradient ``G^T X`` are most of an epoch (docs/node-classification.md, "Time
to a result"). Read as a CSR matrix with its transpose stored beside it, the forward ``X W^T`` and the
weight gradient ``X^T G`` each read rows of non-zeros only (on Cora a training step went from 113 to about
15 ms). The arithmetic is the same up to float32 rounding; the input dropout draws one random number per
non-zero instead of one per entry, which is the same distribution (a zero stays zero either way) but another
random stream, so fixed-seed runs differ from dense ones.

:func:`sparse_features` decides per feature tensor (float, 2-D, at least :data:`MIN_WIDTH` columns, at most
:data:`MAX_DENSITY` non-zero) and keeps the sparse copy while the tensor lives and is not modified in place,
so a full-graph run converts its features once. The layers that read raw features
(:class:`~geaet_dgl.models.encoders.LinearEncoder`, the first maps of the raw-feature branches) call
:func:`linear`, which accepts either form.
"""
from __future__ import annotations

import warnings
import weakref
from typing import Dict, Optional, Tuple

import torch
from torch import nn

#: the largest share of non-zero entries read sparsely (the sparse product wins well below it on CPU)
MAX_DENSITY = 0.1
#: the fewest feature columns read sparsely (narrow inputs: the dense map is cheap anyway)
MIN_WIDTH = 128

# id(dense tensor) -> (its version counter when converted, its SparseFeatures or None); entries leave with the tensor
_CACHE: Dict[int, Tuple[int, Optional["SparseFeatures"]]] = {}


def density(feat: torch.Tensor) -> float:
    """Share of non-zero entries of ``feat`` (1.0 for an empty tensor)."""
    return float(torch.count_nonzero(feat)) / feat.numel() if feat.numel() else 1.0


def reads_sparsely(feat: torch.Tensor) -> bool:
    """Whether :func:`sparse_features` turns ``feat`` (N, F) into :class:`SparseFeatures`."""
    return (feat.dim() == 2 and feat.is_floating_point() and not feat.is_sparse and feat.shape[1] >= MIN_WIDTH
            and feat.shape[0] > 0 and density(feat) <= MAX_DENSITY)


class SparseFeatures:
    """(N, F) mostly-zero features as a CSR matrix, with its (F, N) transpose for the weight gradient.

    ``matrix`` holds the non-zeros row by row (the order of a coalesced COO matrix's values), ``transposed`` the
    same values column by column, ``order`` (nnz,) where each of ``transposed``'s values sits in ``matrix``'s.
    Not a tensor: the few methods the input layers call (``to``, ``is_floating_point``, ``shape``) and
    :func:`dropout` / :func:`linear` below.
    """

    is_sparse = True

    def __init__(self, matrix: torch.Tensor, transposed: torch.Tensor, order: torch.Tensor):
        self.matrix, self.transposed, self.order = matrix, transposed, order

    @classmethod
    def of(cls, feat: torch.Tensor) -> "SparseFeatures":
        """From dense (N, F) ``feat``."""
        with warnings.catch_warnings():  # "Sparse CSR tensor support is in beta state": the products used are not
            warnings.simplefilter("ignore", UserWarning)
            matrix = feat.to_sparse_csr()
        num_rows, num_cols = matrix.shape
        rows = torch.repeat_interleave(torch.arange(num_rows), matrix.crow_indices().diff())
        cols = matrix.col_indices()
        order = torch.argsort(cols * num_rows + rows)  # the non-zeros column by column
        crow = torch.zeros(num_cols + 1, dtype=torch.long)
        crow[1:] = torch.cumsum(torch.bincount(cols, minlength=num_cols), 0)
        pattern = torch.sparse_csr_tensor(crow, rows[order], matrix.values()[order], (num_cols, num_rows))
        return cls(matrix, pattern, order)

    def with_values(self, values: torch.Tensor) -> "SparseFeatures":
        """The same non-zero pattern holding ``values`` (nnz,) in ``matrix``'s order."""
        matrix = torch.sparse_csr_tensor(self.matrix.crow_indices(), self.matrix.col_indices(), values,
                                         self.matrix.shape)
        transposed = torch.sparse_csr_tensor(self.transposed.crow_indices(), self.transposed.col_indices(),
                                             values[self.order], self.transposed.shape)
        return SparseFeatures(matrix, transposed, self.order)

    @property
    def shape(self) -> torch.Size:
        return self.matrix.shape

    @property
    def dtype(self) -> torch.dtype:
        return self.matrix.dtype

    def is_floating_point(self) -> bool:
        return self.matrix.dtype.is_floating_point

    def to(self, dtype: torch.dtype) -> "SparseFeatures":
        return self if dtype == self.dtype else self.with_values(self.matrix.values().to(dtype))

    def to_dense(self) -> torch.Tensor:
        return self.matrix.to_dense()


class _SparseLinear(torch.autograd.Function):
    """``X W^T (+ b)`` with X a :class:`SparseFeatures`: the forward reads X's rows, the weight gradient
    ``(X^T G)^T`` its stored transpose (no transpose built per step)."""

    @staticmethod
    def forward(ctx, weight, bias, matrix, transposed):
        ctx.save_for_backward(transposed)
        ctx.has_bias = bias is not None
        out = matrix @ weight.t()
        return out + bias if bias is not None else out

    @staticmethod
    def backward(ctx, grad):
        (transposed,) = ctx.saved_tensors
        grad_weight = (transposed @ grad).t() if ctx.needs_input_grad[0] else None
        grad_bias = grad.sum(0) if ctx.has_bias and ctx.needs_input_grad[1] else None
        return grad_weight, grad_bias, None, None


def sparse_features(feat):
    """(N, F) dense ``feat`` -> its :class:`SparseFeatures` where :func:`reads_sparsely`, else ``feat`` itself.
    Converted once per tensor (and again after an in-place change)."""
    if isinstance(feat, SparseFeatures) or feat.is_sparse or feat.requires_grad:
        return feat
    key = id(feat)
    cached = _CACHE.get(key)
    if cached is None or cached[0] != feat._version:
        if cached is None:
            weakref.finalize(feat, _CACHE.pop, key, None)
        cached = (feat._version, SparseFeatures.of(feat) if reads_sparsely(feat) else None)
        _CACHE[key] = cached
    return feat if cached[1] is None else cached[1]


def dropout(feat, module: Optional[nn.Dropout]):
    """``module`` (an ``nn.Dropout`` or None) on dense ``feat``, or on the stored values of :class:`SparseFeatures`
    (one random number per non-zero, in row-major order)."""
    if module is None or not module.training or not feat.is_floating_point():
        return feat
    if not isinstance(feat, SparseFeatures):
        return module(feat)
    return feat.with_values(nn.functional.dropout(feat.matrix.values(), module.p, module.training))


def linear(layer: nn.Linear, feat) -> torch.Tensor:
    """``layer(feat)`` for a dense (N, in) ``feat`` or :class:`SparseFeatures`: (N, out), dense."""
    if not isinstance(feat, SparseFeatures):
        return layer(feat)
    feat = feat.to(layer.weight.dtype)
    return _SparseLinear.apply(layer.weight, layer.bias, feat.matrix, feat.transposed)
