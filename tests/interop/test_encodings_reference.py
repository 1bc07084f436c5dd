"""SignNet, HKdiagSE, ElstaticSE, GraphormerBias and the BiasedTransformer against the reference's own code.

The precomputed statistics against ``compute_posenc_stats``; the encoders and the biased attention against the
reference's modules with the same weights (renamed by geaet_dgl.interop.reference_names): outputs in train and
eval mode and the gradients of every parameter, on MNIST- and PATTERN-shaped batches. Skipped without
torch_geometric and the reference checkout (GEAET_REF_DIR).
"""
import copy
import os
import sys

import dgl
import numpy as np
import pytest
import torch

from geaet_lab.benchmarking.inputs import prebuilt_batches
from geaet_lab.interop.pyg_export import to_pyg_batch
from geaet_dgl.data.encodings.pe_cache import attach_pe, compute_split_pe
from geaet_dgl.data.encodings.se_cache import StructuralSpec, attach_structural
from geaet_dgl.interop.reference_names import reference_to_ours
from geaet_dgl.models.positional import KernelSEEncoder
from geaet_dgl.models.signnet import SignNetEncoder
from geaet_dgl.nn.batch_layout import BatchLayout
from geaet_dgl.nn.biased_attention import BiasedGraphSelfAttention
from geaet_dgl.nn.graphormer_bias import GraphormerBias, GraphormerDegreeEncoder

pytestmark = pytest.mark.reference

REF_DIR = os.environ.get("GEAET_REF_DIR", "/work/ref/GEAET")
K, S, H, D = 8, 20, 4, 32
SPEC = StructuralSpec(hk_times=tuple(float(t) for t in range(1, K + 1)), elstatic=True, spatial_types=S,
                      degrees=True)


@pytest.fixture(scope="module")
def cfg():
    pytest.importorskip("torch_geometric")
    if not os.path.isdir(REF_DIR):
        pytest.skip(f"no reference checkout at {REF_DIR} (set GEAET_REF_DIR)")
    sys.modules.setdefault("outdated", None)
    if REF_DIR not in sys.path:
        sys.path.insert(0, REF_DIR)
    import GEAET  # noqa: F401  (registers the reference's modules)
    from torch_geometric.graphgym.config import cfg, set_cfg

    set_cfg(cfg)
    cfg.posenc_LapPE.eigen.laplacian_norm = "none"
    cfg.posenc_SignNet.eigen.update(laplacian_norm="none", eigvec_norm="L2", max_freqs=K)
    cfg.posenc_SignNet.update(dim_pe=16, layers=3, post_layers=2, phi_hidden_dim=32, phi_out_dim=4)
    cfg.posenc_HKdiagSE.kernel.times = list(range(1, K + 1))
    cfg.posenc_GraphormerBias.update(num_spatial_types=S, num_in_degrees=256, num_out_degrees=256)
    return cfg


def _graphs(shape):
    graph, _ = prebuilt_batches(shape, 5, 1, torch.device("cpu"), seed=3)[0]
    graphs = dgl.unbatch(graph)
    for g in graphs:
        g.ndata.clear()
        g.ndata["feat"] = torch.randn(g.num_nodes(), 3)
        g.edata["feat"] = torch.rand(g.num_edges(), 1)
    attach_pe(graphs, compute_split_pe(graphs, K, "none", progress=False))
    attach_structural(graphs, SPEC)
    return graphs


