"""Laplacian PE and RWSE against independent dense computations."""

import dgl
import numpy as np
import pytest
import torch
from scipy.sparse import csgraph

from geaet_dgl.data import DataError, laplacian_pe, random_walk_se
from geaet_dgl.data.generated.synthetic import synthetic_mnist_like


def directed_knn_graph(n=12, seed=0):
    """A directed graph like the MNIST kNN graphs (some edges one-way)."""
    return synthetic_mnist_like(1, num_nodes=n, k=4, seed=seed).graphs[0]


def independent_laplacian(g, norm):
    """Laplacian from scipy.sparse.csgraph on the symmetrised 0/1 adjacency."""
    n = g.num_nodes()
    src, dst = (t.numpy() for t in g.edges())
    adj = np.zeros((n, n))
    adj[src, dst] = 1
    adj = np.maximum(adj, adj.T)
    np.fill_diagonal(adj, 0)
    return csgraph.laplacian(adj, normed=(norm == "sym"))


@pytest.mark.parametrize("norm", ["sym", "none"])
def test_laplacian_pe_solves_the_eigenproblem(norm):
    g = directed_knn_graph()
    k = 6
    vecs, vals = laplacian_pe(g, k, norm)
    assert vecs.shape == (g.num_nodes(), k) and vals.shape == (g.num_nodes(), k)
    assert vecs.dtype == torch.float32 and vals.dtype == torch.float32
    lap = independent_laplacian(g, norm)
    lam = vals[0].double().numpy()
    assert torch.all(vals == vals[0])  # eigenvalues repeated for every node
    v = vecs.double().numpy()
    np.testing.assert_allclose(lap @ v, v * lam, atol=1e-5)  # L v = lambda v
    np.testing.assert_allclose(np.linalg.norm(v, axis=0), 1.0, atol=1e-5)
    np.testing.assert_allclose(lam, np.linalg.eigvalsh(lap)[:k], atol=1e-5)  # the k smallest, ascending
    assert lam[0] == pytest.approx(0.0, abs=1e-6)  # trivial eigenpair kept
    if norm == "none":
        np.testing.assert_allclose(np.abs(v[:, 0]), 1 / np.sqrt(g.num_nodes()), atol=1e-5)


def test_laplacian_pe_ignores_direction_and_duplicates():
    g = directed_knn_graph(seed=3)
    src, dst = g.edges()
    both = dgl.graph((torch.cat([src, dst, src]), torch.cat([dst, src, dst])), num_nodes=g.num_nodes())
    _, vals_a = laplacian_pe(g, 5)
    _, vals_b = laplacian_pe(both, 5)
    torch.testing.assert_close(vals_a, vals_b)


def test_laplacian_pe_pads_small_graphs_with_zeros():
    g = dgl.graph(([0, 1], [1, 2]), num_nodes=3)
    vecs, vals = laplacian_pe(g, 5, "none")
    assert vecs.shape == (3, 5)
    assert torch.all(vecs[:, 3:] == 0) and torch.all(vals[:, 3:] == 0)
    np.testing.assert_allclose(vals[0, :3].numpy(), [0.0, 1.0, 3.0], atol=1e-5)  # path graph P3


def test_laplacian_pe_sym_isolated_node_matches_pyg_convention():
    """PyG's get_laplacian('sym') puts 1 on the diagonal of isolated nodes too."""
    g = dgl.graph(([0], [1]), num_nodes=3)
    _, vals = laplacian_pe(g, 3, "sym")
    np.testing.assert_allclose(vals[0].numpy(), [0.0, 1.0, 2.0], atol=1e-5)


def test_laplacian_pe_rejects_bad_arguments():
    g = directed_knn_graph()
    with pytest.raises(DataError, match="normalisation"):
        laplacian_pe(g, 4, "rw")
    with pytest.raises(DataError, match="k must be >= 0"):
        laplacian_pe(g, -1)


def test_laplacian_pe_of_size_zero_is_empty():
    g = directed_knn_graph()
    vecs, vals = laplacian_pe(g, 0)
    assert vecs.shape == (g.num_nodes(), 0) and vals.shape[-1] == 0


