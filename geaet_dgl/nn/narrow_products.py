"""Attention's batched products whose result has a narrow last dimension, computed transposed.

Dense self-attention multiplies (B*H, W, W) weights with (B*H, W, d/H) values (d/H = 10 at MNIST's
width 40), and its backward multiplies (B*H, W, W) score gradients with the keys and the transposed
weights with the output's gradient: three batched products per layer whose (W, d/H) results are 10
floats wide. On the AMD EPYC (MKL 2022) ``bmm`` runs such a product 3.8x slower than the same product
transposed, ``C^T = B^T A^T``, whose (d/H, W) result is W wide (64 x (80, 80) @ (80, 10), one thread:
576 against 151 us); the transposes are strides only, no copy. The two autograd functions here compute
the forward and every gradient in the wide orientation:

- :func:`attention_scores`: ``baddbmm(bias, query, key^T, alpha)``, the gradients of ``query``
  (``alpha grad key``) and ``key`` (``alpha grad^T query``) as transposed products;
- :func:`weighted_values`: ``weights @ value``, its forward and the gradient of ``value``
  (``weights^T grad``) as transposed products.

Same sums as ``baddbmm`` and ``bmm`` with autograd, in another order (float32 rounding).

Only where that is faster (:func:`transposed_is_faster`): a result of 16 floats or more fills the CPU's
vectors, and there the product as written is the faster one (ZINC's d/H = 16: 1.5x at W = 38); a result of
at most 10 floats is 1.6-3.5x faster transposed at every W measured; between the two, transposed from
W = 36 on (measured on the AMD EPYC, MKL 2022, one and two threads; docs/performance.md).
"""
from __future__ import annotations

from typing import Optional, Tuple

import torch


#: Results at most this many floats wide are always computed transposed.
ALWAYS_TRANSPOSED_WIDTH = 10
#: float32 lanes of an AVX-512 vector: a result this wide or wider is computed as written.
VECTOR_FLOATS = 16
#: Between the two, transposed where the other side (W) is at least this long.
TRANSPOSED_FROM_LENGTH = 36


def transposed_is_faster(length: int, width: int) -> bool:
    """Whether a batched product with a (``length``, ``width``) result runs faster as its transpose (a
    (``width``, ``length``) result): ``width`` at most :data:`ALWAYS_TRANSPOSED_WIDTH`, or under
    :data:`VECTOR_FLOATS` with ``length`` at least :data:`TRANSPOSED_FROM_LENGTH`."""
    return width <= ALWAYS_TRANSPOSED_WIDTH or (width < VECTOR_FLOATS and length >= TRANSPOSED_FROM_LENGTH)


def _narrow_product(wide: torch.Tensor, narrow: torch.Tensor) -> torch.Tensor:
    """``wide @ narrow`` for (M, W, K) ``wide`` and (M, K, n) ``narrow``, n small: where faster computed as
    ``(narrow^T wide^T)^T``, a (M, W, n) transposed view of a contiguous (M, n, W) tensor."""
    if not transposed_is_faster(wide.shape[1], narrow.shape[2]):
        return torch.bmm(wide, narrow)
    return torch.bmm(narrow.transpose(1, 2), wide.transpose(1, 2)).transpose(1, 2)


class _AttentionScores(torch.autograd.Function):
    @staticmethod
    def forward(ctx, bias: torch.Tensor, query: torch.Tensor, key: torch.Tensor, alpha: float) -> torch.Tensor:
        ctx.save_for_backward(query, key)
        ctx.alpha = alpha
        ctx.bias_shape = bias.shape
        return torch.baddbmm(bias, query, key.transpose(1, 2), alpha=alpha)

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> Tuple[Optional[torch.Tensor], ...]:
        query, key = ctx.saved_tensors
        grad_bias = grad_query = grad_key = None
        if ctx.needs_input_grad[0]:
            grad_bias = grad.sum_to_size(ctx.bias_shape)
        if ctx.needs_input_grad[1]:
            grad_query = _narrow_product(grad, key).mul(ctx.alpha)
        if ctx.needs_input_grad[2]:
            grad_key = _narrow_product(grad.transpose(1, 2), query).mul_(ctx.alpha)  # grad^T query
        return grad_bias, grad_query, grad_key, None


class _WeightedValues(torch.autograd.Function):
    @staticmethod
    def forward(ctx, weights: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(weights, value)
        return _narrow_product(weights, value)

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> Tuple[Optional[torch.Tensor], ...]:
        weights, value = ctx.saved_tensors
        grad_weights = grad_value = None
        if ctx.needs_input_grad[0]:
            grad_weights = torch.bmm(grad, value.transpose(1, 2))  # (M, W, W): wide already
        if ctx.needs_input_grad[1]:
            grad_value = _narrow_product(weights.transpose(1, 2), grad)  # weights^T grad
        return grad_weights, grad_value


def attention_scores(bias: torch.Tensor, query: torch.Tensor, key: torch.Tensor, alpha: float) -> torch.Tensor:
    """``baddbmm(bias, query, key^T, alpha=alpha)``: (M, W, W) scores from (M, W, k) ``query`` and ``key`` and a
    ``bias`` broadcastable to (M, W, W); differentiable in all three, the narrow gradients computed transposed."""
    return _AttentionScores.apply(bias, query, key, alpha)


def weighted_values(weights: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    """``bmm(weights, value)``: (M, W, W) ``weights`` times (M, W, k) ``value``, k small, as a (M, W, k)
    transposed view of a contiguous (M, k, W) tensor; differentiable, every product in the wide orientation."""
    return _WeightedValues.apply(weights, value)
