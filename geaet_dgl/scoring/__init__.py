"""Scoring a trained run: open its checkpoint, re-score a split, predict new graphs.

It sits above :mod:`geaet_dgl.training` (run configuration, checkpoints, evaluation) and
:mod:`geaet_dgl.inference` (the folded eval-mode model, layer-wise full-graph passes):

- :func:`open_trained_run` (:mod:`.trained_run`): checkpoint -> run configuration -> model ->
  weights -> eval mode; every command that uses a trained model opens it so;
- :func:`evaluate_checkpoint` (:mod:`.evaluate`): what ``geaet-dgl eval`` runs;
- :func:`predict_file` (:mod:`.predict`): what ``geaet-dgl predict`` runs.
"""
from .evaluate import evaluate_checkpoint
from .predict import predict_file
from .trained_run import TrainedRun, open_trained_run

__all__ = ["TrainedRun", "open_trained_run", "evaluate_checkpoint", "predict_file"]
