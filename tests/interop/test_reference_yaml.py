"""Reading the reference's YAML configs: each paper preset's file gives exactly the preset."""
import dataclasses
import logging

import dgl
import pytest
import torch
import yaml

from geaet_dgl.config import ConfigError
from geaet_dgl.interop.reference_yaml import read_reference_config, reference_run_config
from geaet_dgl.models import build_model
from geaet_dgl.config.presets import get_preset
from tests.conftest import random_graph, with_features

# The reference's configs/GEAET/*.yaml (icm1018/GEAET), key for key, as YAML text.
_SUPERPIXEL_GRAPH = """
out_dir: results
metric_best: accuracy
accelerator: "cuda:0"
wandb: {{use: False, project: {name}}}
dataset:
  format: PyG-GNNBenchmarkDataset
  name: {name}
  task: graph
  task_type: classification
  transductive: False
  node_encoder: True
  node_encoder_name: LinearNode+EquivStableLapPE
  node_encoder_bn: False
  edge_encoder: True
  edge_encoder_name: LinearEdge
  edge_encoder_bn: False
posenc_EquivStableLapPE:
  enable: True
  eigen: {{laplacian_norm: none, eigvec_norm: L2, max_freqs: 8}}
  raw_norm_type: none
train: {{mode: custom, batch_size: 16, eval_period: 1, ckpt_period: 100}}
model: {{type: GEAET, loss_fun: cross_entropy, edge_decoding: dot, graph_pooling: mean}}
gt:
  layer_type: CustomGatedGCN+Transformer+GEANet
  layers: 5
  n_heads: 4
  dim_hidden: 40
  ffn_dropout: {dropout}
  global_dropout: {dropout}
  local_dropout: {dropout}
  external_dropout: {dropout}
  attn_dropout: {attn}
  layer_norm: False
  batch_norm: True
GEANet: {{n_heads: 4, unit_size: 10}}
gnn: {{head: default, layers_pre_mp: 0, layers_post_mp: 2, dim_inner: 40, batchnorm: False, act: relu,
       dropout: 0.1, agg: mean, normalize_adj: False}}
optim: {{clip_grad_norm: True, optimizer: adamW, weight_decay: 1e-5, base_lr: 0.001, max_epoch: 150,
         scheduler: cosine_with_warmup, num_warmup_epochs: 5}}
"""

PATTERN = """
out_dir: results
metric_best: accuracy-SBM
accelerator: "cuda:1"
wandb: {use: False, project: PATTERN}
dataset:
  format: PyG-GNNBenchmarkDataset
  name: PATTERN
  task: graph
  task_type: classification
  transductive: False
  split_mode: standard
  node_encoder: True
  node_encoder_name: RWSE
  node_encoder_bn: False
  edge_encoder: True
  edge_encoder_name: DummyEdge
  edge_encoder_bn: False
posenc_RWSE:
  enable: True
  kernel:
    times_func: range(1,17)
  model: Linear
  dim_pe: 7
  raw_norm_type: BatchNorm
train: {mode: custom, batch_size: 32, eval_period: 1, ckpt_period: 100}
model: {type: GEAET, loss_fun: weighted_cross_entropy, edge_decoding: dot}
gt:
  layer_type: CustomGatedGCN+Transformer+GEANet
  layers: 7
  n_heads: 4
  dim_hidden: 64
  ffn_dropout: 0.13
  global_dropout: 0.13
  local_dropout: 0.13
  external_dropout: 0.13
  attn_dropout: 0.45
  layer_norm: False
  batch_norm: True
GEANet: {n_heads: 4, unit_size: 16, edge_unit: True, shared_unit: True}
gnn: {head: inductive_node, layers_pre_mp: 0, layers_post_mp: 3, dim_inner: 64, batchnorm: True, act: relu,
      dropout: 0.0, agg: mean, normalize_adj: False}
optim: {clip_grad_norm: True, optimizer: adamW, weight_decay: 1e-5, base_lr: 0.0005, max_epoch: 100,
        scheduler: cosine_with_warmup, num_warmup_epochs: 5}
"""

PEPTIDES_STRUCT = """
out_dir: results
metric_best: mae
metric_agg: argmin
accelerator: "cuda:0"
wandb: {use: False, project: peptides-struct}
dataset:
  format: OGB
  name: peptides-structural
  task: graph
  task_type: regression
  transductive: False
  node_encoder: True
  node_encoder_name: Atom+LapPE
  node_encoder_bn: False
  edge_encoder: True
  edge_encoder_name: Bond
  edge_encoder_bn: False
posenc_LapPE:
  enable: True
  eigen: {laplacian_norm: none, eigvec_norm: L2, max_freqs: 10}
  model: DeepSet
  dim_pe: 16
  layers: 2
  raw_norm_type: none
train: {mode: custom, batch_size: 200, eval_period: 1, ckpt_period: 100}
model: {type: GEAET, loss_fun: l1, graph_pooling: mean}
gt:
  layer_type: GCN+None+GEANet
  layers: 6
  ffn_dropout: 0.05
  global_dropout: 0.0
  local_dropout: 0.1
  local_out_act: True
  external_dropout: 0.05
  dim_hidden: 224
  n_heads: 8
  use_ffn: False
  layer_norm: False
  batch_norm: True
  attn_dropout: 0.5
GEANet: {n_heads: 8, unit_size: 28}
gnn: {head: mlp_graph, layers_pre_mp: 0, layers_mp: 6, layers_post_mp: 3, dim_inner: 224, layer_type: gcnconv,
      act: gelu, residual: True, dropout: 0.1}
optim: {clip_grad_norm: True, optimizer: adamW, weight_decay: 0.0, base_lr: 0.001, max_epoch: 250,
        scheduler: cosine_with_warmup, num_warmup_epochs: 5}
"""

