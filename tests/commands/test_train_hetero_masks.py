"""One heterograph with train/val/test masks on its target node type: a transductive node task end to end."""
import json

import dgl
import pytest
import torch
from click.testing import CliRunner

from geaet_dgl import cli
from geaet_dgl.data.errors import DataError
from geaet_dgl.data.generated.hetero import author_paper_graphs
from geaet_dgl.data.nodes.node_graph import inspect_node_graph, load_node_graph
from geaet_dgl.data.options import LoadOptions
from geaet_dgl.scoring.predict import read_predictions
from geaet_dgl.models import build_model
from geaet_dgl.models.geaet import set_degree_statistics
from geaet_dgl.nn.hetero_mpnn import RelationMPNN
from geaet_dgl.training import make_run_config
from tests.training.tiny import one_thread

from tests.commands.test_train_hetero import TINY as HETERO_TINY, _args as hetero_args

#: The heterograph tests' tiny model, two layers of width 16 (the geaet-node preset's 4 GEANet heads).
TINY = {**HETERO_TINY, "model.hidden_dim": 16, "model.num_layers": 2, "model.geanet.unit_size": 4,
        "train.lr": 0.01}


def _args(settings=None):
    return hetero_args({**TINY, **(settings or {})})


def _graph(count=60, seed=0):
    """The generated author/paper graphs as one heterograph; papers labelled and split 50/25/25 by masks."""
    graphs, labels = author_paper_graphs(count, seed=seed)
    g = dgl.batch(graphs)
    papers = g.num_nodes("paper")
    g.nodes["paper"].data["label"] = torch.cat(labels)
    order = torch.randperm(papers, generator=torch.Generator().manual_seed(seed))
    for name, part in zip(("train_mask", "val_mask", "test_mask"), (order[:papers // 2],
                                                                     order[papers // 2:3 * papers // 4],
                                                                     order[3 * papers // 4:])):
        mask = torch.zeros(papers, dtype=torch.bool)
        mask[part] = True
        g.nodes["paper"].data[name] = mask
    return g


def _cli(*args):
    with one_thread():
        return CliRunner().invoke(cli.main, [str(a) for a in args])


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("hetero_masks")
    path = root / "papers.bin"
    graph = _graph()
    dgl.save_graphs(str(path), [graph])
    out = _cli("train", "--dataset", path, "--epochs", 40, "--out", root / "run", "--no-progress", *_args())
    assert out.exit_code == 0, out.output
    return root / "run", path, graph


@pytest.mark.slow
def test_masked_heterograph_learns_and_eval_reproduces_the_test_metric(run):
    run_dir, path, graph = run
    config = json.loads((run_dir / "config.json").read_text())
    assert config["model"]["hetero"]["target_ntype"] == "paper" and config["model"]["head"] == "node"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["test_metric"] > 0.75, summary  # two balanced classes: chance is 0.5
    out = _cli("eval", "--checkpoint", run_dir / "best.pt", "--split", "test", "--json")
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout.strip().splitlines()[-1])["metric"] == pytest.approx(summary["test_metric"])


@pytest.mark.slow
def test_predict_nodes_test_writes_one_row_per_test_paper(run, tmp_path):
    run_dir, path, graph = run
    preds = tmp_path / "preds.csv"
    out = _cli("predict", "--checkpoint", run_dir / "best.pt", "--graphs", path, "--nodes", "test", "--out", preds,
               "--no-progress")
    assert out.exit_code == 0, out.output
    rows = read_predictions(preds)
    test_nodes = graph.nodes["paper"].data["test_mask"].nonzero().squeeze(1).tolist()
    assert [int(row["node"]) for row in rows] == test_nodes


@pytest.mark.slow
def test_loss_and_metrics_read_only_the_masked_target_nodes(tmp_path):
    """Changing the labels of unmasked papers changes nothing the data gives the trainer."""
    graph = _graph(20)
    path = tmp_path / "g.bin"
    dgl.save_graphs(str(path), [graph])
    data = load_node_graph(LoadOptions(data_file=path, progress=False))
    assert data.target_ntype == "paper" and data.sizes()["test"] == int(graph.nodes["paper"].data["test_mask"].sum())
    assert torch.equal(data.labels("train"), graph.nodes["paper"].data["label"][graph.nodes["paper"].data["train_mask"]])


def _bad(tmp_path, change, target=None):
    graph = _graph(10)
    change(graph)
    path = tmp_path / "bad.bin"
    dgl.save_graphs(str(path), [graph])
    with pytest.raises(DataError) as info:
        inspect_node_graph(path, target_ntype=target)
    message = str(info.value)
    assert "\n" not in message and str(path) in message
    return message


def _set(ntype, name, value):
    def change(g):
        g.nodes[ntype].data[name] = value(g)
    return change


@pytest.mark.slow
def test_bad_masks_on_the_target_type_are_one_line_errors(tmp_path):
    papers = lambda g: g.num_nodes("paper")  # noqa: E731
    assert "nodes['paper'].data['val_mask'] has type torch.int64" in _bad(
        tmp_path, _set("paper", "val_mask", lambda g: torch.arange(papers(g)) % 2 * 3))
    assert "shape" in _bad(tmp_path, _set("paper", "test_mask", lambda g: torch.ones(papers(g), 2, dtype=torch.bool)))
    assert "selects no node" in _bad(tmp_path, _set("paper", "train_mask",
                                                    lambda g: torch.zeros(papers(g), dtype=torch.bool)))
    assert "in both train_mask and test_mask" in _bad(
        tmp_path, _set("paper", "train_mask", lambda g: g.nodes["paper"].data["test_mask"].clone()))
    assert "but no val_mask" in _bad(tmp_path, lambda g: g.nodes["paper"].data.pop("val_mask"))
    message = _bad(tmp_path, _set("author", "train_mask", lambda g: torch.ones(g.num_nodes("author"),
                                                                               dtype=torch.bool)))
    assert "'author' has node masks but the target type" in message
    assert "has no data['label']" in _bad(tmp_path, lambda g: None, target="author")


@pytest.mark.slow
def test_masks_on_several_heterographs_are_refused(tmp_path):
    path = tmp_path / "two.bin"
    dgl.save_graphs(str(path), [_graph(5), _graph(5, seed=1)])
    with pytest.raises(DataError, match="masks split the nodes of one graph"):
        inspect_node_graph(path)


@pytest.mark.slow
def test_sampled_batches_of_a_heterograph_are_refused_naming_sampler_full(tmp_path):
    path = tmp_path / "g.bin"
    dgl.save_graphs(str(path), [_graph(10)])
    out = _cli("train", "--dataset", path, "--epochs", 1, "--out", tmp_path / "run", "--no-progress",
               "--sampler", "random", *_args())
    assert out.exit_code != 0
    assert "use --sampler full" in out.output and "Traceback" not in out.output


@pytest.mark.slow
def test_pna_on_a_heterograph_takes_each_relation_s_degrees(tmp_path):
    """model.mpnn=pna trains on a masked heterograph; each relation's PNA averages that relation's in-degrees."""
    path = tmp_path / "g.bin"
    graph = _graph(10)
    dgl.save_graphs(str(path), [graph])
    out = _cli("train", "--dataset", path, "--epochs", 1, "--out", tmp_path / "run", "--no-progress",
               *_args({"model.mpnn": "pna"}))
    assert out.exit_code == 0, out.output
    run = make_run_config("file", data={"data_file": str(path)}, overrides={**TINY, "model.mpnn": "pna"})
    model = build_model(run.model)
    set_degree_statistics(model, [graph])
    relation_mpnns = [m for m in model.modules() if isinstance(m, RelationMPNN)]
    assert len(relation_mpnns) == run.model.num_layers
    for mpnn in relation_mpnns:
        for relation, conv in zip(graph.canonical_etypes, mpnn.convs):
            src, dst = graph.edges(etype=relation)
            degrees = [sum(1 for d in dst.tolist() if d == node) for node in range(graph.num_nodes(relation[2]))]
            assert float(conv.aggr_module.avg_deg_lin) == pytest.approx(sum(degrees) / len(degrees))
