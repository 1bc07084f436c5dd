"""One table of parameter names between the reference's GEAET and ours, used in both directions.

Both models hold the same tensors in the same layout; only some module paths
differ (graphgym wraps encoders and heads in its own containers; our norms sit
in a ``BranchNorm``). Each :class:`NameRule` writes one such difference as a
pair of templates, ``{name}`` standing for a part matched by
:data:`PARTS`. :func:`reference_to_ours` applies every rule in order;
:func:`ours_to_reference` applies the rules that hold for a model
configuration in reverse order (a name of ours can come from several reference
encoders or heads: the configuration says which).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import AbstractSet, Callable, Dict, List, Optional

import torch

from ..config import ModelConfig

#: The regular expression each ``{name}`` placeholder stands for.
PARTS = {"i": r"\d+", "norm": r"norm1_local|norm1_global|norm1_external|norm2", "pe": r"raw_norm|pe_encoder|linear_A",
         "deg": r"in_degree_encoder|out_degree_encoder"}

_Condition = Callable[[ModelConfig], bool]


def _always(config: ModelConfig) -> bool:
    return True


@dataclass(frozen=True)
class NameRule:
    """``reference`` prefix template <-> ``ours`` prefix template, for the configurations ``when`` accepts.

    ``unless_followed_by`` keeps a name that already has our form from being
    rewritten again (our own keys pass :func:`reference_to_ours` unchanged).
    ``state_has``: the rule reads a reference name only in a state dict holding a key that starts with this
    prefix (``state_lacks``: holding none); the reference gives one module path two meanings, and its
    other encoders say which.
    """

    reference: str
    ours: str
    when: _Condition = _always
    unless_followed_by: str = ""
    state_has: str = ""
    state_lacks: str = ""

    def reads(self, keys: AbstractSet[str]) -> bool:
        """Whether :meth:`forward` applies to the names of a state dict with these ``keys``."""
        has = not self.state_has or any(k.startswith(self.state_has) for k in keys)
        lacks = not self.state_lacks or not any(k.startswith(self.state_lacks) for k in keys)
        return has and lacks

    def _pattern(self, template: str, guard: str = "") -> "re.Pattern[str]":
        parts = re.split(r"\{(\w+)\}", template)
        regex = "".join(re.escape(p) if k % 2 == 0 else f"(?P<{p}>{PARTS[p]})" for k, p in enumerate(parts))
        return re.compile("^" + regex + (f"(?!{re.escape(guard)})" if guard else ""))

    @staticmethod
    def _replacement(template: str) -> str:
        return re.sub(r"\{(\w+)\}", r"\\g<\1>", template.replace("\\", "\\\\"))

    def forward(self, key: str) -> str:
        return self._pattern(self.reference, self.unless_followed_by).sub(self._replacement(self.ours), key, count=1)

    def backward(self, key: str) -> str:
        return self._pattern(self.ours).sub(self._replacement(self.reference), key, count=1)


def _pe(*kinds: str) -> _Condition:
    return lambda config: config.pe in kinds


#: Encodings the reference names alone (``RWSE``: its ``linear_x`` expands x) or composed (``Base+SignNet``).
_SE_PES = ("signnet", "hkdiagse", "elstaticse")


def _alone(config: ModelConfig) -> bool:
    """The reference's single node encoder that also expands x (``node_encoder_name: RWSE`` / ``SignNet`` ...)."""
    return not config.graphormer.enable and (config.pe == "rwse" or (config.pe in _SE_PES and
                                                                      config.node_encoder == "linear"))


def _composed(config: ModelConfig) -> bool:
    """``Base+PE`` (``encoder1`` the base, ``encoder2`` the PE) or ``Base+GraphormerBias[+PE]``."""
    return config.graphormer.enable or config.pe in ("eslappe", "lappe") or \
        (config.pe in _SE_PES and config.node_encoder != "linear")


def _graphormer(degrees_only: bool) -> _Condition:
    return lambda config: config.graphormer.enable and config.graphormer.degrees_only == degrees_only


def _graphgym_head(final_index: Optional[int] = None) -> _Condition:
    def holds(config: ModelConfig) -> bool:
        if config.head in ("mlp_graph", "san_graph"):
            return False
        return final_index is None or final_index == (1 if config.head_layers > 1 else 0)

    return holds