def test_models_without_laplacian_pe_load_no_eigenvectors():
    from geaet_dgl.config import ModelConfig
    from geaet_dgl.data.run_splits import data_pe_sizes

    assert data_pe_sizes(ModelConfig(pe="none", pe_k=8)) == (0, None)
    assert data_pe_sizes(ModelConfig(pe="rwse", pe_k=16)) == (0, 16)
    assert data_pe_sizes(ModelConfig(pe="eslappe", pe_k=8)) == (8, None)


def test_rwse_equals_explicit_matrix_powers():
    g = directed_knn_graph(n=11, seed=2)
    n, k = g.num_nodes(), 5
    src, dst = (t.numpy() for t in g.edges())
    adj = np.zeros((n, n))
    np.add.at(adj, (src, dst), 1)
    walk = adj / adj.sum(axis=1, keepdims=True)
    expected = np.stack([np.diag(np.linalg.matrix_power(walk, t)) for t in range(1, k + 1)], axis=1)
    got = random_walk_se(g, k)
    assert got.shape == (n, k) and got.dtype == torch.float32
    np.testing.assert_allclose(got.numpy(), expected, atol=1e-6)
    assert torch.all(got[:, 0] == 0)  # no self loops: cannot return in one step


def test_rwse_agrees_with_dgl_random_walk_pe():
    g = directed_knn_graph(n=10, seed=4)
    torch.testing.assert_close(random_walk_se(g, 6), dgl.random_walk_pe(g, 6), atol=1e-5, rtol=1e-5)


def test_rwse_node_without_out_edges_is_zero():
    g = dgl.graph(([0, 1], [1, 0]), num_nodes=3)
    got = random_walk_se(g, 4)
    np.testing.assert_allclose(got[2].numpy(), 0.0)
    np.testing.assert_allclose(got[0].numpy(), [0, 1, 0, 1], atol=1e-7)


@pytest.mark.parametrize("norm", ["sym", "none"])
def test_encodings_are_finite_on_awkward_graphs(graph_case, norm):
    """Isolated nodes, no edges, self loops, a single node (shared cases in tests/conftest.py)."""
    _, graphs = graph_case
    for g in graphs:
        vecs, vals = laplacian_pe(g, 8, norm)
        walks = random_walk_se(g, 4)
        n = g.num_nodes()
        assert vecs.shape == vals.shape == (n, 8) and walks.shape == (n, 4)
        assert torch.isfinite(vecs).all() and torch.isfinite(vals).all() and torch.isfinite(walks).all()
        assert (vals >= 0).all() and ((walks >= 0) & (walks <= 1 + 1e-6)).all()


def _awkward_edges(seed=0):
    """Three random components, two isolated nodes, a self loop and a duplicate edge: 64 nodes."""
    rng = np.random.default_rng(seed)
    src, dst, start = [], [], 0
    for size in (30, 20, 12):
        s = rng.integers(0, size, 3 * size)
        d = (s + rng.integers(1, size, 3 * size)) % size
        src.append(s + start)
        dst.append(d + start)
        start += size
    src = np.concatenate(src + [[5, 5, 7]])  # self loop 5-5, duplicate
    dst = np.concatenate(dst + [[5, 6, 8]])
    return src.astype(np.int64), dst.astype(np.int64), start + 2


def _eigenspaces(vals, tol=1e-6):
    """Index ranges of equal eigenvalues; the last is open (its space may go on past k)."""
    groups, i = [], 0
    while i < len(vals):
        j = i
        while j + 1 < len(vals) and abs(vals[j + 1] - vals[i]) < tol:
            j += 1
        groups.append((i, j + 1))
        i = j + 1
    return groups[:-1]


