"""The whole exported model: a trained :class:`~geaet_dgl.models.geaet.GEAET` as a module on plain tensors.

:class:`ExportedGEAET` takes

==============  ===========  =====================================================================
``x``           (N, F)       node features as the graph files store them, float32 (integer types
                             of embedding encoders as float32 values)
``edge_index``  (2, E)       int64 source and destination node of every edge, ids over the batch
                             (Graphormer's degrees are computed inside from it: see below)
``edge_attr``   (E, F_e)     float32 edge features ((E, 0) where the model reads none)
``node_counts`` (B,)         int64 nodes per graph; the nodes of graph b follow those of graph b-1
``lap_pe``      (N, k)       Laplacian eigenvectors (``model.pe`` eslappe / lappe / signnet; else (N, 0))
``lap_eigval``  (N, k)       their eigenvalues per node (``model.pe`` lappe; else (N, 0))
``rwse``        (N, k)       random-walk landing probabilities (``pe`` / ``se`` rwse; else (N, 0))
``spatial_types`` (N, W')    int64 Graphormer's spatial types to the nodes of each node's graph
                             (``attention`` biased_transformer; else (N, 0))
``path_types``  (N, W', S)   int64 edge types along the shortest paths (``graphormer.num_edge_types`` > 0;
                             else (N, 0, 0)); see :mod:`.graphormer`
==============  ===========  =====================================================================

Graphormer's in- and out-degrees (``graphormer.enable``) are not an input: the model computes them from
``edge_index`` (the directed simple graph, duplicate edges once: :func:`.graphormer.simple_graph_degrees`) and
refuses, as the library's model does, a degree its embedding tables lack (eager and TorchScript; the ONNX file
fails at the row lookup). Files of ``export_format`` 2 took them as an eighth input.

It returns (B, out_feats) for graph heads, (N, out_feats) for node heads: what the model returns in
eval mode on the same graphs batched with ``dgl.batch`` (the run's input transform applied inside).
:func:`check_exportable` refuses, in one line naming the part and the reason, what it does not cover.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

import torch
import torch.nn.functional as F
from torch import nn

from ..config import ModelConfig
from ..models.encoder_stage import MPNNS_READING_ESLAPPE, reads_edge_states
from ..models.geaet import GEAET
from ..models.input_gcn import TELEPORT
from ..nn.external_attention import GEANet
from ..nn.paper_geanet import PaperGEANet
from ..nn.gat import GATLayer
from ..nn.gated_gcn import GatedGCNLayer
from ..nn.gcn import GCNLayer
from ..nn.gen_conv import GENConvLayer
from ..nn.gin import GINELayer, GINLayer
from ..nn.performer import PerformerAttention
from ..nn.pna import PNALayer
from ..nn.sage import SAGELayer
from ..nn.biased_attention import BiasedGraphSelfAttention
from ..nn.self_attention import GraphSelfAttention
from .attention import ExportPerformer, ExportSelfAttention, NoAttention
from .common import ExportError, frozen
from .geanet import ExportGEANet, ExportPaperGEANet, NoGEANet
from .graphormer import ExportDegrees, ExportGraphormerBias, NoDegrees, NoGraphormerBias
from .heads import ExportHead
from .inputs import (ExportEncoder, ExportHopBranch, ExportKernelSE, ExportLapPE, ExportPropagationBranch,
                     ExportSignNet, NoLapPE, NoSignNet)
from .layers import ExportLayer, GraphIndex
from .mpnns import (ExportGAT, ExportGatedGCN, ExportGCN, ExportGENConv, ExportGIN, ExportPNA, ExportSAGE, NoMPNN,
                    gcn_propagate)
from .scatter import graph_index


#: The exported forward's inputs, in order.
INPUT_NAMES = ("x", "edge_index", "edge_attr", "node_counts", "lap_pe", "lap_eigval", "rwse", "spatial_types",
               "path_types")

#: What the exporter covers, by configuration field (anything else is refused by :func:`check_exportable`).
COVERED = {
    "mpnn": ("gatedgcn", "gine", "gin", "gcn", "sage", "gat", "pna", "genconv", "none"),
    "attention": ("transformer", "biased_transformer", "performer", "none"),
    "pe": ("none", "eslappe", "lappe", "signnet", "rwse"),
    "se": ("none", "rwse"),
    "node_encoder": ("linear", "embedding", "typedict", "constant", "ast"),
    "edge_encoder": ("linear", "embedding", "typedict", "constant", "none"),
    "head": ("graph", "mlp_graph", "san_graph", "node", "root", "sequence"),
    "norm": ("batch", "layer", "node_layer", "none"),
}

#: Why the parts not covered are refused.
REFUSED_BECAUSE = {
    "mpnn": "it has no exported form",
    "attention": "it has no exported form",
    "pe": "the exported example does not compute HKdiagSE or ElstaticSE",
    "se": "its encoding is not computed by the exported example",
    "node_encoder": "the encoder (premp) is not exported yet",
    "edge_encoder": "the encoder is not exported yet",
    "head": "the head scores node pairs (link prediction), not graphs or nodes",
    "norm": "the norm is not exported",
}


def check_exportable(config: ModelConfig, input_transform: Optional[Dict[str, Any]] = None) -> None:
    """Raise :class:`ExportError` naming the first part of ``config`` the exporter does not cover."""
    if config.hetero.ntypes:
        raise ExportError("cannot export a heterograph model (model.hetero): its typed layers have no exported form "
                          "yet")
    if config.graphormer.enable and config.graphormer.graph_token:
        raise ExportError("cannot export model.graphormer.graph_token: the graph token (one virtual node per graph) "
                          "has no exported form yet; exported: Graphormer's degrees, spatial and path bias")
    for field, covered in COVERED.items():
        value = getattr(config, field)
        if value not in covered:
            raise ExportError(f"cannot export model.{field}={value}: {REFUSED_BECAUSE[field]}; exported: "
                              f"{', '.join(covered)}")
    unknown = sorted(set(input_transform or {}) - {"standardize", "row_normalize", "propagate"})
    if unknown:
        raise ExportError(f"cannot export a run whose inputs are transformed by {', '.join(unknown)}: this "
                          "geaet-dgl does not know that transform")


#: The exported form of each branch class the exporter covers (:func:`export_branch`).
MPNN_EXPORTS = {GatedGCNLayer: ExportGatedGCN, GINELayer: lambda layer: ExportGIN(layer, edges=True),
                GINLayer: lambda layer: ExportGIN(layer, edges=False), GCNLayer: ExportGCN, SAGELayer: ExportSAGE,
                GATLayer: ExportGAT, PNALayer: ExportPNA, GENConvLayer: ExportGENConv}
ATTENTION_EXPORTS = {GraphSelfAttention: ExportSelfAttention, BiasedGraphSelfAttention: ExportSelfAttention,
                     PerformerAttention: ExportPerformer}
GEANET_EXPORTS = {GEANet: ExportGEANet, PaperGEANet: ExportPaperGEANet}


def export_branch(module: Optional[nn.Module], exports: dict, absent: Callable[[], nn.Module], what: str,
                  reason: str) -> nn.Module:
    """The exported form of a branch ``module`` from the table ``exports`` (``absent()`` for no branch); a class
    the table lacks is refused in one line naming ``what`` it is and ``reason``."""
    if module is None:
        return absent()
    exporter = exports.get(type(module))
    if exporter is None:
        raise ExportError(f"cannot export the {what} {type(module).__name__}: {reason}")
    return exporter(module)


def export_mpnn(module: Optional[nn.Module]) -> nn.Module:
    """The exported form of a local MPNN (``NoMPNN`` for none)."""
    return export_branch(module, MPNN_EXPORTS, NoMPNN, "local MPNN", REFUSED_BECAUSE["mpnn"])


def export_attention(module: Optional[nn.Module]) -> nn.Module:
    return export_branch(module, ATTENTION_EXPORTS, NoAttention, "global attention", REFUSED_BECAUSE["attention"])


def export_geanet(module: Optional[nn.Module]) -> nn.Module:
    return export_branch(module, GEANET_EXPORTS, NoGEANet, "external attention", "it has no exported form")


def export_layer(layer: nn.Module) -> ExportLayer:
    """One GEAET layer's exported form."""
    return ExportLayer(layer, export_mpnn(layer.local_model), export_attention(layer.global_model),
                       export_geanet(layer.external_model))


