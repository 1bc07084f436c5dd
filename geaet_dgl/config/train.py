"""Optimisation settings: :class:`TrainConfig` (AdamW, schedule, clipping, early stopping)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from .validation import validate_train


@dataclass
class TrainConfig:
    """Optimisation: AdamW, cosine schedule with linear warm-up, clipping; optional early stopping."""

    batch_size: int = 16
    lr: float = 1e-3
    weight_decay: float = 1e-5
    epochs: int = 150
    warmup_epochs: int = 5
    clip_grad_norm: Optional[float] = 1.0
    loss: str = "cross_entropy"
    metric: str = "accuracy"
    seed: int = 0
    #: The best epoch is chosen among epochs 1, k, 2k, ... and the last (graphgym's ``train.eval_period``);
    #: every epoch is still scored and logged.
    eval_every: int = 1
    #: Learning-rate decay after the warm-up: ``cosine``, ``linear`` (GraphGPS's ``linear_with_warmup``) or
    #: ``constant`` (none, graphgym's ``none``).
    schedule: str = "cosine"
    #: Batches whose gradients are summed before one optimiser step (graphgym's ``optim.batch_accumulation``).
    accumulate: int = 1
    #: Early stopping: end the run after this many epochs without validation improvement (0: off).
    patience: int = 0
    #: ``adamw`` (decoupled weight decay, graphgym's ``adamW``) or ``adam`` (coupled L2, graphgym's ``adam``,
    #: as GCN and GAT train on citation graphs).
    optimizer: str = "adamw"
    #: A checkpoint of ours (``best.pt``) whose model weights start the run; empty: a fresh initialisation.
    #: ``train --config`` on a GraphGPS file with ``pretrained.dir`` imports the folder's checkpoint to
    #: ``OUT-pretrained/best.pt`` and sets it.
    pretrained: str = ""
    #: Train the prediction head only, the rest stays as it starts (GraphGPS's ``pretrained.freeze_main``).
    freeze_main: bool = False

    def validate(self) -> "TrainConfig":
        """Check every setting (:func:`~.validation.validate_train`); return ``self``."""
        return validate_train(self)
