"""Positional-encoding encoders (the encodings themselves are precomputed on the graphs).

Graphs carry ``ndata['lap_pe']`` (N, k) Laplacian eigenvectors,
``ndata['lap_eigval']`` (N, k) their eigenvalues and ``ndata['rwse']`` (N, k)
random-walk landing probabilities; see ``geaet_dgl.data.encodings.positional_encoding``.
Frequencies past a graph's node count are padding.
"""
from __future__ import annotations

from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn

from ..nn.batch_layout import BatchLayout
from ..nn.norm import batchnorm_affine, scale_columns


class EquivStableLapPEEncoder(nn.Module):
    """Linear map of the eigenvectors, (N, k) -> (N, d), used by the GatedGCN gate."""

    def __init__(self, k: int, out_feats: int):
        super().__init__()
        self.linear_encoder_eigenvec = nn.Linear(k, out_feats)

    def forward(self, eigvecs: torch.Tensor) -> torch.Tensor:
        return self.linear_encoder_eigenvec(torch.nan_to_num(eigvecs, nan=0.0))

    def edge_square_distance(self, eigvecs: torch.Tensor, src: torch.Tensor, dst: torch.Tensor) -> torch.Tensor:
        """(N, k) eigenvectors, (E,) edge endpoints -> (E, 1) :math:`\\lVert p_j - p_i \\rVert^2` of the encodings.

        The encoder is affine, ``p = W v + b``, so ``p_j - p_i = W (v_j - v_i)``: the differences are taken
        on the k eigenvector channels and mapped once, instead of gathering (E, d) encodings (the folded
        inference model's path; equal to ``pe_square_distance(graph, self(eigvecs))`` up to rounding).
        """
        eigvecs = torch.nan_to_num(eigvecs, nan=0.0)
        diff = eigvecs.index_select(0, src).sub_(eigvecs.index_select(0, dst))  # (E, k)
        return F.linear(diff, self.linear_encoder_eigenvec.weight).square_().sum(-1, keepdim=True)


def pe_mlp(in_feats: int, pe_dim: int, num_layers: int) -> nn.Sequential:
    """GraphGPS's PE MLP: Linear(in, 2p) -> ReLU -> (Linear(2p, 2p) -> ReLU) x (L-2) -> Linear(2p, p) -> ReLU
    (one layer: Linear(in, p) -> ReLU). The reference's kernel-SE ``mlp`` model."""
    if num_layers == 1:
        return nn.Sequential(nn.Linear(in_feats, pe_dim), nn.ReLU())
    layers = [nn.Linear(in_feats, 2 * pe_dim), nn.ReLU()]
    for _ in range(num_layers - 2):
        layers += [nn.Linear(2 * pe_dim, 2 * pe_dim), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(2 * pe_dim, pe_dim), nn.ReLU())


class LapPEDeepSetEncoder(nn.Module):
    """LapPE with a DeepSet over frequencies (GraphGPS ``LapPENodeEncoder``, DeepSet model).

    For each node, each frequency j gives the pair (v_j, lambda_j); a shared MLP
    maps it to ``pe_dim`` and the results are summed over the real frequencies.
    During training the eigenvector signs are flipped at random (one sign per
    frequency for the whole batch), as in the reference.

    Parameters
    ----------
    k : number of frequencies.
    pe_dim : output width.
    num_layers : MLP depth (>= 1).
    """

    def __init__(self, k: int, pe_dim: int, num_layers: int = 2):
        super().__init__()
        self.k = k
        if num_layers == 1:
            self.linear_A = nn.Linear(2, pe_dim)
            layers = [nn.ReLU()]
        else:
            self.linear_A = nn.Linear(2, 2 * pe_dim)
            layers = [nn.ReLU()]
            for _ in range(num_layers - 2):
                layers += [nn.Linear(2 * pe_dim, 2 * pe_dim), nn.ReLU()]
            layers += [nn.Linear(2 * pe_dim, pe_dim), nn.ReLU()]
        self.pe_encoder = nn.Sequential(*layers)

    def forward(self, eigvecs: torch.Tensor, eigvals: torch.Tensor, layout: BatchLayout) -> torch.Tensor:
        """(N, k), (N, k) -> (N, pe_dim)."""
        if self.training:
            signs = torch.where(torch.rand(self.k, device=eigvecs.device) >= 0.5, 1.0, -1.0)
            eigvecs = eigvecs * signs
        padded = torch.arange(self.k, device=eigvecs.device)[None, :] >= \
            layout.num_nodes_per_graph[layout.node_graph_id][:, None]
        padded = padded | torch.isnan(eigvecs) | torch.isnan(eigvals)
        pairs = torch.stack([eigvecs, eigvals], dim=-1).masked_fill(padded[..., None], 0.0)  # (N, k, 2)
        encoded = self.pe_encoder(self.linear_A(pairs)).masked_fill(padded[..., None], 0.0)
        return encoded.sum(dim=1)


class KernelSEEncoder(nn.Module):
    """Per-node statistics (RWSE, HKdiagSE, ElstaticSE): optional BatchNorm over the k columns, then
    Linear (``model='linear'``) or :func:`pe_mlp` (``model='mlp'``); GraphGPS's ``KernelPENodeEncoder``.

    Shapes: (N, k) -> (N, pe_dim).
    """

    def __init__(self, k: int, pe_dim: int, raw_norm: bool = True, model: str = "linear", num_layers: int = 1):
        super().__init__()
        if model not in ("linear", "mlp"):
            raise ValueError(f"model={model!r} is not one of linear, mlp")
        self.raw_norm = nn.BatchNorm1d(k) if raw_norm else None
        self.pe_encoder = nn.Linear(k, pe_dim) if model == "linear" else pe_mlp(k, pe_dim, num_layers)

    def forward(self, rwse: torch.Tensor) -> torch.Tensor:
        """(N, k) -> (N, pe_dim)."""
        if self.raw_norm is not None:
            rwse = self.raw_norm(rwse)
        return self.pe_encoder(rwse)

    def folded(self) -> Optional[nn.Module]:
        """An eval-mode copy with the BatchNorm folded into the linear map (one ``F.linear``), or None for the
        MLP model, a subclass or a BatchNorm without running statistics."""
        if type(self) is not KernelSEEncoder or type(self.pe_encoder) is not nn.Linear:
            return None
        linear = self.pe_encoder
        if self.raw_norm is None:
            return FoldedLinear(linear.weight.detach(), linear.bias.detach())
        affine = batchnorm_affine(self.raw_norm)
        return FoldedLinear(*scale_columns(linear.weight, linear.bias, affine)) if affine is not None else None


class FoldedLinear(nn.Module):
    """``F.linear(x, weight, bias)`` with fixed (out, in) weight and (out,) bias (a folded copy's map)."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor):
        super().__init__()
        self.weight, self.bias = weight, bias

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.weight, self.bias)


#: The random-walk encoder is the kernel-SE encoder on ``ndata['rwse']``.
RWSEEncoder = KernelSEEncoder
