"""Batch order is a pure function of (seed, epoch) and can start mid-epoch."""
import torch

from geaet_dgl.data import collate, synthetic_mnist_like
from geaet_dgl.training.batching import EpochBatchSampler, epoch_order, epoch_sampler, make_epoch_loader, num_batches


def test_order_depends_only_on_seed_and_epoch():
    a = epoch_order(50, True, seed=3, epoch=2)
    assert torch.equal(a, epoch_order(50, True, seed=3, epoch=2))
    assert not torch.equal(a, epoch_order(50, True, seed=3, epoch=3))
    assert not torch.equal(a, epoch_order(50, True, seed=4, epoch=2))
    assert sorted(a.tolist()) == list(range(50))
    assert epoch_order(5, False, seed=3, epoch=9).tolist() == [0, 1, 2, 3, 4]


def test_sampler_from_a_step_is_the_tail_of_the_epoch():
    full = list(EpochBatchSampler(23, 5, True, seed=0, epoch=1))
    assert len(full) == num_batches(23, 5) == 5 and len(full[-1]) == 3
    tail = EpochBatchSampler(23, 5, True, seed=0, epoch=1, start_step=3)
    assert list(tail) == full[3:] and len(tail) == 2
    assert tail.batch_indices(0) == full[0]


def test_loader_leaves_global_rng_alone():
    dataset = synthetic_mnist_like(6, num_nodes=5, k=2)
    torch.manual_seed(0)
    expected = torch.rand(2)
    torch.manual_seed(0)
    batches = list(make_epoch_loader(dataset, collate, epoch_sampler(len(dataset), 4, shuffle=True, seed=1, epoch=0)))
    assert torch.equal(torch.rand(2), expected)
    assert [g.batch_size for g, _ in batches] == [4, 2]
