"""The exported model's inputs in eval mode: feature encoders, positional / structural encodings (LapPE, RWSE,
SignNet) and the raw-feature input branch's hop form."""
from __future__ import annotations

from typing import List, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import nn

from .common import ExportError, affine_of, frozen
from .mpnns import gcn_propagate
from .scatter import segment_sum


class ExportEncoder(nn.Module):
    """An input encoder of :mod:`geaet_dgl.models.encoders`: ``kind`` 0 linear, 1 sum of embeddings,
    2 one embedding of column 0 (typedict), 3 one learned vector (constant), 4 none (zeros of ``width``, the
    graphgym model without an edge encoder), 5 the AST node encoder (type, attribute and clipped depth
    embeddings, summed). (M, F) float32 -> (M, d)."""

    def __init__(self, encoder: Optional[nn.Module], kind: str, width: int = 0):
        super().__init__()
        self.kind = {"linear": 0, "embedding": 1, "typedict": 2, "constant": 3, "none": 4, "ast": 5}[kind]
        self.width = width
        self.max_depth = int(encoder.max_depth) if kind == "ast" else 0
        self.in_feats = int(getattr(encoder, "in_feats", 1))
        self.linear = frozen(encoder.encoder) if kind == "linear" else nn.Identity()
        if kind == "embedding":
            self.embeddings = nn.ModuleList(frozen(emb) for emb in encoder.embeddings)
        elif kind == "ast":  # type, attribute, depth (clipped at the last depth embedding)
            self.embeddings = nn.ModuleList(frozen(emb) for emb in (encoder.type_encoder, encoder.attribute_encoder,
                                                                      encoder.depth_encoder))
        else:
            self.embeddings = nn.ModuleList(frozen(encoder.encoder) for _ in range(int(kind == "typedict")))
        self.register_buffer("constant", encoder.encoder.weight.detach().clone()[0] if kind == "constant"
                             else torch.zeros(0))

    def forward(self, feat: torch.Tensor, rows: int) -> torch.Tensor:
        if self.kind == 4:
            return torch.zeros(rows, self.width, device=feat.device)
        if self.kind == 0:
            return self.linear(feat.reshape(rows, self.in_feats).to(torch.float32))
        if self.kind == 3:
            return self.constant.unsqueeze(0).expand(rows, -1)
        types = feat.reshape(rows, -1).to(torch.long)
        if self.kind == 5:
            types = torch.cat([types[:, :2], types[:, 2:3].clamp(max=self.max_depth)], dim=1)
        out = torch.zeros(0)
        for column, embedding in enumerate(self.embeddings):
            term = embedding(types[:, column])
            out = term if column == 0 else out + term
        return out


class ExportKernelSE(nn.Module):
    """:class:`~geaet_dgl.models.positional.KernelSEEncoder` (RWSE) in eval mode: BatchNorm as an affine map,
    then its linear map or MLP. (N, k) -> (N, pe_dim)."""

    def __init__(self, encoder: nn.Module):
        super().__init__()
        k = encoder.pe_encoder[0].in_features if isinstance(encoder.pe_encoder, nn.Sequential) else \
            encoder.pe_encoder.in_features
        scale, shift = affine_of(encoder.raw_norm, "the RWSE BatchNorm") if encoder.raw_norm is not None else \
            (torch.ones(k), torch.zeros(k))
        self.register_buffer("scale", scale.clone())
        self.register_buffer("shift", shift.clone())
        self.encoder = frozen(encoder.pe_encoder)

    def forward(self, rwse: torch.Tensor) -> torch.Tensor:
        return self.encoder(rwse * self.scale + self.shift)


class ExportLapPE(nn.Module):
    """:class:`~geaet_dgl.models.positional.LapPEDeepSetEncoder` in eval mode (no sign flips): a shared MLP on
    each (eigenvector entry, eigenvalue) pair, summed over the graph's real frequencies. (N, k) x 2 -> (N, p)."""

    def __init__(self, encoder: nn.Module):
        super().__init__()
        self.k = encoder.k
        self.linear_A = frozen(encoder.linear_A)
        self.encoder = frozen(encoder.pe_encoder)

    def forward(self, eigvecs: torch.Tensor, eigvals: torch.Tensor, sizes: torch.Tensor) -> torch.Tensor:
        padded = torch.arange(self.k, device=eigvecs.device).unsqueeze(0) >= sizes.unsqueeze(1)
        padded = (padded | torch.isnan(eigvecs) | torch.isnan(eigvals)).unsqueeze(2)
        pairs = torch.stack([eigvecs, eigvals], dim=-1).masked_fill(padded, 0.0)
        return self.encoder(self.linear_A(pairs)).masked_fill(padded, 0.0).sum(dim=1)


class LinearChain(nn.Module):
    """Linear maps with a ReLU between them (none after the last): (..., C) -> (rows, out)."""

    def __init__(self, linears):
        super().__init__()
        self.linears = nn.ModuleList()
        for weight_t, bias in linears:
            linear = nn.Linear(weight_t.shape[0], weight_t.shape[1])
            with torch.no_grad():
                linear.weight.copy_(weight_t.t())
                linear.bias.copy_(bias)
            self.linears.append(frozen(linear))
        self.last = len(self.linears) - 1

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.reshape(-1, x.shape[-1])
        for index, linear in enumerate(self.linears):
            h = linear(h)
            if index < self.last:
                h = F.relu(h)
        return h