def _graph_token(degrees_only: bool) -> _Condition:
    return lambda config: _graphormer(degrees_only)(config) and config.graphormer.graph_token


#: The reference's Graphormer bias encoder (``encoder2.0`` of ``Base+GraphormerBias``, not degrees-only).
_BIAS_ENCODER = "encoder.node_encoder.encoder2.0.spatial_encoder."

NAME_RULES: List[NameRule] = [
    # a second encoding (model.se: Base+LapPE+RWSE): the third encoder of the chain when there is no Graphormer
    NameRule("encoder.node_encoder.encoder3.", "se_encoder.", lambda c: c.se != "none",
             state_lacks="encoder.node_encoder.encoder2.0."),
    # Graphormer's graph token: the bias row/column in the bias encoder, the node in the degree encoder
    NameRule("encoder.node_encoder.encoder2.0.graph_token", "graph_token.bias_token", _graph_token(False),
             state_has=_BIAS_ENCODER),
    NameRule("encoder.node_encoder.encoder2.1.graph_token", "graph_token.node_token", _graph_token(False)),
    NameRule("encoder.node_encoder.encoder2.0.graph_token", "graph_token.node_token", _graph_token(True)),
    # one node encoder that expands x beside its PE (node_encoder_name: RWSE, SignNet, HKdiagSE, ElstaticSE;
    # LapPE too, read here, written composed)
    NameRule("encoder.node_encoder.linear_x.", "node_encoder.encoder.", _alone),
    NameRule("encoder.node_encoder.{pe}.", "pe_encoder.{pe}.", _alone),
    NameRule("encoder.node_encoder.sign_inv_net.", "pe_encoder.", lambda c: _alone(c) and c.pe == "signnet"),
    # Graphormer's encoder (Base+GraphormerBias[+PE]): a Sequential of the bias and the degree encoder
    NameRule("encoder.node_encoder.encoder2.0.spatial_encoder.", "bias_encoder.spatial_encoder.", _graphormer(False)),
    NameRule("encoder.node_encoder.encoder2.0.edge_encoder.", "bias_encoder.edge_encoder.",
             lambda c: _graphormer(False)(c) and c.graphormer.num_edge_types > 0),
    NameRule("encoder.node_encoder.encoder2.0.edge_dis_encoder.", "bias_encoder.edge_dis_encoder.",
             lambda c: _graphormer(False)(c) and c.graphormer.num_edge_types > 0),
    NameRule("encoder.node_encoder.encoder2.1.{deg}.", "degree_encoder.{deg}.", _graphormer(False)),
    NameRule("encoder.node_encoder.encoder2.0.{deg}.", "degree_encoder.{deg}.", _graphormer(True)),
    NameRule("encoder.node_encoder.encoder3.", "pe_encoder.", lambda c: c.graphormer.enable and c.pe != "none"),
    # composed encoders (LinearNode+EquivStableLapPE, Atom+LapPE, TypeDictNode+SignNet)
    NameRule("encoder.node_encoder.encoder1.", "node_encoder.", _composed),
    NameRule("encoder.node_encoder.encoder2.", "pe_encoder.", lambda c: _composed(c) and not c.graphormer.enable),
    NameRule("pe_encoder.sign_inv_net.", "pe_encoder.", lambda c: c.pe == "signnet" and not _alone(c)),
    NameRule("encoder.node_encoder.", "node_encoder.",
             lambda c: c.pe == "none" and not c.graphormer.enable),  # one node encoder, no PE (VOCNode, ...)
    NameRule("encoder.edge_encoder.", "edge_encoder."),
    # graphgym's GNNPreMP (dataset.node_encoder False, gnn.layers_pre_mp 1): Linear without bias, BatchNorm
    NameRule("pre_mp.Layer_0.layer.model.", "node_encoder.linear.", lambda c: c.node_encoder == "premp"),
    NameRule("pre_mp.Layer_0.post_layer.0.", "node_encoder.norm.", lambda c: c.node_encoder == "premp"),
    NameRule("layers.{i}.{norm}.", "layers.{i}.{norm}.norm.", unless_followed_by="norm."),
    # graphgym's MLP heads: hidden blocks in a GeneralMultiLayer, then the last Linear (index 0 if it is alone)
    NameRule("post_mp.layer_post_mp.model.0.Layer_{i}.layer.model.", "head.layer_post_mp.hidden.{i}.",
             _graphgym_head()),
    NameRule("post_mp.layer_post_mp.model.1.model.", "head.layer_post_mp.final.", _graphgym_head(1)),
    NameRule("post_mp.layer_post_mp.model.0.model.", "head.layer_post_mp.final.", _graphgym_head(0)),
    NameRule("post_mp.mlp.", "head.layer_post_mp.", lambda config: config.head == "mlp_graph"),
    NameRule("post_mp.FC_layers.", "head.layer_post_mp.FC_layers.", lambda config: config.head == "san_graph"),
    # applied after the rules above: OGB's AtomEncoder / BondEncoder
    NameRule("node_encoder.atom_embedding_list.", "node_encoder.embeddings.",
             lambda config: config.node_encoder == "embedding"),
    NameRule("edge_encoder.bond_embedding_list.", "edge_encoder.embeddings.",
             lambda config: config.edge_encoder == "embedding"),
]


