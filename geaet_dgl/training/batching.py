"""Mini-batches whose order is a pure function of (seed, epoch).

A resumed run must see exactly the batches an uninterrupted run would, even
from the middle of an epoch. So the order of epoch ``e`` is a permutation
drawn from a generator seeded with ``(seed, e)`` (never the global RNG), and
a loader can start at any batch of it.

Example
-------
>>> sampler = EpochBatchSampler(5, batch_size=2, shuffle=False, seed=0, epoch=0, start_step=1)
>>> list(sampler)
[[2, 3], [4]]
"""
from __future__ import annotations

import math
from typing import Callable, Iterator, List, Tuple

import dgl
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, Sampler


def epoch_seed(seed: int, epoch: int, stream: int = 0) -> int:
    """A well-mixed 63-bit seed for ``(seed, epoch)``; ``stream`` tells independent uses apart."""
    entropy = [seed, epoch, stream]
    return int(np.random.SeedSequence(entropy).generate_state(1, np.uint64)[0] >> np.uint64(1))


def epoch_order(num_items: int, shuffle: bool, seed: int, epoch: int) -> torch.Tensor:
    """(num_items,) int64: the item order of ``epoch`` (identity when not shuffling)."""
    if not shuffle:
        return torch.arange(num_items)
    return torch.randperm(num_items, generator=torch.Generator().manual_seed(epoch_seed(seed, epoch)))


def num_batches(num_items: int, batch_size: int) -> int:
    """Batches per epoch; the last one may be smaller (nothing is dropped)."""
    return math.ceil(num_items / batch_size)


class EpochBatchSampler(Sampler):
    """Index lists of the batches of one epoch, from batch ``start_step`` on."""

    def __init__(self, num_items: int, batch_size: int, shuffle: bool, seed: int, epoch: int,
                 start_step: int = 0):
        self.order = epoch_order(num_items, shuffle, seed, epoch)
        self.seed, self.epoch = seed, epoch
        self.batch_size = batch_size
        self.start_step = start_step
        self.total = num_batches(num_items, batch_size)

    def batch_indices(self, step: int) -> List[int]:
        """Dataset indices of batch ``step`` of this epoch."""
        return self.order[step * self.batch_size:(step + 1) * self.batch_size].tolist()

    def __iter__(self) -> Iterator[List[int]]:
        for step in range(self.start_step, self.total):
            yield self.batch_indices(step)

    def __len__(self) -> int:
        return max(0, self.total - self.start_step)


class ShardedEpochBatchSampler(EpochBatchSampler):
    """Rank ``rank``'s share of each global batch of ``world_size * batch_size`` items.

    The global batches are those of :class:`EpochBatchSampler` with batch
    ``world_size * batch_size`` (same (seed, epoch) order); rank ``r`` gets
    the ``r``-th of ``world_size`` equal, disjoint, contiguous slices. The
    last global batch keeps ``len // world_size`` items per rank (its
    ``len % world_size`` trailing items are skipped this epoch) and is
    dropped if that is 0. Steps count global batches.

    >>> [list(ShardedEpochBatchSampler(7, 2, False, 0, 0, rank=r, world_size=2)) for r in (0, 1)]
    [[[0, 1], [4]], [[2, 3], [5]]]
    """

    def __init__(self, num_items: int, batch_size: int, shuffle: bool, seed: int, epoch: int,
                 start_step: int = 0, *, rank: int, world_size: int):
        super().__init__(num_items, batch_size * world_size, shuffle, seed, epoch, start_step)
        if not 0 <= rank < world_size:
            raise ValueError(f"rank={rank} is not in [0, {world_size})")
        self.rank, self.world_size, self.per_rank = rank, world_size, batch_size
        self.total = num_items // self.batch_size + (1 if num_items % self.batch_size >= world_size else 0)

    def batch_indices(self, step: int) -> List[int]:
        """Dataset indices of this rank's part of global batch ``step``."""
        whole = self.order[step * self.batch_size:(step + 1) * self.batch_size]
        size = len(whole) // self.world_size
        return whole[self.rank * size:(self.rank + 1) * size].tolist()


def epoch_sampler(num_items: int, batch_size: int, *, shuffle: bool, seed: int, epoch: int, start_step: int = 0,
                  rank: int = 0, world_size: int = 1) -> EpochBatchSampler:
    """The batches ``start_step..`` of ``epoch`` over ``num_items`` items: with ``world_size > 1`` rank ``rank``'s
    shard of each global batch of ``world_size * batch_size`` items (:class:`ShardedEpochBatchSampler`), else
    :class:`EpochBatchSampler`."""
    if world_size > 1:
        return ShardedEpochBatchSampler(num_items, batch_size, shuffle, seed, epoch, start_step,
                                        rank=rank, world_size=world_size)
    return EpochBatchSampler(num_items, batch_size, shuffle, seed, epoch, start_step)


def make_epoch_loader(dataset: Dataset, collate_fn: Callable, sampler: EpochBatchSampler, workers: int = 0,
                      pin_memory: bool = False) -> DataLoader:
    """A DataLoader over the batches of ``sampler`` (:func:`epoch_sampler`).

    Its own generator (seeded by the sampler's ``(seed, epoch)``) provides the workers' base
    seed, so building it leaves the global torch RNG untouched.
    """
    return DataLoader(dataset, batch_sampler=sampler, collate_fn=collate_fn, num_workers=workers,
                      pin_memory=pin_memory,
                      generator=torch.Generator().manual_seed(epoch_seed(sampler.seed, sampler.epoch, stream=1)))


def move_batch(batch: Tuple[dgl.DGLGraph, torch.Tensor], device: torch.device
               ) -> Tuple[dgl.DGLGraph, torch.Tensor]:
    """Move a ``(batched_graph, labels)`` pair to ``device`` once, before the forward pass.

    Non-blocking, so labels that the loader pinned (``pin_memory=True`` for
    CUDA) copy asynchronously.
    """
    graph, labels = batch
    return graph.to(device, non_blocking=True), labels.to(device, non_blocking=True)
