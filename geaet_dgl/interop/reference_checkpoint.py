"""Checkpoints between the reference (graphgym) and our run directories.

The reference's ``main.py`` saves, through graphgym's ``save_ckpt``, a
``torch.save`` dict ``{"model_state", "optimizer_state", "scheduler_state"}``
to ``<run>/ckpt/<epoch>.ckpt``; ``model_state`` is the state dict of
graphgym's ``GraphGymModule``, whose network sits under ``model.``.

- :func:`import_reference`: such a file plus the YAML it was trained with (or a YAML naming GraphGPS's
  ``pretrained.dir`` folder: ``config.yaml`` and ``<seed>/ckpt/<epoch>.ckpt``) ->
  our run directory (``config.json``/``config.yaml``, ``best.pt``,
  ``imported.json``), which ``geaet-dgl eval --checkpoint RUN/best.pt`` scores.
  ``best.pt`` carries the reference's weights (and BatchNorm statistics) only:
  a fresh optimizer, no history, and no ``last.pt`` (so nothing to
  ``--resume``).
- :func:`export_reference`: our ``best.pt``/``last.pt`` -> a file graphgym's
  ``load_ckpt`` reads into the reference model built from the matching YAML.

Names go through the one table of :mod:`.reference_names`; a tensor whose
shape does not fit is refused in one line naming it.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Dict, Mapping, Optional

import torch

from ..atomic import atomic_write
from ..config import ModelConfig
from ..scoring import open_trained_run
from ..models import build_model
from ..training.checkpoint import CheckpointError, save_checkpoint
from ..training.run_dir import BEST, prepare_new_run_dir, write_config, write_json
from ..training.schedule import build_optimizer, build_scheduler
from .reference_yaml import reference_run_config
from .reference_names import ours_to_reference
from .reference_weights import (IMPORT_NOTE, MODEL_STATE, NETWORK_PREFIX, checkpoint_epoch, input_statistics,
                                pretrained_settings, pretrained_checkpoint, pretrained_weights)
# re-exported: the checkpoint API in one place
from .reference_weights import check_weights_fit, read_reference_checkpoint  # noqa: F401

def import_reference(checkpoint: "Optional[os.PathLike | str]", config: "os.PathLike | str",
                     out: "os.PathLike | str", data: Optional[Mapping[str, Any]] = None,
                     overwrite: bool = False, overrides: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """Turn the reference's ``ckpt/<epoch>.ckpt`` trained with ``config`` into our run directory ``out``.

    ``checkpoint`` None: ``config`` names a ``pretrained.dir`` (GraphGPS's pretrained folder, whose
    ``config.yaml`` model settings :func:`~geaet_dgl.interop.reference_yaml.read_reference_config` merges in), and its
    checkpoint is the one GraphGPS loads (:func:`pretrained_checkpoint`, with the file's seed); with
    ``pretrained.reset_prediction_head`` (GraphGPS's default) the head keeps a fresh initialisation
    (seeded with the file's seed) instead of the checkpoint's.
    ``data`` gives :class:`~geaet_dgl.config.DataOptions` fields (``data_dir``,
    ``limit_*``) that ``geaet-dgl eval`` on the new run will use by default; ``overrides``: ``--set``-style
    settings of the run (``data.*`` among them).
    Returns ``{"run_dir", "checkpoint", "epoch", "params", "reset_head"}``.
    """
    from .reference_yaml import read_reference_config

    run = reference_run_config(config, overrides, data=data)
    pretrained = read_reference_config(config).pretrained
    reset_head = False
    if checkpoint is None:
        if pretrained is None:
            raise CheckpointError(f"{os.fspath(config)} names no pretrained.dir: pass the reference's checkpoint "
                                  "(--checkpoint <run>/ckpt/<epoch>.ckpt)")
        checkpoint = pretrained_checkpoint(pretrained, run.train.seed)
        reset_head = pretrained_settings(config)["reset_prediction_head"]
    model = build_model(run.model)
    weights = pretrained_weights(run.model, checkpoint, run.data.dataset, reset_head, run.train.seed)
    model.load_state_dict(weights)
    run_dir = prepare_new_run_dir(out, overwrite)
    write_config(run_dir, run.to_dict())
    optimizer = build_optimizer(model.parameters(), run.train.lr, run.train.weight_decay, run.train.clip_grad_norm)
    scheduler = build_scheduler(optimizer, run.train.warmup_epochs, run.train.epochs)
    epoch = checkpoint_epoch(checkpoint)  # graphgym's 0-based index of the epoch just finished
    save_checkpoint(run_dir / BEST, run_config=run.to_dict(), model=model, optimizer=optimizer, scheduler=scheduler,
                    epoch=epoch + 1 if epoch is not None else 0, step=0, global_step=0, best=None, history=[],
                    progress=None)  # ours counts finished epochs: <N>.ckpt has N + 1
    params = sum(p.numel() for p in model.parameters())
    note = {"reference_checkpoint": os.path.abspath(checkpoint), "reference_config": os.path.abspath(config),
            "reference_epoch": epoch, "params": params}
    if pretrained is not None:
        note.update(pretrained_dir=pretrained, reset_prediction_head=reset_head)
    write_json(run_dir / IMPORT_NOTE, note)
    return {"run_dir": str(run_dir), "checkpoint": str(run_dir / BEST), "epoch": epoch, "params": params,
            "reset_head": reset_head}


def exportable(config: ModelConfig) -> None:
    """Raise :class:`CheckpointError` if the reference cannot build a network computing what ``config`` does."""
    geanet = config.geanet
    problems = []
    if config.external and geanet.variant != "reference":
        problems.append(f"model.geanet.variant={geanet.variant!r} (the reference codes only its own GEANet)")
    if config.external and geanet.scope != "batch":
        problems.append(f"model.geanet.scope={geanet.scope!r} (the reference normalises over the mini-batch)")
    if config.external and not geanet.node_unit:
        problems.append("model.geanet.node_unit=false (the reference always has the node unit)")
    if config.external and geanet.shared_unit and not geanet.edge_unit:
        problems.append("model.geanet.shared_unit without edge_unit (the reference builds share_U only with it)")
    if config.attention == "performer" and not config.performer_pad_keys:
        problems.append("model.performer_pad_keys=false (the reference's Performer counts the padding keys of its "
                        "dense batch)")
    if config.pe == "eslappe" and config.mpnn in ("gat", "pna", "genconv"):
        problems.append(f"model.pe=eslappe with mpnn={config.mpnn} (the reference passes the PE to GAT, PNA and "
                        "GENConv as a fourth argument, which they refuse)")
    if problems:
        raise CheckpointError(f"cannot export to the reference: {'; '.join(problems)}")


def export_reference(checkpoint: "os.PathLike | str", out: Optional["os.PathLike | str"] = None) -> Dict[str, Any]:
    """Write our ``best.pt``/``last.pt`` as a graphgym checkpoint (``{"model_state": ...}``).

    ``out`` defaults to ``<run>/reference/ckpt/<epoch>.ckpt`` (the layout the
    reference's ``load_ckpt`` reads, ``epoch`` the checkpoint's last finished
    epoch). Returns ``{"path", "epoch", "params"}``.
    """
    run, model, state = open_trained_run(checkpoint)
    exportable(run.model)
    epoch = max(int(state["epoch"]) - 1, 0) if state.get("step", 0) == 0 else int(state["epoch"])
    path = Path(out) if out is not None else Path(checkpoint).resolve().parent / "reference" / "ckpt" / f"{epoch}.ckpt"
    theirs = {**ours_to_reference(dict(state["model"]), run.model), **input_statistics(run.data.dataset)}
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(path) as handle:
        torch.save({MODEL_STATE: {NETWORK_PREFIX + key: value for key, value in theirs.items()}}, handle)
    return {"path": str(path), "epoch": epoch, "params": sum(p.numel() for p in model.parameters())}
