"""Training: metrics, losses, schedule, checkpoints and the one resumable training loop.

The loop is :mod:`.trainer` (``Trainer``, ``train`` / ``resume``), what its process does around it
:mod:`.run_process` (seeding, stop signals, the log file); what a kind of data does inside it is a
:class:`~.task.Task` (:mod:`.graph_task`, :mod:`.node_task`; partitioned graphs in
:mod:`geaet_dgl.distgraph.trainer`). :mod:`.new_run` resolves a new run's configuration
(:func:`make_run_config`) and :mod:`.environment` checks what it asks of the machine. :mod:`.evaluation`
scores the splits every epoch. :mod:`.launcher` runs it in one process,
``--nproc N`` local processes or a torchrun job; :mod:`.distributed` holds the process-group
helpers the trainer uses. Imports run one way: launcher -> trainer -> distributed.
"""
from .checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from .losses import LOSSES, get_loss
from .metrics import METRICS, MetricAccumulator, get_metric
from .new_run import DEFAULT_PRESETS, NODE_GRAPH_PRESET, default_preset, make_run_config, run_preset_name
from .run_dir import RunDirError, default_run_dir
from .schedule import build_optimizer, build_scheduler, clip_gradients, cosine_with_warmup_factor
from .task import Step, Task
from .run_process import TrainingInterrupted, make_task
from .trainer import NonFiniteLossError, Trainer, resume, train

__all__ = [
    "CheckpointError", "load_checkpoint", "save_checkpoint", "LOSSES",
    "get_loss", "METRICS", "MetricAccumulator", "get_metric", "RunDirError", "default_run_dir", "build_optimizer", "build_scheduler",
    "clip_gradients", "cosine_with_warmup_factor", "NonFiniteLossError", "Trainer", "TrainingInterrupted",
    "resume", "train", "Task", "Step", "make_task",
    "DEFAULT_PRESETS", "NODE_GRAPH_PRESET", "default_preset", "make_run_config", "run_preset_name",
]