@pytest.mark.parametrize("shape", ["mnist", "pattern"])
def test_statistics_equal_compute_posenc_stats(cfg, shape, monkeypatch):
    import networkx
    from torch_geometric.data import Data

    from GEAET.transform.posenc_stats import compute_posenc_stats

    all_pairs = networkx.shortest_path  # networkx >= 3.3 returns a generator where the reference expects a dict
    monkeypatch.setattr(networkx, "shortest_path", lambda g, *args, **kw: dict(all_pairs(g, *args, **kw)))
    # The reference's float32 torch.pinverse (rcond 1e-15) inverts the Laplacian's numerically zero eigenvalue:
    # its ElstaticSE carries rounding noise of ~1e-2 (multiples of 1/128 on these graphs). Its formula is checked
    # here with the pseudo-inverse in float64, the rest of its code as it is.
    import GEAET.transform.posenc_stats as posenc_stats

    monkeypatch.setattr(posenc_stats.torch, "pinverse",
                        lambda m: torch.linalg.pinv(m.double(), hermitian=True).to(m.dtype))

    for g in _graphs(shape):
        src, dst = g.edges()
        data = Data(x=g.ndata["feat"], edge_index=torch.stack([src, dst]), num_nodes=g.num_nodes())
        data = compute_posenc_stats(data, ["SignNet", "HKdiagSE", "ElstaticSE", "GraphormerBias"],
                                    data.is_undirected(), cfg)
        n = g.num_nodes()
        ours_vecs = g.ndata["lap_pe"]
        np.testing.assert_allclose(ours_vecs.abs(), torch.nan_to_num(data.eigvecs_sn).abs(), atol=1e-5)
        np.testing.assert_allclose(g.ndata["hkdiag_se"], data.pestat_HKdiagSE.float(), atol=1e-5)
        np.testing.assert_allclose(g.ndata["elstatic_se"], data.pestat_ElstaticSE.float(), atol=1e-4, rtol=1e-4)
        assert torch.equal(g.ndata["spatial_types"][:, :n].long().reshape(-1), data.spatial_types)
        assert torch.equal(g.ndata["in_degree"], data.in_degrees) and torch.equal(g.ndata["out_degree"],
                                                                                  data.out_degrees)


def _load_renamed(ours: torch.nn.Module, theirs: torch.nn.Module, prefix_theirs: str, prefix_ours: str) -> None:
    renamed = reference_to_ours({prefix_theirs + k: v for k, v in theirs.state_dict().items()})
    ours.load_state_dict({k[len(prefix_ours):]: v for k, v in renamed.items() if k.startswith(prefix_ours)})


def _check_grads(ours, theirs, prefix_theirs, prefix_ours):
    grads = reference_to_ours({prefix_theirs + k: p.grad for k, p in theirs.named_parameters()})
    for name, p in ours.named_parameters():
        torch.testing.assert_close(p.grad, grads[prefix_ours + name], atol=1e-5, rtol=1e-4)


def _run_both(ours_fn, theirs_fn, ours, theirs, rtol=0.0):
    """Both in train, then eval mode: outputs within 1e-5 (+ ``rtol`` of their size), then backward."""
    for mode in ("train", "eval"):
        ours.train(mode == "train")
        theirs.train(mode == "train")
        for module in (ours, theirs):
            module.zero_grad()
        a, b = ours_fn(), theirs_fn()
        assert (a - b).abs().max().item() < 1e-5 + rtol * b.abs().max().item(), mode
        weights = torch.randn_like(a)
        (a * weights).sum().backward()
        (b * weights).sum().backward()
        yield mode


@pytest.mark.parametrize("shape", ["mnist", "pattern"])
@pytest.mark.parametrize("model", ["DeepSet", "MLP"])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_signnet_equals_the_reference_encoder(cfg, shape, model, dtype):
    """The same function: float64 within 1e-5 (about 1e-12 in fact), train and eval, gradients. In float32 the
    train-mode BatchNorms (statistics over a batch's k * N signals, eight of them in sequence) amplify the
    different summation order of DGL's and PyG's neighbour sums to ~1e-5 of the output's size."""
    from GEAET.encoder.signnet_pos_encoder import SignNetNodeEncoder

    cfg.posenc_SignNet.model = model
    torch.manual_seed(0)
    theirs = SignNetNodeEncoder(D, expand_x=False)
    ours = SignNetEncoder(K, 16, model.lower(), 3, 32, 4, 2)
    _load_renamed(ours, theirs, "encoder.node_encoder.", "pe_encoder.")
    ours, theirs = ours.to(dtype), theirs.to(dtype)
    graphs = _graphs(shape)
    graph = dgl.batch(graphs)
    layout = BatchLayout.from_graph(graph)
    batch = to_pyg_batch(graph, torch.zeros(len(graphs)))
    batch.eigvecs_sn, batch.x = batch.eigvecs_sn.to(dtype), batch.x.to(dtype)
    rtol = 0.0 if dtype == torch.float64 else 2e-5
    for _ in _run_both(lambda: ours(graph, graph.ndata["lap_pe"].to(dtype), layout),
                       lambda: theirs(copy.copy(batch)).x[:, -16:], ours, theirs, rtol):
        if dtype == torch.float64:
            _check_grads(ours, theirs, "encoder.node_encoder.", "pe_encoder.")