_SUPERPIXEL_NODES = """
out_dir: results
metric_best: f1
{extra}
accelerator: "cuda:0"
wandb: {{use: False, project: {project}}}
dataset:
  format: PyG-{fmt}
  name: edge_wt_region_boundary
  slic_compactness: 30
  task: graph
  task_type: classification
  transductive: False
  node_encoder: True
  node_encoder_name: {kind}Node
  node_encoder_bn: False
  edge_encoder: True
  edge_encoder_name: {kind}Edge
  edge_encoder_bn: False
posenc_LapPE:
  enable: False
  eigen: {{laplacian_norm: none, eigvec_norm: L2, max_freqs: 10}}
  model: DeepSet
  dim_pe: 16
  layers: 2
  raw_norm_type: none
train: {{mode: custom, batch_size: 50, eval_period: 1, ckpt_period: 100{train_extra}}}
model: {{type: GEAET, loss_fun: weighted_cross_entropy}}
gt:
  layer_type: CustomGatedGCN+Transformer+GEANet
  layers: 8
  n_heads: 4
  dim_hidden: 68
  ffn_dropout: 0.1
  global_dropout: 0.1
  local_dropout: 0.1
  external_dropout: 0.1
  attn_dropout: 0.5
  layer_norm: {layer_norm}
  batch_norm: {batch_norm}
GEANet: {{n_heads: 4, unit_size: 17}}
gnn: {{head: inductive_node, layers_pre_mp: 0, layers_post_mp: {post_mp}, dim_inner: 68, batchnorm: True, act: gelu,
       dropout: 0.1, agg: mean, normalize_adj: False}}
optim: {{clip_grad_norm: True, optimizer: adamW, weight_decay: 0.0, base_lr: 0.001, max_epoch: 200,
         scheduler: cosine_with_warmup, num_warmup_epochs: 10}}
"""

REFERENCE_YAML = {
    "mnist": _SUPERPIXEL_GRAPH.format(name="MNIST", dropout=0.15, attn=0.05),
    "cifar10": _SUPERPIXEL_GRAPH.format(name="CIFAR10", dropout=0.1, attn=0.1),
    "pattern": PATTERN,
    "peptides-struct": PEPTIDES_STRUCT,
    "voc": _SUPERPIXEL_NODES.format(extra="", project="Pascal", fmt="VOCSuperpixels", kind="VOC", train_extra="",
                                    layer_norm=False, batch_norm=True, post_mp=2),
    "coco": _SUPERPIXEL_NODES.format(extra="num_workers: 6", project="COCO", fmt="COCOSuperpixels", kind="COCO",
                                     train_extra=", eval_smoothing_metrics: True", layer_norm=True,
                                     batch_norm=False, post_mp=1),
}


