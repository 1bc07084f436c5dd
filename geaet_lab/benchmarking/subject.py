"""The model a benchmark times, resolved once: a preset's (``--preset``) or a reference YAML's (``--config``).

:class:`Subject` is made once at the entry (:func:`.api.run_benchmark` from a :class:`~.jobs.ModelJob`) and
passed down to every measurement, which reads its configuration, batches and loss from it instead of
checking the preset again or reading the YAML again. A measurement in a fresh process
(:mod:`.worker`) gets the minimal strings (:meth:`Subject.worker_kwargs`: the preset name or the file path)
and rebuilds the subject once there (:func:`resolve_subject`).
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple, Union

import dgl
import torch

from geaet_dgl.config import ModelConfig, TrainConfig
from geaet_dgl.config.presets import get_preset
from .inputs import check_reference_preset, check_supported, loss_function, prebuilt_batches

__all__ = ["Subject", "as_subject", "resolve_subject"]


@dataclass(frozen=True)
class Subject:
    """What is benchmarked.

    name : what the report's ``preset`` says (the checked preset name, or the YAML's file name).
    model, train : the resolved model and training configuration (None for :meth:`named`: nothing measured).
    dataset : the dataset whose shape the synthetic graphs take.
    preset : the checked preset name (None for a YAML).
    config_file : the reference (GEAET or GraphGPS) YAML (None for a preset).
    """

    name: str
    model: Optional[ModelConfig]
    train: Optional[TrainConfig]
    dataset: str
    preset: Optional[str] = None
    config_file: Optional[str] = None
    #: the preset's name as given (the reference's error messages quote it)
    given: Optional[str] = field(default=None, compare=False, repr=False)
    #: the YAML read once (:class:`~.config_subject.ConfigSubject`); :meth:`file_subject` hands out fresh copies
    _file: object = field(default=None, compare=False, repr=False)

    @classmethod
    def from_preset(cls, preset: str) -> "Subject":
        """A preset with a synthetic generator; an unknown or unsupported name gets its one-line error."""
        key = check_supported(preset)
        resolved = get_preset(key)
        return cls(name=key, model=resolved.model, train=resolved.train, dataset=key, preset=key, given=preset)

    @classmethod
    def from_config_file(cls, path: "os.PathLike | str") -> "Subject":
        """A reference YAML (:func:`~.config_subject.config_subject`: its one-line errors)."""
        from .config_subject import config_subject

        read = config_subject(path)
        return cls(name=read.name, model=read.model, train=read.train, dataset=read.dataset,
                   config_file=os.fspath(path), _file=read)

    @classmethod
    def named(cls, preset: str) -> "Subject":
        """Only a name for the report, unchecked: the job measures nothing of a preset's model."""
        return cls(name=preset, model=None, train=None, dataset=preset)

    def file_subject(self):
        """The YAML's :class:`~.config_subject.ConfigSubject`, fresh (it records the reference's configuration
        once the reference's model is built), without reading the file again."""
        if self._file is None:
            raise ValueError(f"{self.name} is a preset, not a reference YAML")
        return dataclasses.replace(self._file, reference_cfg=None, reference_input_statistics=None)

    def loss(self) -> Callable:
        """The training loss as ``f(output, labels)`` (a preset's: :func:`.inputs.loss_function`)."""
        if self.config_file is not None:
            from geaet_dgl.training.losses import get_loss

            return get_loss(self.train.loss)
        return loss_function(self.preset)

    def batches(self, batch_size: int, num_batches: int, device: torch.device, seed: int = 0
                ) -> List[Tuple[dgl.DGLGraph, torch.Tensor]]:
        """``num_batches`` synthetic batches of ``batch_size`` graphs on ``device``, carrying the encodings the
        model reads (a one-graph node set: its whole graph each time)."""
        if self._file is not None:
            return [(g.to(device), y.to(device)) for g, y in self._file.batches(batch_size, num_batches, seed)]
        return prebuilt_batches(self.preset, batch_size, num_batches, device, seed=seed)

    def reference_preset(self) -> str:
        """The preset's name, after checking that the reference has a configuration of it."""
        return check_reference_preset(self.given or self.preset)

    def worker_kwargs(self) -> Dict[str, Optional[str]]:
        """What crosses into a measuring process (:func:`resolve_subject` rebuilds the subject there)."""
        return {"preset": self.preset if self.preset is not None else self.name,
                "config_file": self.config_file}


def resolve_subject(preset: str = "mnist", config_file: Optional["os.PathLike | str"] = None) -> Subject:
    """The subject of ``config_file`` when given, else of ``preset``."""
    if config_file is not None:
        return Subject.from_config_file(config_file)
    return Subject.from_preset(preset)


def as_subject(subject: Union[Subject, str], config_file: Optional["os.PathLike | str"] = None) -> Subject:
    """``subject`` itself, or the subject a preset name (or ``config_file``) stands for: the measurements take
    either, so callers outside :func:`.api.run_benchmark` may still name a preset."""
    if isinstance(subject, Subject):
        return subject
    return resolve_subject(subject, config_file)
