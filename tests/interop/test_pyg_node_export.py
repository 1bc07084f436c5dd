"""Our geom-gcn node sets written as PyG's raw files, and the check of what the reference loaded from them.

The written files are read back here the way PyG's ``Actor`` / ``WebKB`` readers parse them (plain Python,
no PyG), and compared with what the fixture wrote into DGL's raw folder: features, labels, the edges (DGL
makes them bidirected; PyG coalesces) and the 10 split masks.
"""
import json
import os

import numpy as np
import pytest
import torch
import yaml
from click.testing import CliRunner

from geaet_dgl import cli
from geaet_dgl.data.nodes.node_sets import dgl_masks, node_set_graph, read_node_set
from geaet_lab.interop import compare_nodes, node_check, pyg_node_export
from geaet_lab.interop.reference_run import CompareError
from tests.data.fixtures_node_sets import write_geom_gcn_fixture


def parse_like_pyg(folder, name, sparse):
    """x, y, coalesced edge set and the (N, 10) masks, as PyG's geom-gcn readers compute them."""
    lines = (folder / "out1_node_feature_label.txt").read_text().split("\n")[1:-1]
    rows = [line.split("\t") for line in lines]
    if sparse:
        width = max(int(c) for _, cols, _ in rows for c in cols.split(",")) + 1
        x = np.zeros((len(rows), width), dtype=np.float32)
        for node, cols, _ in rows:
            x[int(node), [int(c) for c in cols.split(",")]] = 1
        y = np.empty(len(rows), dtype=np.int64)
        for node, _, label in rows:
            y[int(node)] = int(label)
    else:
        x = np.array([[float(v) for v in cols.split(",")] for _, cols, _ in rows], dtype=np.float32)
        y = np.array([int(label) for _, _, label in rows])
    edge_lines = (folder / "out1_graph_edges.txt").read_text().split("\n")[1:-1]
    edges = {tuple(int(v) for v in line.split("\t")) for line in edge_lines}
    masks = {s: np.stack([np.load(folder / pyg_node_export.split_file(name, k))[f"{s}_mask"] for k in range(10)],
                         axis=1).astype(bool) for s in ("train", "val", "test")}
    return x, y, edges, masks


@pytest.mark.parametrize("name", ["actor", "cornell", "chameleon"])
def test_export_holds_our_graph_in_pygs_layout(tmp_path, name):
    written = write_geom_gcn_fixture(name, tmp_path / "dgl")
    graph, _, _, _ = node_set_graph(name, tmp_path / "dgl", split_index=3)
    source, _, _ = read_node_set(name, tmp_path / "dgl")
    folder, sha = pyg_node_export.write_geom_gcn(graph, dgl_masks(source), tmp_path / "pyg", name)
    expected_folder = {"actor": "Actor/raw", "cornell": "WebKB/cornell/raw",
                       "chameleon": "WikipediaNetwork/chameleon/geom_gcn/raw"}[name]
    assert folder == tmp_path / "pyg" / expected_folder
    x, y, edges, masks = parse_like_pyg(folder, name, sparse=name == "actor")
    np.testing.assert_array_equal(x, written["feat"])
    np.testing.assert_array_equal(y, written["label"])
    both_ways = {(a, b) for a, b in written["edges"]} | {(b, a) for a, b in written["edges"]}
    assert edges == both_ways  # the graph we train on: bidirected, duplicates dropped
    for i, split in enumerate(("train", "val", "test")):
        np.testing.assert_array_equal(masks[split], written["masks"][:, i].T)

    stamp = {p.name: p.stat().st_mtime_ns for p in folder.iterdir()}
    processed = folder.parent / "processed"
    processed.mkdir()
    assert pyg_node_export.write_geom_gcn(graph, dgl_masks(source), tmp_path / "pyg", name) == (folder, sha)
    assert {p.name: p.stat().st_mtime_ns for p in folder.iterdir()} == stamp and processed.is_dir()
    graph.ndata["label"][0] = (graph.ndata["label"][0] + 1) % 3  # another graph: rewritten, PyG's cache dropped
    _, other = pyg_node_export.write_geom_gcn(graph, dgl_masks(source), tmp_path / "pyg", name)
    assert other != sha and not processed.exists()
    assert json.loads((folder / pyg_node_export.SOURCE_FILE).read_text())["sha256"] == other


