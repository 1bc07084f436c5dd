"""Inference path: the trained model with its eval-mode BatchNorms folded into linear maps.

:func:`fold_for_inference` turns a :class:`~geaet_dgl.models.geaet.GEAET` into a
:class:`~.model.FoldedGEAET` that computes what the model computes in eval mode (up to float
rounding) with fewer kernels: no dropout, no BatchNorm passes, activations and residuals in
place, weights pre-concatenated. The training code is untouched; modules the folding does
not know run their own eval forward.

Scoring a trained run lives here too: :func:`open_trained_run` (checkpoint -> run configuration
-> model -> weights -> eval mode, in :mod:`.trained_run`), :func:`evaluate` and
:func:`evaluate_checkpoint` (:mod:`.evaluation`, what ``geaet-dgl eval`` and every training epoch
run) and :func:`predict_file` (:mod:`.predict`, ``geaet-dgl predict``).
"""
from .evaluation import evaluate, evaluate_checkpoint
from .geaet import FoldedGEAET, fold_for_inference
from .predict import predict_file
from .trained_run import TrainedRun, open_trained_run

__all__ = ["FoldedGEAET", "fold_for_inference", "TrainedRun", "open_trained_run", "evaluate", "evaluate_checkpoint",
           "predict_file"]
