"""The whole GEAET model for inference, and :func:`fold_for_inference`."""
from __future__ import annotations

from typing import Optional

import dgl
import torch
from torch import nn

from ..models.encoder_stage import EncoderStage
from ..models.geaet import GEAET, GEAETNetwork
from ..models.positional import EquivStableLapPEEncoder
from ..nn.batch_layout import BatchLayout
from ..nn.gated_gcn import pe_square_distance


class FoldedEncoderStage(EncoderStage):
    """A model's :class:`~geaet_dgl.models.encoder_stage.EncoderStage` for inference: its edge, PE/SE encoders and
    graph token folded (or in eval mode), the other parts shared, no input dropout; only :meth:`pe_distance`
    is computed another way."""

    def __init__(self, stage: EncoderStage):
        kept = ("node_encoder", "degree_encoder", "bias_encoder")
        parts = {name: getattr(stage, name) if name in kept else folded_or_eval(getattr(stage, name))
                 for name in EncoderStage.PARTS if name != "input_dropout"}  # dropout is the identity at inference
        super().__init__(stage.config, parts)

    def pe_distance(self, graph: dgl.DGLGraph, eigvecs: torch.Tensor, layout: BatchLayout) -> torch.Tensor:
        """(N, k) eigenvectors -> (E, 1) squared distances of the encoded PE, :math:`\\lVert W (v_j - v_i) \\rVert^2`.

        The encoder is affine, ``p = W v + b``, so ``p_j - p_i = W (v_j - v_i)``: the differences are
        taken on the k eigenvector channels and mapped once, instead of gathering (E, d) encodings.
        """
        if type(self.pe_encoder) is not EquivStableLapPEEncoder:
            return pe_square_distance(graph, self.pe_encoder(eigvecs))
        return self.pe_encoder.edge_square_distance(eigvecs, *layout.edge_endpoints(graph))


class FoldedGEAET(GEAETNetwork):
    """A :class:`~geaet_dgl.models.geaet.GEAET` in eval mode with its BatchNorms folded: same call, same outputs.

    Built by :func:`fold_for_inference` from the model's weights at that moment: it copies what
    it folds and shares the rest (encoders, heads) with the model, so it must be rebuilt after the
    weights change. Its forward never records autograd history.
    """

    def __init__(self, model: GEAET):
        super().__init__()
        self.config = model.config
        self.mount_encoder(FoldedEncoderStage(model.encoder))
        self.layers = nn.ModuleList(folded_or_eval(layer) for layer in model.layers)
        self.head = model.head
        self.feature_dropout = None  # dropout is the identity at inference
        self.jk = model.jk
        self.input_gcn = folded_or_eval(model.input_gcn)

    @torch.no_grad()
    def forward(self, graph: dgl.DGLGraph, layout: Optional[BatchLayout] = None) -> torch.Tensor:
        """The model's forward over the folded parts, without autograd: the same outputs as ``model.eval()``."""
        return super().forward(graph, layout)


def folded_or_eval(module: Optional[nn.Module]) -> Optional[nn.Module]:
    """The module's eval-mode copy (its own ``folded()``, written beside it in :mod:`geaet_dgl.nn` or
    :mod:`geaet_dgl.models`), or the module itself in eval mode where it has none or declines."""
    if module is None:
        return None
    fold = getattr(module, "folded", None)
    folded = fold() if fold is not None else None
    return folded if folded is not None else module.eval()


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
    >>> from geaet_dgl.config.presets import get_preset
    >>> model = build_model(get_preset('mnist').model)
    >>> folded = fold_for_inference(model)  # then folded(graph) == model.eval()(graph)
    """
    inner = model.module if isinstance(model, nn.parallel.DistributedDataParallel) else model
    inner.eval()
    if type(inner) is not GEAET:
        return inner
    return FoldedGEAET(inner)
