"""SignNet positional encoding (Lim et al. 2022) as GraphGPS builds it (``SignNetNodeEncoder``).

.. math::
    \\mathrm{SignNet}(v_1, \\dots, v_k) = \\rho\\big([\\phi(v_j) + \\phi(-v_j)]_{j=1}^{k}\\big)

``v_j`` the Laplacian eigenvectors (``ndata['lap_pe']`` (N, k), zero past a
graph's node count), :math:`\\phi` a GIN run on every eigenvector as a one-channel
node signal, :math:`\\rho` an MLP over the concatenation (``model='mlp'``) or
over the sum of the real frequencies (``model='deepset'``).

Layout. The reference runs :math:`\\phi` twice, on the (k, N, 1) signals ``v`` and ``-v``, and
normalises its (k, N, C) activations through (k, C, N) transposes. Here both signs run in one pass
as (N, k, 2, C) activations, contiguous: a linear map is one GEMM over the 2Nk rows, the neighbour
sum one SpMM over (N, 2kC) rows, and a BatchNorm one channels-last call over the (Nk, 2C) view,
whose two channel groups keep the two signs' batch statistics apart as the reference's two calls do
(:func:`batch_norm_passes`). The running statistics are updated as by those two calls in sequence.
In inference :meth:`SignNetEncoder.folded` folds every BatchNorm into a linear map.
"""
from __future__ import annotations

from typing import List, Optional, Tuple

import dgl
import torch
import torch.nn.functional as F
from torch import nn

from ..nn.batch_layout import BatchLayout
from ..nn.norm import batchnorm_affine, scale_columns, scale_rows

SIGNNET_MODELS = ("deepset", "mlp")


def batch_norm_passes(norm: nn.BatchNorm1d, x: torch.Tensor) -> torch.Tensor:
    """BatchNorm of (..., P, C) activations as P separate calls, one per pass ``x[..., p, :]``, in order.

    In training each pass is normalised with its own batch statistics (over all leading dimensions),
    and the running statistics end as after P calls of ``norm`` in sequence (up to float rounding); in
    eval mode the one affine map applies to all. One BatchNorm call either way: the P passes are
    P groups of channels of the (rows, P * C) view.
    """
    return _batch_norm_rows(norm, x.reshape(-1, x.shape[-1]), x.shape[-2] if x.dim() > 2 else 1).view(x.shape)


def _batch_norm_rows(norm: nn.BatchNorm1d, rows: torch.Tensor, passes: int) -> torch.Tensor:
    """:func:`batch_norm_passes` of (R * P, C) rows, pass ``p`` the rows ``r * P + p``."""
    if not norm.training:
        return norm(rows)
    channels = rows.shape[-1]
    if type(norm) is not nn.BatchNorm1d or (norm.track_running_stats and norm.momentum is None):
        # A synchronised BatchNorm (the distributed trainer's) or cumulative averaging: its own P calls
        grouped = rows.view(-1, passes, channels)
        return torch.stack([norm(grouped[:, p].contiguous()) for p in range(passes)], dim=1).view(rows.shape)
    weight = norm.weight.repeat(passes) if norm.weight is not None and passes > 1 else norm.weight
    bias = norm.bias.repeat(passes) if norm.bias is not None and passes > 1 else norm.bias
    grouped = rows.view(-1, passes * channels)
    out, mean, var = _RowBatchNorm.apply(grouped, weight, bias, norm.eps)
    if norm.track_running_stats and norm.running_mean is not None:
        unbiased = grouped.shape[0] / max(grouped.shape[0] - 1, 1)
        with torch.no_grad():  # as P calls of ``norm`` in sequence
            for mean_p, var_p in zip(mean.view(passes, channels), var.view(passes, channels)):
                norm.num_batches_tracked.add_(1)
                factor = norm.momentum
                norm.running_mean.mul_(1.0 - factor).add_(mean_p, alpha=factor)
                norm.running_var.mul_(1.0 - factor).add_(var_p, alpha=factor * unbiased)
    return out.view(rows.shape)