def _write(tmp_path, text, name="config.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("name", sorted(REFERENCE_YAML))
def test_reference_yaml_gives_exactly_the_preset(tmp_path, name):
    ref = read_reference_config(_write(tmp_path, REFERENCE_YAML[name]))
    preset = get_preset(name)
    ours, theirs = dataclasses.asdict(ref.preset.model), dataclasses.asdict(preset.model)
    assert {k: ours[k] for k in ours if ours[k] != theirs[k]} == {}
    assert dataclasses.asdict(ref.preset.train) == dataclasses.asdict(preset.train)
    assert ref.data["dataset"] == preset.dataset
    params = build_model(ref.preset.model).num_parameters
    assert params == build_model(preset.model).num_parameters == preset.paper_params
    reasons = dict(ref.ignored)
    assert reasons["out_dir"] == reasons["accelerator"] == reasons["wandb.use"] == "logging/hardware"


def test_peptides_laplacian_norm_reaches_the_data(tmp_path):
    """posenc_LapPE.eigen.laplacian_norm: none is a data setting (the reference decomposes L = D - A)."""
    assert read_reference_config(_write(tmp_path, PEPTIDES_STRUCT)).data["laplacian_norm"] == "none"
    assert read_reference_config(_write(tmp_path, REFERENCE_YAML["mnist"])).data["laplacian_norm"] == "sym"
    assert "laplacian_norm" not in read_reference_config(_write(tmp_path, REFERENCE_YAML["voc"])).data


def test_absent_keys_take_the_reference_defaults(tmp_path):
    """A file without gt.n_heads / GEANet / optim.clip_grad_norm means graphgym's and GEAET's defaults."""
    tree = yaml.safe_load(REFERENCE_YAML["mnist"])
    del tree["GEANet"], tree["optim"]["clip_grad_norm"], tree["optim"]["weight_decay"]
    tree["gt"]["dim_hidden"] = tree["gnn"]["dim_inner"] = 16  # GEANet's default layout: 4 heads x 4 slots
    ref = read_reference_config(_write(tmp_path, yaml.safe_dump(tree)))
    assert (ref.preset.model.geanet.num_heads, ref.preset.model.geanet_unit_size()) == (4, 4)
    assert ref.preset.train.clip_grad_norm is None  # GEAET's optim.clip_grad_norm default: False
    assert ref.preset.train.weight_decay == 5e-4  # graphgym's default


def test_graphgym_adam_is_coupled_l2(tmp_path):
    """optim.optimizer: adam is torch's Adam (L2 in the gradient), not AdamW: train.optimizer=adam."""
    tree = yaml.safe_load(REFERENCE_YAML["mnist"])
    assert read_reference_config(_write(tmp_path, yaml.safe_dump(tree))).preset.train.optimizer == "adamw"
    tree["optim"]["optimizer"] = "adam"
    assert read_reference_config(_write(tmp_path, yaml.safe_dump(tree))).preset.train.optimizer == "adam"


@pytest.mark.parametrize("edit, key", [
    (lambda t: t["optim"].update(optimizer="sgd"), "optim.optimizer='sgd'"),
    (lambda t: t["gt"].update(layer_type="CustomGatedGCN+BigBird+GEANet"), "gt.layer_type="),
    (lambda t: t["gt"].update(layer_norm=True), "gt.batch_norm=True"),
    (lambda t: t["train"].update(eval_period=0), "train.eval_period=0"),
    (lambda t: t["dataset"].update(node_encoder_bn=True), "dataset.node_encoder_bn=True"),
    (lambda t: t["gnn"].update(dim_inner=64), "gnn.dim_inner=64"),
    (lambda t: t.update(metric_best="auto"), "metric_best='auto'"),
    (lambda t: t["gt"].update(dropuot=0.1), "unknown key 'gt.dropuot'"),
    (lambda t: t["posenc_EquivStableLapPE"].update(enable=False), "posenc_EquivStableLapPE.enable=False"),
])
def test_unsupported_result_changing_keys_are_one_line_errors(tmp_path, edit, key):
    tree = yaml.safe_load(REFERENCE_YAML["mnist"])
    edit(tree)
    with pytest.raises(ConfigError) as info:
        read_reference_config(_write(tmp_path, yaml.safe_dump(tree)))
    message = str(info.value)
    assert key in message and "\n" not in message


def test_run_config_logs_ignored_keys_and_applies_overrides(tmp_path, caplog):
    path = _write(tmp_path, REFERENCE_YAML["coco"])
    with caplog.at_level(logging.INFO, logger="geaet_dgl"):
        run = reference_run_config(path, {"train.epochs": "3"},
                                   {"data_dir": str(tmp_path)})
    assert run.train.epochs == 3 and run.data.dataset == "coco" and run.data.data_dir == str(tmp_path)
    text = caplog.text
    assert "ignored (logging/hardware)" in text and "num_workers" in text and "wandb.project" in text
    assert "ignored (no effect on this GEAET network)" in text and "gnn.agg" in text


def test_mapped_model_runs_like_the_preset(tmp_path):
    """Same seed, same config -> the same network: identical outputs on a batch."""
    ref = read_reference_config(_write(tmp_path, REFERENCE_YAML["mnist"]))
    g = dgl.batch(with_features([random_graph(9, 30, 1), random_graph(6, 14, 2)], 3))
    outputs = []
    for config in (ref.preset.model, get_preset("mnist").model):
        torch.manual_seed(0)
        outputs.append(build_model(config).eval()(g))
    assert torch.equal(outputs[0], outputs[1])


@pytest.mark.parametrize("layer_type, mpnn, attention", [
    ("GAT+Performer+GEANet", "gat", "performer"), ("PNA+Transformer+GEANet", "pna", "transformer"),
    ("GENConv+None+GEANet", "genconv", "none"), ("CustomGatedGCN+Performer+GEANet", "gatedgcn", "performer"),
])
def test_the_reference_layer_menu_reads(tmp_path, layer_type, mpnn, attention):
    tree = yaml.safe_load(REFERENCE_YAML["mnist"])
    tree["gt"]["layer_type"] = layer_type
    model = read_reference_config(_write(tmp_path, yaml.safe_dump(tree))).preset.model
    assert (model.mpnn, model.attention, model.external) == (mpnn, attention, True)
    assert model.performer_pad_keys == (attention == "performer")  # the reference's dense padding