def test_actor_format_refuses_what_it_cannot_hold(tmp_path):
    feat = torch.tensor([[1.0, 0.0, 1.0], [0.0, 0.0, 0.0]])
    with pytest.raises(Exception, match="node 1 has no nonzero feature"):
        pyg_node_export.feature_lines(feat, torch.tensor([0, 1]), sparse=True)
    with pytest.raises(Exception, match="0/1 features only"):
        pyg_node_export.feature_lines(feat * 0.5, torch.tensor([0, 1]), sparse=True)
    with pytest.raises(Exception, match="no node uses feature column 2"):
        pyg_node_export.feature_lines(torch.tensor([[1.0, 0.0, 0.0]]), torch.tensor([0]), sparse=True)
    dense = pyg_node_export.feature_lines(torch.tensor([[0.1, 1e-8, 3.0]]), torch.tensor([2]), sparse=False)
    values = [float(v) for v in dense.split("\n")[1].split("\t")[1].split(",")]
    assert torch.equal(torch.tensor(values, dtype=torch.float32), torch.tensor([0.1, 1e-8, 3.0]))


def fake_dump(graph, source_masks, split_index, seed=0):
    """What the reference's loader returns for our export (our edges in another order), column K of the masks."""
    src, dst = graph.edges()
    order = torch.randperm(graph.num_edges(), generator=torch.Generator().manual_seed(seed))
    edge_index = torch.stack([src[order], dst[order]])
    dump = {"x": graph.ndata["feat"].clone(), "edge_index": edge_index, "y": graph.ndata["label"].clone(),
            "num_nodes": graph.num_nodes()}
    for split, mask in source_masks.items():
        dump[f"{split}_mask"] = mask[:, split_index].clone()
    return dump


def test_graph_check_compares_edges_as_sets_and_the_chosen_split(tmp_path):
    write_geom_gcn_fixture("actor", tmp_path / "dgl")
    graph, _, _, _ = node_set_graph("actor", tmp_path / "dgl", split_index=2)
    masks = dgl_masks(read_node_set("actor", tmp_path / "dgl")[0])
    dump = fake_dump(graph, masks, 2)
    assert not torch.equal(dump["edge_index"], torch.stack(graph.edges()))  # other order, same set
    report = node_check.compare_node_graph(graph, dump)
    assert report["equal"] and report["edge_sets_equal"] and report["x_max_diff"] == 0
    assert report["edges"]["ours"] == report["edges"]["reference"] == graph.num_edges()
    assert {s: m["nodes"] for s, m in report["masks"].items()} == {
        s: [int(masks[s][:, 2].sum())] * 2 for s in ("train", "val", "test")}
    assert "edges as sets of (src, dst) equal" in node_check.describe(report)

    one_way = dict(dump, edge_index=dump["edge_index"][:, dump["edge_index"][0] < dump["edge_index"][1]])
    report = node_check.compare_node_graph(graph, one_way)  # geom-gcn's own files, as PyG keeps them
    assert not report["equal"] and report["edges"]["only_ours"] == graph.num_edges() // 2
    assert report["edges"]["only_reference"] == 0
    assert not node_check.compare_node_graph(graph, fake_dump(graph, masks, 1))["equal"]  # another split
    changed = dict(dump, x=dump["x"].clone())
    changed["x"][4, 0] += 1
    report = node_check.compare_node_graph(graph, changed)
    assert not report["equal"] and report["x_max_diff"] == 1 and report["labels_equal"]
    report = node_check.compare_node_graph(graph, dict(dump, num_nodes=graph.num_nodes() + 1))
    assert not report["equal"] and node_check.describe(report).startswith("sizes differ")


