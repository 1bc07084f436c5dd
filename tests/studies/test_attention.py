"""Attention maps: PNG + JSON whose GEANet weights are doubly normalised; self-attention weights."""
import json

import dgl
import numpy as np
import pytest
import torch
from click.testing import CliRunner

from geaet_dgl import cli
from geaet_dgl.nn.self_attention import GraphSelfAttention

from .tiny import tiny_args


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("attn") / "run"
    from tests.training.tiny import one_thread
    with one_thread():
        result = CliRunner().invoke(cli.main, ["train", "--dataset", "synthetic", "--epochs", "1", "--out",
                                               str(run_dir)] + tiny_args("model.num_layers=2"))
    assert result.exit_code == 0, result.output
    return run_dir / "best.pt"


@pytest.mark.slow
def test_attention_command_writes_png_and_doubly_normalised_weights(checkpoint, tmp_path):
    out = tmp_path / "maps"
    result = CliRunner().invoke(cli.main, ["attention", "--checkpoint", str(checkpoint), "--graphs", "0", "3",
                                           "--split", "test", "--out", str(out)])
    assert result.exit_code == 0, result.output
    for index in (0, 3):
        assert (out / f"graph{index}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    payload = json.loads((out / "attention.json").read_text())
    assert [g["index"] for g in payload["graphs"]] == [0, 3] and "alone" in payload["note"]
    for graph in payload["graphs"]:
        n = graph["num_nodes"]
        assert len(graph["geanet"]["layers"]) == 2 and len(graph["transformer"]["layers"]) == 2
        for layer in graph["geanet"]["layers"]:
            weights = np.array(layer["weights"])  # (N, H, S)
            assert weights.shape == (n, 4, 2)
            # second normalisation: each node's weights over the S slots sum to one, per head
            np.testing.assert_allclose(weights.sum(axis=-1), 1.0, atol=1e-5)
            np.testing.assert_allclose(layer["score"], weights.max(axis=-1).mean(axis=-1), atol=1e-6)
            assert min(layer["score"]) >= 1 / 2 - 1e-6 and max(layer["score"]) <= 1 + 1e-6
        for layer in graph["transformer"]["layers"]:  # received attention: rows sum to 1 -> scores sum to 1
            assert sum(layer["received"]) == pytest.approx(1.0, abs=1e-5) and len(layer["received"]) == n


def test_bad_graph_index_is_one_line_error(checkpoint, tmp_path):
    result = CliRunner().invoke(cli.main, ["attention", "--checkpoint", str(checkpoint), "--graphs", "99",
                                           "--out", str(tmp_path)])
    assert result.exit_code == 2 and "out of range" in result.output


def test_self_attention_weights_reproduce_its_output():
    torch.manual_seed(0)
    graph = dgl.batch([dgl.rand_graph(5, 10), dgl.rand_graph(3, 4)])
    module = GraphSelfAttention(8, 2).eval()
    x = torch.randn(8, 8)
    plain, _ = module(graph, x)
    assert module.last_attention is None  # nothing kept unless keep_attention
    module.keep_attention = True
    out, _ = module(graph, x)
    weights = module.last_attention
    assert torch.equal(out, plain) and weights.shape == (2, 2, 5, 5)
    assert torch.allclose(weights[1, :, :3, 3:], torch.zeros(1))  # padding keys get nothing
    torch.testing.assert_close(weights[1, :, :3, :3].sum(-1), torch.ones(2, 3))
    # out == out_proj(concat_h W_h V_h) for the first graph
    v = torch.nn.functional.linear(x[:5], module.in_proj_weight[16:], module.in_proj_bias[16:]).view(5, 2, 4)
    manual = torch.einsum("hqk,khd->qhd", weights[0], v).reshape(5, 8)
    torch.testing.assert_close(module.out_proj(manual), plain[:5], rtol=1e-5, atol=1e-5)