class ExportSignNet(nn.Module):
    """:class:`~geaet_dgl.models.signnet.SignNetEncoder` in eval mode, from its folded copy
    (:class:`~geaet_dgl.models.signnet.FoldedSignNetEncoder`: every BatchNorm in a linear map):
    :math:`\rho([\phi(v_j) + \phi(-v_j)]_j)`, :math:`\phi` GIN convolutions on each eigenvector as a one-channel
    signal, both signs at once. (N, k) eigenvectors -> (N, pe_dim)."""

    def __init__(self, encoder: nn.Module):
        super().__init__()
        folded = encoder.folded()
        if folded is None:
            raise ExportError("cannot export SignNet: a BatchNorm without running statistics normalises with each "
                              "batch's statistics; the exporter folds running statistics only")
        self.k, self.deepset = folded.k, folded.model == "deepset"
        self.convs = nn.ModuleList(LinearChain(linears) for linears in folded.convs)
        self.self_weights = [1.0 + eps for eps in folded.eps]
        self.rho = LinearChain(folded.rho)

    def forward(self, eigvecs: torch.Tensor, src: torch.Tensor, dst: torch.Tensor, sizes: torch.Tensor) -> torch.Tensor:
        num_nodes = eigvecs.shape[0]
        vecs = torch.nan_to_num(eigvecs, nan=0.0)
        x = torch.stack([vecs, -vecs], dim=-1).unsqueeze(-1)  # (N, k, 2, 1)
        for index, conv in enumerate(self.convs):
            flat = x.reshape(num_nodes, -1)
            summed = segment_sum(flat.index_select(0, src), dst, num_nodes) + flat * self.self_weights[index]
            x = conv(summed.reshape(num_nodes, self.k, 2, -1)).reshape(num_nodes, self.k, 2, -1)
        x = x.sum(dim=2)  # phi(v) + phi(-v): (N, k, C)
        if self.deepset:  # the sum over the graph's real frequencies
            real = torch.arange(self.k, device=x.device).unsqueeze(0) < sizes.unsqueeze(1)
            pooled = (x * real.unsqueeze(-1).to(x.dtype)).sum(dim=1)
        else:
            pooled = x.reshape(num_nodes, -1)
        return self.rho(pooled)


class NoSignNet(nn.Module):
    """The absent SignNet encoder (never called)."""

    def forward(self, eigvecs: torch.Tensor, src: torch.Tensor, dst: torch.Tensor, sizes: torch.Tensor) -> torch.Tensor:
        return eigvecs


class ExportHopBranch(nn.Module):
    """:class:`~geaet_dgl.models.input_gcn.HopBranch` in eval mode: ``X W_1`` split into K + 1 hop blocks, block k
    propagated k times by :math:`D^{-1/2} A D^{-1/2}` (no self-loops; D the in-degrees, 1 where a node has none),
    then ReLU and the second linear map. Same call as the MPNNs (the edges pass through)."""

    def __init__(self, branch: nn.Module):
        super().__init__()
        self.first, self.second = frozen(branch.first), frozen(branch.second)
        self.hidden_dim, self.hops = branch.hidden_dim, branch.hops

    def forward(self, h: torch.Tensor, e: torch.Tensor, src: torch.Tensor, dst: torch.Tensor,
                pe_dist: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        num_nodes = h.shape[0]
        keep = (src != dst).to(h.dtype).unsqueeze(1)
        norm = segment_sum(keep, dst, num_nodes).clamp(min=1.0).rsqrt()  # (N, 1)
        parts = list(self.first(h).split(self.hidden_dim, dim=1))
        out: List[torch.Tensor] = [parts[0]]
        for k in range(1, self.hops + 1):
            part = parts[k]
            for _ in range(k):
                part = segment_sum((part * norm).index_select(0, src) * keep, dst, num_nodes) * norm
            out.append(part)
        return self.second(F.relu(torch.cat(out, dim=1))), e


class ExportPropagationBranch(nn.Module):
    """:class:`~geaet_dgl.models.input_gcn.PropagationBranch` in eval mode: the 2-layer MLP's output propagated K
    times, :math:`Z \\leftarrow (1 - \\alpha) \\hat A Z + \\alpha Z^{(0)}` with GCN's normalised adjacency (one
    self-loop per node). Same call as the MPNNs (the edges pass through)."""

    def __init__(self, branch: nn.Module, teleport: float):
        super().__init__()
        self.first, self.second = frozen(branch.first), frozen(branch.second)
        self.hops, self.teleport = branch.hops, float(teleport)

    def forward(self, h: torch.Tensor, e: torch.Tensor, src: torch.Tensor, dst: torch.Tensor,
                pe_dist: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        start = self.second(F.relu(self.first(h)))
        out = start
        for _ in range(self.hops):
            out = (1.0 - self.teleport) * gcn_propagate(out, src, dst) + self.teleport * start
        return out, e


class NoLapPE(nn.Module):
    """The absent LapPE encoder (never called)."""

    def forward(self, eigvecs: torch.Tensor, eigvals: torch.Tensor, sizes: torch.Tensor) -> torch.Tensor:
        return eigvecs
