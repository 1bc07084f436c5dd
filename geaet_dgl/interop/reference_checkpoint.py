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
import re
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
from .reference_config import reference_run_config
from .reference_names import ours_to_reference, reference_to_ours

MODEL_STATE = "model_state"  # graphgym.checkpoint.MODEL_STATE
NETWORK_PREFIX = "model."  # GraphGymModule.model
IMPORT_NOTE = "imported.json"


def read_reference_checkpoint(path: "os.PathLike | str") -> Dict[str, torch.Tensor]:
    """The network's state dict from a graphgym checkpoint (``model.`` prefix removed)."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise CheckpointError(f"reference checkpoint {path} does not exist")
    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # damaged zip/pickle, or objects beyond tensors and containers
        first = (str(exc).strip().splitlines() or ["no detail"])[0]
        raise CheckpointError(f"reference checkpoint {path} cannot be read ({type(exc).__name__}: {first[:200]})"
                              ) from exc
    if not isinstance(ckpt, Mapping) or not isinstance(ckpt.get(MODEL_STATE), Mapping):
        raise CheckpointError(f"{path} is not a graphgym checkpoint (no '{MODEL_STATE}' dict); pass a "
                              "<run>/ckpt/<epoch>.ckpt written by the reference's main.py")
    state = dict(ckpt[MODEL_STATE])
    if state and all(key.startswith(NETWORK_PREFIX) for key in state):
        state = {key[len(NETWORK_PREFIX):]: value for key, value in state.items()}
    return state


def check_weights_fit(model: torch.nn.Module, weights: Mapping[str, torch.Tensor], where: str,
                      reference_names: Optional[Mapping[str, str]] = None) -> None:
    """Raise :class:`CheckpointError` naming the first tensor that is missing, extra or of another shape.

    ``reference_names`` maps our names to the reference's, to name both.
    """
    names = dict(reference_names or {})

    def called(key: str) -> str:
        theirs = names.get(key)
        return f"{theirs!r} (ours {key!r})" if theirs and theirs != key else repr(key)

    own = model.state_dict()
    for key, tensor in own.items():
        if key not in weights:
            raise CheckpointError(f"{where} lacks parameter {called(key)} that the configured model has; "
                                  "pass the config the checkpoint was trained with")
        if tuple(weights[key].shape) != tuple(tensor.shape):
            raise CheckpointError(
                f"{where}: parameter {called(key)} has shape {tuple(weights[key].shape)}, the configured model "
                f"needs {tuple(tensor.shape)}; pass the config the checkpoint was trained with")
    extra = [key for key in weights if key not in own]
    if extra:
        raise CheckpointError(f"{where} has parameter {called(extra[0])} that the configured model lacks"
                              f"{f' ({len(extra)} such)' if len(extra) > 1 else ''}; pass the config the "
                              "checkpoint was trained with")


#: Constant buffers of the reference's VOC/COCO encoders (``VOCNode``/``COCONode``/``...Edge``: their input
#: normalisation). Our LRGB loader normalises the features with the same statistics, so our model has no such
#: tensors: import checks and drops them, export adds them back.
_INPUT_STATISTICS = re.compile(r"^encoder\.(node|edge)_encoder\.(node|edge)_x_(mean|std)$")


def _superpixel_tasks() -> Dict[str, Any]:
    """The LRGB superpixel tasks' input statistics, wherever the data package keeps its LRGB module."""
    import importlib
    import pkgutil

    from .. import data

    for info in pkgutil.walk_packages(data.__path__, data.__name__ + "."):
        if "lrgb" in info.name:
            tasks = getattr(importlib.import_module(info.name), "SUPERPIXEL_TASKS", None)
            if tasks is not None:
                return tasks
    raise CheckpointError("cannot find the LRGB superpixel statistics in geaet_dgl.data")


def _input_statistics(dataset: str) -> Dict[str, torch.Tensor]:
    """The reference encoders' normalisation buffers for ``dataset`` (empty for datasets without them)."""
    if dataset not in ("voc", "coco"):
        return {}
    task = _superpixel_tasks()[dataset]
    return {f"encoder.node_encoder.node_x_{k}": torch.tensor(getattr(task, f"node_{k}")) for k in ("mean", "std")} | \
        {f"encoder.edge_encoder.edge_x_{k}": torch.tensor(getattr(task, f"edge_{k}")) for k in ("mean", "std")}


def _drop_input_statistics(state: Dict[str, torch.Tensor], dataset: str, where: str) -> Dict[str, torch.Tensor]:
    """``state`` without the reference's input-normalisation buffers, after checking they are our loader's."""
    ours = _input_statistics(dataset)
    for key in [k for k in state if _INPUT_STATISTICS.match(k)]:
        value = state.pop(key)
        if key not in ours or value.shape != ours[key].shape or not torch.allclose(value.float(), ours[key]):
            raise CheckpointError(f"{where}: buffer {key!r} normalises the inputs with statistics geaet-dgl's "
                                  f"{dataset} loader does not use; pass the config the checkpoint was trained with")
    return state


