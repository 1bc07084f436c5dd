"""The whole GEAET model for inference, and :func:`fold_for_inference`."""
from __future__ import annotations

import dgl
import torch
import torch.nn.functional as F
from torch import nn

from ..models.geaet import GEAET
from ..models.encoders import LinearEncoder
from ..models.positional import EquivStableLapPEEncoder, RWSEEncoder
from ..nn.batch_layout import BatchLayout
from ..nn.gated_gcn import pe_square_distance
from ..nn.norm import batchnorm_affine, scale_columns


class FoldedRWSEEncoder(nn.Module):
    """RWSE encoder with its input BatchNorm folded into the linear map: (N, k) -> (N, pe_dim)."""

    def __init__(self, encoder: RWSEEncoder):
        super().__init__()
        affine = batchnorm_affine(encoder.raw_norm) if encoder.raw_norm is not None else None
        linear = encoder.pe_encoder
        if encoder.raw_norm is None:
            self.weight, self.bias = linear.weight.detach(), linear.bias.detach()
        else:
            self.weight, self.bias = scale_columns(linear.weight, linear.bias, affine)

    @staticmethod
    def supports(encoder: nn.Module) -> bool:
        return (type(encoder) is RWSEEncoder and type(encoder.pe_encoder) is nn.Linear
                and (encoder.raw_norm is None or batchnorm_affine(encoder.raw_norm) is not None))

    def forward(self, rwse: torch.Tensor) -> torch.Tensor:
        return F.linear(rwse, self.weight, self.bias)


class FoldedScalarEncoder(nn.Module):
    """A :class:`~geaet_dgl.models.encoders.LinearEncoder` of one input feature as one ``addcmul``: (M, 1) -> (M, d).

    ``Linear(1, d)`` is ``b + x w``; computed by ``addmm`` it first copies the bias into every row.
    """

    def __init__(self, encoder: LinearEncoder):
        super().__init__()
        self.weight = encoder.encoder.weight.detach().reshape(-1)
        self.bias = encoder.encoder.bias.detach()

    @staticmethod
    def supports(encoder: nn.Module) -> bool:
        return type(encoder) is LinearEncoder and encoder.in_feats == 1 and encoder.encoder.bias is not None

    def forward(self, feat: torch.Tensor) -> torch.Tensor:
        return torch.addcmul(self.bias, feat.view(feat.shape[0], 1).float(), self.weight)


class FoldedGEAET(nn.Module):
    """A :class:`~geaet_dgl.models.geaet.GEAET` in eval mode with its BatchNorms folded: same call, same outputs.

    Built by :func:`fold_for_inference` from the model's weights at that moment: it copies what
    it folds and shares the rest (encoders, heads) with the model, so it must be rebuilt after the
    weights change. Its forward never records autograd history.
    """

    def __init__(self, model: GEAET):
        super().__init__()
        self.config = model.config
        self.node_encoder, self.edge_encoder = model.node_encoder, model.edge_encoder
        if FoldedScalarEncoder.supports(model.edge_encoder):
            self.edge_encoder = FoldedScalarEncoder(model.edge_encoder)
        self.pe_encoder = model.pe_encoder
        if FoldedRWSEEncoder.supports(model.pe_encoder):
            self.pe_encoder = FoldedRWSEEncoder(model.pe_encoder)
        self.degree_encoder, self.bias_encoder = model.degree_encoder, model.bias_encoder
        self.layers = nn.ModuleList(fold_layer(layer) for layer in model.layers)
        self.head = model.head
        self.input_dropout = self.feature_dropout = None  # dropout is the identity at inference
        self.jk = model.jk

    # The same encoding as the model's (its encoders are kept as they are); only pe_distance differs.
    encode = GEAET.encode
    attention_bias = GEAET.attention_bias
    dropped = GEAET.dropped
    readout = GEAET.readout

    def pe_distance(self, graph: dgl.DGLGraph, eigvecs: torch.Tensor, layout: BatchLayout) -> torch.Tensor:
        """(N, k) eigenvectors -> (E, 1) squared distances of the encoded PE, :math:`\\lVert W (v_j - v_i) \\rVert^2`.

        The encoder is affine, ``p = W v + b``, so ``p_j - p_i = W (v_j - v_i)``: the differences are
        taken on the k eigenvector channels and mapped once, instead of gathering (E, d) encodings.
        """
        if type(self.pe_encoder) is not EquivStableLapPEEncoder:
            return pe_square_distance(graph, self.pe_encoder(eigvecs))
        src, dst = layout.edge_endpoints(graph)
        eigvecs = torch.nan_to_num(eigvecs, nan=0.0)
        diff = eigvecs.index_select(0, src).sub_(eigvecs.index_select(0, dst))  # (E, k)
        return F.linear(diff, self.pe_encoder.linear_encoder_eigenvec.weight).square_().sum(-1, keepdim=True)

    # The model's own forward over the folded layers, without autograd: same outputs as model.eval().
    forward = torch.no_grad()(GEAET.forward)


def fold_layer(layer: nn.Module) -> nn.Module:
    """The layer's eval-mode copy (:meth:`GEAETLayer.folded <geaet_dgl.nn.geaet_layer.GEAETLayer.folded>`),
    or the layer itself in eval mode where it has none."""
    fold = getattr(layer, "folded", None)
    folded = fold() if fold is not None else None
    return folded if folded is not None else layer.eval()


def fold_for_inference(model: nn.Module) -> nn.Module:
    """An inference-only copy of ``model`` with its eval-mode BatchNorms folded into its linear maps.

    Puts ``model`` in eval mode (the parts the folding does not know run as they are) and returns a
    :class:`FoldedGEAET` computing the same outputs as ``model.eval()`` up to float rounding
    (max abs difference well under 1e-5), faster. Any other model (and a DistributedDataParallel
    wrapper's inner model that is not a GEAET) is returned as it is, in eval mode. Fold again after
    the weights change: the folded copy does not follow them.

    Example
    -------
    >>> from geaet_dgl.models import build_model
    >>> from geaet_dgl.presets import get_preset
    >>> model = build_model(get_preset('mnist').model)
    >>> folded = fold_for_inference(model)  # then folded(graph) == model.eval()(graph)
    """
    inner = model.module if isinstance(model, nn.parallel.DistributedDataParallel) else model
    inner.eval()
    if type(inner) is not GEAET:
        return inner
    return FoldedGEAET(inner)
