"""The piecewise-linear ReLU MLP against its direct evaluation: values and every gradient."""
import pytest
import torch

from geaet_dgl.nn.scalar_mlp import scalar_relu_mlp


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_values_and_gradients_match_direct_mlp(seed):
    torch.manual_seed(seed)
    first, second = torch.nn.Linear(1, 40), torch.nn.Linear(40, 1)
    with torch.no_grad():  # degenerate units: zero slope, active and inactive
        first.weight[3], first.bias[3] = 0.0, 0.5
        first.weight[5], first.bias[5] = 0.0, -1.0
    r = (torch.rand(3000, 1) * 20 - 5).requires_grad_()
    params = [r, first.weight, first.bias, second.weight, second.bias]
    direct = second(torch.relu(first(r)))
    upstream = torch.randn_like(direct)
    expected = torch.autograd.grad(direct, params, upstream)
    fast = scalar_relu_mlp(r, first, second)
    got = torch.autograd.grad(fast, params, upstream)
    torch.testing.assert_close(fast, direct, atol=1e-5, rtol=1e-5)
    for a, b in zip(got, expected):
        torch.testing.assert_close(a, b, atol=1e-4, rtol=1e-4)


def test_gradcheck_in_double():
    torch.manual_seed(0)
    first, second = torch.nn.Linear(1, 6).double(), torch.nn.Linear(6, 1).double()
    r = (torch.rand(50, 1, dtype=torch.float64) * 4).requires_grad_()
    fn = lambda r, w1, b1, w2, b2: scalar_relu_mlp(  # noqa: E731
        r, _Lin(w1.view(6, 1), b1), _Lin(w2.view(1, 6), b2))
    assert torch.autograd.gradcheck(fn, (r, first.weight, first.bias, second.weight, second.bias))


class _Lin:
    def __init__(self, weight, bias):
        self.weight, self.bias = weight, bias
