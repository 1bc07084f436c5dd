"""What a run asks of the machine it runs on: the CUDA device it names and the TensorBoard package.

A :class:`~geaet_dgl.config.RunConfig` validates its settings without torch (:mod:`geaet_dgl.config.validation`);
whether this machine can run it is checked here, where a run is resolved or loaded to run:
:func:`check_environment` raises one :class:`~geaet_dgl.errors.ConfigError` naming the fix.
"""
from __future__ import annotations

import torch

from ..config.run import RunConfig
from ..errors import ConfigError

#: How to install TensorBoard (``--tensorboard``).
INSTALL_HINT = "pip install tensorboard  (or: pip install 'geaet-dgl[tensorboard]')"


def require_tensorboard():
    """``torch.utils.tensorboard.SummaryWriter``, or a ConfigError naming the install command."""
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError as exc:
        raise ConfigError(f"--tensorboard needs the tensorboard package, which is not installed ({exc}); "
                          f"{INSTALL_HINT}, or train without --tensorboard") from exc
    return SummaryWriter


def check_environment(run: RunConfig) -> RunConfig:
    """Refuse ``run`` when this machine lacks what it asks for: ``device=cuda`` without a CUDA device,
    ``tensorboard`` without the package; return it."""
    if run.device == "cuda" and not torch.cuda.is_available():
        raise ConfigError("device=cuda but no CUDA device is available; use --device cpu")
    if run.tensorboard:
        require_tensorboard()
    return run
