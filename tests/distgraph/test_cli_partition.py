"""The command line of the single-graph engine: `partition`, and `train --partitions` refusing bad input in one line."""
import pytest
import os

import dgl
from click.testing import CliRunner

from geaet_dgl import cli

from .conftest import planted_graph


def _run(*args):
    return CliRunner().invoke(cli.main, list(args))


@pytest.mark.slow
def test_partition_prints_sizes_and_edge_cut(graph_file, tmp_path):
    result = _run("partition", graph_file, "--parts", "2", "--out", str(tmp_path / "parts"))
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert lines[0].startswith("partitioned 1000 nodes") and lines[0].endswith("planted.json")
    assert [line.split(":")[0].strip() for line in lines[1:]] == ["part 0", "part 1", "edge cut"]
    assert os.path.isfile(tmp_path / "parts" / "part1" / "graph.dgl")


@pytest.mark.slow
def test_a_file_of_many_graphs_is_refused_in_one_line(tmp_path):
    path = str(tmp_path / "many.bin")
    dgl.save_graphs(path, [planted_graph(60, seed=1), planted_graph(60, seed=2)])
    result = _run("partition", path, "--parts", "2", "--out", str(tmp_path / "parts"))
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and "holds 2 graphs" in result.stderr and "--nproc" in result.stderr
    assert not os.path.exists(tmp_path / "parts")


@pytest.mark.slow
def test_train_partitions_refuses_bad_input_before_starting_anything(graph_file, tmp_path):
    parts = tmp_path / "parts"
    assert _run("partition", graph_file, "--parts", "2", "--out", str(parts)).exit_code == 0
    config = str(parts / "planted.json")
    clash = _run("train", "--partitions", config, "--dataset", graph_file)
    assert clash.exit_code == 2 and "drop --dataset" in clash.stderr
    uneven = _run("train", "--partitions", config, "--nproc", "3", "--out", str(tmp_path / "run"))
    assert uneven.exit_code == 2 and "multiple of 2" in uneven.stderr
    os.remove(parts / "part0" / "node_feat.dgl")
    missing = _run("train", "--partitions", config, "--out", str(tmp_path / "run"))
    assert missing.exit_code == 2 and missing.stderr.count("\n") == 1 and "partition 0" in missing.stderr
    assert not os.path.exists(tmp_path / "run" / "dist-logs")  # no process was started


def test_train_on_partitions_names_every_data_option_given():
    """The options that would be dropped on partitions are named, in the order of the command line's help, and
    an option left out (None, an empty tuple) is not."""
    result = _run("train", "--partitions", "p.json", "--dataset", "mnist", "--task", "node-classification",
                  "--split", "0.8", "0.1", "0.1", "--set", "data.depth=3", "--seeds", "1", "2", "--sampler", "random")
    assert result.exit_code == 2
    assert result.output.strip().splitlines()[-1].endswith(
        "drop --dataset, --seeds, --sampler, --task, --split, --set data.depth")
    # what the trainers read is not dropped: it passes this check (and stops at the missing partition file)
    kept = _run("train", "--partitions", "p.json", "--set", "data.num_parts=8", "--set", "data.dist_scoring=parts")
    assert kept.exit_code == 2 and "drop" not in kept.output and "p.json was not written by `geaet-dgl partition`" in kept.output
    result = _run("train", "--partitions", "p.json", "--machine", "0")
    assert result.exit_code == 2 and "go together" in result.output
