"""The exported layers: each library layer's eval-mode math on plain tensors, edge work in :mod:`.scatter`.

Each class is built from the trained library module (``from_module``-style constructors taking it), reads
its weights through the same helpers the folded inference path uses (:meth:`GatedGCNLayer.projection`,
:func:`~geaet_dgl.nn.norm.batchnorm_affine`, :func:`~geaet_dgl.nn.external_attention.heads_as_one_linear`,
:attr:`GraphSelfAttention.score_scale`) and computes what the module computes in eval mode, with its
BatchNorms as per-channel affine maps and no dropout. All are TorchScript-compilable and traceable by the
ONNX exporter: no DGL graph, no Python branch on tensor values or sizes.

Calling conventions (N nodes, E edges, B graphs, d channels):

* local MPNN: ``(h (N, d), e (E, d'), src (E,), dst (E,), pe_dist (E, 1) or (0, 1)) -> (h, e)``;
* global attention: ``(h, graph_of_node (N,), node_counts (B,), position (N,)) -> h``;
* GEANet: ``(h, e, graph_of_node, graph_of_edge (E,), num_graphs) -> (h, e)``;
* norms: ``(x, graph_of_node, node_counts) -> x``.
"""
from __future__ import annotations

import copy
from typing import Tuple

import torch
import torch.nn.functional as F
from torch import nn

from ..errors import ConfigError
from ..nn.activation import ACTIVATIONS
from ..nn.external_attention import heads_as_one_linear
from ..nn.norm import batchnorm_affine
from .scatter import segment_max, segment_softmax, segment_sum


class ExportError(ConfigError):
    """A part of the trained model that the exporter does not cover: one line naming the part and the reason
    (the command line prints it as ``error: ...``)."""


def activation_name(module: nn.Module) -> str:
    """'relu' or 'gelu' for the library's activation modules."""
    for name, cls in ACTIVATIONS.items():
        if type(module) is cls:
            return name
    raise ExportError(f"cannot export the activation {type(module).__name__}: only relu and gelu are exported")


def activate(x: torch.Tensor, relu: bool) -> torch.Tensor:
    """ReLU or GELU (exact, as ``nn.GELU()``)."""
    return F.relu(x) if relu else F.gelu(x)


def sigmoid(x: torch.Tensor) -> torch.Tensor:
    """:math:`1 / (1 + e^{-x})` written out. onnxruntime's ``Sigmoid`` kernel is an approximation whose absolute
    error (~1e-7) is all there is of a gate far below 0.5; GatedGCN divides sums of such gates by their sum
    plus 1e-6, which turned that error into differences of order 1 in the node update (measured on the MNIST
    preset). ``Exp`` keeps its relative precision down to the smallest gates."""
    return torch.reciprocal(1.0 + torch.exp(-x))


def frozen(module: nn.Module) -> nn.Module:
    """An eval-mode copy of ``module`` with its parameters as fixed tensors (no autograd)."""
    clone = copy.deepcopy(module).eval()
    for parameter in clone.parameters():
        parameter.requires_grad_(False)
    return clone


def affine_of(norm: nn.Module, what: str) -> Tuple[torch.Tensor, torch.Tensor]:
    """A BatchNorm's eval-mode ``(scale, shift)``, refused where it has no running statistics."""
    affine = batchnorm_affine(norm)
    if affine is None:
        raise ExportError(f"cannot export {what}: a BatchNorm without running statistics normalises with each batch's "
                                "statistics; the exporter folds running statistics only")
    return affine


# ----------------------------------------------------------------------------------------------------------- norms

class ExportNorm(nn.Module):
    """A :class:`~geaet_dgl.nn.norm.BranchNorm` in eval mode: ``kind`` 0 affine (BatchNorm with running
    statistics; ``none`` as the identity), 1 LayerNorm over each node's channels, 2 LayerNorm over each graph."""

    def __init__(self, norm: nn.Module, what: str):
        super().__init__()
        kind = norm.kind
        d = None
        self.eps = 1e-5
        if kind == "batch":
            scale, shift = affine_of(norm.norm, what)
            self.kind = 0
        elif kind == "none":
            scale, shift, self.kind = None, None, 0
        elif kind == "node_layer":
            self.kind, self.eps = 1, float(norm.norm.eps)
            scale, shift = norm.norm.weight.detach(), norm.norm.bias.detach()
        elif kind == "layer":
            self.kind, self.eps = 2, float(norm.norm.eps)
            scale, shift = norm.norm.weight.detach(), norm.norm.bias.detach()
        else:
            raise ExportError(f"cannot export {what}: norm {kind!r} is not exported")
        if scale is None:  # the identity
            d = 1
            scale, shift = torch.ones(d), torch.zeros(d)
        self.register_buffer("scale", scale.detach().clone())
        self.register_buffer("shift", shift.detach().clone())

    def forward(self, x: torch.Tensor, graph_of_node: torch.Tensor, node_counts: torch.Tensor) -> torch.Tensor:
        if self.kind == 1:
            return F.layer_norm(x, [x.shape[1]], self.scale, self.shift, self.eps)
        if self.kind == 2:  # PyG's graph LayerNorm: statistics over all n_G x d entries of each graph
            count = (node_counts.clamp(min=1) * x.shape[1]).to(x.dtype).unsqueeze(1)
            mean = segment_sum(x, graph_of_node, node_counts.shape[0]).sum(1, keepdim=True) / count
            centred = x - mean.index_select(0, graph_of_node)
            var = segment_sum(centred * centred, graph_of_node, node_counts.shape[0]).sum(1, keepdim=True) / count
            out = centred / (var + self.eps).sqrt().index_select(0, graph_of_node)
            return out * self.scale + self.shift
        return x * self.scale + self.shift