def test_node_configs_map_onto_our_node_sets(tmp_path):
    assert pyg_node_export.node_set_of_config("PyG-Actor", "none") == "actor"
    assert pyg_node_export.node_set_of_config("PyG-WebKB", "Texas") == "texas"
    assert pyg_node_export.node_set_of_config("PyG-WikipediaNetwork", "squirrel") == "squirrel"
    assert pyg_node_export.node_set_of_config("PyG-Planetoid", "CiteSeer") is None
    assert pyg_node_export.node_set_of_config("OGB", "ogbg-molhiv") is None
    config = tmp_path / "zinc.yaml"
    config.write_text("dataset:\n  format: PyG-ZINC\n  name: subset\n  task: graph\n")
    with pytest.raises(CompareError, match="PyG-ZINC / name subset is not a node set"):
        compare_nodes.read_node_config(config)
    tree = {"posenc_LapPE": {"enable": True}, "posenc_RWSE": {"enable": False}, "gt": {"layers": 2}}
    assert compare_nodes.encodings_off(tree) == ["posenc_LapPE.enable", "False"]


def test_file_changes_make_one_file_for_both_sides(tmp_path):
    config = tmp_path / "actor-GPS.yaml"
    config.write_text(TINY_ACTOR_CONFIG)
    tree, _ = compare_nodes.read_node_config(config)
    changed, path = compare_nodes.changed_config(tree, {"gt.layer_type": "GCN+None", "optim.base_lr": "0.001",
                                                        "posenc_LapPE.eigen.max_freqs": "8"}, config, tmp_path)
    assert path == tmp_path / "config" / "actor-GPS.yaml" and tree["gt"]["layer_type"] == "GCN+Transformer"
    written = yaml.safe_load(path.read_text())
    assert written == changed
    assert (written["gt"]["layer_type"], written["optim"]["base_lr"], written["posenc_LapPE"]["eigen"]["max_freqs"]) \
        == ("GCN+None", 0.001, 8)
    assert {k: v for k, v in written.items() if k not in ("gt", "optim", "posenc_LapPE")} == \
        {k: v for k, v in tree.items() if k not in ("gt", "optim", "posenc_LapPE")}
    assert compare_nodes.changed_config(tree, {}, config, tmp_path) == (tree, config)
    with pytest.raises(CompareError, match="gt.layers.x: layers is a value"):
        compare_nodes.changed_config(tree, {"gt.layers.x": "1"}, config, tmp_path)
    ours = compare_nodes.reference_config_file(written, path, tmp_path)  # the reference's vocabulary
    assert yaml.safe_load(ours.read_text())["gt"]["layer_type"] == "GCN+None+None"


def test_command_refuses_graph_set_options_with_a_node_config(tmp_path):
    config = tmp_path / "actor.yaml"
    config.write_text("dataset:\n  format: PyG-Actor\n  name: none\n  task: node\n")
    ref = tmp_path / "GEAET"
    ref.mkdir()
    base = ["compare", "--against-pyg", str(ref), "--config", str(config), "--out", str(tmp_path / "out")]
    for extra, message in ((["--dataset", "mnist"], "--config names its own dataset; drop --dataset mnist"),
                           (["--lr", "0.1"], "--lr with --config"),
                           (["--limit-train", "5"], "--limit-train does not apply to a node configuration")):
        result = CliRunner().invoke(cli.main, base + extra)
        assert result.exit_code == 2 and message in result.output, result.output
    result = CliRunner().invoke(cli.main, ["compare", "--against-pyg", str(ref), "--split-index", "1", "--out",
                                           str(tmp_path / "out")])
    assert result.exit_code == 2 and "use it with --config" in result.output
    result = CliRunner().invoke(cli.main, ["compare", "--against-pyg", str(ref), "--file-set", "gt.layers=1",
                                           "--out", str(tmp_path / "out")])
    assert result.exit_code == 2 and "--file-set changes a node configuration" in result.output
    result = CliRunner().invoke(cli.main, base + ["--file-set", "gt.layers"])
    assert result.exit_code == 2 and "'gt.layers' is not KEY=VALUE (e.g. gt.layer_type=GCN+None)" in result.output
    assert not (tmp_path / "out").exists()