@pytest.mark.parametrize("norm", ["sym", "none"])
def test_sparse_laplacian_pe_agrees_with_dense_up_to_sign_and_rotation(norm):
    from geaet_dgl.data.encodings.positional_encoding import laplacian_pe_from_edges

    src, dst, n = _awkward_edges()
    k = 12
    dense_vecs, dense_vals = laplacian_pe_from_edges(src, dst, n, k, norm, method="dense")
    sparse_vecs, sparse_vals = laplacian_pe_from_edges(src, dst, n, k, norm, method="sparse")
    np.testing.assert_allclose(sparse_vals, dense_vals, atol=1e-5)
    lap = independent_laplacian(dgl.graph((torch.from_numpy(src), torch.from_numpy(dst)), num_nodes=n), norm)
    v = sparse_vecs.astype(np.float64)
    np.testing.assert_allclose(lap @ v, v * sparse_vals.astype(np.float64), atol=2e-5)
    np.testing.assert_allclose(v.T @ v, np.eye(k), atol=2e-5)
    groups = _eigenspaces(dense_vals.astype(np.float64))
    assert any(stop - start > 1 for start, stop in groups)  # a degenerate space is compared too
    for start, stop in groups:  # same eigenspace: equal orthogonal projectors
        a, b = dense_vecs[:, start:stop].astype(np.float64), v[:, start:stop]
        np.testing.assert_allclose(a @ a.T, b @ b.T, atol=1e-4)


def test_sparse_pe_when_more_components_than_k():
    """Every one of the k smallest eigenvalues is 0: a basis of the null space, largest components first."""
    from geaet_dgl.data.encodings.positional_encoding import laplacian_pe_from_edges

    src, dst, n = _awkward_edges()
    vecs, vals = laplacian_pe_from_edges(src, dst, n, 3, "none", method="sparse")
    np.testing.assert_allclose(vals, 0.0)
    np.testing.assert_allclose(np.abs(vecs[:30, 0]), 1 / np.sqrt(30), rtol=1e-6)  # the 30-node component
    np.testing.assert_allclose(np.abs(vecs[30:50, 1]), 1 / np.sqrt(20), rtol=1e-6)


def test_sparse_rwse_equals_dense():
    from geaet_dgl.data.encodings.positional_encoding import random_walk_se_from_edges

    src, dst, n = _awkward_edges(seed=1)
    dense = random_walk_se_from_edges(src, dst, n, 7, method="dense")
    sparse = random_walk_se_from_edges(src, dst, n, 7, method="sparse")
    np.testing.assert_allclose(sparse, dense, atol=1e-7)


def test_sparse_rwse_blocks_shrink_to_their_budget(monkeypatch):
    from geaet_dgl.data.encodings import sparse_encodings
    from geaet_dgl.data.encodings.positional_encoding import random_walk_se_from_edges

    src, dst, n = _awkward_edges(seed=2)
    dense = random_walk_se_from_edges(src, dst, n, 6, method="dense")
    monkeypatch.setattr(sparse_encodings, "RWSE_BLOCK_NNZ", 40)  # a handful of rows per block
    np.testing.assert_allclose(random_walk_se_from_edges(src, dst, n, 6, method="sparse"), dense, atol=1e-7)


def test_large_graphs_never_build_dense_matrices(monkeypatch):
    from geaet_dgl.data.encodings import positional_encoding as pe

    def refuse(*args, **kwargs):
        raise AssertionError("dense N x N matrix built for a large graph")

    monkeypatch.setattr(pe, "DENSE_MAX_NODES", 100)
    monkeypatch.setattr(pe, "undirected_adjacency", refuse)
    monkeypatch.setattr(pe.np.linalg, "eigh", refuse)  # no dense eigh either
    rng = np.random.default_rng(0)
    n = 1200
    src, dst = rng.integers(0, n, 5 * n), rng.integers(0, n, 5 * n)
    g = dgl.graph((torch.from_numpy(src), torch.from_numpy(dst)), num_nodes=n)
    vecs, vals = laplacian_pe(g, 4, "sym")
    walks = random_walk_se(g, 3)
    assert vecs.shape == (n, 4) and walks.shape == (n, 3)
    monkeypatch.undo()
    np.testing.assert_allclose(walks.numpy(), pe.random_walk_se_from_edges(src, dst, n, 3, method="dense"),
                               atol=1e-7)