class _RowBatchNorm(torch.autograd.Function):
    """Training-mode BatchNorm of (R, C) rows over R, statistics by two-pass pairwise sums.

    The same function as ``F.batch_norm``, whose (R, C) path accumulates its statistics in float32 in
    sequence over R (relative error ~1e-5 at 10^4 rows, which eight BatchNorms in a row amplify); the
    reference normalises (k, C, N) activations, whose statistics accumulate in float64. Here the mean
    and the centred sum of squares are ``Tensor.sum`` reductions (pairwise), the normalisation one
    ``addcmul``, and the backward is PyTorch's own BatchNorm backward with these statistics.
    Returns (output, mean, biased variance); the two statistics carry no gradient.
    """

    @staticmethod
    def forward(ctx, rows, weight, bias, eps):
        count = rows.shape[0]
        mean = rows.sum(0).div_(count)
        centered = rows - mean
        var = centered.mul_(centered).sum(0).div_(count)
        invstd = torch.rsqrt(var + eps)
        scale = invstd * weight if weight is not None else invstd
        shift = -mean * scale
        if bias is not None:
            shift = shift + bias
        ctx.save_for_backward(rows, weight, mean, invstd)
        ctx.eps = eps
        ctx.mark_non_differentiable(mean, var)
        return torch.addcmul(shift, rows, scale), mean, var

    @staticmethod
    def backward(ctx, grad_out, _grad_mean, _grad_var):
        rows, weight, mean, invstd = ctx.saved_tensors
        grad_rows, grad_weight, grad_bias = torch.ops.aten.native_batch_norm_backward(
            grad_out.contiguous(), rows, weight, None, None, mean, invstd, True, ctx.eps,
            [ctx.needs_input_grad[0], weight is not None and ctx.needs_input_grad[1],
             ctx.needs_input_grad[2]])
        return grad_rows, grad_weight, grad_bias, None


def _batch_norm_last(norm: nn.BatchNorm1d, x: torch.Tensor) -> torch.Tensor:
    """BatchNorm over the channels of the last dimension: (N, C), or (N, ..., P, C) signals in P passes."""
    if x.dim() == 2:
        return norm(x)
    return batch_norm_passes(norm, x)


