"""``geaet-dgl partition`` and partition folders: one-line errors, nothing half-written, no folder broken."""
import json
import os

import dgl
import pytest
import torch
from click.testing import CliRunner

from geaet_dgl import cli
from geaet_dgl.data.errors import DataError
from geaet_dgl.distgraph import partition as partition_module
from geaet_dgl.distgraph.engine import read_partitions
from geaet_dgl.distgraph.partition import check_matches_graph, partition_file, read_sidecar
from tests.distgraph.conftest import planted_graph
from tests.training.tiny import one_thread


def _save(path, graph):
    dgl.save_graphs(str(path), [graph])
    return str(path)


def _without_edges():
    g = planted_graph(300)
    bare = dgl.graph(([], []), num_nodes=300)
    for key, value in g.ndata.items():
        bare.ndata[key] = value
    return bare


def _one_training_node():
    g = planted_graph(300)
    mask = torch.zeros(300, dtype=torch.bool)
    mask[int(g.ndata["train_mask"].nonzero()[0])] = True
    g.ndata["train_mask"] = mask
    return g


def _heterograph():
    from tests.commands.test_train_hetero_masks import _graph

    return _graph(count=20)


@pytest.mark.parametrize("make, parts, words", [(_without_edges, 2, "has no edges"),
                                                (_one_training_node, 3, "1 training node"),
                                                (_heterograph, 2, "is a heterograph")],
                         ids=["no-edges", "one-training-node", "heterograph"])
@pytest.mark.slow
def test_graphs_that_cannot_be_partitioned_are_one_line_and_leave_nothing(tmp_path, make, parts, words):
    """Were TypeError, KeyError: 2 (with part0/ left behind) and KeyError: '_N'."""
    path = _save(tmp_path / "g.bin", make())
    with one_thread():
        result = CliRunner().invoke(cli.main, ["partition", path, "--parts", str(parts), "--out", str(tmp_path / "p")])
    assert result.exit_code == 2 and result.output.startswith("error: ") and words in result.output, result.output
    assert len(result.output.strip().splitlines()) == 1
    assert not (tmp_path / "p").exists()


@pytest.mark.slow
def test_a_failure_inside_dgls_partitioner_leaves_the_folder_as_it_was(tmp_path, monkeypatch):
    path = _save(tmp_path / "g.bin", planted_graph(300))
    out = tmp_path / "p"
    out.mkdir()
    (out / "notes.txt").write_text("mine")

    def fails_half_way(graph, name, parts, folder, **kwargs):
        os.makedirs(os.path.join(folder, "part0"))
        raise KeyError(1)

    monkeypatch.setattr(partition_module.dgl.distributed, "partition_graph", fails_half_way)
    with pytest.raises(DataError, match=r"DGL could not partition .* into 2 parts \(KeyError: 1\); try fewer"):
        partition_file(path, 2, str(out))
    assert sorted(os.listdir(out)) == ["notes.txt"]


@pytest.mark.slow
def test_a_folder_holding_another_graph_is_refused_and_kept(tmp_path):
    first = _save(tmp_path / "first.bin", planted_graph(300, seed=1))
    second = _save(tmp_path / "second.bin", planted_graph(300, seed=2))
    out = str(tmp_path / "p")
    config = partition_file(first, 2, out).config
    before = {name: os.path.getmtime(os.path.join(out, name)) for name in os.listdir(out)}
    with pytest.raises(DataError, match=r"holds the partitions of .*first\.bin; .* another --out"):
        partition_file(second, 2, out)
    assert {name: os.path.getmtime(os.path.join(out, name)) for name in os.listdir(out)} == before
    parts = read_partitions(config)
    check_matches_graph(config, read_sidecar(config), parts.num_nodes, parts.num_edges)  # still whole


@pytest.mark.slow
def test_partitioning_the_same_graph_again_replaces_the_old_set(tmp_path):
    path = _save(tmp_path / "g.bin", planted_graph(300))
    out = str(tmp_path / "p")
    partition_file(path, 3, out)
    config = partition_file(path, 2, out).config
    assert sorted(os.listdir(out)) == ["g.json", "geaet-partition.json", "orig_nids.pt", "part0", "part1"]
    assert read_partitions(config).num_parts == 2


@pytest.mark.slow
def test_a_touched_graph_file_still_matches_and_a_changed_one_says_how(tmp_path):
    """The message was 'a file of 47872 bytes, this one has 47872 bytes' for a file whose mtime alone changed."""
    graph = planted_graph(300)
    path = _save(tmp_path / "g.bin", graph)
    config = partition_file(path, 2, str(tmp_path / "p")).config
    parts, sidecar = read_partitions(config), read_sidecar(config)
    stat = os.stat(path)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # touched: the same content
    check_matches_graph(config, sidecar, parts.num_nodes, parts.num_edges)
    graph.ndata["feat"][0, 0] += 1.0  # the same size, other content
    _save(path, graph)
    assert os.path.getsize(path) == stat.st_size
    with pytest.raises(DataError) as caught:
        check_matches_graph(config, sidecar, parts.num_nodes, parts.num_edges)
    message = str(caught.value)
    assert "other content of the same size" in message and "modified at" in message
    assert f"{stat.st_size} bytes, this one has {stat.st_size} bytes" not in message


@pytest.mark.slow
def test_resume_of_a_partitioned_run_that_crashed_before_its_first_checkpoint(tmp_path):
    """Said only "checkpoint RUN/last.pt does not exist" (from a trainer), without the --overwrite hint."""
    path = _save(tmp_path / "g.bin", planted_graph(300))
    config = partition_file(path, 2, str(tmp_path / "p")).config
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    from geaet_dgl.distgraph.launch import RUN_MARKER, partitioned_run_config
    from geaet_dgl.training import run_dir as files

    files.write_config(run_dir, partitioned_run_config(config, None, {}, threads=1).to_dict())
    (run_dir / RUN_MARKER).write_text(json.dumps({"partitions": config, "nproc": 2, "machine": 0, "ip_config": None}))
    with one_thread():
        result = CliRunner().invoke(cli.main, ["train", "--resume", str(run_dir)])
    assert result.exit_code == 2 and "has no last.pt to resume from" in result.output, result.output
    assert "plus --overwrite (without --resume)" in result.output
    assert not (run_dir / "dist-logs").exists()  # refused before any process started


@pytest.mark.slow
def test_partitioned_runs_count_metis_parts_per_step_by_default(tmp_path):
    """The geaet-node preset's batch_size=4 (parts per step) became 4-node trainer batches: BatchNorm then saw
    fewer than 2 rows and every trainer died with a ValueError traceback. --batch-size now counts METIS parts
    per trainer and step, as --sampler cluster does in one process."""
    from geaet_dgl.distgraph.launch import partitioned_run_config
    from geaet_dgl.config.presets import get_preset

    path = _save(tmp_path / "g.bin", planted_graph(300))
    config = partition_file(path, 2, str(tmp_path / "p")).config
    run = partitioned_run_config(config, None, {}, threads=1)
    assert run.data.sampler == "cluster" and run.train.batch_size == get_preset("geaet-node").train.batch_size
    assert partitioned_run_config(config, None, {"train.batch_size": "2"}, threads=1).train.batch_size == 2

