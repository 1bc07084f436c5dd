"""Shared graph cases (one graph, a batch of unequal sizes, isolated nodes, no edges, self-loops) and the session's
settings: one torch thread, one trial load per graph-file content."""
import hashlib
import os
import sys

os.environ.setdefault("DGLBACKEND", "pytorch")

import geaet_dgl  # noqa: E402,F401  (imports dgl without ogb's network check)
import dgl  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from geaet_dgl.data import load_graph_file  # noqa: E402
from tests.training.tiny import one_thread  # noqa: E402

#: The module that reads graph files (and trial-loads them in a forked child first).
GRAPH_FILE_READER = sys.modules[load_graph_file.__module__]


@pytest.fixture(scope="session", autouse=True)
def _one_thread_session():
    """The whole session on one torch thread (and ``$OMP_NUM_THREADS=1`` for the runs and processes it starts), module
    and session fixtures included: the tests' models and graphs are tiny, and two threads that wait on each other on a
    busy 2-core machine made the hetero model's learning test 15x slower (227 s against 15 s)."""
    with one_thread():
        yield


@pytest.fixture(autouse=True)
def _single_thread():
    """One thread again after a test that changed it (a test of thread settings sets them itself)."""
    with one_thread():
        yield


@pytest.fixture(scope="session", autouse=True)
def _trial_load_once_per_content():
    """Each content of a graph file (and list of graphs read) gets its trial load in a forked child once per session.

    Reading one file the way the commands do loads it several times (its first graph, to tell a node file,
    then all graphs, for the run's settings and again for its data), each after a trial load of the same bytes
    in a child (DGL aborts the process on some damaged files); a second trial of identical bytes can show
    nothing new, and forking this process takes 0.5-2 s on 2 busy cores. Every load in this process still
    happens, every new content (a damaged copy included) is still tried in a child first, and a trial that
    failed is not remembered.
    """
    original = GRAPH_FILE_READER._trial_load
    passed = set()

    def trial_load(path, idx=None):
        if not os.path.isfile(path):
            return original(path, idx)
        with open(path, "rb") as handle:
            key = (hashlib.sha1(handle.read()).hexdigest(), None if idx is None else tuple(idx))
        if key not in passed:
            original(path, idx)
            passed.add(key)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(GRAPH_FILE_READER, "_trial_load", trial_load)
        yield


def random_graph(num_nodes: int, num_edges: int, seed: int, self_loops: bool = False) -> dgl.DGLGraph:
    gen = torch.Generator().manual_seed(seed)
    src = torch.randint(0, num_nodes, (num_edges,), generator=gen)
    dst = torch.randint(0, num_nodes, (num_edges,), generator=gen)
    if not self_loops:
        keep = src != dst
        src, dst = src[keep], dst[keep]
    return dgl.graph((src, dst), num_nodes=num_nodes)


def graph_cases():
    """Name -> list of graphs (a batch is built from the list)."""
    return {
        "single": [random_graph(7, 20, 0)],
        "unequal_batch": [random_graph(7, 20, 1), random_graph(3, 5, 2), random_graph(11, 40, 3)],
        "isolated_nodes": [dgl.graph(([0, 1], [1, 0]), num_nodes=5), random_graph(4, 8, 4)],
        "no_edges": [dgl.graph(([], []), num_nodes=4), random_graph(5, 9, 5)],
        "self_loops": [random_graph(6, 18, 6, self_loops=True)],
        "single_node": [dgl.graph(([], []), num_nodes=1), random_graph(4, 6, 7)],
    }


@pytest.fixture(params=sorted(graph_cases()))
def graph_case(request):
    return request.param, graph_cases()[request.param]


def with_features(graphs, dim: int, seed: int = 0, pe_k: int = 8):
    """Attach random node/edge features of width ``dim`` and an (N, pe_k) 'lap_pe'."""
    gen = torch.Generator().manual_seed(seed)
    out = []
    for g in graphs:
        g = g.clone()
        g.ndata["h"] = torch.randn(g.num_nodes(), dim, generator=gen)
        g.edata["h"] = torch.randn(g.num_edges(), dim, generator=gen)
        g.ndata["feat"] = torch.rand(g.num_nodes(), 3, generator=gen)
        g.edata["feat"] = torch.rand(g.num_edges(), 1, generator=gen)
        g.ndata["lap_pe"] = torch.randn(g.num_nodes(), pe_k, generator=gen)
        out.append(g)
    return out
