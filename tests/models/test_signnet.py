"""SignNet against a float64 dense computation per graph; sign invariance, batched == single, permutation."""
import copy

import dgl
import pytest
import torch

from geaet_dgl.models.signnet import SignNetEncoder
from geaet_dgl.nn.batch_layout import BatchLayout
from tests.conftest import random_graph


def _dense_signnet(enc: SignNetEncoder, graphs, eigvecs):
    """float64, dense adjacency, explicit loops over graphs and frequencies; BatchNorm in eval mode."""
    def bn(norm, x):
        return (x - norm.running_mean.double()) / torch.sqrt(norm.running_var.double() + norm.eps) \
            * norm.weight.double() + norm.bias.double()

    def mlp(m, x):
        for lin, norm in zip(m.lins[:-1], m.bns):
            x = bn(norm, torch.relu(x @ lin.weight.double().T + lin.bias.double()))
        return x @ m.lins[-1].weight.double().T + m.lins[-1].bias.double()

    def phi(adj, signal):  # signal (n, 1)
        x = signal
        for i, conv in enumerate(enc.enc.layers):
            if i:
                x = bn(enc.enc.bns[i - 1], x)
            x = mlp(conv.nn, x + adj.T @ x)
        return x

    out, start = [], 0
    for g in graphs:
        n = g.num_nodes()
        adj = torch.zeros(n, n, dtype=torch.float64)
        for u, v in zip(*g.edges()):
            adj[u, v] += 1
        vecs = eigvecs[start:start + n].double()
        start += n
        per_freq = [phi(adj, vecs[:, j:j + 1]) + phi(adj, -vecs[:, j:j + 1]) for j in range(enc.k)]
        if enc.model == "mlp":
            out.append(mlp(enc.rho, torch.cat(per_freq, dim=1)))
        else:
            out.append(mlp(enc.rho, sum(per_freq[j] for j in range(min(n, enc.k)))))
    return torch.cat(out)


def _setup(model, seed=0):
    torch.manual_seed(seed)
    graphs = [random_graph(6, 14, 1), random_graph(3, 4, 2), random_graph(9, 25, 3)]
    k = 5
    eigvecs = torch.randn(sum(g.num_nodes() for g in graphs), k)
    enc = SignNetEncoder(k, 8, model=model, phi_layers=3, phi_hidden_dim=16, phi_out_dim=4, rho_layers=2)
    enc.train()
    for _ in range(3):  # move the BatchNorm running statistics off their defaults
        enc(dgl.batch(graphs), eigvecs, BatchLayout.from_graph(dgl.batch(graphs)))
    return enc.eval(), graphs, eigvecs


@pytest.mark.parametrize("model", ["deepset", "mlp"])
def test_matches_dense_float64_and_is_sign_invariant(model):
    enc, graphs, eigvecs = _setup(model)
    batch = dgl.batch(graphs)
    layout = BatchLayout.from_graph(batch)
    out = enc(batch, eigvecs, layout)
    torch.testing.assert_close(out.double(), _dense_signnet(enc, graphs, eigvecs), atol=1e-5, rtol=1e-5)
    flipped = eigvecs * torch.tensor([1.0, -1.0, -1.0, 1.0, -1.0])
    torch.testing.assert_close(enc(batch, flipped, layout), out, atol=1e-6, rtol=1e-6)
    start = 0
    for g in graphs:  # batched == single
        n = g.num_nodes()
        single = enc(g, eigvecs[start:start + n], BatchLayout.from_graph(g))
        torch.testing.assert_close(single, out[start:start + n], atol=1e-6, rtol=1e-6)
        start += n


def test_permutation_equivariant_and_gradients():
    enc, graphs, eigvecs = _setup("deepset")
    g = graphs[2]
    vecs = eigvecs[9:18]
    perm = torch.randperm(g.num_nodes())
    out = enc(g, vecs, BatchLayout.from_graph(g))
    permuted = dgl.reorder_graph(g, "custom", permute_config={"nodes_perm": perm}, store_ids=False)
    torch.testing.assert_close(enc(permuted, vecs[perm], BatchLayout.from_graph(permuted)), out[perm],
                               atol=1e-6, rtol=1e-6)
    enc.train()
    batch = dgl.batch(graphs)
    enc(batch, eigvecs, BatchLayout.from_graph(batch)).square().sum().backward()
    for name, p in enc.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all(), name


