"""short_rows: the last-dim sums and copies equal PyTorch's sum(-1) and broadcasting."""
import torch

from geaet_dgl.nn.short_rows import along_last_dim, last_dim_sums


def test_last_dim_sums_match_sum_also_for_a_strided_input():
    x = torch.randn(50, 4, 10, dtype=torch.float64)
    torch.testing.assert_close(last_dim_sums(x), x.sum(-1, keepdim=True), rtol=1e-14, atol=1e-14)
    strided = torch.randn(10, 4, 50, dtype=torch.float64).transpose(0, 2)  # (50, 4, 10), not contiguous
    torch.testing.assert_close(last_dim_sums(strided), strided.sum(-1, keepdim=True), rtol=1e-14, atol=1e-14)


def test_along_last_dim_is_the_broadcast_as_a_contiguous_tensor():
    per_row, like = torch.randn(50, 4, 1), torch.empty(50, 4, 10)
    copied = along_last_dim(per_row, like)
    assert copied.is_contiguous() and copied.shape == like.shape
    x = torch.randn(50, 4, 10)
    assert torch.equal(x * copied, x * per_row)
