"""`partition --parts 400` on a graph of 120 nodes names the fix (it named none)."""
import pytest
import dgl

from geaet_dgl.data.generated.node_graphs import planted_partition

from .helpers import one_line_error, run_cli


@pytest.mark.slow
def test_more_parts_than_nodes_names_how_many_to_pass(tmp_path):
    path = tmp_path / "g.bin"
    graph = planted_partition(120, 3, p_in=0.08, p_out=0.01, signal=0.7, seed=0)
    dgl.save_graphs(str(path), [graph])
    train_nodes = int(graph.ndata["train_mask"].sum())
    line = one_line_error(run_cli(["partition", path, "--parts", "400", "--out", tmp_path / "parts"]))
    assert line == (f"error: --parts 400 is more than the graph's 120 nodes; each partition needs nodes of its own, "
                    f"and a training node: pass --parts {train_nodes} or fewer")
    assert not (tmp_path / "parts").exists()
