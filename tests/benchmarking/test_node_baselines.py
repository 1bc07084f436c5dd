"""The GCN and MLP baselines of benchmarks/node_vs_baselines.py: the graph helps the GCN where the features alone are weak."""
import torch

from geaet_dgl.data.generated.node_graphs import planted_partition
from geaet_dgl.benchmarking.node_baselines import TwoLayer, format_table, train_baseline


def test_gcn_uses_the_graph_and_the_mlp_does_not():
    torch.set_num_threads(1)
    graph = planted_partition(300, 3, p_in=0.08, p_out=0.004, signal=0.3, seed=0)
    gcn = train_baseline(graph, "gcn", seed=0, hidden=16, epochs=60)
    mlp = train_baseline(graph, "mlp", seed=0, hidden=16, epochs=60)
    assert gcn["test"] > mlp["test"] + 0.15, (gcn, mlp)
    assert 1 <= gcn["epoch"] <= 60 and 0.0 <= mlp["val"] <= 1.0


def test_two_layer_shapes_and_table():
    graph = planted_partition(50, 2, p_in=0.2, p_out=0.01, seed=1)
    for kind in ("gcn", "mlp"):
        out = TwoLayer(kind, graph.ndata["feat"].shape[1], 8, 2)(graph, graph.ndata["feat"])
        assert out.shape == (50, 2)
    row = {"test": {"mean": 0.5, "std": 0.1, "n": 3}, "val": {"mean": 0.6, "std": 0.0, "n": 3}, "seconds": 2.0}
    assert "| 2-layer MLP | 50.00 ± 10.00 | 60.00 ± 0.00 | 3 | 2 |" in format_table({"mlp": row})