def _epoch_of(path: "os.PathLike | str") -> Optional[int]:
    match = re.fullmatch(r"(\d+)\.ckpt", os.path.basename(os.fspath(path)))
    return int(match.group(1)) if match else None


def pretrained_checkpoint(folder: "os.PathLike | str", seed: int = 0) -> Path:
    """The checkpoint GraphGPS's ``init_model_from_pretrained`` loads from a ``pretrained.dir`` folder: the
    highest ``<epoch>.ckpt`` in ``folder/<seed>/ckpt/`` (its layout), else in ``folder/ckpt/`` (a graphgym run
    folder)."""
    for ckpt_dir in (Path(folder) / str(seed) / "ckpt", Path(folder) / "ckpt"):
        found = [(_epoch_of(path), path) for path in ckpt_dir.glob("*.ckpt")] if ckpt_dir.is_dir() else []
        found = [(epoch, path) for epoch, path in found if epoch is not None]
        if found:
            return max(found)[1]
    raise CheckpointError(f"pretrained.dir {os.fspath(folder)} holds no <epoch>.ckpt in {seed}/ckpt/ or ckpt/; "
                          "put the pretrained run's checkpoint there (GraphGPS: <dir>/<seed>/ckpt/<epoch>.ckpt)")


def _pretrained_settings(config: "os.PathLike | str") -> Dict[str, Any]:
    """The file's ``pretrained.*`` settings, with GraphGPS's defaults (reset_prediction_head True)."""
    import yaml

    with open(config) as handle:
        section = (yaml.safe_load(handle) or {}).get("pretrained") or {}
    return {"reset_prediction_head": bool(section.get("reset_prediction_head", True)),
            "freeze_main": bool(section.get("freeze_main", False))}


def import_reference(checkpoint: "Optional[os.PathLike | str]", config: "os.PathLike | str",
                     out: "os.PathLike | str", data: Optional[Mapping[str, Any]] = None,
                     overwrite: bool = False, overrides: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """Turn the reference's ``ckpt/<epoch>.ckpt`` trained with ``config`` into our run directory ``out``.

    ``checkpoint`` None: ``config`` names a ``pretrained.dir`` (GraphGPS's pretrained folder, whose
    ``config.yaml`` model settings :func:`~.reference_config.read_reference_config` merges in), and its
    checkpoint is the one GraphGPS loads (:func:`pretrained_checkpoint`, with the file's seed); with
    ``pretrained.reset_prediction_head`` (GraphGPS's default) the head keeps a fresh initialisation
    (seeded with the file's seed) instead of the checkpoint's.
    ``data`` gives :class:`~geaet_dgl.training.DataOptions` fields (``data_dir``,
    ``limit_*``) that ``geaet-dgl eval`` on the new run will use by default; ``overrides``: ``--set``-style
    settings of the run (``data.*`` among them).
    Returns ``{"run_dir", "checkpoint", "epoch", "params", "reset_head"}``.
    """
    from .reference_config import read_reference_config

    run = reference_run_config(config, overrides, data=data)
    pretrained = read_reference_config(config).pretrained
    reset_head = False
    if checkpoint is None:
        if pretrained is None:
            raise CheckpointError(f"{os.fspath(config)} names no pretrained.dir: pass the reference's checkpoint "
                                  "(--checkpoint <run>/ckpt/<epoch>.ckpt)")
        checkpoint = pretrained_checkpoint(pretrained, run.train.seed)
        reset_head = _pretrained_settings(config)["reset_prediction_head"]
    state = _drop_input_statistics(read_reference_checkpoint(checkpoint), run.data.dataset,
                                   f"reference checkpoint {os.fspath(checkpoint)}")
    torch.manual_seed(run.train.seed)
    model = build_model(run.model)
    weights = reference_to_ours(state)
    ours_to_theirs = {ours: theirs for theirs, ours in zip(state, weights)}
    if reset_head:  # GraphGPS leaves out the checkpoint's post_mp: the fresh head stays
        weights.update({name: value for name, value in model.state_dict().items() if name.startswith("head.")})
    check_weights_fit(model, weights, f"reference checkpoint {os.fspath(checkpoint)}", ours_to_theirs)
    model.load_state_dict(weights)
    run_dir = prepare_new_run_dir(out, overwrite)
    write_config(run_dir, run.to_dict())
    optimizer = build_optimizer(model.parameters(), run.train.lr, run.train.weight_decay, run.train.clip_grad_norm)
    scheduler = build_scheduler(optimizer, run.train.warmup_epochs, run.train.epochs)
    epoch = _epoch_of(checkpoint)  # graphgym's 0-based index of the epoch just finished
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
    theirs = {**ours_to_reference(dict(state["model"]), run.model), **_input_statistics(run.data.dataset)}
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(path) as handle:
        torch.save({MODEL_STATE: {NETWORK_PREFIX + key: value for key, value in theirs.items()}}, handle)
    return {"path": str(path), "epoch": epoch, "params": sum(p.numel() for p in model.parameters())}
