"""One graph with node masks (samplers, options, changed data, label warnings): each case a test that failed first."""
import multiprocessing

import dgl
import pytest
import torch
from click.testing import CliRunner

from geaet_dgl import cli
from geaet_dgl.data.nodes.node_graph import load_node_graph
from geaet_dgl.data.options import LoadOptions
from geaet_dgl.training.node_batches import make_node_sampler
from tests.distgraph.conftest import planted_graph
from tests.training.tiny import one_thread

TINY_NODE = ["--set", "model.hidden_dim=16", "--set", "model.num_layers=1", "--set", "model.geanet.unit_size=4",
             "--set", "model.pe=none", "--no-progress"]


@pytest.fixture(scope="module")
def small_file(tmp_path_factory):
    """A 300-node graph with node masks (under the 1,500 nodes that make one part of about 1,000)."""
    path = tmp_path_factory.mktemp("one_graph") / "small.bin"
    dgl.save_graphs(str(path), [planted_graph(300)])
    return path


def _cli(*args):
    with one_thread():
        return CliRunner().invoke(cli.main, [str(a) for a in args])


def _one_line(result):
    lines = [line for line in result.output.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error: ") or line.startswith("Error: ")]
    assert result.exit_code == 2 and len(errors) == 1 and "Traceback" not in result.output, result.output
    return errors[0]


def _cluster_epoch(path, num_parts, queue):
    data = load_node_graph(LoadOptions(data_file=path, progress=False))
    sampler = make_node_sampler(data, "cluster", num_parts=num_parts)
    batches = list(sampler.epoch_batches(batch_size=4, seed=0, epoch=0))
    queue.put((sampler.steps_per_epoch(4), [g.num_nodes() for g in batches], sampler.max_batch_nodes(4)))


@pytest.mark.slow
@pytest.mark.parametrize("num_parts", [0, 1], ids=["default-parts", "num_parts=1"])
def test_cluster_sampler_with_one_part_trains_on_the_whole_graph(small_file, num_parts):
    """Was SIGFPE (METIS divides by zero for one part) and killed the process: run it in a forked child."""
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_cluster_epoch, args=(str(small_file), num_parts, queue))
    child.start()
    child.join(60)
    assert child.exitcode == 0, f"the process died with {child.exitcode}"
    steps, sizes, largest = queue.get(timeout=5)
    assert steps == 1 and sizes == [300] and largest == 300


@pytest.mark.slow
def test_cluster_batch_of_one_part_carries_the_graph(small_file):
    data = load_node_graph(LoadOptions(data_file=small_file, progress=False))
    batch = next(iter(make_node_sampler(data, "cluster", num_parts=1).epoch_batches(4, 0, 0)))
    for key in ("feat", "label", "train_mask"):
        assert torch.equal(batch.ndata[key], data.graph.ndata[key])
    edges = lambda g: sorted(zip(*(t.tolist() for t in g.edges())))  # noqa: E731
    assert edges(batch) == edges(data.graph)


@pytest.fixture(scope="module")
def many_file(tmp_path_factory):
    from tests.own_graph_files import write_task_file

    path = tmp_path_factory.mktemp("many") / "many.bin"
    write_task_file(path, "graph-classification", count=20)
    return path


@pytest.mark.parametrize("dataset, option, named", [
    ("many", ["--sampler", "cluster"], "--sampler"), ("many", ["--set", "data.num_parts=3"], "data.num_parts"),
    ("synthetic", ["--sampler", "random"], "--sampler"), ("synthetic", ["--set", "data.num_parts=2"], "data.num_parts")])
@pytest.mark.slow
def test_sampler_options_where_no_graph_is_cut_are_refused(many_file, tmp_path, dataset, option, named):
    """Were dropped without a word on a file of many graphs and on a named dataset."""
    source = str(many_file) if dataset == "many" else dataset
    line = _one_line(_cli("train", "--dataset", source, "--epochs", 1, "--out", tmp_path / "run", *option))
    assert named in line and "many graphs" in line or "without node masks" in line, line
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("option, named", [(["--task", "node-classification"], "--task"),
                                           (["--split", "0.5", "0.25", "0.25"], "--split"),
                                           (["--split-file", "s.json"], "--split-file"),
                                           (["--set", "data.split_seed=2"], "--set data.split_seed")])
def test_task_and_split_with_partitions_are_refused(tmp_path, option, named):
    line = _one_line(_cli("train", "--partitions", tmp_path / "parts" / "g.json", "--out", tmp_path / "run", *option))
    assert f"drop {named}" in line, line
    assert not (tmp_path / "run").exists()


