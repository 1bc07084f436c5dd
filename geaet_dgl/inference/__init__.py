"""Inference path: the trained model with its eval-mode BatchNorms folded into linear maps, and layer-wise passes.

:func:`fold_for_inference` turns a :class:`~geaet_dgl.models.geaet.GEAET` into a
:class:`~.geaet.FoldedGEAET` that computes what the model computes in eval mode (up to float
rounding) with fewer kernels: no dropout, no BatchNorm passes, activations and residuals in
place, weights pre-concatenated. Each layer's and encoder's eval-mode path is written beside the
layer, in :mod:`geaet_dgl.nn` and :mod:`geaet_dgl.models` (their ``folded()`` methods), from the same
pieces of math as its training forward; this package only assembles them. Modules without one run
their own eval forward. :mod:`.layerwise` runs one graph too large for a single pass layer by layer.

This package depends only on :mod:`geaet_dgl.nn` and :mod:`geaet_dgl.models`. Evaluation inside
training is :mod:`geaet_dgl.training.evaluation`; scoring a trained run (``eval``, ``predict``)
is :mod:`geaet_dgl.scoring`.
"""
from .geaet import FoldedGEAET, fold_for_inference

__all__ = ["FoldedGEAET", "fold_for_inference"]