@pytest.mark.parametrize("shape", ["mnist", "pattern"])
@pytest.mark.parametrize("kind", ["HKdiagSE", "ElstaticSE"])
@pytest.mark.parametrize("model", ["Linear", "mlp"])
def test_kernel_encoders_equal_the_reference(cfg, kind, model, shape):
    from GEAET.encoder import kernel_pos_encoder

    pecfg = getattr(cfg, f"posenc_{kind}")
    pecfg.update(model=model, dim_pe=8, layers=2, raw_norm_type="BatchNorm")
    pecfg.kernel.times = list(range(1, K + 1)) if kind == "HKdiagSE" else list(range(10))
    torch.manual_seed(0)
    theirs = getattr(kernel_pos_encoder, f"{kind}NodeEncoder")(D, expand_x=False)
    ours = KernelSEEncoder(len(pecfg.kernel.times), 8, True, model.lower(), 2)
    _load_renamed(ours, theirs, "encoder.node_encoder.", "pe_encoder.")
    graphs = _graphs(shape)
    graph = dgl.batch(graphs)
    batch = to_pyg_batch(graph, torch.zeros(len(graphs)))
    field = "hkdiag_se" if kind == "HKdiagSE" else "elstatic_se"
    for _ in _run_both(lambda: ours(graph.ndata[field]), lambda: theirs(copy.copy(batch)).x[:, -8:], ours, theirs):
        _check_grads(ours, theirs, "encoder.node_encoder.", "pe_encoder.")


@pytest.mark.parametrize("shape", ["mnist", "pattern"])
def test_graphormer_bias_degrees_and_biased_attention_equal_the_reference(cfg, shape):
    from torch_geometric.utils import to_dense_batch

    from GEAET.encoder.graphormer_encoder import BiasEncoder, NodeEncoder

    torch.manual_seed(0)
    theirs_bias, theirs_nodes = BiasEncoder(H, S, 1, use_graph_token=False), NodeEncoder(D, 256, 256, 0.0, False)
    theirs_attn = torch.nn.MultiheadAttention(D, H, batch_first=True)
    ours_bias, ours_nodes, ours_attn = GraphormerBias(H, S), GraphormerDegreeEncoder(D, 256, 256), \
        BiasedGraphSelfAttention(D, H)
    prefix = "encoder.node_encoder.encoder2."
    renamed = reference_to_ours({prefix + "0." + k: v for k, v in theirs_bias.state_dict().items()} |
                                {prefix + "1." + k: v for k, v in theirs_nodes.state_dict().items()})
    ours_bias.load_state_dict({"spatial_encoder.weight": renamed["bias_encoder.spatial_encoder.weight"]})
    ours_nodes.load_state_dict({k[len("degree_encoder."):]: v for k, v in renamed.items()
                                if k.startswith("degree_encoder.")})
    ours_attn.load_state_dict(theirs_attn.state_dict())
    graphs = _graphs(shape)
    graph = dgl.batch(graphs)
    layout = BatchLayout.from_graph(graph)
    batch = to_pyg_batch(graph, torch.zeros(len(graphs)))
    del batch.edge_attr  # with edge features the reference also encodes paths (refused by --config)
    h = torch.randn(graph.num_nodes(), D)

    def ours_fn():
        x = ours_nodes(h, graph.ndata["in_degree"], graph.ndata["out_degree"])
        return ours_attn(graph, x, layout=layout, attn_bias=ours_bias(graph.ndata["spatial_types"], layout))[0]

    def theirs_fn():
        data = copy.copy(batch)
        data.x = h
        data = theirs_nodes(theirs_bias(data))
        dense, mask = to_dense_batch(data.x, data.batch)
        return theirs_attn(dense, dense, dense, attn_mask=data.attn_bias, key_padding_mask=~mask,
                           need_weights=False)[0][mask]

    modules = torch.nn.ModuleList([ours_bias, ours_nodes, ours_attn])
    theirs_all = torch.nn.ModuleList([theirs_bias, theirs_nodes, theirs_attn])
    for _ in _run_both(ours_fn, theirs_fn, modules, theirs_all):
        torch.testing.assert_close(ours_bias.spatial_encoder.weight.grad, theirs_bias.spatial_encoder.weight.grad,
                                   atol=1e-5, rtol=1e-4)
        torch.testing.assert_close(ours_attn.in_proj_weight.grad, theirs_attn.in_proj_weight.grad,
                                   atol=1e-5, rtol=1e-4)
        torch.testing.assert_close(ours_nodes.in_degree_encoder.weight.grad,
                                   theirs_nodes.in_degree_encoder.weight.grad, atol=1e-5, rtol=1e-4)


