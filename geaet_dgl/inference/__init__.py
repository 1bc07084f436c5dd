"""Inference path: the trained model with its eval-mode BatchNorms folded into linear maps.

:func:`fold_for_inference` turns a :class:`~geaet_dgl.models.geaet.GEAET` into a
:class:`~.model.FoldedGEAET` that computes what the model computes in eval mode (up to float
rounding) with fewer kernels: no dropout, no BatchNorm passes, activations and residuals in
place, weights pre-concatenated. The training code is untouched; modules the folding does
not know run their own eval forward. :mod:`.layerwise` runs one graph too large for a single
pass layer by layer.

This package depends only on :mod:`geaet_dgl.nn` and :mod:`geaet_dgl.models`. Evaluation inside
training is :mod:`geaet_dgl.training.evaluation`; scoring a trained run (``eval``, ``predict``)
is :mod:`geaet_dgl.scoring`.
"""
from .geaet import FoldedGEAET, fold_for_inference

__all__ = ["FoldedGEAET", "fold_for_inference"]
