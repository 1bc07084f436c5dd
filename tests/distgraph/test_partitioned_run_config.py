"""A partitioned run is configured from the partition folder's record, without loading the graph file."""
import dgl
import pytest

from geaet_dgl.data.errors import DataError
from geaet_dgl.distgraph import launch
from geaet_dgl.distgraph.partition import partition_file
from geaet_dgl.training.new_run import make_run_config
from tests.distgraph.conftest import planted_graph


@pytest.fixture
def partitioned(tmp_path):
    path = str(tmp_path / "g.bin")
    dgl.save_graphs(path, [planted_graph(300)])
    return path, partition_file(path, 2, str(tmp_path / "p")).config


def test_the_launcher_reads_the_record_not_the_graph_and_configures_the_same_run(partitioned, monkeypatch):
    path, config = partitioned
    from_file = make_run_config(path, None, {"data.sampler": "cluster", "train.epochs": "3"}, threads=1)

    def no_graph_reads(*args, **kwargs):
        raise AssertionError("the launcher loaded the graph file")

    import geaet_dgl.data.nodes.node_graph as node_graph
    import geaet_dgl.data.run_settings as run_settings
    import geaet_dgl.training.new_run as new_run

    for module, name in ((node_graph, "load_first_graph"), (node_graph, "read_graph_file"),
                         (run_settings, "is_node_graph_file"), (new_run, "is_node_graph_file")):
        monkeypatch.setattr(module, name, no_graph_reads)
    from_record = launch.partitioned_run_config(config, None, {"train.epochs": "3"}, threads=1)
    assert from_record.to_dict() == from_file.to_dict()  # widths, head, loss, task, the file's identity


def test_a_damaged_record_is_refused_in_one_line(partitioned):
    import json
    import os

    _, config = partitioned
    sidecar_path = os.path.join(os.path.dirname(config), "geaet-partition.json")
    with open(sidecar_path) as handle:
        sidecar = json.load(handle)
    for damage in ({"features": {"node_in_feats": -3}}, {"features": {"bogus": 1}}, {"task": "graph-regression"},
                   {"num_outputs": 0}, {"features": {"node_in_feats": 2, "node_vocab_sizes": "ab"}},
                   {"features": {"node_in_feats": 1, "node_vocab_sizes": [3.5]}}):
        with open(sidecar_path, "w") as handle:
            json.dump({**sidecar, **damage}, handle)
        with pytest.raises(DataError, match="damaged.*partition the graph again"):
            launch.partitioned_run_config(config, None, {}, threads=1)


def test_a_file_changed_since_is_read_not_trusted_to_the_record(partitioned):
    """Touched (or changed) since partitioning: the record is not used; the file is read and the launcher's
    check against the partitions decides."""
    import os

    path, config = partitioned
    from geaet_dgl.distgraph.partition import read_sidecar

    assert launch.recorded_graph_file(read_sidecar(config)) is not None
    stat = os.stat(path)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10 ** 9))
    assert launch.recorded_graph_file(read_sidecar(config)) is None
    run = launch.partitioned_run_config(config, None, {}, threads=1)
    assert run.model.out_feats == 3 and run.data.file_identity["sha256"] == read_sidecar(config)["graph_file"]["sha256"]
