"""fast_exp: both kernels give exp to rounding, and the layers that use it give the same outputs either way."""
import dgl
import pytest
import torch

from geaet_dgl.nn import fast_exp
from geaet_dgl.nn.external_attention import double_normalize
from geaet_dgl.nn.performer import PerformerAttention
from geaet_dgl.nn.self_attention import softmax_


@pytest.fixture(params=[False, True], ids=["exp", "exp2"])
def kernel(request, monkeypatch):
    monkeypatch.setattr(fast_exp, "USE_EXP2", request.param)
    return request.param


def test_exp_matches_float64_exp_to_float32_rounding(kernel):
    x = torch.linspace(-80.0, 20.0, 10_001)
    expected = x.double().exp()
    got = fast_exp.exp_(x.clone())
    assert fast_exp.uses_exp2(x) == kernel
    # relative error: the product x log2(e) rounds once (|x| 2^-24), then exp2's own ulp or two
    assert ((got.double() - expected) / expected).abs().max() < 80 * 2.0 ** -24 + 4e-7
    scaled = fast_exp.exp_scaled_(x.double() * fast_exp.logit_scale(x))
    torch.testing.assert_close(scaled, expected, rtol=1e-13, atol=0)


def test_environment_variable_forces_the_kernel(monkeypatch):
    for value, expected in (("exp", False), ("EXP2", True)):
        monkeypatch.setenv(fast_exp.ENV_VAR, value)
        assert fast_exp._choose_exp2() is expected


def _layer_outputs():
    torch.manual_seed(0)
    graphs = dgl.batch([dgl.rand_graph(n, 3 * n) for n in (7, 12, 5)])
    x = torch.randn(graphs.num_nodes(), 8, dtype=torch.float64)
    att = PerformerAttention(8, 2, head_dim=4, pad_keys=True).double().eval()
    with torch.no_grad():
        dense, _ = att(graphs, x)
    train_x = x.clone().requires_grad_()
    train_out, _ = att(graphs, train_x)
    train_out.square().sum().backward()
    scores = torch.randn(6, 4, 37, dtype=torch.float64) * 5
    scores[..., 30:] = -1e30  # padding keys
    geanet = double_normalize(torch.randn(50, 4, 10, dtype=torch.float64) * 3, None)
    return [dense, train_out, train_x.grad, softmax_(scores), geanet]


def test_layers_agree_whichever_kernel(monkeypatch):
    monkeypatch.setattr(fast_exp, "USE_EXP2", False)
    with_exp = _layer_outputs()
    monkeypatch.setattr(fast_exp, "USE_EXP2", True)
    with_exp2 = _layer_outputs()
    for a, b in zip(with_exp, with_exp2):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-14)
    assert (with_exp2[3][..., 30:] == 0).all()  # padding keys exactly 0 either way
