"""LapPE and RWSE at once (GraphGPS's ``TypeDictNode+LapPE+RWSE``, ``zinc-GPS-LapPE+RWSE.yaml``): our input stage
against an independent computation of what GraphGPS's ``Concat3NodeEncoder`` computes.

GraphGPS builds ``encoder1(dim - dim_pe(LapPE) - dim_pe(RWSE))``, ``encoder2(dim - dim_pe(RWSE))`` and
``encoder3(dim)`` and concatenates in that order: atom embedding | LapPE's DeepSet | RWSE's BatchNorm + Linear.
The expected values here are written from that description with plain tensor operations (dense matrix powers for
the random walks, the BatchNorm's batch statistics by hand), in float64, on a batch of 16 ZINC-shaped graphs.
"""
from pathlib import Path

import dgl
import torch
import yaml

from geaet_lab.benchmarking.config_subject import config_subject
from geaet_lab.benchmarking.parity import in_precision
from geaet_dgl.models import build_model
from geaet_dgl.nn.batch_layout import BatchLayout

GRAPHGPS = yaml.safe_load((Path(__file__).resolve().parents[1] / "interop" / "graphgps_configs.yaml").read_text())


def _landing_probabilities(graph: dgl.DGLGraph, steps: int) -> torch.Tensor:
    """(N, steps) diag((D^-1 A)^k), k = 1..steps, per graph, by dense float64 matrix powers."""
    out = []
    for g in dgl.unbatch(graph):
        n = g.num_nodes()
        src, dst = g.edges()
        adj = torch.zeros(n, n, dtype=torch.float64).index_put_((src, dst), torch.ones(len(src), dtype=torch.float64),
                                                               accumulate=True)
        step = adj / adj.sum(1, keepdim=True).clamp_min(1)
        power, cols = step, []
        for _ in range(steps):
            cols.append(torch.diagonal(power))
            power = power @ step
        out.append(torch.stack(cols, 1))
    return torch.cat(out)


def test_lappe_and_rwse_together_are_graphgps_concat3_encoder(tmp_path):
    path = tmp_path / "zinc-GPS-LapPE+RWSE.yaml"
    path.write_text(yaml.safe_dump(GRAPHGPS["zinc-GPS-LapPE+RWSE.yaml"]))
    subject = config_subject(path)
    cfg = subject.model
    assert (cfg.pe, cfg.se, cfg.hidden_dim, cfg.pe_dim, cfg.se_dim, cfg.se_k) == ("lappe", "rwse", 64, 4, 24, 20)
    graph, _ = subject.batches(16, 1)[0]
    assert graph.batch_size == 16

    # the precomputed RWSE: the float64 landing probabilities rounded once to float32
    exact = _landing_probabilities(graph, cfg.se_k)
    stored = graph.ndata["rwse"]
    assert stored.dtype == torch.float32 and torch.equal(stored, exact.float())

    torch.manual_seed(1)
    model = build_model(cfg).double().train()
    with torch.no_grad():  # BatchNorm's affine away from (1, 0), so that its statistics show in the output
        model.se_encoder.raw_norm.weight.uniform_(0.5, 1.5)
        model.se_encoder.raw_norm.bias.uniform_(-0.5, 0.5)
    graph = in_precision(graph, torch.float64)
    with torch.random.fork_rng():
        torch.manual_seed(7)
        h = model.encode(graph, BatchLayout.from_graph(graph)).nodes
        torch.manual_seed(7)  # LapPE's one random sign per frequency in training, as GraphGPS draws it
        signs = torch.where(torch.rand(cfg.pe_k) >= 0.5, 1.0, -1.0).double()

    # encoder1: the atom type's embedding, dim - 4 - 24 = 36 wide
    atoms = model.node_encoder.encoder.weight
    assert atoms.shape[1] == 36
    base = atoms[graph.ndata["feat"][:, 0].long()]
    # encoder2: LapPE's DeepSet over (eigenvector, eigenvalue) pairs, frequencies past a graph's size left out
    lap = model.pe_encoder
    vec, val = graph.ndata["lap_pe"] * signs, graph.ndata["lap_eigval"]
    sizes = graph.batch_num_nodes().repeat_interleave(graph.batch_num_nodes())
    real = (torch.arange(cfg.pe_k)[None, :] < sizes[:, None]) & ~vec.isnan() & ~val.isnan()
    pairs = torch.stack([vec.nan_to_num(), val.nan_to_num()], -1)  # (N, k, 2)
    hidden = torch.relu(pairs @ lap.linear_A.weight.T + lap.linear_A.bias)
    second = lap.pe_encoder[1]
    lappe = (torch.relu(hidden @ second.weight.T + second.bias) * real[..., None]).sum(1)
    assert lappe.shape[1] == 4
    # encoder3: BatchNorm over the batch's nodes (biased variance), then Linear(20, 24)
    rw = model.se_encoder
    x = stored.double()
    normed = (x - x.mean(0)) / torch.sqrt(x.var(0, unbiased=False) + rw.raw_norm.eps)
    rwse = (normed * rw.raw_norm.weight + rw.raw_norm.bias) @ rw.pe_encoder.weight.T + rw.pe_encoder.bias
    assert rwse.shape[1] == 24

    expected = torch.cat([base, lappe, rwse], 1)
    assert h.shape == expected.shape == (graph.num_nodes(), 64)
    assert (h - expected).abs().max().item() < 1e-12
    # the order matters: the same pieces concatenated base | RWSE | LapPE differ
    assert (h - torch.cat([base, rwse, lappe], 1)).abs().max().item() > 1e-3