def _molecules(seed=0, count=4):
    """ZINC-like graphs: a chain with branches and a ring, both edge directions, bond types 1..3."""
    rng = np.random.default_rng(seed)
    graphs = []
    for _ in range(count):
        n = int(rng.integers(12, 25))
        bonds = [(i, i + 1) for i in range(n - 1)] + [(0, n - 1)] + [(int(rng.integers(0, i)), i) for i in (n // 2,)]
        bonds = np.unique(np.array(bonds).T, axis=1)
        kinds = rng.integers(1, 4, bonds.shape[1])
        g = dgl.graph((torch.from_numpy(np.concatenate([bonds[0], bonds[1]])),
                       torch.from_numpy(np.concatenate([bonds[1], bonds[0]]))), num_nodes=n)
        g.edata["feat"] = torch.from_numpy(np.concatenate([kinds, kinds])).view(-1, 1)
        g.ndata["feat"] = torch.from_numpy(rng.integers(0, 28, (n, 1)))
        graphs.append(g)
    attach_structural(graphs, StructuralSpec(spatial_types=S, degrees=True, path_types=True))
    return graphs


def test_graphormer_path_encoding_equals_the_reference(cfg, monkeypatch):
    """ZINC's case: the edge types along networkx's shortest paths, and the bias they add."""
    import networkx
    from torch_geometric.data import Batch, Data

    from GEAET.encoder.graphormer_encoder import BiasEncoder
    from GEAET.transform.posenc_stats import compute_posenc_stats

    all_pairs = networkx.shortest_path
    monkeypatch.setattr(networkx, "shortest_path", lambda g, *args, **kw: dict(all_pairs(g, *args, **kw)))
    graphs = _molecules()
    items = []
    for g in graphs:
        src, dst = g.edges()
        data = Data(x=g.ndata["feat"], edge_index=torch.stack([src, dst]), edge_attr=g.edata["feat"][:, 0],
                    num_nodes=g.num_nodes())
        data = compute_posenc_stats(data, ["GraphormerBias"], True, cfg)
        n = g.num_nodes()
        assert torch.equal(g.ndata["path_types"][:, :n].long().reshape(n * n, S), data.shortest_path_types)
        assert torch.equal(g.ndata["spatial_types"][:, :n].long().reshape(-1), data.spatial_types)
        items.append(data)
    batch = Batch.from_data_list(items)
    torch.manual_seed(0)
    theirs = BiasEncoder(H, S, 4, use_graph_token=False)
    ours = GraphormerBias(H, S, 4)
    renamed = reference_to_ours({"encoder.node_encoder.encoder2.0." + k: v for k, v in theirs.state_dict().items()})
    ours.load_state_dict({k[len("bias_encoder."):]: v for k, v in renamed.items()})
    graph = dgl.batch(graphs)
    layout = BatchLayout.from_graph(graph)
    n_max = layout.max_nodes
    for module in (ours, theirs):
        module.zero_grad()
    a = ours(graph.ndata["spatial_types"], layout, graph.ndata["path_types"])
    b = theirs(copy.copy(batch)).attn_bias
    w = layout.dense_width
    a = a.view(-1, w, w)[:, :n_max, :n_max]
    assert (a - b).abs().max().item() < 1e-6
    weights = torch.randn_like(b)
    (a * weights).sum().backward()
    (b * weights).sum().backward()
    for name in ("spatial_encoder", "edge_encoder", "edge_dis_encoder"):
        torch.testing.assert_close(getattr(ours, name).weight.grad, getattr(theirs, name).weight.grad,
                                   atol=1e-6, rtol=1e-5)