#: Graphormer's edge-path tables: the reference's bias encoder always builds them, and reads them only for
#: graphs with edge types. With an empty edge-type table (``dataset.edge_encoder_num_types`` 0, graphs
#: without edge features) import drops both; export writes them as zeros for a model without path encoding.
PATH_TABLES = re.compile(r"^encoder\.node_encoder\.encoder2\.0\.(edge_dis_encoder|edge_encoder)\.weight$")
_EDGE_TYPE_TABLE = "encoder.node_encoder.encoder2.0.edge_encoder.weight"
#: PyG's GIN/GINE keep their fixed eps (0: ``x_i + sum_j``, what our GIN/GINE compute) as a buffer. Import
#: drops it when it is 0 (another value stays and is refused as an extra tensor); export writes 0.
FIXED_EPS = re.compile(r"^layers\.\d+\.local_model\.eps$")


def reference_to_ours(ref_state: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
    """Rename the reference's state-dict keys to ours (same tensors, same layout); our own keys pass unchanged.

    Graphormer's unread path tables (:data:`PATH_TABLES`) and PyG's zero GIN eps are left out.
    """
    out = {}
    rules = [rule for rule in NAME_RULES if rule.reads(ref_state.keys())]
    table = ref_state.get(_EDGE_TYPE_TABLE, torch.ones(1))  # a gradient table is None where never read
    unread_paths = table is None or table.numel() == 0
    for key, value in ref_state.items():
        if (unread_paths and PATH_TABLES.match(key)) or \
                (FIXED_EPS.match(key) and value is not None and not torch.count_nonzero(value)):
            continue
        for rule in rules:  # each rule in turn, on the result of the ones before
            key = rule.forward(key)
        out[key] = value
    return out


def ours_to_reference(state: Dict[str, torch.Tensor], config: ModelConfig) -> Dict[str, torch.Tensor]:
    """Rename our state-dict keys to the reference's, for a model built from ``config``.

    The inverse of :func:`reference_to_ours` on the names of that model:
    ``reference_to_ours(ours_to_reference(s, config)) == s``.
    """
    rules = [rule for rule in reversed(NAME_RULES) if rule.when(config)]
    out = {}
    for key, value in state.items():
        for rule in rules:
            key = rule.backward(key)
        out[key] = value
    if config.mpnn in ("gin", "gine"):
        for i in range(config.num_layers):
            out[f"layers.{i}.local_model.eps"] = torch.zeros(1)
    graphormer = config.graphormer
    if graphormer.enable and not graphormer.degrees_only and not graphormer.num_edge_types:  # unread tables
        heads, prefix = config.num_heads, "encoder.node_encoder.encoder2.0."
        out[prefix + "edge_dis_encoder.weight"] = torch.zeros(graphormer.spatial_types * heads * heads, 1)
        out[prefix + "edge_encoder.weight"] = torch.zeros(0, heads)
    return out
