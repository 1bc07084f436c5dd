"""HKdiagSE, ElstaticSE, Graphormer's spatial types and degrees against independent dense computations; the cache."""
import dgl
import numpy as np
import pytest
import scipy.linalg
import torch

from geaet_dgl.data.encodings import se_cache
from geaet_dgl.data.encodings.se_cache import SPATIAL_PAD, StructuralSpec, attach_structural
from geaet_dgl.data.encodings.structural_encoding import (electrostatic_se_from_edges, graphormer_degrees,
                                                heat_kernel_diag_from_edges, spatial_types_from_edges)
from tests.conftest import graph_cases, random_graph


def _edges(g):
    return tuple(t.numpy().astype(np.int64) for t in g.edges())


def _dense_laplacian(g):
    n = g.num_nodes()
    adj = np.zeros((n, n))
    for u, v in zip(*_edges(g)):
        if u != v:
            adj[u, v] = adj[v, u] = 1.0
    return np.diag(adj.sum(1)) - adj, adj


def _components(adj):
    n, label = len(adj), -np.ones(len(adj), dtype=int)
    for start in range(n):
        if label[start] < 0:
            stack, label[start] = [start], start
            while stack:
                u = stack.pop()
                for v in np.nonzero(adj[u])[0]:
                    if label[v] < 0:
                        label[v] = start
                        stack.append(v)
    return label


@pytest.mark.parametrize("case", sorted(graph_cases()))
def test_heat_kernel_diagonal_is_the_matrix_exponential_less_the_null_space(case):
    for g in graph_cases()[case]:
        lap, adj = _dense_laplacian(g)
        label = _components(adj)
        comp_size = np.array([np.sum(label == label[j]) for j in range(len(label))])
        times = [1.0, 2.0, 5.0]
        got = heat_kernel_diag_from_edges(*_edges(g), g.num_nodes(), times)
        for k, t in enumerate(times):
            expected = np.diag(scipy.linalg.expm(-t * lap)) - 1.0 / comp_size
            np.testing.assert_allclose(got[:, k], expected, atol=1e-6)


def test_electrostatic_statistics_against_loops():
    g = dgl.to_simple(dgl.to_bidirected(random_graph(9, 30, 3)))
    src, dst = _edges(g)
    lap, adj = _dense_laplacian(g)
    n = g.num_nodes()
    assert len(set(_components(adj))) == 1  # connected: L^+ = (L + J/n)^-1 - J/n
    pinv = np.linalg.inv(lap + 1.0 / n) - 1.0 / n
    v = np.array([[pinv[i, j] - pinv[j, j] for j in range(n)] for i in range(n)])
    deg = adj.sum(1)
    got = electrostatic_se_from_edges(src, dst, n)
    for j in range(n):
        col, row = [v[i, j] for i in range(n)], list(v[j])
        std = lambda xs: (sum((x - sum(xs) / n) ** 2 for x in xs) / (n - 1)) ** 0.5  # noqa: E731
        expected = [min(col), max(col), sum(col) / n, std(col), min(row), max(col), sum(row) / n, std(row),
                    sum(adj[i, j] / deg[i] * v[i, j] for i in range(n)),
                    sum(adj[j, i] / deg[j] * v[j, i] for i in range(n))]
        np.testing.assert_allclose(got[j], expected, atol=1e-5)


@pytest.mark.parametrize("case", sorted(graph_cases()))
def test_spatial_types_are_capped_directed_shortest_paths(case):
    for g in graph_cases()[case]:
        n, (src, dst) = g.num_nodes(), _edges(g)
        dist = np.full((n, n), np.inf)
        np.fill_diagonal(dist, 0)
        for u, v in zip(src, dst):
            dist[u, v] = min(dist[u, v], 1)
        for k in range(n):  # Floyd-Warshall
            for i in range(n):
                for j in range(n):
                    dist[i, j] = min(dist[i, j], dist[i, k] + dist[k, j])
        for cap in (3, 20):
            expected = np.where(np.isinf(dist), cap, np.minimum(dist, cap - 1))
            np.testing.assert_array_equal(spatial_types_from_edges(src, dst, n, cap), expected)


def test_degrees_count_each_directed_pair_once():
    src, dst = np.array([0, 0, 0, 1, 2, 2]), np.array([1, 1, 2, 2, 2, 0])
    in_deg, out_deg = graphormer_degrees(src, dst, 4)
    assert in_deg.tolist() == [1, 1, 3, 0] and out_deg.tolist() == [2, 1, 2, 0]


def test_attach_caches_and_pads(tmp_path, monkeypatch):
    graphs = [random_graph(5, 12, 0), random_graph(8, 20, 1)]
    spec = StructuralSpec(hk_times=(1.0, 2.0), elstatic=True, spatial_types=5, degrees=True)
    attach_structural(graphs, spec, tmp_path)
    assert graphs[0].ndata["spatial_types"].shape == (5, 8) and graphs[1].ndata["hkdiag_se"].shape == (8, 2)
    assert (graphs[0].ndata["spatial_types"][:, 5:] == SPATIAL_PAD).all()
    assert graphs[0].ndata["elstatic_se"].shape == (5, 10) and graphs[1].ndata["in_degree"].dtype == torch.int64
    files = list(tmp_path.iterdir())
    assert len(files) == 1
    fresh = [g.clone() for g in graphs]
    for g in fresh:
        g.ndata.clear()
    monkeypatch.setattr(se_cache, "compute_structural", lambda *a, **k: pytest.fail("recomputed"))
    attach_structural(fresh, spec, tmp_path)  # read from the cache
    for a, b in zip(graphs, fresh):
        for key in a.ndata:
            assert torch.equal(a.ndata[key], b.ndata[key])
    monkeypatch.undo()
    files[0].write_bytes(files[0].read_bytes()[:100])  # truncated: recomputed, not used
    attach_structural(fresh, spec, tmp_path)
    assert torch.equal(fresh[1].ndata["spatial_types"], graphs[1].ndata["spatial_types"])
