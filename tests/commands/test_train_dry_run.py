"""``train --config FILE --dry-run`` on GraphGPS's files (no data read), and a node config on the user's own
one-graph file."""
import json
import re
from pathlib import Path

import dgl
import pytest
import torch
import yaml
from click.testing import CliRunner

from geaet_dgl import cli
from geaet_dgl.interop.reference_yaml import read_reference_config
from geaet_dgl.models import build_model

CONFIGS = yaml.safe_load((Path(__file__).parents[1] / "interop" / "graphgps_configs.yaml").read_text())


def _write(tmp_path, name):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(CONFIGS[name]))
    return path


@pytest.mark.slow
def test_dry_run_builds_from_the_schema_and_reads_nothing(tmp_path):
    for name in ("ogbg-molpcba-GPS-LapPE+RWSE.yaml", "zinc-GPSwGraphormer+VN.yaml", "webkb-tex-GPS.yaml",
                 "ogbg-code2-GPS.yaml"):
        path = _write(tmp_path, name)
        data_dir = tmp_path / "absent"
        result = CliRunner().invoke(cli.main, ["train", "--config", str(path), "--dry-run", "--data-dir",
                                               str(data_dir)])
        assert result.exit_code == 0, result.output
        count = int(re.search(r"([\d,]+) parameters", result.output).group(1).replace(",", ""))
        assert count == sum(p.numel() for p in build_model(read_reference_config(path).preset.model).parameters())
        assert "files the run would read: " + str(data_dir) in result.output
        assert not data_dir.exists() and not (tmp_path / "runs").exists()
    assert "se: rwse" in CliRunner().invoke(cli.main, ["train", "--config", str(_write(
        tmp_path, "zinc-GPS-LapPE+RWSE.yaml")), "--dry-run"]).output


def test_dry_run_refuses_a_missing_pretrained_folder_in_one_line(tmp_path):
    result = CliRunner().invoke(cli.main, ["train", "--config", str(_write(tmp_path, "zinc-GPS+RWSE-inference.yaml")),
                                           "--dry-run"])
    assert result.exit_code != 0
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "pretrained.dir='pretrained/zinc-GPS+RWSE-ckptbest'" in errors[0]


def test_pretrained_folder_merges_the_reference_model_settings(tmp_path):
    trained = dict(CONFIGS["zinc-GPS+RWSE-ckptbest.yaml"])
    folder = tmp_path / "pretrained" / "zinc-GPS+RWSE-ckptbest"
    (folder / "ckpt").mkdir(parents=True)
    (folder / "config.yaml").write_text(yaml.safe_dump(trained))
    path = _write(tmp_path, "zinc-GPS+RWSE-inference.yaml")
    ref = read_reference_config(path)
    full = read_reference_config(_write(tmp_path, "zinc-GPS+RWSE-ckptbest.yaml"))
    assert ref.pretrained == str(folder) and ref.mode == "inference-only"
    assert ref.preset.model == full.preset.model  # gt.* and posenc_* from the pretrained run


def _node_graph_file(path, feats=6, classes=3, nodes=40, seed=0):
    torch.manual_seed(seed)
    src = torch.randint(0, nodes, (160,))
    dst = torch.randint(0, nodes, (160,))
    g = dgl.to_simple(dgl.add_reverse_edges(dgl.graph((src, dst), num_nodes=nodes)))
    g.ndata["feat"] = torch.randn(nodes, feats)
    g.ndata["label"] = torch.randint(0, classes, (nodes,))
    order = torch.randperm(nodes)
    for name, part in zip(("train_mask", "val_mask", "test_mask"), (order[:24], order[24:32], order[32:])):
        mask = torch.zeros(nodes, dtype=torch.bool)
        mask[part] = True
        g.ndata[name] = mask
    dgl.save_graphs(str(path), [g])
    return path


@pytest.mark.slow
def test_node_config_trains_on_the_users_one_graph_file(tmp_path):
    config = _write(tmp_path, "webkb-tex-GPS.yaml")
    graph_file = _node_graph_file(tmp_path / "mine.bin")
    out = tmp_path / "run"
    result = CliRunner().invoke(cli.main, ["train", "--config", str(config), "--dataset", str(graph_file), "--epochs",
                                           "2", "--out", str(out), "--no-progress", "--threads", "1"])
    assert result.exit_code == 0, result.output
    saved = json.loads((out / "config.json").read_text())
    model, data = saved["model"], saved["data"]
    assert (model["node_in_feats"], model["out_feats"], model["head"]) == (6, 3, "node")
    assert (model["mpnn"], model["attention"], model["pe"], model["norm"], model["edge_encoder"]) == \
        ("gcn", "transformer", "lappe", "none", "none")
    assert data["dataset"] == "file" and data["laplacian_norm"] == "none"
    assert saved["train"]["eval_every"] == 5
