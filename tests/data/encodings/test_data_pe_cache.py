"""The on-disk PE cache: reuse, verification, atomic writes."""

import logging

import pytest
import torch

from geaet_dgl.data.encodings import pe_cache
from geaet_dgl.atomic import atomic_write
from geaet_dgl.data.generated.synthetic import synthetic_mnist_like


@pytest.fixture
def graphs():
    return synthetic_mnist_like(12, num_nodes=20, min_nodes=5, k=4, seed=1).graphs


def cache_once(graphs, folder, **kw):
    args = dict(tag="train_from0", k=4, norm="sym", stamp="s1", progress=False)
    args.update(kw)
    return pe_cache.cached_split_pe(graphs, folder, **args)


def forbid_compute(monkeypatch):
    def fail(*a, **k):
        raise AssertionError("PE recomputed although a valid cache exists")

    monkeypatch.setattr(pe_cache, "compute_split_pe", fail)


def test_second_call_reads_the_cache(tmp_path, graphs, monkeypatch):
    first = cache_once(graphs, tmp_path)
    files = list(tmp_path.glob("geaet_pe_*.pt"))
    assert len(files) == 1 and "train_from0_n12_k4_sym" in files[0].name
    forbid_compute(monkeypatch)
    second = cache_once(graphs, tmp_path)
    for name, tensor in first.tensors().items():
        torch.testing.assert_close(second.tensors()[name], tensor)


def test_cached_values_equal_direct_computation(tmp_path, graphs):
    pe = cache_once(graphs, tmp_path, rwse_k=3)
    pe_cache.attach_pe(graphs, pe)
    fresh = synthetic_mnist_like(12, num_nodes=20, min_nodes=5, k=4, seed=1, rwse_k=3).graphs
    for g, ref in zip(graphs, fresh):
        torch.testing.assert_close(g.ndata["lap_pe"], ref.ndata["lap_pe"])
        torch.testing.assert_close(g.ndata["lap_eigval"], ref.ndata["lap_eigval"])
        torch.testing.assert_close(g.ndata["rwse"], ref.ndata["rwse"])


def test_truncated_cache_is_detected_and_rebuilt(tmp_path, graphs, caplog):
    first = cache_once(graphs, tmp_path)
    path = next(tmp_path.glob("geaet_pe_*.pt"))
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with caplog.at_level(logging.WARNING, logger="geaet_dgl.data.encodings.pe_cache"):
        again = cache_once(graphs, tmp_path)
    assert "unreadable" in caplog.text
    torch.testing.assert_close(again.lap_pe, first.lap_pe)
    assert pe_cache.load_pe_cache(path, _meta()) is not None  # rewritten, valid again


def _meta(**kw):
    meta = {"k": 4, "norm": "sym", "rwse_k": None, "tag": "train_from0", "stamp": "s1"}
    meta.update(kw)
    return meta


def test_flipped_bytes_fail_the_checksum(tmp_path, graphs, caplog):
    cache_once(graphs, tmp_path)
    path = next(tmp_path.glob("geaet_pe_*.pt"))
    payload = torch.load(path, weights_only=True)
    payload["tensors"]["lap_pe"][3, 1] += 0.5  # silent corruption of a stored value
    torch.save(payload, path)
    with caplog.at_level(logging.WARNING, logger="geaet_dgl.data.encodings.pe_cache"):
        assert pe_cache.load_pe_cache(path, _meta()) is None
    assert "checksum" in caplog.text


def test_other_settings_or_source_are_not_used(tmp_path, graphs, monkeypatch):
    cache_once(graphs, tmp_path)
    path = next(tmp_path.glob("geaet_pe_*.pt"))
    assert pe_cache.load_pe_cache(path, _meta(stamp="other")) is None
    assert pe_cache.load_pe_cache(path, _meta(norm="none")) is None
    assert pe_cache.load_pe_cache(path, _meta()) is not None


def test_a_larger_cache_serves_a_prefix(tmp_path, graphs, monkeypatch):
    full = cache_once(graphs, tmp_path)
    forbid_compute(monkeypatch)
    head = cache_once(graphs[:5], tmp_path)
    assert len(head.num_nodes) == 5
    torch.testing.assert_close(head.lap_pe, full.lap_pe[: int(full.num_nodes[:5].sum())])


def test_cache_for_other_graphs_is_rejected(tmp_path, graphs):
    cache_once(graphs, tmp_path)
    others = synthetic_mnist_like(12, num_nodes=20, min_nodes=5, k=4, seed=2).graphs
    pe = cache_once(others, tmp_path)  # same tag and stamp, different graph sizes -> recompute
    assert torch.equal(pe.num_nodes, torch.tensor([g.num_nodes() for g in others]))


def test_atomic_write_keeps_the_old_file_on_failure(tmp_path):
    target = tmp_path / "f.bin"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError):
        with atomic_write(target) as handle:
            handle.write(b"partial")
            raise RuntimeError("killed")
    assert target.read_bytes() == b"old"
    assert list(tmp_path.iterdir()) == [target]  # no temp file left behind
    with atomic_write(target) as handle:
        handle.write(b"new")
    assert target.read_bytes() == b"new"


def test_graphs_above_the_dense_size_are_not_refused_for_dense_memory(monkeypatch):
    """A large graph goes the sparse route: the dense (N x N) size check must not refuse it first."""
    import dgl
    import torch

    from geaet_dgl.data.encodings import pe_cache

    monkeypatch.setattr(pe_cache, "free_memory_bytes", lambda: 2**20)  # 1 MiB "free": any dense check refuses
    n = pe_cache.DENSE_MAX_NODES + 500
    g = dgl.graph((torch.arange(n - 1), torch.arange(1, n)), num_nodes=n)  # a path
    pe = pe_cache.compute_split_pe([g], 3, progress=False)
    assert pe.lap_pe.shape == (n, 3) and float(pe.lap_eigval[0, 0]) < 1e-6
    with pytest.raises(pe_cache.DataError, match="dense positional encoding"):
        pe_cache.compute_split_pe([dgl.graph(([0], [1]), num_nodes=pe_cache.DENSE_MAX_NODES)], 3, progress=False)