@pytest.mark.parametrize("momentum", [0.1, None])
def test_batch_norm_passes_equals_one_call_per_pass(momentum):
    """Each pass normalised by its own statistics, the running statistics as after the calls in sequence, the
    gradients of the input, weight and bias those of the separate calls (float64, against nn.BatchNorm1d)."""
    from geaet_dgl.models.signnet import batch_norm_passes

    torch.manual_seed(0)
    ours = torch.nn.BatchNorm1d(6, momentum=momentum).double()
    with torch.no_grad():
        ours.weight.uniform_(0.5, 1.5)
        ours.bias.normal_()
        ours.running_mean.normal_()
        ours.running_var.uniform_(0.5, 2.0)
    theirs = copy.deepcopy(ours)
    x = (torch.randn(7, 3, 2, 6, dtype=torch.float64) * 3 + 5).requires_grad_()
    out = batch_norm_passes(ours, x)
    x_ref = x.detach().clone().requires_grad_()
    expected = torch.stack([theirs(x_ref[:, :, p].reshape(-1, 6)).view(7, 3, 6) for p in range(2)], dim=2)
    torch.testing.assert_close(out, expected, atol=1e-12, rtol=1e-12)
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        torch.testing.assert_close(getattr(ours, name), getattr(theirs, name), atol=1e-12, rtol=1e-12)
    weights = torch.randn_like(out)
    (out * weights).sum().backward()
    (expected * weights).sum().backward()
    torch.testing.assert_close(x.grad, x_ref.grad, atol=1e-10, rtol=1e-10)
    torch.testing.assert_close(ours.weight.grad, theirs.weight.grad, atol=1e-10, rtol=1e-10)
    torch.testing.assert_close(ours.bias.grad, theirs.bias.grad, atol=1e-10, rtol=1e-10)


def test_batch_norm_statistics_accurate_in_float32():
    """float32 statistics over 20k rows of mean 5 within 1e-6 of the float64 ones (F.batch_norm's (R, C) path
    accumulates in float32 in sequence: ~1e-5 here)."""
    from geaet_dgl.models.signnet import batch_norm_passes

    torch.manual_seed(0)
    norm = torch.nn.BatchNorm1d(8)
    x = (torch.randn(10000, 2, 8) * 3 + 5).relu()
    exact = batch_norm_passes(copy.deepcopy(norm).double(), x.double())
    assert (batch_norm_passes(norm, x).double() - exact).abs().max().item() < 2e-6


@pytest.mark.parametrize("model", ["deepset", "mlp"])
def test_folded_equals_eval_mode(model):
    """The folded inference copy (every BatchNorm in a linear map): the eval-mode outputs, without autograd."""
    enc, graphs, eigvecs = _setup(model)
    batch = dgl.batch(graphs)
    layout = BatchLayout.from_graph(batch)
    folded = enc.folded()
    out = folded(batch, eigvecs, layout)
    assert not out.requires_grad
    torch.testing.assert_close(out, enc(batch, eigvecs, layout), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(out.double(), _dense_signnet(enc, graphs, eigvecs), atol=1e-5, rtol=1e-5)
    start = 0
    for g in graphs:  # batched == single
        n = g.num_nodes()
        torch.testing.assert_close(folded(g, eigvecs[start:start + n], BatchLayout.from_graph(g)),
                                   out[start:start + n], atol=1e-6, rtol=1e-6)
        start += n


def test_folded_declines_without_running_statistics():
    enc = SignNetEncoder(4, 8, phi_layers=2, phi_hidden_dim=8)
    enc.enc.bns[0].running_mean = enc.enc.bns[0].running_var = None
    assert enc.folded() is None


def test_synchronised_batch_norms_run_their_own_forward():
    """With the distributed trainer's BatchNorms (converted on CPU, one process) the encoder calls them once per sign
    and computes what the plain encoder computes, running statistics included."""
    from geaet_dgl.training.distributed import convert_sync_batchnorm

    enc, graphs, eigvecs = _setup("mlp")
    synced = convert_sync_batchnorm(copy.deepcopy(enc), torch.device("cpu"))
    assert type(synced.enc.bns[0]) is not torch.nn.BatchNorm1d
    batch = dgl.batch(graphs)
    layout = BatchLayout.from_graph(batch)
    enc.train()
    synced.train()
    torch.testing.assert_close(synced(batch, eigvecs, layout), enc(batch, eigvecs, layout), atol=1e-5, rtol=1e-5)
    for a, b in zip(synced.enc.bns, enc.enc.bns):
        torch.testing.assert_close(a.running_mean, b.running_mean, atol=1e-6, rtol=1e-6)
        torch.testing.assert_close(a.running_var, b.running_var, atol=1e-6, rtol=1e-6)