class SignNetMLP(nn.Module):
    """Linear -> ReLU -> BatchNorm blocks, then Linear (GraphGPS's SignNet ``MLP`` with use_bn, no dropout).

    (..., C) -> (..., out); on (N, k, P, C) signals each of the P passes has its own BatchNorm statistics.
    """

    def __init__(self, in_feats: int, hidden_feats: int, out_feats: int, num_layers: int):
        super().__init__()
        widths = [in_feats] + [hidden_feats] * (num_layers - 1) + [out_feats]
        self.lins = nn.ModuleList(nn.Linear(a, b) for a, b in zip(widths[:-1], widths[1:]))
        self.bns = nn.ModuleList(nn.BatchNorm1d(hidden_feats) for _ in range(num_layers - 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        passes = shape[-2] if x.dim() > 2 else 1
        h = x.reshape(-1, shape[-1])  # 2-D throughout: the in-place ReLU never touches a view
        for lin, bn in zip(self.lins[:-1], self.bns):
            h = F.relu(lin(h), inplace=True)  # (the linear's backward keeps no output)
            h = _batch_norm_rows(bn, h, passes) if x.dim() > 2 else bn(h)
        return self.lins[-1](h).view(shape[:-1] + (-1,))


class SignNetGINConv(nn.Module):
    """GIN convolution with eps = 0: ``mlp(x_i + sum_{j -> i} x_j)`` on (N, ..., C) signals (PyG ``GINConv(mlp)``)."""

    def __init__(self, mlp: nn.Module):
        super().__init__()
        self.nn = mlp
        self.register_buffer("eps", torch.zeros(1))  # PyG's fixed eps, carried for its checkpoints

    def forward(self, graph: dgl.DGLGraph, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(x.shape[0], -1)
        aggregated = dgl.ops.copy_u_sum(graph, flat).add_(flat, alpha=1.0 + float(self.eps))  # (not on a view)
        return self.nn(aggregated.view(x.shape))


class SignNetGIN(nn.Module):
    """:math:`\\phi`: ``num_layers`` GIN convolutions (eps = 0, sum of in-neighbours) with 2-layer MLPs,
    BatchNorm between them. (N, k, P, C) -> (N, k, P, out_feats), every frequency an independent signal and
    each of the P passes (the two signs) its own BatchNorm statistics."""

    def __init__(self, in_feats: int, hidden_feats: int, out_feats: int, num_layers: int):
        super().__init__()
        widths = [in_feats] + [hidden_feats] * (num_layers - 1) + [out_feats]
        self.layers = nn.ModuleList(SignNetGINConv(SignNetMLP(a, hidden_feats, b, 2))
                                    for a, b in zip(widths[:-1], widths[1:]))
        self.bns = nn.ModuleList(nn.BatchNorm1d(hidden_feats) for _ in range(num_layers - 1))

    def forward(self, graph: dgl.DGLGraph, x: torch.Tensor) -> torch.Tensor:
        for i, conv in enumerate(self.layers):
            if i:
                x = _batch_norm_last(self.bns[i - 1], x)
            x = conv(graph, x)
        return x


def _signed_signals(eigvecs: torch.Tensor) -> torch.Tensor:
    """(N, k) eigenvectors -> (N, k, 2, 1) signals ``[v, -v]`` (NaN padding as 0)."""
    vecs = torch.nan_to_num(eigvecs, nan=0.0)
    return torch.stack([vecs, -vecs], dim=-1).unsqueeze(-1)


def _real_frequencies(layout: BatchLayout, k: int, device: torch.device) -> torch.Tensor:
    """(N, k) bool: frequency j is one of the node's graph's (j < its node count)."""
    return torch.arange(k, device=device)[None, :] < layout.num_nodes_per_graph[layout.node_graph_id][:, None]


class SignNetEncoder(nn.Module):
    """SignNet: (N, k) eigenvectors -> (N, pe_dim) sign-invariant encoding.

    Parameters
    ----------
    k : int, eigenvectors per node (``posenc_SignNet.eigen.max_freqs``).
    pe_dim : int, output width.
    model : {'deepset', 'mlp'}, :math:`\\rho` over the sum (DeepSet) or the concatenation (MLP) of frequencies.
    phi_layers : int, GIN layers of :math:`\\phi` (>= 2).
    phi_hidden_dim : int, hidden width of :math:`\\phi` and :math:`\\rho`.
    phi_out_dim : int, output width of :math:`\\phi`.
    rho_layers : int, layers of :math:`\\rho` (>= 1).

    Example
    -------
    >>> g = dgl.rand_graph(5, 10)
    >>> SignNetEncoder(4, 8)(g, torch.randn(5, 4), BatchLayout.from_graph(g)).shape
    torch.Size([5, 8])
    """

    def __init__(self, k: int, pe_dim: int, model: str = "deepset", phi_layers: int = 3, phi_hidden_dim: int = 64,
                 phi_out_dim: int = 4, rho_layers: int = 1):
        super().__init__()
        if model not in SIGNNET_MODELS:
            raise ValueError(f"model={model!r} is not one of {', '.join(SIGNNET_MODELS)}")
        if phi_layers < 2 or rho_layers < 1:
            raise ValueError(f"phi_layers={phi_layers} must be >= 2 and rho_layers={rho_layers} >= 1")
        self.k, self.model = k, model
        self.enc = SignNetGIN(1, phi_hidden_dim, phi_out_dim, phi_layers)  # names as the reference's sign_inv_net
        rho_in = phi_out_dim * k if model == "mlp" else phi_out_dim
        self.rho = SignNetMLP(rho_in, phi_hidden_dim, pe_dim, rho_layers)

    def forward(self, graph: dgl.DGLGraph, eigvecs: torch.Tensor, layout: BatchLayout) -> torch.Tensor:
        """(N, k) -> (N, pe_dim)."""
        x = self.enc(graph, _signed_signals(eigvecs)).sum(dim=2)  # phi(v) + phi(-v): (N, k, phi_out)
        return self.rho(_pool_frequencies(x, self.model, layout))

    def folded(self) -> Optional["FoldedSignNetEncoder"]:
        """An eval-mode copy with every BatchNorm folded into a linear map (:class:`FoldedSignNetEncoder`), or
        None where a BatchNorm has no running statistics."""
        norms = list(self.enc.bns) + [bn for conv in self.enc.layers for bn in conv.nn.bns] + list(self.rho.bns)
        if any(batchnorm_affine(m) is None for m in norms) or type(self) is not SignNetEncoder:
            return None
        return FoldedSignNetEncoder(self)


def _pool_frequencies(x: torch.Tensor, model: str, layout: BatchLayout) -> torch.Tensor:
    """(N, k, C) per-frequency encodings -> rho's input: (N, k * C) for 'mlp', the sum over the graph's real
    frequencies (N, C) for 'deepset'."""
    if model == "mlp":
        return x.reshape(x.shape[0], -1)
    real = _real_frequencies(layout, x.shape[1], x.device)
    return (x * real[..., None]).sum(dim=1)


Linear = Tuple[torch.Tensor, torch.Tensor]  # (out, in) weight, (out,) bias


class FoldedSignNetEncoder(nn.Module):
    """:class:`SignNetEncoder` in eval mode with its BatchNorms folded: same call, same outputs up to float rounding.

    Every BatchNorm of :math:`\\phi` and :math:`\\rho` follows a ReLU (inside an MLP: it goes into the
    next linear map's columns, :func:`scale_columns`) or a GIN convolution's last linear map (between
    convolutions: it goes into that map's rows, :func:`scale_rows`). What is left per convolution is
    the neighbour sum, two GEMMs and a ReLU, run on both signs at once ((N, k, 2, C), 2Nk rows), in place.
    Built by :meth:`SignNetEncoder.folded` from the weights at that moment; never records autograd history.
    """

    def __init__(self, encoder: SignNetEncoder):
        super().__init__()
        self.k, self.model = encoder.k, encoder.model
        self.eps: List[float] = [float(conv.eps) for conv in encoder.enc.layers]
        self.convs: List[List[Linear]] = []
        between = [batchnorm_affine(bn) for bn in encoder.enc.bns] + [None]
        for conv, after in zip(encoder.enc.layers, between):
            self.convs.append(_folded_mlp(conv.nn, after))
        self.rho = _folded_mlp(encoder.rho, None)

    @torch.no_grad()
    def forward(self, graph: dgl.DGLGraph, eigvecs: torch.Tensor, layout: BatchLayout) -> torch.Tensor:
        """(N, k) -> (N, pe_dim)."""
        x = _signed_signals(eigvecs)
        n = x.shape[0]
        for eps, linears in zip(self.eps, self.convs):
            h = dgl.ops.copy_u_sum(graph, x.reshape(n, -1)).view(x.shape).add_(x, alpha=1.0 + eps)
            x = _run_linears(h, linears).view(x.shape[:-1] + (-1,))
        return _run_linears(_pool_frequencies(x.sum(dim=2), self.model, layout), self.rho)


def _folded_mlp(mlp: SignNetMLP, after: Optional[Tuple[torch.Tensor, torch.Tensor]]) -> List[Linear]:
    """A :class:`SignNetMLP`'s linear maps with its BatchNorms (each after a ReLU) folded into the next map's
    columns and ``after`` (an eval-mode BatchNorm applied to its output, or None) into the last map's rows."""
    linears = []
    norms = [None] + [batchnorm_affine(bn) for bn in mlp.bns]
    for i, (lin, before) in enumerate(zip(mlp.lins, norms)):
        weight, bias = lin.weight, lin.bias
        if before is not None:
            weight, bias = scale_columns(weight, bias, before)
        if i == len(mlp.lins) - 1:
            weight, bias = scale_rows(weight, bias, after)
        linears.append((weight.detach().t().contiguous(), bias.detach().clone()))
    return linears


def _run_linears(x: torch.Tensor, linears: List[Linear]) -> torch.Tensor:
    """``x`` (..., C) through the linear maps with a ReLU between them (in place): (rows, out)."""
    h = x.reshape(-1, x.shape[-1])
    for i, (weight_t, bias) in enumerate(linears):
        h = torch.addmm(bias, h, weight_t)
        if i < len(linears) - 1:
            h.relu_()
    return h
