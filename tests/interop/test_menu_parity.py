"""GAT, PNA, GENConv and Performer against the reference's own modules (PyG, performer_pytorch), same weights.

Skipped unless torch_geometric and performer_pytorch import (run in the reference's environment,
``REFENV/bin/python -m pytest tests/interop/test_menu_parity.py``). MNIST-shaped batches (width 40,
4 heads, 16 graphs of 40-75 nodes, 8 neighbours each) and PATTERN-shaped ones (width 64, 4 heads,
8 graphs of 44-180 nodes, dense); train and eval mode: outputs within 1e-5 in float32 (as the
reference runs), and outputs and the gradients of inputs and weights within 1e-5 in float64
(float32 gradients of weights summed over thousands of nodes differ by their rounding, ~1e-5 of
their size, in both directions).
"""
import sys

import dgl
import pytest
import torch

pytestmark = pytest.mark.reference

sys.modules.setdefault("outdated", None)  # ogb's version check hangs beside performer_pytorch
pyg = pytest.importorskip("torch_geometric.nn")
performer_pytorch = pytest.importorskip("performer_pytorch")

from geaet_dgl.nn.branches import build_attention, build_mpnn  # noqa: E402
from geaet_dgl.nn.pna import degree_histogram  # noqa: E402

SHAPES = {"mnist": (40, [(n, 8) for n in (75, 40, 63, 70, 55, 75, 48, 66, 72, 59, 61, 44, 75, 50, 68, 57)]),
          "pattern": (64, [(n, max(2, n // 3)) for n in (180, 44, 120, 98, 150, 61, 133, 100)])}
HEADS = 4


def batch(shape: str, seed: int = 0):
    dim, sizes = SHAPES[shape]
    gen = torch.Generator().manual_seed(seed)
    graphs = []
    for n, k in sizes:
        src = torch.randint(0, n, (n * k,), generator=gen)
        graphs.append(dgl.graph((src, torch.arange(n).repeat_interleave(k)), num_nodes=n))
    g = dgl.batch(graphs)
    return g, graphs, torch.randn(g.num_nodes(), dim, generator=gen), torch.randn(g.num_edges(), dim, generator=gen)


def reference_mpnn(name, dim, graphs):
    if name == "gat":
        return pyg.GATConv(dim, dim // HEADS, heads=HEADS, edge_dim=dim)
    if name == "genconv":
        return pyg.GENConv(dim, dim)
    return pyg.PNAConv(dim, dim, aggregators=["mean", "max", "sum"], scalers=["identity"],
                       deg=torch.tensor(degree_histogram(graphs)), edge_dim=min(128, dim), towers=1, pre_layers=1,
                       post_layers=1, divide_input=False)


def assert_same(ours, theirs, inputs_ours, inputs_theirs, call_ours, call_theirs):
    out_a, out_b = call_ours(*inputs_ours), call_theirs(*inputs_theirs)
    assert (out_a - out_b).abs().max().item() < 1e-5
    if out_a.dtype == torch.float32:
        return (out_a - out_b).abs().max().item()
    weights = torch.linspace(-1, 1, out_a.numel()).view_as(out_a)
    (out_a * weights).sum().backward()
    (out_b * weights).sum().backward()
    for a, b in zip(inputs_ours, inputs_theirs):
        assert (a.grad - b.grad).abs().max().item() < 1e-5
    params = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        assert (p.grad - params[name].grad).abs().max().item() < 1e-5, name
    return (out_a - out_b).abs().max().item()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("train", [True, False])
@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("name", ["gat", "genconv", "pna"])
def test_local_mpnn_matches_pyg(name, shape, train, dtype):
    g, graphs, x, e = batch(shape)
    x, e = x.to(dtype), e.to(dtype)
    dim = x.shape[1]
    torch.manual_seed(0)
    theirs = reference_mpnn(name, dim, graphs)
    ours = build_mpnn(name, dim, num_heads=HEADS)
    ours.load_state_dict(theirs.state_dict(), strict=True)
    ours.to(dtype), theirs.to(dtype)
    ours.train(train), theirs.train(train)
    edge_index = torch.stack(g.edges())
    xa, ea, xb, eb = (t.clone().requires_grad_() for t in (x, e, x, e))
    assert_same(ours, theirs, (xa, ea), (xb, eb), lambda x_, e_: ours(g, x_, e_)[0],
                lambda x_, e_: theirs(x_, edge_index, e_))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("train", [True, False])
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_performer_matches_performer_pytorch(shape, train, dtype):
    from torch_geometric.utils import to_dense_batch

    g, graphs, x, _ = batch(shape)
    x = x.to(dtype)
    dim = x.shape[1]
    torch.manual_seed(0)
    theirs = performer_pytorch.SelfAttention(dim=dim, heads=HEADS, dropout=0.0, causal=False)
    ours = build_attention("performer", dim, HEADS, performer_pad_keys=True)
    ours.load_state_dict(theirs.state_dict(), strict=True)
    ours.to(dtype), theirs.to(dtype)
    ours.train(train), theirs.train(train)
    index = torch.repeat_interleave(torch.arange(len(graphs)), g.batch_num_nodes())

    def reference(x_):
        dense, mask = to_dense_batch(x_, index)
        return theirs(dense, mask=mask)[mask]

    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    assert_same(ours, theirs, (xa,), (xb,), lambda x_: ours(g, x_)[0], reference)