def test_rwse_that_would_fill_the_graph_is_refused(monkeypatch):
    from geaet_dgl.data.encodings import sparse_encodings

    monkeypatch.setattr(sparse_encodings, "RWSE_MAX_WORK", 1e5)
    rng = np.random.default_rng(0)
    n = 2000
    src, dst = rng.integers(0, n, 10 * n), rng.integers(0, n, 10 * n)
    with pytest.raises(DataError, match=r"RWSE with k=16 .* neighbourhoods cover most of the graph; use a smaller"):
        sparse_encodings.sparse_random_walk_se(src, dst, n, 16)


def test_pe_method_is_checked():
    from geaet_dgl.data.encodings.positional_encoding import laplacian_pe_from_edges

    with pytest.raises(DataError, match="auto, dense, sparse"):
        laplacian_pe_from_edges(np.array([0]), np.array([1]), 2, 1, method="lanczos")


def _grid_with_extras(side=24):
    """A side x side grid (symmetric eigenvalues: degenerate pairs) and a 5-node path: two components."""
    ids = np.arange(side * side).reshape(side, side)
    src = np.concatenate([ids[:, :-1].ravel(), ids[:-1, :].ravel(), side * side + np.arange(4)])
    dst = np.concatenate([ids[:, 1:].ravel(), ids[1:, :].ravel(), side * side + np.arange(1, 5)])
    return src, dst, side * side + 5


@pytest.mark.parametrize("solver", ["lobpcg", "auto"])  # (ARPACK's Lanczos misses partners of degenerate pairs here)
@pytest.mark.parametrize("norm", ["sym", "none"])
def test_sparse_eigensolvers_agree_with_dense_eigh(solver, norm):
    """LOBPCG with the multigrid preconditioner and Lanczos: the dense spectrum, residuals, eigenspace projectors."""
    from geaet_dgl.data.encodings.sparse_encodings import sparse_laplacian_eig

    src, dst, n = _grid_with_extras()
    lap = independent_laplacian(dgl.graph((torch.from_numpy(src), torch.from_numpy(dst)), num_nodes=n), norm)
    dense_vals, dense_vecs = np.linalg.eigh(lap)
    k = 9
    vals, vecs = sparse_laplacian_eig(src, dst, n, k, norm, solver=solver)
    np.testing.assert_allclose(vals, dense_vals[:k], atol=1e-6 * max(1.0, dense_vals[-1]))
    np.testing.assert_allclose(lap @ vecs, vecs * vals, atol=1e-4 * max(1.0, dense_vals[-1]))
    np.testing.assert_allclose(vecs.T @ vecs, np.eye(k), atol=1e-6)
    groups = _eigenspaces(dense_vals[:k + 1], tol=1e-6)  # closed groups only: the last may go on past k
    assert any(stop - start > 1 for start, stop in groups)  # a degenerate space is compared too
    for start, stop in groups:
        a, b = dense_vecs[:, start:stop], vecs[:, start:stop]
        np.testing.assert_allclose(a @ a.T, b @ b.T, atol=1e-4)


def test_multigrid_is_used_on_meshes_and_not_on_expanders():
    """The cheap test of :func:`multigrid_preconditioner`: a grid coarsens, a random graph's coarse level fills."""
    from geaet_dgl.data.encodings.sparse_encodings import laplacian_csr, multigrid_preconditioner, symmetric_adjacency

    src, dst, n = _grid_with_extras(40)
    adj = symmetric_adjacency(src, dst, n)
    assert multigrid_preconditioner(laplacian_csr(adj, np.asarray(adj.sum(1)).ravel(), "sym")) is not None
    rng = np.random.default_rng(0)
    n = 20000
    adj = symmetric_adjacency(rng.integers(0, n, 5 * n), rng.integers(0, n, 5 * n), n)
    assert multigrid_preconditioner(laplacian_csr(adj, np.asarray(adj.sum(1)).ravel(), "sym")) is None