class NoNorm(nn.Module):
    """The norm of an absent branch (never called)."""

    def forward(self, x: torch.Tensor, graph_of_node: torch.Tensor, node_counts: torch.Tensor) -> torch.Tensor:
        return x


# ------------------------------------------------------------------------------------------------------ local MPNNs

class NoMPNN(nn.Module):
    """The absent local branch (never called: the layer's ``has_local`` is False)."""

    def forward(self, h: torch.Tensor, e: torch.Tensor, src: torch.Tensor, dst: torch.Tensor,
                pe_dist: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        return h, e


class ExportGatedGCN(nn.Module):
    """:class:`~geaet_dgl.nn.gated_gcn.GatedGCNLayer` in eval mode (``gated_aggregate`` then its norms):

    .. math::
        \\hat e_{ij} = D x_i + E x_j + C e_{ij}, \\quad \\sigma_{ij} = \\mathrm{sigmoid}(\\hat e_{ij})\\,[\\cdot r_{ij}],
        \\quad x_i' = x_i + \\mathrm{act}(\\mathrm{BN}(A x_i + \\textstyle\\sum_j \\sigma_{ij} B x_j /
        (\\sum_j \\sigma_{ij} + 10^{-6})))
    """

    def __init__(self, layer: nn.Module):
        super().__init__()
        from ..nn.gated_gcn import GATE_EPS

        with torch.no_grad():
            weight, bias = layer.projection()
        self.register_buffer("weight", weight.detach().clone())
        self.register_buffer("bias", bias.detach().clone())
        self.register_buffer("c_weight", layer.C.weight.detach().clone())
        node_scale, node_shift = affine_of(layer.bn_node_x, "GatedGCN's node BatchNorm")
        edge_scale, edge_shift = affine_of(layer.bn_edge_e, "GatedGCN's edge BatchNorm")
        self.register_buffer("node_scale", node_scale.clone())
        self.register_buffer("node_shift", node_shift.clone())
        self.register_buffer("edge_scale", edge_scale.clone())
        self.register_buffer("edge_shift", edge_shift.clone())
        self.out_feats = layer.out_feats
        self.residual = bool(layer.residual)
        self.relu = activation_name(layer.act_x) == "relu"
        self.eps = GATE_EPS
        self.gated = bool(layer.equivstable_pe)
        # the distance MLP without its closing Sigmoid (applied by :func:`sigmoid`)
        self.gate = frozen(nn.Sequential(*list(layer.mlp_r_ij)[:-1])) if self.gated else nn.Identity()

    def forward(self, h: torch.Tensor, e: torch.Tensor, src: torch.Tensor, dst: torch.Tensor,
                pe_dist: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        d = self.out_feats
        projected = F.linear(h, self.weight, self.bias)
        ax, bx, dx, ex = projected[:, :d], projected[:, d:2 * d], projected[:, 2 * d:3 * d], projected[:, 3 * d:]
        e_hat = ex.index_select(0, src) + dx.index_select(0, dst) + F.linear(e, self.c_weight)
        sigma = sigmoid(e_hat)
        if self.gated:
            sigma = sigma * sigmoid(self.gate(pe_dist))
        num_nodes = h.shape[0]
        numerator = segment_sum(bx.index_select(0, src) * sigma, dst, num_nodes)
        denominator = segment_sum(sigma, dst, num_nodes) + self.eps
        x = activate((ax + numerator / denominator) * self.node_scale + self.node_shift, self.relu)
        e_out = activate(e_hat * self.edge_scale + self.edge_shift, self.relu)
        if self.residual:
            x = h + x
            e_out = e + e_out
        return x, e_out


class ExportGIN(nn.Module):
    """GIN (``edges`` False) or GINE (True) in eval mode: :math:`\\mathrm{MLP}(x_i + \\sum_{j \\to i} m_{ji})`,
    :math:`m_{ji} = x_j` or :math:`\\mathrm{ReLU}(x_j + e_{ji})`; the edges pass through."""

    def __init__(self, layer: nn.Module, edges: bool):
        super().__init__()
        self.mlp = frozen(layer.nn)
        self.edges = edges

    def forward(self, h: torch.Tensor, e: torch.Tensor, src: torch.Tensor, dst: torch.Tensor,
                pe_dist: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        messages = h.index_select(0, src)
        if self.edges:
            messages = F.relu(messages + e)
        return self.mlp(segment_sum(messages, dst, h.shape[0]) + h), e


def gcn_propagate(h: torch.Tensor, src: torch.Tensor, dst: torch.Tensor) -> torch.Tensor:
    """:math:`\\hat D^{-1/2} (A + I) \\hat D^{-1/2} h` with the graph's self-loops replaced by one per node
    (PyG's ``add_remaining_self_loops``; :mod:`geaet_dgl.nn.gcn`): (N, d) -> (N, d)."""
    keep = (src != dst).to(h.dtype).unsqueeze(1)  # (E, 1): 0 for a self-loop
    degree = segment_sum(keep, dst, h.shape[0]) + 1.0
    norm = degree.rsqrt()
    scaled = h * norm
    return (segment_sum(scaled.index_select(0, src) * keep, dst, h.shape[0]) + scaled) * norm


class ExportGCN(nn.Module):
    """:class:`~geaet_dgl.nn.gcn.GCNLayer` (or the input branch's graph-free copy, ``propagate`` False) in
    eval mode: :math:`\\hat D^{-1/2} (A + I) \\hat D^{-1/2} W x + b`; the edges pass through."""

    def __init__(self, layer: nn.Module, propagate: bool = True):
        super().__init__()
        self.register_buffer("weight", layer.lin.weight.detach().clone())
        self.register_buffer("bias", layer.bias.detach().clone())
        self.propagate = propagate

    def forward(self, h: torch.Tensor, e: torch.Tensor, src: torch.Tensor, dst: torch.Tensor,
                pe_dist: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        out = F.linear(h, self.weight)
        if self.propagate:
            out = gcn_propagate(out, src, dst)
        return out + self.bias, e


class ExportGAT(nn.Module):
    """:class:`~geaet_dgl.nn.gat.GATLayer` in eval mode (PyG's ``GATConv`` with edge features): per head,
    :math:`\alpha_{ij} = \mathrm{softmax}_{j \in N(i) \cup \{i\}}(\mathrm{LeakyReLU}(a_s W x_j + a_d W x_i + a_e W_e e_{ji}))`,
    :math:`x_i' = \Vert_h \sum_j \alpha_{ij} W x_j + b`. The graph's self-loops get no weight (their scores are
    masked) and every node gets one whose edge term is the mean of its other incoming edges' terms, as PyG's
    ``add_self_loops(fill_value='mean')``; the edges pass through."""

    def __init__(self, layer: nn.Module):
        super().__init__()
        self.num_heads, self.head_dim, self.negative_slope = layer.num_heads, layer.head_dim, layer.negative_slope
        self.register_buffer("weight", layer.lin.weight.detach().clone())
        self.register_buffer("att_src", layer.att_src.detach().clone())
        self.register_buffer("att_dst", layer.att_dst.detach().clone())
        self.register_buffer("bias", layer.bias.detach().clone())
        self.edges = layer.lin_edge is not None
        self.register_buffer("edge_weight", layer.lin_edge.weight.detach().clone() if self.edges else torch.zeros(0))
        self.register_buffer("att_edge", layer.att_edge.detach().clone() if self.edges else torch.zeros(0))

    def forward(self, h: torch.Tensor, e: torch.Tensor, src: torch.Tensor, dst: torch.Tensor,
                pe_dist: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        heads, width, num_nodes = self.num_heads, self.head_dim, h.shape[0]
        projected = F.linear(h, self.weight).reshape(num_nodes, heads, width)
        score_src, score_dst = (projected * self.att_src).sum(-1), (projected * self.att_dst).sum(-1)  # (N, H)
        keep = (src != dst).unsqueeze(1)  # (E, 1): False for the graph's own self-loops
        scores = score_src.index_select(0, src) + score_dst.index_select(0, dst)  # (E, H)
        loop_scores = score_src + score_dst  # (N, H): the self-loop every node gets
        if self.edges:
            edge_score = (F.linear(e, self.edge_weight).reshape(-1, heads, width) * self.att_edge).sum(-1)
            kept = keep.to(h.dtype)
            total = segment_sum(edge_score * kept, dst, num_nodes)
            count = segment_sum(kept, dst, num_nodes).clamp(min=1.0)
            scores = scores + edge_score
            loop_scores = loop_scores + total / count
        scores = F.leaky_relu(scores, self.negative_slope).masked_fill(~keep, -3.4028234663852886e38)
        loops = torch.arange(num_nodes, device=h.device)
        all_src, all_dst = torch.cat([src, loops]), torch.cat([dst, loops])
        alpha = segment_softmax(torch.cat([scores, F.leaky_relu(loop_scores, self.negative_slope)]), all_dst,
                                num_nodes)  # (E + N, H)
        messages = projected.index_select(0, all_src) * alpha.unsqueeze(-1)  # (E + N, H, C)
        out = segment_sum(messages.reshape(-1, heads * width), all_dst, num_nodes)
        return out + self.bias, e


class ExportGENConv(nn.Module):
    """:class:`~geaet_dgl.nn.gen_conv.GENConvLayer` in eval mode: :math:`x_i' = \mathrm{MLP}(x_i + \sum_j
    \mathrm{softmax}_j(m_{ji}) \odot m_{ji})`, :math:`m_{ji} = \mathrm{ReLU}(x_j + e_{ji}) + \epsilon`, the softmax per
    channel over the node's incoming edges (0 without any); the MLP's BatchNorm as its running statistics."""

    def __init__(self, layer: nn.Module):
        super().__init__()
        affine_of(layer.mlp[1], "GENConv's BatchNorm")  # refused without running statistics
        self.mlp = frozen(layer.mlp)
        self.eps = float(layer.eps)

    def forward(self, h: torch.Tensor, e: torch.Tensor, src: torch.Tensor, dst: torch.Tensor,
                pe_dist: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        messages = h.index_select(0, src)
        if e.shape[1] == messages.shape[1]:  # (no edge states: the messages are the source features)
            messages = messages + e
        messages = F.relu(messages) + self.eps
        weights = segment_softmax(messages, dst, h.shape[0])
        return self.mlp(h + segment_sum(weights * messages, dst, h.shape[0])), e


class ExportPNA(nn.Module):
    """:class:`~geaet_dgl.nn.pna.PNALayer` in eval mode: messages :math:`W_{pre} [x_i \Vert x_j \Vert W_e e_{ji}]`,
    their mean, max and sum over each node's incoming edges (0 without any), concatenated with :math:`x_i`,
    then the post and the last linear map; the edges pass through."""

    def __init__(self, layer: nn.Module):
        super().__init__()
        self.edge_encoder = frozen(layer.edge_encoder)
        self.pre = frozen(layer.pre_nns[0][0])
        self.post = frozen(layer.post_nns[0])
        self.lin = frozen(layer.lin)

    def forward(self, h: torch.Tensor, e: torch.Tensor, src: torch.Tensor, dst: torch.Tensor,
                pe_dist: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        num_nodes = h.shape[0]
        pairs = torch.cat([h.index_select(0, dst), h.index_select(0, src), self.edge_encoder(e)], dim=1)
        messages = self.pre(pairs)  # (E, d)
        total = segment_sum(messages, dst, num_nodes)
        degree = segment_sum(torch.ones_like(messages[:, :1]), dst, num_nodes).clamp(min=1.0)
        aggregated = torch.cat([h, total / degree, segment_max(messages, dst, num_nodes), total], dim=1)
        return self.lin(self.post(aggregated)), e


# ---------------------------------------------------------------------------------------------- global attention

class NoAttention(nn.Module):
    """The absent global branch (never called)."""

    def forward(self, h: torch.Tensor, graph_of_node: torch.Tensor, node_counts: torch.Tensor,
                position: torch.Tensor) -> torch.Tensor:
        return h


class ExportSelfAttention(nn.Module):
    """:class:`~geaet_dgl.nn.self_attention.GraphSelfAttention` in eval mode: every node attends to the nodes
    of its graph, :math:`\\mathrm{softmax}(Q K^T / \\sqrt{d/H}) V W_o`.

    The nodes are scattered into a (B, W, 3d) padded tensor, W the largest graph's node count computed from
    ``node_counts`` as a tensor (so the exported file follows any W); padding keys are masked.
    """

    def __init__(self, attention: nn.Module):
        super().__init__()
        d, heads = attention.hidden_dim, attention.num_heads
        scale = torch.ones(3 * d)
        scale[:d] = attention.score_scale  # softmax((s q) k^T) = softmax(s q k^T)
        self.register_buffer("in_weight", (attention.in_proj_weight.detach() * scale[:, None]).clone())
        self.register_buffer("in_bias", (attention.in_proj_bias.detach() * scale).clone())
        self.register_buffer("out_weight", attention.out_proj.weight.detach().clone())
        self.register_buffer("out_bias", attention.out_proj.bias.detach().clone())
        self.hidden_dim, self.num_heads = d, heads

    def forward(self, h: torch.Tensor, graph_of_node: torch.Tensor, node_counts: torch.Tensor,
                position: torch.Tensor) -> torch.Tensor:
        d, heads = self.hidden_dim, self.num_heads
        head_dim = d // heads
        num_graphs = node_counts.shape[0]
        width = node_counts.max()  # a tensor: the exported file reads it from the input
        rows = graph_of_node * width + position  # (N,) row of every node in the (B * W) layout
        qkv = F.linear(h, self.in_weight, self.in_bias)  # (N, 3d)
        slots = torch.arange(num_graphs * width, device=h.device)
        dense = torch.zeros_like(slots, dtype=h.dtype).unsqueeze(1).expand(-1, 3 * d)
        dense = dense.scatter(0, rows.unsqueeze(1).expand(-1, 3 * d), qkv)
        dense = dense.reshape(num_graphs, -1, 3, heads, head_dim).permute(2, 0, 3, 1, 4)  # (3, B, H, W, d/H)
        query = dense[0].reshape(num_graphs * heads, -1, head_dim)
        key = dense[1].reshape(num_graphs * heads, -1, head_dim)
        value = dense[2].reshape(num_graphs * heads, -1, head_dim)
        valid = torch.arange(width, device=h.device).unsqueeze(0) < node_counts.unsqueeze(1)  # (B, W)
        valid = valid.unsqueeze(1).expand(-1, heads, -1).reshape(num_graphs * heads, 1, -1)
        scores = torch.bmm(query, key.transpose(1, 2)).masked_fill(~valid, -3.4028234663852886e38)
        out = torch.bmm(torch.softmax(scores, -1), value)  # (B*H, W, d/H)
        out = out.reshape(num_graphs, heads, -1, head_dim).transpose(1, 2).reshape(-1, d)
        return F.linear(out.index_select(0, rows), self.out_weight, self.out_bias)


def row_max(x: torch.Tensor) -> torch.Tensor:
    """Maximum over the last dimension, keeping it (``topk``: torch 2.2 writes ``amax`` / ``max(dim)`` into ONNX
    opset 18 as a ``ReduceMax`` node with an attribute the checker rejects)."""
    return x.topk(1, dim=-1).values


def to_dense(per_node: torch.Tensor, rows: torch.Tensor, slots: torch.Tensor, num_graphs: int) -> torch.Tensor:
    """(N, H, F) per-node rows -> (B * H, W, F) per graph and head, padding rows 0; ``rows`` (N,) is each node's
    row ``graph * W + position`` of the (B * W) layout, ``slots`` the (B * W,) ``arange`` of that layout."""
    num_nodes, heads, width = per_node.shape[0], per_node.shape[1], per_node.shape[2]
    flat = per_node.reshape(num_nodes, heads * width)
    out = torch.zeros_like(slots, dtype=per_node.dtype).unsqueeze(1).expand(-1, heads * width)
    out = out.scatter(0, rows.unsqueeze(1).expand(-1, heads * width), flat)
    return out.reshape(num_graphs, -1, heads, width).transpose(1, 2).reshape(num_graphs * heads, -1, width)


class ExportPerformer(nn.Module):
    """:class:`~geaet_dgl.nn.performer.PerformerAttention` in eval mode (FAVOR+ within each graph): per head, with
    :math:`\phi(u) = M^{-1/2}(\exp(c P u - c^2 \lVert u \rVert^2 / 2 - s) + 10^{-4})`,
    :math:`x_i' = W_o \Vert_h \phi(q_i)^T \sum_j \phi(k_j) v_j^T / \phi(q_i)^T \sum_j \phi(k_j) + b_o`, the sums
    over the nodes of node i's graph; the stabiliser :math:`s` is each query's largest logit and, for keys,
    the largest logit over the graph's keys. The sums are one batched product on the graphs padded to the
    largest (padding rows are zero and carry no key); with ``pad_keys`` (the reference's configurations) the
    padding keys' features enter the denominator as in the reference.
    """

    def __init__(self, attention: nn.Module):
        super().__init__()
        from ..nn.performer import EXP_FLOOR, KERNEL_EPS

        phi = attention.fast_attention
        self.num_heads, self.head_dim, self.num_features = attention.num_heads, attention.head_dim, phi.num_features
        self.pad_keys = bool(attention.pad_keys)
        self.scale = float(self.head_dim ** -0.25)
        self.exp_floor, self.log_features = float(EXP_FLOOR), float(0.5 * torch.log(torch.tensor(
            float(self.num_features), dtype=torch.float64)))
        self.eps = float(KERNEL_EPS * self.num_features ** -0.5)
        self.register_buffer("projection", phi.projection_matrix.detach().clone())  # (M, C)
        self.register_buffer("qkv_weight", torch.cat([attention.to_q.weight, attention.to_k.weight,
                                                      attention.to_v.weight]).detach().clone())
        self.register_buffer("out_weight", attention.to_out.weight.detach().clone())
        self.register_buffer("out_bias", attention.to_out.bias.detach().clone())

    def _features(self, logits: torch.Tensor, half_norm: torch.Tensor, stabiliser: torch.Tensor) -> torch.Tensor:
        exponent = (logits - (half_norm + stabiliser + self.log_features)).clamp(min=self.exp_floor)
        return torch.exp(exponent) + self.eps

    def forward(self, h: torch.Tensor, graph_of_node: torch.Tensor, node_counts: torch.Tensor,
                position: torch.Tensor) -> torch.Tensor:
        heads, width, features = self.num_heads, self.head_dim, self.num_features
        num_nodes, num_graphs = h.shape[0], node_counts.shape[0]
        qkv = F.linear(h, self.qkv_weight).reshape(num_nodes, 3, heads, width)
        q, k, v = qkv[:, 0], qkv[:, 1], qkv[:, 2]  # (N, H, C)
        q_logits = F.linear(q * self.scale, self.projection)  # (N, H, M)
        k_logits = F.linear(k * self.scale, self.projection)
        q_half = (q * q).sum(-1, keepdim=True) * (self.scale * self.scale / 2.0)
        k_half = (k * k).sum(-1, keepdim=True) * (self.scale * self.scale / 2.0)
        q_feat = self._features(q_logits, q_half, row_max(q_logits))
        k_max = segment_max(row_max(k_logits).reshape(num_nodes, heads), graph_of_node, num_graphs)  # (B, H)
        dense_width = node_counts.max()
        padding = (dense_width - node_counts).to(h.dtype).unsqueeze(1)  # (B, 1): padding keys per graph
        if self.pad_keys:  # the reference's stabiliser also sees the padding keys' logits, 0
            k_max = torch.where(padding > 0, k_max.clamp(min=0.0), k_max)
        k_feat = self._features(k_logits, k_half, k_max.index_select(0, graph_of_node).unsqueeze(-1))
        values = torch.cat([v, torch.ones_like(v[..., :1])], dim=-1)  # (N, H, C + 1): [v, 1]

        rows = graph_of_node * dense_width + position  # (N,) row in the (B * W) layout
        slots = torch.arange(num_graphs * dense_width, device=h.device)
        context = torch.bmm(to_dense(k_feat, rows, slots, num_graphs).transpose(1, 2),
                            to_dense(values, rows, slots, num_graphs))  # (B*H, M, C + 1)
        if self.pad_keys:  # each padding key: logits and norm 0, phi = exp(-s) / sqrt(M) + eps, value 0, one 1
            pad_feat = torch.exp((-(k_max + self.log_features)).clamp(min=self.exp_floor)) + self.eps  # (B, H)
            extra = (padding * pad_feat).reshape(num_graphs * heads, 1, 1)
            context = torch.cat([context[..., :width], context[..., width:] + extra], dim=-1)
        result = torch.bmm(to_dense(q_feat, rows, slots, num_graphs), context)  # (B*H, W, C + 1)
        result = result.reshape(num_graphs, heads, -1, width + 1).transpose(1, 2).reshape(-1, heads, width + 1)
        result = result.index_select(0, rows)  # (N, H, C + 1)
        out = result[..., :width] / result[..., width:].clamp(min=1.1754943508222875e-38)
        return F.linear(out.reshape(num_nodes, heads * width), self.out_weight, self.out_bias)


# --------------------------------------------------------------------------------------------------------- GEANet

class NoGEANet(nn.Module):
    """The absent external branch (never called)."""

    def forward(self, h: torch.Tensor, e: torch.Tensor, graph_of_node: torch.Tensor, graph_of_edge: torch.Tensor,
                num_graphs: int) -> Tuple[torch.Tensor, torch.Tensor]:
        return h, e


def double_normalize(scores: torch.Tensor, num_heads: int, segments: torch.Tensor, num_graphs: int,
                     per_graph: bool) -> torch.Tensor:
    """GEANet's double normalisation of (M, H*S) scores: softmax over the rows (of each graph with
    ``per_graph``, else of the whole batch), then each head's S slots divided by their sum.

    Computed as the library's layer-wise path computes it (:func:`~geaet_dgl.nn.external_attention.double_normalize`
    with ``column_lse``): the softmax over rows only rescales each column, so the result is
    :math:`\mathrm{softmax}_t(s_{it} - \mathrm{lse}_t)` with :math:`\mathrm{lse}_t = \log \sum_j \exp s_{jt}` over the
    rows of the node's graph (or batch). Rows whose column weights are all tiny are then never divided by their
    tiny sum; on the full-width presets the result is as close to a float64 computation as the training
    forward's (within 2e-7, docs/export.md).
    """
    rows = scores.shape[0]
    if not per_graph:  # one segment: the whole batch
        segments, num_graphs = torch.zeros(rows, dtype=torch.long, device=scores.device), 1
    top = segment_max(scores, segments, num_graphs)  # (B, H*S); no amax: torch 2.2 writes it badly for opset 18
    total = segment_sum(torch.exp(scores - top.index_select(0, segments)), segments, num_graphs)
    lse = top + torch.log(total)  # -inf for a graph without rows, which no row reads
    logits = (scores - lse.index_select(0, segments)).reshape(rows, num_heads, -1)
    return torch.softmax(logits, dim=-1).reshape(rows, -1)


class ExportGEANet(nn.Module):
    """:class:`~geaet_dgl.nn.external_attention.GEANet` (the reference's variant) in eval mode.

    The (S, S) units act on every head at once as block-diagonal (d, d) maps
    (:func:`~geaet_dgl.nn.external_attention.heads_as_one_linear`, the edges' strided channel order included),
    the shared unit composed into the key maps.
    """

    def __init__(self, net: nn.Module):
        super().__init__()
        heads = net.num_heads
        self.num_heads, self.per_graph = heads, net.scope == "graph"
        self.node_unit, self.edge_unit, self.shared_unit = bool(net.node_unit), bool(net.edge_unit), \
            bool(net.shared_unit)
        d = net.hidden_dim
        with torch.no_grad():
            shared = (net.share_U.weight.detach(), net.share_U.bias.detach()) if net.shared_unit else \
                (torch.eye(d), torch.zeros(d))

            def composed(unit: nn.Linear, order=None) -> Tuple[torch.Tensor, torch.Tensor]:
                weight, bias = heads_as_one_linear(unit, heads, order)
                return (weight @ shared[0]).detach().clone(), (weight @ shared[1] + bias).detach().clone()

            def plain(unit: nn.Linear) -> Tuple[torch.Tensor, torch.Tensor]:
                weight, bias = heads_as_one_linear(unit, heads)
                return weight.detach().clone(), bias.detach().clone()

            empty = (torch.zeros(0, d), torch.zeros(0))
            node_key = composed(net.node_U1) if net.node_unit else empty
            node_value = plain(net.node_U2) if net.node_unit else empty
            edge_key = composed(net.edge_U1, net._edge_input_order) if net.edge_unit else empty
            edge_value = plain(net.edge_U2) if net.edge_unit else empty
        for name, (weight, bias) in (("node_key", node_key), ("node_value", node_value), ("edge_key", edge_key),
                                     ("edge_value", edge_value), ("shared", shared)):
            self.register_buffer(f"{name}_weight", weight.detach().clone())
            self.register_buffer(f"{name}_bias", bias.detach().clone())

    def forward(self, h: torch.Tensor, e: torch.Tensor, graph_of_node: torch.Tensor, graph_of_edge: torch.Tensor,
                num_graphs: int) -> Tuple[torch.Tensor, torch.Tensor]:
        if self.node_unit:
            attn = double_normalize(F.linear(h, self.node_key_weight, self.node_key_bias), self.num_heads,
                                    graph_of_node, num_graphs, self.per_graph)
            h_out = F.linear(attn, self.node_value_weight, self.node_value_bias)
        elif self.shared_unit:
            h_out = F.linear(h, self.shared_weight, self.shared_bias)
        else:
            h_out = h
        e_out = e
        if self.edge_unit:
            attn = double_normalize(F.linear(e, self.edge_key_weight, self.edge_key_bias), self.num_heads,
                                    graph_of_edge, num_graphs, self.per_graph)
            e_out = F.linear(attn, self.edge_value_weight, self.edge_value_bias)
        return h_out, e_out


class ExportPaperGEANet(nn.Module):
    """:class:`~geaet_dgl.nn.external_attention.PaperGEANet` in eval mode:
    :math:`\\mathrm{Concat}_i(\\mathrm{DNorm}(X'_i U_k^T) U_v) W_o` with :math:`X' = X U_s`, no biases."""

    def __init__(self, net: nn.Module):
        super().__init__()
        d = net.hidden_dim
        self.num_heads, self.head_dim, self.per_graph = net.num_heads, net.head_dim, net.scope == "graph"
        self.node_unit, self.edge_unit = bool(net.node_unit), bool(net.edge_unit)
        empty_units = torch.zeros(0, net.head_dim)
        self.register_buffer("shared", net.shared.weight.detach().clone() if net.shared_unit else torch.eye(d))
        for kind in ("node", "edge"):
            on = getattr(net, f"{kind}_unit")
            self.register_buffer(f"{kind}_key", getattr(net, f"{kind}_key").detach().clone() if on else empty_units)
            self.register_buffer(f"{kind}_value", getattr(net, f"{kind}_value").detach().clone() if on
                                 else empty_units)
            self.register_buffer(f"{kind}_out", getattr(net, f"{kind}_out").weight.detach().clone() if on
                                 else torch.zeros(0, d))

    def _attend(self, feat: torch.Tensor, key: torch.Tensor, value: torch.Tensor, out: torch.Tensor,
                segments: torch.Tensor, num_graphs: int) -> torch.Tensor:
        rows = feat.shape[0]
        heads = F.linear(feat, self.shared).reshape(rows, self.num_heads, self.head_dim)
        scores = F.linear(heads, key).reshape(rows, -1)  # (M, H*S)
        attn = double_normalize(scores, self.num_heads, segments, num_graphs, self.per_graph)
        mixed = torch.matmul(attn.reshape(rows, self.num_heads, -1), value)  # (M, H, d_h)
        return F.linear(mixed.reshape(rows, -1), out)

    def forward(self, h: torch.Tensor, e: torch.Tensor, graph_of_node: torch.Tensor, graph_of_edge: torch.Tensor,
                num_graphs: int) -> Tuple[torch.Tensor, torch.Tensor]:
        h_out, e_out = h, e
        if self.node_unit:
            h_out = self._attend(h, self.node_key, self.node_value, self.node_out, graph_of_node, num_graphs)
        if self.edge_unit:
            e_out = self._attend(e, self.edge_key, self.edge_value, self.edge_out, graph_of_edge, num_graphs)
        return h_out, e_out


# ----------------------------------------------------------------------------------------------------- the layer

class ExportLayer(nn.Module):
    """:class:`~geaet_dgl.nn.geaet_layer.GEAETLayer` in eval mode: branches, residuals, norms, sum, FFN.

    The branch modules are built by :func:`geaet_dgl.export.model.export_layer`; an absent branch is a
    ``No*`` module whose ``has_*`` flag is False.
    """

    def __init__(self, layer: nn.Module, local: nn.Module, attention: nn.Module, external: nn.Module):
        super().__init__()
        self.has_local = layer.local_model is not None
        self.has_attention = layer.global_model is not None
        self.has_external = layer.external_model is not None
        self.local, self.attention, self.external = local, attention, external
        self.residual = bool(layer.residual)
        self.wraps_local = bool(layer.wraps_local())
        self.local_out_act = layer.local_out_act is not None
        self.local_out_relu = activation_name(layer.local_out_act) == "relu" if self.local_out_act else True
        identity = NoNorm()
        self.norm_local = ExportNorm(layer.norm1_local, "the local branch's norm") if self.has_local else identity
        self.norm_attention = ExportNorm(layer.norm1_global, "the global branch's norm") if self.has_attention \
            else identity
        self.norm_external = ExportNorm(layer.norm1_external, "GEANet's norm") if self.has_external else identity
        self.norm_out = ExportNorm(layer.norm2, "the layer's closing norm")
        self.use_ffn = bool(layer.use_ffn)
        self.ff1 = frozen(layer.ff_linear1) if self.use_ffn else nn.Identity()
        self.ff2 = frozen(layer.ff_linear2) if self.use_ffn else nn.Identity()
        self.ff_relu = activation_name(layer.act_ff) == "relu" if self.use_ffn else True

    def forward(self, h: torch.Tensor, e: torch.Tensor, src: torch.Tensor, dst: torch.Tensor,
                pe_dist: torch.Tensor, graph_of_node: torch.Tensor, graph_of_edge: torch.Tensor,
                node_counts: torch.Tensor, position: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        num_graphs = node_counts.shape[0]
        total = torch.zeros_like(h)
        if self.has_local:
            h_local, e = self.local(h, e, src, dst, pe_dist)
            if self.wraps_local:
                if self.local_out_act:
                    h_local = activate(h_local, self.local_out_relu)
                if self.residual:
                    h_local = h + h_local
            total = total + self.norm_local(h_local, graph_of_node, node_counts)
        if self.has_attention:
            h_global = self.attention(h, graph_of_node, node_counts, position)
            if self.residual:
                h_global = h + h_global
            total = total + self.norm_attention(h_global, graph_of_node, node_counts)
        if self.has_external:
            h_ext, e = self.external(h, e, graph_of_node, graph_of_edge, num_graphs)
            if self.residual:
                h_ext = h + h_ext
            total = total + self.norm_external(h_ext, graph_of_node, node_counts)
        if self.use_ffn:
            total = total + self.ff2(activate(self.ff1(total), self.ff_relu))
        return self.norm_out(total, graph_of_node, node_counts), e
