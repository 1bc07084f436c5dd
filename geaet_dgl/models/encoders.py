"""Input encoders: raw node/edge features -> hidden width."""
from __future__ import annotations

from typing import Optional, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from ..nn import sparse_input


class TypeEmbeddingEncoder(nn.Module):
    """Sum of one embedding per integer feature column (OGB Atom/BondEncoder style).

    Parameters
    ----------
    vocab_sizes : sizes of the vocabularies of the C columns.
    out_feats : int

    Input (M, C) int64, output (M, out_feats).
    """

    def __init__(self, vocab_sizes: Sequence[int], out_feats: int):
        super().__init__()
        self.embeddings = nn.ModuleList(nn.Embedding(size, out_feats) for size in vocab_sizes)
        for emb in self.embeddings:
            nn.init.xavier_uniform_(emb.weight)

    def forward(self, types: torch.Tensor) -> torch.Tensor:
        types = types.long().view(types.shape[0], -1)
        out = 0
        for column, emb in enumerate(self.embeddings):
            out = out + emb(types[:, column])
        return out


class ASTNodeEncoder(nn.Module):
    """GraphGPS's ``ASTNode`` encoder (ogbg-code2): node type + node attribute + depth embeddings, summed.

    Input (M, 3) int64 columns (type, attribute, depth); depths above
    ``vocab_sizes[2] - 1`` (20 in GraphGPS) share the last embedding. Output
    (M, out_feats). Embeddings keep torch's default initialisation, as GraphGPS's.
    """

    def __init__(self, vocab_sizes: Sequence[int], out_feats: int):
        super().__init__()
        if len(vocab_sizes) != 3:
            raise ValueError(f"encoder='ast' needs three vocabulary sizes (types, attributes, depths), got "
                             f"{list(vocab_sizes)}")
        self.max_depth = int(vocab_sizes[2]) - 1
        self.type_encoder = nn.Embedding(vocab_sizes[0], out_feats)
        self.attribute_encoder = nn.Embedding(vocab_sizes[1], out_feats)
        self.depth_encoder = nn.Embedding(vocab_sizes[2], out_feats)

    def forward(self, feat: torch.Tensor) -> torch.Tensor:
        feat = feat.long().view(feat.shape[0], 3)
        depth = feat[:, 2].clamp(max=self.max_depth)
        return self.type_encoder(feat[:, 0]) + self.attribute_encoder(feat[:, 1]) + self.depth_encoder(depth)


class TypeDictEncoder(nn.Module):
    """One embedding of the first integer feature column (GraphGPS's ``TypeDictNode`` / ``TypeDictEdge``).

    Input (M, C) int64 (column 0 is read), output (M, out_feats).
    """

    def __init__(self, num_types: int, out_feats: int):
        super().__init__()
        self.encoder = nn.Embedding(num_types, out_feats)

    def forward(self, types: torch.Tensor) -> torch.Tensor:
        return self.encoder(types.long().view(types.shape[0], -1)[:, 0])


class ConstantEncoder(nn.Module):
    """One learned vector for every row (the reference's DummyEdge encoder)."""

    def __init__(self, out_feats: int):
        super().__init__()
        self.encoder = nn.Embedding(1, out_feats)

    def forward(self, feat: torch.Tensor) -> torch.Tensor:
        # A (M, out_feats) view of the one vector (stride 0): no M x out_feats copy, which on a graph of
        # 10M edges would be 2.5 GiB that GCN / GEANet without edge units never read.
        return self.encoder.weight.expand(feat.shape[0], -1)


class LinearEncoder(nn.Module):
    """Affine map of float features: (M, in_feats) -> (M, out_feats)."""

    def __init__(self, in_feats: int, out_feats: int):
        super().__init__()
        self.in_feats = in_feats
        self.encoder = nn.Linear(in_feats, out_feats)

    def forward(self, feat: torch.Tensor) -> torch.Tensor:
        """(M, in_feats), dense or :class:`~geaet_dgl.nn.sparse_input.SparseFeatures` -> (M, out_feats)."""
        if isinstance(feat, sparse_input.SparseFeatures):
            return sparse_input.linear(self.encoder, feat)
        return self.encoder(feat.view(feat.shape[0], self.in_feats).to(self.encoder.weight.dtype))

    def folded(self) -> Optional[nn.Module]:
        """An eval-mode copy for one input feature (:class:`FoldedScalarEncoder`), else None (runs as it is)."""
        if type(self) is not LinearEncoder or self.in_feats != 1 or self.encoder.bias is None:
            return None
        return FoldedScalarEncoder(self)


class FoldedScalarEncoder(nn.Module):
    """A :class:`LinearEncoder` of one input feature as one ``addcmul``: (M, 1) -> (M, d).

    ``Linear(1, d)`` is ``b + x w``; computed by ``addmm`` it first copies the bias into every row.
    """

    def __init__(self, encoder: LinearEncoder):
        super().__init__()
        self.weight = encoder.encoder.weight.detach().reshape(-1)
        self.bias = encoder.encoder.bias.detach()

    def forward(self, feat: torch.Tensor) -> torch.Tensor:
        return torch.addcmul(self.bias, feat.view(feat.shape[0], 1).to(self.weight.dtype), self.weight)


class PreMPEncoder(nn.Module):
    """graphgym's ``GNNPreMP`` of one layer: Linear without bias -> BatchNorm1d -> ReLU -> each row scaled to unit
    L2 norm (its ``GeneralLayer`` with ``gnn.l2norm: True``, graphgym's default), (M, in_feats) -> (M, out_feats);
    what GraphGPS runs on the raw features without a node encoder."""

    def __init__(self, in_feats: int, out_feats: int):
        super().__init__()
        self.in_feats = in_feats
        self.linear = nn.Linear(in_feats, out_feats, bias=False)
        self.norm = nn.BatchNorm1d(out_feats)

    def forward(self, feat: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.norm(self.linear(feat.view(feat.shape[0], self.in_feats).to(self.linear.weight.dtype))))
        return F.normalize(h, p=2.0, dim=1)


def build_encoder(kind: str, in_feats: int, out_feats: int, vocab_sizes: Sequence[int] = ()) -> nn.Module:
    """Encoder by name: 'linear', 'embedding', 'constant', 'typedict', 'ast' or 'premp'."""
    if kind == "linear":
        return LinearEncoder(in_feats, out_feats)
    if kind == "embedding":
        return TypeEmbeddingEncoder(vocab_sizes, out_feats)
    if kind == "constant":
        return ConstantEncoder(out_feats)
    if kind == "ast":
        return ASTNodeEncoder(vocab_sizes, out_feats)
    if kind == "premp":
        return PreMPEncoder(in_feats, out_feats)
    if kind == "typedict":
        if len(vocab_sizes) != 1:
            raise ValueError(f"encoder='typedict' needs one vocabulary size, got {list(vocab_sizes)}")
        return TypeDictEncoder(vocab_sizes[0], out_feats)
    raise ValueError(f"encoder={kind!r} is not one of linear, embedding, constant, typedict, ast")
