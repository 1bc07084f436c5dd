"""SignNet positional encoding (Lim et al. 2022) as GraphGPS builds it (``SignNetNodeEncoder``).

.. math::
    \\mathrm{SignNet}(v_1, \\dots, v_k) = \\rho\\big([\\phi(v_j) + \\phi(-v_j)]_{j=1}^{k}\\big)

``v_j`` the Laplacian eigenvectors (``ndata['lap_pe']`` (N, k), zero past a
graph's node count), :math:`\\phi` a GIN run on every eigenvector as a one-channel
node signal, :math:`\\rho` an MLP over the concatenation (``model='mlp'``) or
over the sum of the real frequencies (``model='deepset'``).
"""
from __future__ import annotations

import dgl
import dgl.function as fn
import torch
import torch.nn.functional as F
from torch import nn

from ..nn.batch_layout import BatchLayout

SIGNNET_MODELS = ("deepset", "mlp")


def _batch_norm_last(norm: nn.BatchNorm1d, x: torch.Tensor) -> torch.Tensor:
    """BatchNorm over the channels of the last dimension, statistics over all leading ones.

    (N, k, C) signals are normalised as (k, C, N), the reference's layout: the same reduction order keeps
    train-mode outputs within float32 rounding of the reference's.
    """
    if x.dim() == 3:
        return norm(x.permute(1, 2, 0)).permute(2, 0, 1)
    return norm(x)


class SignNetMLP(nn.Module):
    """Linear -> ReLU -> BatchNorm blocks, then Linear (GraphGPS's SignNet ``MLP`` with use_bn, no dropout)."""

    def __init__(self, in_feats: int, hidden_feats: int, out_feats: int, num_layers: int):
        super().__init__()
        widths = [in_feats] + [hidden_feats] * (num_layers - 1) + [out_feats]
        self.lins = nn.ModuleList(nn.Linear(a, b) for a, b in zip(widths[:-1], widths[1:]))
        self.bns = nn.ModuleList(nn.BatchNorm1d(hidden_feats) for _ in range(num_layers - 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for lin, bn in zip(self.lins[:-1], self.bns):
            x = _batch_norm_last(bn, F.relu(lin(x)))
        return self.lins[-1](x)


class SignNetGINConv(nn.Module):
    """GIN convolution with eps = 0: ``mlp(x_i + sum_{j -> i} x_j)`` on (N, k, C) signals (PyG ``GINConv(mlp)``)."""

    def __init__(self, mlp: nn.Module):
        super().__init__()
        self.nn = mlp
        self.register_buffer("eps", torch.zeros(1))  # PyG's fixed eps, carried for its checkpoints

    def forward(self, graph: dgl.DGLGraph, x: torch.Tensor) -> torch.Tensor:
        with graph.local_scope():
            graph.ndata["x"] = x
            graph.update_all(fn.copy_u("x", "m"), fn.sum("m", "agg"))
            return self.nn((1 + self.eps) * x + graph.ndata["agg"])


class SignNetGIN(nn.Module):
    """:math:`\\phi`: ``num_layers`` GIN convolutions (eps = 0, sum of in-neighbours) with 2-layer MLPs,
    BatchNorm between them. (N, k, C) -> (N, k, out_feats), every frequency an independent signal."""

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
        x = torch.nan_to_num(eigvecs, nan=0.0).unsqueeze(-1)  # (N, k, 1)
        x = self.enc(graph, x) + self.enc(graph, -x)  # (N, k, phi_out)
        if self.model == "mlp":
            return self.rho(x.reshape(x.shape[0], -1))
        real = torch.arange(self.k, device=x.device)[None, :] < \
            layout.num_nodes_per_graph[layout.node_graph_id][:, None]
        return self.rho((x * real[..., None]).sum(dim=1))
