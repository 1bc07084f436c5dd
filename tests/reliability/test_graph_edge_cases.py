"""Graphs the model must simply handle: a single node, no edges, isolated nodes, self-loops, duplicate edges,
very different sizes in one batch (and an empty graph inside a batch). The full MNIST preset (GEANet scope
'batch', as the paper) and a small 'graph'-scope model give finite outputs and finite gradients on each."""
import dgl
import pytest
import torch

from geaet_dgl.config import GEANetConfig, ModelConfig
from geaet_dgl.models import build_model
from geaet_dgl.config.presets import get_preset
from tests.conftest import graph_cases, random_graph, with_features


def cases():
    out = dict(graph_cases())
    out["duplicate_edges"] = [dgl.graph(([0, 0, 0, 1, 1, 2], [1, 1, 1, 2, 2, 0]), num_nodes=3),
                              random_graph(5, 10, 11)]
    out["self_loops_and_duplicates"] = [dgl.graph(([0, 0, 1, 1, 2], [0, 0, 1, 2, 2]), num_nodes=3)]
    out["sizes_1_to_300"] = [dgl.graph(([], []), num_nodes=1), random_graph(300, 2400, 12), random_graph(2, 2, 13),
                             random_graph(40, 320, 14)]
    out["all_graphs_edgeless"] = [dgl.graph(([], []), num_nodes=3), dgl.graph(([], []), num_nodes=2)]
    out["empty_graph_in_batch"] = [dgl.graph(([], []), num_nodes=0), random_graph(5, 9, 15)]
    return out


def small_graph_scope() -> ModelConfig:
    return ModelConfig(hidden_dim=8, num_layers=2, num_heads=2,
                       geanet=GEANetConfig(num_heads=2, unit_size=4, edge_unit=True, scope="graph"))


MODELS = {"mnist_preset": lambda: get_preset("mnist").model, "small_graph_scope": small_graph_scope}


@pytest.mark.parametrize("model_name", sorted(MODELS))
@pytest.mark.parametrize("case", sorted(cases()))
def test_finite_outputs_and_gradients(model_name, case):
    torch.manual_seed(0)
    graphs = with_features(cases()[case], 8)
    batch = dgl.batch(graphs)
    model = build_model(MODELS[model_name]())
    for mode in ("train", "eval"):
        model.train(mode == "train")
        model.zero_grad()
        out = model(batch)
        assert out.shape == (len(graphs), 10)
        assert torch.isfinite(out).all(), (mode, out)
        torch.nn.functional.cross_entropy(out, torch.arange(len(graphs)) % 10).backward()
        for name, param in model.named_parameters():
            if param.grad is not None:
                assert torch.isfinite(param.grad).all(), (mode, name)


def test_graph_scope_output_of_a_degenerate_graph_ignores_its_batch_mates():
    model = build_model(small_graph_scope()).eval()
    graphs = with_features(cases()["sizes_1_to_300"] + cases()["no_edges"], 8)
    together = model(dgl.batch(graphs))
    alone = torch.cat([model(g) for g in graphs])
    torch.testing.assert_close(together, alone, atol=1e-5, rtol=1e-5)


def test_a_batch_without_nodes_is_a_clear_error():
    g = with_features([dgl.graph(([], []), num_nodes=0)], 8)[0]
    with pytest.raises(ValueError, match="the batch has no nodes; drop empty graphs from the dataset"):
        build_model(small_graph_scope())(g)


def test_single_node_batch_in_eval_mode():
    """A batch whose only graph has one node: fine for prediction (BatchNorm uses its running statistics).

    In training mode BatchNorm cannot normalise a single value (PyTorch raises, as in the reference);
    training batches hold many superpixel graphs, so this never arises there.
    """
    g = with_features([dgl.graph(([], []), num_nodes=1)], 8)[0]
    for config in (get_preset("mnist").model, small_graph_scope()):
        out = build_model(config).eval()(g)
        assert out.shape == (1, 10) and torch.isfinite(out).all()
