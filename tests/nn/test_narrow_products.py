"""narrow_products: attention's products and their gradients equal baddbmm / bmm with autograd."""
import pytest
import torch

from geaet_dgl.nn.narrow_products import attention_scores, weighted_values


def _leaves(*shapes, dtype=torch.float64):
    return [torch.randn(*shape, dtype=dtype, requires_grad=True) for shape in shapes]


def _gradients(out, leaves, grad):
    return torch.autograd.grad(out, leaves, grad)


@pytest.mark.parametrize("bias_shape", [(12, 1, 9), (12, 9, 9), (1, 9, 9)])
def test_attention_scores_and_gradients_match_baddbmm(bias_shape):
    torch.manual_seed(0)
    bias, query, key = _leaves(bias_shape, (12, 9, 5), (12, 9, 5))
    grad = torch.randn(12, 9, 9, dtype=torch.float64)
    out = attention_scores(bias, query, key, 0.3)
    expected = torch.baddbmm(bias, query, key.transpose(1, 2), alpha=0.3)
    torch.testing.assert_close(out, expected, rtol=1e-13, atol=1e-13)
    for got, want in zip(_gradients(out, [bias, query, key], grad), _gradients(expected, [bias, query, key], grad)):
        assert got.shape == want.shape
        torch.testing.assert_close(got, want, rtol=1e-13, atol=1e-13)


def test_attention_scores_constant_bias_gets_no_gradient():
    query, key = _leaves((4, 6, 3), (4, 6, 3))
    out = attention_scores(torch.zeros(4, 1, 6, dtype=torch.float64), query, key, 1.0)
    out.sum().backward()
    assert query.grad is not None and key.grad is not None


def test_weighted_values_and_gradients_match_bmm_also_for_strided_inputs():
    torch.manual_seed(1)
    weights, value = _leaves((12, 9, 9), (12, 9, 5))
    strided = value.detach().transpose(1, 2).contiguous().transpose(1, 2).requires_grad_()  # (12, 9, 5), col-major
    grad = torch.randn(12, 5, 9, dtype=torch.float64).transpose(1, 2)  # a strided incoming gradient
    for v in (value, strided):
        out = weighted_values(weights, v)
        expected = torch.bmm(weights, v)
        torch.testing.assert_close(out, expected, rtol=1e-13, atol=1e-13)
        for got, want in zip(_gradients(out, [weights, v], grad), _gradients(expected, [weights, v], grad)):
            torch.testing.assert_close(got, want, rtol=1e-13, atol=1e-13)


def test_float32_agrees_with_bmm_to_rounding():
    torch.manual_seed(2)
    weights = torch.softmax(torch.randn(64, 80, 80), -1)
    value = torch.randn(64, 80, 10)
    torch.testing.assert_close(weighted_values(weights, value), torch.bmm(weights, value), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("length,width", [(38, 16), (30, 13), (40, 13), (20, 24), (80, 10)])
def test_both_orientations_match_bmm_with_their_gradients(length, width):
    """Each (W, n) takes the orientation transposed_is_faster picks; both give bmm's values and gradients."""
    from geaet_dgl.nn.narrow_products import transposed_is_faster

    torch.manual_seed(3)
    weights, value, query, key = _leaves((6, length, length), (6, length, width), (6, length, width),
                                         (6, length, width))
    bias = torch.randn(6, 1, length, dtype=torch.float64)
    grad_out = torch.randn(6, length, width, dtype=torch.float64)
    out = weighted_values(weights, value)
    expected = torch.bmm(weights, value)
    torch.testing.assert_close(out, expected, rtol=1e-13, atol=1e-13)
    for got, want in zip(_gradients(out, [weights, value], grad_out), _gradients(expected, [weights, value], grad_out)):
        torch.testing.assert_close(got, want, rtol=1e-13, atol=1e-13)
    grad_scores = torch.randn(6, length, length, dtype=torch.float64)
    scores = attention_scores(bias, query, key, 0.5)
    want_scores = torch.baddbmm(bias, query, key.transpose(1, 2), alpha=0.5)
    torch.testing.assert_close(scores, want_scores, rtol=1e-13, atol=1e-13)
    for got, want in zip(_gradients(scores, [query, key], grad_scores),
                         _gradients(want_scores, [query, key], grad_scores)):
        torch.testing.assert_close(got, want, rtol=1e-13, atol=1e-13)
    transposed = out.transpose(1, 2).is_contiguous() and not out.is_contiguous()
    assert transposed == transposed_is_faster(length, width)  # the orientation the rule picks is the one used