class ExportedGEAET(nn.Module):
    """A trained :class:`~geaet_dgl.models.geaet.GEAET` in eval mode on plain tensors (see the module docstring).

    Parameters
    ----------
    model : the trained model (its weights are copied: later changes to it do not reach this module).
    input_transform : the run's recorded input transform (``standardize`` / ``row_normalize``), applied to
        ``x`` and ``edge_attr`` first, as ``geaet-dgl predict`` applies it to the graphs it reads.
    """

    def __init__(self, model: GEAET, input_transform: Optional[Dict[str, Any]] = None):
        super().__init__()
        if type(model) is not GEAET:
            raise ExportError(f"cannot export a {type(model).__name__}: only GEAET models are exported")
        cfg = model.config
        check_exportable(cfg, input_transform)
        model = model.eval()
        d = cfg.hidden_dim
        transform = input_transform or {}
        self.row_normalize = "row_normalize" in transform
        self.propagation_hops = int(transform["propagate"]["hops"]) if "propagate" in transform else 0
        stats = transform.get("standardize")
        self.standardize = stats is not None
        for unit in ("node", "edge"):
            mean = torch.tensor(stats[f"{unit}_mean"], dtype=torch.float32) if stats else torch.zeros(0)
            std = torch.tensor(stats[f"{unit}_std"], dtype=torch.float32) if stats else torch.ones(0)
            self.register_buffer(f"{unit}_mean", mean)
            self.register_buffer(f"{unit}_std", std)

        self.node_encoder = ExportEncoder(model.node_encoder, cfg.node_encoder)
        self.reads_edges = bool(reads_edge_states(cfg))
        self.edge_encoder = ExportEncoder(model.edge_encoder, cfg.edge_encoder if model.edge_encoder is not None
                                          else "none", d)
        self.hidden_dim = d
        # positional / structural encodings: 0 none, 1 ESLapPE distances for the GatedGCN gate, 2 LapPE, 3 RWSE,
        # 4 SignNet
        self.pe_kind = 0
        self.register_buffer("pe_weight", torch.zeros(0, 0))
        self.lap_pe = ExportLapPE(model.pe_encoder) if cfg.pe == "lappe" else NoLapPE()
        self.kernel_pe = ExportKernelSE(model.pe_encoder) if cfg.pe == "rwse" else nn.Identity()
        self.signnet = ExportSignNet(model.pe_encoder) if cfg.pe == "signnet" else NoSignNet()
        if cfg.pe == "eslappe" and cfg.mpnn in MPNNS_READING_ESLAPPE:
            self.pe_kind = 1
            self.pe_weight = model.pe_encoder.linear_encoder_eigenvec.weight.detach().clone()
        elif cfg.pe == "lappe":
            self.pe_kind = 2
        elif cfg.pe == "rwse":
            self.pe_kind = 3
        elif cfg.pe == "signnet":
            self.pe_kind = 4
        self.degrees = ExportDegrees(model.degree_encoder) if model.degree_encoder is not None else NoDegrees()
        self.bias = ExportGraphormerBias(model.bias_encoder) if model.bias_encoder is not None else NoGraphormerBias()
        self.has_se = cfg.se == "rwse"
        self.kernel_se = ExportKernelSE(model.se_encoder) if self.has_se else nn.Identity()

        self.layers = nn.ModuleList(export_layer(layer) for layer in model.layers)
        self.jk = 0 if model.jk is None else (1 if cfg.jk == "cat" else 2)
        self.jk_linear = frozen(model.jk.linear) if self.jk == 1 else nn.Identity()
        head_kind = cfg.head if cfg.head in ("node", "root", "sequence") else "graph"
        self.head = ExportHead(model.head, head_kind)
        self.input_weight = float(cfg.input_gcn_weight) if model.input_gcn is not None else 0.0
        self.mix_logits = cfg.input_branch_mix == "logits"
        propagate = model.input_gcn is not None and cfg.input_branch == "gcn"
        # the hop and propagation branches are one module each; the second slot is never called
        self.one_module_branch = model.input_gcn is not None and cfg.input_branch in ("hops", "appnp")
        if self.one_module_branch and cfg.input_branch == "hops":
            self.input_first, self.input_second = ExportHopBranch(model.input_gcn), NoMPNN()
        elif self.one_module_branch:
            self.input_first, self.input_second = ExportPropagationBranch(model.input_gcn, TELEPORT), NoMPNN()
        elif model.input_gcn is not None:
            self.input_first = ExportGCN(model.input_gcn.first, propagate)
            self.input_second = ExportGCN(model.input_gcn.second, propagate)
        else:
            self.input_first = self.input_second = NoMPNN()

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor, edge_attr: torch.Tensor, node_counts: torch.Tensor,
                lap_pe: torch.Tensor, lap_eigval: torch.Tensor, rwse: torch.Tensor, spatial_types: torch.Tensor,
                path_types: torch.Tensor) -> torch.Tensor:
        num_nodes, num_edges = x.shape[0], edge_index.shape[1]
        src, dst = edge_index[0], edge_index[1]
        graph_of_node = graph_index(node_counts, num_nodes)
        graph_of_edge = graph_of_node.index_select(0, dst)
        position = torch.arange(num_nodes, device=x.device) - \
            (torch.cumsum(node_counts, 0) - node_counts).index_select(0, graph_of_node)

        x = x.to(torch.float32)
        if self.row_normalize:
            total = x.abs().sum(dim=1, keepdim=True)
            x = x / torch.where(total == 0, torch.ones_like(total), total)
        for _ in range(self.propagation_hops):  # SGC's propagation (data.feature_propagation), after the row norm
            x = gcn_propagate(x, src, dst)
        if self.standardize:
            x = (x - self.node_mean) / self.node_std
            edge_attr = (edge_attr.to(torch.float32) - self.edge_mean) / self.edge_std

        h = self.degrees(self.node_encoder(x, num_nodes), src, dst)
        e = torch.zeros(num_edges, 0, dtype=h.dtype, device=h.device)
        if self.reads_edges:
            e = self.edge_encoder(edge_attr, num_edges)
        pe_dist = torch.zeros(num_edges, 1, dtype=h.dtype, device=h.device)
        if self.pe_kind == 1:  # ||W (v_j - v_i)||^2: the encoder is affine, its bias cancels
            eigvecs = torch.nan_to_num(lap_pe.to(torch.float32), nan=0.0)
            diff = eigvecs.index_select(0, src) - eigvecs.index_select(0, dst)
            pe_dist = F.linear(diff, self.pe_weight).square().sum(-1, keepdim=True)
        elif self.pe_kind == 2:
            sizes = node_counts.index_select(0, graph_of_node)
            h = torch.cat([h, self.lap_pe(lap_pe.to(torch.float32), lap_eigval.to(torch.float32), sizes)], dim=-1)
        elif self.pe_kind == 3:
            h = torch.cat([h, self.kernel_pe(rwse.to(torch.float32))], dim=-1)
        elif self.pe_kind == 4:
            sizes = node_counts.index_select(0, graph_of_node)
            h = torch.cat([h, self.signnet(lap_pe.to(torch.float32), src, dst, sizes)], dim=-1)
        if self.has_se:
            h = torch.cat([h, self.kernel_se(rwse.to(torch.float32))], dim=-1)

        attn_bias = self.bias(spatial_types, path_types, graph_of_node, node_counts, position)  # once per batch
        outputs: List[torch.Tensor] = [h]
        index = GraphIndex(src, dst, graph_of_node, graph_of_edge, node_counts, position)
        for layer in self.layers:
            h, e = layer(h, e, index, pe_dist, attn_bias)
            outputs.append(h)
        if self.jk == 1:
            h = self.jk_linear(torch.cat(outputs, dim=-1))
        elif self.jk == 2:  # element-wise maxima (no amax: torch 2.2 writes it for opset 18 with a stale attribute)
            for output in outputs[:-1]:
                h = torch.maximum(h, output)
        if self.input_weight <= 0.0:
            return self.head(h, graph_of_node, node_counts)
        branch, _ = self.input_first(x, e, src, dst, pe_dist)
        if not self.one_module_branch:
            branch, _ = self.input_second(F.relu(branch), e, src, dst, pe_dist)
        w = self.input_weight
        if self.mix_logits:
            return (1.0 - w) * self.head(h, graph_of_node, node_counts) + w * branch
        return self.head((1.0 - w) * h + w * branch, graph_of_node, node_counts)
