"""Data-parallel training with ``torch.distributed`` and DistributedDataParallel.

One process per device (or per CPU share): every rank builds the same model
from the same seed, DistributedDataParallel averages the gradients, so the
weights stay identical on every rank after every step.

This module holds the process-group helpers the trainer uses; the
launcher (:mod:`.launcher`: ``train_job`` / ``resume_job``) sits above the
trainer and starts the processes, so the imports run one way:
``launcher -> trainer -> distributed``.

Launching
---------
- ``geaet-dgl train ... --nproc N``: :func:`start_processes` starts N local
  processes (``torch.multiprocessing``, rendezvous on a free port of 127.0.0.1).
- ``torchrun --nproc_per_node N cli.py train ...`` (and multi-node torchrun):
  :func:`init_from_env` reads ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``,
  ``MASTER_ADDR`` and ``MASTER_PORT``.

The backend is gloo on CPU and nccl on CUDA (rank ``r`` uses
``cuda:LOCAL_RANK``).

Data
----
``train.batch_size`` is the batch of *one* process: a step consumes a global
batch of ``world_size * batch_size`` graphs, cut from the epoch's
(seed, epoch) order exactly as a 1-process run with that global batch would
cut it, and rank ``r`` trains on the ``r``-th of ``world_size`` equal,
disjoint, contiguous slices of it (:class:`~.batching.ShardedEpochBatchSampler`;
the last global batch drops its ``len % world_size`` trailing graphs, so the
slices stay equal). The position inside an epoch counts global steps, so a
resumed run continues exactly where it stopped.

Validation and test split into the same ``batch_size`` batches as a
1-process run; rank ``r`` scores batches ``r, r + N, ...`` and the per-batch
predictions, targets and loss sums (the metrics' sufficient statistics) are
gathered and merged in batch order, so every rank reports exactly the number
a single process computes with the same weights.

Normalisation
-------------
With ``sync_bn`` (default for multi-process runs) every BatchNorm normalises
with the statistics of the whole global batch: ``torch.nn.SyncBatchNorm`` on
CUDA, :class:`DistributedBatchNorm` (differentiable all-reduce of the moments,
same state_dict) on CPU, where PyTorch's SyncBatchNorm refuses to run.
N processes with batch B then train like one process with batch N*B when
GEANet uses ``scope='graph'``. With ``scope='batch'`` the external-attention
softmax runs over the nodes of each rank's mini-batch, which is not the
combined batch, so the two differ.

Writing
-------
Only rank 0 writes checkpoints, metrics, curves, the summary and the log;
a checkpoint carries every rank's RNG state and unfinished-epoch accumulator
(key ``ranks``), so resuming needs the same number of processes.
"""
from __future__ import annotations

import contextlib
import datetime
import gc
import os
import socket
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.modules.batchnorm import _BatchNorm

from ..config import ConfigError

ENV_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")


