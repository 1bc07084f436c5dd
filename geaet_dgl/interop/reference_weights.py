"""The reference's (graphgym's) checkpoint files read into our model's names: what ``import-reference`` and a
run that starts from GraphGPS's ``pretrained.dir`` share (a light module: torch, the name table, the data's
input statistics).

graphgym's ``save_ckpt`` writes ``{"model_state", "optimizer_state", "scheduler_state"}`` to
``<run>/ckpt/<epoch>.ckpt``; ``model_state`` is the state dict of ``GraphGymModule``, whose network sits under
``model.``. GraphGPS's pretrained folders hold ``config.yaml`` and ``<seed>/ckpt/<epoch>.ckpt``.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Dict, Mapping, Optional

import torch

from ..config import ModelConfig
from ..training.checkpoint import CheckpointError
from .reference_names import reference_to_ours

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


def input_statistics(dataset: str) -> Dict[str, torch.Tensor]:
    """The reference encoders' normalisation buffers for ``dataset`` (empty for datasets without them)."""
    if dataset not in ("voc", "coco"):
        return {}
    task = _superpixel_tasks()[dataset]
    return {f"encoder.node_encoder.node_x_{k}": torch.tensor(getattr(task, f"node_{k}")) for k in ("mean", "std")} | \
        {f"encoder.edge_encoder.edge_x_{k}": torch.tensor(getattr(task, f"edge_{k}")) for k in ("mean", "std")}


def _drop_input_statistics(state: Dict[str, torch.Tensor], dataset: str, where: str) -> Dict[str, torch.Tensor]:
    """``state`` without the reference's input-normalisation buffers, after checking they are our loader's."""
    ours = input_statistics(dataset)
    for key in [k for k in state if _INPUT_STATISTICS.match(k)]:
        value = state.pop(key)
        if key not in ours or value.shape != ours[key].shape or not torch.allclose(value.float(), ours[key]):
            raise CheckpointError(f"{where}: buffer {key!r} normalises the inputs with statistics geaet-dgl's "
                                  f"{dataset} loader does not use; pass the config the checkpoint was trained with")
    return state


def checkpoint_epoch(path: "os.PathLike | str") -> Optional[int]:
    match = re.fullmatch(r"(\d+)\.ckpt", os.path.basename(os.fspath(path)))
    return int(match.group(1)) if match else None


def pretrained_checkpoint(folder: "os.PathLike | str", seed: int = 0) -> Path:
    """The checkpoint GraphGPS's ``init_model_from_pretrained`` loads from a ``pretrained.dir`` folder: the
    highest ``<epoch>.ckpt`` in ``folder/<seed>/ckpt/`` (its layout), else in ``folder/ckpt/`` (a graphgym run
    folder)."""
    for ckpt_dir in (Path(folder) / str(seed) / "ckpt", Path(folder) / "ckpt"):
        found = [(checkpoint_epoch(path), path) for path in ckpt_dir.glob("*.ckpt")] if ckpt_dir.is_dir() else []
        found = [(epoch, path) for epoch, path in found if epoch is not None]
        if found:
            return max(found)[1]
    raise CheckpointError(f"pretrained.dir {os.fspath(folder)} holds no <epoch>.ckpt in {seed}/ckpt/ or ckpt/; "
                          "put the pretrained run's checkpoint there (GraphGPS: <dir>/<seed>/ckpt/<epoch>.ckpt)")


def pretrained_settings(config: "os.PathLike | str") -> Dict[str, Any]:
    """The file's ``pretrained.*`` settings, with GraphGPS's defaults (reset_prediction_head True)."""
    import yaml

    with open(config) as handle:
        section = (yaml.safe_load(handle) or {}).get("pretrained") or {}
    return {"reset_prediction_head": bool(section.get("reset_prediction_head", True)),
            "freeze_main": bool(section.get("freeze_main", False))}




def pretrained_weights(config: ModelConfig, checkpoint: "os.PathLike | str", dataset: str, reset_head: bool = False,
                       seed: int = 0) -> Dict[str, torch.Tensor]:
    """Our state dict for a model of ``config`` from the reference's ``checkpoint``, each tensor checked to fit;
    ``reset_head``: the prediction head (``head.*``) is a fresh initialisation seeded with ``seed`` instead of
    the checkpoint's (GraphGPS's ``pretrained.reset_prediction_head``)."""
    from ..models import build_model

    where = f"reference checkpoint {os.fspath(checkpoint)}"
    state = _drop_input_statistics(read_reference_checkpoint(checkpoint), dataset, where)
    torch.manual_seed(seed)
    model = build_model(config)
    weights = reference_to_ours(state)
    ours_to_theirs = {ours: theirs for theirs, ours in zip(state, weights)}
    if reset_head:  # GraphGPS leaves out the checkpoint's post_mp: the fresh head stays
        weights.update({name: value for name, value in model.state_dict().items() if name.startswith("head.")})
    check_weights_fit(model, weights, where, ours_to_theirs)
    return weights