@pytest.fixture(scope="module")
def node_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("node_run")
    path = root / "small.bin"
    dgl.save_graphs(str(path), [planted_graph(300)])
    result = _cli("train", "--dataset", path, "--epochs", 2, "--out", root / "run", *TINY_NODE)
    assert result.exit_code == 0, result.output
    return root / "run", path


def _rewrite(path, change):
    graphs, _ = dgl.load_graphs(str(path))
    change(graphs[0])
    dgl.save_graphs(str(path), graphs)


def _snapshot(folder):
    return {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.iterdir()}


@pytest.mark.slow
def test_allow_changed_data_with_other_masks_is_refused_not_mislabelled(node_run):
    """--allow-changed-data said "going on with the run's own split" but scored the file's new masks."""
    run_dir, path = node_run
    original = path.read_bytes()
    try:
        def move_val_to_train(g):
            val = g.ndata["val_mask"].nonzero().flatten()[:10]
            g.ndata["val_mask"][val] = False
            g.ndata["train_mask"][val] = True

        _rewrite(path, move_val_to_train)
        before = _snapshot(run_dir)
        for args in (["eval", "--checkpoint", run_dir / "best.pt"], ["train", "--resume", run_dir]):
            line = _one_line(_cli(*args, "--allow-changed-data"))
            assert "node masks or their labels" in line and "cannot be restored" in line, line
            assert "going on with the run's own split" not in line
        assert _snapshot(run_dir) == before
    finally:
        path.write_bytes(original)


@pytest.mark.slow
def test_allow_changed_data_with_the_same_masks_goes_on(node_run, caplog):
    run_dir, path = node_run
    original = path.read_bytes()
    try:
        _rewrite(path, lambda g: g.ndata["feat"].add_(0.01))
        result = _cli("eval", "--checkpoint", run_dir / "best.pt", "--allow-changed-data")
        assert result.exit_code == 0, result.output
        assert "going on only if its node masks and their labels are still the run's split" in result.output
    finally:
        path.write_bytes(original)


@pytest.mark.slow
def test_labels_with_gaps_and_classes_absent_from_training_are_warned(tmp_path):
    """An outlier label of 200,000 made a 200,001-class model without a word."""
    graph = planted_graph(300)
    labels = graph.ndata["label"].clone()
    outlier = int(graph.ndata["test_mask"].nonzero()[0])
    labels[outlier] = 200_000
    graph.ndata["label"] = labels
    path = tmp_path / "gaps.bin"
    dgl.save_graphs(str(path), [graph])
    result = _cli("train", "--dataset", path, "--epochs", 1, "--out", tmp_path / "run", *TINY_NODE,
                  "--set", "model.attention=none")
    assert "the labels use 4 of the class ids 0..200,000 (199,997 never appear: 3, 4, 5, 6, 7, ..." in result.output
    assert "class(es) 200000 appear in val/test but never in the training split" in result.output


@pytest.mark.slow
def test_graph_labels_absent_from_training_are_warned(tmp_path):
    from geaet_dgl.data.run_splits import load_splits
    from geaet_dgl.training import make_run_config
    from tests.own_graph_files import write_task_file

    path = tmp_path / "many.bin"
    graphs, _ = write_task_file(path, "graph-classification", count=20)
    labels = torch.zeros(20, dtype=torch.int64)
    labels[-2:] = 1  # class 1 only on the last graphs: the test split of a 0.5/0.4/0.1 split in order
    dgl.save_graphs(str(path), graphs, {"label": labels})
    split = {"train": list(range(10)), "val": list(range(10, 18)), "test": [18, 19]}
    (tmp_path / "split.json").write_text(__import__("json").dumps(split))
    run = make_run_config(str(path), None, {}, {"split_file": str(tmp_path / "split.json")}, threads=1)
    from geaet_dgl.data.validation import warn_label_gaps
    from geaet_dgl.data.run_splits import split_labels

    warnings = warn_label_gaps(split_labels(load_splits(run.data, 0)), str(path))
    assert warnings == [f"{path}: class(es) 1 appear in val/test but never in the training split; the model cannot "
                        "learn them: move some of their examples into training"]
    assert warn_label_gaps({"train": torch.tensor([0, 1, 2]), "val": torch.tensor([2, 1])}, "x") == []
    assert warn_label_gaps({"train": torch.tensor([0.5, 3.0])}, "x") == []  # regression targets: no classes