@dataclass
class DistContext:
    """Where this process sits in the job; ``world_size == 1`` is a plain single-process run.

    All collective helpers are no-ops (identity) when ``world_size == 1``.
    """

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    backend: Optional[str] = None

    @property
    def enabled(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def device(self, kind: str) -> torch.device:
        """The device of this rank: ``cuda:LOCAL_RANK`` for CUDA runs, else ``kind``."""
        if kind == "cuda" and self.enabled:
            return torch.device("cuda", self.local_rank)
        return torch.device(kind)

    def barrier(self) -> None:
        if self.enabled:
            dist.barrier()

    def all_gather_object(self, obj: Any) -> List[Any]:
        """Every rank's ``obj``, in rank order (``[obj]`` for one process)."""
        if not self.enabled:
            return [obj]
        out: List[Any] = [None] * self.world_size
        dist.all_gather_object(out, obj)
        return out

    def broadcast_object(self, obj: Any, src: int = 0) -> Any:
        if not self.enabled:
            return obj
        box = [obj]
        dist.broadcast_object_list(box, src=src)
        return box[0]

    def sum_floats(self, values: List[float], device: torch.device) -> List[float]:
        """Element-wise sum over ranks of a few float64 numbers."""
        if not self.enabled:
            return list(values)
        tensor = torch.tensor(values, dtype=torch.float64, device=device)
        dist.all_reduce(tensor)
        return tensor.tolist()

    def max_floats(self, values: List[float], device: torch.device) -> List[float]:
        """Element-wise maximum over ranks of a few float64 numbers."""
        if not self.enabled:
            return list(values)
        tensor = torch.tensor(values, dtype=torch.float64, device=device)
        dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
        return tensor.tolist()

    def merge_accumulators(self, accumulator: Any) -> Any:
        """A :class:`~.metrics.MetricAccumulator` holding every rank's contents, in rank order."""
        if not self.enabled:
            return accumulator
        from .metrics import MetricAccumulator

        merged = MetricAccumulator(accumulator.spec.name)
        for state in self.all_gather_object(accumulator.state_dict()):
            merged.merge_state_dict(state)
        return merged

    def broadcast_buffers(self, module: nn.Module) -> None:
        """Copy rank 0's buffers (BatchNorm running statistics) to every rank."""
        if self.enabled:
            for buffer in module.buffers():
                dist.broadcast(buffer, 0)


SINGLE_PROCESS = DistContext()


def launched_by_torchrun() -> bool:
    """True when the torch.distributed environment variables are set (torchrun, or :func:`spawn`)."""
    return all(name in os.environ for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"))


def init_from_env(device: str = "cpu", timeout_s: float = 1800.0) -> DistContext:
    """Join the process group described by the environment; one process without it.

    Parameters
    ----------
    device : {'cpu', 'cuda'}
        gloo for cpu, nccl for cuda (and ``torch.cuda.set_device(LOCAL_RANK)``).
    """
    if not launched_by_torchrun():
        return SINGLE_PROCESS
    rank, world_size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    if world_size == 1:
        return SINGLE_PROCESS
    if dist.is_initialized():
        return DistContext(rank, world_size, local_rank, dist.get_backend())
    backend = "nccl" if device == "cuda" else "gloo"
    if device == "cuda":
        if local_rank >= torch.cuda.device_count():
            raise ConfigError(f"LOCAL_RANK={local_rank} but this machine has {torch.cuda.device_count()} "
                              "CUDA devices; start at most that many processes per node")
        torch.cuda.set_device(local_rank)
    dist.init_process_group(backend, init_method="env://", rank=rank, world_size=world_size,
                            timeout=datetime.timedelta(seconds=timeout_s))
    return DistContext(rank, world_size, local_rank, backend)


def teardown(context: DistContext) -> None:
    """Leave the process group (if this process joined one); every rank must call it.

    A barrier first: gloo's destructor joins its worker threads while holding
    the GIL, and a worker still releasing the tensors of the last collective
    needs the GIL (a deadlock). Waiting in the barrier lets them finish. For the
    same reason unreachable objects holding the group (a finished run's DDP
    model in a reference cycle) are collected before it: freed later, after the
    group is gone, their destructor can hang the process at exit.
    """
    if context.enabled and dist.is_initialized():
        gc.collect()  # unreachable DDP models (reference cycles) drop their hold on the group while it lives
        dist.barrier()
        dist.destroy_process_group()


@contextlib.contextmanager
def process_group(device: str = "cpu"):
    """``with process_group("cpu") as ctx:`` -- :func:`init_from_env`, then :func:`teardown`.

    If the body raises, the group is left as it is (peers may be waiting in
    a collective; the process is about to end and the launcher stops the rest).
    """
    context = init_from_env(device)
    yield context
    teardown(context)


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free on ``host`` a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def _spawned(local_rank: int, world_size: int, port: int, fn: Callable, args: tuple) -> None:
    os.environ.update({"RANK": str(local_rank), "LOCAL_RANK": str(local_rank), "WORLD_SIZE": str(world_size),
                       "LOCAL_WORLD_SIZE": str(world_size), "MASTER_ADDR": "127.0.0.1",
                       "MASTER_PORT": str(port)})
    fn(*args)


def spawn(fn: Callable, nproc: int, *args: Any) -> None:
    """Run ``fn(*args)`` in ``nproc`` fresh local processes that form one job.

    Each process finds its rank in the usual environment variables (see
    :func:`init_from_env`); rendezvous is on a free port of 127.0.0.1. ``fn``
    and ``args`` must be picklable. If a process fails, the others are stopped
    and ``torch.multiprocessing.ProcessRaisedException`` carries its traceback.
    """
    if nproc < 1:
        raise ConfigError(f"nproc={nproc} must be at least 1")
    torch.multiprocessing.spawn(_spawned, args=(nproc, free_port(), fn, args), nprocs=nproc, join=True)


def start_processes(fn: Callable, nproc: int, *args: Any) -> torch.multiprocessing.ProcessContext:
    """Start ``fn(*args)`` in ``nproc`` local processes forming one job, as :func:`spawn`, without waiting.

    Returns torch's ``ProcessContext`` (``.processes``, ``.join()``), for a
    launcher that watches the processes and forwards signals to them.
    """
    if nproc < 1:
        raise ConfigError(f"nproc={nproc} must be at least 1")
    return torch.multiprocessing.start_processes(_spawned, args=(nproc, free_port(), fn, args), nprocs=nproc,
                                                 join=False, start_method="spawn")


# ------------------------------------------------------------------------------------------------
# Model
# ------------------------------------------------------------------------------------------------


class _AllReduceSum(torch.autograd.Function):
    """all_reduce(SUM) whose backward all-reduces the gradient (as every rank's loss reads the sum)."""

    @staticmethod
    def forward(ctx, tensor):
        tensor = tensor.clone()
        dist.all_reduce(tensor)
        return tensor

    @staticmethod
    def backward(ctx, grad):
        grad = grad.contiguous().clone()
        dist.all_reduce(grad)
        return grad


class DistributedBatchNorm(_BatchNorm):
    """BatchNorm over the rows of every rank's input together; runs on CPU (gloo) too.

    Training-mode forward shares each rank's row count, per-channel mean and
    sum of squared deviations (one differentiable all-reduce of a
    world_size-row table) and combines them with the parallel-variance
    formula, as numerically stable as BatchNorm1d's two passes. Running statistics
    follow ``nn.BatchNorm1d`` (unbiased variance of the global batch). Eval
    mode, or a job of one process, is plain BatchNorm. The state_dict has
    BatchNorm's names, so checkpoints load into the plain model.
    """

    def _check_input_dim(self, input: torch.Tensor) -> None:
        if input.dim() not in (2, 3):
            raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        self._check_input_dim(input)
        if not (self.training and dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1):
            return super().forward(input)
        x = input if input.dim() == 2 else input.transpose(1, 2).reshape(-1, input.shape[1])
        factor = 0.0 if self.momentum is None else self.momentum
        if self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            factor = 1.0 / float(self.num_batches_tracked) if self.momentum is None else self.momentum
        rows, channels = x.shape
        local_mean = x.sum(0) / max(rows, 1)
        local_m2 = (x - local_mean).pow(2).sum(0)
        own = torch.zeros(dist.get_world_size(), 1, dtype=x.dtype, device=x.device)
        own[dist.get_rank()] = 1.0
        row = torch.cat([x.new_full((1,), float(rows)), local_mean, local_m2])
        table = _AllReduceSum.apply(own * row)  # (world_size, 1 + 2C): every rank's count, mean, M2
        counts = table[:, :1].detach()
        count = counts.sum()
        if count < 2:
            from ..config import ConfigError

            raise ConfigError("a training batch holds fewer than 2 rows (nodes or edges) over all processes, and "
                              "BatchNorm needs 2; train on larger batches (--batch-size: on partitions, the nodes of "
                              "one trainer's batch)")
        means, m2s = table[:, 1:1 + channels], table[:, 1 + channels:]
        mean = (counts * means).sum(0) / count
        var = (m2s + counts * (means - mean).pow(2)).sum(0) / count
        out = (x - mean) * torch.rsqrt(var + self.eps)
        if self.affine:
            out = out * self.weight + self.bias
        if self.track_running_stats:
            with torch.no_grad():
                self.running_mean.mul_(1 - factor).add_(mean.detach(), alpha=factor)
                self.running_var.mul_(1 - factor).add_(var.detach() * (count / (count - 1)), alpha=factor)
        return out if input.dim() == 2 else out.reshape(input.shape[0], -1, input.shape[1]).transpose(1, 2)


def convert_sync_batchnorm(module: nn.Module, device: torch.device) -> nn.Module:
    """Replace every BatchNorm by its synchronised version (weights and statistics kept).

    ``torch.nn.SyncBatchNorm.convert_sync_batchnorm`` on CUDA; on CPU
    :class:`DistributedBatchNorm`, since PyTorch's SyncBatchNorm needs a GPU.
    """
    if device.type == "cuda":
        return nn.SyncBatchNorm.convert_sync_batchnorm(module)
    return _convert_cpu(module)


def _convert_cpu(module: nn.Module) -> nn.Module:
    out = module
    if isinstance(module, _BatchNorm) and not isinstance(module, DistributedBatchNorm):
        out = DistributedBatchNorm(module.num_features, module.eps, module.momentum, module.affine,
                                   module.track_running_stats)
        if module.affine:
            with torch.no_grad():
                out.weight = module.weight
                out.bias = module.bias
        out.running_mean = module.running_mean
        out.running_var = module.running_var
        out.num_batches_tracked = module.num_batches_tracked
        out.training = module.training
    for name, child in module.named_children():
        out.add_module(name, _convert_cpu(child))
    return out


def wrap_model(model: nn.Module, context: DistContext, device: torch.device) -> nn.Module:
    """DistributedDataParallel around ``model`` (``model`` itself for one process).

    The model leaves some parameters unused on purpose (the last GEAET
    layer's edge branch, e.g. ``bn_edge_e``, whose output feeds nothing), so
    DDP runs with ``static_graph=True``: it finds the unused set once, in the
    first step, instead of searching the autograd graph every step as
    ``find_unused_parameters=True`` would. Their gradients stay None, exactly
    as in a 1-process run, so the optimiser leaves them untouched.
    """
    if not context.enabled:
        return model
    device_ids = [device.index] if device.type == "cuda" else None
    return nn.parallel.DistributedDataParallel(model, device_ids=device_ids, static_graph=True)


def rank_seed(seed: int, rank: int) -> int:
    """Seed of rank ``rank``'s torch RNG (dropout) after the identical model initialisation."""
    from .batching import epoch_seed

    return epoch_seed(seed, rank, stream=7)


def check_resume_world_size(state: Dict[str, Any], context: DistContext) -> None:
    """Refuse to resume a checkpoint with a different number of processes than wrote it."""
    saved = state.get("ranks", {}).get("world_size", 1) if isinstance(state.get("ranks"), dict) else 1
    if saved != context.world_size:
        raise ConfigError(
            f"this run was trained by {saved} process(es) but is resumed by {context.world_size}; the batch order "
            f"and the saved RNG states are per process: resume with --nproc {saved} (or torchrun "
            f"--nproc_per_node/--nnodes giving {saved} processes in all)"
        )