REF_DIR = os.environ.get("GEAET_REF_DIR")
REF_PYTHON = os.environ.get("GEAET_REF_PYTHON")

#: GraphGPS's actor-GPS.yaml, smaller (one layer, 16 channels): the keys and values its node files use.
TINY_ACTOR_CONFIG = """\
out_dir: results
metric_best: accuracy
wandb:
  use: True
  project: Actor
dataset:
  format: PyG-Actor
  name: none
  task: node
  task_type: classification
  transductive: True
  split_mode: standard
  node_encoder: True
  node_encoder_name: LapPE
  node_encoder_bn: False
  edge_encoder: False
  edge_encoder_name: DummyEdge
  edge_encoder_bn: False
posenc_LapPE:
  enable: True
  eigen:
    laplacian_norm: none
    eigvec_norm: L2
    max_freqs: 4
  model: DeepSet
  dim_pe: 4
  layers: 2
  raw_norm_type: none
train:
  mode: custom
  sampler: full_batch
  eval_period: 5
  enable_ckpt: False
model:
  type: GPSModel
  loss_fun: cross_entropy
  edge_decoding: dot
gt:
  layer_type: GCN+Transformer
  layers: 1
  n_heads: 2
  dim_hidden: 16
  dropout: 0.2
  attn_dropout: 0.0
  layer_norm: False
  batch_norm: False
gnn:
  head: node
  layers_pre_mp: 0
  layers_post_mp: 1
  dim_inner: 16
  batchnorm: True
  act: gelu
  dropout: 0.2
  agg: mean
  normalize_adj: False
optim:
  clip_grad_norm: True
  optimizer: adamW
  weight_decay: 1e-5
  base_lr: 0.0005
  max_epoch: 200
  scheduler: cosine_with_warmup
  num_warmup_epochs: 10
"""


@pytest.mark.skipif(not (REF_DIR and REF_PYTHON),
                    reason="needs the reference: GEAET_REF_DIR (checkout) and GEAET_REF_PYTHON (its venv's python)")
@pytest.mark.reference
def test_end_to_end_node_config_against_the_reference(tmp_path):
    """A fixture Actor, split 3, two epochs: PyG's loader reads our graph, the check passes, both sides train."""
    write_geom_gcn_fixture("actor", tmp_path / "dgl")
    config = tmp_path / "actor-tiny.yaml"
    config.write_text(TINY_ACTOR_CONFIG)
    out = tmp_path / "cmp"
    args = ["compare", "--against-pyg", REF_DIR, "--python", REF_PYTHON, "--config", str(config), "--data-dir",
            str(tmp_path / "dgl"), "--split-index", "3", "--seeds", "0", "--epochs", "2", "--out", str(out),
            "--threads", "1", "--no-progress"]
    first = CliRunner().invoke(cli.main, args)
    assert first.exit_code == 0, first.output
    check = json.loads((out / "graph_check.json").read_text())
    assert check["equal"] and check["nodes"] == [30, 30] and check["edges"]["only_reference"] == 0
    masks = dgl_masks(read_node_set("actor", tmp_path / "dgl")[0])
    assert check["masks"]["train"]["nodes"] == [int(masks["train"][:, 3].sum())] * 2
    result = json.loads((out / "compare.json").read_text())
    assert result["dataset"] == "actor" and result["split_index"] == 3
    assert result["budget"]["epochs"] == 2 and result["budget"]["warmup_epochs"] == 0
    for side in ("ours", "reference"):
        rows = result[side]["per_seed"]["0"]
        assert [row["epoch"] for row in rows] == [1, 2]  # every epoch evaluated on both sides
        assert all(0 <= row["test_metric"] <= 1 for row in rows)
    command = json.loads((out / "reference" / "seed0" / "command.json").read_text())
    assert command[command.index("dataset.split_index") + 1] == "3"
    assert (out / "pyg" / "Actor" / "processed").is_dir()  # PyG processed our files
    second = CliRunner().invoke(cli.main, args)
    assert second.exit_code == 0 and "graph check (cached)" in second.output, second.output
